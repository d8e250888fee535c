"""The manifest of a dataset: schema, format and per-partition statistics.

It is stored as one Arrow IPC file (a row per partition) and replaced
atomically, so a reader always sees a complete version of the dataset.

Names: a dataset is ``DATASET_NAME``; every write has a fresh generation and
names its objects ``<dataset>.<generation>.<n>``. A manifest read from storage
is trusted only after every object name in it is checked to be exactly that,
for its own dataset and generation: the client deletes what a manifest names.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa

from skyhook.errors import CorruptManifestError, InvalidRequestError
from skyhook.ingest.writer import FORMATS

MANIFEST_VERSION = b"1"

# No dots: "<dataset>." is a prefix no other dataset's names share.
DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,127}")
# Unix seconds and random hex (older stores used 6 hex digits, new writes 16).
GENERATION = re.compile(r"[0-9]{1,20}[0-9a-f]{6,16}")
_OBJECT_NAME = re.compile(
    rf"(?P<dataset>{DATASET_NAME.pattern})\.(?P<generation>{GENERATION.pattern})"
    r"\.(?P<number>0|[1-9][0-9]{0,8})"
)


def check_dataset_name(name: object) -> None:
    if not isinstance(name, str) or not DATASET_NAME.fullmatch(name):
        raise InvalidRequestError(f"invalid dataset name {name!r}: use letters, digits, '_' and '-' (at most 128)")


def new_generation() -> str:
    return f"{int(time.time())}{secrets.token_hex(8)}"


def object_name(dataset: str, generation: str, number: int) -> str:
    return f"{dataset}.{generation}.{number}"


class ObjectOwner(NamedTuple):
    dataset: str
    generation: str


def object_owner(name: str) -> ObjectOwner | None:
    """The dataset and generation a partition object belongs to; None for any
    other name (manifests, indexes, foreign objects)."""
    match = _OBJECT_NAME.fullmatch(name)
    return ObjectOwner(match["dataset"], match["generation"]) if match else None


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
class Partition:
    number: int
    object_name: str
    num_rows: int
    size_bytes: int


@dataclass(frozen=True)
class Manifest:
    dataset: str
    schema: pa.Schema
    format: str
    generation: str
    partitions: tuple[Partition, ...]
    statistics: pa.StructArray  # one row per partition, of statistics_type(schema)

    @property
    def num_rows(self) -> int:
        return sum(partition.num_rows for partition in self.partitions)

    @property
    def size_bytes(self) -> int:
        return sum(partition.size_bytes for partition in self.partitions)

    def to_bytes(self) -> bytes:
        table = pa.table(
            {
                "partition": pa.array([p.number for p in self.partitions], pa.int64()),
                "object": pa.array([p.object_name for p in self.partitions], pa.string()),
                "num_rows": pa.array([p.num_rows for p in self.partitions], pa.int64()),
                "size_bytes": pa.array([p.size_bytes for p in self.partitions], pa.int64()),
                "statistics": self.statistics,
            }
        ).replace_schema_metadata(
            {
                b"skyhook.manifest_version": MANIFEST_VERSION,
                b"skyhook.dataset": self.dataset.encode(),
                b"skyhook.format": self.format.encode(),
                b"skyhook.generation": self.generation.encode(),
                b"skyhook.schema": self.schema.serialize().to_pybytes(),
            }
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    @classmethod
    def from_bytes(cls, data: bytes, dataset: str) -> Manifest:
        """The manifest of dataset, checked: anything else raises CorruptManifestError."""
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
        if metadata.get(b"skyhook.manifest_version") != MANIFEST_VERSION:
            raise ValueError(f"unsupported manifest version {metadata.get(b'skyhook.manifest_version')!r}")
        schema = pa.ipc.read_schema(pa.py_buffer(metadata[b"skyhook.schema"]))
        partitions = tuple(
            Partition(row["partition"], row["object"], row["num_rows"], row["size_bytes"])
            for row in table.select(["partition", "object", "num_rows", "size_bytes"]).to_pylist()
        )
        statistics = table.column("statistics").combine_chunks()
        if len(statistics) == 0:
            statistics = pa.array([], statistics_type(schema))
        return cls(
            metadata[b"skyhook.dataset"].decode(),
            schema,
            metadata[b"skyhook.format"].decode(),
            metadata[b"skyhook.generation"].decode(),
            partitions,
            statistics,
        )

    def _check(self, dataset: str) -> None:
        def corrupt(problem: str) -> CorruptManifestError:
            return CorruptManifestError(f"the manifest of dataset {dataset!r} is corrupt: {problem}")

        if self.dataset != dataset:
            raise corrupt(f"it belongs to dataset {self.dataset!r}")
        if not GENERATION.fullmatch(self.generation):
            raise corrupt(f"invalid generation {self.generation!r}")
        if self.format not in FORMATS:
            raise corrupt(f"unknown format {self.format!r}")
        if len(self.statistics) != len(self.partitions) or self.statistics.type != statistics_type(self.schema):
            raise corrupt("its statistics do not match its partitions")
        for index, partition in enumerate(self.partitions):
            expected = object_name(dataset, self.generation, index)
            if partition.number != index or partition.object_name != expected:
                raise corrupt(
                    f"row {index} names partition {partition.number!r}, object "
                    f"{partition.object_name!r}; expected partition {index}, object {expected!r}"
                )
            if not all(isinstance(value, int) and value >= 0 for value in (partition.num_rows, partition.size_bytes)):
                raise corrupt(f"partition {index} has invalid sizes")
