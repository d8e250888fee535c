"""An Arrow Flight SQL server over a store (and plain Flight for a dataset's
objects, dataset_flights.py): SQL through DuckDB with the
store's datasets as tables (their filters and projections pushed into
storage, as store.sql does), results streamed as DuckDB produces them,
prepared statements with parameters, and the catalog calls clients make
(tables with their schemas, table types, server information). Read-only.

Tickets are self-contained (the statement's text, or a prepared statement's
handle, in a Flight SQL TicketStatementQuery): nothing of a result is held in
the server between GetFlightInfo and DoGet."""

from __future__ import annotations

import functools
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

import skyhook
from skyhook.errors import InvalidRequestError, LimitExceededError, PermissionDeniedError, SkyhookError, first_line
from skyhook.flight import messages
from skyhook.remote.admin_actions import ACTIONS, run_action
from skyhook.remote.auth import Caller
from skyhook.remote.catalog_tables import metadata_table
from skyhook.remote.dataset_flights import is_objects_ticket, plan_objects, read_objects, request_of
from skyhook.remote.ingest import ingest
from skyhook.remote.metrics import Metrics
from skyhook.sql import check_query, sql_batches, sql_schema
from skyhook.store import Store

LOG = logging.getLogger(__name__)
_QUERY, _PREPARED = b"q", b"p"  # the first byte of a statement handle: its text follows, or a prepared handle


@dataclass(frozen=True)
class Limits:
    #: A query's time from its DoGet to its last row, and a plan's (None: unbounded).
    query_seconds: float | None = 600.0
    #: Queries one user may stream at once.
    queries_per_user: int = 8
    #: DuckDB's memory for the server's queries together (None: its default, 80 % of the machine's).
    query_memory: str | None = "4GB"
    #: Prepared statements one user may hold open.
    prepared_per_user: int = 64
    #: Rows of parameters one prepared statement may be bound to.
    parameter_rows: int = 10_000
    #: Bytes one query may stream to its client (Arrow's in-memory size; None: unbounded).
    result_bytes: int | None = None
    #: How long a query waits for one of its user's slots before it is refused
    #: (a cancelled query gives its slot back only once DuckDB has stopped).
    queue_seconds: float = 10.0


@dataclass
class Prepared:
    user: str | None
    query: str
    #: Rows of bound parameter values (each row runs the statement once).
    parameters: list[list[Any]] = field(default_factory=list)


def _flight_error(error: Exception, where: str) -> flight.FlightError:
    """error as a Flight error of one line: the request's own (bad SQL, an
    unknown table, a permission) as it is, anything else as an internal error
    whose details stay in the server's log (a Python exception would send its
    traceback to the client)."""
    if isinstance(error, flight.FlightError):
        return error
    kind = type(error).__name__.encode()  # the client raises the same SkyhookError (flight/client.py)
    if isinstance(error, PermissionDeniedError):
        return flight.FlightUnauthorizedError(first_line(error), kind)
    if isinstance(error, SkyhookError):
        return flight.FlightServerError(first_line(error), kind)
    LOG.error("Flight SQL %s failed", where, exc_info=error)
    return flight.FlightInternalError(f"internal error ({type(error).__name__}); see the server's log")


def _answers(method: Callable[..., Any]) -> Callable[..., Any]:
    """A call's errors as Flight errors (_flight_error), and the call counted in the metrics."""

    @functools.wraps(method)
    def wrapped(server: FlightSqlServer, context: flight.ServerCallContext, *arguments: Any) -> Any:
        started, failure = time.monotonic(), None
        try:
            return method(server, context, *arguments)
        except Exception as error:
            failure = type(error).__name__
            raise _flight_error(error, method.__name__) from None
        finally:
            server.metrics.called(method.__name__, _user(context), time.monotonic() - started, failure)

    return wrapped


class FlightSqlServer(flight.FlightServerBase):
    def __init__(
        self,
        store: Store,
        location: str,
        tls_certificates: list[tuple[bytes, bytes]] | None = None,
        auth: tuple[flight.ServerAuthHandler, flight.ServerMiddlewareFactory] | None = None,
        limits: Limits = Limits(),
        compression: str | None = None,
    ) -> None:
        """auth: the handshake's handler and the middleware that checks every call (remote.auth);
        compression: the codec of the record batches streamed ("zstd", "lz4"; None: none)."""
        handler, middleware = auth if auth is not None else (None, None)
        super().__init__(
            location,
            auth_handler=handler,
            tls_certificates=tls_certificates or [],
            middleware={"auth": middleware} if middleware is not None else None,
        )
        self.store = store
        #: The stores users are mapped to (by URI), opened on first use.
        self.stores: dict[str, Store] = {}
        self.limits = limits
        #: Queries streaming, per user (None: without authentication).
        self.running: dict[str | None, int] = {}
        self.prepared: dict[bytes, Prepared] = {}
        self.lock = threading.Lock()
        self.slot_freed = threading.Condition(self.lock)
        self.metrics = Metrics()
        try:
            self.stream_options = pa.ipc.IpcWriteOptions(compression=compression)
        except (ValueError, pa.ArrowException) as error:
            raise InvalidRequestError(f"compression is zstd, lz4 or none: {first_line(error)}") from None

    # GetFlightInfo / GetSchema: what a command returns, and the ticket that reads it.

    @_answers
    def get_flight_info(
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor
    ) -> flight.FlightInfo:
        objects = request_of(descriptor)
        if objects is not None:  # plain Flight: an endpoint per group of objects
            schema, tickets = plan_objects(self.store_of(context), objects)
        else:
            schema, ticket = self._plan(context, descriptor)
            tickets = [ticket]
        endpoints = [flight.FlightEndpoint(flight.Ticket(ticket), []) for ticket in tickets]
        return flight.FlightInfo(schema, descriptor, endpoints, -1, -1)

    @_answers
    def get_schema(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor) -> flight.SchemaResult:
        objects = request_of(descriptor)
        return flight.SchemaResult(
            plan_objects(self.store_of(context), objects)[0] if objects else self._plan(context, descriptor)[0]
        )

    def _plan(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor) -> tuple[pa.Schema, bytes]:
        command = messages.unpack(descriptor.command)
        kind = messages.name_of(command)
        if kind == "CommandStatementQuery":
            check_query(command.query)
            handle = _QUERY + command.query.encode()
            return self._schema(context, command.query, None), messages.pack(
                messages.make("TicketStatementQuery", statement_handle=handle)
            )
        if kind == "CommandPreparedStatementQuery":
            prepared = self._prepared(context, command.prepared_statement_handle)
            handle = _PREPARED + command.prepared_statement_handle
            schema = self._schema(context, prepared.query, prepared.parameters[0] if prepared.parameters else None)
            return schema, messages.pack(messages.make("TicketStatementQuery", statement_handle=handle))
        if kind.startswith("CommandGet"):
            return metadata_table(self.store_of(context), command).schema, descriptor.command
        if kind in ("CommandStatementUpdate", "CommandPreparedStatementUpdate"):
            raise InvalidRequestError("this server is read-only: no updates")
        raise InvalidRequestError(f"{kind} is not a query")

    # DoGet: the rows, streamed.

    @_answers
    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> flight.FlightDataStream:
        schema, rows = self._rows(context, ticket.ticket)
        return flight.GeneratorStream(schema, self._streamed(_user(context), schema, rows), self.stream_options)

    def _rows(
        self, context: flight.ServerCallContext, ticket: bytes
    ) -> tuple[pa.Schema, Callable[[], Iterator[pa.RecordBatch]]]:
        """(the rows' schema, what opens them): nothing is held until they are opened."""
        store = self.store_of(context)
        if is_objects_ticket(ticket):
            schema, batches = read_objects(store, ticket)
            return schema, lambda: batches
        command = messages.unpack(ticket)
        if messages.name_of(command) != "TicketStatementQuery":
            table = metadata_table(store, command, _role(context) == "writer")
            return table.schema, lambda: iter(table.to_batches())
        handle, seconds = command.statement_handle, self.limits.query_seconds
        if handle[:1] == _QUERY:
            try:
                query = handle[1:].decode()
            except UnicodeDecodeError:
                raise InvalidRequestError("a statement handle that is not UTF-8") from None
            check_query(query)  # a ticket is the client's to send: vetted again
            runs: list[list[Any] | None] = [None]
        elif handle[:1] == _PREPARED:
            prepared = self._prepared(context, handle[1:])
            query, runs = prepared.query, list(prepared.parameters) or [None]
        else:
            raise InvalidRequestError("an unknown statement handle")
        schema = self._schema(context, query, runs[0])
        return schema, lambda: _runs(store, query, runs, seconds, self.limits.query_memory, context.is_cancelled)

    def _schema(self, context: flight.ServerCallContext, query: str, parameters: list[Any] | None) -> pa.Schema:
        return sql_schema(
            self.store_of(context), query, parameters, self.limits.query_seconds, self.limits.query_memory
        )

    def _begin(self, user: str | None) -> None:
        limit = self.limits.queries_per_user
        with self.slot_freed:
            if not self.slot_freed.wait_for(lambda: self.running.get(user, 0) < limit, self.limits.queue_seconds):
                who = f"user {user!r}" if user else "this server's clients"
                raise LimitExceededError(f"{who} already run {limit} queries (the limit); try again when one ends")
            self.running[user] = self.running.get(user, 0) + 1

    def _end(self, user: str | None) -> None:
        with self.slot_freed:
            self.running[user] -= 1
            self.slot_freed.notify_all()

    def _streamed(
        self, user: str | None, schema: pa.Schema, rows: Callable[[], Iterator[pa.RecordBatch]]
    ) -> Iterator[pa.RecordBatch]:
        """The rows in schema, read as the client reads: the user's slot and
        the rows are taken at the first batch (a stream abandoned before it
        holds nothing) and given back when they end, fail or the client goes;
        errors are one-line Flight errors."""
        try:
            self._begin(user)
        except SkyhookError as error:
            raise _flight_error(error, "stream") from None
        batches, sent, limit = None, 0, self.limits.result_bytes
        try:
            batches = rows()
            for batch in batches:
                sent += batch.nbytes
                if limit is not None and sent > limit:
                    raise LimitExceededError(
                        f"the result passed {limit} bytes (the server's limit per query): "
                        "select fewer rows or columns, or aggregate"
                    )
                self.metrics.streamed(batch.num_rows, batch.nbytes)
                yield batch if batch.schema == schema else _conformed(batch, schema)
        except Exception as error:  # GeneratorExit (the client went) is not one: it passes
            raise _flight_error(error, "stream") from None
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()
            self._end(user)

    # Prepared statements: DoAction creates and closes them, DoPut binds their parameters.

    @_answers
    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[flight.Result]:
        body = action.body.to_pybytes() if action.body is not None else b""
        if action.type == "CreatePreparedStatement":
            request = messages.unpack_as(body, "ActionCreatePreparedStatementRequest")
            check_query(request.query)
            schema = self._schema(context, request.query, None).serialize().to_pybytes()
            handle, user = secrets.token_bytes(16), _user(context)
            with self.lock:
                held = sum(1 for prepared in self.prepared.values() if prepared.user == user)
                if held >= self.limits.prepared_per_user:
                    raise LimitExceededError(
                        f"{held} prepared statements are open (the limit): close some (ClosePreparedStatement)"
                    )
                self.prepared[handle] = Prepared(user, request.query)
            result = messages.make(
                "ActionCreatePreparedStatementResult", prepared_statement_handle=handle, dataset_schema=schema
            )
            return iter([flight.Result(messages.pack(result))])
        if action.type == "ClosePreparedStatement":
            request = messages.unpack_as(body, "ActionClosePreparedStatementRequest")
            self._prepared(context, request.prepared_statement_handle)
            with self.lock:
                self.prepared.pop(request.prepared_statement_handle, None)
            return iter([])
        if action.type == "skyhook.metrics":
            return iter([flight.Result(json.dumps(self.metrics.report()).encode())])
        return iter([flight.Result(run_action(self.store_of(context), action.type, body, _role(context)))])

    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return [
            ("CreatePreparedStatement", "Prepare a SQL statement (Flight SQL)."),
            ("ClosePreparedStatement", "Close a prepared statement (Flight SQL)."),
            *ACTIONS.items(),
            ("skyhook.metrics", "Calls, errors and latencies per call, rows and bytes streamed."),
        ]

    @_answers
    def do_put(
        self,
        context: flight.ServerCallContext,
        descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader,
        writer: flight.FlightMetadataWriter,
    ) -> None:
        command = messages.unpack(descriptor.command)
        if messages.name_of(command) == "CommandStatementIngest":
            if _role(context) != "writer":
                raise PermissionDeniedError("loading data needs a user of the writer role")
            rows = ingest(self.store_of(context), command, reader, context.is_cancelled)
            writer.write(pa.py_buffer(messages.make("DoPutUpdateResult", record_count=rows).SerializeToString()))
            return
        if messages.name_of(command) != "CommandPreparedStatementQuery":
            raise InvalidRequestError("DoPut binds a prepared statement's parameters or loads data, nothing else")
        prepared = self._prepared(context, command.prepared_statement_handle)
        rows: list[list[Any]] = []
        for chunk in reader:
            if chunk.data is None:
                continue
            if len(rows) + chunk.data.num_rows > self.limits.parameter_rows:
                raise LimitExceededError(f"more than {self.limits.parameter_rows} rows of parameters")
            rows += [list(row.values()) for row in chunk.data.to_pylist()]
        prepared.parameters = rows

    def shutdown(self) -> None:
        super().shutdown()
        with self.lock:
            for store in self.stores.values():
                store.close()
            self.stores.clear()

    def store_of(self, context: flight.ServerCallContext) -> Store:
        """The caller's store: the one its user is mapped to (a namespace of its
        own, its own storage identity), else the server's."""
        caller = context.get_middleware("auth")
        uri = caller.store if isinstance(caller, Caller) else None
        if uri is None:
            return self.store
        with self.lock:
            opened = self.stores.get(uri)
        if opened is None:  # connecting may take long: not under the lock every call takes
            opened = skyhook.connect(uri, create=False)
            with self.lock:
                opened, extra = self.stores.setdefault(uri, opened), opened
            if extra is not opened:
                extra.close()
        return opened

    def _prepared(self, context: flight.ServerCallContext, handle: bytes) -> Prepared:
        with self.lock:
            prepared = self.prepared.get(handle)
        if prepared is None or prepared.user != _user(context):
            raise InvalidRequestError("no such prepared statement (closed, or another user's)")
        return prepared


def _user(context: flight.ServerCallContext) -> str | None:
    caller = context.get_middleware("auth")
    return caller.user if isinstance(caller, Caller) else None


def _role(context: flight.ServerCallContext) -> str:
    """The caller's role; without authentication, a reader."""
    caller = context.get_middleware("auth")
    return caller.role if isinstance(caller, Caller) else "reader"


def _runs(
    store: Store,
    query: str,
    runs: list[list[Any] | None],
    seconds: float | None,
    memory: str | None,
    cancelled: Callable[[], bool],
) -> Iterator[pa.RecordBatch]:
    """The statement's batches for each row of bound parameters, one run after
    another, all within one time limit, stopped when the client goes."""
    deadline = None if seconds is None else time.monotonic() + seconds
    for parameters in runs:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
        reader = sql_batches(store, query, parameters, left, memory, cancelled)
        try:
            yield from reader
        finally:
            reader.close()


def _conformed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """batch in the schema the stream declared (a later run's parameters may type a column otherwise)."""
    try:
        return pa.Table.from_batches([batch]).cast(schema).combine_chunks().to_batches()[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise InvalidRequestError(
            f"a run of the statement returned {batch.schema}, not the declared {schema}"
        ) from None
