"""Every aggregate function the client offers, each declared once.

A function is split like DataFusion's Accumulator: per object and group,
storage computes partial states (update / state: Substrait measures Acero
runs); the client merges every object's states with a pyarrow aggregate
(merge) and computes the answer from the merged states (evaluate). The plan
builder, the decomposer and the merge read only these records, so a new
statistic is one record here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.plan.substrait import ARITHMETIC, ARROW, GENERIC


@dataclass(frozen=True)
class Measure:
    """An aggregate that both sides compute: a Substrait function (what storage
    runs) and pyarrow's function of the same semantics (what the client runs
    when storage did not, and what says the partial's type)."""

    uri: str
    substrait_name: str
    pyarrow_name: str

    def output_type(self, input_type: pa.DataType) -> pa.DataType:
        """What Acero returns for this measure over input_type."""
        empty = pa.table({"x": pa.array([], input_type)})
        return empty.group_by([], use_threads=False).aggregate([("x", self.pyarrow_name)]).schema[0].type


COUNT = Measure(GENERIC, "count", "count")
SUM = Measure(ARITHMETIC, "sum", "sum")
MIN = Measure(ARITHMETIC, "min", "min")
MAX = Measure(ARITHMETIC, "max", "max")
AVG = Measure(ARITHMETIC, "avg", "mean")
VARIANCE = Measure(ARITHMETIC, "variance", "variance")
STD_DEV = Measure(ARITHMETIC, "std_dev", "stddev")
FIRST = Measure(ARROW, "first", "first")
LAST = Measure(ARROW, "last", "last")


@dataclass(frozen=True)
class State:
    """One column of partial state per object and group, and the pyarrow
    aggregate that merges the objects' values of it (objects in dataset order)."""

    #: None: the group's distinct input values, which a sub-plan of their own
    #: (grouped by the keys and the input) returns.
    partial: Measure | None
    merge: str


#: The answer from the merged states (in the record's order) and the output type.
Evaluate = Callable[[Sequence[pa.ChunkedArray], pa.DataType], pa.Array | pa.ChunkedArray]


@dataclass(frozen=True)
class AggregateFunction:
    """One function: Substrait measure of the whole function (the full plan),
    partial states per object (sub-plans), their merges and the evaluation."""

    name: str  # pyarrow's, as users write it
    measure: Measure  # the whole function in one Substrait plan
    states: tuple[State, ...]
    evaluate: Evaluate
    #: The input is cast to float64 first: partial means and variances travel as
    #: float64, as pyarrow computes them.
    float_input: bool = False

    @property
    def distinct(self) -> bool:
        """The plan invokes the measure DISTINCT."""
        return any(state.partial is None for state in self.states)


def _merged_state(states: Sequence[pa.ChunkedArray], target: pa.DataType) -> pa.ChunkedArray:
    return states[0]


def _mean(states: Sequence[pa.ChunkedArray], target: pa.DataType) -> pa.ChunkedArray:
    total, count = states
    if pa.types.is_decimal(target):
        # Exact: divide in 256-bit decimal, round half away from zero as pyarrow does.
        quotient = pc.divide(total.cast(pa.decimal256(40, target.scale)), count.cast(pa.decimal256(19, 0)))
        return pc.round(quotient, target.scale, round_mode="half_towards_infinity")
    empty = pc.equal(count, 0)
    return pc.if_else(
        empty, pa.scalar(None, pa.float64()), pc.divide(total.cast(pa.float64()), count.cast(pa.float64()))
    )


def _variance(states: Sequence[pa.ChunkedArray], target: pa.DataType) -> pa.Array:
    """Population variance of each group from its objects' lists of (n, mean,
    variance): Chan's formula around the group mean (no sum-of-squares cancellation)."""
    counts, means, variances = (column.combine_chunks() for column in states)
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


def _std_dev(states: Sequence[pa.ChunkedArray], target: pa.DataType) -> pa.Array:
    return pc.sqrt(_variance(states, target))


_MOMENTS = (State(COUNT, "list"), State(AVG, "list"), State(VARIANCE, "list"))

AGGREGATE_FUNCTIONS: dict[str, AggregateFunction] = {
    function.name: function
    for function in (
        AggregateFunction("count", COUNT, (State(COUNT, "sum"),), _merged_state),
        AggregateFunction("count_distinct", COUNT, (State(None, "count_distinct"),), _merged_state),
        AggregateFunction("sum", SUM, (State(SUM, "sum"),), _merged_state),
        AggregateFunction("min", MIN, (State(MIN, "min"),), _merged_state),
        AggregateFunction("max", MAX, (State(MAX, "max"),), _merged_state),
        AggregateFunction("mean", AVG, (State(SUM, "sum"), State(COUNT, "sum")), _mean),
        AggregateFunction("variance", VARIANCE, _MOMENTS, _variance, float_input=True),
        AggregateFunction("stddev", STD_DEV, _MOMENTS, _std_dev, float_input=True),
        AggregateFunction("first", FIRST, (State(FIRST, "first"),), _merged_state),
        AggregateFunction("last", LAST, (State(LAST, "last"),), _merged_state),
    )
}
_BY_MEASURE = {(f.measure.substrait_name, f.distinct): f for f in AGGREGATE_FUNCTIONS.values()}


def function_of_measure(substrait_name: str, distinct: bool) -> AggregateFunction:
    """The function a plan's measure stands for."""
    return _BY_MEASURE[substrait_name, distinct]
