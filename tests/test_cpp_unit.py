"""The C++ unit tests (GoogleTest, each *_test.cc beside the code it tests):
built in the build directory of the extension the test command just built
(the skyhook_unit_tests target, EXCLUDE_FROM_ALL: only its own sources are
compiled, the core's objects are the extension's), and run. Needs Debian's
libgtest-dev and libsqlite3-dev (scripts/install-build-deps.sh)."""

from __future__ import annotations

import re
import subprocess

from support import native_builds

ROOT = native_builds.ROOT


def _run(*command: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_cpp_unit_tests_pass():
    native_builds.wait()  # built in the background while the Python tests ran
    for command in native_builds.unit_test_commands():
        built = _run(*command, timeout=1800)
        assert built.returncode == 0, built.stdout[-20000:] + built.stderr[-20000:]

    result = _run(str(native_builds.UNIT_BUILD / "skyhook_unit_tests"), "--gtest_brief=1", timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    ran = re.search(r"^\[==========\] (\d+) tests? from \d+ test suites? ran", output, re.M)
    passed = re.search(r"^\[  PASSED  \] (\d+) tests?", output, re.M)
    assert ran and passed and int(passed.group(1)) == int(ran.group(1)) > 0, output
