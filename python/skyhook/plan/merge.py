"""The super-plan: merging every object's partial aggregates into the answer.

Each output column's partial states merge over objects as its function's
record says (aggregate_functions.py): exact for counts, integer and decimal
sums, products of integers, min/max, any/all and distinct counts; means and
variances with Chan's formula around the group mean; first/last take the
earliest/latest object whose partial has a value, objects being in dataset
order; quantiles from the objects' sketches (approximate, see _quantiles).
"""

from __future__ import annotations

import pyarrow as pa

from skyhook.plan.aggregate import CONSTANT_KEY, AggregateQuery, Decomposition

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
    # pyarrow's list aggregation takes no nested values (sketches are lists):
    # it lists their row positions, which take the values afterwards.
    nested = {
        name: rows.column(name).combine_chunks()
        for name in rows.column_names
        if pa.types.is_nested(rows.schema.field(name).type)
    }
    for name in nested:
        rows = rows.set_column(rows.schema.get_field_index(name), name, pa.array(range(rows.num_rows), pa.int64()))
    # Functions may share a partial column (see decompose): merged once.
    aggregations = list(
        dict.fromkeys((column, state.merge) for step in decomposition.merges for column, state in step.states())
    )
    # Without keys, one constant key: pyarrow has list aggregation only per group.
    group_keys = keys or [CONSTANT_KEY]
    if CONSTANT_KEY not in rows.column_names and not keys:
        rows = rows.append_column(CONSTANT_KEY, pa.array([0] * rows.num_rows, pa.int8()))
    merged = rows.group_by(group_keys, use_threads=False).aggregate(aggregations)
    columns = {key: merged.column(key) for key in keys}
    for step in decomposition.merges:
        target = output_schema.field(step.output).type
        merged_states = [
            _taken(merged.column(f"{column}_{state.merge}"), nested[column])
            if column in nested
            else merged.column(f"{column}_{state.merge}")
            for column, state in step.states()
        ]
        columns[step.output] = step.aggregate.evaluate(merged_states, target, step.options).cast(target)
    return pa.table(columns).cast(output_schema)


def _taken(positions: pa.ChunkedArray, values: pa.Array) -> pa.ChunkedArray:
    """Lists of row positions as lists of those rows' values."""
    listed = positions.combine_chunks()
    return pa.chunked_array([pa.ListArray.from_arrays(listed.offsets, values.take(listed.values))])
