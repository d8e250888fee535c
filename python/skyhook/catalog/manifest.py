"""The manifest of a dataset: schema, its write design, and per partition the
object's design and statistics.

It is stored as one Arrow IPC file (a row per partition) and replaced
atomically, so a reader always sees a complete version of the dataset. Before
it is trusted, every object name in it is checked (skyhook.names).

Every publication has a generation of its own. A write names its objects after
its generation; an append keeps the objects before it, so one manifest names
objects of several generations, and its history says how many partitions each
earlier version (since the last overwrite) had: those versions are prefixes.

A distributed transform replaces some partitions by new objects of its own
generation and keeps the others: the versions before it are no prefixes of
the result, so its manifest has no history, and the generations of the
objects it kept are listed as ``kept``.

Each partition's design (version 3) is what its object was written or last
transformed to, for planning and for ``ds.design()``; readers never decode an
object by it (a transform may have rewritten the object since), only by the
design attribute the object itself carries. The write design is what new
objects (appends) are built as unless a write asks for another.

Version 4 adds per partition the statistics storage computed on its object
(catalog/object_statistics.py), null until ``compute_statistics`` publishes them.

Version 5 lets a partition's columns live in several objects ("column
objects"): the partition's object holds the columns no other object holds,
and each of its ``column_objects`` holds a group of columns of the same rows,
in a design of its own. Every object of a partition is named after a writer's
generation like any other, and retirement, fsck and garbage collection know
them all (``Partition.object_names``). A split partition's object statistics
join those storage computed on each of its objects, tagged with a digest of
every object's generation and size (``Partition.data_tag``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, replace
from functools import lru_cache

import pyarrow as pa

from skyhook import stored_json
from skyhook.catalog.design import FORMATS, Design, ObjectDesign
from skyhook.catalog.manifest_memo import per_manifest
from skyhook.catalog.object_statistics import DataTag, object_statistics_type
from skyhook.errors import CorruptManifestError
from skyhook.names import GENERATION, TAG_NAME, object_owner

MANIFEST_VERSION = b"6"
#: Version 1 (before appends) had no history and objects of one generation, versions 1
#: and 2 one format for every object and no designs: still readable, as legacy designs.
#: Versions 1 to 3 had no object statistics: read as none; versions 1 to 4 no column
#: objects; versions 1 to 5 no version number (read as version 0, see catalog/versions.py).
READABLE_VERSIONS = (b"1", b"2", b"3", b"4", b"5", MANIFEST_VERSION)
#: Earlier versions kept for time travel unless asked otherwise (tagged ones are kept too).
DEFAULT_KEEP_VERSIONS = 10
COLUMN_OBJECT_TYPE = pa.struct(
    [("object", pa.string()), ("columns", pa.list_(pa.string())), ("size_bytes", pa.int64()), ("design", pa.binary())]
)


def statistics_type(schema: pa.Schema) -> pa.StructType:
    """Per-partition statistics, the row the storage-side describe method returns."""
    return pa.struct(
        [
            pa.field(
                field.name,
                pa.struct(
                    [("min", field.type), ("max", field.type), ("null_count", pa.int64()), ("bytes", pa.int64())]
                ),
            )
            for field in schema
        ]
    )


@dataclass(frozen=True)
class ColumnObject:
    """One object of a partition and the columns it holds (of the partition's rows, in their order)."""

    object_name: str
    columns: tuple[str, ...]
    size_bytes: int
    design: ObjectDesign


@dataclass(frozen=True)
class Partition:
    number: int
    #: The partition's object (with column objects: the one holding the columns they do not).
    object_name: str
    num_rows: int
    size_bytes: int  # of object_name
    design: ObjectDesign  # of object_name
    #: The partition's other objects, each holding some of its columns (version 5).
    column_objects: tuple[ColumnObject, ...] = ()

    @property
    def object_names(self) -> tuple[str, ...]:
        """Every object of the partition."""
        return (self.object_name, *(column.object_name for column in self.column_objects))

    @property
    def stored_bytes(self) -> int:
        """The bytes of every object of the partition."""
        return self.size_bytes + sum(column.size_bytes for column in self.column_objects)

    @property
    def data_tag(self) -> DataTag:
        """What identifies the partition's data: its object's generation and
        size; split, a digest of every object's name, generation and size
        (any object rewritten or replaced changes it) and their bytes."""
        if not self.column_objects:
            return DataTag(self.design.generation, self.size_bytes)
        held = [(self.object_name, self.design.generation, self.size_bytes)] + [
            (column.object_name, column.design.generation, column.size_bytes) for column in self.column_objects
        ]
        digest = hashlib.sha256(json.dumps(held).encode()).digest()
        return DataTag(int.from_bytes(digest[:8], "big") >> 1, self.stored_bytes)

    def objects(self, columns: list[str]) -> tuple[ColumnObject, ...]:
        """Every object of the partition with the columns it holds, of a dataset of columns."""
        elsewhere = {name for column in self.column_objects for name in column.columns}
        first = tuple(name for name in columns if name not in elsewhere)
        return (ColumnObject(self.object_name, first, self.size_bytes, self.design), *self.column_objects)


@dataclass(frozen=True)
class Manifest:
    dataset: str
    schema: pa.Schema
    #: What new objects are built as (a request: extents and row count zero).
    write_design: ObjectDesign
    generation: str
    partitions: tuple[Partition, ...]
    statistics: pa.StructArray  # one row per partition, of statistics_type(schema)
    #: (generation, number of partitions) of each earlier version this one appended to, oldest first.
    history: tuple[tuple[str, int], ...] = ()
    #: Generations of objects a distributed transform kept (not versions: no prefixes).
    kept: tuple[str, ...] = ()
    #: One row per partition, of object_statistics_type(schema); null where none (None: none at all).
    object_statistics: pa.StructArray | None = None
    #: The dataset's version this manifest is (catalog/versions.py), when it was
    #: committed and by what operation; 0: published before versions were numbered.
    version: int = 0
    committed_at: float = 0.0
    operation: str = ""
    #: Names of versions, as (tag, version) pairs, and how many versions are kept.
    tags: tuple[tuple[str, int], ...] = ()
    keep_versions: int = DEFAULT_KEEP_VERSIONS
    #: The generation of the dataset's first version ("": first published before versions).
    lineage: str = ""

    def __post_init__(self) -> None:
        if self.object_statistics is None:
            empty = pa.nulls(len(self.partitions), object_statistics_type(self.schema))
            object.__setattr__(self, "object_statistics", empty)

    def fresh_object_statistics(self, index: int) -> pa.StructScalar | None:
        """The per-column statistics of partition index's object, if they
        describe its current data (its design generation and size)."""
        row = self.object_statistics[index]
        if not row.is_valid:
            return None
        tag = DataTag(row["generation"].as_py(), row["size_bytes"].as_py())
        return row["columns"] if tag == self.partitions[index].data_tag else None

    def with_object_statistics(self, rows: dict[str, pa.StructArray]) -> tuple[Manifest, int]:
        """This version with the statistics rows (by object name, each over its
        object's columns) attached to the partitions all of whose objects they
        still describe; and how many were."""
        pieces, attached = [], 0
        for index, partition in enumerate(self.partitions):
            row = self._partition_statistics(partition, rows)
            if row is not None:
                pieces.append(row)
                attached += 1
            else:
                pieces.append(self.object_statistics.slice(index, 1))
        if not pieces:
            return self, 0
        return replace(self, object_statistics=pa.concat_arrays(pieces)), attached

    def _partition_statistics(self, partition: Partition, rows: dict[str, pa.StructArray]) -> pa.StructArray | None:
        """The statistics row of partition joined from its objects' rows, if
        there is one describing each object's current data."""
        columns: dict[str, pa.Array] = {}
        for held in partition.objects(self.schema.names):
            row = rows.get(held.object_name)
            if row is None:
                return None
            tag = DataTag(row[0]["generation"].as_py(), row[0]["size_bytes"].as_py())
            if not tag.describes(held.design, held.size_bytes):
                return None
            statistics = row.field("columns")
            columns.update({name: statistics.field(name) for name in held.columns})
        tag = partition.data_tag
        return pa.StructArray.from_arrays(
            [
                pa.array([tag.generation], pa.int64()),
                pa.array([tag.size_bytes], pa.int64()),
                pa.StructArray.from_arrays([columns[name] for name in self.schema.names], names=self.schema.names),
            ],
            names=["generation", "size_bytes", "columns"],
        ).cast(object_statistics_type(self.schema))

    @property
    def format(self) -> str:
        """The format new objects are written in (objects may differ: see partitions' designs)."""
        return self.write_design.format

    @property
    def num_rows(self) -> int:
        return sum(partition.num_rows for partition in self.partitions)

    @property
    def size_bytes(self) -> int:
        return sum(partition.stored_bytes for partition in self.partitions)

    @property
    def has_column_objects(self) -> bool:
        return any(partition.column_objects for partition in self.partitions)

    def appended(self, added: Manifest) -> Manifest:
        """This version with the partitions of added after its own, published as added's generation."""
        partitions = self.partitions + tuple(
            replace(partition, number=len(self.partitions) + index) for index, partition in enumerate(added.partitions)
        )
        return replace(
            added,
            write_design=self.write_design,
            partitions=partitions,
            statistics=pa.concat_arrays([self.statistics, added.statistics]),
            object_statistics=pa.concat_arrays([self.object_statistics, added.object_statistics]),
            history=(*self.history, (self.generation, len(self.partitions))),
            kept=self.kept,
        )

    def at_generation(self, generation: str) -> Manifest | None:
        """The earlier version of this dataset published as generation (a prefix of
        this one, as appends leave it), or None if it is not in this one's history."""
        if generation == self.generation:
            return self
        for index, (earlier, count) in enumerate(self.history):
            if earlier == generation:
                return replace(
                    self,
                    generation=earlier,
                    partitions=self.partitions[:count],
                    statistics=self.statistics.slice(0, count),
                    object_statistics=self.object_statistics.slice(0, count),
                    history=self.history[:index],
                )
        return None

    def subset(self, numbers: list[int]) -> Manifest:
        """The partitions at these positions, numbered anew in that order, with
        their statistics: what a scan of just those objects reads (never published).
        The same subset again is the same object, so what queries derive from it
        (manifest_memo: pruning guarantees) is derived once."""
        key = tuple(numbers)
        made = _subsets(self)
        with _subsets_lock:
            if key in made:
                return made[key]
        taken = pa.array(numbers, pa.int64())
        subset = replace(
            self,
            partitions=tuple(replace(self.partitions[n], number=i) for i, n in enumerate(numbers)),
            statistics=self.statistics.take(taken),
            object_statistics=self.object_statistics.take(taken),
            history=(),
            kept=(),
        )
        with _subsets_lock:
            if len(made) >= _SUBSETS_PER_MANIFEST:
                del made[next(iter(made))]  # the oldest
            return made.setdefault(key, subset)

    def to_bytes(self) -> bytes:
        table = pa.table(
            {
                "partition": pa.array([p.number for p in self.partitions], pa.int64()),
                "object": pa.array([p.object_name for p in self.partitions], pa.string()),
                "num_rows": pa.array([p.num_rows for p in self.partitions], pa.int64()),
                "size_bytes": pa.array([p.size_bytes for p in self.partitions], pa.int64()),
                "design": pa.array([p.design.to_bytes() for p in self.partitions], pa.binary()),
                "statistics": self.statistics,
                "object_statistics": self.object_statistics,
                "column_objects": pa.array(
                    [
                        [
                            {
                                "object": column.object_name,
                                "columns": list(column.columns),
                                "size_bytes": column.size_bytes,
                                "design": column.design.to_bytes(),
                            }
                            for column in p.column_objects
                        ]
                        for p in self.partitions
                    ],
                    pa.list_(COLUMN_OBJECT_TYPE),
                ),
            }
        ).replace_schema_metadata(
            {
                b"skyhook.manifest_version": MANIFEST_VERSION,
                b"skyhook.dataset": self.dataset.encode(),
                b"skyhook.write_design": self.write_design.to_bytes(),
                b"skyhook.generation": self.generation.encode(),
                b"skyhook.schema": self.schema.serialize().to_pybytes(),
                b"skyhook.history": json.dumps(self.history).encode(),
                b"skyhook.kept": json.dumps(self.kept).encode(),
                b"skyhook.versioning": json.dumps(
                    {
                        "version": self.version,
                        "committed_at": self.committed_at,
                        "operation": self.operation,
                        "tags": dict(self.tags),
                        "keep_versions": self.keep_versions,
                        "lineage": self.lineage,
                    }
                ).encode(),
            }
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    @classmethod
    def from_bytes(cls, data: bytes, dataset: str) -> Manifest:
        """The manifest of dataset, checked: anything else raises CorruptManifestError."""
        return _checked(bytes(data), dataset)

    @classmethod
    def _checked(cls, data: bytes, dataset: str) -> Manifest:
        try:
            manifest = cls._decode(data)
        except (pa.ArrowException, KeyError, ValueError, TypeError) as error:
            raise CorruptManifestError(
                f"the manifest of dataset {dataset!r} is unreadable: {type(error).__name__}: {error}"
            ) from None
        manifest._check(dataset)
        return manifest

    @classmethod
    def _decode(cls, data: bytes) -> Manifest:
        table = pa.ipc.open_file(pa.py_buffer(data)).read_all()
        metadata = table.schema.metadata or {}
        if metadata.get(b"skyhook.manifest_version") not in READABLE_VERSIONS:
            raise ValueError(f"unsupported manifest version {metadata.get(b'skyhook.manifest_version')!r}")
        schema = pa.ipc.read_schema(pa.py_buffer(metadata[b"skyhook.schema"]))
        version = metadata[b"skyhook.manifest_version"]
        if version not in (b"1", b"2"):
            write_design = ObjectDesign.from_bytes(metadata[b"skyhook.write_design"])
            designs = [ObjectDesign.from_bytes(value) for value in table.column("design").to_pylist()]
        else:  # one format for all, every object as one extent
            format = metadata[b"skyhook.format"].decode()
            write_design = ObjectDesign.request(Design(format if format in FORMATS else "parquet"), schema.names, 0)
            write_design = replace(write_design, format=format)
            designs = [ObjectDesign.legacy(format, size) for size in table.column("size_bytes").to_pylist()]
        columns = [()] * table.num_rows
        if version not in (b"1", b"2", b"3", b"4"):
            columns = [
                tuple(
                    ColumnObject(
                        column["object"],
                        tuple(column["columns"]),
                        column["size_bytes"],
                        ObjectDesign.from_bytes(column["design"]),
                    )
                    for column in row or ()
                )
                for row in table.column("column_objects").to_pylist()
            ]
        partitions = tuple(
            Partition(row["partition"], row["object"], row["num_rows"], row["size_bytes"], design, column)
            for row, design, column in zip(
                table.select(["partition", "object", "num_rows", "size_bytes"]).to_pylist(), designs, columns
            )
        )
        statistics = table.column("statistics").combine_chunks()
        if len(statistics) == 0:
            statistics = pa.array([], statistics_type(schema))
        history = stored_json.load(metadata.get(b"skyhook.history", b"[]"))
        kept = stored_json.load(metadata.get(b"skyhook.kept", b"[]"))
        object_statistics = None
        if version not in (b"1", b"2", b"3"):
            object_statistics = table.column("object_statistics").combine_chunks()
            if len(object_statistics) == 0:
                object_statistics = pa.array([], object_statistics_type(schema))
        versioning = stored_json.load(metadata.get(b"skyhook.versioning", b"{}"))
        if not isinstance(versioning, dict) or not isinstance(versioning.get("tags", {}), dict):
            raise ValueError("malformed versioning")
        return cls(
            metadata[b"skyhook.dataset"].decode(),
            schema,
            write_design,
            metadata[b"skyhook.generation"].decode(),
            partitions,
            statistics,
            tuple((generation, count) for generation, count in history),
            tuple(kept),
            object_statistics,
            versioning.get("version", 0),
            versioning.get("committed_at", 0.0),
            versioning.get("operation", ""),
            tuple(versioning.get("tags", {}).items()),
            versioning.get("keep_versions", DEFAULT_KEEP_VERSIONS),
            versioning.get("lineage", ""),
        )

    def _check(self, dataset: str) -> None:
        def corrupt(problem: str) -> CorruptManifestError:
            return CorruptManifestError(f"the manifest of dataset {dataset!r} is corrupt: {problem}")

        if self.dataset != dataset:
            raise corrupt(f"it belongs to dataset {self.dataset!r}")
        if not GENERATION.fullmatch(self.generation):
            raise corrupt(f"invalid generation {self.generation!r}")
        problem = self.write_design.request_problem(self.schema.names)
        if problem:
            raise corrupt(f"its write design is impossible: {problem}")
        if len(self.statistics) != len(self.partitions) or self.statistics.type != statistics_type(self.schema):
            raise corrupt("its statistics do not match its partitions")
        if len(self.object_statistics) != len(self.partitions) or self.object_statistics.type != object_statistics_type(
            self.schema
        ):
            raise corrupt("its object statistics do not match its partitions")
        counts = [count for _, count in self.history]
        if not all(isinstance(generation, str) and GENERATION.fullmatch(generation) for generation, _ in self.history):
            raise corrupt("its history names an invalid generation")
        if (
            not all(isinstance(count, int) for count in counts)
            or counts != sorted(counts)
            or (counts and not 0 <= counts[0] <= counts[-1] <= len(self.partitions))
        ):
            raise corrupt("its history does not match its partitions")
        if not all(isinstance(generation, str) and GENERATION.fullmatch(generation) for generation in self.kept):
            raise corrupt("it keeps objects of an invalid generation")
        problem = _versioning_problem(self)
        if problem:
            raise corrupt(problem)
        names = [name for partition in self.partitions for name in partition.object_names]
        if len(set(names)) != len(names):
            raise corrupt("it names an object twice")
        # The client deletes what a manifest names: only objects that this version,
        # an earlier one it appended to or one a transform kept wrote, each named after its writer's generation.
        writers = {self.generation, *(generation for generation, _ in self.history), *self.kept}
        for index, partition in enumerate(self.partitions):
            owners = [object_owner(name) if isinstance(name, str) else None for name in partition.object_names]
            if partition.number != index or not all(
                owner is not None and owner.dataset == dataset and owner.generation in writers for owner in owners
            ):
                raise corrupt(
                    f"row {index} names partition {partition.number!r}, object {partition.object_name!r}; "
                    f"expected partition {index}, an object <dataset>.<generation>.<n> that a version of "
                    f"{dataset!r} wrote"
                )
            if not all(isinstance(value, int) and value >= 0 for value in (partition.num_rows, partition.size_bytes)):
                raise corrupt(f"partition {index} has invalid sizes")
            for number, column in enumerate(partition.objects(self.schema.names)):
                problem = _column_object_problem(column, partition.num_rows, self.schema.names)
                if problem:
                    which = "" if number == 0 else f"'s column object {column.object_name!r}"
                    raise corrupt(f"partition {index}{which} {problem}")
            held = [name for column in partition.objects(self.schema.names) for name in column.columns]
            if partition.column_objects and sorted(held) != sorted(self.schema.names):
                raise corrupt(f"partition {index} does not hold each column in one of its objects")


# A plan step, its commit and the garbage collection after it each read the
# dataset's manifest, mostly the same bytes: the last few are decoded (and
# checked) once. A manifest is immutable; a corrupt one raises every time
# (lru_cache keeps no exceptions).
@lru_cache(maxsize=4)
def _checked(data: bytes, dataset: str) -> Manifest:
    return Manifest._checked(data, dataset)


#: Subsets of one manifest kept for reuse (a server's tickets, a Dask graph's partitions).
_SUBSETS_PER_MANIFEST = 256
_subsets_lock = threading.Lock()


@per_manifest
def _subsets(manifest: Manifest) -> dict[tuple[int, ...], Manifest]:
    return {}


def _versioning_problem(manifest: Manifest) -> str | None:
    """What makes a manifest's version number, tags or retention impossible, or None."""

    def count(value: object, least: int) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= least

    if not count(manifest.version, 0) or not count(manifest.keep_versions, 1):
        return "its version number or retention is invalid"
    if not isinstance(manifest.committed_at, (int, float)) or not isinstance(manifest.operation, str):
        return "its commit time or operation is invalid"
    if not isinstance(manifest.lineage, str) or not (manifest.lineage == "" or GENERATION.fullmatch(manifest.lineage)):
        return "its lineage is invalid"
    if not all(
        isinstance(tag, str) and TAG_NAME.fullmatch(tag) and count(version, 0) and version <= manifest.version
        for tag, version in manifest.tags
    ):
        return "it tags an invalid version"
    return None


def _column_object_problem(column: ColumnObject, num_rows: int, names: list[str]) -> str | None:
    """What makes one object of a partition of num_rows rows impossible, or None."""
    if not isinstance(column.size_bytes, int) or column.size_bytes < 0:
        return "has an invalid size"
    if not column.columns or not set(column.columns) <= set(names):
        return "holds no columns, or columns the dataset does not have"
    problem = column.design.object_problem(num_rows, column.size_bytes, column.columns)
    return None if problem is None else f"has a design that {problem}"
