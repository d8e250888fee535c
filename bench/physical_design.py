"""Physical designs of TPC-H lineitem (the seeds' Figure 7), on both backends
in one run. Writes JSON and a PNG; prints the ratios.

    .venv/bin/python bench/physical_design.py [--scale-factor 1] [--repeat 3]
        [--backends embedded,ceph] [--cluster DIR] [--output bench/results/physical_design.json]

For each backend, lineitem is written as Parquet, then each object is
transformed inside storage to each design in turn:
- rows: FlatBuffers/FlexBuffers rows;
- ipc_all: every column together in one Arrow IPC stream (uncompressed, as in the seed);
- parquet: one Parquet file (zstd);
- extent: each column in its own extent (Arrow IPC, uncompressed), so a query
  reads only the extents of its columns;
and ``SELECT l_extendedprice`` runs inside storage (median of --repeat): wall
time, bytes read in storage, and the column's stored size. Each design's size
and its transform time inside storage and at the client (read, convert, write
back) are recorded, and a point lookup on l_orderkey runs without and with an
index, on Parquet objects and on IPC objects of 1 Ki-row batches. Without --cluster, a temporary local
Ceph cluster is started for the ceph backend and stopped at the end.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc
from harness import arguments

import skyhook
from skyhook.dev.cluster import LocalCluster
from skyhook.dev.tpch import generate_lineitem

COLUMN = "l_extendedprice"
KEY = "l_orderkey"
# What each measurement starts from: none of the designs measured, so each is a real rewrite.
BASELINE = skyhook.Design("parquet", compression="lz4")
DESIGNS = {
    "rows": skyhook.Design("rows", compression="none"),
    "ipc_all": skyhook.Design("ipc", compression="none"),
    "parquet": skyhook.Design("parquet"),
    "extent": skyhook.Design("ipc", column_groups="each", compression="none"),
}
# A point lookup reads the zones holding its key: a Parquet row group, or one small IPC record batch.
LOOKUP_DESIGNS = {
    "parquet": skyhook.Design("parquet"),
    "ipc_1k_batches": skyhook.Design("ipc", compression="lz4", row_group_size=1024),
}


def timed_scan(dataset: skyhook.Dataset, repeat: int, **options) -> dict:
    walls, stats = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        scanner = dataset.scanner(pushdown=True, **options)
        scanner.to_table()
        walls.append(time.perf_counter() - started)
        stats = scanner.stats
    return {"wall_s": statistics.median(walls), "bytes_read": stats.bytes_read, "storage_cpu_s": stats.storage_cpu_s}


def column_stored_bytes(dataset: skyhook.Dataset, design: skyhook.Design) -> int | None:
    """The column's extents in storage, where it has extents of its own."""
    if design.column_groups != "each":
        return None
    total = 0
    for partition in dataset.manifest.partitions:
        attribute = dataset.store.backend.object_attribute(partition.object_name, "skyhook.design")
        groups = skyhook.catalog.design.ObjectDesign.from_bytes(attribute).column_groups
        total += sum(group.length for group in groups if group.columns == (COLUMN,))
    return total


def measure_design(store: skyhook.Store, name: str, design: skyhook.Design, repeat: int) -> dict:
    in_storage = store.dataset(name).transform(design)
    transformed = store.dataset(name)
    result = {
        "bytes": transformed.manifest.size_bytes,
        "transform_in_storage_s": in_storage.seconds,
        "select_one_column": timed_scan(transformed, repeat, columns=[COLUMN]),
        "column_stored_bytes": column_stored_bytes(transformed, design),
    }
    transformed.transform(BASELINE)
    result["transform_at_client_s"] = store.dataset(name).transform(design, where="client").seconds
    store.dataset(name).transform(BASELINE)
    return result


def point_lookup(store: skyhook.Store, name: str, design: skyhook.Design, repeat: int) -> dict:
    """l_orderkey = k without and with an index, on objects of design."""
    store.dataset(name).transform(design)
    dataset = store.dataset(name)
    key = dataset.head(1, columns=[KEY]).column(0)[0]
    lookup = {"without_index": timed_scan(dataset, repeat, columns=[KEY, COLUMN], filter=pc.field(KEY) == key)}
    dataset.create_index(KEY)
    indexed = store.dataset(name)
    lookup["with_index"] = timed_scan(indexed, repeat, columns=[KEY, COLUMN], filter=pc.field(KEY) == key)
    # The one object holding the key: what share of it the lookup read.
    lookup["object_bytes"] = max(partition.size_bytes for partition in indexed.manifest.partitions)
    lookup["share_of_object"] = lookup["with_index"]["bytes_read"] / lookup["object_bytes"]
    indexed.drop_index(KEY)
    return lookup


def run_backend(uri: str, lineitem: Path, repeat: int) -> dict:
    store = skyhook.connect(uri)
    store.write_dataset("lineitem", str(lineitem), mode="overwrite")
    designs = {name: measure_design(store, "lineitem", design, repeat) for name, design in DESIGNS.items()}
    report = {"designs": designs}
    report["point_lookup"] = {
        name: point_lookup(store, "lineitem", design, repeat) for name, design in LOOKUP_DESIGNS.items()
    }
    report["ratios"] = ratios(report["designs"])
    store.delete_dataset("lineitem")
    return report


def ratios(designs: dict) -> dict:
    def wall(name: str) -> float | None:
        measured = designs.get(name, {}).get("select_one_column")
        return measured["wall_s"] if measured else None

    extent = wall("extent")
    found = {}
    for other in ("rows", "ipc_all", "parquet"):
        if extent and wall(other):
            found[f"{other}_over_extent"] = wall(other) / extent
    stored = designs.get("extent", {}).get("column_stored_bytes")
    if stored:
        found["extent_bytes_read_over_column_stored"] = designs["extent"]["select_one_column"]["bytes_read"] / stored
    return found


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backends = list(report["backends"])
    figure, axes = plt.subplots(1, len(backends), figsize=(5 * len(backends), 4), squeeze=False)
    for axis, backend in zip(axes[0], backends):
        designs = report["backends"][backend]["designs"]
        names = list(DESIGNS)
        axis.bar(names, [designs[name]["select_one_column"]["wall_s"] for name in names])
        axis.set_title(f"SELECT {COLUMN} ({backend}, SF {report['scale_factor']})")
        axis.set_ylabel("seconds")
    figure.tight_layout()
    figure.savefig(path)


def main() -> None:
    parser = arguments(__doc__, "physical_design", repeat=3)
    parser.add_argument("--backends", default="embedded,ceph")
    args = parser.parse_args()
    backends = args.backends.split(",")
    lineitem = generate_lineitem(args.scale_factor, args.data_dir)
    report = {"scale_factor": args.scale_factor, "backends": {}}
    with tempfile.TemporaryDirectory() as scratch:
        if "embedded" in backends:
            uri = args.store or (Path(scratch) / "store").as_uri()
            report["backends"]["embedded"] = run_backend(uri, lineitem, args.repeat)
        if "ceph" in backends:
            cluster = LocalCluster(args.cluster or Path(scratch) / "cluster")
            uri = cluster.up()
            try:
                report["backends"]["ceph"] = run_backend(uri, lineitem, args.repeat)
            finally:
                if args.cluster is None:
                    cluster.down()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    plot(report, args.output.with_suffix(".png"))
    for backend, measured in report["backends"].items():
        print(backend, json.dumps(measured["ratios"], indent=1))
        for design, lookup in measured["point_lookup"].items():
            print(f"  point lookup with an index, {design}: {lookup['share_of_object']:.2%} of the object read")


if __name__ == "__main__":
    main()
