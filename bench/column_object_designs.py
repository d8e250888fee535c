"""Column objects combined with a cluster in one plan, against the same layout
reached by two plans (cluster, then split the columns); on one backend per
run, the two interleaved in each of --repeat rounds. Writes JSON; prints the ratios.

    .venv/bin/python bench/column_object_designs.py [--scale-factor 1] [--rows 600000]
        [--repeat 3] [--data-dir data] [--store URI | --cluster DIR]

lineitem (its first --rows rows, in order-key order) is written as --objects
objects, then clustered by l_shipdate with l_extendedprice and l_discount
gathered into column objects: by one plan (each range read once, sorted at the
worker, written as its objects) or by two (a cluster, then a plan per
partition splitting its columns). Per way: wall time, bytes read in storage
and written (the plans' measured and planned bytes). Then two queries on
about 1 % of the ship dates, one reading l_extendedprice (a column object:
the scan spans objects) and one l_orderkey (in the object holding the key):
bytes read in storage and objects pruned, on the clustered dataset before the
split and on the split one without and with computed statistics and an index
on l_shipdate (in the object holding it). Every answer is checked against pyarrow's.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from datetime import date

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from harness import arguments, cluster_store

import skyhook
from skyhook import TransformTarget
from skyhook.dev.tpch import generate_lineitem

KEY = "l_shipdate"
LAYOUT = [["l_extendedprice", "l_discount"]]
QUERY = (pc.field(KEY) >= pa.scalar(date(1995, 3, 1))) & (pc.field(KEY) < pa.scalar(date(1995, 3, 26)))


def run(dataset: skyhook.Dataset, target: TransformTarget) -> dict:
    plan = dataset.run_plan(dataset.plan_transform(target))
    measured = [step.measured.get("bytes_read", 0) for step in plan.steps if step.kind == "stream"]
    return {"bytes_read": sum(measured), "bytes_written": plan.bytes_written}


def one_plan(store: skyhook.Store, name: str, table: pa.Table, objects: int, rows: int) -> dict:
    dataset = store.write_dataset(name, table, rows_per_object=len(table) // objects)
    started = time.perf_counter()
    measured = run(dataset, TransformTarget(cluster_by=KEY, rows_per_object=rows, column_objects=LAYOUT))
    return {"seconds": time.perf_counter() - started, **measured}


def two_plans(store: skyhook.Store, name: str, table: pa.Table, objects: int, rows: int) -> dict:
    dataset = store.write_dataset(name, table, rows_per_object=len(table) // objects)
    started = time.perf_counter()
    first = run(dataset, TransformTarget(cluster_by=KEY, rows_per_object=rows))
    second = run(store.dataset(name), TransformTarget(column_objects=LAYOUT))
    return {
        "seconds": time.perf_counter() - started,
        "bytes_read": first["bytes_read"] + second["bytes_read"],
        "bytes_written": first["bytes_written"] + second["bytes_written"],
    }


def queries(dataset: skyhook.Dataset, table: pa.Table) -> dict:
    measured = {}
    for column in ("l_extendedprice", "l_orderkey"):
        answer = dataset.to_table(columns=[column], filter=QUERY, pushdown=True)
        if sorted(answer.column(0).to_pylist()) != sorted(
            table.select([KEY, column]).filter(QUERY).column(column).to_pylist()
        ):
            raise AssertionError(f"{dataset.name}: the query's answer differs from pyarrow's")
        stats = dataset.last_scan.stats
        measured[column] = {"bytes_read": stats.bytes_read, "objects_pruned": stats.objects_pruned}
    return measured


def main() -> None:
    parser = arguments(__doc__, "column_object_designs", repeat=3)
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--objects", type=int, default=12)
    options = parser.parse_args()
    table = pq.read_table(generate_lineitem(options.scale_factor, options.data_dir)).slice(0, options.rows)
    rows = len(table) // options.objects
    columns = ["l_orderkey", "l_linenumber", KEY, "l_extendedprice"]
    order = [("l_orderkey", "ascending"), ("l_linenumber", "ascending")]
    with tempfile.TemporaryDirectory() as scratch:
        uri, _ = cluster_store(options.cluster, options.store or f"file://{scratch}/store")
        store = skyhook.connect(uri, retention_seconds=0)
        rounds: dict[str, list[dict]] = {"one_plan": [], "two_plans": []}
        for index in range(options.repeat):  # interleaved: the machine's load falls on both alike
            rounds["one_plan"].append(one_plan(store, f"one{index}", table, options.objects, rows))
            rounds["two_plans"].append(two_plans(store, f"two{index}", table, options.objects, rows))
            for name in (f"one{index}", f"two{index}"):
                if store.dataset(name).to_table(columns=columns).sort_by(order) != table.select(columns).sort_by(order):
                    raise AssertionError(f"dataset {name!r} differs from lineitem")
        clustered = store.write_dataset("clustered", table, rows_per_object=rows)
        clustered.run_plan(clustered.plan_transform(TransformTarget(cluster_by=KEY, rows_per_object=rows)))
        measured = {"clustered_whole_objects": queries(store.dataset("clustered"), table)}
        measured["split"] = queries(store.dataset("one0"), table)
        store.dataset("one0").compute_statistics()
        store.dataset("one0").create_index(KEY)
        measured["split_statistics_index"] = queries(store.dataset("one0"), table)
        store.close()
    report = {
        "backend": "ceph" if uri.startswith("ceph") else "embedded",
        "rows": len(table),
        "objects": options.objects,
        "rounds": rounds,
        "queries": measured,
    }
    median = {way: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for way, runs in rounds.items()}
    report["ratios"] = {
        "two_plans_over_one_seconds": median["two_plans"]["seconds"] / median["one_plan"]["seconds"],
        "two_plans_over_one_bytes_read": median["two_plans"]["bytes_read"] / max(1, median["one_plan"]["bytes_read"]),
        "two_plans_over_one_bytes_written": median["two_plans"]["bytes_written"]
        / max(1, median["one_plan"]["bytes_written"]),
        **{
            f"{column}_query_bytes_{ways[0]}_over_{ways[1]}": measured[ways[0]][column]["bytes_read"]
            / max(1, measured[ways[1]][column]["bytes_read"])
            for column in ("l_extendedprice", "l_orderkey")
            for ways in [("clustered_whole_objects", "split"), ("split", "split_statistics_index")]
        },
    }
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({"median": median, "queries": measured, "ratios": report["ratios"]}, indent=2))


if __name__ == "__main__":
    main()
