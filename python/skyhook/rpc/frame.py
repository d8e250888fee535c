"""The envelope of every message (cpp/skyhook/protocol/frame.h):

``magic | version u16 | reserved u16 | header length u32 | reserved u32 | header | body``

The header is an Arrow IPC stream of exactly one row, zero-padded to a multiple
of 8 bytes so that the body stays aligned. The client frames requests (header
only) and unframes replies.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import pyarrow as pa

from skyhook.errors import CorruptReplyError, StorageError, first_line

PROTOCOL_VERSION = 1
REQUEST_MAGIC = b"SKRQ"
REPLY_MAGIC = b"SKRP"
PREFIX = struct.Struct("<4sHHII")

#: What a request header field may hold; None leaves the field out.
HeaderValue = bytes | str | int | None


def encode_request_frame(fields: Mapping[str, HeaderValue]) -> bytes:
    """A request whose header holds the given fields (None values are left out).
    Typed requests (requests.py) build their fields; tests send raw ones."""
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
    return PREFIX.pack(REQUEST_MAGIC, PROTOCOL_VERSION, 0, len(header_bytes), 0) + header_bytes


def _wire_type(value: HeaderValue) -> pa.DataType:
    if isinstance(value, (bytes, bytearray)):
        return pa.binary()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"unsupported request field value {value!r}")
    return pa.int64()


def decode_reply_frame(message: bytes | pa.Buffer, source: str) -> tuple[pa.RecordBatch, pa.Buffer]:
    """The reply's header (one row, not yet validated in full) and body; a
    malformed envelope raises CorruptReplyError naming source."""
    buffer = pa.py_buffer(message)
    if buffer.size < PREFIX.size:
        raise CorruptReplyError(f"the reply of {source} ({buffer.size} bytes) is truncated")
    magic, version, _, header_length, _ = PREFIX.unpack(buffer[: PREFIX.size].to_pybytes())
    if magic != REPLY_MAGIC:
        raise CorruptReplyError(f"the reply of {source} does not start with the skyhook magic")
    if version > PROTOCOL_VERSION:
        raise StorageError(
            f"{source} replied with protocol version {version}; this client speaks up to {PROTOCOL_VERSION}"
        )
    end_of_header = PREFIX.size + header_length
    if header_length % 8 or end_of_header > buffer.size:
        raise CorruptReplyError(f"the reply of {source} has a header length of {header_length} in {buffer.size} bytes")
    try:
        header = _one_row(buffer.slice(PREFIX.size, header_length))
    except (pa.ArrowException, OSError, ValueError) as error:
        raise malformed_header(source, error) from None
    return header, buffer.slice(end_of_header)


def malformed_header(source: str, error: Exception) -> CorruptReplyError:
    return CorruptReplyError(f"the reply of {source} has a malformed header: {first_line(error)}")


def _one_row(data: pa.Buffer) -> pa.RecordBatch:
    batches = list(pa.ipc.open_stream(data))  # the header is small: its length is checked
    if len(batches) != 1:
        raise ValueError(f"{len(batches)} header batches, not 1")
    batch = batches[0]
    if batch.num_rows != 1:
        raise ValueError(f"{batch.num_rows} header rows, not 1")
    if len(set(batch.schema.names)) != len(batch.schema.names):
        raise ValueError("repeated header fields")
    return batch
