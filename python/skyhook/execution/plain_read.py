"""The plain path: read a whole object and let pyarrow decode and filter it at
the client (pushdown off, chosen by the cost model, or pushed back).

Every failure is a SkyhookError naming the object: pyarrow's own errors never
escape. Parquet page checksums are verified, so a damaged page is an error
rather than a wrong answer."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook.catalog.object_format import stored_schema
from skyhook.errors import (
    ClassCallsNotPermittedError,
    CorruptObjectError,
    InvalidRequestError,
    OutOfMemoryError,
    SkyhookError,
    StorageError,
    first_line,
)

if TYPE_CHECKING:
    from skyhook.catalog.manifest import Partition
    from skyhook.execution.dataset_objects import DatasetObjects

_FILE_FORMATS = {
    "parquet": pads.ParquetFileFormat(
        default_fragment_scan_options=pads.ParquetFragmentScanOptions(page_checksum_verification=True)
    ),
    "ipc": pads.IpcFileFormat(),
}
# pyarrow reports damaged data as ArrowException subclasses or as OSError (IOError).
_ARROW_ERRORS = (pa.ArrowException, OSError)


def read_partition(
    source: DatasetObjects, partition: Partition, columns=None, filter: pc.Expression | None = None
) -> tuple[int, int, pa.Table]:
    """(object bytes moved, rows in the object, the filtered and projected table)."""
    name = partition.object_name
    try:
        data = source.backend.read_object(name)
    except SkyhookError:
        raise
    except OSError as error:
        raise StorageError(f"reading object {name} failed: {error}") from None
    format = source.manifest.format
    try:
        fragment = _FILE_FORMATS[format].make_fragment(pa.BufferReader(data))
        rows = fragment.count_rows()
        _check_schema(fragment.physical_schema, stored_schema(source.schema, format), name)
        return (
            data.size,
            rows,
            fragment.to_table(schema=source.schema, columns=columns, filter=filter, use_threads=False),
        )
    except SkyhookError:
        raise
    except _ARROW_ERRORS as error:
        if isinstance(error, MemoryError) or (columns is None and filter is None):
            raise _read_error(name, format, error) from None
        try:  # the data itself, or the expressions?
            fragment.to_table(schema=source.schema, use_threads=False)
        except _ARROW_ERRORS as data_error:
            raise _read_error(name, format, data_error) from None
        raise InvalidRequestError(
            f"evaluating the filter or projection on object {name} failed: {first_line(error)}"
        ) from None


def warn_class_calls_refused(refusal: ClassCallsNotPermittedError) -> None:
    """Storage-side methods are refused but plain reads may be allowed: the query
    goes on at the client, with the same results and the whole objects moved."""
    warnings.warn(f"{refusal}; reading whole objects at the client instead", RuntimeWarning, stacklevel=3)


def _check_schema(physical: pa.Schema, expected: pa.Schema, name: str) -> None:
    """An object must have the columns its manifest promises: never a silent cast."""
    stored = {field.name: field.type for field in physical}
    wanted = {field.name: field.type for field in expected}
    if stored == wanted and len(physical) == len(expected):
        return
    differences = [
        f"{column}: {stored.get(column, 'missing')} in the object, {wanted.get(column, 'absent')} expected"
        for column in dict.fromkeys([*wanted, *stored])
        if stored.get(column) != wanted.get(column)
    ] or ["repeated column names"]
    raise CorruptObjectError(f"object {name} is inconsistent with its dataset's schema ({'; '.join(differences)})")


def _read_error(name: str, format: str, error: BaseException) -> SkyhookError:
    if isinstance(error, MemoryError):
        return OutOfMemoryError(f"out of memory decoding object {name}: {first_line(error)}")
    return CorruptObjectError(f"object {name} is not a readable {format} partition: {first_line(error)}")
