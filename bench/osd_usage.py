"""CPU seconds and resident memory of storage daemons, read from /proc."""

from __future__ import annotations

import os
from pathlib import Path

from skyhook.cluster import LocalCluster


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
