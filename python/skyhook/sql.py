"""SQL over a store's datasets, run by DuckDB: each dataset a query names is
registered as a table of that name (an Arrow dataset, so the filters and
projections DuckDB pushes into its scans run in storage as for any scan).
Nothing else: no files, no extensions. Results come whole (run_sql) or as a
stream of record batches read as DuckDB produces them (sql_batches)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.dataset as pads

from skyhook.errors import DatasetNotFoundError, InvalidRequestError, LimitExceededError, SkyhookError, first_line

#: Rows per batch of a streamed result.
BATCH_ROWS = 64 * 1024


class Datasets(Protocol):
    """What a query needs of a store (skyhook.Store)."""

    uri: str

    def list_datasets(self) -> list[str]: ...

    def dataset(self, name: str) -> pads.Dataset: ...


def run_sql(store: Datasets, query: str, parameters: Sequence[Any] | None = None) -> pa.Table:
    """The result of query, with the store's datasets as its tables; a query
    that is not valid SQL, or names a table the store lacks, raises
    InvalidRequestError; one that fails while it runs raises the skyhook error
    of that failure (or a SkyhookError with DuckDB's message). parameters:
    the values of the query's ? placeholders."""
    return sql_batches(store, query, parameters).read_all()


def sql_batches(
    store: Datasets, query: str, parameters: Sequence[Any] | None = None, timeout_seconds: float | None = None
) -> pa.RecordBatchReader:
    """The result of query (as run_sql) as a stream: DuckDB runs as it is read,
    and its connection closes when the stream ends or is closed. Past
    timeout_seconds, DuckDB is interrupted and reading raises LimitExceededError."""
    connection, translate, close = _connected(store, query, timeout_seconds)
    try:
        with translate():
            relation = connection.sql(query, params=list(parameters) if parameters else None)
            reader = None if relation is None else relation.to_arrow_reader(BATCH_ROWS)
    except BaseException:
        close()
        raise
    if reader is None:  # a statement without a result
        close()
        return pa.RecordBatchReader.from_batches(pa.schema([]), [])

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            while True:
                with translate():
                    try:
                        batch = reader.read_next_batch()
                    except StopIteration:
                        return
                yield batch
        finally:
            close()

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def check_query(query: str) -> None:
    """InvalidRequestError unless query is one statement that only reads (a
    SELECT, or EXPLAIN of one): what a read-only server runs."""
    import duckdb

    try:
        kinds = [statement.type for statement in duckdb.extract_statements(query)]
    except duckdb.Error as error:
        raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None
    reading = (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN)
    if len(kinds) != 1 or kinds[0] not in reading:
        named = ", ".join(kind.name for kind in kinds) or "no statement"
        raise InvalidRequestError(f"read-only: one SELECT (or EXPLAIN) statement is served, not {named}")


def sql_schema(store: Datasets, query: str, parameters: Sequence[Any] | None = None) -> pa.Schema:
    """The schema of query's result without reading its rows: the types of it
    under LIMIT 0, the names of its own columns (a subquery would rename
    repeated ones)."""
    connection, translate, close = _connected(store, query)
    try:
        with translate():
            relation = connection.sql(query, params=list(parameters) if parameters else None)
            if relation is None:
                return pa.schema([])
            typed = relation.limit(0).to_arrow_reader(BATCH_ROWS).schema
            return pa.schema([field.with_name(name) for field, name in zip(typed, relation.columns)])
    finally:
        close()


# A quoted string or name (kept), or a parameter placeholder (? or $1).
_PLACEHOLDER = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|\?|\$\d+""")


def _without_placeholders(query: str) -> str:
    """query with NULL for its parameter placeholders: DuckDB names a query's
    tables only from a statement it can bind."""
    return _PLACEHOLDER.sub(lambda match: "NULL" if match.group()[0] in "?$" else match.group(), query)


def _connected(store: Datasets, query: str, timeout_seconds: float | None = None) -> tuple[Any, Any, Any]:
    """(a DuckDB connection with the datasets query names registered, a context
    that turns DuckDB's errors into skyhook's, what closes it); past
    timeout_seconds the connection is interrupted (and its error says why)."""
    if not isinstance(query, str):
        raise InvalidRequestError(f"a SQL query is text, not {type(query).__name__}")
    try:
        import duckdb
    except ImportError:
        raise SkyhookError("SQL runs on DuckDB: pip install 'skyhook[sql]' (duckdb)") from None
    # DuckDB's errors about the query itself (reading files included); others happened while it ran.
    query_errors = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException, duckdb.PermissionException)
    try:
        names = duckdb.get_table_names(_without_placeholders(query))
    except duckdb.Error as error:
        raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None
    datasets = set(store.list_datasets())
    # Only the store's datasets: no files, no extensions.
    connection = duckdb.connect(config={"enable_external_access": False})
    for name in sorted(names & datasets):
        connection.register(name, store.dataset(name))
    timer = None
    if timeout_seconds is not None:
        timer = threading.Timer(timeout_seconds, connection.interrupt)
        timer.daemon = True
        timer.start()

    class Translated:
        def __enter__(self) -> None:
            return None

        def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> bool:
            if error is None or not isinstance(error, duckdb.Error):
                return False
            if isinstance(error, duckdb.InterruptException) and timer is not None and timer.finished.is_set():
                raise LimitExceededError(f"the query ran past its time limit of {timeout_seconds:g} s") from None
            if isinstance(error, query_errors):
                missing = sorted(names - datasets)
                if isinstance(error, duckdb.CatalogException) and missing:
                    raise DatasetNotFoundError(f"no dataset named {missing[0]!r} in {store.uri}") from None
                raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None
            if isinstance(error, duckdb.InvalidInputException):
                raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None
            cause = error.__cause__ or error.__context__
            if isinstance(cause, SkyhookError):
                raise cause from None
            raise SkyhookError(f"SQL: {first_line(error)}") from None

    def close() -> None:
        if timer is not None:
            timer.cancel()
        connection.close()

    return connection, Translated, close
