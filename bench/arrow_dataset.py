"""The Arrow C++ Dataset path side by side with what a user would pick instead,
on TPC-H lineitem: a 1 % filter returning 3 columns, and a join with a small
in-memory table. Writes JSON; prints each path's time over pyarrow.dataset's.

    .venv/bin/python bench/arrow_dataset.py [--scale-factor 1] [--repeat 5]
        [--store URI | --cluster DIR] [--output bench/results/arrow_dataset.json]

Paths: skyhook's own scanner (``ds.to_table``), pyarrow's Scanner over the
skyhook dataset (the C++ Dataset: fragments push down), DuckDB over the skyhook
dataset, and the local baselines pyarrow.dataset and DuckDB over the same Parquet.
"""

from __future__ import annotations

import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
from harness import arguments, cluster_store

import skyhook
from skyhook.dev.tpch import COLUMNS, generate_lineitem, price_thresholds, selectivity_filters


def _arrow(result) -> pa.Table:
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result


def scan_paths(ds: pads.Dataset, local: pads.Dataset, filter: pc.Expression, threshold: str) -> dict:
    columns = ", ".join(COLUMNS)
    sql = f"SELECT {columns} FROM {{}} WHERE l_extendedprice > {threshold}"
    connection = duckdb.connect()
    connection.register("ds", ds)
    connection.register("local", local)
    return {
        "skyhook_scanner": lambda: ds.to_table(columns=COLUMNS, filter=filter),
        "pyarrow_scanner_on_skyhook": lambda: pads.Scanner.from_dataset(ds, columns=COLUMNS, filter=filter).to_table(),
        "duckdb_on_skyhook": lambda: _arrow(connection.sql(sql.format("ds")).arrow()),
        "pyarrow_dataset": lambda: local.to_table(columns=COLUMNS, filter=filter),
        "duckdb_parquet": lambda: _arrow(connection.sql(sql.format("local")).arrow()),
    }


def join_paths(ds: pads.Dataset, local: pads.Dataset, keys: pa.Table) -> dict:
    right = pads.dataset(keys)
    return {
        "pyarrow_join_on_skyhook": lambda: ds.join(right, "l_orderkey", join_type="inner").to_table(),
        "pyarrow_dataset": lambda: local.join(right, "l_orderkey", join_type="inner").to_table(),
    }


def measure(paths: dict, repeat: int) -> dict:
    """Interleaved runs (one of each path per round), medians."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    rows = {name: run().num_rows for name, run in paths.items()}  # warm caches, check answers agree
    if len(set(rows.values())) != 1:
        raise SystemExit(f"paths disagree on the number of rows: {rows}")
    for _ in range(repeat):
        for name, run in paths.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["pyarrow_dataset"]
    return {
        "rows": next(iter(rows.values())),
        "wall_s": medians,
        "ratio_to_pyarrow_dataset": {name: value / base for name, value in medians.items()},
    }


def run(store_uri: str, scale_factor: float, repeat: int, data_dir: Path) -> dict:
    lineitem = generate_lineitem(scale_factor, data_dir)
    with skyhook.connect(store_uri) as store:
        ds = store.write_dataset("lineitem_arrow_bench", str(lineitem), mode="overwrite")
        # The stored schema (string for the file's string_view, which Acero cannot join).
        local = pads.dataset(lineitem, schema=ds.schema)
        filter = selectivity_filters(lineitem)["1%"]
        threshold = str(price_thresholds(lineitem)["1%"])
        orderkeys = local.to_table(columns=["l_orderkey"]).column(0)
        sample = pc.unique(orderkeys)[::100]
        keys = pa.table({"l_orderkey": sample, "tag": pa.array([1] * len(sample), pa.int8())})
        results = {
            "filter_1%_3_columns": measure(scan_paths(ds, local, filter, threshold), repeat),
            "join_1%_of_orders": measure(join_paths(ds, local, keys), repeat),
        }
        report = {
            "benchmark": "arrow_dataset",
            "store": store.uri,
            "scale_factor": scale_factor,
            "rows": ds.manifest.num_rows,
            "objects": len(ds.manifest.partitions),
            "repeat": repeat,
            "machine": platform.node(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "results": results,
        }
        store.delete_dataset("lineitem_arrow_bench")
    return report


def main() -> None:
    args = arguments(__doc__, "arrow_dataset", repeat=5).parse_args()
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        store, _ = cluster_store(args.cluster, args.store or Path(scratch).as_uri())
        report = run(store, args.scale_factor, args.repeat, args.data_dir)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    for name, result in report["results"].items():
        print(f"{name} ({result['rows']:,} rows): time over pyarrow.dataset")
        for path, ratio in result["ratio_to_pyarrow_dataset"].items():
            print(f"  {path:>28} {ratio:6.2f}  ({result['wall_s'][path]:.3f} s)")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
