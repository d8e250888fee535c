"""explain(): what ran in storage and what at the client, per object, with
estimated (statistics) against actual selectivity. It runs the query."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from substrait.gen.proto import plan_pb2

from skyhook.plan.aggregate import DISTINCT
from skyhook.plan.substrait import measures_of

if TYPE_CHECKING:
    from skyhook.dataset import Dataset
    from skyhook.execution.aggregate_execution import AggregateExecution
    from skyhook.execution.scanner import Scanner


@dataclass
class Explanation:
    lines: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(self.lines)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython
        printer.text(str(self))


def _statistics_estimate(dataset: Dataset, kept: set[int]) -> float:
    """Rows of the partitions statistics could not rule out: an upper bound."""
    total = dataset.manifest.num_rows
    rows = sum(p.num_rows for p in dataset.manifest.partitions if p.number in kept)
    return rows / total if total else 0.0


def explain_scan(dataset: Dataset, scanner: Scanner) -> Explanation:
    table = scanner.to_table()
    stats = scanner.stats
    total = dataset.manifest.num_rows
    lines = [
        f"scan of {dataset.name!r}: {total:,} rows in {len(dataset.manifest.partitions)} objects",
        f"  filter: {scanner.filter}",
        f"  in storage (per object pushed down): {'filter' if stats.filter_in_storage else '-'}"
        f"{' + projection' if stats.projection_in_storage else ''}",
        f"  cost model: {stats.cost_model or ('off: pushdown' if stats.pushdown else 'off: plain reads')}",
        f"  at the client: {'filter ' if not stats.filter_in_storage else ''}"
        f"{'projection ' if not stats.projection_in_storage else ''}concatenation",
        f"  objects: {stats.objects_scanned} scanned, {stats.objects_pruned} pruned by statistics, "
        f"{stats.objects_read_plain} read plainly at the client "
        f"({stats.objects_pushed_back} of them pushed back by loaded nodes)",
    ]
    lines.append(
        f"  selectivity: estimated <= {_statistics_estimate(dataset, scanner.scanned):.1%} "
        f"(statistics), actual {table.num_rows / max(1, total):.2%}"
    )
    lines.append(f"  bytes: {stats.bytes_read:,} read in storage, {stats.bytes_returned:,} to the client")
    return Explanation(lines)


def explain_aggregate(dataset: Dataset, execution: AggregateExecution) -> Explanation:
    result = execution.run()
    stats = execution.stats
    plan = plan_pb2.Plan.FromString(execution.plan)
    sub_plan = plan_pb2.Plan.FromString(execution.decomposition.sub_plan.plan)
    query = execution.query
    kept = set(stats.where)
    lines = [
        f"aggregate of {dataset.name!r}: {dataset.manifest.num_rows:,} rows in "
        f"{len(dataset.manifest.partitions)} objects",
        f"  plan (Substrait): read {list(execution.decomposition.read_schema.names)} -> "
        f"{'filter -> ' if stats.filter_in_storage and query.filter is not None else ''}"
        f"project -> aggregate by {query.keys or '()'}: "
        + ", ".join(name + (" distinct" if call.invocation == DISTINCT else "") for name, call in measures_of(plan)),
        f"  filter: {query.filter}",
    ]
    lines.append(
        "  sub-plan in storage, per object: partial "
        + ", ".join(name for name, _ in measures_of(sub_plan))
        + "".join(f"; distinct values of input {i}" for i in range(len(execution.decomposition.distinct_plans)))
    )
    lines.append(
        "  super-plan at the client: "
        + ", ".join(
            f"{m.output} <- {'count_distinct of the union' if m.distinct_plan is not None else m.function + ' merge of ' + '/'.join(m.partials)}"
            for m in execution.decomposition.merges
        )
    )
    if "storage (filter only)" in stats.where.values() or "client (cost model)" in stats.where.values():
        lines.append(
            "  storage could run only the filter and projection (Arrow's Substrait consumer cannot "
            "aggregate computed decimals): the client aggregated those rows"
        )
    if not stats.filter_in_storage:
        lines.append("  the filter cannot be expressed in Substrait: every object is read and filtered at the client")
    placement = Counter(stats.where.values())
    lines.append(
        f"  objects: {stats.objects_pruned} pruned by statistics; "
        + ", ".join(f"{count} in {where}" for where, count in sorted(placement.items()))
    )
    lines.append(
        f"  selectivity: estimated <= {_statistics_estimate(dataset, kept):.1%} (statistics); "
        f"{stats.rows_scanned:,} rows read, {stats.partial_rows:,} partial rows returned"
    )
    lines.append(
        f"  result: {result.num_rows:,} rows; {stats.bytes_returned:,} bytes to the client, "
        f"{stats.storage_cpu_s:.3f} s storage CPU"
    )
    return Explanation(lines)
