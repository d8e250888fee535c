"""What a filter asks of each column, as the workload log records it: the
conjuncts that compare one column with literals (=, <, <=, >, >=, IN), merged
per column into a kind (eq, in, range) and an inclusive literal range. Other
conjuncts (ORs across columns, functions of columns) are left out: the ranges
describe a superset of the filter's rows."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from substrait.gen.proto.algebra_pb2 import Expression

from skyhook.plan.expression_tree import NotSerializable
from skyhook.plan.substrait import serialize

Literal = bool | int | float | str

_EPOCH = datetime.date(1970, 1, 1)
_FLIPPED = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte", "equal": "equal"}


@dataclass(frozen=True)
class ColumnRange:
    column: str
    kind: str  # "eq" (one value), "in" (a list), "range"
    low: Literal | None  # inclusive bounds (open ends None); dates as ISO strings
    high: Literal | None

    def expression(self, field: pa.Field) -> pc.Expression | None:
        """The range as a filter on field (None when a literal does not cast to its type)."""
        try:
            low, high = (None if v is None else pa.scalar(v).cast(field.type) for v in (self.low, self.high))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        ref, condition = pc.field(field.name), pc.scalar(True)
        if low is not None:
            condition = condition & (ref >= pc.scalar(low))
        if high is not None:
            condition = condition & (ref <= pc.scalar(high))
        return condition


def column_ranges(filter: pc.Expression | None, schema: pa.Schema) -> list[ColumnRange]:
    """The per-column literal ranges of filter's conjuncts (empty when Substrait cannot carry it)."""
    if filter is None:
        return []
    try:
        message = serialize([filter], ["filter"], schema)
    except NotSerializable:
        return []
    names = {ext.extension_function.function_anchor: ext.extension_function.name for ext in message.extensions}
    bounds: dict[str, list] = {}
    pending = [message.referred_expr[0].expression]
    while pending:
        expression = pending.pop()
        compared = _comparison(expression, names, schema)
        if compared is not None:
            column, op, values = compared
            bounds.setdefault(column, []).append((op, values))
        elif expression.WhichOneof("rex_type") == "scalar_function":
            if names.get(expression.scalar_function.function_reference) == "and":
                pending.extend(argument.value for argument in expression.scalar_function.arguments)
    return [_merged(column, found) for column, found in sorted(bounds.items())]


def _comparison(
    expression: Expression, names: dict[int, str], schema: pa.Schema
) -> tuple[str, str, list[Literal]] | None:
    kind = expression.WhichOneof("rex_type")
    if kind == "singular_or_list":
        column = _column(expression.singular_or_list.value, schema)
        values = [_literal(option) for option in expression.singular_or_list.options]
        if column is None or not values or any(value is None for value in values):
            return None
        return column, "in", values
    if kind != "scalar_function":
        return None
    op = names.get(expression.scalar_function.function_reference)
    arguments = [argument.value for argument in expression.scalar_function.arguments]
    if op not in _FLIPPED or len(arguments) != 2:
        return None
    column, value = _column(arguments[0], schema), _literal(arguments[1])
    if column is None:  # literal first: 5 < a is a > 5
        column, value, op = _column(arguments[1], schema), _literal(arguments[0]), _FLIPPED[op]
    if column is None or value is None:
        return None
    return column, op, [value]


def _column(expression: Expression, schema: pa.Schema) -> str | None:
    if expression.WhichOneof("rex_type") != "selection":
        return None
    reference = expression.selection.direct_reference.struct_field
    if reference.HasField("child") or not 0 <= reference.field < len(schema):
        return None
    return schema.field(reference.field).name


def with_list_bounds(filter: pc.Expression | None, schema: pa.Schema) -> pc.Expression | None:
    """filter and, for each column its conjuncts test against IN lists, the
    range from the least to the greatest value they allow: the same rows, in a
    form statistics can rule objects out by (pyarrow's simplifier leaves lists
    of 64 values and more alone)."""
    if filter is None:
        return None
    try:
        ranges = column_ranges(filter, schema)
    except (OverflowError, ValueError, TypeError):  # e.g. a date beyond Python's: prune as before
        return filter
    for found in ranges:
        field = schema.field(found.column)
        if found.kind != "in" or pa.types.is_floating(field.type):  # a list may hold NaN, no range does
            continue
        bounds = found.expression(field)
        if bounds is not None:
            filter = filter & bounds
    return filter


def _literal(expression: Expression) -> Literal | None:
    if expression.WhichOneof("rex_type") != "literal":
        return None
    literal = expression.literal
    kind = literal.WhichOneof("literal_type")
    if kind == "date":
        return (_EPOCH + datetime.timedelta(days=literal.date)).isoformat()
    if kind in ("boolean", "i8", "i16", "i32", "i64", "fp32", "fp64", "string"):
        return getattr(literal, kind)
    return None


def _merged(column: str, found: list[tuple[str, list[Literal]]]) -> ColumnRange:
    low = high = None
    kind = "range"
    for op, values in found:
        try:
            if op in ("equal", "in"):
                kind = "eq" if op == "equal" and kind != "in" else "in"
                low = min(values) if low is None else max(low, min(values))
                high = max(values) if high is None else min(high, max(values))
            elif op in ("gt", "gte"):
                low = values[0] if low is None else max(low, values[0])
            else:
                high = values[0] if high is None else min(high, values[0])
        except TypeError:  # literals of different kinds on one column
            return ColumnRange(column, "range", None, None)
    if kind == "in" and low == high:
        kind = "eq"
    return ColumnRange(column, kind, low, high)
