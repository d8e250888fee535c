"""Consecutive rows grouped into partitions, one object each; rows of different
partition keys (directories of a partitioned tree) never share one."""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import pyarrow as pa

from skyhook.errors import InvalidRequestError

DEFAULT_TARGET_OBJECT_SIZE = 32 << 20


def split_partitions(
    schema: pa.Schema,
    batches: Iterator[tuple[Hashable, pa.RecordBatch]],
    target_object_size: int,
    rows_per_object: int | None,
) -> Iterator[pa.Table]:
    """Consecutive rows of one key grouped into partitions of at most
    rows_per_object rows and about target_object_size bytes of Arrow data each."""
    if target_object_size <= 0:
        raise InvalidRequestError("target_object_size must be positive")
    if rows_per_object is not None and rows_per_object <= 0:
        raise InvalidRequestError("rows_per_object must be positive")
    pending: list[pa.RecordBatch] = []
    pending_rows = pending_bytes = 0
    pending_key: Hashable = None
    for key, batch in batches:
        if pending and key != pending_key:
            yield pa.Table.from_batches(pending, schema)
            pending, pending_rows, pending_bytes = [], 0, 0
        pending_key = key
        while batch.num_rows:
            row_bytes = max(1, batch.nbytes // batch.num_rows)
            room_rows = max(1, (target_object_size - pending_bytes) // row_bytes)
            if rows_per_object is not None:
                room_rows = min(room_rows, rows_per_object - pending_rows)
            head = batch.slice(0, room_rows)
            batch = batch.slice(head.num_rows)
            pending.append(head)
            pending_rows += head.num_rows
            pending_bytes += head.num_rows * row_bytes
            if pending_bytes >= target_object_size or pending_rows == rows_per_object:
                yield pa.Table.from_batches(pending, schema)
                pending, pending_rows, pending_bytes = [], 0, 0
    if pending:
        yield pa.Table.from_batches(pending, schema)
