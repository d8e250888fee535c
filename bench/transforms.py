"""Transforms across objects (issue 14): the seeds' Figure 6, schedules and the
advisor, on one backend per run. Writes JSON and a PNG; prints the ratios.

    .venv/bin/python bench/transforms.py [--scale-factor 0.1] [--objects 24]
        [--store URI | --cluster DIR] [--output bench/results/transforms.json]

- figure6: lineitem written as rows (FlatBuffers/FlexBuffers), transformed to
  Parquet three ways: locally inside storage (one call per object, nothing
  crosses the network), distributed (a plan that merges pairs of objects: the
  sources are scanned in storage and their rows streamed to new objects by the
  transform driver) and at the client (read, convert, write back). Time, and
  the bytes that leave storage and that are written.
- row_to_column: lineitem written as rows, each column given its own place
  three ways (the same grouping, one column each): locally inside storage (an
  in-place Parquet design with a column group per column), distributed into
  column objects (a plan: a stream per object scans it in storage and writes an
  object per column) and at the client (read, regroup, write back). Time;
  bytes read and written inside storage and bytes that cross out of it and
  back; then a one-column query's bytes read in storage on each result (and
  on the rows), its answer checked against pyarrow's.
- schedule: a workload of one-column queries on a hot fifth of the key range;
  the same rows -> column-extents plan run step by step in key order and
  working set first. After each step the workload's bytes read in storage are
  measured; reported: the share of the plan's time until the workload had 80 %
  of its final reduction.
- advisor: 16 recorded date-range queries on l_shipdate (scattered over every
  object), 4 held out; the advice applied; bytes the held-out queries read in
  storage before and after.
- clustering: lineitem as written (order-key order) clustered by l_shipdate
  (range), and lineitem shuffled clustered by l_shipdate and l_orderkey in
  Z-order; bytes read in storage and objects read by five queries on 1 % of
  the ship dates and five on 1 % of the order keys, before and after.

Run only some parts with --parts (e.g. --parts clustering).
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from harness import arguments, cluster_store

import skyhook
from skyhook import TransformTarget
from skyhook.dev.tpch import generate_lineitem

ROWS_DESIGN = skyhook.Design("rows", compression="none")
COLUMNS = skyhook.Design("parquet")
EXTENTS = skyhook.Design("parquet", column_groups="each")
COLUMN, KEY, DATE = "l_extendedprice", "l_orderkey", "l_shipdate"


def write_rows(store: skyhook.Store, table: pa.Table, objects: int) -> skyhook.Dataset:
    rows = -(-table.num_rows // objects)
    return store.write_dataset("lineitem", table, mode="overwrite", design=ROWS_DESIGN, rows_per_object=rows)


def figure6(store: skyhook.Store, table: pa.Table, objects: int) -> dict:
    result = {}
    for where in ("storage", "client"):
        dataset = write_rows(store, table, objects)
        report = dataset.transform(COLUMNS, where=where)
        crossing = 0 if where == "storage" else report.bytes_before + report.bytes_after
        result[f"local_{where}"] = {
            "seconds": report.seconds,
            "bytes_through_client": crossing,
            "bytes_written": report.bytes_after,
        }
    dataset = write_rows(store, table, objects)
    rows = dataset.manifest.partitions[0].num_rows
    # Three objects into one: every object is a source of a stream (a right-sized one would be a local step).
    plan = dataset.plan_transform(TransformTarget(rows_per_object=3 * rows, design=COLUMNS))
    started = time.perf_counter()
    done = dataset.run_plan(plan)
    assert done.state == "done", done
    streams = [step for step in done.steps if step.kind == "stream"]
    result["distributed"] = {
        "seconds": time.perf_counter() - started,
        # The driver belongs to the storage tier (skyhook worker): what it moves never reaches a query client.
        "bytes_through_client": 0,
        "bytes_moved_by_driver": sum(int(step.measured.get("bytes_returned", 0)) for step in streams),
        "bytes_read_in_storage": sum(int(step.measured.get("bytes_read", 0)) for step in streams),
        "bytes_written": store.manifest("lineitem").size_bytes,
    }
    store.delete_dataset("lineitem")  # and its workload log
    return result


def one_column_read(dataset: skyhook.Dataset, table: pa.Table) -> int:
    """Bytes read in storage by a scan of COLUMN alone, its answer checked."""
    scanner = dataset.scanner(columns=[COLUMN], pushdown=True)
    assert scanner.to_table().column(COLUMN).equals(table[COLUMN])
    return scanner.stats.bytes_read


def row_to_column(store: skyhook.Store, table: pa.Table, objects: int) -> dict:
    result = {}
    for way in ("local_storage", "distributed", "client"):
        dataset = write_rows(store, table, objects)
        rows_read = one_column_read(dataset, table)
        if way == "distributed":
            plan = dataset.plan_transform(
                TransformTarget(column_objects=[[name] for name in table.column_names], design=COLUMNS)
            )
            started = time.perf_counter()
            done = dataset.run_plan(plan)
            seconds = time.perf_counter() - started
            assert done.state == "done", done
            streams = [step for step in done.steps if step.kind == "stream"]
            read = sum(int(step.measured.get("bytes_read", 0)) for step in streams)
            # The plan's driver (skyhook worker, here this process) receives each scan's reply.
            out = sum(int(step.measured.get("bytes_returned", 0)) for step in streams)
        else:
            report = dataset.transform(EXTENTS, where=way.removeprefix("local_"))
            seconds, read = report.seconds, report.bytes_before
            out = 0 if way == "local_storage" else report.bytes_before
        transformed = store.dataset("lineitem")
        written = transformed.manifest.size_bytes
        result[way] = {
            "seconds": seconds,
            "bytes_read_in_storage": read,
            "bytes_written_in_storage": written,
            "bytes_out_of_storage": out,
            "bytes_into_storage": 0 if way == "local_storage" else written,
            "objects_after": sum(len(p.object_names) for p in transformed.manifest.partitions),
            "one_column_query_bytes_read_before": rows_read,
            "one_column_query_bytes_read_after": one_column_read(transformed, table),
        }
        store.delete_dataset("lineitem")
    return result


def hot_queries(table: pa.Table) -> list[pc.Expression]:
    keys = table[KEY]
    low, high = pc.min(keys).as_py(), pc.max(keys).as_py()
    span = (high - low) // 5
    hot_start = low + 3 * span  # the fourth fifth of the keys
    step = span // 8
    return [(pc.field(KEY) >= hot_start + i * step) & (pc.field(KEY) < hot_start + (i + 1) * step) for i in range(8)]


def workload_bytes(dataset: skyhook.Dataset, queries: list[pc.Expression]) -> int:
    total = 0
    for query in queries:
        scanner = dataset.scanner(columns=[COLUMN], filter=query, pushdown=True)
        scanner.to_table()
        total += scanner.stats.bytes_read
    return total


def schedule(store: skyhook.Store, table: pa.Table, objects: int) -> dict:
    queries = hot_queries(table)
    result = {}
    for order in ("key", "working-set"):
        dataset = write_rows(store, table, objects)
        before = workload_bytes(dataset, queries)  # also records the workload
        plan = dataset.plan_transform(
            TransformTarget(rows_per_object=dataset.manifest.partitions[0].num_rows, design=EXTENTS)
        )
        elapsed, curve = 0.0, [(0.0, before)]
        while not plan.finished:
            started = time.perf_counter()
            plan = dataset.run_plan(plan, max_steps=1, schedule=skyhook.Schedule(order=order))
            elapsed += time.perf_counter() - started
            curve.append((elapsed, workload_bytes(store.dataset("lineitem"), queries)))
        after = curve[-1][1]
        target = before - 0.8 * (before - after)
        reached = next(seconds for seconds, read in curve if read <= target)
        result[order] = {
            "plan_seconds": elapsed,
            "seconds_to_80_percent": reached,
            "share_of_plan_to_80_percent": reached / elapsed if elapsed else 0.0,
            "workload_bytes_before": before,
            "workload_bytes_after": after,
            "curve": curve,
        }
        store.delete_dataset("lineitem")  # and its workload log
    return result


def advisor(store: skyhook.Store, table: pa.Table, objects: int) -> dict:
    dataset = store.write_dataset("lineitem", table, mode="overwrite", rows_per_object=-(-table.num_rows // objects))
    choose = random.Random(11)
    first = date(1992, 1, 2)
    queries = []
    for _ in range(16):
        start = first + timedelta(days=choose.randrange(2400))
        queries.append((pc.field(DATE) >= pa.scalar(start)) & (pc.field(DATE) < pa.scalar(start + timedelta(days=7))))
    recorded, held_out = queries[:12], queries[12:]
    for query in recorded:
        dataset.to_table(columns=[KEY, COLUMN], filter=query)

    def replay(on: skyhook.Dataset) -> int:
        total = 0
        for query in held_out:
            scanner = on.scanner(columns=[KEY, COLUMN], filter=query, pushdown=True)
            scanner.to_table()
            total += scanner.stats.bytes_read
        return total

    before = replay(dataset)
    advice = dataset.advise()
    chosen = next(item for item in advice if item.target is not None)
    started = time.perf_counter()
    dataset.run_plan(dataset.plan_transform(chosen.target))
    seconds = time.perf_counter() - started
    after = replay(store.dataset("lineitem"))
    store.delete_dataset("lineitem")
    return {
        "advice": str(chosen),
        "estimated_benefit": chosen.benefit,
        "apply_seconds": seconds,
        "held_out_bytes_before": before,
        "held_out_bytes_after": after,
    }


#: Where the 1 % ranges start, as shares of each key's sorted values (the middle is a worst case
#: for a Z-order: the top cell edge of both keys).
STARTS = (0.13, 0.37, 0.5, 0.62, 0.81)


def one_percent_queries(table: pa.Table) -> dict[str, list[pc.Expression]]:
    """Per clustering key, ranges of about 1 % of the rows starting at STARTS."""
    queries = {}
    for column in (DATE, KEY):
        ordered = table[column].sort()
        queries[column] = []
        for start in STARTS:
            first = int(len(ordered) * start)
            low, high = ordered[first].as_py(), ordered[first + len(ordered) // 100].as_py()
            queries[column].append((pc.field(column) >= pa.scalar(low)) & (pc.field(column) < pa.scalar(high)))
    return queries


def query_reads(dataset: skyhook.Dataset, queries: dict[str, list[pc.Expression]], table: pa.Table) -> dict:
    """Per key, over its queries: bytes read in storage and objects read (not pruned), each answer
    checked against pyarrow."""
    reads = {}
    for column, ranges in queries.items():
        reads[column] = {"bytes_read": 0, "objects_read": 0}
        for query in ranges:
            scanner = dataset.scanner(columns=[KEY, COLUMN], filter=query, pushdown=True)
            answer = scanner.to_table()
            expected = table.select([KEY, COLUMN, DATE]).filter(query)
            assert answer.sort_by([(KEY, "ascending"), (COLUMN, "ascending")]).equals(
                expected.select([KEY, COLUMN]).sort_by([(KEY, "ascending"), (COLUMN, "ascending")])
            ), column
            reads[column]["bytes_read"] += scanner.stats.bytes_read
            reads[column]["objects_read"] += len(dataset.manifest.partitions) - scanner.stats.objects_pruned
    return reads


def clustering(store: skyhook.Store, table: pa.Table, objects: int) -> dict:
    """Range: lineitem as written (order-key order) clustered by the ship date; Z-order: lineitem
    shuffled (clustered by neither key) clustered by both."""
    queries = one_percent_queries(table)
    rows = -(-table.num_rows // objects)
    plain = pa.schema([pa.field(f.name, pa.string()) if f.type == pa.string_view() else f for f in table.schema])
    shuffled = table.cast(plain).take(pa.array(np.random.default_rng(3).permutation(table.num_rows)))
    result: dict = {}
    for kind, written, target in (
        ("range", table, TransformTarget(cluster_by=DATE, rows_per_object=rows)),
        ("zorder", shuffled, TransformTarget(cluster_by=(DATE, KEY), zorder=True, rows_per_object=rows)),
    ):
        # Side by side: the plan with a pass over the sources per range (pass_memory=1), then as planned.
        dataset = store.write_dataset("lineitem", written, mode="overwrite", rows_per_object=rows)
        started = time.perf_counter()
        each = dataset.run_plan(dataset.plan_transform(replace(target, pass_memory=1)))
        each_seconds = time.perf_counter() - started
        dataset = store.write_dataset("lineitem", written, mode="overwrite", rows_per_object=rows)
        before = query_reads(dataset, queries, table)
        started = time.perf_counter()
        done = dataset.run_plan(dataset.plan_transform(target))
        seconds = time.perf_counter() - started
        streams = [step for step in done.steps if step.kind == "stream"]
        each_streams = [step for step in each.steps if step.kind == "stream"]
        clustered = store.dataset("lineitem")
        after = query_reads(clustered, queries, table)
        result[kind] = {
            "objects_before": len(dataset.manifest.partitions),
            "objects_after": len(clustered.manifest.partitions),
            "plan_seconds": seconds,
            "plan_bytes_read_in_storage": sum(int(step.measured.get("bytes_read", 0)) for step in streams),
            "passes": len(streams),
            "ranges": len(each_streams),
            "pass_per_range_seconds": each_seconds,
            "pass_per_range_bytes_read_in_storage": sum(int(step.measured["bytes_read"]) for step in each_streams),
            "before": before,
            "after": after,
            "bytes_read_before_over_after": {
                column: before[column]["bytes_read"] / max(1, after[column]["bytes_read"]) for column in queries
            },
        }
        store.delete_dataset("lineitem")
    return result


def ratios(report: dict) -> dict:
    found = {}
    if "figure6" in report:
        figure = report["figure6"]
        found["client_over_local_storage_time"] = figure["local_client"]["seconds"] / figure["local_storage"]["seconds"]
        found["distributed_over_local_storage_time"] = (
            figure["distributed"]["seconds"] / figure["local_storage"]["seconds"]
        )
    if "row_to_column" in report:
        local = report["row_to_column"]["local_storage"]
        after = max(1, local["one_column_query_bytes_read_after"])
        found["row_to_column_one_column_bytes_rows_over_local_storage"] = (
            local["one_column_query_bytes_read_before"] / after
        )
        for way in ("distributed", "client"):
            measured = report["row_to_column"][way]
            found[f"row_to_column_{way}_over_local_storage_time"] = measured["seconds"] / local["seconds"]
            found[f"row_to_column_{way}_over_local_storage_one_column_bytes"] = (
                measured["one_column_query_bytes_read_after"] / after
            )
    if "schedule" in report:
        work = report["schedule"]
        found["key_order_over_working_set_time_to_80_percent"] = work["key"]["seconds_to_80_percent"] / max(
            1e-9, work["working-set"]["seconds_to_80_percent"]
        )
    if "advisor" in report:
        found["advisor_bytes_before_over_after"] = report["advisor"]["held_out_bytes_before"] / max(
            1, report["advisor"]["held_out_bytes_after"]
        )
    for kind, measured in report.get("clustering", {}).items():
        found[f"{kind}_cluster_pass_per_range_over_one_pass_bytes_read"] = measured[
            "pass_per_range_bytes_read_in_storage"
        ] / max(1, measured["plan_bytes_read_in_storage"])
        found[f"{kind}_cluster_pass_per_range_over_one_pass_seconds"] = measured["pass_per_range_seconds"] / max(
            1e-9, measured["plan_seconds"]
        )
        for column, ratio in measured["bytes_read_before_over_after"].items():
            found[f"{kind}_cluster_{column}_1_percent_bytes_before_over_after"] = ratio
    return found


def plot(report: dict, path: Path) -> None:
    if "figure6" not in report or "schedule" not in report:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    ways = ["local_storage", "distributed", "local_client"]
    left.bar(ways, [report["figure6"][way]["seconds"] for way in ways], color=["tab:green", "tab:blue", "tab:red"])
    left.set_ylabel("seconds")
    left.set_title("rows -> Parquet (Figure 6)")
    for order, colour in (("key", "tab:red"), ("working-set", "tab:green")):
        curve = report["schedule"][order]["curve"]
        right.plot(
            [seconds for seconds, _ in curve], [read / 1e6 for _, read in curve], marker="o", color=colour, label=order
        )
    right.set_xlabel("plan seconds")
    right.set_ylabel("workload MB read in storage")
    right.set_title("schedule: rows -> column extents")
    right.legend()
    figure.tight_layout()
    figure.savefig(path)


PARTS = {
    "figure6": figure6,
    "row_to_column": row_to_column,
    "schedule": schedule,
    "advisor": advisor,
    "clustering": clustering,
}


def main() -> None:
    parser = arguments(__doc__, "transforms", repeat=1)
    parser.set_defaults(scale_factor=0.1)
    parser.add_argument("--objects", type=int, default=24)
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    options = parser.parse_args()
    parts = [part for part in options.parts.split(",") if part]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}: choose from {', '.join(PARTS)}")
    lineitem = generate_lineitem(options.scale_factor, options.data_dir)
    table = pq.read_table(lineitem)
    with tempfile.TemporaryDirectory() as scratch:
        uri, _ = cluster_store(options.cluster, options.store or f"file://{scratch}/store")
        store = skyhook.connect(uri, retention_seconds=0)
        report = {
            "scale_factor": options.scale_factor,
            "objects": options.objects,
            "backend": "ceph" if uri.startswith("ceph") else "embedded",
        }
        for part in parts:
            report[part] = PARTS[part](store, table, options.objects)
        store.close()
    report["ratios"] = ratios(report)
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(report, indent=2, default=str))
    plot(report, options.output.with_suffix(".png"))
    print(json.dumps(report["ratios"], indent=2))


if __name__ == "__main__":
    main()
