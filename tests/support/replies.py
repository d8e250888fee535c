"""Reply frames built by hand, for tests of the client's reply validation."""

from __future__ import annotations

import struct

import pyarrow as pa

from skyhook.rpc.frame import REPLY_MAGIC


def frame(header: pa.RecordBatch, body: bytes = b"") -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, header.schema) as writer:
        writer.write_batch(header)
    data = sink.getvalue().to_pybytes()
    data += bytes(-len(data) % 8)
    return struct.pack("<4sHHII", REPLY_MAGIC, 1, 0, len(data), 0) + data + body


def header(**columns) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(columns)
