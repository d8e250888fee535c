"""What a storage-side method answers (cpp/skyhook/protocol/reply.h): a status,
a message, how much of the request ran, statistics, and a body (an Arrow IPC
stream of results)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pyarrow as pa

from skyhook.errors import CorruptReplyError, StorageError, first_line
from skyhook.rpc.delta_columns import decoded
from skyhook.rpc.error_codes import ERROR_BY_CODE
from skyhook.rpc.frame import decode_reply_frame, malformed_header
from skyhook.rpc.statistics import ADDITIVE, BYTES_ABANDONED, BYTES_RETURNED, CALLS, Statistics


class Executed(str, Enum):
    """How much of its request a method executed; the client completes the rest."""

    ALL = "all"
    FILTER_ONLY = "filter"  # an execute_plan whose aggregate did not run: the body holds the project's rows
    NONE = "none"  # pushed back by a loaded node: the body is empty


_INLINE = pa.ipc.IpcReadOptions(use_threads=False)
_HEADER_TYPES = {"status": pa.int32(), "message": pa.string(), "executed": pa.string()}
_INT64 = pa.int64()


@dataclass
class Reply:
    code: int
    message: str
    executed: Executed = Executed.ALL
    statistics: Statistics = field(default_factory=Statistics)
    body: pa.Buffer | None = None
    source: str = "storage"  # what replied, for error messages
    #: Set when a node limit ended the call early: the row to continue from.
    resume_row: int | None = None
    #: The body's rows, once with_rows() decoded them, and the thread CPU that took.
    rows: pa.Table | None = None
    decode_cpu_s: float = 0.0

    def raise_for_status(self, context: str) -> None:
        if self.code != 0:
            error = ERROR_BY_CODE.get(self.code, StorageError)
            raise error(f"{context}: {self.message}")

    def reader(self) -> pa.RecordBatchReader:
        """The body's record batches, each validated in full and its delta-encoded
        columns restored: a damaged body raises CorruptReplyError here instead
        of reaching compute kernels."""
        try:
            # Decompressed on this thread: Arrow's pool is busy with storage's own scans.
            stream = pa.ipc.open_stream(self.body, options=_INLINE)
        except (pa.ArrowException, OSError) as error:
            raise CorruptReplyError(f"the reply of {self.source} is malformed: {first_line(error)}") from None
        return pa.RecordBatchReader.from_batches(stream.schema, self._validated(stream))

    def with_rows(self) -> Reply:
        """This reply, its body decoded into rows (none when pushed back)."""
        if self.body is None or self.executed is Executed.NONE:
            return self
        started = time.thread_time()
        self.rows = self.reader().read_all()
        self.decode_cpu_s = time.thread_time() - started
        return self

    def _validated(self, stream: pa.RecordBatchStreamReader) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                batch, metadata = stream.read_next_batch_with_custom_metadata()
                batch.validate(full=True)
                batch = decoded(batch, metadata)
            except StopIteration:
                return
            except (pa.ArrowException, OSError, ValueError) as error:
                raise CorruptReplyError(f"the reply of {self.source} is malformed: {first_line(error)}") from None
            yield batch


def decode_reply(message: bytes | pa.Buffer, source: str = "storage") -> Reply:
    """The reply in message; anything malformed raises CorruptReplyError naming source."""
    header, body = decode_reply_frame(message, source)
    try:
        fields = _header_fields(header)
    except (pa.ArrowException, OSError, ValueError) as error:
        raise malformed_header(source, error) from None
    wire_executed = fields.pop("executed", Executed.ALL.value)
    try:
        executed = Executed(wire_executed)
    except ValueError:
        raise CorruptReplyError(f"the reply of {source} says it executed {wire_executed!r}") from None
    code, text = fields.pop("status"), fields.pop("message")
    resume_row = fields.pop("resume_row", None)
    if resume_row is not None and resume_row < 0:
        raise CorruptReplyError(f"the reply of {source} resumes at row {resume_row}")
    statistics = Statistics((name, value) for name, value in fields.items() if isinstance(value, int))
    return Reply(code, text, executed, statistics, body, source, resume_row)


def _header_fields(header: pa.RecordBatch) -> dict[str, Any]:
    """The header's one row, checked in full before any value becomes a Python object.
    The message is read as bytes and decoded leniently: storage may quote any bytes."""
    names = header.schema.names
    columns = dict(zip(names, header.columns))
    for name in ("status", "message"):
        if name not in columns:
            raise ValueError(f"no {name!r} field")
    for name, expected in _HEADER_TYPES.items():
        if name in columns and columns[name].type != expected:
            raise ValueError(f"field {name!r} is {columns[name].type}, not {expected}")
    columns["message"] = columns["message"].view(pa.binary())
    pa.RecordBatch.from_arrays(list(columns.values()), names=names).validate(full=True)
    values = {}
    for name, column in columns.items():
        if column.null_count:
            raise ValueError(f"field {name!r} is null")
        if name in _HEADER_TYPES or column.type == _INT64:  # others: fields of a newer protocol
            values[name] = column[0].as_py()
    values["message"] = values["message"].decode("utf-8", errors="replace")
    return values


def merge_continuations(parts: list[Reply]) -> Reply:
    """One reply for an object that took several calls: their rows in order
    (one uncompressed IPC stream) and their statistics added up. If the last
    call was pushed back, the object's reply is that push-back, and the bytes
    the earlier calls moved were moved for nothing."""
    if len(parts) == 1:
        return parts[0]
    statistics = _added_up(parts)
    if parts[-1].executed is Executed.NONE:
        earlier = sum(part.statistics.get(BYTES_RETURNED, 0) for part in parts[:-1])
        statistics[BYTES_ABANDONED] = statistics.get(BYTES_ABANDONED, 0) + earlier
        return Reply(0, parts[-1].message, Executed.NONE, statistics, None, parts[-1].source)
    readers = [part.reader() for part in parts]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, readers[0].schema) as writer:
        for reader in readers:
            for batch in reader:
                writer.write_batch(batch)
    return Reply(0, "", parts[0].executed, statistics, sink.getvalue(), parts[0].source)


def _added_up(parts: list[Reply]) -> Statistics:
    statistics = Statistics(parts[-1].statistics)
    for name in ADDITIVE:
        if any(name in part.statistics for part in parts):
            statistics[name] = sum(part.statistics.get(name, 0) for part in parts)
    statistics[CALLS] = len(parts)
    return statistics
