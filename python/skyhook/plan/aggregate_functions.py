"""Every aggregate function the client offers, each declared once.

A function is split like DataFusion's Accumulator: per object and group,
storage computes partial states (update / state: Substrait measures Acero
runs); the client merges every object's states with a pyarrow aggregate
(merge) and computes the answer from the merged states (evaluate). The plan
builder, the decomposer and the merge read only these records, so a new
statistic is one record here.

Function options (pyarrow's own objects: VarianceOptions, CountOptions,
ScalarAggregateOptions, TDigestOptions) add the states their semantics need
(row counts for skip_nulls / min_count / count modes) and reach the evaluation.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.plan.substrait import ARITHMETIC, ARROW, GENERIC, SKYHOOK


@dataclass(frozen=True)
class Measure:
    """An aggregate that both sides compute: a Substrait function (what storage
    runs) and pyarrow's function of the same semantics (what the client runs
    when storage did not, and what says the partial's type)."""

    uri: str
    substrait_name: str
    pyarrow_name: str
    #: The options storage runs it with (partial_measures.cc): pyarrow's defaults if None.
    options: pc.FunctionOptions | None = field(default=None, compare=False)

    @property
    def pyarrow_aggregate(self) -> tuple:
        """(function, options) for pyarrow's group_by().aggregate."""
        return (self.pyarrow_name, self.options)

    def output_type(self, input_type: pa.DataType) -> pa.DataType:
        """What Acero returns for this measure over input_type, with a key
        (grouped output types can differ: tdigest is a list per group)."""
        return _output_type(self, input_type)

    def _computed_output_type(self, input_type: pa.DataType) -> pa.DataType:
        empty = pa.table({"k": pa.array([], pa.int8()), "x": pa.array([], input_type)})
        result = empty.group_by("k", use_threads=False).aggregate([("x", *self.pyarrow_aggregate)])
        return result.schema.field(f"x_{self.pyarrow_name}").type


@functools.lru_cache(maxsize=1024)
def _output_type(measure: Measure, input_type: pa.DataType) -> pa.DataType:
    # Asked once per measure of a plan: wide plans (a matrix's genes) ask thousands of times.
    return measure._computed_output_type(input_type)


COUNT = Measure(GENERIC, "count", "count")
SUM = Measure(ARITHMETIC, "sum", "sum")
MIN = Measure(ARITHMETIC, "min", "min")
MAX = Measure(ARITHMETIC, "max", "max")
AVG = Measure(ARITHMETIC, "avg", "mean")
VARIANCE = Measure(ARITHMETIC, "variance", "variance")
STD_DEV = Measure(ARITHMETIC, "std_dev", "stddev")
FIRST = Measure(ARROW, "first", "first")
LAST = Measure(ARROW, "last", "last")
PRODUCT = Measure(SKYHOOK, "product", "product")
ANY = Measure(SKYHOOK, "any", "any")
ALL = Measure(SKYHOOK, "all", "all")
COUNT_ALL = Measure(SKYHOOK, "count_all", "count", pc.CountOptions(mode="all"))
#: Quantiles per object and group of the sketch (kSketchQuantiles in C++).
SKETCH_QUANTILES = 100
QUANTILE_SKETCH = Measure(
    SKYHOOK,
    "quantile_sketch",
    "tdigest",
    pc.TDigestOptions(
        q=[(i + 0.5) / SKETCH_QUANTILES for i in range(SKETCH_QUANTILES)],
        delta=100,
        buffer_size=500,
        skip_nulls=True,
        min_count=0,
    ),
)


def _whole(name: str) -> Measure:
    """The full plan's measure of a function storage only runs as partials."""
    return Measure(SKYHOOK, name, name)


class Options:
    """A function's options by name, as pyarrow prints them (e.g.
    ``VarianceOptions(ddof=1, skip_nulls=true, min_count=0)``: pyarrow's option
    objects expose no attributes, only this text), or none given."""

    _PAIR = re.compile(r"(\w+)=(\[[^\]]*\]|[^,)]+)")

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.given = values is not None
        self.values: Mapping[str, str] = dict(values or {})

    @classmethod
    def of(cls, options: pc.FunctionOptions | None) -> Options:
        return cls(None if options is None else dict(cls._PAIR.findall(str(options))))

    def flag(self, name: str, default: bool) -> bool:
        return self.values.get(name, str(default).lower()) == "true"

    def integer(self, name: str, default: int) -> int:
        return int(self.values.get(name, default))

    def text(self, name: str, default: str) -> str:
        return self.values.get(name, default)

    def floats(self, name: str, default: Sequence[float]) -> list[float]:
        if name not in self.values:
            return list(default)
        return [float(v) for v in self.values[name].strip("[]").split(",") if v.strip()]


@dataclass(frozen=True)
class State:
    """One column of partial state per object and group, and the pyarrow
    aggregate that merges the objects' values of it (objects in dataset order)."""

    #: None: the group's distinct input values, which a sub-plan of their own
    #: (grouped by the keys and the input) returns.
    partial: Measure | None
    merge: str


#: The answer from the merged states (in the record's order), the output type and the options.
Evaluate = Callable[[Sequence[pa.ChunkedArray], pa.DataType, Options], pa.Array | pa.ChunkedArray]


@dataclass(frozen=True)
class AggregateFunction:
    """One function: Substrait measure of the whole function (the full plan),
    partial states per object (sub-plans), their merges and the evaluation."""

    name: str  # pyarrow's, as users write it
    measure: Measure  # the whole function in one Substrait plan
    states: tuple[State, ...]
    evaluate: Evaluate
    #: pyarrow's options class it takes, if any, and the states added when
    #: options are given: the valid and all row counts that skip_nulls,
    #: min_count and count modes need (see _with_null_rules).
    options_type: type[pc.FunctionOptions] | None = None
    option_states: tuple[State, ...] = ()
    #: The input is cast to float64 first: partial means, variances and
    #: sketches travel as float64, as pyarrow computes them.
    float_input: bool = False
    #: pyarrow calls it without a column: ([], "count_all").
    nullary: bool = False
    #: Input types whose partials do not merge to pyarrow's answer (decimal
    #: products round at every step, so the order of steps shows).
    unmergeable: Callable[[pa.DataType], bool] = lambda type: False

    @property
    def distinct(self) -> bool:
        """The plan invokes the measure DISTINCT."""
        return any(state.partial is None for state in self.states)

    def states_with(self, options: Options) -> tuple[State, ...]:
        """The partial states this function needs with these options."""
        return self.states + (self.option_states if options.given else ())

    @property
    def grouped_partials(self) -> bool:
        """Its partials exist only per group (a sketch is a list per group):
        without keys, the sub-plans group by a constant."""
        return any(state.partial is QUANTILE_SKETCH for state in self.states)


def _merged_state(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.ChunkedArray:
    return states[0]


def _with_null_rules(evaluate: Evaluate, empty: object = None, min_count: bool = True) -> Evaluate:
    """pyarrow's ScalarAggregateOptions on top of evaluate, whose last two
    states are then the valid and all row counts: null when skip_nulls is off
    and the group has a null, or when it has fewer than min_count values (but
    for min and max, which pyarrow lets ignore min_count); a group without
    values is `empty` when min_count allows it (sum 0, product 1)."""

    def evaluated(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.ChunkedArray:
        if not options.given:
            return evaluate(states, target, options)
        *values, valid, rows = states
        answer = pc.cast(evaluate(values, target, options), target)
        valid, rows = pc.fill_null(valid, 0), pc.fill_null(rows, 0)
        if empty is not None and (pa.types.is_floating(target) or not isinstance(empty, float)):
            answer = pc.if_else(pc.equal(valid, 0), pa.scalar(empty).cast(target), answer)
        null = pc.less(valid, options.integer("min_count", 1) if min_count else 1)
        if not options.flag("skip_nulls", True):
            null = pc.or_(null, pc.less(valid, rows))
        return pc.if_else(null, pa.scalar(None, target), answer)

    return evaluated


def _kleene(evaluate: Evaluate, decisive: bool) -> Evaluate:
    """any / all with skip_nulls off: a null decides unless a `decisive`
    value (true for any, false for all) does."""
    rules = _with_null_rules(evaluate, empty=not decisive)

    def evaluated(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.ChunkedArray:
        answer = rules(states, target, options)
        if not options.given or options.flag("skip_nulls", True):
            return answer
        *values, valid, rows = states
        found = pc.fill_null(pc.equal(values[0], decisive), False)
        enough = pc.greater_equal(pc.fill_null(valid, 0), options.integer("min_count", 1))
        return pc.if_else(pc.and_(found, enough), pa.scalar(decisive), answer)

    return evaluated


def _count(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.ChunkedArray:
    if not options.given:
        return states[0]
    valid, rows = states
    mode = options.text("mode", "NON_NULL")
    return {"NON_NULL": valid, "ALL": rows, "NULLS": pc.subtract(rows, valid)}[mode]


def _pair(first: str, second: str) -> Evaluate:
    """A struct of two merged states, e.g. min_max's {min, max}."""

    def evaluated(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.Array:
        arrays = [pc.cast(state, target.field(i).type).combine_chunks() for i, state in enumerate(states[:2])]
        return pa.StructArray.from_arrays(arrays, names=[first, second])

    return evaluated


def _mean(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.ChunkedArray:
    total, count = states
    if pa.types.is_decimal(target):
        # Exact: divide in 256-bit decimal, round half away from zero as pyarrow does.
        quotient = pc.divide(total.cast(pa.decimal256(40, target.scale)), count.cast(pa.decimal256(19, 0)))
        return pc.round(quotient, target.scale, round_mode="half_towards_infinity")
    empty = pc.equal(count, 0)
    return pc.if_else(
        empty, pa.scalar(None, pa.float64()), pc.divide(total.cast(pa.float64()), count.cast(pa.float64()))
    )


def _variance(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.Array:
    """Variance of each group from its objects' lists of (n, mean, population
    variance): Chan's formula around the group mean (no sum-of-squares
    cancellation), divided by n - ddof; null for n <= ddof, n < min_count, or
    (skip_nulls off) a null in the group, as pyarrow."""
    counts, means, variances = (column.combine_chunks() for column in states[:3])
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
    ddof = options.integer("ddof", 0)
    defined = pc.and_(pc.greater(total_n, ddof), pc.greater_equal(total_n, options.integer("min_count", 0)))
    if not options.flag("skip_nulls", True):
        defined = pc.and_(defined, pc.equal(total_n, pc.cast(states[3].combine_chunks(), pa.float64())))
    return pc.if_else(defined, pc.divide(total_m2, pc.subtract(total_n, float(ddof))), pa.scalar(None, pa.float64()))


def _std_dev(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.Array:
    return pc.sqrt(_variance(states, target, options))


def _quantiles(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.Array:
    """Quantiles of each group from its objects' sketches: every object's
    SKETCH_QUANTILES midpoint quantiles stand for equal shares of its n values;
    the merged weighted points are read like one sorted sample, interpolating
    between the points' centre ranks. Rank error at most 1 / (2 * SKETCH_QUANTILES)
    plus the digests' own (README "Aggregates in storage")."""
    sketches, counts = states[0].combine_chunks(), states[1].combine_chunks()
    lows, highs = states[2].to_pylist(), states[3].to_pylist()
    rows = states[4].to_pylist() if options.given else None
    wanted = options.floats("q", [0.5])
    min_count = options.integer("min_count", 0)
    skip_nulls = options.flag("skip_nulls", True)
    answers = []
    for group, (objects, ns) in enumerate(zip(sketches.to_pylist(), counts.to_pylist())):
        points, weights = [], []
        for sketch, n in zip(objects or [], ns or []):
            if n and sketch[0] is not None:  # values that were all NaN leave no sketch
                points.extend(sketch)
                weights.extend([n / len(sketch)] * len(sketch))
        total = sum(n or 0 for n in ns or [])
        undefined = not points or total < min_count or (not skip_nulls and rows is not None and rows[group] > total)
        ends = (lows[group], highs[group])
        answers.append([None] * len(wanted) if undefined else _weighted_quantiles(points, weights, ends, wanted))
    if pa.types.is_fixed_size_list(target):
        return pa.array(answers, target)
    return pa.array([answer[0] for answer in answers], target)  # without keys pyarrow gives the first


def _weighted_quantiles(
    points: list[float], weights: list[float], ends: tuple[float, float], wanted: Sequence[float]
) -> list[float]:
    """The group's minimum and maximum anchor ranks 0 and n: the tails past
    the outermost centres are interpolated, not flat."""
    order = np.argsort(points, kind="stable")
    values, mass = np.asarray(points, dtype=np.float64)[order], np.asarray(weights)[order]
    total = mass.sum()
    centres = np.concatenate([[0.0], np.cumsum(mass) - mass / 2, [total]])
    values = np.concatenate([[ends[0]], values, [ends[1]]])
    return [float(np.interp(q * total, centres, values)) for q in wanted]


def _median(states: Sequence[pa.ChunkedArray], target: pa.DataType, options: Options) -> pa.Array:
    return _quantiles(states, pa.list_(pa.float64(), 1), options).flatten()


_MOMENTS = (State(COUNT, "list"), State(AVG, "list"), State(VARIANCE, "list"))
_ROWS = (State(COUNT_ALL, "sum"),)
_COUNTS = (State(COUNT, "sum"), State(COUNT_ALL, "sum"))
_SKETCH = (State(QUANTILE_SKETCH, "list"), State(COUNT, "list"), State(MIN, "min"), State(MAX, "max"))


def _scalar_options(name: str, measure: Measure, states: tuple[State, ...], evaluate: Evaluate) -> AggregateFunction:
    """A function taking ScalarAggregateOptions (skip_nulls, min_count)."""
    return AggregateFunction(
        name, measure, states, evaluate, options_type=pc.ScalarAggregateOptions, option_states=_COUNTS
    )


def _single(measure: Measure, merge: str, evaluate: Evaluate) -> AggregateFunction:
    """One state, merged over objects by the function of its own name."""
    return _scalar_options(merge, measure, (State(measure, merge),), evaluate)


_PRODUCT = replace(_single(PRODUCT, "product", _with_null_rules(_merged_state, 1)), unmergeable=pa.types.is_decimal)


AGGREGATE_FUNCTIONS: dict[str, AggregateFunction] = {
    function.name: function
    for function in (
        AggregateFunction("count", COUNT, (State(COUNT, "sum"),), _count, pc.CountOptions, option_states=_ROWS),
        AggregateFunction("count_all", _whole("count_all"), _ROWS, _merged_state, nullary=True),
        AggregateFunction("count_distinct", COUNT, (State(None, "count_distinct"),), _merged_state),
        _single(SUM, "sum", _with_null_rules(_merged_state, 0)),
        _PRODUCT,
        _single(MIN, "min", _with_null_rules(_merged_state, min_count=False)),
        _single(MAX, "max", _with_null_rules(_merged_state, min_count=False)),
        _single(ANY, "any", _kleene(_merged_state, True)),
        _single(ALL, "all", _kleene(_merged_state, False)),
        _scalar_options("mean", AVG, (State(SUM, "sum"), State(COUNT, "sum")), _with_null_rules(_mean, float("nan"))),
        AggregateFunction("min_max", _whole("min_max"), (State(MIN, "min"), State(MAX, "max")), _pair("min", "max")),
        AggregateFunction("variance", VARIANCE, _MOMENTS, _variance, pc.VarianceOptions, _ROWS, float_input=True),
        AggregateFunction("stddev", STD_DEV, _MOMENTS, _std_dev, pc.VarianceOptions, _ROWS, float_input=True),
        AggregateFunction(
            "tdigest", _whole("tdigest"), _SKETCH, _quantiles, pc.TDigestOptions, _ROWS, float_input=True
        ),
        AggregateFunction(
            "approximate_median",
            _whole("approximate_median"),
            _SKETCH,
            _median,
            pc.ScalarAggregateOptions,
            _ROWS,
            float_input=True,
        ),
        AggregateFunction("first", FIRST, (State(FIRST, "first"),), _merged_state),
        AggregateFunction("last", LAST, (State(LAST, "last"),), _merged_state),
        AggregateFunction(
            "first_last", _whole("first_last"), (State(FIRST, "first"), State(LAST, "last")), _pair("first", "last")
        ),
    )
}
_BY_MEASURE = {(f.measure.substrait_name, f.distinct): f for f in AGGREGATE_FUNCTIONS.values()}


def function_of_measure(substrait_name: str, distinct: bool) -> AggregateFunction:
    """The function a plan's measure stands for."""
    return _BY_MEASURE[substrait_name, distinct]
