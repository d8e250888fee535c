"""Aggregate queries as Substrait plans, and their decomposition.

The client builds the full plan ``read -> filter -> project -> aggregate`` with
the user's functions (pyarrow's names and semantics). The decomposer splits it:
each measure becomes the partial states its function declares
(aggregate_functions.py), which storage computes per object (the sub-plan), and
a merge the client runs over all objects' partials (the super-plan, see
merge.py). A distinct state (count_distinct) needs the values themselves, so
each gets a sub-plan of its own grouped by the keys and that column.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.substrait as pas
from substrait.gen.proto import algebra_pb2, plan_pb2

from skyhook.errors import InvalidRequestError, TypeMismatchError, UnknownColumnError
from skyhook.plan.aggregate_functions import (
    AGGREGATE_FUNCTIONS,
    AggregateFunction,
    Measure,
    Options,
    State,
    function_of_measure,
)
from skyhook.plan.substrait import (
    PlanBuilder,
    declare_function,
    field_reference,
    measures_of,
    substrait_type,
    top_level_names,
)

DISTINCT = algebra_pb2.AggregateFunction.AGGREGATION_INVOCATION_DISTINCT
CONSTANT_KEY = "__all"  # the key of sub-plans without keys whose partials need one


@dataclass(frozen=True)
class Aggregation:
    """(column, function[, options]) as in pyarrow (([], "count_all") without a
    column), or (expression, function, name[, options]) to aggregate a computed
    value such as price * (1 - discount)."""

    column: str | None
    function: str
    expression: pc.Expression | None = None
    name: str | None = None
    options: pc.FunctionOptions | None = None

    @property
    def output_name(self) -> str:
        if self.name:
            return self.name
        return self.function if self.column is None else f"{self.column}_{self.function}"

    @property
    def input(self) -> pc.Expression:
        if self.expression is not None:
            return self.expression
        # count_all counts rows: any column of them does, a constant is the cheapest.
        return pc.field(self.column) if self.column is not None else pc.scalar(True)

    @property
    def pyarrow_call(self) -> tuple[str, pc.FunctionOptions | None]:
        """(function, options) for pyarrow over this aggregation's input column."""
        if self.function == "count_all":  # pyarrow's count_all takes no column, its input is a constant
            return "count", pc.CountOptions(mode="all")
        return self.function, self.options


@dataclass
class AggregateQuery:
    keys: list[str]
    aggregations: list[Aggregation]
    filter: pc.Expression | None = None
    # output_schema's answers: validation and execution both need them.
    _output_schemas: dict[pa.Schema, pa.Schema] = field(init=False, default_factory=dict, repr=False, compare=False)

    @classmethod
    def make(
        cls,
        schema: pa.Schema,
        keys: Sequence[str] | str,
        aggregations: Sequence[tuple[str, str]],
        filter: pc.Expression | None,
    ) -> AggregateQuery:
        keys = [keys] if isinstance(keys, str) else list(keys)
        parsed = [_parse(entry) for entry in aggregations]
        query = cls(keys, parsed, filter)
        query.validate(schema)
        return query

    @property
    def plan_keys(self) -> list[str]:
        """The sub-plans' keys: the query's, or a constant one when a function
        has partials only per group."""
        grouped = any(AGGREGATE_FUNCTIONS[a.function].grouped_partials for a in self.aggregations)
        return self.keys or ([CONSTANT_KEY] if grouped else [])

    def validate(self, schema: pa.Schema) -> None:
        for name in self.keys + [a.column for a in self.aggregations if a.column is not None]:
            if schema.get_field_index(name) < 0:
                raise UnknownColumnError(f"unknown column {name!r}; the dataset has {', '.join(schema.names)}")
        for aggregation in self.aggregations:
            if aggregation.function not in AGGREGATE_FUNCTIONS:
                raise InvalidRequestError(
                    f"unknown aggregate function {aggregation.function!r}; known: {', '.join(AGGREGATE_FUNCTIONS)}"
                )
            function = AGGREGATE_FUNCTIONS[aggregation.function]
            if aggregation.options is not None and not isinstance(aggregation.options, function.options_type or ()):
                takes = function.options_type.__name__ if function.options_type else "no options"
                raise InvalidRequestError(f"the aggregate function {aggregation.function!r} takes {takes} here")
            if function.nullary != (aggregation.column is None and aggregation.expression is None):
                raise InvalidRequestError(
                    f"{aggregation.function!r} takes "
                    + ("no column: ([], 'count_all')" if function.nullary else "a column or an expression")
                )
        try:
            self.output_schema(schema)
            self._check_mergeable(schema)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            raise TypeMismatchError(f"cannot aggregate: {str(error).splitlines()[0]}") from None
        except pa.ArrowInvalid as error:
            raise InvalidRequestError(f"cannot aggregate: {str(error).splitlines()[0]}") from None

    def _check_mergeable(self, schema: pa.Schema) -> None:
        inputs = _empty_dataset(schema).to_table(columns=self.input_columns()).schema
        for i, aggregation in enumerate(self.aggregations):
            type = inputs.field(f"__input{i}").type
            if AGGREGATE_FUNCTIONS[aggregation.function].unmergeable(type):
                raise TypeMismatchError(
                    f"cannot aggregate {aggregation.output_name}: {aggregation.function} of {type} "
                    "does not merge exactly over objects; cast the input to float64"
                )

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """pyarrow's answer on no rows: the names, order and types to return."""
        if schema not in self._output_schemas:
            self._output_schemas[schema] = self.run_locally(schema.empty_table()).schema
        return self._output_schemas[schema]

    def run_locally(self, table: pa.Table | pads.Dataset) -> pa.Table:
        """pyarrow computing this query: the semantics every result must have."""
        source = table if isinstance(table, pads.Dataset) else pads.dataset(table)
        inputs = source.to_table(columns=self.input_columns(), filter=self.filter)
        calls = [a.pyarrow_call for a in self.aggregations]
        result = inputs.group_by(self.keys, use_threads=isinstance(table, pads.Dataset)).aggregate(
            [(f"__input{i}", *call) for i, call in enumerate(calls)]
        )
        outputs = {f"__input{i}_{call[0]}": a.output_name for i, (call, a) in enumerate(zip(calls, self.aggregations))}
        return result.rename_columns([outputs.get(name, name) for name in result.column_names])

    def input_columns(self) -> dict[str, pc.Expression]:
        """The keys and each aggregation's input, as columns named __input<i>."""
        columns = {key: pc.field(key) for key in self.keys}
        columns.update({f"__input{i}": a.input for i, a in enumerate(self.aggregations)})
        return columns


def _parse(entry: object) -> Aggregation:
    """pyarrow's forms (column, function[, options]) and ([], "count_all"), and
    (expression, function, name[, options])."""
    if isinstance(entry, (tuple, list)) and 2 <= len(entry) <= 4:
        target, function, *rest = entry
        rest = rest[:-1] if rest and rest[-1] is None else rest  # pyarrow's "no options"
        options = rest[-1] if rest and isinstance(rest[-1], pc.FunctionOptions) else None
        name = rest[0] if rest and isinstance(rest[0], str) else None
        if len(rest) == (options is not None) + (name is not None) and isinstance(function, str):
            if isinstance(target, str) and name is None:
                return Aggregation(target, function, options=options)
            if isinstance(target, (tuple, list)) and not target and name is None:
                return Aggregation(None, function, options=options)
            if isinstance(target, pc.Expression) and name is not None:
                return Aggregation(None, function, target, name, options)
    raise InvalidRequestError(
        "an aggregation is (column, function[, options]), ([], 'count_all') or "
        f"(expression, function, name[, options]), not {entry!r}"
    )


def _input_expression(aggregation: Aggregation, schema: pa.Schema) -> pc.Expression:
    if AGGREGATE_FUNCTIONS[aggregation.function].float_input:
        return aggregation.input.cast(pa.float64(), safe=False)
    if aggregation.function in _COUNTING_BOOLEANS and _type_of(aggregation.input, schema) == pa.bool_():
        # Storage sums numbers; pyarrow counts trues as uint64. (Exact: Substrait carries only unsafe casts.)
        return aggregation.input.cast(pa.uint64(), safe=False)
    return aggregation.input


_COUNTING_BOOLEANS = ("sum", "mean")


def _type_of(expression: pc.Expression, schema: pa.Schema) -> pa.DataType:
    name = str(expression)
    if schema.get_field_index(name) >= 0 and expression.equals(pc.field(name)):
        return schema.field(name).type  # a column: no binding needed
    return _empty_dataset(schema).scanner(columns={"v": expression}).projected_schema.field(0).type


@functools.lru_cache(maxsize=16)
def _empty_dataset(schema: pa.Schema) -> pads.Dataset:
    # Built once per schema: building it costs ~10 ms on a schema of 800 columns
    # (expression matrices), and plans type every aggregate's input.
    return pads.dataset(schema.empty_table())


def full_plan(schema: pa.Schema, query: AggregateQuery, output_schema: pa.Schema, filter_in_storage: bool) -> bytes:
    """The whole query as one Substrait plan (what explain shows); output_schema
    is query.output_schema(schema)."""
    inputs = [_input_expression(a, schema) for a in query.aggregations]
    key_columns = [pc.field(k) for k in query.keys] or [pc.scalar(0) for _ in query.plan_keys]
    builder = PlanBuilder(schema, query.filter if filter_in_storage else None, key_columns + inputs)
    keys = len(query.plan_keys)
    measures = []
    for i, aggregation in enumerate(query.aggregations):
        function = AGGREGATE_FUNCTIONS[aggregation.function]
        call = algebra_pb2.AggregateFunction(
            function_reference=builder.function(function.measure.uri, function.measure.substrait_name),
            arguments=[algebra_pb2.FunctionArgument(value=field_reference(keys + i))],
            phase=algebra_pb2.AGGREGATION_PHASE_INITIAL_TO_RESULT,
            output_type=substrait_type(output_schema.field(aggregation.output_name).type, builder.plan),
            options=[
                algebra_pb2.FunctionOption(name=name, preference=[value])
                for name, value in Options.of(aggregation.options).values.items()
            ],
        )
        if function.distinct:
            call.invocation = DISTINCT
        measures.append(algebra_pb2.AggregateRel.Measure(measure=call))
    aggregate = algebra_pb2.AggregateRel(input=builder.input(), measures=measures, groupings=[_grouping(range(keys))])
    names = query.plan_keys + [a.output_name for a in query.aggregations]
    return builder.finish(algebra_pb2.Rel(aggregate=aggregate), names)


def _grouping(indices) -> algebra_pb2.AggregateRel.Grouping:
    return algebra_pb2.AggregateRel.Grouping(grouping_expressions=[field_reference(i) for i in indices])


@dataclass
class PartialMeasure:
    function: Measure
    argument: int  # input field of the aggregate
    name: str  # column name in the sub-plan's output


@dataclass
class MeasureMerge:
    """How the client turns partial columns into one output column."""

    output: str
    aggregate: AggregateFunction
    options: Options
    partials: list[str] = field(default_factory=list)  # partial columns, one per state of aggregate
    distinct_plan: int | None = None  # count(distinct): index into Decomposition.distinct_plans

    @property
    def function(self) -> str:
        """The Substrait function of the full plan."""
        return self.aggregate.measure.substrait_name

    def states(self) -> list[tuple[str, State]]:
        """Each partial column and the state it holds."""
        return list(zip(self.partials, self.aggregate.states_with(self.options)))


@dataclass
class SubPlan:
    """A per-object plan, and what its aggregate computes from the rows its
    project emits, so the client can finish it when storage did not."""

    plan: bytes
    group_indices: list[int]
    measures: list[PartialMeasure]
    names: list[str]

    def aggregate_rows(self, rows: pa.Table) -> pa.Table:
        """This sub-plan's aggregate over its input rows (project outputs, in order)."""
        rows = rows.rename_columns([f"c{i}" for i in range(rows.num_columns)])
        result = rows.group_by([f"c{i}" for i in self.group_indices], use_threads=False).aggregate(
            [(f"c{m.argument}", *m.function.pyarrow_aggregate) for m in self.measures]
        )
        return result.rename_columns(self.names)


@dataclass
class Decomposition:
    keys: list[str]
    sub_plan: SubPlan  # per object: partial aggregates
    distinct_plans: list[SubPlan]  # per object: distinct (keys, value) pairs, one per column
    merges: list[MeasureMerge]
    read_schema: pa.Schema  # the columns storage decodes
    input_plan: bytes  # read -> project of rows already filtered: what every sub-plan aggregates


def decompose(plan_bytes: bytes, keys: list[str], dataset_schema: pa.Schema) -> Decomposition:
    plan = plan_pb2.Plan.FromString(plan_bytes)
    root = plan.relations[0].root
    aggregate = root.input.aggregate
    key_count = len(keys)
    partial_measures: list[PartialMeasure] = []
    merges: list[MeasureMerge] = []
    distinct_arguments: list[int] = []
    shared: dict[tuple[Measure, bytes], str] = {}  # partial column of each (measure, input)
    inputs = [expression.SerializeToString() for expression in aggregate.input.project.expressions]
    for (name, call), output in zip(measures_of(plan), root.names[key_count:]):
        argument = call.arguments[0].value.selection.direct_reference.struct_field.field
        options = Options({option.name: option.preference[0] for option in call.options}) if call.options else Options()
        merge = MeasureMerge(output, function_of_measure(name, call.invocation == DISTINCT), options)
        for state in merge.aggregate.states_with(options):
            if state.partial is None:
                merge.distinct_plan = len(distinct_arguments)
                merge.partials.append(f"d{len(distinct_arguments)}")
                distinct_arguments.append(argument)
            elif (state.partial, inputs[argument]) in shared:  # e.g. mean and sum of one column: one sum
                merge.partials.append(shared[state.partial, inputs[argument]])
            else:
                merge.partials.append(f"p{len(partial_measures)}")
                shared[state.partial, inputs[argument]] = merge.partials[-1]
                partial_measures.append(PartialMeasure(state.partial, argument, merge.partials[-1]))
        merges.append(merge)

    def sub_plan(measures: list[PartialMeasure], group_indices: list[int], names: list[str]) -> SubPlan:
        rewritten = plan_pb2.Plan()
        rewritten.CopyFrom(plan)
        target = rewritten.relations[0].root
        del target.input.aggregate.measures[:]
        target.input.aggregate.measures.extend(measure(rewritten, m) for m in measures)
        del target.input.aggregate.groupings[:]
        target.input.aggregate.groupings.append(_grouping(group_indices))
        del target.names[:]
        target.names.extend(names)
        return SubPlan(rewritten.SerializeToString(), group_indices, measures, names)

    read_names = top_level_names(_read_relation(aggregate.input).base_schema)
    read_schema = pa.schema([dataset_schema.field(name) for name in read_names])

    input_only = plan_pb2.Plan()
    input_only.CopyFrom(plan)
    del input_only.relations[:]
    input_only.relations.add(rel=_without_filter(aggregate.input))
    input_plan = input_only.SerializeToString()
    input_types = _output_types(input_plan)

    def input_type(argument: int) -> pa.DataType:
        return input_types[argument]

    def measure(target: plan_pb2.Plan, m: PartialMeasure) -> algebra_pb2.AggregateRel.Measure:
        return algebra_pb2.AggregateRel.Measure(
            measure=algebra_pb2.AggregateFunction(
                function_reference=declare_function(target, m.function.uri, m.function.substrait_name),
                arguments=[algebra_pb2.FunctionArgument(value=field_reference(m.argument))],
                output_type=substrait_type(m.function.output_type(input_type(m.argument)), target),
                # Each partial is a complete aggregate of its object; Acero also runs
                # only this phase.
                phase=algebra_pb2.AGGREGATION_PHASE_INITIAL_TO_RESULT,
            )
        )

    keys_only = list(range(key_count))
    main = sub_plan(partial_measures, keys_only, keys + [m.name for m in partial_measures])
    distinct = [sub_plan([], [*keys_only, argument], keys + [f"d{i}"]) for i, argument in enumerate(distinct_arguments)]
    return Decomposition(keys, main, distinct, merges, read_schema, input_plan)


@functools.lru_cache(maxsize=64)
def _output_types(input_plan: bytes) -> tuple[pa.DataType, ...]:
    """The types of a plan's output columns, as Acero computes them (decimal
    arithmetic included): the plan run on no rows (once per plan: a query's
    sub-plans are built anew each time it runs)."""
    empty = pas.run_query(pa.py_buffer(input_plan), table_provider=lambda names, schema: schema.empty_table())
    return tuple(empty.read_all().schema.types)


def _without_filter(project: algebra_pb2.Rel) -> algebra_pb2.Rel:
    """read -> project of a read -> filter -> project: a client's read filters
    (pruning row groups by their statistics, no plan), so its plan only projects."""
    rel = algebra_pb2.Rel()
    rel.CopyFrom(project)
    if rel.project.input.HasField("filter"):
        rel.project.input.CopyFrom(rel.project.input.filter.input)
    return rel


def _read_relation(rel: algebra_pb2.Rel) -> algebra_pb2.ReadRel:
    while not rel.HasField("read"):
        rel = getattr(rel, rel.WhichOneof("rel_type")).input
    return rel.read
