"""How CSV files are read: pyarrow's CSV reader with the options users set, and
its errors turned into one line that names the file, line and column."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as pads

from skyhook.errors import InvalidInputError, InvalidRequestError, first_line


@dataclass(frozen=True)
class CsvOptions:
    """delimiter: one character. null_values: the texts that mean null (pyarrow's
    list by default: "", "NA", "NULL", "null", "NaN", "n/a", ...); they are null in
    string columns too (strings_can_be_null), except a quoted "" which stays an
    empty string. column_types: {column: type} (others are inferred from the first
    file). header: whether the first line (after skip_rows) names the columns;
    column_names: the names to use instead (with header=True the header is then
    skipped); without either, columns are f0, f1, ..."""

    delimiter: str = ","
    null_values: Sequence[str] | None = None
    column_types: Mapping[str, pa.DataType] | None = None
    header: bool = True
    column_names: Sequence[str] | None = None
    skip_rows: int = 0
    strings_can_be_null: bool = True

    @classmethod
    def of(cls, options: CsvOptions | Mapping[str, Any] | None) -> CsvOptions:
        """options as given to write_dataset: a CsvOptions, a dict of its fields or None."""
        if options is None or isinstance(options, CsvOptions):
            return options or cls()
        known = {field.name for field in fields(cls)}
        unknown = set(options) - known
        if unknown:
            raise InvalidRequestError(f"unknown CSV options {sorted(unknown)}; expected some of {sorted(known)}")
        return cls(**options)

    def _parse_options(self) -> pacsv.ParseOptions:
        if len(self.delimiter) != 1:
            raise InvalidRequestError(f"a CSV delimiter is one character, not {self.delimiter!r}")
        return pacsv.ParseOptions(delimiter=self.delimiter)

    def column_names_of(self, path: Path) -> list[str]:
        """path's columns: column_names, its header's names, or f0, f1, ... for as
        many as its first row has. Arrow datasets read a header (or count the
        columns) before applying skip_rows, so the names are always given them."""
        if self.skip_rows < 0:
            raise InvalidRequestError("skip_rows must not be negative")
        if self.column_names:
            return list(self.column_names)
        read = pacsv.ReadOptions(skip_rows=self.skip_rows, autogenerate_column_names=not self.header)
        # Only the names are wanted here: rows that do not parse are the scan's to report.
        parse = pacsv.ParseOptions(delimiter=self._parse_options().delimiter, invalid_row_handler=lambda row: "skip")
        try:
            return pacsv.open_csv(path, read_options=read, parse_options=parse).schema.names
        except pa.ArrowException as error:
            raise InvalidInputError(f"{path}: {first_line(error)}") from None

    def file_format(self, column_names: list[str]) -> pads.CsvFileFormat:
        """The dataset format for files of these columns."""
        read = pacsv.ReadOptions(skip_rows=self.skip_rows + (1 if self.header else 0), column_names=column_names)
        convert = pacsv.ConvertOptions(
            column_types=dict(self.column_types or {}),
            strings_can_be_null=self.strings_can_be_null,
            quoted_strings_can_be_null=False,
        )
        if self.null_values is not None:
            convert.null_values = list(self.null_values)
        return pads.CsvFileFormat(self._parse_options(), convert_options=convert, read_options=read)


_ROW = re.compile(r"Row #(\d+): ")
_COLUMN = re.compile(r"In CSV column #(\d+): ")


_OPENING = re.compile(r"Could not open CSV input source '(?P<path>.*?)': \w+: ")


def csv_error(path: Path, error: pa.ArrowException, columns: list[str]) -> InvalidInputError:
    """pyarrow's error reading a CSV file (path, unless it names another), as one
    line naming the file, line and column."""
    message = first_line(error)
    opening = _OPENING.search(message)
    if opening:
        path, message = Path(opening["path"]), message[opening.end() :]
    where = [str(path)]
    row = _ROW.search(message)
    if row:  # a dataset's CSV reader numbers the lines of the file, skipped ones included
        where.append(f"line {row[1]}")
    column = _COLUMN.search(message)
    if column and int(column[1]) < len(columns):
        where.append(f"column {columns[int(column[1])]!r}")
    detail = re.sub(r"^CSV ", "", _COLUMN.sub("", _ROW.sub("", message)))
    return InvalidInputError(f"{', '.join(where)}: {detail}")
