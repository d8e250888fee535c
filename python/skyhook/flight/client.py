"""A store served by ``skyhook serve``, used as a local one:
``skyhook.connect("grpc://host:31337", user="alice", password=...)`` gives a
RemoteStore whose datasets scan through the server's plain Flight endpoints
(one per group of objects, fetched in parallel; filters and columns still run
in storage), whose ``sql`` runs on the server through Flight SQL, and whose
writes load through Flight SQL bulk ingestion (one commit each).

The server's errors arrive as the SkyhookError they were there."""

from __future__ import annotations

import base64
import concurrent.futures
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

from skyhook import errors
from skyhook.errors import InvalidRequestError, PermissionDeniedError, SkyhookError, StorageError
from skyhook.flight import messages

SCHEMES = ("grpc", "grpc+tcp", "grpc+tls")
#: The environment variable a password is read from when connect() is given none.
PASSWORD_VARIABLE = "SKYHOOK_PASSWORD"
# CommandStatementIngest.TableDefinitionOptions: (if_not_exist, if_exists) per write mode.
_INGEST_MODES = {"create": (1, 1), "overwrite": (1, 3), "append": (2, 2)}


def remote_error(error: Exception) -> SkyhookError:
    """A Flight error as the SkyhookError the server raised (it names the class
    in the error's extra information), with the server's one-line message."""
    message = str(error).split(". Detail:")[0].split(". gRPC client debug context:")[0]
    named = getattr(errors, (getattr(error, "extra_info", None) or b"").decode(errors="replace"), None)
    if isinstance(named, type) and issubclass(named, SkyhookError):
        return named(message)
    if isinstance(error, (flight.FlightUnauthenticatedError, flight.FlightUnauthorizedError)):
        return PermissionDeniedError(message)
    if isinstance(error, flight.FlightTimedOutError):
        return errors.StorageTimeoutError(message)
    if isinstance(error, flight.FlightUnavailableError):
        return StorageError(f"the server cannot be reached: {message}")
    return SkyhookError(message)


class RemoteStore:
    """The datasets of a store behind ``skyhook serve``."""

    def __init__(self, uri: str, user: str | None = None, password: str | None = None) -> None:
        parsed = urlparse(uri)
        options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
        if parsed.scheme not in SCHEMES or not parsed.hostname or set(options) - {"user", "ca"}:
            raise InvalidRequestError(
                f"invalid server URI {uri!r}: expected grpc[+tls]://HOST:PORT[?user=NAME][&ca=/path/ca.pem]"
            )
        self.uri = uri
        user = user or options.get("user")
        password = password if password is not None else os.environ.get(PASSWORD_VARIABLE)
        location = parsed._replace(query="").geturl()
        try:
            certificates = Path(options["ca"]).read_bytes() if "ca" in options else None
        except OSError as error:
            raise InvalidRequestError(f"cannot read the CA certificate {options['ca']!r}: {error.strerror}") from None
        try:
            self.client = flight.connect(location, tls_root_certs=certificates)
            headers = [] if user is None else [self.client.authenticate_basic_token(user, password or "")]
        except (flight.FlightUnauthenticatedError, flight.FlightUnauthorizedError) as error:
            raise remote_error(error) from None
        except pa.ArrowException as error:  # no server, or TLS that does not verify
            raise StorageError(f"cannot connect to {location}: {remote_error(error)}") from None
        self.options = flight.FlightCallOptions(headers=headers)

    def __enter__(self) -> RemoteStore:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteStore({self.uri!r})"

    def close(self) -> None:
        self.client.close()

    def list_datasets(self) -> list[str]:
        return [entry["name"] for entry in self.action("skyhook.list")]

    def dataset(self, name: str) -> RemoteDataset:
        return RemoteDataset(self, name)

    def describe(self, name: str) -> dict[str, Any]:
        """A dataset's summary, schema, objects and designs (as ``skyhook describe``)."""
        return self.action("skyhook.describe", {"dataset": name})

    def fsck(self, repair: bool = False) -> dict[str, Any]:
        """The server's check of the store (a repair needs a writer)."""
        return self.action("skyhook.fsck", {"repair": repair})

    def sql(self, query: str) -> pa.Table:
        """query run by the server (DuckDB over the datasets, in storage where it can)."""
        command = messages.pack(messages.make("CommandStatementQuery", query=query))
        return self.read(flight.FlightDescriptor.for_command(command))

    def write_dataset(self, name: str, data: Any, mode: str = "create") -> RemoteDataset:
        """Loads data (a table, batches or a reader) as dataset name in one commit;
        mode "create", "overwrite" or "append"."""
        if mode not in _INGEST_MODES:
            raise InvalidRequestError(f"mode is one of {', '.join(_INGEST_MODES)}, not {mode!r}")
        reader = _reader_of(data)
        if_not_exist, if_exists = _INGEST_MODES[mode]
        options = messages.make("TableDefinitionOptions", if_not_exist=if_not_exist, if_exists=if_exists)
        command = messages.make("CommandStatementIngest", table=name, table_definition_options=options)
        descriptor = flight.FlightDescriptor.for_command(messages.pack(command))
        try:
            writer, _ = self.client.do_put(descriptor, reader.schema, self.options)
            with writer:
                for batch in reader:
                    writer.write_batch(batch)
        except flight.FlightError as error:
            raise remote_error(error) from None
        return self.dataset(name)

    def action(self, kind: str, arguments: dict[str, Any] | None = None) -> Any:
        body = json.dumps(arguments or {}).encode()
        try:
            (result,) = list(self.client.do_action(flight.Action(kind, body), self.options))
        except flight.FlightError as error:
            raise remote_error(error) from None
        return json.loads(result.body.to_pybytes())

    def read(self, descriptor: flight.FlightDescriptor) -> pa.Table:
        """Every endpoint of descriptor's flight, fetched at once, in endpoint order."""
        try:
            info = self.client.get_flight_info(descriptor, self.options)
            with concurrent.futures.ThreadPoolExecutor(max(1, min(8, len(info.endpoints)))) as pool:
                fetched = list(pool.map(self._fetch, info.endpoints))
        except flight.FlightError as error:
            raise remote_error(error) from None
        return pa.Table.from_batches([batch for batches in fetched for batch in batches], info.schema)

    def batches(self, descriptor: flight.FlightDescriptor) -> Iterator[pa.RecordBatch]:
        """descriptor's rows as they arrive, one endpoint after another."""
        try:
            info = self.client.get_flight_info(descriptor, self.options)
            for endpoint in info.endpoints:
                for chunk in self.client.do_get(endpoint.ticket, self.options):
                    yield chunk.data
        except flight.FlightError as error:
            raise remote_error(error) from None

    def schema(self, descriptor: flight.FlightDescriptor) -> pa.Schema:
        try:  # GetFlightInfo: pyarrow's GetSchema loses the server's error
            return self.client.get_flight_info(descriptor, self.options).schema
        except flight.FlightError as error:
            raise remote_error(error) from None

    def _fetch(self, endpoint: flight.FlightEndpoint) -> list[pa.RecordBatch]:
        """An endpoint's batches (read_all would drop the rows of batches without columns)."""
        return [chunk.data for chunk in self.client.do_get(endpoint.ticket, self.options)]


class RemoteDataset:
    """A served dataset: its rows with columns and a filter, read from the
    server's endpoints (the filter and projection run in storage there). A
    filter is text (the ``--where`` grammar) or a pyarrow expression."""

    def __init__(self, store: RemoteStore, name: str, filter: pc.Expression | str | None = None) -> None:
        self.store, self.name, self.dataset_filter = store, name, filter
        self.schema = store.schema(flight.FlightDescriptor.for_path(name))

    def __repr__(self) -> str:
        return f"RemoteDataset({self.name!r} at {self.store.uri!r})"

    def filter(self, expression: pc.Expression | str) -> RemoteDataset:
        """This dataset's rows that also pass expression."""
        return RemoteDataset(self.store, self.name, self._combined(expression))

    def to_table(self, columns: list[str] | None = None, filter: pc.Expression | str | None = None) -> pa.Table:
        return self.store.read(self._descriptor(columns, filter))

    def to_batches(
        self, columns: list[str] | None = None, filter: pc.Expression | str | None = None
    ) -> Iterator[pa.RecordBatch]:
        return self.store.batches(self._descriptor(columns, filter))

    def to_reader(
        self, columns: list[str] | None = None, filter: pc.Expression | str | None = None
    ) -> pa.RecordBatchReader:
        descriptor = self._descriptor(columns, filter)
        return pa.RecordBatchReader.from_batches(self.store.schema(descriptor), self.store.batches(descriptor))

    def count_rows(self, filter: pc.Expression | str | None = None) -> int:
        return sum(batch.num_rows for batch in self.to_batches(columns=[], filter=filter))

    def head(
        self, num_rows: int, columns: list[str] | None = None, filter: pc.Expression | str | None = None
    ) -> pa.Table:
        reader = self.to_reader(columns, filter)
        taken, rows = [], 0
        for batch in reader:
            taken.append(batch.slice(0, num_rows - rows))
            rows += taken[-1].num_rows
            if rows >= num_rows:
                break
        reader.close()
        return pa.Table.from_batches(taken, reader.schema)

    def append(self, data: Any) -> RemoteDataset:
        """data's rows added in one commit."""
        return self.store.write_dataset(self.name, data, mode="append")

    def _combined(self, filter: pc.Expression | str | None) -> pc.Expression | str | None:
        if filter is None or self.dataset_filter is None:
            return filter if filter is not None else self.dataset_filter
        if isinstance(filter, str) and isinstance(self.dataset_filter, str):
            return f"({self.dataset_filter}) and ({filter})"
        raise InvalidRequestError("a remote dataset combines text filters with text, expressions with expressions")

    def _descriptor(self, columns: list[str] | None, filter: pc.Expression | str | None) -> flight.FlightDescriptor:
        request: dict[str, Any] = {"dataset": self.name, "columns": columns}
        combined = self._combined(filter)
        if isinstance(combined, str):
            request["filter"] = combined
        elif isinstance(combined, pc.Expression):
            request["expression"] = base64.b64encode(combined.__reduce__()[1][0]).decode()  # Arrow's serialization
        elif combined is not None:
            raise InvalidRequestError(f"a filter is text or a pyarrow expression, not {type(combined).__name__}")
        return flight.FlightDescriptor.for_command(json.dumps(request))


def _reader_of(data: Any) -> pa.RecordBatchReader:
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]).to_reader()
    raise InvalidRequestError(f"a remote write takes a table, a record batch or a reader, not {type(data).__name__}")
