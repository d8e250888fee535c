"""The tables Flight SQL's catalog commands return, in the schemas the
protocol fixes: the store's datasets as tables of one schema ("main", no
catalog, as DuckDB names them in a query), their Arrow schemas, the table
types and what the server is (CommandGetSqlInfo)."""

from __future__ import annotations

import pyarrow as pa
from google.protobuf.message import Message

import skyhook
from skyhook.errors import InvalidRequestError
from skyhook.flight import messages
from skyhook.store import Store

SCHEMA_NAME = "main"
TABLE_TYPE = "TABLE"

_CATALOGS = pa.schema([pa.field("catalog_name", pa.utf8(), False)])
_DB_SCHEMAS = pa.schema([pa.field("catalog_name", pa.utf8()), pa.field("db_schema_name", pa.utf8(), False)])
_TABLES = pa.schema(
    [
        pa.field("catalog_name", pa.utf8()),
        pa.field("db_schema_name", pa.utf8()),
        pa.field("table_name", pa.utf8(), False),
        pa.field("table_type", pa.utf8(), False),
    ]
)
_TABLE_SCHEMA = pa.field("table_schema", pa.binary(), False)
_TABLE_TYPES = pa.schema([pa.field("table_type", pa.utf8(), False)])
_SQL_INFO_VALUE = pa.dense_union(
    [
        pa.field("string_value", pa.utf8()),
        pa.field("bool_value", pa.bool_()),
        pa.field("bigint_value", pa.int64()),
        pa.field("int32_bitmask", pa.int32()),
        pa.field("string_list", pa.list_(pa.field("item", pa.utf8()))),
        pa.field("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.field("item", pa.int32())))),
    ]
)
_SQL_INFO = pa.schema([pa.field("info_name", pa.uint32(), False), pa.field("value", _SQL_INFO_VALUE, False)])


def metadata_table(store: Store, command: Message, writer: bool = False) -> pa.Table:
    """The rows a catalog command answers; writer: the caller may load data."""
    kind = messages.name_of(command)
    if kind == "CommandGetCatalogs":
        return _CATALOGS.empty_table()  # datasets belong to no catalog
    if kind == "CommandGetDbSchemas":
        named = (
            _matches(command.db_schema_filter_pattern, SCHEMA_NAME)
            if command.HasField("db_schema_filter_pattern")
            else True
        )
        rows = [{"catalog_name": None, "db_schema_name": SCHEMA_NAME}] if named and _no_catalog(command) else []
        return pa.Table.from_pylist(rows, _DB_SCHEMAS)
    if kind == "CommandGetTables":
        return _tables(store, command)
    if kind == "CommandGetTableTypes":
        return pa.Table.from_pylist([{"table_type": TABLE_TYPE}], _TABLE_TYPES)
    if kind == "CommandGetSqlInfo":
        return _sql_info(list(command.info), writer)
    raise InvalidRequestError(f"{kind} is not supported by this server")


def _tables(store: Store, command: Message) -> pa.Table:
    schema_ok = not command.HasField("db_schema_filter_pattern") or _matches(
        command.db_schema_filter_pattern, SCHEMA_NAME
    )
    type_ok = not command.table_types or TABLE_TYPE in command.table_types
    names = [
        name
        for name in store.list_datasets()
        if not command.HasField("table_name_filter_pattern") or _matches(command.table_name_filter_pattern, name)
    ]
    if not (schema_ok and type_ok and _no_catalog(command)):
        names = []
    rows = [
        {"catalog_name": None, "db_schema_name": SCHEMA_NAME, "table_name": name, "table_type": TABLE_TYPE}
        for name in names
    ]
    table = pa.Table.from_pylist(rows, _TABLES)
    if command.include_schema:
        schemas = [store.dataset(name).schema.serialize().to_pybytes() for name in names]
        table = table.append_column(_TABLE_SCHEMA, pa.array(schemas, pa.binary()))
    return table


def _no_catalog(command: Message) -> bool:
    """Whether the command's catalog filter admits datasets, which have none (absent, or "")."""
    return not command.HasField("catalog") or command.catalog == ""


def _matches(pattern: str, name: str) -> bool:
    """SQL LIKE's % and _ (the catalog calls' filter patterns), in time
    linear in pattern x name whatever the pattern (a regular expression of
    many .* backtracks exponentially)."""
    star, resume, at, position = -1, 0, 0, 0
    while position < len(name):
        if at < len(pattern) and (pattern[at] == "_" or pattern[at] == name[position]):
            at, position = at + 1, position + 1
        elif at < len(pattern) and pattern[at] == "%":
            star, resume, at = at, position, at + 1
        elif star >= 0:  # let the last % take one more character
            at, resume = star + 1, resume + 1
            position = resume
        else:
            return False
    return all(character == "%" for character in pattern[at:])


def _sql_info(wanted: list[int], writer: bool) -> pa.Table:
    """Server information by SqlInfo number: name, version, Arrow version, read-only (but to
    writers, who may bulk-ingest), SQL, no Substrait, no cancellation, bulk ingestion, no
    ingestion in transactions, the identifier quote."""
    known: list[tuple[int, int, object]] = [  # (info, union member, value)
        (0, 0, "skyhook"),
        (1, 0, skyhook.__version__ if hasattr(skyhook, "__version__") else "0"),
        (2, 0, pa.__version__),
        (3, 1, not writer),
        (4, 1, True),
        (5, 1, False),
        (9, 1, False),
        (10, 1, writer),
        (11, 1, False),
        (504, 0, '"'),
    ]
    chosen = [entry for entry in known if not wanted or entry[0] in wanted]
    children: list[list[object]] = [[] for _ in _SQL_INFO_VALUE]
    offsets = []
    for _, member, value in chosen:
        offsets.append(len(children[member]))
        children[member].append(value)
    values = pa.UnionArray.from_dense(
        pa.array([member for _, member, _ in chosen], pa.int8()),
        pa.array(offsets, pa.int32()),
        [pa.array(items, field.type) for items, field in zip(children, _SQL_INFO_VALUE)],
        [field.name for field in _SQL_INFO_VALUE],
    )
    return pa.Table.from_arrays([pa.array([info for info, _, _ in chosen], pa.uint32()), values], schema=_SQL_INFO)
