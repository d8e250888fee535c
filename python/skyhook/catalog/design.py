"""Physical designs: how one object lays out its rows.

``Design`` is what a user asks for (format, column groups, sort order,
compression, rows per row group); ``ObjectDesign`` is what one object carries
in its ``skyhook.design`` attribute once built: the resolved column groups
with their byte extents, its row count and a generation that every rewrite
raises. The attribute is a one-row Arrow IPC stream, the same one the C++
core reads and writes (cpp/skyhook/storage/object/object_design.h).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import pyarrow as pa

from skyhook.errors import InvalidRequestError

DESIGN_ATTRIBUTE = "skyhook.design"
DESIGN_VERSION = 1
FORMATS = ("rows", "ipc", "parquet")
COMPRESSIONS = ("none", "lz4", "zstd")
#: A design's compression chosen by measured cost when its objects are built (skyhook.ingest.codec_choice).
AUTO_COMPRESSION = "auto"
DEFAULT_ROW_GROUP_SIZE = 64 * 1024
_MAX_ROW_GROUP_SIZE = 1 << 24
_MAX_CHUNK_BYTES = 16 << 20  # extent_checksums.h's bound

_SORT_KEY = pa.struct([pa.field("column", pa.utf8(), False), pa.field("descending", pa.bool_(), False)])
_COLUMN_GROUP = pa.struct(
    [
        pa.field("columns", pa.list_(pa.field("item", pa.utf8(), False)), False),
        pa.field("offset", pa.int64(), False),
        pa.field("length", pa.int64(), False),
    ]
)
DESIGN_SCHEMA = pa.schema(
    [
        pa.field("version", pa.int32(), False),
        pa.field("format", pa.utf8(), False),
        pa.field("column_groups", pa.list_(pa.field("item", _COLUMN_GROUP, False)), False),
        pa.field("sort_by", pa.list_(pa.field("item", _SORT_KEY, False)), False),
        pa.field("compression", pa.utf8(), False),
        pa.field("row_group_size", pa.int64(), False),
        pa.field("num_rows", pa.int64(), False),
        pa.field("generation", pa.int64(), False),
    ]
)


@dataclass(frozen=True)
class SortKey:
    column: str
    descending: bool = False


@dataclass(frozen=True)
class Design:
    """A physical design to build. column_groups: None keeps every column
    together; "each" gives every column its own extent; a list of column lists
    names groups (columns no group names form one more group)."""

    format: str = "parquet"
    column_groups: tuple[tuple[str, ...], ...] | str | None = None
    sort_by: tuple[SortKey, ...] = ()
    compression: str = "lz4"
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE

    def __init__(
        self,
        format: str = "parquet",
        column_groups: Sequence[Sequence[str]] | str | None = None,
        sort_by: Sequence[str | tuple[str, str] | SortKey] | str = (),
        compression: str = "lz4",
        row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    ) -> None:
        if format not in FORMATS:
            raise InvalidRequestError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
        if compression not in (*COMPRESSIONS, AUTO_COMPRESSION):
            raise InvalidRequestError(
                f"unknown compression {compression!r}; expected one of {', '.join(COMPRESSIONS)} or {AUTO_COMPRESSION}"
            )
        if isinstance(row_group_size, bool) or not isinstance(row_group_size, int):
            raise InvalidRequestError(f"row_group_size must be an integer, not {row_group_size!r}")
        if not 1 <= row_group_size <= _MAX_ROW_GROUP_SIZE:
            raise InvalidRequestError(f"row_group_size {row_group_size} is outside 1 .. 2^24")
        groups = _groups(column_groups)
        if format == "rows" and (groups == "each" or (groups is not None and len(groups) > 1)):
            raise InvalidRequestError("a rows object keeps all its columns in one group")
        object.__setattr__(self, "format", format)
        object.__setattr__(self, "column_groups", groups)
        object.__setattr__(self, "sort_by", _sort_keys(sort_by))
        object.__setattr__(self, "compression", compression)
        object.__setattr__(self, "row_group_size", row_group_size)

    def resolved_groups(self, columns: Sequence[str]) -> list[list[str]]:
        """The groups to ask the writer for, given the data's columns: unknown
        names are an InvalidRequestError here, before anything is read."""
        known = set(columns)
        if self.column_groups is None:
            groups: list[list[str]] = [[]]
        elif self.column_groups == "each":
            groups = [[column] for column in columns]
        else:
            groups = [list(group) for group in self.column_groups]
        for name in [column for group in groups for column in group] + [key.column for key in self.sort_by]:
            if name not in known:
                raise InvalidRequestError(f"the design names column {name!r}, which the dataset does not have")
        return groups


@dataclass(frozen=True)
class ColumnGroup:
    columns: tuple[str, ...]  # empty: every column of the object
    offset: int
    length: int


@dataclass(frozen=True)
class ObjectDesign:
    format: str
    column_groups: tuple[ColumnGroup, ...]
    sort_by: tuple[SortKey, ...]
    compression: str  # "unknown" for objects written before designs
    row_group_size: int
    num_rows: int  # -1 where only the object's footer knows
    generation: int

    @classmethod
    def request(cls, design: Design, columns: Sequence[str], generation: int) -> ObjectDesign:
        """What to ask the C++ writer for (extents and row count are filled in by it)."""
        return cls(
            design.format,
            tuple(ColumnGroup(tuple(group), 0, 0) for group in design.resolved_groups(columns)),
            design.sort_by,
            design.compression,
            design.row_group_size,
            0,
            generation,
        )

    @classmethod
    def legacy(cls, format: str, size: int) -> ObjectDesign:
        """An object written before designs: one extent, named by skyhook.format."""
        return cls(format, (ColumnGroup((), 0, size),), (), "unknown", DEFAULT_ROW_GROUP_SIZE, -1, 0)

    def to_bytes(self) -> bytes:
        return _encoded(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> ObjectDesign:
        """Decodes an attribute value (the C++ core checks it against the object
        before reading; here it only has to be well-formed): ValueError if not."""
        return _decoded(bytes(data) if isinstance(data, (pa.Buffer, memoryview, bytearray)) else data)

    def _encode(self) -> bytes:
        row = {
            "version": DESIGN_VERSION,
            "format": self.format,
            "column_groups": [
                {"columns": list(group.columns), "offset": group.offset, "length": group.length}
                for group in self.column_groups
            ],
            "sort_by": [{"column": key.column, "descending": key.descending} for key in self.sort_by],
            "compression": self.compression,
            "row_group_size": self.row_group_size,
            "num_rows": self.num_rows,
            "generation": self.generation,
        }
        batch = pa.RecordBatch.from_pylist([row], schema=DESIGN_SCHEMA)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, DESIGN_SCHEMA) as writer:
            writer.write_batch(batch)
        return sink.getvalue().to_pybytes()

    @classmethod
    def _decode(cls, data: bytes) -> ObjectDesign:
        try:
            table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
        except pa.ArrowException as error:
            raise ValueError(f"malformed design: {error}") from None
        try:
            if table.num_rows != 1 or table.column("version")[0].as_py() != DESIGN_VERSION:
                raise ValueError("malformed design: not one row of a known version")
            return cls._from_row(table.select(DESIGN_SCHEMA.names).to_pylist()[0])
        except (KeyError, TypeError, AttributeError, pa.ArrowException) as error:  # fields missing or null
            raise ValueError(f"malformed design: {type(error).__name__}: {error}") from None

    @classmethod
    def _from_row(cls, row: dict) -> ObjectDesign:
        return cls(
            row["format"],
            tuple(
                ColumnGroup(tuple(group["columns"]), group["offset"], group["length"]) for group in row["column_groups"]
            ),
            tuple(SortKey(key["column"], key["descending"]) for key in row["sort_by"]),
            row["compression"],
            row["row_group_size"],
            row["num_rows"],
            row["generation"],
        )

    @property
    def monolithic(self) -> bool:
        """Every column in one extent."""
        return len(self.column_groups) == 1

    def groups_holding(self, columns: Sequence[str] | None) -> tuple[ColumnGroup, ...]:
        """The groups a read of columns (None: all) opens, as the C++ reader
        chooses them: those holding any of them, or the smallest for none."""
        if columns is None or self.monolithic:
            return self.column_groups
        wanted = set(columns)
        holding = tuple(group for group in self.column_groups if wanted.intersection(group.columns))
        return holding or (min(self.column_groups, key=lambda group: group.length),)

    def request_problem(self, columns: Sequence[str]) -> str | None:
        """What makes this write design impossible for data of columns, or None."""
        named = [column for group in self.column_groups for column in group.columns]
        # "auto" stays a write design until a write has rows to measure (an empty one leaves it to appends).
        if self.format not in FORMATS or self.compression not in (*COMPRESSIONS, AUTO_COMPRESSION):
            return f"format {self.format!r}, compression {self.compression!r}"
        if not 1 <= self.row_group_size <= _MAX_ROW_GROUP_SIZE:
            return f"row group size {self.row_group_size}"
        if (
            not self.column_groups
            or len(named) != len(set(named))
            or (self.format == "rows" and len(self.column_groups) > 1)
        ):
            return "its column groups"
        unknown = set(named).union(key.column for key in self.sort_by) - set(columns)
        return f"it names unknown column {sorted(unknown)[0]!r}" if unknown else None

    def object_problem(self, num_rows: int, size: int, columns: Sequence[str]) -> str | None:
        """What makes this design disagree with an object of num_rows rows and
        size bytes of a dataset of columns, or None."""
        if self.format not in FORMATS or self.compression not in (*COMPRESSIONS, "unknown"):
            return f"has format {self.format!r}, compression {self.compression!r}"
        if self.num_rows not in (-1, num_rows):
            return f"says {self.num_rows} rows"
        extents = sorted((group.offset, group.offset + group.length) for group in self.column_groups)
        if not extents or extents[0][0] < 0 or extents[-1][1] > size:
            return "has extents outside its object"
        if any(start < end for (_, end), (start, _) in zip(extents, extents[1:])):
            return "has overlapping extents"
        named = [column for group in self.column_groups for column in group.columns]
        if (named or not self.monolithic) and sorted(named) != sorted(columns):
            return "does not group the dataset's columns"
        return None

    def describe_groups(self) -> str:
        """The column groups as one line: "(all)" or "a,b | c"."""
        if len(self.column_groups) == 1 and not self.column_groups[0].columns:
            return "(all)"
        return " | ".join(",".join(group.columns) for group in self.column_groups)


def _groups(column_groups: Sequence[Sequence[str]] | str | None) -> tuple[tuple[str, ...], ...] | str | None:
    if column_groups is None or column_groups == "each":
        return column_groups
    if isinstance(column_groups, str):
        raise InvalidRequestError(f"column_groups must be None, 'each' or lists of columns, not {column_groups!r}")
    groups = tuple(tuple(group) for group in column_groups)
    seen: set[str] = set()
    for group in groups:
        if not group or not all(isinstance(column, str) for column in group):
            raise InvalidRequestError("every column group must name one or more columns")
        for column in group:
            if column in seen:
                raise InvalidRequestError(f"column {column!r} is in two column groups")
            seen.add(column)
    return groups


def _sort_keys(sort_by: Sequence[str | tuple[str, str] | SortKey] | str) -> tuple[SortKey, ...]:
    keys = [sort_by] if isinstance(sort_by, str) else list(sort_by)
    result = []
    for key in keys:
        if isinstance(key, SortKey):
            result.append(key)
        elif isinstance(key, str):
            result.append(SortKey(key))
        elif isinstance(key, tuple) and len(key) == 2 and key[1] in ("ascending", "descending"):
            result.append(SortKey(key[0], key[1] == "descending"))
        else:
            raise InvalidRequestError(
                f"a sort key is a column name or (column, 'ascending' | 'descending'), not {key!r}"
            )
    return tuple(result)


# A manifest carries a design per object and every commit, scan and garbage
# collection decodes (and a commit encodes) them all: ~2 ms each as Arrow IPC.
# Designs are immutable values and many objects share one (the same bytes), so
# each distinct one is decoded/encoded once. Bounded; a malformed value raises
# every time (lru_cache keeps no exceptions).
_MEMO_SIZE = 8192


@lru_cache(maxsize=_MEMO_SIZE)
def _decoded(data: bytes) -> ObjectDesign:
    return ObjectDesign._decode(data)


@lru_cache(maxsize=_MEMO_SIZE)
def _encoded(design: ObjectDesign) -> bytes:
    return design._encode()


@dataclass(frozen=True)
class ChecksumLayout:
    """How an object's first extent is checked (cpp/skyhook/storage/object/
    extent_checksums.h): the core reads its data before table_offset in whole
    chunks of chunk_bytes from the extent's start, and from table_offset to
    the extent's end (the checksum table and the footer) whole."""

    chunk_bytes: int
    table_offset: int


@lru_cache(maxsize=_MEMO_SIZE)  # every query of an object reads its attribute again
def checksum_layout(data: bytes | None) -> ChecksumLayout | None:
    """The checksum layout of an object's first extent, by its design
    attribute; None for objects written before checksums, or an attribute it
    cannot read (the core says what is wrong when it reads the object)."""
    if data is None:
        return None
    try:
        table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
        first = table.column("checksums")[0].values[0].as_py()
        layout = ChecksumLayout(first["chunk_bytes"], first["table_offset"])
    except (pa.ArrowException, KeyError, IndexError, TypeError, AttributeError):
        return None
    valid = 0 < layout.chunk_bytes <= _MAX_CHUNK_BYTES and layout.table_offset >= 0
    return layout if valid else None
