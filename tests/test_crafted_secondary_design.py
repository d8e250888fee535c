"""Statistics and index blocks in omap are used only when they prove
themselves against the object they describe: crafted ones (zero row counts,
swapped bounds, a zone missing, truncated values, keys of another type than
the column's) are passed by and counted (stats.secondary_rejected), and every
answer equals pyarrow's, both backends."""

from __future__ import annotations

import sqlite3
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from support.assertions import assert_same_table
from support.tables import make_typed_table

TABLE = make_typed_table(rows=600)
FILTER = (pc.field("id") >= 150) & (pc.field("id") < 170)
STATISTICS = b"skyhook.statistics.v1"
INDEX_HEADER = b"skyhook.index.v1.id"


def _omap_value(store: skyhook.Store, name: str, key: bytes) -> bytes:
    if store.uri.startswith("file:"):
        with sqlite3.connect(f"{urlparse(store.uri).path}/omap.sqlite") as db:
            (value,) = db.execute(
                "select value from omap where object = ? and key = ?", (name.encode(), key)
            ).fetchone()
            return bytes(value)
    with tempfile.NamedTemporaryFile() as file:
        _rados_tool(store, "getomapval", name, key.decode(), file.name)
        return Path(file.name).read_bytes()


def _set_omap_value(store: skyhook.Store, name: str, key: bytes, value: bytes) -> None:
    if store.uri.startswith("file:"):
        with sqlite3.connect(f"{urlparse(store.uri).path}/omap.sqlite") as db:
            db.execute("update omap set value = ? where object = ? and key = ?", (value, name.encode(), key))
        return
    with tempfile.NamedTemporaryFile() as file:
        Path(file.name).write_bytes(value)
        _rados_tool(store, "setomapval", name, key.decode(), "--input-file", file.name)


def _rados_tool(store: skyhook.Store, *arguments: str) -> None:
    """Ceph's rados tool on the store's pool and namespace (its binding reads omap values as text)."""
    backend = store.backend
    namespace = ["-N", backend.namespace] if backend.namespace else []
    subprocess.run(["rados", "-c", backend.conf, "-p", backend.pool_name, *namespace, *arguments], check=True)


def _rewritten(value: bytes, change: Callable[[pa.RecordBatch], pa.RecordBatch]) -> bytes:
    """An omap value (one batch, its identity in the schema's metadata) changed, the identity kept."""
    batch = pa.ipc.open_stream(value).read_next_batch()
    changed = change(batch)
    changed = changed.replace_schema_metadata(batch.schema.metadata)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, changed.schema) as writer:
        writer.write_batch(changed)
    return sink.getvalue().to_pybytes()


def _with_column(batch: pa.RecordBatch, name: str, column: pa.Array) -> pa.RecordBatch:
    index = batch.schema.get_field_index(name)
    return batch.set_column(index, batch.schema.field(index).with_type(column.type), column)


def _zero_rows(batch):
    return _with_column(batch, "num_rows", pa.array([0] * batch.num_rows, pa.int64()))


def _swapped_bounds(batch):
    stats = batch.column("id")
    swapped = pa.StructArray.from_arrays(
        [stats.field("max"), stats.field("min"), *[stats.field(i) for i in range(2, stats.type.num_fields)]],
        fields=list(stats.type),
    )
    return _with_column(batch, "id", swapped)


def _zone_missing(batch):
    return batch.slice(1)


def _string_keys(batch):
    return batch.set_column(
        0, pa.field(batch.schema.field(0).name, pa.utf8()), batch.column(0).cast(pa.utf8())
    ).set_column(1, pa.field(batch.schema.field(1).name, pa.utf8()), batch.column(1).cast(pa.utf8()))


CRAFTED = {
    "zero row counts": (STATISTICS, lambda value: _rewritten(value, _zero_rows)),
    "swapped bounds": (STATISTICS, lambda value: _rewritten(value, _swapped_bounds)),
    "a zone missing": (STATISTICS, lambda value: _rewritten(value, _zone_missing)),
    "truncated statistics": (STATISTICS, lambda value: value[: len(value) // 2]),
    "index keys of another type": (INDEX_HEADER, lambda value: _rewritten(value, _string_keys)),
    "truncated index header": (INDEX_HEADER, lambda value: value[: len(value) // 2]),
}


@pytest.mark.parametrize("crafted", CRAFTED, ids=str)
@pytest.mark.parametrize("format", ["parquet", "ipc"])
def test_crafted_statistics_and_indexes_are_passed_by(store, format, crafted):
    dataset = store.write_dataset("t", TABLE, design=skyhook.Design(format, row_group_size=100))
    dataset.compute_statistics()
    if crafted.startswith(("index", "truncated index")):
        dataset.create_index("id")
    name = dataset.manifest.partitions[0].object_name
    key, craft = CRAFTED[crafted]
    _set_omap_value(store, name, key, craft(_omap_value(store, name, key)))
    for pushdown in (True, False):
        scanner = dataset.scanner(filter=FILTER, pushdown=pushdown)
        assert_same_table(scanner.to_table(), TABLE.filter(FILTER))
        if pushdown:
            assert scanner.stats.secondary_rejected >= 1 and scanner.stats.rows_read_by_index == 0
    grouped = dataset.group_by([]).execution([("id", "count")], filter=FILTER, pushdown=True)
    assert grouped.run().column(0)[0].as_py() == TABLE.filter(FILTER).num_rows
    assert grouped.stats.secondary_rejected >= 1
