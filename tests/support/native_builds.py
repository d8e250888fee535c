"""The suite's C++ builds (the unit tests beside the extension, the fuzz
harnesses), started in the background when a session that runs their tests
begins, so that they compile while the Python tests run instead of after
them (on CI they take minutes of its budget). They run niced: the Python
tests keep the cores they need. Their tests run last and wait for them: the
builds hold a lock until they end (the tests then build again, which finds
nothing to do or reports what failed)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where pip's build of the extension left its objects (pyproject.toml's build-dir); else a build of its own.
_BUILT = sorted((ROOT / "build").glob("cp*/CMakeCache.txt"))
UNIT_BUILD = _BUILT[-1].parent if _BUILT else ROOT / "build" / "unit"
LOCK = ROOT / "build" / "native-builds.lock"
LOG = ROOT / "build" / "native-builds.log"
#: The test modules whose builds these are.
MODULES = ("test_cpp_unit", "test_fuzz")


def unit_test_commands() -> list[list[str]]:
    """Configure the extension's build directory for the unit tests, then build them."""
    options = ["-DSKYHOOK_BUILD_TESTS=ON"] if _BUILT else ["-DSKYHOOK_BUILD_TESTS=ON", "-DSKYHOOK_BUILD_PYTHON=OFF"]
    return [
        ["cmake", "-S", ".", "-B", str(UNIT_BUILD), *options, f"-DPython_EXECUTABLE={sys.executable}"],
        ["cmake", "--build", str(UNIT_BUILD), "--target", "skyhook_unit_tests", "-j", str(os.cpu_count() or 1)],
    ]


FUZZ_BUILD = [str(ROOT / "scripts/fuzz.sh"), "--build-only"]


def start() -> None:
    """Both builds, one after the other, in a niced process that holds LOCK until it ends."""
    LOCK.parent.mkdir(exist_ok=True)
    lock = os.open(LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # taken here, so a test can never wait before the builds hold it
        script = " ; ".join(" ".join(map(_quoted, command)) for command in [*unit_test_commands(), FUZZ_BUILD])
        with open(LOG, "w") as log:
            subprocess.Popen(
                ["nice", "-n", "19", "sh", "-c", script],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                pass_fds=[lock],  # the lock is held while any of its processes has the file open
                start_new_session=True,
            )
    finally:
        os.close(lock)


def wait() -> None:
    """Until the background builds (if any) have ended."""
    if not LOCK.exists():
        return
    lock = os.open(LOCK, os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
    finally:
        os.close(lock)


def _quoted(argument: str) -> str:
    return "'" + argument.replace("'", "'\\''") + "'"
