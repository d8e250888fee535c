"""Compressed replies, the never-larger rule and DuckDB's count(*) on TPC-H
lineitem. Writes JSON; prints ratios.

    .venv/bin/python bench/replies.py [--scale-factor 1] [--repeat 3]
        [--store URI | --cluster DIR] [--output bench/results/replies.json]
        [--parts counts whole sweep]

- counts: DuckDB's ``count(*)`` and ``count(*) ... NOT IN`` over the dataset
  per reply codec (compressed replies carry sorted integer columns as their
  differences): bytes moved over the dataset's bytes, and the counts checked
  against DuckDB on the Parquet file;
- sweep: 3 columns at 1 ... 100 % of the rows, pushdown per codec against plain
  reads: the compressed reply/object ratio and the wall time relative to plain
  reads, from which the cost model's threshold is read (where pushdown stops
  paying);
- whole: every column of every row pushed down, with the never-larger rule on:
  bytes moved over the dataset's bytes and the objects read plainly instead.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from harness import arguments, cluster_store

import skyhook
from skyhook.dev.tpch import COLUMNS, generate_lineitem

CODECS = ("none", "lz4", "zstd")
PARTS = ("counts", "whole", "sweep")
KEPT = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
COUNTS = {
    "count(*)": "select count(*) from {}",
    "count(*) not in": "select count(*) from {} where l_shipmode not in ('MAIL', 'SHIP') and l_linenumber not in (1, 2)",
}


def kept_filters(lineitem: Path) -> dict[float, pc.Expression]:
    prices = pq.read_table(lineitem, columns=["l_extendedprice"]).column(0)
    as_float = prices.cast(pa.float64())
    filters = {}
    for kept in KEPT:
        if kept == 1.0:
            threshold = Decimal("0")
        else:
            threshold = Decimal(f"{pc.quantile(as_float, q=1 - kept).to_pylist()[0]:.2f}")
        filters[kept] = pc.field("l_extendedprice") >= pa.scalar(threshold, prices.type)
    return filters


def timed(dataset, repeat: int, **options) -> dict:
    walls, stats = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        scanner = dataset.scanner(**options)
        scanner.to_table()
        walls.append(time.perf_counter() - started)
        stats = scanner.stats
    return {
        "wall_s": statistics.median(walls),
        "bytes_returned": stats.bytes_returned,
        "bytes_decoded": stats.bytes_decoded,
        "storage_cpu_s": stats.storage_cpu_s,
        "objects_read_plain": stats.objects_read_plain,
        "objects_over_object": stats.objects_over_object,
        "bytes_abandoned": stats.bytes_abandoned,
        "wasted_storage_cpu_s": stats.wasted_storage_cpu_s,
        "cost_model": stats.cost_model,
    }


def counts(store, dataset, lineitem: Path, total: int) -> dict:
    local = duckdb.read_parquet(str(lineitem))  # noqa: F841 - DuckDB finds it by name
    results = {}
    default = store.backend.reply_compression
    try:
        for codec in CODECS:
            store.backend.reply_compression = codec  # DuckDB calls scanner() itself
            for label, sql in COUNTS.items():
                started = time.perf_counter()
                answer = duckdb.sql(sql.format("dataset")).fetchall()
                wall = time.perf_counter() - started
                stats = dataset.last_scan.stats
                results[f"{label} {codec}"] = {
                    "exact": answer == duckdb.sql(sql.format("local")).fetchall(),
                    "columns": dataset.last_scan.columns,
                    "filter": str(dataset.last_scan.filter),
                    "bytes_moved_ratio": stats.bytes_returned / total,
                    "wall_s": wall,
                    "cost_model": stats.cost_model,
                }
    finally:
        store.backend.reply_compression = default
    return results


def sweep(dataset, lineitem: Path, repeat: int, total: int) -> dict:
    results = {}
    for kept, filter in kept_filters(lineitem).items():
        plain = timed(dataset, repeat, columns=COLUMNS, filter=filter, pushdown=False)
        row = {"plain_wall_s": plain["wall_s"]}
        for codec in CODECS:
            pushed = timed(
                dataset,
                repeat,
                columns=COLUMNS,
                filter=filter,
                pushdown=True,
                reply_compression=codec,
                reply_within_object=False,
            )
            row[codec] = {
                "reply_object_ratio": pushed["bytes_returned"] / total,
                "decoded_object_ratio": pushed["bytes_decoded"] / total,
                "wall_vs_plain": pushed["wall_s"] / plain["wall_s"],
                "wall_s": pushed["wall_s"],
            }
        auto = timed(dataset, repeat, columns=COLUMNS, filter=filter)
        row["auto"] = {"wall_vs_plain": auto["wall_s"] / plain["wall_s"], "cost_model": auto["cost_model"]}
        results[f"{kept:.0%}"] = row
    return results


def whole(dataset, repeat: int, total: int) -> dict:
    results = {}
    for codec in CODECS:
        run = timed(dataset, repeat, pushdown=True, reply_compression=codec, reply_within_object=True)
        results[codec] = {**run, "bytes_moved_ratio": run["bytes_returned"] / total}
    return results


def main() -> None:
    parser = arguments(__doc__, "replies", repeat=3)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="what to measure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        uri, _ = cluster_store(args.cluster, args.store or Path(scratch).as_uri())
        lineitem = generate_lineitem(args.scale_factor, args.data_dir)
        with skyhook.connect(uri) as store:
            if "lineitem_replies" not in store.list_datasets():
                store.write_dataset("lineitem_replies", str(lineitem))
            dataset = store.dataset("lineitem_replies")
            total = dataset.manifest.size_bytes
            report = {
                "benchmark": "replies",
                "store": store.uri,
                "scale_factor": args.scale_factor,
                "objects": len(dataset.manifest.partitions),
                "object_bytes": total,
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            if "counts" in args.parts:
                report["counts"] = counts(store, dataset, lineitem, total)
            if "whole" in args.parts:
                report["whole"] = whole(dataset, args.repeat, total)
            if "sweep" in args.parts:
                report["sweep"] = sweep(dataset, lineitem, args.repeat, total)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
