"""Linters and formatters over the code: ruff (pyflakes, syntax, import order and
format) for Python, clang-format (.clang-format, 100 columns) for C++."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
PYTHON_CODE = ["python", "tests", "bench", "cpp/fuzz", "scripts"]


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    assert path, f"{name} is a test dependency: scripts/setup.sh installs it"
    return path


def _run(*command: str) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_finds_nothing():
    _run(_tool("ruff"), "check", *PYTHON_CODE)


def test_python_is_formatted():
    _run(_tool("ruff"), "format", "--check", *PYTHON_CODE)


def test_cpp_is_formatted():
    sources = sorted(
        str(path.relative_to(ROOT)) for pattern in ("*.cc", "*.h") for path in (ROOT / "cpp").rglob(pattern)
    )
    assert sources
    _run(_tool("clang-format"), "--dry-run", "--Werror", *sources)


def test_the_slow_tier_names_test_modules_that_exist():
    from conftest import SLOW_MODULES

    assert SLOW_MODULES and all((ROOT / "tests" / f"{name}.py").exists() for name in SLOW_MODULES)
