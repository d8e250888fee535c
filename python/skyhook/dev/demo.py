"""The main job: TPC-H lineitem in an embedded store, queried with filters of
1 %, 10 % and 100 % selectivity, pushed into storage and filtered client-side."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import skyhook
from skyhook.dev.tpch import COLUMNS, generate_lineitem, measure_scan, selectivity_filters


def run_demo(store_uri: str, scale_factor: float, work_dir: Path, console: Console) -> None:
    work_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    console.print(f"generating TPC-H lineitem at scale factor {scale_factor:g} ...")
    lineitem = generate_lineitem(scale_factor, work_dir)
    console.print(f"  {lineitem} ({lineitem.stat().st_size / 2**20:.1f} MiB) in {time.perf_counter() - started:.1f} s")
    with skyhook.connect(store_uri) as store:
        started = time.perf_counter()
        dataset = store.write_dataset("lineitem", str(lineitem), mode="overwrite")
        manifest = dataset.manifest
        console.print(
            f"imported {manifest.num_rows:,} rows into {len(manifest.partitions)} objects "
            f"({manifest.size_bytes / 2**20:.1f} MiB) of {store.uri} "
            f"in {time.perf_counter() - started:.1f} s"
        )
        console.print(f"query: SELECT {', '.join(COLUMNS)} FROM lineitem WHERE l_extendedprice > x")
        table = Table(
            "kept",
            "path",
            "rows",
            "time s",
            "to client",
            "read in storage",
            "storage CPU s",
            "client CPU s",
            title="pushdown vs client-side read + filter",
        )
        for label, filter in selectivity_filters(lineitem).items():
            results = {}
            for pushdown in (True, False, "auto"):
                result, stats = measure_scan(dataset, filter, pushdown)
                results[pushdown] = result
                path = {True: "pushdown", False: "client", "auto": "cost model"}[pushdown]
                table.add_row(
                    label,
                    path,
                    f"{stats['rows_returned']:,}",
                    f"{stats['wall_s']:.3f}",
                    _mib(stats["bytes_returned"]),
                    _mib(stats["bytes_read"]),
                    f"{stats['storage_cpu_s']:.3f}",
                    f"{stats['client_cpu_s']:.3f}",
                )
            if not (results[True].equals(results[False]) and results[True].equals(results["auto"])):
                raise SystemExit(f"pushdown and client-side results differ at {label}")
        console.print(table)
        console.print("every path returned identical tables at every selectivity")
        _aggregate(dataset, console)


def _mib(count: int) -> str:
    return f"{count / 2**20:.2f} MiB"


def _aggregate(dataset, console: Console) -> None:
    """TPC-H Q1's aggregates (without its computed sums), as partials in storage."""
    started = time.perf_counter()
    result = dataset.group_by(["l_returnflag", "l_linestatus"]).aggregate(
        [("l_quantity", "sum"), ("l_extendedprice", "mean"), ("l_discount", "stddev"), ("l_orderkey", "count")],
        filter="l_shipdate <= '1998-09-02'",
    )
    wall = time.perf_counter() - started
    stats = dataset.last_aggregate.stats
    shown = Table(
        *result.column_names,
        title=f"Q1-style group-by in storage: {wall:.3f} s, {stats.bytes_returned:,} bytes of partials to the client",
    )
    for row in result.sort_by([("l_returnflag", "ascending"), ("l_linestatus", "ascending")]).to_pylist():
        shown.add_row(*(f"{value:.4f}" if isinstance(value, float) else str(value) for value in row.values()))
    console.print(shown)
