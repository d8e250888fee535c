"""Pushdown across a link that costs something: the dev Ceph cluster runs in a
network namespace behind a veth pair shaped with tbf (skyhook.dev.shaped_link),
the client outside, so every byte of a reply or a plain read crosses a real
bottleneck. For each link rate, lineitem at 1 % / 10 % / 100 % selectivity is
read with pushdown, as a plain read (whole objects to the client), and with the
cost model deciding; 3 columns and all columns. Writes JSON (and a PNG next to
it); prints ratios. Needs root (namespaces, veth, tc); not part of the tests.

    sudo .venv/bin/python bench/network.py [--scale-factor 1] [--repeat 3]
        [--rates 1000,10000] [--output bench/results/network.json]
        [--namespace skyhook-net --subnet 77]    # another link on the same host: other names
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import matplotlib
import pyarrow.compute as pc

import skyhook
from skyhook.dev.cluster import LocalCluster
from skyhook.dev.shaped_link import ShapedLink
from skyhook.dev.tpch import COLUMNS, generate_lineitem, selectivity_filters
from skyhook.execution.observed_rates import rates_of

PATHS = {"pushdown": True, "plain": False, "auto": "auto"}


def measure(dataset: skyhook.Dataset, columns: list[str] | None, filter: pc.Expression, pushdown: bool | str) -> dict:
    started = time.perf_counter()
    scanner = dataset.scanner(columns=columns, filter=filter, pushdown=pushdown)
    table = scanner.to_table()
    stats = scanner.stats.as_dict()
    return {
        "wall_s": time.perf_counter() - started,
        "rows": table.num_rows,
        "bytes_returned": stats["bytes_returned"],
        "objects_read_plain": stats["objects_read_plain"],
        "cost_model": stats["cost_model"],
    }


def run_rate(dataset: skyhook.Dataset, filters: dict[str, pc.Expression], repeat: int) -> dict:
    results = {}
    for label, filter in filters.items():
        for width, columns in (("3 columns", COLUMNS), ("all columns", None)):
            per_path = {}
            for path, pushdown in PATHS.items():
                measure(dataset, columns, filter, pushdown)  # warm caches
                runs = [measure(dataset, columns, filter, pushdown) for _ in range(repeat)]
                per_path[path] = {
                    **runs[0],
                    "wall_s": statistics.median(run["wall_s"] for run in runs),
                }
            if len({per_path[path]["rows"] for path in PATHS}) != 1:
                raise AssertionError(f"{label} {width}: the paths returned different row counts")
            plain = per_path["plain"]["wall_s"]
            per_path["ratios"] = {
                "plain_over_pushdown": plain / per_path["pushdown"]["wall_s"],
                "auto_over_plain": per_path["auto"]["wall_s"] / plain,
            }
            results[f"{label} / {width}"] = per_path
    return results


def plot(report: dict, target: Path) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = list(report["results"])
    cases = list(report["results"][rates[0]])
    figure, axes = plt.subplots(1, len(rates), figsize=(7 * len(rates), 5), squeeze=False)
    for axis, rate in zip(axes[0], rates):
        positions = range(len(cases))
        for offset, path in enumerate(PATHS):
            axis.bar(
                [p + (offset - 1) * 0.27 for p in positions],
                [report["results"][rate][case][path]["wall_s"] for case in cases],
                width=0.27,
                label=path,
            )
        axis.set_xticks(list(positions), cases, rotation=30, ha="right", fontsize=8)
        axis.set_ylabel("seconds (median)")
        axis.set_title(f"lineitem SF{report['scale_factor']:g}, Ceph behind {rate}")
        axis.legend()
    figure.tight_layout()
    figure.savefig(target, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rates", default="1000,10000", help="link rates in Mbit/s, comma separated")
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--output", type=Path, default=Path("bench/results/network.json"))
    parser.add_argument("--namespace", default="skyhook-net", help="network namespace of the storage daemons")
    parser.add_argument("--subnet", type=int, default=77, help="the link's addresses: 10.213.SUBNET.1 and .2")
    arguments = parser.parse_args()
    rates = [int(rate) for rate in arguments.rates.split(",")]

    lineitem = generate_lineitem(arguments.scale_factor, arguments.data_dir)
    filters = selectivity_filters(lineitem)
    link = ShapedLink(arguments.namespace, arguments.subnet)
    directory = Path(tempfile.mkdtemp(prefix="skyhook-network-"))
    cluster = LocalCluster(directory / "cluster")
    try:
        link.up(rate_mbit=max(rates))  # load the data at the fastest rate
        cluster.up(osds=3, address=link.storage_address, netns=link.namespace)
        with skyhook.connect(cluster.uri) as store:
            dataset = store.write_dataset("lineitem_network", str(lineitem), mode="overwrite")
            results, observed = {}, {}
            for rate in rates:
                link.set_rate(rate)
                results[f"{rate / 1000:g} Gbit/s"] = run_rate(dataset, filters, arguments.repeat)
                # What the cost model measured of the link (the same connection throughout).
                observed[f"{rate / 1000:g} Gbit/s"] = rates_of(store.backend).link_bytes_per_second
            manifest = dataset.manifest
    finally:
        if cluster.exists():
            cluster.down()
        link.down()
        shutil.rmtree(directory, ignore_errors=True)

    report = {
        "benchmark": "network",
        "scale_factor": arguments.scale_factor,
        "rows": manifest.num_rows,
        "objects": len(manifest.partitions),
        "object_bytes": manifest.size_bytes,
        "repeat": arguments.repeat,
        "machine": platform.node(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": results,
        "observed_link_bytes_per_second": observed,
    }
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2))
    plot(report, arguments.output.with_suffix(".png"))
    for rate, cases in results.items():
        print(
            f"Ceph behind {rate} (lineitem SF{arguments.scale_factor:g}, {manifest.size_bytes / 2**20:.0f} MiB), "
            f"link observed {observed[rate] / 1e6:.0f} MB/s:"
        )
        for case, paths in cases.items():
            ratios = paths["ratios"]
            print(
                f"  {case:28} pushdown {paths['pushdown']['wall_s']:6.2f} s  plain {paths['plain']['wall_s']:6.2f} s  "
                f"auto {paths['auto']['wall_s']:6.2f} s  plain/pushdown {ratios['plain_over_pushdown']:5.2f}x  "
                f"auto/plain {ratios['auto_over_plain']:4.2f}x"
            )
            print(f"    cost model: {paths['auto']['cost_model']}")


if __name__ == "__main__":
    main()
