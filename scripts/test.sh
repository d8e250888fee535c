#!/usr/bin/env bash
# Sets up and runs the whole test suite, including a real local Ceph cluster
# that the tests start themselves. Extra arguments go to pytest.
# SKYHOOK_TEST_CEPH=0 skips installing Ceph and leaves its backend out.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKYHOOK_TEST_CEPH:-1}" != 0 ]; then
  scripts/install-ceph.sh
fi
scripts/install-r.sh   # R and reticulate for the gene-expression R wrapper's test
scripts/fetch-jdbc.sh  # the Flight SQL JDBC driver for skyhook serve's JVM test
scripts/setup.sh --fuzz
# Two workers: the tests that need a Ceph cluster on one (tests/conftest.py), the rest on the other.
exec .venv/bin/python -m pytest -n "${SKYHOOK_TEST_WORKERS:-2}" --dist loadgroup "$@"
