"""Parquet page checksums, verified by storage (ISA-L, under Arrow's reader):
a flipped bit in any page of any column chunk, in a page's values, a
dictionary or a header's crc, is a corrupt-object error naming the object, the
column and the row group, on scans and aggregates; objects written without
checksums still read."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import skyhook
from skyhook.catalog.design import DESIGN_ATTRIBUTE
from support.assertions import assert_same_table
from support.damage import in_dictionary, in_header_crc, in_values

F = pc.field
ROWS = 9000
TABLE = pa.table(
    {
        "id": pa.array(range(ROWS)),
        "x": pa.array([i * 0.25 for i in range(ROWS)]),
        "s": pa.array([f"name {i % 40}" for i in range(ROWS)]),  # dictionary-encoded
    }
)


def flipped(data: bytes, position: int) -> pa.Buffer:
    damaged = bytearray(data)
    damaged[position] ^= 0x01
    return pa.py_buffer(bytes(damaged))


def expect_corrupt(dataset: skyhook.Dataset, name: str, column: str, group: int) -> None:
    where = rf"{re.escape(name)}.*column '{column}' of row group {group}"
    with pytest.raises(skyhook.CorruptObjectError, match=where):
        dataset.to_table(filter=F("id") >= 0, pushdown=True)
    with pytest.raises(skyhook.CorruptObjectError, match=where):
        dataset.aggregate([(column, "max")], filter=F("id") >= 0, pushdown=True)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_every_damaged_page_is_a_corrupt_object_naming_its_column_and_row_group(store, compression):
    dataset = store.write_dataset("t", TABLE, rows_per_object=ROWS // 2, row_group_size=1500, compression=compression)
    name = dataset.manifest.partitions[1].object_name
    original = store.backend.read_object(name).to_pybytes()
    assert pq.ParquetFile(pa.BufferReader(original)).metadata.num_row_groups == 3
    damages = [(in_values, group, column) for group in range(3) for column in range(3)]
    damages += [(in_dictionary, group, 2) for group in range(3)] + [(in_header_crc, 1, 1), (in_header_crc, 2, 2)]
    for where, group, column in damages:
        store.backend.put_object(name, flipped(original, where(original, group, column)), {"skyhook.format": "parquet"})
        expect_corrupt(dataset, name, TABLE.column_names[column], group)
    # The undamaged object still answers.
    store.backend.put_object(name, pa.py_buffer(original), {"skyhook.format": "parquet"})
    assert_same_table(dataset.to_table(filter=F("id") >= 0, pushdown=True), TABLE)


def test_a_damaged_page_of_a_column_group_is_a_corrupt_object(store):
    design = skyhook.Design(column_groups=[["id"], ["x", "s"]], row_group_size=1500)
    dataset = store.write_dataset("t", TABLE, design=design, rows_per_object=ROWS)
    partition = dataset.manifest.partitions[0]
    name = partition.object_name
    original = store.backend.read_object(name).to_pybytes()
    # Each group is a Parquet file of its own in an extent, one after the other.
    lengths = dataset.design().column("group_bytes").to_pylist()[0]
    second = original[lengths[0] : lengths[0] + lengths[1]]
    assert second[:4] == second[-4:] == b"PAR1"
    damaged = flipped(original, lengths[0] + in_values(second, 2, 0))
    store.backend.put_object(name, damaged, {DESIGN_ATTRIBUTE: partition.design.to_bytes()})
    expect_corrupt(dataset, name, "x", 2)


def test_objects_without_page_checksums_still_read(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=ROWS)
    name = dataset.manifest.partitions[0].object_name
    sink = pa.BufferOutputStream()
    pq.write_table(TABLE, sink, row_group_size=1500, write_page_checksum=False, data_page_version="2.0")
    written = sink.getvalue()
    assert pq.ParquetFile(pa.BufferReader(written)).metadata.num_row_groups == 6
    store.backend.put_object(name, written, {"skyhook.format": "parquet"})
    assert_same_table(dataset.to_table(filter=F("x") >= 100, pushdown=True), TABLE.filter(pc.field("x") >= 100))
    expected = pa.table({"s_max": [pc.max(TABLE["s"]).as_py()], "x_sum": [pc.sum(TABLE["x"]).as_py()]})
    assert dataset.aggregate([("s", "max"), ("x", "sum")], pushdown=True).to_pylist() == expected.to_pylist()
