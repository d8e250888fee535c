"""The libFuzzer harnesses (cpp/fuzz): every committed regression input and seed
replays cleanly, and a bounded fuzzing run of every target finds no crash, hang
or sanitizer report. Needs clang and its libFuzzer runtime (scripts/setup.sh --fuzz,
which the test command runs)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import native_builds

ROOT = Path(__file__).resolve().parents[1]
FUZZ_SECONDS = 30  # split over the targets
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|Check failed")

pytestmark = pytest.mark.skipif(
    shutil.which("clang++") is None
    or not list(Path("/usr/lib").glob("llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a")),
    reason="clang with libFuzzer not installed (scripts/setup.sh --fuzz)",
)


def test_regressions_replay_and_bounded_fuzzing_find_no_crash():
    native_builds.wait()  # the harnesses were built in the background while the Python tests ran
    result = subprocess.run(
        [str(ROOT / "scripts/fuzz.sh"), "--seconds", str(FUZZ_SECONDS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS + 900,
    )
    logs = "".join(
        path.read_text(errors="replace") for path in (ROOT / "build/fuzz").glob("*.log") if path.name != "build.log"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not SANITIZER_REPORT.search(logs)
    executions = re.search(r"total: (\d+) executions", result.stdout)
    assert executions and int(executions.group(1)) > 1000, result.stdout
