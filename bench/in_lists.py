"""IN lists against ranges selecting the same rows, in storage: lineitem's
l_partkey (dense keys spread over every object: storage evaluates every row)
and l_orderkey (sorted: statistics skip objects and row groups), for lists of
10 to 1,000 consecutive keys and the range from the first to the last. Per
list: storage CPU seconds and wall time of each (medians, interleaved runs),
their ratios, and the objects and zones each skipped.

    python bench/in_lists.py [--scale-factor 1] [--cluster DIR] [--repeat 5]
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import matplotlib
import pyarrow.compute as pc
import pyarrow.parquet as pq
from harness import arguments, cluster_store

import skyhook
from skyhook.dev.tpch import generate_lineitem

LENGTHS = (10, 30, 100, 300, 1000)
COLUMNS = ["l_orderkey", "l_partkey", "l_extendedprice"]


def filters(keys: list[int], column: str) -> dict[str, pc.Expression]:
    field = pc.field(column)
    return {"in_list": field.isin(keys), "range": (field >= keys[0]) & (field <= keys[-1])}


def scan(dataset: skyhook.Dataset, filter: pc.Expression) -> dict:
    started = time.perf_counter()
    scanner = dataset.scanner(columns=COLUMNS, filter=filter, pushdown=True)
    rows = scanner.to_table().num_rows
    stats = scanner.stats
    return {
        "wall_s": time.perf_counter() - started,
        "storage_cpu_s": stats.storage_cpu_s,
        "rows": rows,
        "objects_pruned": stats.objects_pruned,
        "zones_skipped": stats.zones_skipped,
    }


def compare(dataset: skyhook.Dataset, keys: list[int], column: str, repeat: int) -> dict:
    runs: dict[str, list[dict]] = {"in_list": [], "range": []}
    paths = filters(keys, column)
    for name, filter in paths.items():
        scan(dataset, filter)  # warm: the objects' pages and the decoded request
    for _ in range(repeat):  # interleaved: the machine is shared
        for name, filter in paths.items():
            runs[name].append(scan(dataset, filter))
    result = {}
    for name, measured in runs.items():
        if len({run["rows"] for run in measured + runs["range"]}) != 1:
            raise SystemExit(f"{column}: the IN list and the range disagree on the rows")
        result[name] = {key: statistics.median(run[key] for run in measured) for key in ("wall_s", "storage_cpu_s")} | {
            key: measured[0][key] for key in ("rows", "objects_pruned", "zones_skipped")
        }
    for key in ("wall_s", "storage_cpu_s"):
        result[f"{key}_ratio"] = result["in_list"][key] / result["range"][key]
    return result


def lists(lineitem: Path, column: str) -> dict[int, list[int]]:
    """Per length, that many consecutive distinct values of column from the middle of its range."""
    values = pc.unique(pq.read_table(lineitem, columns=[column]).column(0)).sort()
    return {length: values.slice(len(values) // 2, length).to_pylist() for length in LENGTHS}


def plot(report: dict, path: Path) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for axis, key in zip(axes, ("storage_cpu_s", "wall_s")):
        for column, results in report["results"].items():
            lengths = [int(length) for length in results]
            axis.plot(lengths, [results[str(n)][f"{key}_ratio"] for n in lengths], marker="o", label=column)
        axis.axhline(1.3, color="grey", linestyle="--", linewidth=1)
        axis.set_xscale("log")
        axis.set_xlabel("keys in the IN list")
        axis.set_ylabel(f"IN list / range, {key.removesuffix('_s').replace('_', ' ')}")
        axis.legend()
    figure.suptitle(
        f"IN lists against ranges of the same rows, lineitem SF{report['scale_factor']:g}, {report['store']}"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    args = arguments(__doc__, "in_lists", repeat=5).parse_args()
    lineitem = generate_lineitem(args.scale_factor, args.data_dir)
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        uri, _ = cluster_store(args.cluster, args.store or Path(scratch).as_uri())
        with skyhook.connect(uri) as store:
            if "lineitem_in_lists" not in store.list_datasets():
                store.write_dataset("lineitem_in_lists", str(lineitem), rows_per_object=200_000)
            dataset = store.dataset("lineitem_in_lists")
            report = {
                "benchmark": "in_lists",
                "store": "Ceph" if args.cluster else "embedded",
                "scale_factor": args.scale_factor,
                "objects": len(dataset.manifest.partitions),
                "repeat": args.repeat,
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "results": {
                    column: {
                        str(length): compare(dataset, keys, column, args.repeat)
                        for length, keys in lists(lineitem, column).items()
                    }
                    for column in ("l_partkey", "l_orderkey")
                },
            }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    plot(report, args.output.with_suffix(".png"))
    for column, results in report["results"].items():
        for length, result in results.items():
            print(
                f"{column} {length:>5} keys: storage CPU x{result['storage_cpu_s_ratio']:.2f}, "
                f"wall x{result['wall_s_ratio']:.2f} (IN list / range; "
                f"{result['in_list']['rows']} rows, zones skipped "
                f"{result['in_list']['zones_skipped']} / {result['range']['zones_skipped']})"
            )


if __name__ == "__main__":
    main()
