"""Parquet, Arrow IPC and CSV files as a source: directories keep their Hive (or
other) partitioning as columns, every file must have the columns of the first,
and a file that cannot be read is named in a one-line error."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Union

import pyarrow as pa
import pyarrow.dataset as pads

from skyhook.errors import InvalidInputError, InvalidRequestError, SchemaMismatchError, first_line
from skyhook.ingest.csv_options import CsvOptions, csv_error

_FILE_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".ipc": "ipc",
    ".feather": "ipc",
    ".csv": "csv",
}

#: How directories name partitions: "hive" (key=value, the default), a list of
#: field names (one directory level each), a pyarrow Partitioning or factory, or None.
Partitioning = Union[str, list, pads.Partitioning, pads.PartitioningFactory, None]


def input_files(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Files to import: the paths themselves, or the data files under directories."""
    return [file for _, files in _input_groups(paths) for file in files]


def _input_groups(paths: Sequence[str | os.PathLike]) -> list[tuple[Path | None, list[Path]]]:
    """Per path given: the directory partitions are relative to (None for a file) and its files."""
    groups: list[tuple[Path | None, list[Path]]] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix.lower() in _FILE_FORMATS and p.is_file())
            if found:
                groups.append((path, found))
        elif path.exists():
            groups.append((None, [path]))
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
    if not groups:
        raise InvalidRequestError(f"no Parquet, Arrow IPC or CSV files in {', '.join(map(str, paths))}")
    return groups


def file_format(path: Path) -> str:
    fmt = _FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InvalidRequestError(f"cannot tell the format of {path}: expected .parquet, .arrow/.ipc/.feather or .csv")
    return fmt


class FileSource:
    """The rows of files, in order, each batch with its file's partition key."""

    def __init__(
        self, paths: Sequence[str | os.PathLike], partitioning: Partitioning, csv_options: CsvOptions | None
    ) -> None:
        groups = _input_groups(paths)
        formats = {file_format(path) for _, files in groups for path in files}
        if len(formats) > 1:
            raise InvalidRequestError(f"input files mix formats: {', '.join(sorted(formats))}")
        fmt: str | pads.FileFormat = formats.pop()
        self._csv = CsvOptions.of(csv_options) if fmt == "csv" else None
        self._csv_columns: list[str] = []
        if self._csv is not None:
            self._csv_columns = self._same_columns([file for _, files in groups for file in files])
            fmt = self._csv.file_format(self._csv_columns)
        self._children = [self._open(base, files, fmt, partitioning) for base, files in groups]
        self.schema = self._children[0].schema
        for child in self._children:
            for fragment in child.get_fragments():
                self._check_columns(fragment)

    def _same_columns(self, files: list[Path]) -> list[str]:
        """The CSV columns every file has (a file that differs is an error)."""
        assert self._csv is not None
        first = self._csv.column_names_of(files[0])
        for path in files[1:]:
            names = self._csv.column_names_of(path)
            if names != first:
                raise SchemaMismatchError(f"{path} has the columns {names}, but {files[0]} has {first}")
        return first

    def _open(
        self, base: Path | None, files: list[Path], fmt: str | pads.FileFormat, partitioning: Partitioning
    ) -> pads.Dataset:
        try:
            if base is None:
                return pads.dataset([str(path) for path in files], format=fmt)
            return pads.dataset(
                [str(path) for path in files], format=fmt, partitioning=partitioning, partition_base_dir=str(base)
            )
        except (pa.ArrowException, ValueError, TypeError) as error:
            if self._csv is not None and isinstance(error, pa.ArrowException):
                raise csv_error(files[0], error, self._csv_columns) from None
            raise InvalidInputError(f"{base or files[0]}: {first_line(error)}") from None

    def _check_columns(self, fragment: pads.FileFragment) -> None:
        """Arrow fills a column a file lacks with nulls: refuse that instead."""
        if self._csv is not None:
            return  # every header was compared, and the parser counts each row's columns
        partition_names = pads.get_partition_keys(fragment.partition_expression)
        try:
            names = set(fragment.physical_schema.names) | set(partition_names)
        except pa.ArrowException as error:
            raise InvalidInputError(f"{fragment.path}: {first_line(error)}") from None
        expected = set(self.schema.names)
        if names != expected:
            missing, extra = sorted(expected - names), sorted(names - expected)
            raise SchemaMismatchError(
                f"{fragment.path} does not have the columns of the first file"
                + (f": it lacks {missing}" if missing else "")
                + (f"; it has {extra} besides" if extra else "")
            )

    def batches(self) -> Iterator[tuple[Hashable, pa.RecordBatch]]:
        for child in self._children:
            for fragment in child.get_fragments():
                key = str(fragment.partition_expression)
                try:
                    for batch in pads.Scanner.from_fragment(fragment, schema=self.schema).to_batches():
                        yield key, batch
                except pa.ArrowException as error:
                    if self._csv is not None:
                        raise csv_error(Path(fragment.path), error, self.schema.names) from None
                    raise InvalidInputError(f"{fragment.path}: {first_line(error)}") from None
