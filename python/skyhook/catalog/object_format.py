"""The schema an object of a dataset reads back with, by its format, and the
attribute that named the format of objects written before designs."""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.parquet as pq

#: The attribute of objects written before designs (design.DESIGN_ATTRIBUTE since).
FORMAT_ATTRIBUTE = "skyhook.format"


@functools.lru_cache(maxsize=64)
def stored_schema(schema: pa.Schema, format: str) -> pa.Schema:
    """The schema objects of a dataset of this schema have: Parquet cannot hold
    every Arrow type (time32[s] is read back as time32[ms], date64 as date32);
    Arrow IPC holds every type as it is."""
    if format != "parquet":
        return schema
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    return pq.read_schema(pa.BufferReader(sink.getvalue()))
