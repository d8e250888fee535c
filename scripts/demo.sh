#!/usr/bin/env bash
# The main job: set up, then TPC-H lineitem in an embedded store, queried at
# 1 %, 10 % and 100 % selectivity with pushdown and client-side.
# Usage: scripts/demo.sh [scale factor, default 1]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/skyhook demo --scale-factor "${1:-1}" --store skyhook-demo-store --work-dir data
