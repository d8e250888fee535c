"""Objects damaged the way a flipped bit on a disk would damage them."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.parquet as pq


def flip_inside_a_data_page(object_bytes: bytes, column: str) -> bytes:
    """The object with one byte flipped near the end of the column's last data
    page (its values, after the page header) in the first row group."""
    index = pq.ParquetFile(pa.BufferReader(object_bytes)).schema_arrow.get_field_index(column)
    position = in_values(object_bytes, 0, index)
    assert position > chunk_of(object_bytes, 0, index).data_page_offset
    damaged = bytearray(object_bytes)
    damaged[position] ^= 0x10
    return bytes(damaged)


def chunk_of(file: bytes, group: int, column: int) -> pq.ColumnChunkMetaData:
    """The metadata of one column chunk of a Parquet file."""
    return pq.ParquetFile(pa.BufferReader(file)).metadata.row_group(group).column(column)


def in_values(file: bytes, group: int, column: int) -> int:
    """A byte of the chunk's last data page's values."""
    chunk = chunk_of(file, group, column)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    return start + chunk.total_compressed_size - 3


def in_dictionary(file: bytes, group: int, column: int) -> int:
    """A byte of the chunk's dictionary page (after its header)."""
    chunk = chunk_of(file, group, column)
    assert chunk.has_dictionary_page
    return chunk.data_page_offset - 2


def in_header_crc(file: bytes, group: int, column: int) -> int:
    """The first byte of the crc of the chunk's first data page header: Arrow
    writes fields 1-3 and then 4 (the crc) as short-form i32 fields."""
    position = chunk_of(file, group, column).data_page_offset
    for _ in range(3):
        assert file[position] == 0x15
        position += 1
        while file[position] & 0x80:
            position += 1
        position += 1
    assert file[position] == 0x15  # field 4, i32: the crc follows
    return position + 1


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
