"""Plain reads of a Parquet object in one extent as Arrow's and DuckDB's
readers read Parquet over S3: the footer from the extent's tail, then only the
column chunks of the needed columns in the row groups whose footer statistics
leave the filter able to match, coalesced into few reads. The C++ core decides
both from the footer (object_codec.plan_read), as a storage scan would, and
then decodes exactly those row groups from exactly those bytes."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from skyhook.backends.object_codec import DatasetFilter, plan_read
from skyhook.catalog.design import checksum_layout

#: The tail read first: Arrow's default footer read (lineitem's footer, 16
#: columns in 4 row groups of 64 Ki rows, is 10.7 KB; a longer one takes a second read).
TAIL_BYTES = 64 * 1024
#: Ranges this close are read as one (Arrow's pre-buffer hole_size_limit) ...
HOLE_BYTES = 8 * 1024
#: ... unless that makes one read larger than this (its range_size_limit).
MAX_READ_BYTES = 32 * 1024 * 1024

_TRAILER_BYTES = 8  # the footer's length and "PAR1"

Parts = list[tuple[int, pa.Buffer]]
#: Reads of (offset, length) ranges of one version of the object.
Reader = Callable[[list[tuple[int, int]]], list[pa.Buffer]]


def read_parquet(
    read: Reader,
    size: int,
    extent: tuple[int, int],
    attributes: tuple[bytes | None, bytes | None],
    schema: pa.Schema,
    wanted: list[str] | None,
    filter: DatasetFilter | None,
    context: str,
) -> tuple[Parts, list[int], bool] | None:
    """(the parts read, the row groups to decode from them, whether their
    footer statistics prove the filter holds for every row of them) of a
    Parquet object of size bytes whose file is the extent (offset, length),
    with its design and format attributes; None when the core cannot tell the
    ranges (the caller reads the extent whole, the parts read so far being few bytes)."""
    offset, length = extent
    end = offset + length
    # The core reads the extent's data in whole chunks of its checksums, and the checksum
    # table and footer after it whole: the tail read starts at a chunk and holds both.
    layout = checksum_layout(attributes[0])
    tail_start = end - min(TAIL_BYTES, length)
    if layout is not None and layout.table_offset <= length:
        tail_start = min(_aligned(tail_start, offset, layout.chunk_bytes), offset + layout.table_offset)
    tail = read([(tail_start, end - tail_start)])[0]
    parts: Parts = [(tail_start, tail)]
    needed = _footer_bytes(tail)
    if needed is not None and end - tail_start < needed <= length:
        footer_start = end - needed
        parts.insert(0, (footer_start, read([(footer_start, tail_start - footer_start)])[0]))
    plan = plan_read(size, *attributes, parts, wanted, filter, schema, context)
    if plan is None:
        return None
    row_groups, ranges, every_row_matches = plan
    remaining = [kept for start, stop in coalesced(ranges) if (kept := _before(start, stop, parts[0][0]))]
    if remaining:
        parts += zip([start for start, _ in remaining], read(remaining))
    return parts, row_groups, every_row_matches


def coalesced(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(offset, length) ranges, ascending, merged where they overlap or lie at
    most HOLE_BYTES apart, the latter only into reads of at most MAX_READ_BYTES."""
    merged: list[tuple[int, int]] = []
    for start, length in sorted(ranges):
        stop = start + length
        if merged:
            first, previous = merged[-1]
            if start < previous or (start - previous <= HOLE_BYTES and max(stop, previous) - first <= MAX_READ_BYTES):
                merged[-1] = (first, max(previous, stop))
                continue
        merged.append((start, stop))
    return [(start, stop - start) for start, stop in merged]


def _aligned(position: int, extent_start: int, chunk: int) -> int:
    """position moved back to a multiple of chunk from the extent's start."""
    return extent_start + (position - extent_start) // chunk * chunk


def _before(start: int, length: int, read_from: int) -> tuple[int, int] | None:
    """The part of a range before read_from (the footer's reads cover the rest):
    the core joins a chunk read in two parts."""
    stop = min(start + length, read_from)
    return (start, stop - start) if stop > start else None


def _footer_bytes(tail: pa.Buffer) -> int | None:
    """The bytes the footer and trailer take, by the trailer (the core checks
    them); None when the tail does not end as a Parquet file does."""
    if tail.size < _TRAILER_BYTES:
        return None
    trailer = tail.slice(tail.size - _TRAILER_BYTES).to_pybytes()
    if trailer[4:] != b"PAR1":
        return None
    return int.from_bytes(trailer[:4], "little") + _TRAILER_BYTES
