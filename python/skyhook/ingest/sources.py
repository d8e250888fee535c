"""What a dataset is written from: pyarrow data or Parquet, Arrow IPC and CSV
files, read as one stream of record batches in the types storage keeps."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads

from skyhook.errors import InvalidRequestError

_FILE_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".ipc": "ipc",
    ".feather": "ipc",
    ".csv": "csv",
}

DataSource = pa.Table | pa.RecordBatch | pa.RecordBatchReader | str | os.PathLike | Sequence[str | os.PathLike]


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


def input_files(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Files to import: the paths themselves, or the data files under directories."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix.lower() in _FILE_FORMATS))
        elif path.exists():
            files.append(path)
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
    if not files:
        raise InvalidRequestError(f"no Parquet, Arrow IPC or CSV files in {', '.join(map(str, paths))}")
    return files


def file_format(path: Path) -> str:
    fmt = _FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InvalidRequestError(f"cannot tell the format of {path}: expected .parquet, .arrow/.ipc/.feather or .csv")
    return fmt


def open_source(data: DataSource) -> pa.RecordBatchReader:
    """A stream of record batches over any supported input, in storage types."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        reader = data.to_reader()
    elif isinstance(data, pa.RecordBatchReader):
        reader = data
    elif isinstance(data, (str, os.PathLike)) or (
        isinstance(data, Sequence) and all(isinstance(p, (str, os.PathLike)) for p in data)
    ):
        paths = [data] if isinstance(data, (str, os.PathLike)) else list(data)
        files = input_files(paths)
        formats = {file_format(path) for path in files}
        if len(formats) > 1:
            raise InvalidRequestError(f"input files mix formats: {', '.join(sorted(formats))}")
        source = pads.dataset([str(path) for path in files], format=formats.pop())
        reader = source.scanner().to_reader()
    else:
        raise InvalidRequestError(
            f"cannot write {type(data).__name__}: expected a pyarrow Table, RecordBatchReader or file paths"
        )
    target = storage_schema(reader.schema)
    if target == reader.schema:
        return reader
    return pa.RecordBatchReader.from_batches(target, (batch.cast(target) for batch in reader))
