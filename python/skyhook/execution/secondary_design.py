"""Statistics and indexes that storage keeps in each object's omap
(cpp/skyhook/storage/secondary/): built on every object of a dataset by the
analyze, create_index and drop_index methods, read back by secondary_design.
A scan in storage uses them by itself; nothing here is needed for that. The
object-level statistics are also published in the manifest, for the client's
pruning and cost model (catalog/object_statistics.py). A partition whose
columns live in several objects has each analyzed, and a column indexed in the
object holding it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import pyarrow as pa

from skyhook.backends.object_store import StoredManifest
from skyhook.catalog.manifest import Manifest
from skyhook.catalog.object_statistics import statistics_row
from skyhook.catalog.versions import NextVersion, commit_version
from skyhook.errors import DatasetNotFoundError, TypeMismatchError, UnknownColumnError
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.rpc.reply import Reply, decode_reply
from skyhook.rpc.requests import AnalyzeRequest, IndexRequest, SecondaryDesignRequest

#: Called after each object with the objects done and their total.
Progress = Callable[[int, int], None]


class _Request(Protocol):
    @property
    def METHOD(self) -> str: ...  # noqa: N802

    def encode(self) -> bytes: ...


def _every_object(manifest: Manifest, column: str | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """Each object of the dataset and the columns it holds, in partition order;
    with column, only the object of each partition that holds it."""
    held = [o for partition in manifest.partitions for o in partition.objects(manifest.schema.names)]
    return [(o.object_name, o.columns) for o in held if column is None or column in o.columns]


def _call_objects(
    objects: DatasetObjects, names: list[str], request: _Request, context: str, progress: Progress | None
) -> None:
    """The request on each of names. The first object goes alone: a request
    that storage refuses (an unknown column, a type without an order) then
    fails there, before any object was changed."""
    encoded = request.encode()

    def checked(name: str, message: bytes) -> Reply:
        reply = decode_reply(message, f"object {name}")
        reply.raise_for_status(f"{context} (object {name})")
        return reply

    for done, name in enumerate(names[:1], start=1):
        checked(name, objects.backend.call(name, request.METHOD, encoded))
        if progress:
            progress(done, len(names))
    replies = objects.backend.call_many(request.METHOD, ((name, encoded) for name in names[1:]))
    for done, (name, message) in enumerate(zip(names[1:], replies), start=2):
        checked(name, message)
        if progress:
            progress(done, len(names))


def analyze(objects: DatasetObjects, progress: Progress | None = None) -> Manifest:
    """Statistics per column and zone (min, max, null count, distinct estimate,
    histogram) computed and kept by storage in every object; the object-level
    ones published in the manifest, which is returned."""
    held = _every_object(objects.manifest)
    _call_objects(objects, [name for name, _ in held], AnalyzeRequest(), f"analyzing {objects.name}", progress)
    _, batches = secondary_designs(objects)
    rows = {}
    for (name, columns), batch in zip(held, batches):
        schema = pa.schema([objects.schema.field(column) for column in columns])
        row = None if batch is None else statistics_row(batch, schema)
        if row is not None:
            rows[name] = row
    return publish_object_statistics(objects, rows)


def publish_object_statistics(objects: DatasetObjects, rows: dict[str, pa.StructArray]) -> Manifest:
    """The current manifest with rows (by object name) attached where they
    still describe the partition's objects, committed (an append's partitions,
    a transform's designs, an overwrite's objects published meanwhile are kept)."""

    def change(stored: StoredManifest | None) -> NextVersion | Manifest:
        if stored is None:
            raise DatasetNotFoundError(f"dataset {objects.name!r} was deleted while its statistics were computed")
        current = Manifest.from_bytes(stored.data, objects.name)
        updated, attached = current.with_object_statistics(rows)
        return NextVersion(updated, None) if attached else current  # the same version, described better

    published = commit_version(objects.backend, objects.name, change)
    assert published is not None
    return published


def create_index(objects: DatasetObjects, column: str, progress: Progress | None = None) -> None:
    """An index on column in every object (storage refuses unindexable types)."""
    _check_column(objects, column)
    _check_indexable(objects.schema.field(column))
    names = [name for name, _ in _every_object(objects.manifest, column)]
    _call_objects(objects, names, IndexRequest(column), f"indexing {objects.name}.{column}", progress)


def drop_index(objects: DatasetObjects, column: str, progress: Progress | None = None) -> None:
    """Removes the column's index from every object (none there is not an error)."""
    _check_column(objects, column)
    names = [name for name, _ in _every_object(objects.manifest, column)]
    request = IndexRequest(column, drop=True)
    _call_objects(objects, names, request, f"dropping the index of {objects.name}.{column}", progress)


def _check_column(objects: DatasetObjects, column: str) -> None:
    if column not in objects.schema.names:
        raise UnknownColumnError(f"dataset {objects.name} has no column {column!r}")


_INDEXABLE = (
    pa.types.is_integer,
    pa.types.is_decimal,
    pa.types.is_boolean,
    pa.types.is_date,
    pa.types.is_time,
    pa.types.is_timestamp,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_fixed_size_binary,
)


def _check_indexable(field: pa.Field) -> None:
    """The rule storage applies (column_index.cc, NotIndexable), said before any
    call: a write method that fails on Ceph returns only an error code."""
    if any(indexable(field.type) for indexable in _INDEXABLE):
        return
    if pa.types.is_floating(field.type):
        reason = "floating-point values are not indexed (NaN has no place in an order)"
    else:
        reason = "only integer, decimal, date, time, timestamp, string and binary columns are indexed"
    raise TypeMismatchError(f"column {field.name!r} ({field.type}) cannot be indexed: {reason}")


#: Per object: what secondary_designs returns.
SECONDARY_DESIGN_SCHEMA = pa.schema(
    [
        ("object", pa.string()),
        ("statistics", pa.bool_()),  # statistics describing the object's current data
        ("statistics_stale", pa.bool_()),  # statistics of data the object no longer holds (unused)
        ("zones", pa.int64()),  # zones the statistics describe (row groups, record batches)
        ("indexes", pa.list_(pa.string())),
        ("stale_indexes", pa.list_(pa.string())),
    ]
)


def secondary_designs(objects: DatasetObjects) -> tuple[pa.Table, list[pa.RecordBatch | None]]:
    """A row per object (SECONDARY_DESIGN_SCHEMA; column objects after their
    partition's object), and each object's zone statistics batch
    (cpp/skyhook/storage/secondary/zone_statistics.h) or None."""
    names = [name for name, _ in _every_object(objects.manifest)]
    request = SecondaryDesignRequest()
    rows, batches = [], []
    replies = objects.backend.call_many(request.METHOD, ((name, request.encode()) for name in names))
    for name, message in zip(names, replies):
        reply = decode_reply(message, f"object {name}")
        reply.raise_for_status(f"reading the secondary design of {objects.name} (object {name})")
        row = reply.reader().read_all().to_pylist()[0]
        batch = None
        if row["statistics"] is not None:
            batch = pa.ipc.open_stream(row["statistics"]).read_next_batch()
        rows.append(
            {
                "object": name,
                "statistics": batch is not None,
                "statistics_stale": row["statistics_stale"],
                "zones": batch.num_rows - 1 if batch is not None else 0,
                "indexes": row["indexes"],
                "stale_indexes": row["stale_indexes"],
            }
        )
        batches.append(batch)
    return pa.Table.from_pylist(rows, schema=SECONDARY_DESIGN_SCHEMA), batches
