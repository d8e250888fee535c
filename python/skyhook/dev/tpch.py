"""TPC-H lineitem for the demo and the benchmarks: generation with tpchgen-cli,
filters of known selectivity, and one measured scan."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from skyhook.dataset import Dataset

COLUMNS = ["l_orderkey", "l_partkey", "l_extendedprice"]
# TPC-H Q1, Q3 and Q6 over tables or views named lineitem (and customer, orders), as DuckDB runs them.
Q1_SQL = """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
  avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem where l_shipdate <= date '1998-09-02'
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus"""
Q3_SQL = """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority order by revenue desc, o_orderdate, l_orderkey limit 10"""
Q6_SQL = """
select sum(l_extendedprice * l_discount) as revenue from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
  and l_discount between 0.05 and 0.07 and l_quantity < 24"""


def generate_lineitem(scale_factor: float, directory: Path) -> Path:
    """lineitem as one Parquet file, generated once per scale factor."""
    return generate_table("lineitem", scale_factor, directory)


def generate_table(table: str, scale_factor: float, directory: Path) -> Path:
    """A TPC-H table as one Parquet file, generated once per scale factor."""
    target = directory / f"{table}-sf{scale_factor:g}.parquet"
    if target.exists():
        return target
    generator = shutil.which("tpchgen-cli") or str(Path(sys.executable).with_name("tpchgen-cli"))
    scratch = directory / f".tpchgen-{table}-sf{scale_factor:g}"
    scratch.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [generator, "parquet", "-s", f"{scale_factor:g}", f"--tables={table}", f"--output-dir={scratch}"],
        check=True,
        capture_output=True,
    )
    (scratch / f"{table}.parquet").rename(target)
    scratch.rmdir()
    return target


def price_thresholds(lineitem: Path) -> dict[str, Decimal]:
    """l_extendedprice values above which about 1 % and 10 % of the rows lie."""
    prices = pq.read_table(lineitem, columns=["l_extendedprice"]).column(0).cast(pa.float64())
    return {
        label: Decimal(f"{pc.quantile(prices, q=1 - keep).to_pylist()[0]:.2f}")
        for label, keep in (("1%", 0.01), ("10%", 0.10))
    }


def selectivity_filters(lineitem: Path) -> dict[str, pc.Expression]:
    """Filters on l_extendedprice keeping about 1 %, 10 % and 100 % of the rows.
    Prices are spread evenly over partitions, so statistics cannot prune them:
    what the comparison shows is the pushdown itself."""
    price_type = pq.read_schema(lineitem).field("l_extendedprice").type
    filters = {
        label: pc.field("l_extendedprice") > pa.scalar(threshold, price_type)
        for label, threshold in price_thresholds(lineitem).items()
    }
    filters["100%"] = pc.field("l_extendedprice") >= pa.scalar(Decimal("0"), price_type)
    return filters


def measure_scan(
    dataset: Dataset, filter: pc.Expression, pushdown: bool, columns: list[str] = COLUMNS
) -> tuple[pa.Table, dict[str, float | int | bool]]:
    """One scan: its result, wall time, client CPU and the scan statistics."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    scanner = dataset.scanner(columns=columns, filter=filter, pushdown=pushdown)
    table = scanner.to_table()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    process_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = scanner.stats.as_dict()
    # The embedded store runs storage inside this process: split its CPU out.
    storage_in_process = dataset.store.backend.runs_in_process
    client_cpu = process_cpu - stats["storage_cpu_s"] if storage_in_process else process_cpu
    return table, {
        **stats,
        "wall_s": wall,
        "client_cpu_s": max(client_cpu, 0.0),
        "selectivity": table.num_rows / max(1, dataset.manifest.num_rows),
    }
