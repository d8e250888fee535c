"""The client's cost model with and without the statistics storage computed on
each object (issue 11, item 5: published in the manifest by compute_statistics),
on TPC-H lineitem: per filter, the selectivity estimated from the object
histograms against the true one, what the cost model decided, and the scan's
time, interleaved in one run: the same dataset opened before the statistics
were published (the first object is pushed down as a sample, then the rest)
and after (decided from statistics, no sample).

    python bench/client_statistics.py [--scale-factor 1] [--cluster DIR] [--repeat 3]
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from harness import arguments, cluster_store

import skyhook
from skyhook.dev.tpch import generate_lineitem
from skyhook.execution.cost import object_selectivities

F = pc.field
DECIMAL = pa.decimal128(15, 2)
COLUMNS = ["l_orderkey", "l_extendedprice", "l_discount"]


def decimal(value: int) -> pa.Scalar:
    return pa.scalar(Decimal(value), DECIMAL)


FILTERS = {
    "quantity < 2 (2 %)": F("l_quantity") < decimal(2),
    "shipdate in one month (1 %)": (F("l_shipdate") >= datetime.date(1995, 3, 1))
    & (F("l_shipdate") < datetime.date(1995, 4, 1)),
    "returnflag = R (25 %)": F("l_returnflag") == "R",
    "discount in (0.01, 0.02) and quantity < 25": F("l_discount").isin(
        pa.array([Decimal("0.01"), Decimal("0.02")], DECIMAL)
    )
    & (F("l_quantity") < decimal(25)),
    "not shipmode = AIR (86 %)": ~(F("l_shipmode") == "AIR"),
    "quantity > 1 (98 %)": F("l_quantity") > decimal(1),
}


def timed(dataset: skyhook.Dataset, filter: pc.Expression) -> tuple[float, int, str]:
    start = time.perf_counter()
    scanner = dataset.scanner(columns=COLUMNS, filter=filter)
    rows = scanner.to_table().num_rows
    return time.perf_counter() - start, rows, scanner.stats.cost_model


def filter_report(before: skyhook.Dataset, after: skyhook.Dataset, filter: pc.Expression, repeat: int) -> dict:
    partitions = list(after.manifest.partitions)
    shares = object_selectivities(after.manifest, filter, partitions)
    best = {"sample": float("inf"), "statistics": float("inf")}
    decisions = {}
    rows = 0
    for _ in range(repeat):  # interleaved: the machine is shared
        for label, dataset in (("sample", before), ("statistics", after)):
            seconds, rows, decision = timed(dataset, filter)
            best[label] = min(best[label], seconds)
            decisions[label] = decision
    actual = rows / after.manifest.num_rows
    estimated = None
    if shares is not None:
        estimated = float(sum(share * p.num_rows for share, p in zip(shares, partitions)) / after.manifest.num_rows)
    return {
        "actual_selectivity": actual,
        "estimated_selectivity": estimated,
        "estimate_error": None if estimated is None else estimated - actual,
        "decision_sample": decisions["sample"],
        "decision_statistics": decisions["statistics"],
        "seconds_sample": best["sample"],
        "seconds_statistics": best["statistics"],
        "time_ratio_statistics_over_sample": best["statistics"] / best["sample"],
    }


def main() -> None:
    args = arguments(__doc__, "client_statistics", repeat=3).parse_args()
    os.environ.setdefault("SKYHOOK_MAX_CALL_MS", "60000")  # analyze is one call per object
    lineitem = generate_lineitem(args.scale_factor, args.data_dir)
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        uri, _ = cluster_store(args.cluster, args.store or Path(scratch).as_uri())
        with skyhook.connect(uri) as store:
            if "lineitem_stats" not in store.list_datasets():
                store.write_dataset("lineitem_stats", str(lineitem))
            before = store.dataset("lineitem_stats")
            start = time.perf_counter()
            published = before.compute_statistics()
            analyze_seconds = time.perf_counter() - start
            after = store.dataset("lineitem_stats")
            start = time.perf_counter()
            object_selectivities(after.manifest, next(iter(FILTERS.values())), list(after.manifest.partitions))
            report = {
                "benchmark": "client_statistics",
                "store": store.uri,
                "scale_factor": args.scale_factor,
                "objects": len(after.manifest.partitions),
                "objects_with_statistics": published,
                "compute_statistics_seconds": analyze_seconds,
                "estimate_seconds": time.perf_counter() - start,
                "manifest_bytes": {"before": len(before.manifest.to_bytes()), "after": len(after.manifest.to_bytes())},
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "filters": {name: filter_report(before, after, f, args.repeat) for name, f in FILTERS.items()},
            }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
