"""Objects damaged the way a flipped bit on a disk would damage them."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.parquet as pq


def flip_inside_a_data_page(object_bytes: bytes, column: str) -> bytes:
    """The object with one byte flipped near the end of the column's last data
    page (its values, after the page header) in the first row group."""
    metadata = pq.ParquetFile(pa.BufferReader(object_bytes)).metadata
    index = metadata.schema.to_arrow_schema().get_field_index(column)
    chunk = metadata.row_group(0).column(index)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    position = start + chunk.total_compressed_size - 3
    assert position > chunk.data_page_offset
    damaged = bytearray(object_bytes)
    damaged[position] ^= 0x10
    return bytes(damaged)


def with_int64_patched(table: pa.Table, old: int, new: int) -> bytes:
    """The table as storage writes Parquet (decimals as integers), without
    page checksums, with its one stored INT64 `old` replaced by `new`."""
    sink = pa.BufferOutputStream()
    pq.write_table(
        table, sink, compression="none", store_decimal_as_integer=True, use_dictionary=False, write_statistics=False
    )
    data = sink.getvalue().to_pybytes()
    packed = struct.pack("<q", old)
    assert data.count(packed) == 1
    return data.replace(packed, struct.pack("<q", new))
