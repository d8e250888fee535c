"""explain() and analyze(): what runs in storage and what at the client.
explain() shows the plan and the placement decided before anything runs;
analyze() runs the query and adds what happened, per object, with estimated
(statistics) against actual selectivity."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from substrait.gen.proto import plan_pb2

from skyhook.catalog.manifest import Partition
from skyhook.catalog.pruning import matching_partitions
from skyhook.execution.aggregate_execution import AggregateExecution
from skyhook.execution.column_objects import holding
from skyhook.execution.cost import bytes_read, object_selectivities
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.placement import Placement
from skyhook.execution.scan_execution import ScanExecution, ScanStatistics
from skyhook.names import counted
from skyhook.plan.aggregate import DISTINCT
from skyhook.plan.expressions import columns_read, placement_reasons
from skyhook.plan.substrait import measures_of


@dataclass
class Explanation:
    lines: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(self.lines)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython
        printer.text(str(self))


def _statistics_estimate(source: DatasetObjects, filter: pc.Expression | None, kept: set[int]) -> str:
    """Rows of the partitions statistics could not rule out (an upper bound),
    and the object histograms' estimate where every one of them has fresh ones."""
    total = source.manifest.num_rows
    partitions = [p for p in source.manifest.partitions if p.number in kept]
    rows = sum(p.num_rows for p in partitions)
    text = f"estimated <= {rows / total if total else 0.0:.1%} (statistics)"
    selectivities = object_selectivities(source.manifest, filter, partitions) if filter is not None else None
    if selectivities is not None and total:
        estimate = sum(share * p.num_rows for share, p in zip(selectivities, partitions)) / total
        text += f", about {estimate:.1%} (object histograms)"
    return text


#: Partitions in column objects whose objects explain() names; the rest are counted.
_PARTITIONS_LISTED = 16


def _objects_read(
    source: DatasetObjects, partitions: list[Partition], needed: list[str] | None, why: dict
) -> list[str]:
    """Of a dataset with column objects: per partition, the objects a query
    reads (and the columns it reads of each) and why (why: "one", "spanning"
    -> reason); and the bytes it reads in storage, of those objects only."""
    if not source.manifest.has_column_objects:
        return []
    names = source.schema.names
    lines = []
    for partition in partitions[:_PARTITIONS_LISTED]:
        objects, whole = partition.objects(names), holding(partition, needed)
        read = [objects[whole]] if whole is not None else objects
        wanted = [
            (held.object_name, [name for name in held.columns if needed is None or name in needed]) for held in read
        ]
        listed = ", ".join(f"{name} {columns}" for name, columns in wanted if columns or whole is not None)
        lines.append(f"    partition {partition.number}: {listed}: {why['one' if whole is not None else 'spanning']}")
    if len(partitions) > _PARTITIONS_LISTED:
        lines.append(f"    ... and {len(partitions) - _PARTITIONS_LISTED} more partitions")
    read = sum(bytes_read(partition, needed) for partition in partitions)
    stored = sum(partition.stored_bytes for partition in partitions)
    return [
        "  objects read (the dataset keeps columns in column objects):",
        *lines,
        f"  bytes to read in storage: about {read:,} (of the objects read; the partitions hold {stored:,})",
    ]


def _conjunct_lines(filter: pc.Expression, schema: pa.Schema) -> list[str]:
    """Where each conjunct of a filter not wholly in storage runs, and why."""
    return [
        f"    {part}: " + ("storage" if reason is None else f"client ({reason})")
        for part, reason in placement_reasons(filter, schema)
    ]


def _filter_in_storage(stats: ScanStatistics) -> str:
    if stats.filter_in_storage:
        return "filter"
    return "the filter's conjuncts it can run" if stats.filter_partly_in_storage else "-"


def _filter_at_client(stats: ScanStatistics) -> str:
    if stats.filter_in_storage:
        return ""
    return "the rest of the filter " if stats.filter_partly_in_storage else "filter "


def explain_scan(execution: ScanExecution) -> Explanation:
    source, stats = execution.source, execution.stats
    partitions = matching_partitions(source.manifest, execution.filter)
    kept = {partition.number for partition in partitions}
    return Explanation(
        [
            f"scan of {source.name!r}: {counted(source.manifest.num_rows, 'row')} in {counted(len(source.manifest.partitions), 'object')}",
            f"  filter: {execution.filter}",
            *([] if stats.filter_in_storage else _conjunct_lines(execution.filter, source.schema)),
            f"  in storage (per object pushed down): {_filter_in_storage(stats)}"
            f"{' + projection' if stats.projection_in_storage else ''}",
            f"  cost model: {execution.planned_decision(partitions).reason}",
            f"  at the client: {_filter_at_client(stats)}"
            f"{'projection ' if not stats.projection_in_storage else ''}concatenation",
            *_objects_read(
                source,
                partitions,
                columns_read(source.schema, execution.columns, execution.filter),
                {
                    "one": "one object holds every column read: scanned as any object (filter and projection)",
                    "spanning": "columns span objects: each object's columns (projection in storage), "
                    "zipped by row and filtered at the client",
                },
            ),
            f"  objects: {len(partitions)} to scan, {len(source.manifest.partitions) - len(partitions)} pruned by statistics",
            f"  selectivity: {_statistics_estimate(source, execution.filter, kept)}",
        ]
    )


def analyze_scan(execution: ScanExecution) -> Explanation:
    table = execution.to_table()
    source, stats = execution.source, execution.stats
    explanation = explain_scan(execution)
    explanation.lines[-2:] = [
        f"  cost model decided: {stats.cost_model or ('off: pushdown' if stats.pushdown else 'off: plain reads')}",
        f"  objects: {stats.objects_scanned} scanned, {stats.objects_pruned} pruned by statistics, "
        f"{stats.objects_read_plain} read plainly at the client "
        f"({stats.objects_pushed_back} of them pushed back by loaded nodes)",
        f"  selectivity: {_statistics_estimate(source, execution.filter, execution.scanned)}, "
        f"actual {table.num_rows / max(1, source.manifest.num_rows):.2%}",
        f"  bytes: {stats.bytes_read:,} read in storage, {stats.bytes_returned:,} to the client",
    ]
    return explanation


def explain_aggregate(execution: AggregateExecution) -> Explanation:
    source, stats, query = execution.source, execution.stats, execution.query
    if execution.plan is None or execution.decomposition is None:
        return Explanation(
            [
                f"aggregate of {source.name!r}: {counted(source.manifest.num_rows, 'row')} in {counted(len(source.manifest.partitions), 'object')}",
                "  the keys or inputs have types Substrait cannot carry: pyarrow aggregates every object at the client",
                "  objects: every object read whole",
            ]
        )
    plan = plan_pb2.Plan.FromString(execution.plan)
    sub_plan = plan_pb2.Plan.FromString(execution.decomposition.sub_plan.plan)
    partitions = matching_partitions(source.manifest, query.filter)
    lines = [
        f"aggregate of {source.name!r}: {counted(source.manifest.num_rows, 'row')} in {counted(len(source.manifest.partitions), 'object')}",
        f"  plan (Substrait): read {list(execution.decomposition.read_schema.names)} -> "
        f"{'filter -> ' if stats.filter_in_storage and query.filter is not None else ''}"
        f"project -> aggregate by {query.keys or '()'}: "
        + ", ".join(name + (" distinct" if call.invocation == DISTINCT else "") for name, call in measures_of(plan)),
        f"  filter: {query.filter}",
        "  sub-plan in storage, per object: partial "
        + ", ".join(name for name, _ in measures_of(sub_plan))
        + "".join(f"; distinct values of input {i}" for i in range(len(execution.decomposition.distinct_plans))),
        "  super-plan at the client: "
        + ", ".join(
            f"{m.output} <- {'count_distinct of the union' if m.distinct_plan is not None else m.function + ' merge of ' + '/'.join(m.partials)}"
            for m in execution.decomposition.merges
        ),
    ]
    if execution.filter_partly_in_storage:
        lines.append("  storage runs the filter's conjuncts it can; the client the rest, then the aggregate")
    elif not stats.filter_in_storage:
        lines.append("  the filter cannot run in storage: every object is read and filtered at the client")
    if not stats.filter_in_storage:
        lines += _conjunct_lines(query.filter, source.schema)
    lines += _objects_read(
        source,
        partitions,
        columns_read(source.schema, query.input_columns(), query.filter),
        {
            "one": "one object holds every column read: partial aggregates in storage",
            "spanning": "columns span objects: their columns zipped by row, partial aggregates at the client",
        },
    )
    lines.append(
        f"  objects: {len(partitions)} to aggregate, "
        f"{len(source.manifest.partitions) - len(partitions)} pruned by statistics"
    )
    return Explanation(lines)


def analyze_aggregate(execution: AggregateExecution) -> Explanation:
    result = execution.run()
    source, stats = execution.source, execution.stats
    explanation = explain_aggregate(execution)
    placements = set(stats.where.values())
    if Placement.STORAGE_FILTER_ONLY in placements or Placement.CLIENT_COST_MODEL in placements:
        explanation.lines.insert(
            -1,
            "  storage filtered and projected some objects without aggregating them (or the cost "
            "model read them plainly): the client aggregated those rows",
        )
    placement = Counter(str(where) for where in stats.where.values())
    explanation.lines[-1] = f"  objects: {stats.objects_pruned} pruned by statistics; " + ", ".join(
        f"{count} in {where}" for where, count in sorted(placement.items())
    )
    explanation.lines += [
        f"  selectivity: {_statistics_estimate(source, execution.query.filter, set(stats.where))}; "
        f"{stats.rows_scanned:,} rows read, {stats.partial_rows:,} partial rows returned",
        f"  result: {result.num_rows:,} rows; {stats.bytes_returned:,} bytes to the client, "
        f"{stats.storage_cpu_s:.3f} s storage CPU",
    ]
    return explanation
