"""A scan's plan, made once per query (DuckDB's Bind to the execution's Init):
what the scan returns, which part of its filter and projection storage runs
and what the client completes. Every execution of the query shares it: the
user's scan, and the per-object scans of Arrow's fragments (DuckDB, Acero)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.plan.carried_types import is_carried
from skyhook.plan.expressions import (
    Columns,
    columns_read,
    output_expressions,
    place_filter,
    projected_schema,
    to_substrait,
)
from skyhook.plan.predicate_ranges import with_list_bounds


@dataclass(frozen=True)
class ScanPlan:
    columns: Columns
    filter: pc.Expression | None
    #: What the scan returns.
    projected_schema: pa.Schema
    #: The part of the filter storage runs (Substrait; None: none).
    filter_substrait: bytes | None
    #: The columns the whole filter reads (None: no filter).
    filter_reads: set[str] | None
    #: The filter as object statistics test it (predicate_ranges.with_list_bounds).
    pruning_filter: pc.Expression | None
    #: The part of the filter the client evaluates on what storage returns (None: nothing).
    client_filter: pc.Expression | None
    #: The columns the scan decodes (None: all).
    needed: list[str] | None
    #: What storage projects (Substrait; None: every column).
    projection_substrait: bytes | None
    #: Whether the client projects what storage returns.
    client_projection: bool


def plan_scan(schema: pa.Schema, columns: Columns, filter: pc.Expression | None) -> ScanPlan:
    """The plan of a scan of columns passing filter over schema; raises a
    skyhook error naming what is wrong with either."""
    returned = projected_schema(schema, columns, filter)
    placement = None if filter is None else place_filter(filter, schema)
    filter_substrait = None if placement is None else placement.storage
    filter_reads = None if placement is None else placement.reads
    client_filter = None if placement is None else placement.client
    # A filter the client completes: storage returns the columns its part and the projection read.
    projection_substrait = None
    if columns is not None and client_filter is None:
        projection_substrait = to_substrait(*output_expressions(columns), schema)
    elif columns is not None and not isinstance(columns, Mapping) and placement is not None:
        kept = [name for name in schema.names if name in placement.client_reads or name in columns]
        projection_substrait = to_substrait([pc.field(name) for name in kept], kept, schema)
    if projection_substrait is None and not all(map(is_carried, schema)):
        # storage would return every column, but names the uncarried ones by a placeholder
        filter_substrait, client_filter = None, filter
    return ScanPlan(
        columns=columns,
        filter=filter,
        projected_schema=returned,
        filter_substrait=filter_substrait,
        filter_reads=filter_reads,
        pruning_filter=with_list_bounds(filter, schema),
        client_filter=client_filter,
        needed=columns_read(schema, columns, filter, filter_reads),
        projection_substrait=projection_substrait,
        client_projection=columns is not None and projection_substrait is None,
    )
