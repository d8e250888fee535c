"""The scan engine side by side with the engines a user would pick instead, on
the same lineitem objects: Skyhook with pushdown forced, Skyhook with the cost
model, pyarrow.dataset and DuckDB over the store's own object files (Parquet).
Scans at 1 / 10 / 100 % of the rows x 3 / all columns, TPC-H Q1 and Q6.
Interleaved repeats (one of each path per round), medians, ratios to DuckDB.
Writes JSON and a PNG beside it.

    .venv/bin/python bench/engine.py [--scale-factor 1] [--repeat 5] [--threads 2]
        [--output bench/results/engine.json]

Every path's answer is checked before timing: scans return the same rows as
pyarrow.dataset, Q1 and Q6 the same values as DuckDB (decimals equal after
casting to DuckDB's types).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import matplotlib
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
from aggregates import QUERIES
from harness import arguments

import skyhook
from skyhook.dev.tpch import COLUMNS, Q1_SQL, Q6_SQL, generate_lineitem, price_thresholds
from skyhook.plan.aggregate import AggregateQuery

PATHS = ["skyhook_pushdown", "skyhook_auto", "pyarrow_dataset", "duckdb"]


def _arrow(result) -> pa.Table:
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result


def scan_paths(ds, local: pads.Dataset, sql: duckdb.DuckDBPyConnection, columns, threshold) -> dict:
    price_type = ds.schema.field("l_extendedprice").type
    filter = pc.field("l_extendedprice") >= pa.scalar(threshold, price_type)
    selected = ", ".join(columns) if columns else "*"
    query = f"select {selected} from lineitem where l_extendedprice >= {threshold}"
    return {
        "skyhook_pushdown": lambda: ds.scanner(columns=columns, filter=filter, pushdown=True).to_table(),
        "skyhook_auto": lambda: ds.scanner(columns=columns, filter=filter, pushdown="auto").to_table(),
        "pyarrow_dataset": lambda: local.to_table(columns=columns, filter=filter),
        "duckdb": lambda: _arrow(sql.sql(query).arrow()),
    }


def aggregate_paths(ds, local: pads.Dataset, sql: duckdb.DuckDBPyConnection, name: str) -> dict:
    keys, aggregations, filter = QUERIES[name]
    query = AggregateQuery.make(ds.schema, keys, aggregations, filter)
    text = {"q1": Q1_SQL, "q6": Q6_SQL}[name]

    def sorted_rows(table: pa.Table) -> pa.Table:
        return table.sort_by([(key, "ascending") for key in keys]) if keys else table

    def skyhook_run(pushdown):
        return lambda: sorted_rows(ds.group_by(keys).aggregate(aggregations, filter=filter, pushdown=pushdown))

    return {
        "skyhook_pushdown": skyhook_run(True),
        "skyhook_auto": skyhook_run("auto"),
        "pyarrow_dataset": lambda: sorted_rows(query.run_locally(local)),
        "duckdb": lambda: _arrow(sql.sql(text).arrow()),
    }


def same_values(ours: pa.Table, duck: pa.Table) -> bool:
    """Equal after casting ours to DuckDB's types; DuckDB's averages are doubles,
    pyarrow's decimal averages are rounded to the input's scale."""
    for mine, theirs in zip(ours.columns, duck.columns):
        if pa.types.is_floating(theirs.type):
            slack = 0.5 * 10**-mine.type.scale if pa.types.is_decimal(mine.type) else 0.0
            pairs = zip(mine.to_pylist(), theirs.to_pylist())
            if not all(abs(float(a) - b) <= slack + 1e-9 * max(1.0, abs(b)) for a, b in pairs):
                return False
        elif mine.cast(theirs.type).to_pylist() != theirs.to_pylist():
            return False
    return True


def measure(paths: dict, repeat: int, check) -> dict:
    """Wall time and this process's CPU time (every engine, the embedded store's
    storage included, runs in it), medians of interleaved runs."""
    results = {name: run() for name, run in paths.items()}  # warm caches, check answers
    check(results)
    times: dict[str, list[float]] = {name: [] for name in paths}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeat):
        for name, run in paths.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            run()
            times[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    return {
        "rows": results["duckdb"].num_rows,
        "wall_s": medians,
        "cpu_s": cpu_medians,
        "all_wall_s": times,
        "ratio_to_duckdb": {name: value / medians["duckdb"] for name, value in medians.items()},
        "cpu_ratio_to_duckdb": {name: value / cpu_medians["duckdb"] for name, value in cpu_medians.items()},
    }


def rows_agree(results: dict) -> None:
    rows = {name: table.num_rows for name, table in results.items()}
    if len(set(rows.values())) != 1:
        raise SystemExit(f"paths disagree on the number of rows: {rows}")


def values_agree(results: dict) -> None:
    for name, table in results.items():
        if not same_values(table, results["duckdb"]):
            raise SystemExit(f"{name} disagrees with DuckDB:\n{table}\n{results['duckdb']}")


def run(store_uri: str, scale_factor: float, repeat: int, threads: int, data_dir: Path) -> dict:
    lineitem = generate_lineitem(scale_factor, data_dir)
    with skyhook.connect(store_uri) as store:
        ds = store.write_dataset("lineitem_engine", str(lineitem), mode="overwrite")
        objects = [str(store.backend.objects / p.object_name) for p in ds.manifest.partitions]
        local = pads.dataset(objects, format="parquet", schema=ds.schema)
        sql = duckdb.connect(config={"threads": threads})
        sql.sql(f"create view lineitem as select * from read_parquet({objects!r})")
        thresholds = {**price_thresholds(lineitem), "100%": Decimal("0")}
        results = {}
        for label in ("1%", "10%", "100%"):
            for width, columns in (("3 columns", COLUMNS), ("all columns", None)):
                paths = scan_paths(ds, local, sql, columns, thresholds[label])
                results[f"{label} / {width}"] = measure(paths, repeat, rows_agree)
        for name in ("q6", "q1"):
            results[name.upper()] = measure(aggregate_paths(ds, local, sql, name), repeat, values_agree)
            ds.group_by(QUERIES[name][0]).aggregate(QUERIES[name][1], filter=QUERIES[name][2], pushdown=True)
            results[name.upper()]["aggregate_in_storage"] = ds.last_aggregate.stats.aggregate_in_storage
            results[name.upper()]["storage_cpu_s"] = ds.last_aggregate.stats.storage_cpu_s
        report = {
            "benchmark": "engine",
            "store": store.uri,
            "scale_factor": scale_factor,
            "rows": ds.manifest.num_rows,
            "objects": len(ds.manifest.partitions),
            "object_bytes": ds.manifest.size_bytes,
            "threads": threads,
            "repeat": repeat,
            "machine": platform.node(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "results": results,
        }
        store.delete_dataset("lineitem_engine")
    return report


def plot(report: dict, target: Path) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(report["results"])
    figure, axis = plt.subplots(figsize=(11, 5))
    for offset, path in enumerate(PATHS):
        axis.bar(
            [p + (offset - 1.5) * 0.2 for p in range(len(cases))],
            [report["results"][case]["ratio_to_duckdb"][path] for case in cases],
            width=0.2,
            label=path,
        )
    axis.axhline(1.0, color="black", linewidth=0.8)
    axis.set_xticks(list(range(len(cases))), cases, rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("time over DuckDB's (median)")
    axis.set_title(f"lineitem SF{report['scale_factor']:g}, {report['objects']} objects, embedded store")
    axis.legend()
    figure.tight_layout()
    figure.savefig(target, dpi=110)


def main() -> None:
    parser = arguments(__doc__, "engine", repeat=5)
    parser.add_argument("--threads", type=int, default=2, help="threads of every engine (embedded store)")
    args = parser.parse_args()
    if args.cluster:
        raise SystemExit("engine.py compares engines over the embedded store's object files")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    pa.set_cpu_count(args.threads)
    pa.set_io_thread_count(args.threads)
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        store = args.store or Path(scratch).as_uri()  # storage runs on os.cpu_count() threads
        report = run(store, args.scale_factor, args.repeat, args.threads, args.data_dir)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    plot(report, args.output.with_suffix(".png"))
    for case, result in report["results"].items():
        ratios = "  ".join(
            f"{path} {result['ratio_to_duckdb'][path]:5.2f} (cpu {result['cpu_ratio_to_duckdb'][path]:4.2f})"
            for path in PATHS
        )
        print(
            f"{case:>22} ({result['wall_s']['duckdb']:.3f} s, cpu {result['cpu_s']['duckdb']:.3f} s DuckDB): {ratios}"
        )
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
