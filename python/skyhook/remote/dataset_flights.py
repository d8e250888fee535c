"""Plain Arrow Flight for a dataset, for clients that speak Flight but not SQL
(pyarrow.flight): a descriptor names the dataset (a path, or a JSON command
with columns, a text filter and how many endpoints), GetFlightInfo answers
with one endpoint per group of the objects the filter does not rule out, and
each endpoint's DoGet scans its objects (filter and columns in storage, as
any scan), so a client reads the groups in parallel.

A ticket names the dataset's generation: a dataset replaced since reads as
an error, never as other rows."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

from skyhook.catalog.pruning import matching_partitions
from skyhook.dataset import reopen_dataset
from skyhook.errors import InvalidRequestError
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.scan_execution import ScanExecution
from skyhook.execution.scan_plan import plan_scan
from skyhook.plan.expression_tree import deserialized
from skyhook.plan.where import parse_where
from skyhook.store import Store

#: Endpoints a request gets unless it asks for a number: one per 4 of the
#: server's cores. Each endpoint's scan reads its objects in parallel already;
#: more endpoints than that oversubscribe the server (4 on 2 cores: 1.3x the
#: time of 1, measured with bench/flight_sql.py).
DEFAULT_ENDPOINTS = max(1, (os.cpu_count() or 1) // 4)
_MAX_ENDPOINTS = 1024
_TICKET = "skyhook.objects"
_MAX_EXPRESSION_CHARACTERS = 4 << 20
#: What a client's pyarrow expression may call: comparisons, logic, null
#: tests, arithmetic, casts and string matches; nothing that builds large
#: values (repeat, pad) or depends on anything but the row.
REMOTE_FUNCTIONS = frozenset(
    {
        *("equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "is_in", "index_in"),
        *("and", "or", "and_kleene", "or_kleene", "and_not", "and_not_kleene", "xor", "invert", "if_else"),
        *("is_null", "is_valid", "is_nan", "is_finite", "is_infinite", "true_unless_null", "coalesce"),
        *("add", "add_checked", "subtract", "subtract_checked", "multiply", "multiply_checked"),
        *("divide", "divide_checked", "negate", "negate_checked", "abs", "abs_checked", "cast"),
        *("starts_with", "ends_with", "match_substring", "match_substring_regex", "match_like"),
        *("utf8_lower", "utf8_upper", "utf8_length", "binary_length", "year", "month", "day"),
    }
)


@dataclass(frozen=True)
class ObjectsRequest:
    dataset: str
    columns: list[str] | None = None
    #: A text filter (the --where grammar), or a pyarrow expression in Arrow's
    #: serialization (what pickling writes), base64.
    filter: str | None = None
    expression: str | None = None
    endpoints: int = DEFAULT_ENDPOINTS


def request_of(descriptor: flight.FlightDescriptor) -> ObjectsRequest | None:
    """The dataset request a descriptor makes: a path of one name, or a JSON
    object {"dataset": ..., "columns": [...], "filter": "...", "endpoints": n};
    None for anything else (a Flight SQL command)."""
    if descriptor.descriptor_type == flight.DescriptorType.PATH:
        path = [part.decode() if isinstance(part, bytes) else part for part in descriptor.path]
        if len(path) != 1:
            raise InvalidRequestError(f"a path names one dataset, not {path!r}")
        return ObjectsRequest(path[0])
    if not descriptor.command.startswith(b"{"):
        return None
    try:
        fields = json.loads(descriptor.command)
        request = ObjectsRequest(**fields)
    except (ValueError, TypeError) as error:
        raise InvalidRequestError(
            f"a dataset request is JSON of dataset, columns, filter or expression, endpoints: {error}"
        ) from None
    valid = (
        isinstance(request.dataset, str)
        and (request.columns is None or all(isinstance(name, str) for name in request.columns))
        and (request.filter is None or isinstance(request.filter, str))
        and (request.expression is None or (isinstance(request.expression, str) and request.filter is None))
        and isinstance(request.endpoints, int)
        and 1 <= request.endpoints <= _MAX_ENDPOINTS
    )
    if not valid:
        raise InvalidRequestError(f"an invalid dataset request {fields!r}"[:300])
    return request


def plan_objects(store: Store, request: ObjectsRequest) -> tuple[pa.Schema, list[bytes]]:
    """(the rows' schema, a ticket per group of the objects left after pruning, groups of about equal bytes)."""
    dataset = store.dataset(request.dataset)
    filter = _filter(request.filter, request.expression, dataset.schema)
    plan = plan_scan(dataset.schema, request.columns, filter)
    position = {partition.number: index for index, partition in enumerate(dataset.manifest.partitions)}
    kept = matching_partitions(dataset.manifest, plan.pruning_filter, plan.filter_reads)
    numbers = [position[partition.number] for partition in kept]  # the dataset's fragments are in this order
    sizes = np.array([partition.stored_bytes for partition in kept], dtype=np.float64)
    groups = min(request.endpoints, len(numbers))
    edges = np.searchsorted(np.cumsum(sizes), np.arange(1, groups) * sizes.sum() / groups) if groups else []
    tickets = []
    for part in np.split(np.array(numbers, dtype=np.int64), edges):
        if len(part):
            ticket = {"kind": _TICKET, **asdict(request), "generation": dataset.manifest.generation}
            ticket["objects"] = part.tolist()
            tickets.append(json.dumps(ticket).encode())
    return plan.projected_schema, tickets


def is_objects_ticket(ticket: bytes) -> bool:
    return ticket.startswith(b'{"kind": "' + _TICKET.encode())


def read_objects(store: Store, ticket: bytes) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The rows of a ticket's objects that pass its filter, with its columns."""
    try:
        fields = json.loads(ticket)
        name, generation, objects = fields["dataset"], fields["generation"], [int(n) for n in fields["objects"]]
    except (ValueError, KeyError, TypeError):
        raise InvalidRequestError("a malformed dataset ticket") from None
    manifest = reopen_dataset(store, name, generation, None).manifest
    filter = _filter(fields.get("filter"), fields.get("expression"), manifest.schema)
    plan = plan_scan(manifest.schema, fields.get("columns"), filter)
    if not all(0 <= index < len(manifest.partitions) for index in objects):
        raise InvalidRequestError("a dataset ticket names objects the dataset does not have")
    # The ticket's objects scanned as a dataset of their own: in parallel, the cost model choosing.
    execution = ScanExecution(DatasetObjects(manifest.subset(objects), store.backend), plan.columns, filter, plan=plan)

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in execution.to_batches():
            yield (
                batch
                if batch.schema == plan.projected_schema
                else pa.RecordBatch.from_arrays(batch.columns, schema=plan.projected_schema)
            )

    return plan.projected_schema, batches()


def _filter(text: str | None, expression: str | None, schema: pa.Schema) -> pc.Expression | None:
    """A request's filter, text or a serialized pyarrow expression."""
    if text:
        return parse_where(text, schema)
    if not expression:
        return None
    if len(expression) > _MAX_EXPRESSION_CHARACTERS:
        raise InvalidRequestError(f"a filter expression over {_MAX_EXPRESSION_CHARACTERS} characters")
    try:
        data = base64.b64decode(expression, validate=True)
    except ValueError:
        raise InvalidRequestError("a filter expression that is not base64") from None
    return deserialized(data, REMOTE_FUNCTIONS)
