"""Storage keeps what it parsed of a Parquet footer across calls, keyed by the
footer's bytes (cpp/skyhook/storage/object/parsed_footers.h): an object
rewritten or damaged between two scans in one process is read as it is now,
never through what was parsed of its old footer."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import skyhook
from skyhook.catalog.design import DESIGN_ATTRIBUTE
from skyhook.catalog.object_format import FORMAT_ATTRIBUTE
from skyhook.errors import SkyhookError
from support.assertions import assert_same_table
from support.damage import flip_inside_a_data_page

ROWS = 6_000


def _table(start: int, extra: bool = False) -> pa.Table:
    columns = {"k": pa.array(range(start, start + ROWS)), "v": pa.array([i * 0.5 for i in range(ROWS)])}
    if extra:
        columns["w"] = pa.array([str(i % 7) for i in range(ROWS)])
    return pa.table(columns)


def _scan(dataset) -> pa.Table:
    return dataset.to_table(filter=pc.field("k") >= 0, pushdown=True)


@pytest.fixture
def scanned(store):
    """Dataset a of one object, scanned once (its footer is parsed and kept), and its object's name."""
    dataset = store.write_dataset("a", _table(0), row_group_size=1_000)
    assert_same_table(_scan(dataset), _table(0))
    return dataset, dataset.manifest.partitions[0].object_name


def _copy_object(store, source: str, target: str) -> bytes:
    backend = store.backend
    data = backend.read_object(source).to_pybytes()
    attributes = {key: backend.object_attribute(source, key) for key in (FORMAT_ATTRIBUTE, DESIGN_ATTRIBUTE)}
    backend.put_object(target, pa.py_buffer(data), {key: value for key, value in attributes.items() if value})
    return data


def test_an_object_rewritten_with_other_row_groups_returns_its_new_rows(store, scanned):
    dataset, name = scanned
    other = store.write_dataset("b", _table(1_000_000), row_group_size=2_500)
    data = _copy_object(store, other.manifest.partitions[0].object_name, name)
    assert pq.ParquetFile(pa.BufferReader(data)).metadata.num_row_groups == 3
    assert_same_table(_scan(dataset), pq.read_table(pa.BufferReader(data)))


def test_an_object_rewritten_with_another_schema_never_returns_its_old_rows(store, scanned):
    dataset, name = scanned
    other = store.write_dataset("b", _table(2_000_000, extra=True))
    data = _copy_object(store, other.manifest.partitions[0].object_name, name)
    try:
        result = _scan(dataset)
    except SkyhookError:
        return  # the manifest's schema is no longer the object's: a clean error is right too
    assert_same_table(result, pq.read_table(pa.BufferReader(data)).select(["k", "v"]))


def test_an_object_whose_footer_is_corrupted_is_a_corrupt_object(store, scanned):
    dataset, name = scanned
    data = bytearray(store.backend.read_object(name).to_pybytes())
    footer_length = int.from_bytes(data[-8:-4], "little")
    footer_start = len(data) - 8 - footer_length
    data[footer_start : footer_start + 8] = b"\xff" * 8  # no Thrift field has type 15
    with pytest.raises((OSError, pa.ArrowInvalid)):  # the oracle cannot read it either
        pq.read_table(pa.BufferReader(bytes(data)))
    store.backend.put_object(name, pa.py_buffer(bytes(data)), {FORMAT_ATTRIBUTE: "parquet"})
    with pytest.raises(skyhook.CorruptObjectError, match="not a readable"):
        _scan(dataset)


def test_a_damaged_page_under_a_kept_footer_is_still_found(store, scanned):
    dataset, name = scanned
    data = flip_inside_a_data_page(store.backend.read_object(name).to_pybytes(), "v")
    store.backend.put_object(name, pa.py_buffer(data), {FORMAT_ATTRIBUTE: "parquet"})
    with pytest.raises(skyhook.CorruptObjectError, match="checksum"):
        _scan(dataset)
