"""The C++ unit tests (GoogleTest, each *_test.cc beside the code it tests):
built in the build directory of the extension the test command just built
(the skyhook_unit_tests target, EXCLUDE_FROM_ALL: only its own sources are
compiled, the core's objects are the extension's), and run. Needs Debian's
libgtest-dev and libsqlite3-dev (scripts/install-build-deps.sh)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where pip's build of the extension left its objects (pyproject.toml's build-dir); else a build of its own.
BUILT = sorted((ROOT / "build").glob("cp*/CMakeCache.txt"))
BUILD = BUILT[-1].parent if BUILT else ROOT / "build" / "unit"


def _run(*command: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_cpp_unit_tests_pass():
    options = ["-DSKYHOOK_BUILD_TESTS=ON"] if BUILT else ["-DSKYHOOK_BUILD_TESTS=ON", "-DSKYHOOK_BUILD_PYTHON=OFF"]
    configured = _run(
        "cmake", "-S", ".", "-B", str(BUILD), *options, f"-DPython_EXECUTABLE={sys.executable}", timeout=300
    )
    assert configured.returncode == 0, configured.stdout + configured.stderr
    built = _run(
        "cmake", "--build", str(BUILD), "--target", "skyhook_unit_tests", "-j", str(os.cpu_count() or 1), timeout=1800
    )
    assert built.returncode == 0, built.stdout[-20000:] + built.stderr[-20000:]

    result = _run(str(BUILD / "skyhook_unit_tests"), "--gtest_brief=1", timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    ran = re.search(r"^\[==========\] (\d+) tests? from \d+ test suites? ran", output, re.M)
    passed = re.search(r"^\[  PASSED  \] (\d+) tests?", output, re.M)
    assert ran and passed and int(passed.group(1)) == int(ran.group(1)) > 0, output
