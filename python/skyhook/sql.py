"""SQL over a store's datasets, run by DuckDB: each dataset a query names is
registered as a table of that name (an Arrow dataset, so the filters and
projections DuckDB pushes into its scans run in storage as for any scan).
Nothing else: no files, no extensions. Results come whole (run_sql) or as a
stream of record batches read as DuckDB produces them (sql_batches)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
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
    store: Datasets,
    query: str,
    parameters: Sequence[Any] | None = None,
    timeout_seconds: float | None = None,
    memory_limit: str | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> pa.RecordBatchReader:
    """The result of query (as run_sql) as a stream: DuckDB runs as it is read,
    and its connection closes when the stream ends or is closed. Past
    timeout_seconds, DuckDB is interrupted and reading raises LimitExceededError;
    memory_limit bounds DuckDB's memory for the queries of this limit together
    ("4GB"; None: DuckDB's default); once cancelled() says so (its reader went
    away), DuckDB is interrupted too."""
    connection, translate, close = _connected(store, query, timeout_seconds, memory_limit, cancelled)
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
    """InvalidRequestError unless query is one SELECT statement: what a
    read-only server runs (an EXPLAIN ANALYZE would run any statement)."""
    import duckdb

    kinds = _statement_kinds(query)
    if kinds != [duckdb.StatementType.SELECT]:
        named = ", ".join(kind.name for kind in kinds) or "no statement"
        raise InvalidRequestError(f"read-only: one SELECT statement is served, not {named}")


def _statement_kinds(query: str) -> list[Any]:
    """The kind of each of query's statements (InvalidRequestError if it does not parse)."""
    import duckdb

    try:
        return [statement.type for statement in duckdb.extract_statements(query)]
    except duckdb.Error as error:
        raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None


def sql_schema(
    store: Datasets,
    query: str,
    parameters: Sequence[Any] | None = None,
    timeout_seconds: float | None = None,
    memory_limit: str | None = None,
) -> pa.Schema:
    """The schema of query's result without reading its rows: the types of it
    under LIMIT 0, the names of its own columns (a subquery would rename
    repeated ones). Placeholders without parameters plan as NULLs."""
    if parameters is None:
        query = without_placeholders(query)
    connection, translate, close = _connected(store, query, timeout_seconds, memory_limit)
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


def without_placeholders(query: str) -> str:
    """query with NULL for its parameter placeholders: DuckDB names a query's
    tables only from a statement it can bind."""
    return _PLACEHOLDER.sub(lambda match: "NULL" if match.group()[0] in "?$" else match.group(), query)


class _Watch(threading.Thread):
    """Interrupts a DuckDB connection past its deadline or once its caller is cancelled."""

    def __init__(self, connection: Any, seconds: float | None, cancelled: Callable[[], bool] | None) -> None:
        super().__init__(daemon=True)
        self.connection, self.cancelled = connection, cancelled
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.stopped = threading.Event()
        self.reason: str | None = None

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.reason = "time"
            elif self.cancelled is not None and self.cancelled():
                self.reason = "cancelled"
            if self.reason is not None:
                self.connection.interrupt()
                return

    def stop(self) -> None:
        """Stops watching, and waits until the watcher has: after this it
        neither interrupts the connection (about to be closed) nor asks the
        caller's cancellation (whose call may be over)."""
        self.stopped.set()
        if self.is_alive() and self is not threading.current_thread():
            self.join()


#: DuckDB databases of this process, by memory limit: opening one takes tens of
#: milliseconds, a cursor on one (a connection of its own) microseconds.
_databases: dict[tuple[int, str | None], Any] = {}
_databases_lock = threading.Lock()


def _cursor(query: str, memory_limit: str | None) -> Any:
    """A DuckDB connection for query: a cursor on the process's database of
    memory_limit (its queries share the limit) when query only reads (what it
    registers and how it is interrupted are the cursor's own); a database of
    its own for a query that could create anything another would see."""
    import duckdb

    if any(kind != duckdb.StatementType.SELECT for kind in _statement_kinds(query)):
        return _new_database(memory_limit)
    key = (os.getpid(), memory_limit)  # a forked child opens its own
    with _databases_lock:
        if key not in _databases:
            _databases[key] = _new_database(memory_limit)
        return _databases[key].cursor()


def _new_database(memory_limit: str | None) -> Any:
    """Only the store's datasets (no files, no extensions); limits a query cannot SET away."""
    import duckdb

    config: dict[str, Any] = {"enable_external_access": False, "lock_configuration": True}
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    try:
        return duckdb.connect(config=config)
    except duckdb.Error as error:
        raise InvalidRequestError(f"DuckDB's memory limit {memory_limit!r}: {first_line(error)}") from None


def _connected(
    store: Datasets,
    query: str,
    timeout_seconds: float | None = None,
    memory_limit: str | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> tuple[Any, Any, Any]:
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
        names = duckdb.get_table_names(without_placeholders(query))
    except duckdb.Error as error:
        raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None
    datasets = set(store.list_datasets())
    folded = {name.lower(): name for name in sorted(datasets, reverse=True)}
    # SQL names are case-insensitive: each name the query uses, the dataset it means.
    meant = {name: name if name in datasets else folded.get(name.lower()) for name in names}
    connection = _cursor(query, memory_limit)
    for name, dataset in sorted(meant.items()):
        if dataset is not None:
            connection.register(name, store.dataset(dataset))
    watch = None
    if timeout_seconds is not None or cancelled is not None:
        watch = _Watch(connection, timeout_seconds, cancelled)
        watch.start()

    class Translated:
        def __enter__(self) -> None:
            return None

        def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> bool:
            if error is None or not isinstance(error, duckdb.Error):
                return False
            if isinstance(error, duckdb.InterruptException) and watch is not None and watch.reason == "time":
                raise LimitExceededError(f"the query ran past its time limit of {timeout_seconds:.3g} s") from None
            if isinstance(error, duckdb.InterruptException) and watch is not None and watch.reason == "cancelled":
                raise SkyhookError("the query was cancelled by its client") from None
            if isinstance(error, query_errors):
                missing = sorted(name for name, dataset in meant.items() if dataset is None)
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
        if watch is not None:
            watch.stop()
        connection.close()

    return connection, Translated, close
