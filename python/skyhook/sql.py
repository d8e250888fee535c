"""SQL over a store's datasets, run by DuckDB: each dataset a query names is
registered as a table of that name (an Arrow dataset, so the filters and
projections DuckDB pushes into its scans run in storage as for any scan).
Nothing else: no files, no extensions."""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa
import pyarrow.dataset as pads

from skyhook.errors import DatasetNotFoundError, InvalidRequestError, SkyhookError, first_line


class Datasets(Protocol):
    """What a query needs of a store (skyhook.Store)."""

    uri: str

    def list_datasets(self) -> list[str]: ...

    def dataset(self, name: str) -> pads.Dataset: ...


def run_sql(store: Datasets, query: str) -> pa.Table:
    """The result of query, with the store's datasets as its tables; a query
    that is not valid SQL, or names a table the store lacks, raises
    InvalidRequestError; one that fails while it runs raises the skyhook error
    of that failure (or a SkyhookError with DuckDB's message)."""
    if not isinstance(query, str):
        raise InvalidRequestError(f"a SQL query is text, not {type(query).__name__}")
    try:
        import duckdb
    except ImportError:
        raise SkyhookError("SQL runs on DuckDB: pip install 'skyhook[sql]' (duckdb)") from None
    # DuckDB's errors about the query itself (reading files included); others happened while it ran.
    query_errors = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException, duckdb.PermissionException)
    # Only the store's datasets: no files, no extensions.
    with duckdb.connect(config={"enable_external_access": False}) as connection:
        try:
            names = duckdb.get_table_names(query)
        except duckdb.Error as error:
            raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None
        datasets = set(store.list_datasets())
        for name in sorted(names & datasets):
            connection.register(name, store.dataset(name))
        try:
            result = connection.sql(query)
            return result.to_arrow_table() if result is not None else pa.table({})  # None: a statement
        except query_errors as error:
            missing = sorted(names - datasets)
            if isinstance(error, duckdb.CatalogException) and missing:
                raise DatasetNotFoundError(f"no dataset named {missing[0]!r} in {store.uri}") from None
            raise InvalidRequestError(f"invalid SQL: {first_line(error)}") from None
        except duckdb.Error as error:
            cause = error.__cause__ or error.__context__
            if isinstance(cause, SkyhookError):
                raise cause from None
            raise SkyhookError(f"SQL: {first_line(error)}") from None
