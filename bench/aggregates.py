"""Aggregates, the cost model and push-back on TPC-H lineitem, side by side in
one run. Writes JSON; prints a table and ratios.

    .venv/bin/python bench/aggregates.py [--scale-factor 1] [--repeat 3]
        [--store URI | --cluster DIR] [--output bench/results/aggregates.json]

- Q1 (sums of computed decimals: storage filters and computes, the client
  aggregates), Q1 without computed columns, Q6, and a group-by on l_partkey
  (200,000 groups per SF): in storage vs read everything and aggregate here.
- A 100 % and a 1 % scan with pushdown, plain reads and the cost model.
- Concurrent clients running Q6-like aggregates with and without push-back.
"""

from __future__ import annotations

import datetime
import json
import resource
import statistics
import tempfile
import threading
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from harness import arguments, cluster_store, process_cpu_seconds

import skyhook
from skyhook.dev.tpch import generate_lineitem, selectivity_filters
from skyhook.plan.aggregate import AggregateQuery

F = pc.field
ONE = pc.scalar(pa.scalar(Decimal("1.00"), pa.decimal128(15, 2)))
Q1_FILTER = F("l_shipdate") <= pa.scalar(datetime.date(1998, 9, 2))
Q6_FILTER = (
    (F("l_shipdate") >= pa.scalar(datetime.date(1994, 1, 1)))
    & (F("l_shipdate") < pa.scalar(datetime.date(1995, 1, 1)))
    & (F("l_discount") >= pa.scalar(Decimal("0.05"), pa.decimal128(15, 2)))
    & (F("l_discount") <= pa.scalar(Decimal("0.07"), pa.decimal128(15, 2)))
    & (F("l_quantity") < pa.scalar(Decimal("24"), pa.decimal128(15, 2)))
)
QUERIES = {
    "q1": (
        ["l_returnflag", "l_linestatus"],
        [
            ("l_quantity", "sum"),
            ("l_extendedprice", "sum"),
            (F("l_extendedprice") * (ONE - F("l_discount")), "sum", "sum_disc_price"),
            (
                (F("l_extendedprice") * (ONE - F("l_discount"))).cast(pa.decimal128(20, 4), safe=False)
                * (ONE + F("l_tax")),
                "sum",
                "sum_charge",
            ),
            ("l_quantity", "mean"),
            ("l_extendedprice", "mean"),
            ("l_discount", "mean"),
            ("l_orderkey", "count"),
        ],
        Q1_FILTER,
    ),
    "q1_no_computed": (
        ["l_returnflag", "l_linestatus"],
        [
            ("l_quantity", "sum"),
            ("l_extendedprice", "sum"),
            ("l_quantity", "mean"),
            ("l_extendedprice", "mean"),
            ("l_discount", "mean"),
            ("l_discount", "stddev"),
            ("l_orderkey", "count"),
        ],
        Q1_FILTER,
    ),
    "q6": ([], [(F("l_extendedprice") * F("l_discount"), "sum", "revenue")], Q6_FILTER),
    "group_by_partkey": (["l_partkey"], [("l_quantity", "sum"), ("l_orderkey", "count")], None),
}


class Meter:
    """Wall time, this process's CPU and the storage daemons' CPU of one run."""

    def __init__(self, osd_pids: list[int]) -> None:
        self.osd_pids = osd_pids

    def __call__(self, run) -> dict:
        before = resource.getrusage(resource.RUSAGE_SELF)
        osd_before = process_cpu_seconds(self.osd_pids)
        started = time.perf_counter()
        details = run()
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        storage_cpu = details.pop("storage_cpu_s", 0.0)
        return {
            "wall_s": wall,
            "client_cpu_s": max(0.0, cpu - (0 if self.osd_pids else storage_cpu)),
            "storage_cpu_s": storage_cpu,
            "osd_cpu_s": process_cpu_seconds(self.osd_pids) - osd_before,
            **details,
        }


def median_of(meter: Meter, run, repeat: int) -> dict:
    meter(run)  # warm caches
    runs = [meter(run) for _ in range(repeat)]
    return {
        key: statistics.median(run[key] for run in runs) if isinstance(runs[0][key], float) else runs[0][key]
        for key in runs[0]
    }


def aggregate_in_storage(dataset, keys, aggregations, filter, **options):
    def run():
        dataset.group_by(keys).aggregate(aggregations, filter=filter, **options)
        stats = dataset.last_aggregate.stats
        return {
            "bytes_to_client": stats.bytes_returned,
            "storage_cpu_s": stats.storage_cpu_s,
            "objects_pushed_back": stats.objects_pushed_back,
            "aggregate_in_storage": stats.aggregate_in_storage,
        }

    return run


def aggregate_at_client(dataset, keys, aggregations, filter):
    """The baseline: move every object, filter and aggregate with pyarrow here."""
    query = AggregateQuery.make(dataset.schema, keys, aggregations, filter)

    def run():
        scanner = dataset.scanner(pushdown=False)
        query.run_locally(scanner.to_table())
        return {"bytes_to_client": scanner.stats.bytes_returned}

    return run


def scan(dataset, columns, filter, pushdown):
    def run():
        scanner = dataset.scanner(columns=columns, filter=filter, pushdown=pushdown)
        scanner.to_table()
        return {
            "bytes_to_client": scanner.stats.bytes_returned,
            "storage_cpu_s": scanner.stats.storage_cpu_s,
            "objects_read_plain": scanner.stats.objects_read_plain,
            "cost_model": scanner.stats.cost_model,
        }

    return run


def concurrent_clients(store_uri: str, clients: int, max_in_flight: int | None):
    """clients threads, each with its own connection, run Q6-like aggregates at once."""

    def run():
        stores = [skyhook.connect(store_uri) for _ in range(clients)]
        pushed_back, cpu = [], []

        def client(store):
            dataset = store.dataset("lineitem_bench")
            for _ in range(2):
                dataset.aggregate(
                    [("l_extendedprice", "sum"), ("l_quantity", "mean")], filter=Q6_FILTER, max_in_flight=max_in_flight
                )
                pushed_back.append(dataset.last_aggregate.stats.objects_pushed_back)
                cpu.append(dataset.last_aggregate.stats.storage_cpu_s)

        threads = [threading.Thread(target=client, args=(store,)) for store in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for store in stores:
            store.close()
        return {"objects_pushed_back": sum(pushed_back), "storage_cpu_s": sum(cpu)}

    return run


def main() -> None:
    parser = arguments(__doc__, "aggregates", repeat=3)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    lineitem = generate_lineitem(args.scale_factor, args.data_dir)
    report: dict = {
        "benchmark": "aggregates",
        "scale_factor": args.scale_factor,
        "repeat": args.repeat,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        uri, osd_pids = cluster_store(args.cluster, args.store or Path(scratch).as_uri())
        meter = Meter(osd_pids)
        with skyhook.connect(uri) as store:
            dataset = store.write_dataset("lineitem_bench", str(lineitem), mode="overwrite")
            report.update(store=store.uri, rows=dataset.manifest.num_rows, objects=len(dataset.manifest.partitions))
            report["aggregates"] = {
                name: {
                    "in_storage": median_of(meter, aggregate_in_storage(dataset, *query), args.repeat),
                    "at_client": median_of(meter, aggregate_at_client(dataset, *query), args.repeat),
                }
                for name, query in QUERIES.items()
            }
            columns = ["l_orderkey", "l_partkey", "l_extendedprice"]
            filters = selectivity_filters(lineitem)
            report["scans"] = {
                f"{label} {'all columns' if cols is None else '3 columns'}": {
                    mode: median_of(meter, scan(dataset, cols, filters[label], pushdown), args.repeat)
                    for mode, pushdown in (("pushdown", True), ("plain", False), ("cost_model", "auto"))
                }
                for label, cols in (("100%", None), ("100%", columns), ("1%", columns))
            }
            report["concurrent_clients"] = {
                f"{args.clients} clients, {name}": median_of(meter, concurrent_clients(uri, args.clients, limit), 1)
                for name, limit in (("no push-back", 10_000), ("push-back when a call is running", 1))
            }
            store.delete_dataset("lineitem_bench")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, default=str))
    print_report(report)
    print(f"wrote {args.output}")


def print_report(report: dict) -> None:
    print(
        f"lineitem SF{report['scale_factor']:g}: {report['rows']:,} rows in {report['objects']} objects, {report['store']}"
    )
    print(
        f"{'query':<18} {'path':<10} {'wall s':>7} {'MiB to client':>13} {'client CPU':>10} {'storage CPU':>11} {'OSD CPU':>8}"
    )
    for name, paths in report["aggregates"].items():
        for path, r in paths.items():
            print(
                f"{name:<18} {path:<10} {r['wall_s']:>7.3f} {r['bytes_to_client'] / 2**20:>13.2f} "
                f"{r['client_cpu_s']:>10.3f} {r['storage_cpu_s']:>11.3f} {r['osd_cpu_s']:>8.3f}"
            )
        print(
            f"{'':<18} ratio wall in storage / at client {paths['in_storage']['wall_s'] / paths['at_client']['wall_s']:.2f}, "
            f"bytes {paths['in_storage']['bytes_to_client'] / paths['at_client']['bytes_to_client']:.4f}"
        )
    for name, modes in report["scans"].items():
        plain = modes["plain"]["wall_s"]
        print(
            f"scan {name:<22} "
            + "  ".join(f"{mode} {r['wall_s']:.3f}s ({r['wall_s'] / plain:.2f}x plain)" for mode, r in modes.items())
        )
        print(f"     cost model: {modes['cost_model']['cost_model']}")
    for name, r in report["concurrent_clients"].items():
        print(
            f"{name:<40} wall {r['wall_s']:.3f}s, pushed back {r['objects_pushed_back']} objects, "
            f"client CPU {r['client_cpu_s']:.2f}s, storage CPU {r['storage_cpu_s']:.2f}s, OSD CPU {r['osd_cpu_s']:.2f}s"
        )


if __name__ == "__main__":
    main()
