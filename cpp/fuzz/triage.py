"""Groups crash inputs by what went wrong and where: runs the harness on each
file and prints one line per class (the error and the top frames of its stack)
with the files that reproduce it, smallest first.

    .venv/bin/python cpp/fuzz/triage.py fuzz_requests build/fuzz/artifacts/fuzz_requests/*
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Frames that say nothing about the cause: the runtime, the harness, the error path.
UNINFORMATIVE = re.compile(
    r"__sanitizer|fuzzer::|libc\.so|raise|abort|__pthread|ArrowLog|"
    r"LLVMFuzzerTestOneInput|CallAndCheck|RunMethod|libc_start|_start\b|"
    r"CrashCallback|PrintStackTrace|libpthread|__GI_"
)
ERROR = re.compile(
    r"Check failed: .*|ERROR: AddressSanitizer: [\w-]+|runtime error: .*|"
    r"ERROR: libFuzzer: [\w-]+|skyhook fuzz: .*|Bad status: .*"
)


def frames(log: str, count: int = 4) -> list[str]:
    found = []
    for match in re.finditer(r"^\s+#\d+ 0x[0-9a-f]+ in (.+?)(?: /| \(|$)", log, re.MULTILINE):
        function = match.group(1)
        if UNINFORMATIVE.search(function):
            continue
        function = re.sub(r"\(.*", "", function)  # drop argument lists: long and not needed to tell classes apart
        found.append(function)
        if len(found) == count:
            break
    return found


def classify(binary: Path, path: Path) -> tuple[str, str]:
    # As scripts/fuzz.sh runs them, with full stacks through Arrow's libraries (no frame pointers there).
    environment = dict(
        os.environ,
        ARROW_DEFAULT_MEMORY_POOL="system",
        ASAN_OPTIONS="allocator_may_return_null=1:fast_unwind_on_malloc=0",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
    )
    try:
        result = subprocess.run(
            [str(binary), "-timeout=10", "-rss_limit_mb=4096", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            env=environment,
        )
    except subprocess.TimeoutExpired:
        return "hang (over 120 s)", ""
    if result.returncode == 0:
        return "no crash", ""
    log = result.stdout + result.stderr
    errors = [match.group(0) for match in ERROR.finditer(log)]
    error = next((e for e in errors if not e.startswith("ERROR: libFuzzer: deadly")), errors[0] if errors else "?")
    error = re.sub(r"0x[0-9a-f]+|\d{3,}", "N", error)[:160]
    return error, " <- ".join(frames(log))


def main() -> None:
    target, files = sys.argv[1], [Path(p) for p in sys.argv[2:]]
    binary = ROOT / "build/fuzz/cpp/fuzz" / target
    classes: dict[tuple[str, str], list[Path]] = defaultdict(list)
    for path in files:
        classes[classify(binary, path)].append(path)
    for (error, stack), paths in sorted(classes.items(), key=lambda item: -len(item[1])):
        paths.sort(key=lambda p: p.stat().st_size)
        print(f"{len(paths):4} x {error}\n       at {stack}\n       e.g. {paths[0]} ({paths[0].stat().st_size} bytes)")


if __name__ == "__main__":
    main()
