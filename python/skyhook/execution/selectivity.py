"""The selectivity of a filter on each object, estimated from the statistics
storage computed on it (catalog/object_statistics.py), so the cost model can
predict replies without pushing a sample object down.

The filter is read as pyarrow serialises it to Substrait. A predicate on one
column is evaluated on the column's equi-depth histogram bounds (33 values at
the 0, 1/32, .., 1 quantiles of its non-null values; every value when there
are at most 32): a bucket counts whole where the predicate holds at both its
bounds, half where at one, so a range is off by at most one bucket (1/32).
Equality to a value no bound equals is 1/distinct, capped at one bucket (it
lies inside one); to a value m bounds equal, m buckets (it spans m - 1 to
m + 1 of them), so equality is off by at most a bucket too. Several range
predicates on one column under AND are evaluated together; otherwise AND
multiplies, OR adds (at most 1), NOT complements (within the column's
non-null rows when it reads one column). Anything else (a predicate
on two columns, a literal Substrait cannot carry, a type without an order)
has no estimate: the cost model then samples, as without statistics.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.substrait as pas
from substrait.gen.proto import algebra_pb2, extended_expression_pb2

from skyhook.plan.expression_tree import NotSerializable
from skyhook.plan.substrait import referenced_fields, serialize

Expression = algebra_pb2.Expression
#: Bounds of a full histogram (cpp/skyhook/storage/secondary/equi_depth_histogram.h).
_FULL_HISTOGRAM = 33
_RANGES = ("lt", "lte", "gt", "gte")
_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


class NoEstimate(Exception):
    """The filter has a shape or type the statistics cannot estimate."""


def estimated_selectivities(
    schema: pa.Schema, filter: pc.Expression, statistics: pa.StructArray, num_rows: np.ndarray
) -> np.ndarray | None:
    """Per object, the estimated fraction of its rows the filter keeps:
    statistics has a row per object (the ``columns`` of
    object_statistics_type(schema)), num_rows its rows. None: no estimate."""
    try:
        message = serialize([filter], ["filter"], schema)
    except NotSerializable:
        return None
    try:
        estimate = _Estimator(message, schema, statistics, np.asarray(num_rows, dtype=np.float64))
        return np.clip(estimate.of(message.referred_expr[0].expression), 0.0, 1.0)
    except (NoEstimate, *_ERRORS):
        return None


class _Estimator:
    def __init__(
        self,
        message: extended_expression_pb2.ExtendedExpression,
        schema: pa.Schema,
        statistics: pa.StructArray,
        num_rows: np.ndarray,
    ) -> None:
        self.message = message
        self.schema = schema
        self.statistics = statistics
        self.num_rows = np.maximum(num_rows, 1)
        self.functions = {
            declared.extension_function.function_anchor: declared.extension_function.name
            for declared in message.extensions
            if declared.HasField("extension_function")
        }

    def of(self, expression: Expression) -> np.ndarray:
        name = self._function(expression)
        if name == "and":
            return self._conjunction(list(self._conjuncts(expression)))
        if name == "or":
            return np.minimum(1.0, sum(self.of(argument.value) for argument in expression.scalar_function.arguments))
        if name == "not":
            argument = expression.scalar_function.arguments[0].value
            if argument.HasField("singular_or_list"):
                return self._not_in(argument)
            fields = referenced_fields(argument)
            # NOT of a predicate on one column keeps none of its nulls (NOT null is null).
            valid = 1.0 - self._null_share(self.schema.field(fields.pop())) if len(fields) == 1 else 1.0
            return np.maximum(0.0, valid - self.of(argument))
        return self._predicate([expression])

    def _not_in(self, in_list: Expression) -> np.ndarray:
        """NOT IN as pyarrow's is_in means it (what storage runs): is_in is false,
        not null, for a null value, so NOT IN keeps the nulls."""
        if any(option.literal.WhichOneof("literal_type") == "null" for option in in_list.singular_or_list.options):
            raise NoEstimate("an IN list holding null matches null values")
        return np.maximum(0.0, 1.0 - self.of(in_list))

    def _null_share(self, field: pa.Field) -> np.ndarray:
        return _numbers(pc.struct_field(pc.struct_field(self.statistics, field.name), "null_count")) / self.num_rows

    def _function(self, expression: Expression) -> str | None:
        if not expression.HasField("scalar_function"):
            return None
        return self.functions.get(expression.scalar_function.function_reference)

    def _conjuncts(self, expression: Expression) -> Iterator[Expression]:
        if self._function(expression) == "and":
            for argument in expression.scalar_function.arguments:
                yield from self._conjuncts(argument.value)
        else:
            yield expression

    def _conjunction(self, conjuncts: list[Expression]) -> np.ndarray:
        """Ranges on one column together (a < x <= b is one interval), the rest
        as if independent."""
        result = np.ones(len(self.statistics))
        ranges: dict[int, list[Expression]] = {}
        for conjunct in conjuncts:
            fields = referenced_fields(conjunct)
            if len(fields) == 1 and self._function(conjunct) in _RANGES:
                ranges.setdefault(next(iter(fields)), []).append(conjunct)
            else:
                result = result * self.of(conjunct)
        for group in ranges.values():
            result = result * self._predicate(group)
        return result

    def _predicate(self, conjuncts: list[Expression]) -> np.ndarray:
        """All of conjuncts, which read one column and nothing else."""
        fields = set().union(*(referenced_fields(conjunct) for conjunct in conjuncts))
        if len(fields) != 1:
            raise NoEstimate("a predicate reads several columns (or none)")
        field = self.schema.field(fields.pop())
        column = pc.struct_field(self.statistics, field.name)
        null_share = self._null_share(field)
        name = self._function(conjuncts[0]) if len(conjuncts) == 1 else None
        if name == "is_null":
            return null_share
        if name == "is_not_null":
            return 1.0 - null_share
        histogram = pc.struct_field(column, "histogram")
        if histogram.null_count:
            raise NoEstimate(f"column {field.name!r} has no histogram (its type has no order)")
        bounds = _Bounds(histogram)
        if name in ("equal", "not_equal") or (name is None and conjuncts[0].HasField("singular_or_list")):
            share = self._equality(conjuncts[0], column, bounds)
            if name == "not_equal":
                share = 1.0 - share
        elif all(self._function(conjunct) in _RANGES for conjunct in conjuncts):
            share = bounds.share(self._evaluated(conjuncts, field, bounds.values))
        else:
            raise NoEstimate(f"no estimate for {name or 'this expression'}")
        return (1.0 - null_share) * share

    def _equality(self, expression: Expression, column: pa.StructArray, bounds: _Bounds) -> np.ndarray:
        """column = value, or column IN values."""
        if expression.HasField("singular_or_list"):
            sides = [expression.singular_or_list.value]
            literals = list(expression.singular_or_list.options)
        else:
            arguments = [argument.value for argument in expression.scalar_function.arguments]
            sides = [side for side in arguments if not side.HasField("literal")]
            literals = [side for side in arguments if side.HasField("literal")]
        if len(sides) != 1 or not sides[0].HasField("selection") or not all(v.HasField("literal") for v in literals):
            raise NoEstimate("an equality whose sides are not a column and values")
        # IN (1, 1) is IN (1); = null keeps no row; a value the column cannot hold has no estimate.
        values = self._values(literals).unique().drop_null().cast(bounds.values.type)
        objects, count = len(self.statistics), len(values)
        if count == 0:
            return np.zeros(objects)
        # Every (object, value) pair: is the value within the object's [min, max]?
        pair_object = pa.array(np.repeat(np.arange(objects), count))
        pair_value = values.take(pa.array(np.tile(np.arange(count), objects)))
        low = pc.struct_field(column, "min").take(pair_object)
        high = pc.struct_field(column, "max").take(pair_object)
        within = _numbers(
            pc.fill_null(pc.and_(pc.less_equal(low, pair_value), pc.greater_equal(high, pair_value)), False)
        )
        distinct = np.nan_to_num(_numbers(pc.struct_field(column, "distinct")), nan=1.0)  # unknown: one bucket
        shares = bounds.equal_shares(_numbers(pc.index_in(bounds.values, value_set=values)), count, distinct)
        return np.minimum(1.0, (within.reshape(objects, count) * shares).sum(axis=1))

    def _values(self, literals: list[Expression]) -> pa.Array:
        """The literals' values (of one type: an IN list's, or one), in one evaluation."""
        named = dict(enumerate(self._deserialized(literals)))
        row = pads.dataset(pa.table({"row": [0]})).to_table(columns={str(i): value for i, value in named.items()})
        return pa.concat_arrays([column.chunk(0) for column in row.columns])

    def _evaluated(self, conjuncts: list[Expression], field: pa.Field, values: pa.Array) -> np.ndarray:
        """Where all of conjuncts hold on values (as field, the others null)."""
        table = pa.table(
            [values if other.name == field.name else pa.nulls(len(values), other.type) for other in self.schema],
            schema=self.schema,
        )
        holds = pads.dataset(table).to_table(columns={"holds": self._bound(conjuncts)})["holds"]
        return _numbers(pc.fill_null(holds, False))

    def _bound(self, expressions: list[Expression]) -> pc.Expression:
        """The conjunction of expressions (parts of the message), as pyarrow's."""
        return functools.reduce(operator.and_, self._deserialized(expressions))

    def _deserialized(self, expressions: list[Expression]) -> list[pc.Expression]:
        """Parts of the message as pyarrow's expressions."""
        part = extended_expression_pb2.ExtendedExpression()
        part.extension_uris.extend(self.message.extension_uris)
        part.extensions.extend(self.message.extensions)
        part.base_schema.CopyFrom(self.message.base_schema)
        for index, expression in enumerate(expressions):
            part.referred_expr.add(expression=expression, output_names=[f"e{index}"])
        bound = pas.deserialize_expressions(part.SerializeToString()).expressions
        return [bound[f"e{index}"] for index in range(len(expressions))]


class _Bounds:
    """The histogram bounds of every object, flattened, and where each object's are."""

    def __init__(self, histogram: pa.ListArray) -> None:
        self.values = pc.list_flatten(histogram)
        lengths = _numbers(pc.fill_null(pc.list_value_length(histogram), 0)).astype(np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.lengths = lengths
        self.owner = np.repeat(np.arange(len(lengths)), lengths)

    def _sums(self, flags: np.ndarray) -> np.ndarray:
        return np.bincount(self.owner, weights=flags, minlength=len(self.lengths))

    def share(self, holds: np.ndarray) -> np.ndarray:
        """Per object: the share of values in the buckets where holds."""
        if not len(holds):  # no object has a non-null value
            return np.zeros(len(self.lengths))
        sums = self._sums(holds)
        exact = sums / np.maximum(self.lengths, 1)  # at most 32 values: the bounds are all of them
        last = np.maximum(self.starts + self.lengths - 1, 0)
        first_and_last = holds[np.minimum(self.starts, len(holds) - 1)] + holds[np.minimum(last, len(holds) - 1)]
        buckets = (sums - first_and_last / 2) / np.maximum(self.lengths - 1, 1)
        return np.where(self.lengths < _FULL_HISTOGRAM, exact, buckets)

    def equal_shares(self, matched: np.ndarray, count: int, distinct: np.ndarray) -> np.ndarray:
        """Per object and value (of count; matched: per bound, the value it
        equals or NaN): the share of the object's values equal to it, if it is
        within the object's [min, max]."""
        objects = len(self.lengths)
        hit = ~np.isnan(matched)
        cells = self.owner[hit] * count + matched[hit].astype(np.int64)
        equal = np.bincount(cells, minlength=objects * count).reshape(objects, count)
        lengths, buckets = self.lengths[:, None], np.maximum(self.lengths - 1, 1)[:, None]
        rare = np.minimum(1.0 / np.maximum(distinct, 1), 1.0 / buckets[:, 0])[:, None]
        full = np.where(equal >= 1, equal / buckets, rare)
        return np.where(lengths < _FULL_HISTOGRAM, equal / np.maximum(lengths, 1), full)


def _numbers(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow array as float64 (nulls as NaN, booleans as 0/1)."""
    if pa.types.is_boolean(values.type):
        values = pc.cast(values, pa.int8())
    return np.asarray(pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
