"""Pyflakes-level lint (undefined names, unused imports, syntax errors) over the Python code."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    assert ruff, "ruff is a test dependency: scripts/setup.sh installs it"
    result = subprocess.run([ruff, "check", "--isolated", "--select", "F,E9", "python", "tests", "bench"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
