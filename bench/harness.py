"""What the benchmarks share: their command line, the store they run on, and
CPU seconds and resident memory of the storage daemons, read from /proc."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path

import skyhook
from skyhook.dev.cluster import LocalCluster

SOURCES = Path(__file__).resolve().parent.parent / "python" / "skyhook"


def require_current_skyhook() -> None:
    """Exits unless the skyhook imported is the repository's sources: a
    benchmark of an installed copy older than them measures other code."""
    imported = Path(skyhook.__file__).resolve().parent
    if imported == SOURCES:
        return
    stale = [
        str(source.relative_to(SOURCES))
        for source in sorted(SOURCES.rglob("*.py"))
        if not (imported / source.relative_to(SOURCES)).is_file()
        or (imported / source.relative_to(SOURCES)).read_bytes() != source.read_bytes()
    ]
    if stale:
        raise SystemExit(
            f"skyhook imported from {imported} differs from the sources in {SOURCES} "
            f"({len(stale)} files, e.g. {stale[0]}): run scripts/setup.sh again, or run with "
            f"PYTHONPATH={SOURCES.parent} (sudo env PYTHONPATH=...) after building the extensions there"
        )


require_current_skyhook()


def process_cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cluster_store(directory: Path | None, fallback_uri: str) -> tuple[str, list[int]]:
    """The store URI to benchmark and the OSD PIDs to watch (none for the embedded store)."""
    if directory is None:
        return fallback_uri, []
    cluster = LocalCluster(directory)
    uri = cluster.up()
    return uri, [cluster.pid(f"osd.{osd}") for osd in cluster.osd_ids()]


def arguments(description: str, name: str, repeat: int) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=repeat)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--store", help="store URI (default: a temporary embedded store)")
    target.add_argument("--cluster", type=Path, help="a local Ceph cluster directory (skyhook cluster up)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--output", type=Path, default=Path(f"bench/results/{name}.json"))
    return parser


def write_report(report: dict, output: Path, plot: Callable[[dict, Path], None]) -> None:
    """The report as JSON at output and its plot beside it (.png)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2))
    plot(report, output.with_suffix(".png"))
    print(f"wrote {output} and {output.with_suffix('.png')}")
