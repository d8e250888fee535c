"""Node limits under hostile workloads, on a local Ceph cluster: a scan built to
be slow (batch_size=1 over 32 Mi rows in one object) and a scan whose one
object decodes to a 1.5 GiB reply, each against the plain read of the same
object. Reports wall time, calls per object, reply bytes and the OSDs' peak
memory (VmHWM) growth. Writes JSON.

    .venv/bin/python bench/node_limits.py --cluster ./cluster [--output bench/results/node_limits.json]

The cluster's OSDs run with their node limits (skyhook cluster up --limit ...,
defaults otherwise); the JSON records the limits the replies reported.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from harness import arguments, cluster_store

import skyhook


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def measure(dataset: skyhook.Dataset, osd_pids: list[int], **scan) -> dict:
    before = [peak_kib(pid) for pid in osd_pids]
    started = time.perf_counter()
    scanner = dataset.scanner(**scan)
    rows = sum(batch.num_rows for batch in scanner.to_batches())
    return {
        "wall_s": time.perf_counter() - started,
        "rows": rows,
        "calls": scanner.stats.continuations + scanner.stats.objects_scanned,
        "bytes_returned": scanner.stats.bytes_returned,
        "objects_pushed_back": scanner.stats.objects_pushed_back,
        "osd_peak_growth_mib": max(after - first for after, first in zip((peak_kib(pid) for pid in osd_pids), before))
        / 1024,
    }


def main() -> None:
    parser = arguments(__doc__, "node_limits", repeat=1)
    options = parser.parse_args()
    if options.cluster is None:
        parser.error("--cluster DIR is required: the limits under test are the OSDs'")
    uri, osd_pids = cluster_store(options.cluster, "")
    rows = 1 << 25
    slow = pa.table({"x": pa.array(np.random.default_rng(5).integers(-128, 128, rows, dtype=np.int8))})
    # 1.5 Mi rows of 1,000 distinct random KiB values: a few MB of dictionary-
    # encoded Parquet that decodes to 1.5 GiB nothing compresses.
    generator = np.random.default_rng(7)
    values = pa.array([generator.bytes(1024) for _ in range(1000)], pa.binary())
    huge = pa.table({"blob": values.take(pa.array(generator.integers(0, 1000, 3 << 19)))})
    results = {}
    with skyhook.connect(f"{uri}&namespace=bench-limits") as store:
        one_object = {"target_object_size": 1 << 40, "mode": "overwrite"}
        dataset = store.write_dataset("slow", slow, rows_per_object=rows, row_group_size=1 << 22, **one_object)
        results["slow_scan"] = {
            "pushdown": measure(dataset, osd_pids, filter=pc.field("x") == 17, batch_size=1, pushdown=True),
            "plain_read": measure(dataset, osd_pids, filter=pc.field("x") == 17, pushdown=False),
        }
        dataset = store.write_dataset("huge", huge, rows_per_object=len(huge), **one_object)
        results["huge_reply"] = {"pushdown": measure(dataset, osd_pids, pushdown=True)}
        limits = store.describe_object(dataset.manifest.partitions[0].object_name)[1]
        results["node_limits"] = {name: value for name, value in limits.items() if name.startswith("limit_")}
        store.delete_dataset("slow")
        store.delete_dataset("huge")
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
