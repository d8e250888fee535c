"""What a dataset is written from: pyarrow data (tables, batches, readers,
datasets, iterables of them), pandas DataFrames, anything with the Arrow
PyCapsule stream interface (polars, DuckDB results), or Parquet, Arrow IPC and
CSV files; read as one stream of record batches in the types storage keeps."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from skyhook.errors import InvalidRequestError, SchemaMismatchError
from skyhook.ingest.csv_options import CsvOptions
from skyhook.ingest.files import FileSource, Partitioning

DataSource = Any  # every kind open_source names; too many for a useful Union


def _plain_type(type: pa.DataType) -> pa.DataType:
    """View types become their classic forms: DuckDB does not push filters into views."""
    if pa.types.is_string_view(type):
        return pa.string()
    if pa.types.is_binary_view(type):
        return pa.binary()
    if pa.types.is_list_view(type):
        return pa.list_(_plain_type(type.value_type))
    if pa.types.is_large_list_view(type):
        return pa.large_list(_plain_type(type.value_type))
    if pa.types.is_struct(type):
        return pa.struct([field.with_type(_plain_type(field.type)) for field in type])
    if pa.types.is_list(type):
        return pa.list_(type.value_field.with_type(_plain_type(type.value_type)))
    return type


def storage_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([field.with_type(_plain_type(field.type)) for field in schema], schema.metadata)


@dataclass
class Source:
    """Rows to write: their schema, and their batches in order, each with the key
    of the partition (a directory of a partitioned tree) it belongs to. Rows of
    different keys never share an object, so each object's statistics prune."""

    schema: pa.Schema
    batches: Iterator[tuple[Hashable, pa.RecordBatch]]


def open_source(
    data: DataSource,
    partitioning: Partitioning = "hive",
    csv_options: CsvOptions | Mapping[str, Any] | None = None,
) -> Source:
    """The rows of any supported input, in storage types. partitioning and
    csv_options apply to files (see FileSource and CsvOptions)."""
    if isinstance(data, (str, os.PathLike)) or (
        isinstance(data, Sequence) and data and all(isinstance(p, (str, os.PathLike)) for p in data)
    ):
        files = FileSource([data] if isinstance(data, (str, os.PathLike)) else list(data), partitioning, csv_options)
        schema, batches = files.schema, files.batches()
    else:
        reader = _reader(data)
        schema, batches = reader.schema, ((None, batch) for batch in reader)
    target = storage_schema(schema)
    if target != schema:
        batches = ((key, batch.cast(target)) for key, batch in batches)
    return Source(target, batches)


def _reader(data: DataSource) -> pa.RecordBatchReader:
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pads.Dataset):  # a skyhook dataset too: a copy
        return data.scanner().to_reader()
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        # The index becomes columns when it is named or not a plain range, as in pyarrow.
        return pa.Table.from_pandas(data, preserve_index=None).to_reader()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        return _iterable_reader(iter(data))
    raise InvalidRequestError(
        f"cannot write {type(data).__name__}: expected a pyarrow Table, RecordBatch, RecordBatchReader or "
        "Dataset, a pandas DataFrame, an Arrow stream (__arrow_c_stream__), an iterable of record batches "
        "or tables, or file paths"
    )


def _iterable_reader(items: Iterator[Any]) -> pa.RecordBatchReader:
    """Record batches or tables, one after another: the first gives the schema."""
    first = next(items, None)
    if not isinstance(first, (pa.RecordBatch, pa.Table)):
        raise InvalidRequestError(
            "an iterable to write must yield pyarrow record batches or tables"
            + (", and this one is empty" if first is None else f", not {type(first).__name__}")
        )
    schema = first.schema

    def batches() -> Iterator[pa.RecordBatch]:
        for index, item in enumerate(itertools.chain([first], items)):
            if not isinstance(item, (pa.RecordBatch, pa.Table)):
                raise InvalidRequestError(f"item {index} of the input is a {type(item).__name__}, not a record batch")
            if not item.schema.equals(schema):
                raise SchemaMismatchError(
                    f"item {index} of the input has the schema ({_inline(item.schema)}), "
                    f"but the first has ({_inline(schema)})"
                )
            yield from item.to_batches() if isinstance(item, pa.Table) else [item]

    return pa.RecordBatchReader.from_batches(schema, batches())


def _inline(schema: pa.Schema) -> str:
    return ", ".join(f"{field.name}: {field.type}" for field in schema)
