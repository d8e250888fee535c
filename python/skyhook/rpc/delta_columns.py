"""Sorted integer columns that storage sent as their first differences
(cpp/skyhook/storage/runtime/delta_encoding.h), named in a batch's
"skyhook.delta" metadata: restored here by a cumulative sum that wraps in the
column's type, as the differences did."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

#: The batch metadata key naming the encoded columns, e.g. b"0,3".
DELTA_KEY = b"skyhook.delta"


def decoded(batch: pa.RecordBatch, metadata: Mapping[bytes, bytes] | None) -> pa.RecordBatch:
    """The batch with its encoded columns restored; ValueError when the
    metadata names columns that cannot have been encoded."""
    if not metadata or DELTA_KEY not in metadata:
        return batch
    columns = batch.columns
    for index in _encoded_indices(metadata[DELTA_KEY], batch):
        columns[index] = _restored(columns[index], index)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _restored(differences: pa.Array, index: int) -> pa.Array:
    """The cumulative sum, checked to be sorted: with no difference negative
    and no overflow it is (one pass each), else pair by pair after wrapping."""
    try:
        values = pc.cumulative_sum_checked(differences)
        if len(values) < 2 or pc.min(differences[1:]).as_py() >= 0:
            return values
    except pa.ArrowInvalid:  # overflowed: sorted values far apart wrap, as storage's differences did
        pass
    values = pc.cumulative_sum(differences)
    if not pc.all(pc.greater_equal(values[1:], values[:-1])).as_py():
        raise ValueError(f"column {index} does not decode to sorted values")
    return values


def _encoded_indices(text: bytes, batch: pa.RecordBatch) -> list[int]:
    try:
        indices = [int(part) for part in text.decode("ascii").split(",")]
    except ValueError:
        raise ValueError(f"malformed {DELTA_KEY.decode()} {text[:40]!r}") from None
    if len(set(indices)) != len(indices):
        raise ValueError(f"{DELTA_KEY.decode()} names a column twice")
    for index in indices:
        if not 0 <= index < batch.num_columns:
            raise ValueError(f"{DELTA_KEY.decode()} names column {index} of {batch.num_columns}")
        column = batch.column(index)
        if not pa.types.is_integer(column.type) or column.null_count:
            raise ValueError(f"{DELTA_KEY.decode()} names column {index} ({column.type}), which was not delta-encoded")
    return indices
