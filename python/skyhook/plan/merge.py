"""The super-plan: merging every object's partial aggregates into the answer.

Each output column's partial states merge over objects as its function's
record says (aggregate_functions.py): exact for counts, integer and decimal
sums, min/max and distinct counts; means and variances with Chan's formula
around the group mean; first/last take the earliest/latest object whose
partial has a value, objects being in dataset order.
"""

from __future__ import annotations

import pyarrow as pa

from skyhook.plan.aggregate import AggregateQuery, Decomposition

ORDER = "__object"  # the partition number of the object a partial row came from


def merge(
    query: AggregateQuery,
    decomposition: Decomposition,
    partials: pa.Table,
    distinct_values: list[pa.Table],
    output_schema: pa.Schema,
) -> pa.Table:
    """distinct_values[i]: every object's (keys..., value) pairs of the i-th
    distinct sub-plan (Decomposition.distinct_plans), which are unioned with the partials so that one group_by
    sees every group (no join: null keys group together, as in pyarrow)."""
    keys = query.keys
    rows = pa.concat_tables([partials, *distinct_values], promote_options="default").sort_by(ORDER)
    aggregations = [(column, state.merge) for step in decomposition.merges for column, state in step.states()]
    # Without keys, one constant key: pyarrow has list aggregation only per group.
    group_keys = keys or ["__all"]
    if not keys:
        rows = rows.append_column("__all", pa.array([0] * rows.num_rows, pa.int8()))
    merged = rows.group_by(group_keys, use_threads=False).aggregate(aggregations)
    columns = {key: merged.column(key) for key in keys}
    for step in decomposition.merges:
        target = output_schema.field(step.output).type
        merged_states = [merged.column(f"{column}_{state.merge}") for column, state in step.states()]
        columns[step.output] = step.aggregate.evaluate(merged_states, target).cast(target)
    return pa.table(columns).cast(output_schema)
