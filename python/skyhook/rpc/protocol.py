"""The client half of the wire protocol (see cpp/skyhook/protocol/README.md).

A message is ``magic | version u16 | reserved u16 | header length u32 | reserved u32
| header | body`` where the header is an Arrow IPC stream of exactly one row,
zero-padded to a multiple of 8 bytes so that the body stays aligned. Requests carry
Substrait filters and projections in it; replies carry status, message and
statistics, and their body is an Arrow IPC stream of results.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from skyhook.errors import ERROR_BY_CODE, CorruptReplyError, StorageError, first_line

PROTOCOL_VERSION = 1
REQUEST_MAGIC = b"SKRQ"
REPLY_MAGIC = b"SKRP"
_PREFIX = struct.Struct("<4sHHII")


def encode_request(fields: dict[str, Any]) -> bytes:
    """Frame a request whose header holds the given fields (None values are left out)."""
    arrays, names = [], []
    for name, value in fields.items():
        if value is None:
            continue
        arrays.append(pa.array([value], type=_wire_type(value)))
        names.append(name)
    header = pa.RecordBatch.from_arrays(arrays, names=names)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, header.schema) as writer:
        writer.write_batch(header)
    header_bytes = sink.getvalue().to_pybytes()
    header_bytes += bytes(-len(header_bytes) % 8)
    return _PREFIX.pack(REQUEST_MAGIC, PROTOCOL_VERSION, 0, len(header_bytes), 0) + header_bytes


def _wire_type(value: Any) -> pa.DataType:
    if isinstance(value, (bytes, bytearray)):
        return pa.binary()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"unsupported request field value {value!r}")
    return pa.int64()


EXECUTED_VALUES = ("all", "filter", "none")
_HEADER_TYPES = {"status": pa.int32(), "message": pa.string(), "executed": pa.string()}


class _Statistics(dict):
    """Reply statistics: one that a reply lacks makes the reply malformed, not the caller wrong."""

    def __missing__(self, name: str) -> int:
        raise CorruptReplyError(f"storage reply lacks the statistic {name!r}")


@dataclass
class Reply:
    code: int
    message: str
    executed: str = "all"  # "none": a loaded node pushed the work back to the client
    statistics: dict[str, int] = field(default_factory=_Statistics)
    body: pa.Buffer | None = None
    source: str = "storage"  # what replied, for error messages
    #: Set when a node limit ended the call early: the row to continue from.
    resume_row: int | None = None

    def raise_for_status(self, context: str) -> None:
        if self.code != 0:
            error = ERROR_BY_CODE.get(self.code, StorageError)
            raise error(f"{context}: {self.message}")

    def reader(self) -> pa.RecordBatchReader:
        """The body's record batches, each validated in full: a damaged body
        raises CorruptReplyError here instead of reaching compute kernels."""
        try:
            stream = pa.ipc.open_stream(self.body)
        except (pa.ArrowException, OSError) as error:
            raise CorruptReplyError(f"the reply of {self.source} is malformed: {first_line(error)}") from None
        return pa.RecordBatchReader.from_batches(stream.schema, self._validated(stream))

    def _validated(self, stream: pa.RecordBatchStreamReader) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                batch = stream.read_next_batch()
                batch.validate(full=True)
            except StopIteration:
                return
            except (pa.ArrowException, OSError) as error:
                raise CorruptReplyError(f"the reply of {self.source} is malformed: {first_line(error)}") from None
            yield batch


def decode_reply(message: bytes | pa.Buffer, source: str = "storage") -> Reply:
    """The reply in message; anything malformed raises CorruptReplyError naming source."""
    buffer = pa.py_buffer(message)
    if buffer.size < _PREFIX.size:
        raise CorruptReplyError(f"the reply of {source} ({buffer.size} bytes) is truncated")
    magic, version, _, header_length, _ = _PREFIX.unpack(buffer[: _PREFIX.size].to_pybytes())
    if magic != REPLY_MAGIC:
        raise CorruptReplyError(f"the reply of {source} does not start with the skyhook magic")
    if version > PROTOCOL_VERSION:
        raise StorageError(
            f"{source} replied with protocol version {version}; this client speaks up to {PROTOCOL_VERSION}"
        )
    end_of_header = _PREFIX.size + header_length
    if header_length % 8 or end_of_header > buffer.size:
        raise CorruptReplyError(f"the reply of {source} has a header length of {header_length} in {buffer.size} bytes")
    try:
        fields = _header_fields(buffer.slice(_PREFIX.size, header_length))
    except (pa.ArrowException, OSError, ValueError) as error:
        raise CorruptReplyError(f"the reply of {source} has a malformed header: {first_line(error)}") from None
    executed = fields.pop("executed", "all")
    if executed not in EXECUTED_VALUES:
        raise CorruptReplyError(f"the reply of {source} says it executed {executed!r}")
    code, text = fields.pop("status"), fields.pop("message")
    resume_row = fields.pop("resume_row", None)
    if resume_row is not None and resume_row < 0:
        raise CorruptReplyError(f"the reply of {source} resumes at row {resume_row}")
    statistics = _Statistics((name, value) for name, value in fields.items() if isinstance(value, int))
    return Reply(code, text, executed, statistics, buffer.slice(end_of_header), source, resume_row)


def _header_fields(data: pa.Buffer) -> dict[str, Any]:
    """The header's one row, checked in full before any value becomes a Python object.
    The message is read as bytes and decoded leniently: storage may quote any bytes."""
    batches = list(pa.ipc.open_stream(data))  # the header is small: its length is checked
    if len(batches) != 1:
        raise ValueError(f"{len(batches)} header batches, not 1")
    batch = batches[0]
    if batch.num_rows != 1:
        raise ValueError(f"{batch.num_rows} header rows, not 1")
    names = batch.schema.names
    if len(set(names)) != len(names):
        raise ValueError("repeated header fields")
    columns = dict(zip(names, batch.columns))
    for name in ("status", "message"):
        if name not in columns:
            raise ValueError(f"no {name!r} field")
    for name, expected in _HEADER_TYPES.items():
        if name in columns and columns[name].type != expected:
            raise ValueError(f"field {name!r} is {columns[name].type}, not {expected}")
    message = columns["message"]
    columns["message"] = pa.Array.from_buffers(pa.binary(), len(message), message.buffers(), offset=message.offset)
    checked = pa.RecordBatch.from_arrays(list(columns.values()), names=names)
    checked.validate(full=True)
    values = {}
    for name, column in columns.items():
        if column.null_count:
            raise ValueError(f"field {name!r} is null")
        if name in _HEADER_TYPES or column.type == pa.int64():  # others: fields of a newer protocol
            values[name] = column[0].as_py()
    values["message"] = values["message"].decode("utf-8", errors="replace")
    return values


# Statistics that add up over the calls of one object; the rest (limits) do not.
_ADDITIVE = ("rows_scanned", "rows_returned", "bytes_read", "bytes_returned", "storage_cpu_ns", "slices")


def merge_continuations(parts: list[Reply]) -> Reply:
    """One reply for an object that took several calls: their rows in order
    (one uncompressed IPC stream) and their statistics added up."""
    if len(parts) == 1:
        return parts[0]
    readers = [part.reader() for part in parts]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, readers[0].schema) as writer:
        for reader in readers:
            for batch in reader:
                writer.write_batch(batch)
    statistics = _Statistics(parts[-1].statistics)
    for name in _ADDITIVE:
        if name in statistics:
            statistics[name] = sum(part.statistics.get(name, 0) for part in parts)
    statistics["calls"] = len(parts)
    return Reply(0, "", parts[0].executed, statistics, sink.getvalue(), parts[0].source)
