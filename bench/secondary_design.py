"""Statistics and indexes in omap (issue 11, item 5) on TPC-H lineitem: bytes
read in storage by a point lookup on l_orderkey with and without its index,
and by a range on the sorted l_orderkey with and without zone statistics, per
design (Parquet row groups of 64 Ki rows; Arrow IPC record batches of 1 Ki
rows). Ratios are to the bytes of the objects the query touches.

    python bench/secondary_design.py [--scale-factor 1] [--cluster DIR]
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
from harness import arguments, cluster_store

import skyhook
from skyhook.dev.tpch import generate_lineitem

#: Designs: dataset name -> write options (zones: row groups / record batches).
DESIGNS = {
    "parquet_64k": {"format": "parquet"},
    "ipc_1k": {"format": "ipc", "row_group_size": 1024},
}
KEY = "l_orderkey"


def measured(dataset, filter: pc.Expression, repeat: int) -> dict:
    """Bytes read in storage (and time) of a full-row scan, best of repeat."""
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        scanner = dataset.scanner(filter=filter, pushdown=True)
        rows = scanner.to_table().num_rows
        seconds = time.perf_counter() - start
        if best is None or seconds < best["seconds"]:
            stats = scanner.stats
            best = {
                "seconds": seconds,
                "rows": rows,
                "bytes_read": stats.bytes_read,
                "objects_scanned": stats.objects_scanned,
                "zones_skipped": stats.zones_skipped,
                "rows_read_by_index": stats.rows_read_by_index,
                "index_bytes_read": stats.index_bytes_read,
            }
    return best


def touched_bytes(dataset, low: int, high: int) -> int:
    """The stored bytes of the objects whose l_orderkey range meets [low, high]
    (the others the manifest's statistics prune)."""
    ranges = dataset.manifest.statistics.field(KEY)
    return sum(
        partition.size_bytes
        for partition, minimum, maximum in zip(
            dataset.manifest.partitions, ranges.field("min").to_pylist(), ranges.field("max").to_pylist()
        )
        if minimum <= high and maximum >= low
    )


def design_report(store, name: str, options: dict, lineitem: Path, point: int, low: int, high: int, repeat: int):
    if name not in store.list_datasets():
        store.write_dataset(name, str(lineitem), **options)
    dataset = store.dataset(name)
    for column in dataset.secondary_design()["indexes"].to_pylist()[0]:
        dataset.drop_index(column)
    lookup = pc.field(KEY) == point
    span = (pc.field(KEY) >= low) & (pc.field(KEY) < high)
    report = {"objects": len(dataset.manifest.partitions), "object_bytes": dataset.manifest.size_bytes}
    report["point_object_bytes"] = touched_bytes(dataset, point, point)
    report["range_object_bytes"] = touched_bytes(dataset, low, high - 1)
    report["point_plain"] = measured(dataset, lookup, repeat)
    report["range_plain"] = measured(dataset, span, repeat)
    start = time.perf_counter()
    dataset.compute_statistics()
    report["analyze_seconds"] = time.perf_counter() - start
    report["range_statistics"] = measured(dataset, span, repeat)
    start = time.perf_counter()
    dataset.create_index(KEY)
    report["create_index_seconds"] = time.perf_counter() - start
    report["point_index"] = measured(dataset, lookup, repeat)
    for query in ("point", "range"):
        plain = report[f"{query}_plain"]["bytes_read"]
        used = report["point_index" if query == "point" else "range_statistics"]["bytes_read"]
        report[f"{query}_bytes_ratio"] = used / plain if plain else None
        report[f"{query}_share_of_object"] = used / report[f"{query}_object_bytes"]
    return report


def main() -> None:
    args = arguments(__doc__, "secondary_design", repeat=3).parse_args()
    # Analyzing a whole object is one call: on a shared, loaded machine it may
    # pass the embedded store's default 5 s (a cluster keeps its own limits).
    os.environ.setdefault("SKYHOOK_MAX_CALL_MS", "60000")
    lineitem = generate_lineitem(args.scale_factor, args.data_dir)
    keys = pq.read_table(lineitem, columns=[KEY])[KEY]
    top = pc.max(keys).as_py()
    point, low, high = top // 3 + 1, top // 2, top // 2 + top // 100  # a range of ~1 % of the keys
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        uri, _ = cluster_store(args.cluster, args.store or Path(scratch).as_uri())
        with skyhook.connect(uri) as store:
            report = {
                "benchmark": "secondary_design",
                "store": store.uri,
                "scale_factor": args.scale_factor,
                "point": point,
                "range": [low, high],
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "designs": {
                    name: design_report(store, name, options, lineitem, point, low, high, args.repeat)
                    for name, options in DESIGNS.items()
                },
            }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
