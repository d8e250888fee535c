#!/usr/bin/env bash
# Builds the libFuzzer harnesses (cpp/fuzz; clang, ASan + UBSan) in build/fuzz,
# replays every regression input and the seed corpus, then fuzzes each target
# for its share of the budget, one process at a time.
#
#   scripts/fuzz.sh [--seconds S | --runs N] [--target NAME] [--keep-going] [-- LIBFUZZER_ARGS...]
#   scripts/fuzz.sh --build-only
#
# --seconds S   fuzz for S seconds in total, split evenly over the targets (default 60)
# --runs N      fuzz for N executions in total instead, split evenly over the targets
# --target NAME fuzz_requests, fuzz_objects or fuzz_writes only (default: all three)
# --build-only  build the harnesses and stop (the test suite builds them while other tests run)
# --keep-going  do not stop at a crash (libFuzzer's fork mode): find more crash classes
#               while known ones are unfixed; every crash is saved under build/fuzz/artifacts
#
# Exits non-zero if any regression input or fuzzed input crashes, hangs (10 s), runs out of
# memory (4 GiB) or trips a sanitizer; prints the executions each target ran. New
# interesting inputs accumulate in build/fuzz/corpus/<target> (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60 runs="" targets="fuzz_requests fuzz_objects fuzz_writes" keep_going=0 build_only=0 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --target) targets=$2; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --build-only) build_only=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--seconds S | --runs N] [--target NAME] [--keep-going] [--build-only] [-- LIBFUZZER_ARGS...]" >&2; exit 2 ;;
  esac
done

if ! command -v clang++ > /dev/null; then
  echo "clang++ not found: run scripts/setup.sh --fuzz" >&2
  exit 2
fi
[ -x .venv/bin/python ] || scripts/setup.sh --fuzz
if [ ! -f build/fuzz/CMakeCache.txt ]; then
  # -O1 and line tables only: libFuzzer's usual flags, and the quickest build that still names lines.
  CXX=clang++ cmake -S . -B build/fuzz -DSKYHOOK_FUZZ=ON -DSKYHOOK_BUILD_PYTHON=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DPython_EXECUTABLE="$PWD/.venv/bin/python" > /dev/null
fi
cmake --build build/fuzz -j "$(nproc)" > build/fuzz/build.log 2>&1 || { cat build/fuzz/build.log; exit 1; }
[ "$build_only" = 1 ] && exit 0

# Arrow's allocations through malloc, so ASan sees them (its default pool is jemalloc).
export ARROW_DEFAULT_MEMORY_POOL=system
# A request for more memory than exists fails as it does in an OSD (Arrow gets an
# OutOfMemory status) instead of aborting; allocations over -rss_limit_mb still count.
# Allocation stacks of 2 frames: fast unwinding through Arrow's code (no frame pointers)
# yields garbage frames, each a new entry in ASan's stack depot, which then grows by
# ~4 KB per execution until a long run hits the RSS limit (cpp/fuzz/triage.py replays
# crashes with full stacks).
export ASAN_OPTIONS=allocator_may_return_null=1:malloc_context_size=2${ASAN_OPTIONS:+:$ASAN_OPTIONS}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
count=$(wc -w <<< "$targets")
status=0 total=0
for target in $targets; do
  binary=build/fuzz/cpp/fuzz/$target
  max_len=$([ "$target" = fuzz_requests ] && echo 16384 || echo 65536)
  options=(-dict=cpp/fuzz/skyhook.dict -max_len="$max_len" -timeout=10 -rss_limit_mb=4096
           -print_final_stats=1)
  # One process per regression input, so every one that still crashes is named.
  failed=0
  : > "build/fuzz/$target.regressions.log"
  for input in cpp/fuzz/regressions/"$target"/*; do
    [ -e "$input" ] || continue
    if ! "$binary" "${options[@]}" "$input" >> "build/fuzz/$target.regressions.log" 2>&1; then
      echo "== $target: regression input $input crashes"
      failed=1
    fi
  done
  if [ "$failed" = 1 ]; then
    echo "== $target: see build/fuzz/$target.regressions.log"
    status=1
    [ "$keep_going" = 1 ] || continue
  fi
  corpus=build/fuzz/corpus/$target artifacts=build/fuzz/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  budget=(-max_total_time=$((seconds / count)))
  [ -n "$runs" ] && budget=(-runs=$((runs / count)))
  mode=()
  [ "$keep_going" = 1 ] && mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  echo "== $target: fuzzing (${budget[*]}${mode:+, keep going})"
  log=build/fuzz/$target.log
  if ! "$binary" "${options[@]}" "${budget[@]}" "${mode[@]}" -artifact_prefix="$artifacts/" \
      "${extra[@]}" "$corpus" "cpp/fuzz/corpus/$target" > "$log" 2>&1; then
    grep -E "ERROR|Check failed|runtime error|SUMMARY|Test unit written" "$log" | tail -20
    echo "== $target: crash (log: $log)"
    status=1
  fi
  # Plain runs print the count in their final statistics, fork mode in its last status line.
  executions=$(grep -oP "stat::number_of_executed_units: \K[0-9]+" "$log" | tail -1 || true)
  [ -n "$executions" ] || executions=$(grep -oP "^#\K[0-9]+(?=: cov)" "$log" | tail -1 || true)
  executions=${executions:-0}
  total=$((total + executions))
  echo "== $target: $executions executions"
done
echo "== total: $total executions, $([ $status = 0 ] && echo "no crash" || echo "CRASHES (see above)")"
exit $status
