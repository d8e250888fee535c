"""Pushdown versus client-side read + filter on TPC-H lineitem, side by side in
one run, at 1 %, 10 % and 100 % selectivity. Writes JSON; prints ratios.

    .venv/bin/python bench/scan_pushdown.py [--scale-factor 1] [--repeat 5]
        [--store URI] [--output bench/results/scan_pushdown.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import skyhook
from skyhook.tpch import COLUMNS, generate_lineitem, measure_scan, selectivity_filters

MEASURES = ("wall_s", "client_cpu_s", "storage_cpu_s")


def run(store_uri: str, scale_factor: float, repeat: int, data_dir: Path) -> dict:
    lineitem = generate_lineitem(scale_factor, data_dir)
    with skyhook.connect(store_uri) as store:
        dataset = store.write_dataset("lineitem_bench", str(lineitem), mode="overwrite")
        results = {}
        for label, filter in selectivity_filters(lineitem).items():
            per_path = {}
            for pushdown in (True, False):
                measure_scan(dataset, filter, pushdown)  # warm the page cache
                runs = [measure_scan(dataset, filter, pushdown)[1] for _ in range(repeat)]
                summary = {key: statistics.median(run[key] for run in runs) for key in MEASURES}
                summary.update({key: runs[0][key] for key in
                                ("rows_returned", "bytes_returned", "bytes_read", "objects_scanned", "selectivity")})
                per_path["pushdown" if pushdown else "client_side"] = summary
            push, client = per_path["pushdown"], per_path["client_side"]
            per_path["ratios"] = {
                "bytes_returned": push["bytes_returned"] / client["bytes_returned"],
                "wall_s": push["wall_s"] / client["wall_s"],
                "client_cpu_s": push["client_cpu_s"] / max(client["client_cpu_s"], 1e-9),
            }
            results[label] = per_path
        store.delete_dataset("lineitem_bench")
        return {"benchmark": "scan_pushdown", "store": store.uri, "scale_factor": scale_factor,
                "rows": dataset.manifest.num_rows, "objects": len(dataset.manifest.partitions),
                "object_bytes": dataset.manifest.size_bytes, "columns": COLUMNS, "repeat": repeat,
                "machine": platform.node(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "results": results}


def print_ratios(report: dict) -> None:
    print(f"lineitem SF{report['scale_factor']:g}: {report['rows']:,} rows in {report['objects']} objects "
          f"({report['object_bytes'] / 2**20:.1f} MiB), store {report['store']}")
    print(f"{'kept':>6} {'bytes push/client':>18} {'time push/client':>17} {'client CPU push/client':>23}")
    for label, result in report["results"].items():
        ratios = result["ratios"]
        print(f"{label:>6} {ratios['bytes_returned']:>18.4f} {ratios['wall_s']:>17.2f} {ratios['client_cpu_s']:>23.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--store", help="store URI (default: a temporary embedded store)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--output", type=Path, default=Path("bench/results/scan_pushdown.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        report = run(args.store or Path(scratch).as_uri(), args.scale_factor, args.repeat, args.data_dir)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print_ratios(report)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
