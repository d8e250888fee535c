"""The C++ core's object writer and reader, lent to the client by the
embedded extension: ingest builds every object with the same code that
storage transforms run, and plain reads decode an object of any design with
the reader that storage scans run (cpp/skyhook/storage/object/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from skyhook import _embedded
from skyhook.errors import OutOfMemoryError, SkyhookError, StorageError
from skyhook.rpc.error_codes import ERROR_BY_CODE

T = TypeVar("T")


def encode_object(table: pa.Table, requested_design: bytes) -> tuple[pa.Buffer, bytes]:
    """(the object's bytes, its design attribute as built) for a table and a
    requested design (an ObjectDesign's bytes, extents left at zero)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    try:
        data, design = _embedded.encode_object(sink.getvalue().to_pybytes(), requested_design)
    except (ValueError, MemoryError) as error:
        raise _skyhook_error(error, "encoding an object") from None
    return pa.py_buffer(data), design


class DecodedObject(NamedTuple):
    #: The object's fields as opened.
    schema: pa.Schema
    #: The columns asked for, of the rows the filter keeps where it was applied.
    table: pa.Table
    #: Rows and Arrow buffer bytes decoded, before any filter.
    rows: int
    nbytes: int
    filtered: bool


def decode_object(
    size: int,
    design: bytes | None,
    format: bytes | None,
    parts: Sequence[tuple[int, pa.Buffer]],
    columns: Sequence[str] | None,
    context: str,
    row_groups: Sequence[int] | None = None,
    filter: DatasetFilter | None = None,
) -> DecodedObject:
    """An object of size bytes decoded from its attributes and the byte ranges
    read: all of it, the extents of the column groups holding columns, or
    (row_groups: only these, ascending) what plan_read asked for. The core
    applies filter where every column it reads is decoded with the dataset's
    type; else the caller filters."""
    read = (size, design, format, list(parts), None if columns is None else list(columns))
    groups = None if row_groups is None else list(row_groups)
    serialized = (None, None) if filter is None else (filter.expression, filter.schema)
    schema, stream, rows, nbytes, filtered = _core(_embedded.read_object, context, *read, groups, *serialized)
    table = pa.RecordBatchReader.from_stream(_CapsuleStream(stream)).read_all()
    return DecodedObject(pa.ipc.read_schema(pa.py_buffer(schema)), table, rows, nbytes, filtered)


class DatasetFilter(NamedTuple):
    """A filter on a dataset's schema as the core reads both: Arrow's own
    serialization of the expression (what pyarrow pickles it as; Substrait
    could not carry every type and function a plain read's filter may use)
    and the schema as an Arrow IPC schema. Made once per query."""

    expression: bytes
    schema: bytes

    @classmethod
    def of(cls, filter: pc.Expression, schema: pa.Schema) -> DatasetFilter:
        _, (buffer,) = filter.__reduce__()
        return cls(buffer.to_pybytes(), schema.serialize().to_pybytes())


def plan_read(
    size: int,
    design: bytes | None,
    format: bytes | None,
    parts: Sequence[tuple[int, pa.Buffer]],
    columns: Sequence[str] | None,
    filter: DatasetFilter | None,
    schema: pa.Schema,
    context: str,
) -> tuple[list[int], list[tuple[int, int]], bool] | None:
    """(the row groups filter may match by the footer's statistics, the byte
    ranges of columns in them, whether the statistics prove every row of them
    matches) of a Parquet object in one extent, from the parts read so far (its
    footer), as storage decides them; None for objects of other designs."""
    read = (size, design, format, list(parts), None if columns is None else list(columns))
    if filter is None:
        return _core(_embedded.plan_read, context, *read, None, schema.serialize().to_pybytes())
    return _core(_embedded.plan_read, context, *read, filter.expression, filter.schema)


def _core(function: Callable[..., T], context: str, *arguments: object) -> T:
    """A call of the core's reader, its failures as skyhook errors about context."""
    try:
        return function(*arguments)
    except (ValueError, MemoryError) as error:
        raise _skyhook_error(error, context) from None


class _CapsuleStream:
    """An Arrow C stream capsule, offered through the PyCapsule interface."""

    def __init__(self, capsule: object) -> None:
        self.capsule = capsule

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.capsule


def _skyhook_error(error: ValueError | MemoryError, context: str) -> SkyhookError:
    if isinstance(error, MemoryError):
        return OutOfMemoryError(f"{context}: out of memory ({error})")
    if len(error.args) == 2 and isinstance(error.args[0], int):
        code, message = error.args
        return ERROR_BY_CODE.get(code, StorageError)(f"{context}: {message}")
    return StorageError(f"{context}: {error}")
