"""Pushdown versus client-side read + filter on TPC-H lineitem, side by side in
one run, at 1 %, 10 % and 100 % selectivity. Writes JSON; prints ratios.

    .venv/bin/python bench/scan_pushdown.py [--scale-factor 1] [--repeat 5]
        [--store URI | --cluster DIR] [--output bench/results/scan_pushdown.json]

With --cluster the local Ceph cluster in DIR is used (started if needed), and
the OSDs' CPU seconds (from /proc) and resident memory are measured too.
"""

from __future__ import annotations

import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from harness import arguments, cluster_store, process_cpu_seconds, resident_bytes

import skyhook
from skyhook.dev.tpch import COLUMNS, generate_lineitem, measure_scan, selectivity_filters

MEASURES = ("wall_s", "client_cpu_s", "storage_cpu_s", "osd_cpu_s")


def run(store_uri: str, scale_factor: float, repeat: int, data_dir: Path, osd_pids: list[int]) -> dict:
    lineitem = generate_lineitem(scale_factor, data_dir)
    with skyhook.connect(store_uri) as store:
        dataset = store.write_dataset("lineitem_bench", str(lineitem), mode="overwrite")
        results = {}
        for label, filter in selectivity_filters(lineitem).items():
            per_path = {}
            for pushdown in (True, False):
                measure_scan(dataset, filter, pushdown)  # warm caches
                runs = []
                for _ in range(repeat):
                    osd_cpu = process_cpu_seconds(osd_pids)
                    stats = measure_scan(dataset, filter, pushdown)[1]
                    runs.append({**stats, "osd_cpu_s": process_cpu_seconds(osd_pids) - osd_cpu})
                summary = {key: statistics.median(run[key] for run in runs) for key in MEASURES}
                summary.update(
                    {
                        key: runs[0][key]
                        for key in ("rows_returned", "bytes_returned", "bytes_read", "objects_scanned", "selectivity")
                    }
                )
                per_path["pushdown" if pushdown else "client_side"] = summary
            push, client = per_path["pushdown"], per_path["client_side"]
            per_path["ratios"] = {
                "bytes_returned": push["bytes_returned"] / client["bytes_returned"],
                "wall_s": push["wall_s"] / client["wall_s"],
                "client_cpu_s": push["client_cpu_s"] / max(client["client_cpu_s"], 1e-9),
            }
            results[label] = per_path
        osd_rss = {str(pid): resident_bytes(pid) for pid in osd_pids}
        store.delete_dataset("lineitem_bench")
        return {
            "osd_rss_bytes_after": osd_rss,
            "benchmark": "scan_pushdown",
            "store": store.uri,
            "scale_factor": scale_factor,
            "rows": dataset.manifest.num_rows,
            "objects": len(dataset.manifest.partitions),
            "object_bytes": dataset.manifest.size_bytes,
            "columns": COLUMNS,
            "repeat": repeat,
            "machine": platform.node(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "results": results,
        }


def print_ratios(report: dict) -> None:
    print(
        f"lineitem SF{report['scale_factor']:g}: {report['rows']:,} rows in {report['objects']} objects "
        f"({report['object_bytes'] / 2**20:.1f} MiB), store {report['store']}"
    )
    print(
        f"{'kept':>5} {'path':>11} {'wall s':>7} {'MiB to client':>13} {'client CPU s':>12} "
        f"{'storage CPU s':>13} {'OSD CPU s':>9}"
    )
    for label, result in report["results"].items():
        for path in ("pushdown", "client_side"):
            r = result[path]
            print(
                f"{label:>5} {path:>11} {r['wall_s']:>7.3f} {r['bytes_returned'] / 2**20:>13.2f} "
                f"{r['client_cpu_s']:>12.3f} {r['storage_cpu_s']:>13.3f} {r['osd_cpu_s']:>9.3f}"
            )
    print(f"{'kept':>5} {'bytes push/client':>18} {'time push/client':>17} {'client CPU push/client':>23}")
    for label, result in report["results"].items():
        ratios = result["ratios"]
        print(f"{label:>5} {ratios['bytes_returned']:>18.4f} {ratios['wall_s']:>17.2f} {ratios['client_cpu_s']:>23.3f}")
    if report["osd_rss_bytes_after"]:
        print(
            "OSD RSS after the run (MiB):",
            ", ".join(f"{value / 2**20:.0f}" for value in report["osd_rss_bytes_after"].values()),
        )


def main() -> None:
    parser = arguments(__doc__, "scan_pushdown", repeat=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        store, osd_pids = cluster_store(args.cluster, args.store or Path(scratch).as_uri())
        report = run(store, args.scale_factor, args.repeat, args.data_dir, osd_pids)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print_ratios(report)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
