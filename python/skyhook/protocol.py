"""The client half of the wire protocol (see cpp/skyhook/protocol/README.md).

A message is ``magic | version u16 | reserved u16 | header length u32 | reserved u32
| header | body`` where the header is an Arrow IPC stream of exactly one row,
zero-padded to a multiple of 8 bytes so that the body stays aligned. Requests carry
Substrait filters and projections in it; replies carry status, message and
statistics, and their body is an Arrow IPC stream of results.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from skyhook.errors import ERROR_BY_CODE, StorageError

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


@dataclass
class Reply:
    code: int
    message: str
    executed: str = "all"  # "none": a loaded node pushed the work back to the client
    statistics: dict[str, int] = field(default_factory=dict)
    body: pa.Buffer | None = None
    #: Set when a node limit ended the call early: the row to continue from.
    resume_row: int | None = None

    def raise_for_status(self, context: str) -> None:
        if self.code != 0:
            error = ERROR_BY_CODE.get(self.code, StorageError)
            raise error(f"{context}: {self.message}")

    def reader(self) -> pa.RecordBatchStreamReader:
        return pa.ipc.open_stream(self.body)


def decode_reply(message: bytes | pa.Buffer) -> Reply:
    buffer = pa.py_buffer(message)
    if buffer.size < _PREFIX.size:
        raise StorageError(f"storage reply of {buffer.size} bytes is truncated")
    magic, version, _, header_length, _ = _PREFIX.unpack(buffer[: _PREFIX.size].to_pybytes())
    if magic != REPLY_MAGIC:
        raise StorageError("storage reply does not start with the skyhook magic")
    if version > PROTOCOL_VERSION:
        raise StorageError(f"storage replied with protocol version {version}; "
                           f"this client speaks up to {PROTOCOL_VERSION}")
    end_of_header = _PREFIX.size + header_length
    if end_of_header > buffer.size:
        raise StorageError("storage reply header is truncated")
    header = pa.ipc.open_stream(buffer.slice(_PREFIX.size, header_length)).read_next_batch()
    values = header.to_pylist()[0]
    code = values.pop("status")
    text = values.pop("message")
    executed = values.pop("executed", "all")
    resume_row = values.pop("resume_row", None)
    return Reply(code, text, executed, values, buffer.slice(end_of_header), resume_row)


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
    statistics = dict(parts[-1].statistics)
    for name in _ADDITIVE:
        if name in statistics:
            statistics[name] = sum(part.statistics.get(name, 0) for part in parts)
    statistics["calls"] = len(parts)
    return Reply(0, "", parts[0].executed, statistics, sink.getvalue())
