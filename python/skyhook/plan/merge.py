"""The super-plan: merging every object's partial aggregates into the answer.

Merges are exact for counts, integer and decimal sums, min/max and distinct
counts; means and variances merge with Chan's formula around the group mean
(no sum-of-squares cancellation). first/last take the earliest/latest object
whose partial has a value, objects being in dataset order.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

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
    count_distinct, which are unioned with the partials so that one group_by
    sees every group (no join: null keys group together, as in pyarrow)."""
    keys = query.keys
    tables = [partials] + [
        values.rename_columns(keys + [f"__distinct{i}", ORDER]) for i, values in enumerate(distinct_values)
    ]
    rows = (
        pa.concat_tables(tables, promote_options="default").sort_by(ORDER)
        if distinct_values
        else partials.sort_by(ORDER)
    )
    aggregations = []
    for step in decomposition.merges:
        if step.function in ("count", "sum"):
            aggregations.append((step.partials[0], "sum"))
        elif step.function in ("min", "max", "first", "last"):
            aggregations.append((step.partials[0], step.function))
        elif step.function == "avg":
            aggregations += [(step.partials[0], "sum"), (step.partials[1], "sum")]
        elif step.function in ("variance", "std_dev"):
            aggregations += [(name, "list") for name in step.partials]
        else:
            aggregations.append((f"__distinct{step.distinct_plan}", "count_distinct"))
    # Without keys, one constant key: pyarrow has list aggregation only per group.
    group_keys = keys or ["__all"]
    if not keys:
        rows = rows.append_column("__all", pa.array([0] * rows.num_rows, pa.int8()))
    merged = rows.group_by(group_keys, use_threads=False).aggregate(aggregations)
    columns = {key: merged.column(key) for key in keys}
    for step in decomposition.merges:
        target = output_schema.field(step.output).type
        if step.function in ("count", "sum", "min", "max", "first", "last"):
            merged_function = "sum" if step.function == "count" else step.function
            column = merged.column(f"{step.partials[0]}_{merged_function}")
        elif step.function == "avg":
            column = _mean(merged.column(f"{step.partials[0]}_sum"), merged.column(f"{step.partials[1]}_sum"), target)
        elif step.function in ("variance", "std_dev"):
            column = _variance(*(merged.column(f"{name}_list") for name in step.partials))
            if step.function == "std_dev":
                column = pc.sqrt(column)
        else:
            column = merged.column(f"__distinct{step.distinct_plan}_count_distinct")
        columns[step.output] = column.cast(target)
    return pa.table(columns).cast(output_schema)


def _mean(total: pa.ChunkedArray, count: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_decimal(target):
        # Exact: divide in 256-bit decimal, round half away from zero as pyarrow does.
        quotient = pc.divide(total.cast(pa.decimal256(40, target.scale)), count.cast(pa.decimal256(19, 0)))
        return pc.round(quotient, target.scale, round_mode="half_towards_infinity")
    empty = pc.equal(count, 0)
    return pc.if_else(
        empty, pa.scalar(None, pa.float64()), pc.divide(total.cast(pa.float64()), count.cast(pa.float64()))
    )


def _variance(counts: pa.ChunkedArray, means: pa.ChunkedArray, variances: pa.ChunkedArray) -> pa.Array:
    """Population variance of each group from its objects' (n, mean, variance)."""
    counts, means, variances = (column.combine_chunks() for column in (counts, means, variances))
    parents = pc.list_parent_indices(counts)
    n = pc.list_flatten(counts).cast(pa.float64())
    mean = pc.list_flatten(means)
    per_group = (
        pa.table({"g": parents, "n": n, "nm": pc.multiply(n, mean), "m2": pc.multiply(pc.list_flatten(variances), n)})
        .group_by("g", use_threads=False)
        .aggregate([("n", "sum"), ("nm", "sum"), ("m2", "sum")])
        .sort_by("g")
    )
    total_n = pc.fill_null(per_group.column("n_sum"), 0.0)
    group_mean = pc.divide(per_group.column("nm_sum"), total_n)
    deviation = pc.subtract(mean, pc.take(group_mean, parents))
    spread = (
        pa.table({"g": parents, "d": pc.multiply(n, pc.multiply(deviation, deviation))})
        .group_by("g", use_threads=False)
        .aggregate([("d", "sum")])
        .sort_by("g")
        .column("d_sum")
    )
    total_m2 = pc.add(pc.fill_null(per_group.column("m2_sum"), 0.0), pc.fill_null(spread, 0.0))
    return pc.if_else(pc.greater(total_n, 0), pc.divide(total_m2, total_n), pa.scalar(None, pa.float64()))
