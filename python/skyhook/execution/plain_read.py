"""The plain path: read an object at the client and let pyarrow filter it
(pushdown off, chosen by the cost model, or pushed back).

The object is decoded by the design attribute it carries, read together with
its bytes from one version of it (a transform may rewrite it at any time, and
the manifest's design may be older or newer than the object), with the C++
core's reader: the same code storage runs, for objects of any design. Of an
object in several column groups only the extents of the groups holding the
needed columns are read (ranged reads); of a Parquet object in one extent, its
footer and the needed columns' chunks in the row groups whose footer
statistics leave the filter able to match (parquet_ranges.py). The core
evaluates the filter as it decodes (no filter where those statistics prove
every row matches); pyarrow does where the core cannot. Every failure
is a SkyhookError naming the object: pyarrow's own errors never escape.
Parquet page checksums are verified, so a damaged page is an error rather
than a wrong answer."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook.backends.object_codec import DatasetFilter, DecodedObject, decode_object
from skyhook.backends.object_store import OpenedObject
from skyhook.catalog.design import DESIGN_ATTRIBUTE, ObjectDesign
from skyhook.catalog.object_format import FORMAT_ATTRIBUTE, stored_schema
from skyhook.errors import (
    ClassCallsNotPermittedError,
    ClassCallsRefusedWarning,
    CorruptObjectError,
    InvalidRequestError,
    ObjectChangedError,
    OutOfMemoryError,
    SkyhookError,
    StorageError,
    first_line,
)
from skyhook.execution.observed_rates import ObservedRates, rates_of
from skyhook.execution.parquet_ranges import read_parquet
from skyhook.plan.expressions import columns_read

if TYPE_CHECKING:
    from skyhook.catalog.manifest import Partition
    from skyhook.execution.dataset_objects import DatasetObjects

# pyarrow reports failures as ArrowException subclasses or as OSError (IOError).
_ARROW_ERRORS = (pa.ArrowException, OSError)
#: Opening again an object that a transform replaced while it was read.
_ATTEMPTS = 5


def read_partition(
    source: DatasetObjects,
    partition: Partition,
    columns=None,
    filter: pc.Expression | None = None,
    filter_reads: set[str] | None = None,
) -> tuple[int, int, pa.Table]:
    """(object bytes moved, rows read of the object, the filtered and projected
    table); filter_reads: the columns filter reads, when the caller knows them."""
    name = partition.object_name
    wanted = columns_read(source.schema, columns, filter, filter_reads)
    rates = rates_of(source.backend)
    for _ in range(_ATTEMPTS):
        try:
            opened = source.backend.open_object(name)
        except SkyhookError:
            raise
        except OSError as error:
            raise StorageError(f"reading object {name} failed: {error}") from None
        try:
            moved, decoded, decode_cpu_s = _decoded(opened, source.schema, wanted, filter, name, rates)
            break
        except ObjectChangedError:
            continue
        finally:
            opened.close()
    else:
        raise StorageError(f"object {name} was rewritten {_ATTEMPTS} times while it was read")
    evaluating = time.thread_time()
    result = _evaluated(decoded.table, columns, None if decoded.filtered else filter, name)
    rates.plain_read(decoded.nbytes, time.thread_time() - evaluating + decode_cpu_s)
    return moved, decoded.rows, result


def warn_class_calls_refused(refusal: ClassCallsNotPermittedError) -> None:
    """Storage-side methods are refused but plain reads may be allowed: the query
    goes on at the client, with the same results and the whole objects moved."""
    warnings.warn(f"{refusal}; reading whole objects at the client instead", ClassCallsRefusedWarning, stacklevel=3)


def _decoded(
    opened: OpenedObject,
    schema: pa.Schema,
    wanted: list[str] | None,
    filter: pc.Expression | None,
    name: str,
    rates: ObservedRates,
) -> tuple[int, DecodedObject, float]:
    """(bytes read, the wanted columns in the dataset's types of the rows the
    filter may match (filtered: only the rows it keeps), decode CPU seconds) of
    one opened object; each read is a transfer over the link."""
    design_bytes = opened.attributes.get(DESIGN_ATTRIBUTE)
    format_bytes = opened.attributes.get(FORMAT_ATTRIBUTE)
    try:
        design = ObjectDesign.from_bytes(design_bytes) if design_bytes is not None else None
    except ValueError:
        design = None  # the C++ reader says what is wrong with it
    format = design.format if design is not None else (format_bytes or b"").decode(errors="replace")
    moved = 0

    def read(ranges: list[tuple[int, int]]) -> list[pa.Buffer]:
        nonlocal moved
        rates.transfer_started()
        parts: list[pa.Buffer] = []
        try:
            parts = opened.read(ranges)
        finally:
            rates.transfer_ended(sum(part.size for part in parts))
            moved += sum(part.size for part in parts)
        return parts

    dataset_filter = None if filter is None else DatasetFilter.of(filter, schema)
    extent = _parquet_extent(opened.size, design, design_bytes, format)
    planned = None
    if extent is not None:
        planned = read_parquet(
            read, opened.size, extent, (design_bytes, format_bytes), schema, wanted, dataset_filter, f"object {name}"
        )
    if planned is not None:
        parts, row_groups, every_row_matches = planned
        if every_row_matches:
            dataset_filter = None
    else:
        ranges = _extents(opened.size, design, wanted, extent)
        parts, row_groups, every_row_matches = list(zip([offset for offset, _ in ranges], read(ranges))), None, False
    decoding = time.thread_time()
    decoded = decode_object(
        opened.size, design_bytes, format_bytes, parts, wanted, f"object {name}", row_groups, dataset_filter
    )
    all_columns = None if design is None or design.monolithic else [c for g in design.column_groups for c in g.columns]
    _check_schema(decoded.schema, stored_schema(schema, format), all_columns, name)
    table = decoded.table
    try:
        if table.num_columns:  # casting no column would lose the row count (pyarrow's Table.cast)
            table = table.cast(pa.schema([schema.field(column) for column in table.column_names]))
    except _ARROW_ERRORS as error:
        raise _read_error(name, error) from None
    filtered = decoded.filtered or every_row_matches
    return moved, decoded._replace(table=table, filtered=filtered), time.thread_time() - decoding


def _extents(
    size: int, design: ObjectDesign | None, wanted: list[str] | None, extent: tuple[int, int] | None
) -> list[tuple[int, int]]:
    """The ranges of an object read whole: the extents of the column groups
    holding the wanted columns, its one extent, or all of it."""
    if design is not None and not design.monolithic:
        groups = design.groups_holding(wanted)
        if all(group.offset + group.length <= size for group in groups):
            return [(group.offset, group.length) for group in groups]
    return [(0, size)] if extent is None else [extent]


def _parquet_extent(
    size: int, design: ObjectDesign | None, design_bytes: bytes | None, format: str
) -> tuple[int, int] | None:
    """(offset, length) of the Parquet file of an object in one extent, read
    by its footer and column chunks; None for other objects (read whole, or in
    the extents of their column groups) and for a design the object cannot
    hold (the C++ reader says what is wrong)."""
    if format != "parquet" or (design_bytes is not None and design is None):
        return None
    if design is None:
        return (0, size)
    if not design.monolithic:
        return None
    group = design.column_groups[0]
    return (group.offset, group.length) if group.offset + group.length <= size and group.length else None


def _evaluated(table: pa.Table, columns, filter: pc.Expression | None, name: str) -> pa.Table:
    if filter is None and (columns is None or not isinstance(columns, Mapping)):
        return table if columns is None else table.select(columns)
    try:
        return pads.dataset(table).to_table(columns=columns, filter=filter, use_threads=False)
    except _ARROW_ERRORS as error:
        if isinstance(error, MemoryError):
            raise _read_error(name, error) from None
        raise InvalidRequestError(
            f"evaluating the filter or projection on object {name} failed: {first_line(error)}"
        ) from None


def _check_schema(physical: pa.Schema, expected: pa.Schema, all_columns: list[str] | None, name: str) -> None:
    """An object must have the columns its manifest promises: never a silent cast.
    physical holds every column of the object, or (all_columns given: the
    object's column groups) the columns of the groups read."""
    stored = {field.name: field.type for field in physical}
    wanted = {field.name: field.type for field in expected}
    if all_columns is not None:
        stored = {column: stored.get(column, "unread") for column in all_columns}
        wanted = {column: wanted[column] if stored.get(column) != "unread" else "unread" for column in wanted}
    if stored == wanted and len(physical) == len(set(physical.names)):
        return
    differences = [
        f"{column}: {stored.get(column, 'missing')} in the object, {wanted.get(column, 'absent')} expected"
        for column in dict.fromkeys([*wanted, *stored])
        if stored.get(column) != wanted.get(column)
    ] or ["repeated column names"]
    raise CorruptObjectError(f"object {name} is inconsistent with its dataset's schema ({'; '.join(differences)})")


def _read_error(name: str, error: BaseException) -> SkyhookError:
    if isinstance(error, MemoryError):
        return OutOfMemoryError(f"out of memory decoding object {name}: {first_line(error)}")
    return CorruptObjectError(f"object {name} does not hold its dataset's types: {first_line(error)}")
