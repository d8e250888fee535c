"""Z-order over several keys: each key's values are normalised to their
quantile bucket (the number of the key's bucket bounds at or below the value:
order-preserving for any type Arrow sorts — integers, floats, decimals,
dates, timestamps, strings — and even over skewed keys), and the buckets'
bits are interleaved, the first key's most significant. Nulls and NaNs take
a bucket of their own above every value. A range of z-values is a set of
boxes in the keys' space; the box around the rows of a range (in buckets)
is what the stream pushes down to storage before cutting the exact range."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.plan.expressions import conjunction

#: Bits per key: enough to tell apart the boxes of a few thousand objects, small bounds in a plan.
EXTRA_BITS = 4
MAX_BITS = 62


def bits_per_key(keys: int, ranges: int) -> int:
    """Bits of each key's bucket for ranges target objects (at least one)."""
    wanted = math.ceil(math.log2(max(2, ranges)) / keys) + EXTRA_BITS
    return max(1, min(wanted, MAX_BITS // keys))


def bucket_bounds(values: pa.ChunkedArray | pa.Array, bits: int) -> pa.Array:
    """At most 2**bits - 2 distinct values splitting the key's sorted values
    (nulls and NaNs left out) into equal runs: the key's bucket bounds."""
    values = ordered_values(values)
    buckets = (1 << bits) - 1
    if len(values) == 0:
        return values
    picks = sorted({len(values) * index // buckets for index in range(1, buckets)})
    return pc.unique(values.take(pa.array(picks, pa.int64())))


def buckets(values: pa.ChunkedArray | pa.Array, bounds: pa.Array) -> np.ndarray:
    """Each value's bucket: how many bounds are at or below it (len(bounds) + 1 for a null or NaN)."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    count = len(bounds)
    combined = pa.concat_arrays([bounds.cast(values.type), values])
    is_value = np.concatenate([np.zeros(count, np.int8), np.ones(len(values), np.int8)])
    # A bound sorts before a value equal to it, so it counts as at or below the value.
    order = pc.sort_indices(
        pa.table({"v": combined, "f": is_value}), sort_keys=[("v", "ascending"), ("f", "ascending")]
    ).to_numpy()
    below = np.cumsum(is_value[order] == 0)
    result = np.empty(len(values), np.uint64)
    positions = order >= count
    result[order[positions] - count] = below[positions]
    odd = _null_or_nan(values)
    if odd is not None:
        result[odd] = count + 1
    return result


def z_values(columns: Sequence[pa.ChunkedArray | pa.Array], bounds: Sequence[pa.Array], bits: int) -> np.ndarray:
    """The rows' z-values: their keys' buckets with the bits interleaved."""
    return interleave([buckets(column, key_bounds) for column, key_bounds in zip(columns, bounds)], bits)


def interleave(key_buckets: Sequence[np.ndarray], bits: int) -> np.ndarray:
    keys = len(key_buckets)
    z = np.zeros(len(key_buckets[0]) if keys else 0, np.uint64)
    for bit in range(bits):
        for index, values in enumerate(key_buckets):
            place = np.uint64(bit * keys + keys - 1 - index)
            z |= ((values >> np.uint64(bit)) & np.uint64(1)) << place
    return z


def cell_bounds(z: np.ndarray, total_bits: int, most: int, per_object: float) -> np.ndarray:
    """Range bounds for sorted z-values: the z-space halved one bit at a time
    (each half of an aligned cell is again a box: it halves one key's range)
    until every cell holds at most `most` rows; the starts of the cells that
    hold rows, but the first (a range runs up to the next start). A range
    that crossed a cell's edge would span some key's whole range and prune
    nothing. A cell of one z-value (it cannot halve) holding more is cut by
    row count into runs of about per_object rows: its start once per run
    (range_of spreads its rows; a cut first cell keeps its start, range 0 empty)."""
    starts: list[int] = []

    def split(start: int, bits: int) -> None:
        low, high = np.searchsorted(z, [np.uint64(start), np.uint64(start + (1 << bits))])
        if high == low:
            return
        if high - low <= most:
            starts.append(start)
        elif bits == 0:
            starts.extend([start] * max(2, round((high - low) / per_object)))
        else:
            split(start, bits - 1)
            split(start + (1 << (bits - 1)), bits - 1)

    split(0, total_bits)
    first_cut = len(starts) > 1 and starts[1] == starts[0]
    return np.array(starts if first_cut else starts[1:], np.uint64)


def range_of(z: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each row's range: the one whose z-interval [bounds[r-1], bounds[r]) holds it;
    the rows of a z-value that starts m ranges (a cell cut by row count) go to
    those m ranges in equal runs, in row order (the same rows in the same order
    in every pass, so each row goes to one range)."""
    ranges = np.searchsorted(bounds, z, side="right")
    first = np.searchsorted(bounds, z, side="left")
    for value in np.unique(z[ranges - first > 1]):
        rows = np.flatnonzero(z == value)
        low, runs = first[rows[0]], ranges[rows[0]] - first[rows[0]]
        ranges[rows] = low + 1 + np.arange(len(rows)) * runs // len(rows)
    return ranges


def boxes(key_buckets: Sequence[np.ndarray], ranges: np.ndarray, count: int) -> list[list[int] | None]:
    """Per range (0..count-1): [low, high] bucket of each key over its rows, flattened; None for a range with none."""
    found: list[list[int] | None] = [None] * count
    order = np.argsort(ranges, kind="stable")
    present, starts = np.unique(ranges[order], return_index=True)
    for key in key_buckets:
        ordered = key[order]
        lows, highs = np.minimum.reduceat(ordered, starts), np.maximum.reduceat(ordered, starts)
        for where, low, high in zip(present, lows, highs):
            found[int(where)] = [*(found[int(where)] or []), int(low), int(high)]
    return found


def box_filter(keys: Sequence[str], bounds: Sequence[pa.Array], box: Sequence[int]) -> pc.Expression | None:
    """A filter every row of a range's box passes (None: every row): per key,
    bucket low..high as value bounds; a key whose box holds nulls or NaNs is left unbounded."""
    filter = None
    for index, (key, key_bounds) in enumerate(zip(keys, bounds)):
        low, high = box[2 * index], box[2 * index + 1]
        if high > len(key_bounds):
            continue
        if low > 0:
            filter = conjunction(filter, pc.field(key) >= pc.scalar(key_bounds[low - 1]))
        if high < len(key_bounds):
            filter = conjunction(filter, pc.field(key) < pc.scalar(key_bounds[high]))
    return filter


def ordered_values(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The values sorted, nulls and NaNs left out (they are no bounds: nothing compares below a NaN)."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    odd = _null_or_nan(values)
    if odd is not None:
        values = values.filter(pa.array(~odd))
    return values.take(pc.sort_indices(values))


def _null_or_nan(values: pa.Array) -> np.ndarray | None:
    odd = values.is_null()
    if pa.types.is_floating(values.type):
        odd = pc.or_(odd, pc.fill_null(pc.is_nan(values), False))
    mask = odd.to_numpy(zero_copy_only=False)
    return mask if mask.any() else None
