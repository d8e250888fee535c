"""How a partition is stored: one self-contained Parquet or Arrow IPC object,
and the schema such an object reads back with."""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.parquet as pq

from skyhook.errors import InvalidRequestError

FORMATS = ("parquet", "ipc")

#: The object attribute that names its format (storage decodes by it).
FORMAT_ATTRIBUTE = "skyhook.format"
DEFAULT_ROW_GROUP_SIZE = 64 * 1024


def check_format(format: str) -> None:
    if format not in FORMATS:
        raise InvalidRequestError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")


def encode_partition(table: pa.Table, format: str, row_group_size: int, compression: str) -> pa.Buffer:
    check_format(format)
    sink = pa.BufferOutputStream()
    if format == "parquet":
        # Page checksums: both read paths verify them, so a flipped bit is an error, not a wrong answer.
        # Decimals of precision <= 18 as INT32/INT64: decoded ~6x faster than fixed-length binary.
        pq.write_table(
            table,
            sink,
            row_group_size=row_group_size,
            compression=compression,
            write_page_checksum=True,
            store_decimal_as_integer=True,
        )
    else:
        options = pa.ipc.IpcWriteOptions(compression=None if compression == "none" else compression)
        with pa.ipc.new_file(sink, table.schema, options=options) as writer:
            writer.write_table(table, max_chunksize=row_group_size)
    return sink.getvalue()


@functools.lru_cache(maxsize=64)
def stored_schema(schema: pa.Schema, format: str) -> pa.Schema:
    """The schema objects of a dataset of this schema have: Parquet cannot hold
    every Arrow type (time32[s] is read back as time32[ms], date64 as date32)."""
    empty = pa.BufferReader(encode_partition(schema.empty_table(), format, row_group_size=1, compression="none"))
    return pq.read_schema(empty) if format == "parquet" else pa.ipc.open_file(empty).schema
