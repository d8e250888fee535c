"""The row format ("rows": FlatBuffers of FlexBuffers rows) against Arrow IPC and
Parquet on TPC-H lineitem: encode throughput and size of one object of the
whole table, and decode throughput inside storage (scans pushed down, every
column and one column, over objects of each format). Writes JSON; prints a table.

    .venv/bin/python bench/row_format.py [--scale-factor 0.1] [--repeat 3]
        [--store URI | --cluster DIR] [--output bench/results/row_format.json]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from harness import arguments, cluster_store

import skyhook
from skyhook.backends.object_codec import encode_object
from skyhook.catalog.design import Design, ObjectDesign
from skyhook.dev.tpch import generate_lineitem

ROWS_PER_OBJECT = 100_000
DESIGNS = {"rows": Design("rows"), "ipc": Design("ipc", compression="none"), "parquet": Design("parquet")}


def encode(table: pa.Table, format: str) -> pa.Buffer:
    """One object of the table, built by the core's writer (as ingest builds it)."""
    return encode_object(table, ObjectDesign.request(DESIGNS[format], table.column_names, 0).to_bytes())[0]


def best_seconds(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def write(store: skyhook.Store, name: str, table: pa.Table, format: str) -> skyhook.Dataset:
    return store.write_dataset(name, table, design=DESIGNS[format], rows_per_object=ROWS_PER_OBJECT, mode="overwrite")


def main() -> None:
    parser = arguments(__doc__, "row_format", repeat=3)
    parser.set_defaults(scale_factor=0.1)
    options = parser.parse_args()
    options.data_dir.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(generate_lineitem(options.scale_factor, options.data_dir))
    rows, arrow_bytes = table.num_rows, table.nbytes
    results: dict = {"scale_factor": options.scale_factor, "rows": rows, "arrow_bytes": arrow_bytes, "formats": {}}
    with tempfile.TemporaryDirectory() as scratch:
        uri, _ = cluster_store(options.cluster, options.store or Path(scratch, "store").as_uri())
        with skyhook.connect(uri) as store:
            for format in DESIGNS:
                size = encode(table, format).size
                encode_s = best_seconds(lambda: encode(table, format), options.repeat)
                dataset = write(store, f"lineitem_{format}", table, format)
                scans = {}
                for label, columns in (("all", None), ("one", ["l_extendedprice"])):
                    scanner = dataset.scanner(columns=columns, pushdown=True)
                    seconds = best_seconds(scanner.to_table, options.repeat)
                    scans[label] = {
                        "seconds": seconds,
                        "rows_per_s": rows / seconds,
                        "storage_cpu_s": scanner.stats.storage_cpu_s,
                    }
                results["formats"][format] = {
                    "bytes": size,
                    "encode_s": encode_s,
                    "encode_rows_per_s": rows / encode_s,
                    "encode_mb_per_s": arrow_bytes / encode_s / 1e6,
                    "scan_all": scans["all"],
                    "scan_one": scans["one"],
                    "scan_all_mb_per_s": size / scans["all"]["seconds"] / 1e6,
                }
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(results, indent=2))
    print(f"lineitem SF {options.scale_factor:g}: {rows:,} rows, {arrow_bytes / 1e6:.1f} MB in Arrow")
    print(
        f"{'format':8} {'MB':>8} {'encode Mrows/s':>15} {'encode MB/s':>12} {'scan all Mrows/s':>17} {'scan one Mrows/s':>17}"
    )
    for format, result in results["formats"].items():
        print(
            f"{format:8} {result['bytes'] / 1e6:8.1f} {result['encode_rows_per_s'] / 1e6:15.2f} "
            f"{result['encode_mb_per_s']:12.0f} {result['scan_all']['rows_per_s'] / 1e6:17.2f} "
            f"{result['scan_one']['rows_per_s'] / 1e6:17.2f}"
        )


if __name__ == "__main__":
    main()
