"""Regenerates the fuzzing seeds under cpp/fuzz from real client requests.

Writes a small table of every type the storage methods handle into an embedded
store (Parquet and Arrow IPC; row objects beside them), runs scans, counts, aggregates and describes
through the client with the backend's calls wrapped, and saves:

  objects/               the seed objects fuzz_requests runs against
                         (extension .parquet, .arrow or .rows gives the format attribute)
  fixed_requests/        the valid requests fuzz_objects sends to mutated objects
                         (<n>-<what>.<method>)
  corpus/fuzz_requests/  selector byte (method, object) + a captured request
  corpus/fuzz_objects/   selector byte (format, fixed request) + a seed object
  written/               the objects fuzz_writes writes to, as a store holds them
                         (<name>, its design attribute in <name>.design)
  corpus/fuzz_writes/    selector byte (writing method, object) + request length +
                         request + the omap entries storage wrote for that object

    .venv/bin/python cpp/fuzz/make_corpus.py
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import random
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import skyhook
from skyhook.backends.object_codec import encode_object
from skyhook.catalog.design import DESIGN_ATTRIBUTE, Design, ObjectDesign
from skyhook.design.object_transform import TargetDesign
from skyhook.plan.expressions import place_filter
from skyhook.rpc.requests import ScanRequest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))
from support.tables import make_typed_table  # noqa: E402  (the suite's typed data; a tool, not a test)

METHODS = ["scan", "describe", "execute_plan"]  # the order of kFuzzedMethods in fuzz_requests.cc
WRITING_METHODS = ["analyze", "create_index", "drop_index", "transform"]  # kWritingMethods in fuzz_writes.cc
FORMATS_OF_OBJECTS_TARGET = ["parquet", "ipc", "rows"]  # kFormats[0], [1] and [2] in fuzz_objects.cc
FORMAT_OF_EXTENSION = {".parquet": "parquet", ".arrow": "ipc", ".rows": "rows"}  # harness.cc's FormatOf
DESIGN_SLOT = 5  # kFormats[5] in fuzz_objects.cc: the input carries a design attribute
F = pc.field


def typed_table(rows: int = 120, seed: int = 11) -> pa.Table:
    """The test suite's table of every type, plus a decimal at Arrow's widest precision."""
    table = make_typed_table(rows, seed)
    rng = random.Random(seed)
    wide = [
        None if rng.random() < 0.1 else decimal.Decimal(rng.randint(-(10**20), 10**20)) / 10**10 for _ in range(rows)
    ]
    return table.append_column("dec38", pa.array(wide, pa.decimal128(38, 10)))


def encoded(table: pa.Table, design: Design) -> tuple[pa.Buffer, bytes]:
    """(object bytes, design attribute) as ingest builds them."""
    return encode_object(table, ObjectDesign.request(design, table.column_names, 0).to_bytes())


def encode_partition(table: pa.Table, format: str, row_group_size: int, compression: str) -> pa.Buffer:
    """An object as written before designs (read by its skyhook.format attribute)."""
    if compression not in ("none", "lz4", "zstd"):  # a codec designs do not write
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, row_group_size=row_group_size, compression=compression)
        return sink.getvalue()
    return encoded(table, Design(format, compression=compression, row_group_size=row_group_size))[0]


# Objects of several column extents, each fed with its design attribute.
DESIGNED_OBJECTS = {
    "each-column.parquet": Design("parquet", column_groups="each", row_group_size=40),
    "groups-sorted.arrow": Design(
        "ipc", column_groups=[["s", "i32"], ["dec", "dec38"]], sort_by=["i32"], compression="lz4", row_group_size=30
    ),
}


def retyped(table: pa.Table) -> pa.Table:
    """The same column names with other types: requests bound to the dataset's
    schema meet an object that disagrees (TypeMismatch, UnknownColumn)."""
    return pa.table(
        {
            "id": pc.cast(table["id"], pa.string()),
            "i32": pc.cast(table["i32"], pa.int64()),
            "s": pc.cast(table["s"], pa.large_string()),
            "dec": pc.cast(table["dec"], pa.float64()),
            "d": table["d"],
            "extra": table["tags"],
        }
    )


SCANS = [  # (name, scanner arguments); a name starting with "fixed" also becomes a fixed request
    ("fixed-scan-all", {}),
    (
        "fixed-scan-filter-projection",
        {
            "columns": ["id", "dec", "s", "d", "ts", "tags"],
            "filter": (F("i32") > 0) & (F("s") != "apple") | F("dec").is_null(),
        },
    ),
    ("fixed-count", {"columns": [], "filter": F("d") < datetime.date(1997, 1, 1)}),
    (  # storage's pre-filter on stored integers (physical_prefilter.h)
        "fixed-scan-prefilter",
        {
            "columns": ["id", "i8", "dec", "d", "ts", "tsz", "s"],
            "filter": (F("i32") >= -300)
            & (F("i32") <= 300)
            & (F("dec") > pa.scalar(decimal.Decimal("-500.0"), pa.decimal128(12, 1)))
            & (F("id") != 7),
        },
    ),
    ("scan-small-batches", {"columns": ["id", "bin"], "batch_size": 7}),
    (
        "scan-computed",
        {
            "columns": {
                "x": F("i32") * 2 + F("i8"),
                "y": F("dec") + F("dec"),
                "z": F("f64") / 3.0,
                "w": pc.if_else(F("b"), F("s"), pa.scalar("none")),
            }
        },
    ),
    ("scan-cast", {"columns": {"i": F("u16").cast(pa.int64()), "t": F("ts").cast(pa.date32())}}),
]
FILTERS = [
    F("id") >= 60,
    F("i8") < 0,
    (F("i32") >= -100) & (F("i32") <= 100),
    F("u16") == 5000,
    F("f32") > 1.5,
    F("f64").is_nan(),
    "dec > 100.5",
    "dec38 < 0",
    F("s") == "apple",
    "s in ('banana', 'zeta')",
    pc.starts_with(F("s"), "ch"),
    F("bin") == b"\x01",
    "d <= '1996-01-01'",
    F("ts") > pa.scalar(datetime.datetime(2020, 3, 1), pa.timestamp("us")),
    F("tsz") < pa.scalar(datetime.datetime(2020, 2, 1, tzinfo=datetime.timezone.utc), pa.timestamp("ms", "UTC")),
    F("b"),
    ~F("b") | F("all_null").is_valid(),
    F("all_null").is_null(),
    pc.list_value_length(F("tags")) > 1,
    (F("id") - 7 > F("i8")) & ~(F("s") == ""),
    F("i32").isin(pa.array([1, 2, 3], pa.int32())),
]
AGGREGATES = [  # (name, keys, aggregations, filter)
    (
        "fixed-plan-group-by",
        ["s"],
        [("dec", "sum"), ("i8", "count"), ("f32", "stddev"), ("d", "min"), ("ts", "max"), ("i32", "count_distinct")],
        F("id") > 10,
    ),
    ("plan-no-keys", [], [("i32", "sum"), ("f64", "mean"), ("dec38", "sum"), ("u16", "variance")], None),
    ("plan-two-keys", ["b", "d"], [("dec38", "mean"), ("tsz", "min"), ("s", "first"), ("s", "last")], "i8 > 0"),
    ("fixed-plan-computed-decimal", ["s"], [(F("dec") * F("dec"), "sum", "squares"), ("dec", "max")], None),
    ("plan-computed-int", ["b"], [(F("i32") * F("i32"), "sum", "squares"), ("id", "count")], F("tsz").is_valid()),
    ("plan-keys-of-many-types", ["i8", "dec", "bin"], [("f32", "max"), ("all_null", "count")], None),
]


# The objects fuzz_writes writes to (file name -> design), and what is asked of them.
WRITTEN = {
    "designed.parquet": Design("parquet", row_group_size=40),
    "each-column.arrow": Design("ipc", column_groups="each", row_group_size=30, compression="lz4"),
    "designed.rows": Design("rows"),
}
TRANSFORMS = [
    Design("ipc", sort_by=["i32"], row_group_size=25),
    Design("parquet", column_groups=[["id", "s", "d"], ["i32", "dec", "tags"]], compression="zstd"),
    Design("rows"),
]


class Recorder:
    """Wraps a backend's calls and keeps every (method, request) it sends."""

    def __init__(self, backend) -> None:
        self.calls: list[tuple[str, bytes]] = []
        call, call_many = backend.call, backend.call_many

        def recording_call(name, method, request):
            self.calls.append((method, bytes(request)))
            return call(name, method, request)

        def recording_call_many(method, calls):
            def recorded():
                for name, request in calls:
                    self.calls.append((method, bytes(request)))
                    yield name, request

            return call_many(method, recorded())

        backend.call, backend.call_many = recording_call, recording_call_many

    def take(self) -> list[tuple[str, bytes]]:
        taken, self.calls = self.calls, []
        return taken


def written_seeds(table: pa.Table) -> None:
    """Objects written by a store with the designs of WRITTEN, and inputs of fuzz_writes:
    the requests the client sends for statistics, indexes and transforms, each with
    the omap entries storage had written for that object (none, statistics, indexes)."""
    with tempfile.TemporaryDirectory() as scratch, skyhook.connect(Path(scratch).as_uri()) as store:
        recorder = Recorder(store.backend)
        for number, (file_name, design) in enumerate(sorted(WRITTEN.items())):
            dataset = store.write_dataset(f"written_{number}", table, design=design)
            (partition,) = dataset.manifest.partitions
            stored = store.backend.read_versioned_object(partition.object_name)
            write_file(HERE / "written", file_name, stored.data.to_pybytes())
            write_file(HERE / "written", f"{file_name}.design", stored.attributes[DESIGN_ATTRIBUTE])
            recorder.take()
            requests, omaps = [], [{}]
            for run in (
                dataset.compute_statistics,
                lambda: dataset.create_index("i32"),
                lambda: dataset.create_index("s"),
                lambda: dataset.drop_index("i32"),
            ):
                run()
                requests += [(method, request) for method, request in recorder.take() if method in WRITING_METHODS]
                omaps.append(omap_of(Path(scratch), partition.object_name))
            columns = tuple(table.column_names)
            requests += [("transform", TargetDesign(target, columns).request(0).encode()) for target in TRANSFORMS]
            requests += [("transform", request) for request in row_rewrites(table, design, columns)]
            selector_of = lambda method: WRITING_METHODS.index(method) + len(WRITING_METHODS) * number  # noqa: E731
            for method, request in requests:
                for omap in omaps[:: 2 if method == "transform" else 1]:
                    entry = bytes([selector_of(method)]) + len(request).to_bytes(4, "little") + request
                    entry += b"".join(
                        len(key).to_bytes(2, "little") + key + len(value).to_bytes(4, "little") + value
                        for key, value in sorted(omap.items())
                    )
                    write_file(HERE / "corpus/fuzz_writes", digest(entry), entry)


def row_rewrites(table: pa.Table, design: Design, columns: tuple[str, ...]) -> list[bytes]:
    """Transform requests that keep some rows, as a delete sends them (distributed/row_changes.py)."""
    requests = []
    for deleted in (pc.field("i32") > 0, pc.field("s") == "a"):
        kept = place_filter(~deleted | deleted.is_null(), table.schema).storage
        base = TargetDesign(design, columns).request(0)
        requests.append(replace(base, rows=ScanRequest(filter=kept).encode()).encode())
    return requests


def omap_of(store: Path, object_name: str) -> dict[bytes, bytes]:
    """The omap entries of an object of an embedded store."""
    with sqlite3.connect(store / "omap.sqlite") as db:
        rows = db.execute("select key, value from omap where object = ?", (object_name.encode(),)).fetchall()
    return {bytes(key): bytes(value) for key, value in rows}


def write_file(directory: Path, name: str, data: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data)


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


def main() -> None:
    table = typed_table()
    for directory in ("objects", "fixed_requests", "corpus", "written"):
        shutil.rmtree(HERE / directory, ignore_errors=True)
    objects = {
        "typed.parquet": encode_partition(table, "parquet", 40, "zstd"),
        "typed.arrow": encode_partition(table, "ipc", 40, "none"),
        "typed-zstd.arrow": encode_partition(table, "ipc", 50, "zstd"),
        "empty.parquet": encode_partition(table.slice(0, 0), "parquet", 40, "zstd"),
        "retyped.parquet": encode_partition(retyped(table), "parquet", 64, "snappy"),
        # Named to sort after the others: fuzz_requests' inputs select objects by position.
        "typed.rows": encoded(table, Design("rows"))[0],
        "zero.rows": encoded(table.slice(0, 0), Design("rows"))[0],
    }
    for name, data in objects.items():
        write_file(HERE / "objects", name, data.to_pybytes())
    object_names = sorted(objects)

    captured: dict[str, list[tuple[str, bytes]]] = {}  # operation -> calls
    with tempfile.TemporaryDirectory() as scratch, skyhook.connect(Path(scratch).as_uri()) as store:
        recorder = Recorder(store.backend)
        for format in ("parquet", "ipc"):
            dataset = store.write_dataset(f"typed_{format}", table, format=format, row_group_size=40)
            captured[f"{format}:describe"] = recorder.take()

            def record(name, run):
                try:
                    run()
                except (skyhook.SkyhookError, pa.ArrowException) as error:
                    print(f"{format} {name}: {error}")  # what was sent before the error is still a seed
                captured[f"{format}:{name}"] = recorder.take()
                if not captured[f"{format}:{name}"]:
                    print(f"{format} {name}: nothing reached storage")

            for name, arguments in SCANS:
                record(name, lambda: dataset.to_table(pushdown=True, **arguments))
            for number, filter in enumerate(FILTERS):
                record(f"filter-{number}", lambda: dataset.to_table(filter=filter, pushdown=True))
            record("head", lambda: dataset.head(3, columns=["s", "tags"], pushdown=True))
            record(
                "limits",
                lambda: dataset.to_table(
                    filter="id < 5", pushdown=True, max_result_bytes=1 << 20, max_in_flight=1000, max_slice_cpu_ns=10**9
                ),
            )
            for name, keys, aggregations, filter in AGGREGATES:
                record(name, lambda: dataset.group_by(keys).aggregate(aggregations, filter=filter))

    seen = set()
    for operation, calls in captured.items():
        format, name = operation.split(":")
        own_object = object_names.index("typed.parquet" if format == "parquet" else "typed.arrow")
        for method, request in calls:
            selector = METHODS.index(method) + len(METHODS) * own_object
            if (selector, request) in seen:
                continue
            seen.add((selector, request))
            write_file(HERE / "corpus/fuzz_requests", digest(bytes([selector]) + request), bytes([selector]) + request)
            if format == "parquet" and name.startswith("fixed"):
                write_file(HERE / "fixed_requests", f"{name}.{method}", request)
    write_file(HERE / "fixed_requests", "fixed-describe.describe", captured["parquet:describe"][0][1])
    # A few requests against the objects that are not the dataset's own.
    for other in ("empty.parquet", "retyped.parquet", "typed-zstd.arrow", "typed.rows", "zero.rows"):
        for method, request in (
            captured["parquet:fixed-scan-filter-projection"]
            + captured["parquet:fixed-plan-group-by"]
            + captured["parquet:describe"]
        ):
            selector = METHODS.index(method) + len(METHODS) * object_names.index(other)
            write_file(HERE / "corpus/fuzz_requests", digest(bytes([selector]) + request), bytes([selector]) + request)

    written_seeds(table)
    fixed = sorted(path.name for path in (HERE / "fixed_requests").iterdir())
    for number, (name, data) in enumerate(objects.items()):  # each object under two of the requests
        format = FORMAT_OF_EXTENSION[Path(name).suffix]
        for request in (number % len(fixed), (number + len(objects)) % len(fixed)):
            selector = FORMATS_OF_OBJECTS_TARGET.index(format) + 8 * request
            entry = bytes([selector]) + data.to_pybytes()
            write_file(HERE / "corpus/fuzz_objects", digest(entry), entry)
    for number, (name, design) in enumerate(DESIGNED_OBJECTS.items()):
        data, attribute = encoded(table, design)
        for request in (number % len(fixed), (number + 2) % len(fixed)):
            entry = (
                bytes([DESIGN_SLOT + 8 * request])
                + len(attribute).to_bytes(4, "little")
                + attribute
                + data.to_pybytes()
            )
            write_file(HERE / "corpus/fuzz_objects", digest(entry), entry)
    total = sum(
        path.stat().st_size
        for directory in ("objects", "fixed_requests", "corpus", "written")
        for path in (HERE / directory).rglob("*")
        if path.is_file()
    )
    print(f"{len(seen)} requests, {len(fixed)} fixed requests, {len(objects)} objects, {total:,} bytes")


if __name__ == "__main__":
    main()
