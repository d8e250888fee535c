"""Filters written as text, e.g. ``l_extendedprice > 90000 and l_returnflag == 'R'``
or, SQL-style, ``l_extendedprice > 90000 AND l_returnflag = 'R'`` (see sql_filter.py).

The text is parsed with Python's grammar (never evaluated) into a pyarrow
expression whose literals take the type of the column they are compared with,
so ``decimal_column > 90000`` or ``date_column <= '1998-09-02'`` run in storage.
Comparisons follow SQL's null semantics: a null matches neither ``x in (...)``
nor ``x not in (...)``.
"""

from __future__ import annotations

import ast
import datetime
import decimal
import functools
import operator
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.errors import InvalidRequestError, TypeMismatchError, UnknownColumnError
from skyhook.plan.literal_lists import extract_lists
from skyhook.plan.sql_filter import MATCHES, is_sql_keyword, quotes_a_column, rewrite_sql

_COMPARISONS: dict[type, Callable[[Any, Any], pc.Expression]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_MIRRORED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_PREDICATES: dict[str, Callable[..., pc.Expression]] = {
    "is_null": lambda column: column.is_null(),
    "is_valid": lambda column: column.is_valid(),
    "starts_with": lambda column, prefix: pc.starts_with(column, prefix),
    "ends_with": lambda column, suffix: pc.ends_with(column, suffix),
    "contains": lambda column, text: pc.match_substring(column, text),
}


_STRING_PREDICATES = {"starts_with", "ends_with", "contains"}
_EXAMPLE = "write e.g. \"price > 10 and flag in ('A', 'R')\" or, SQL-style, \"price > 10 AND flag = 'R'\""


def parse_where(text: str, schema: pa.Schema) -> pc.Expression:
    typed = text.strip()
    text, lists = extract_lists(typed)  # the same length: offsets in it are offsets in what was typed
    tree = None if quotes_a_column(text, set(schema.names)) else _parse_python(text, schema)
    quoted: dict[str, str] = {}
    if tree is None:
        tree, quoted = _parse_sql(text, typed, schema)
    return _Converter(schema, quoted, lists).boolean(tree.body)


def _parse_python(text: str, schema: pa.Schema) -> ast.Expression | None:
    """The Python form, or None if the text is not one: a syntax error, or SQL
    that happens to parse (``NOT (x > 1)``, ``x == NULL``)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return None if any(is_sql_keyword(name) for name in names - set(schema.names)) else tree


def _parse_sql(text: str, typed: str, schema: pa.Schema) -> tuple[ast.Expression, dict[str, str]]:
    """SQL-style text (and the columns its placeholders name), or a mistake:
    then the error points into the text as typed."""
    rewritten = rewrite_sql(text, set(schema.names))
    try:
        return ast.parse(rewritten.text, mode="eval"), rewritten.quoted
    except SyntaxError as error:
        if not typed:
            raise InvalidRequestError(f"the filter is empty; {_EXAMPLE}") from None
        at = rewritten.origin((error.offset or 1) - 1)
        shown = typed if len(typed) <= 200 else typed[:200] + "..."
        raise InvalidRequestError(
            f"cannot parse filter {shown!r} at column {at + 1} ({typed[at : at + 20]!r}): {error.msg}; {_EXAMPLE}"
        ) from None


class _Converter:
    def __init__(self, schema: pa.Schema, quoted: dict[str, str], lists: dict[str, list[Any]]) -> None:
        self.schema = schema
        self.quoted = quoted  # placeholder identifier -> the column a quoted name named
        self.lists = lists  # placeholder identifier -> the values of a long IN list

    def boolean(self, node: ast.expr) -> pc.Expression:
        if isinstance(node, ast.BoolOp):
            parts = [self.boolean(value) for value in node.values]
            return _balanced(operator.and_ if isinstance(node.op, ast.And) else operator.or_, parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ~self.boolean(node.operand)
        if isinstance(node, ast.Compare):
            return self.comparison(node)
        if isinstance(node, ast.Call):
            return self.predicate(node)
        if isinstance(node, ast.Name):  # a boolean column
            return self.column(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):  # SQL's TRUE, FALSE
            return pc.scalar(node.value)
        raise InvalidRequestError(f"unsupported filter syntax: {ast.unparse(node)}; {_EXAMPLE}")

    def comparison(self, node: ast.Compare) -> pc.Expression:
        result = None
        left = node.left
        for op, right in zip(node.ops, node.comparators):  # a < b < c is a < b and b < c
            part = self.compare(left, type(op), right)
            result = part if result is None else result & part
            left = right
        return result

    def compare(self, left: ast.expr, op: type, right: ast.expr) -> pc.Expression:
        if op in (ast.Is, ast.IsNot):
            if not (isinstance(right, ast.Constant) and right.value is None):
                raise InvalidRequestError(f"'is' compares with None (SQL: IS NULL), not {ast.unparse(right)}")
            column = self.value(left)
            return column.is_null() if op is ast.Is else column.is_valid()
        if op in (ast.In, ast.NotIn):
            matched = self.membership(left, right)
            return ~matched if op is ast.NotIn else matched
        if op not in _COMPARISONS:
            raise InvalidRequestError(f"unsupported comparison in filter: {ast.unparse(right)}")
        if self.is_literal(left) and not self.is_literal(right):
            left, right, op = right, left, _MIRRORED[op]
        column_type = self.type_of(left)
        if column_type is not None and self.is_literal(right):
            return self.compare_with_literal(self.value(left), column_type, op, self.literal(right))
        return _COMPARISONS[op](self.value(left), self.value(right))

    def membership(self, left: ast.expr, right: ast.expr) -> pc.Expression:
        """x in [...] (or one value: SQL's IN (5)), and SQL's BETWEEN and LIKE."""
        if isinstance(right, ast.Call) and isinstance(right.func, ast.Name) and right.func.id in MATCHES:
            return self.match(left, right.func.id, right.args)
        values = self.extracted_list(right)
        if values is not None:
            elements: list[ast.expr] | None = [ast.Constant(value) for value in values]
        else:
            elements = [right] if self.is_literal(right) else getattr(right, "elts", None)
            if not isinstance(right, (ast.List, ast.Tuple, ast.Set, ast.Constant, ast.UnaryOp)) or not elements:
                raise InvalidRequestError(f"'in' needs a list of values, e.g. flag in ('A', 'R'): {ast.unparse(right)}")
            if all(self.is_literal(element) for element in elements):
                values = [self.literal(element) for element in elements]
        guarded = None if values is None else self.guarded_membership(left, values)
        if guarded is not None:
            return guarded
        # SQL semantics (a null never matches) as OR-ed equalities, for a list with a null or NaN
        # or a value that is not a column.
        return _balanced(operator.or_, [self.compare(left, ast.Eq, element) for element in elements])

    def extracted_list(self, node: ast.expr) -> list[Any] | None:
        """The values of a long IN list literal_lists.py took out (its placeholder
        alone, or in brackets), or None."""
        if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) == 1:
            node = node.elts[0]
        return self.lists.get(node.id) if isinstance(node, ast.Name) else None

    def guarded_membership(self, left: ast.expr, values: list[Any]) -> pc.Expression | None:
        """A column in a list of literals as DuckDB writes it, `if_else(is_valid(x), is_in(x, L),
        null)`: SQL's semantics in any context, one node whatever L's length (storage runs it,
        plan/substrait.py). None when the list holds a null or NaN or a value of another type."""
        column_type = self.type_of(left)
        if column_type is None:
            return None
        # A dictionary column's values are matched, as its equalities match them.
        value_type = column_type.value_type if pa.types.is_dictionary(column_type) else column_type
        value_set = _exact_value_set(values, value_type)
        if value_set is None:
            return None
        column = self.value(left)
        in_list = pc.is_in(column, value_set=value_set)
        return pc.if_else(column.is_valid(), in_list, pa.scalar(None, pa.bool_()))

    def match(self, left: ast.expr, kind: str, arguments: list[ast.expr]) -> pc.Expression:
        """BETWEEN and [I]LIKE as sql_filter.py writes them: x in between(low, high), x in like('p%')."""
        if kind == "between":
            if len(arguments) != 2:
                raise InvalidRequestError(f"cannot parse {ast.unparse(left)} BETWEEN: expected BETWEEN low AND high")
            low, high = arguments
            return self.compare(left, ast.GtE, low) & self.compare(left, ast.LtE, high)
        pattern = self.literal(arguments[0]) if len(arguments) == 1 else None
        if not isinstance(pattern, str):
            raise InvalidRequestError(f"{kind.upper()} needs one quoted pattern, e.g. 'abc%'")
        column_type = self.type_of(left)
        if column_type is not None and not (pa.types.is_string(column_type) or pa.types.is_large_string(column_type)):
            raise TypeMismatchError(f"{kind.upper()} needs a string column; {ast.unparse(left)} is {column_type}")
        return _like(self.text_value(left), pattern, ignore_case=kind == "ilike")

    def compare_with_literal(self, column: pc.Expression, type: pa.DataType, op: type, value: Any) -> pc.Expression:
        try:
            literal = _coerce(value, type)
        except _UNREPRESENTABLE:
            literal = None
        if literal is not None:
            return _COMPARISONS[op](column, pc.scalar(literal))
        numeric = pa.types.is_integer(type) or pa.types.is_decimal(type) or pa.types.is_floating(type)
        if numeric and isinstance(value, (int, float)) and not isinstance(value, bool):
            # e.g. int_column > 1.5: compare as float64 (an explicit, unsafe cast
            # Substrait can carry) rather than fail.
            return _COMPARISONS[op](column.cast(pa.float64(), safe=False), pc.scalar(float(value)))
        raise TypeMismatchError(f"cannot compare a {type} column with {value!r}")

    def predicate(self, node: ast.Call) -> pc.Expression:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in _PREDICATES:
            raise InvalidRequestError(f"unknown function {ast.unparse(node.func)!r}; known: {', '.join(_PREDICATES)}")
        if not node.args:
            raise InvalidRequestError(f"{name} needs a column")
        column = self.text_value(node.args[0]) if name in _STRING_PREDICATES else self.value(node.args[0])
        return _PREDICATES[name](column, *[self.literal(arg) for arg in node.args[1:]])

    def text_value(self, node: ast.expr) -> pc.Expression:
        """node for a string function: a large_string column cast to string,
        as Substrait carries them to storage (no bytes change; a batch of one
        object never holds 2 GiB of text)."""
        column_type = self.type_of(node)
        if column_type is not None and pa.types.is_large_string(column_type):
            return self.value(node).cast(pa.string(), safe=False)
        return self.value(node)

    def value(self, node: ast.expr) -> pc.Expression:
        if isinstance(node, ast.Name):
            return self.column(node)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](self.value(node.left), self.value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return pc.negate_checked(self.value(node.operand))
        return pc.scalar(self.literal(node))

    def column(self, node: ast.Name) -> pc.Expression:
        name = self.quoted.get(node.id, node.id)
        if self.schema.get_field_index(name) < 0:
            raise UnknownColumnError(f"unknown column {name!r}; the dataset has {', '.join(self.schema.names)}")
        return pc.field(name)

    def type_of(self, node: ast.expr) -> pa.DataType | None:
        if isinstance(node, ast.Name) and self.schema.get_field_index(self.quoted.get(node.id, node.id)) >= 0:
            return self.schema.field(self.quoted.get(node.id, node.id)).type
        return None

    @staticmethod
    def is_literal(node: ast.expr) -> bool:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return _Converter.is_literal(node.operand)
        return isinstance(node, ast.Constant)

    def literal(self, node: ast.expr) -> Any:
        try:
            return ast.literal_eval(node)
        except ValueError:
            raise InvalidRequestError(f"expected a literal value, got {ast.unparse(node)}") from None


def _balanced(combine: Callable[[pc.Expression, pc.Expression], pc.Expression], parts: list) -> pc.Expression:
    """parts combined as a balanced tree: pyarrow's Substrait serialization grows
    exponentially with the depth of a chain (its extension URIs double per level)."""
    if len(parts) == 1:
        return parts[0]
    half = len(parts) // 2
    return combine(_balanced(combine, parts[:half]), _balanced(combine, parts[half:]))


def _is_nan(value: pa.Scalar) -> bool:
    return pa.types.is_floating(value.type) and value.as_py() != value.as_py()


# What converting a literal to a column's type raises when the type cannot hold it.
_UNREPRESENTABLE = (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError, OverflowError, decimal.InvalidOperation)


def _exact_value_set(values: list[Any], type: pa.DataType) -> pa.Array | None:
    """values as an array of type, or None if one would change value or is a
    null or NaN. Integers and strings convert at once (a long IN list), the
    rest value by value."""
    kinds = {value.__class__ for value in values}
    if (kinds == {int} and pa.types.is_integer(type)) or (
        kinds == {str} and (pa.types.is_string(type) or pa.types.is_large_string(type))
    ):
        try:
            return pa.array(values).cast(type)  # a safe cast: out of range fails
        except _UNREPRESENTABLE:
            return None
    try:
        scalars = [_coerce(value, type) for value in values]
    except _UNREPRESENTABLE:
        return None
    if any(scalar is None or not scalar.is_valid or _is_nan(scalar) for scalar in scalars):
        return None
    return pa.array([scalar.as_py() for scalar in scalars], type)


def _coerce(value: Any, type: pa.DataType) -> pa.Scalar | None:
    """The literal as a scalar of the column's type, or None if it would change value."""
    if value is None:
        return pa.scalar(None, type)
    if pa.types.is_decimal(type) and isinstance(value, (int, float)) and not isinstance(value, bool):
        exact = decimal.Decimal(str(value))
        scalar = pa.scalar(exact, type)
        return scalar if scalar.as_py() == exact else None
    if pa.types.is_integer(type) and isinstance(value, float):
        return pa.scalar(int(value), type) if value.is_integer() else None
    if pa.types.is_date(type) and isinstance(value, str):
        return pa.scalar(datetime.date.fromisoformat(value), type)
    if pa.types.is_timestamp(type) and isinstance(value, str):
        return pa.scalar(datetime.datetime.fromisoformat(value), type)
    return pa.scalar(value, type)


def _like(column: pc.Expression, pattern: str, ignore_case: bool) -> pc.Expression:
    """SQL LIKE: % any text, _ one character. The common shapes become the
    string matches storage runs; the rest pyarrow's match_like."""
    body = pattern.strip("%")
    plain = not ignore_case and not any(character in body for character in "%_\\")
    if plain and pattern == body:
        return column == pc.scalar(pattern)
    if plain and pattern == body + "%":
        return pc.starts_with(column, body)
    if plain and pattern == "%" + body:
        return pc.ends_with(column, body)
    if plain and pattern == "%" + body + "%":
        return pc.match_substring(column, body)
    matches = [
        *_necessary_matches(column, pattern, ignore_case),
        pc.match_like(column, pattern, ignore_case=ignore_case),
    ]
    return functools.reduce(operator.and_, matches)


def _necessary_matches(column: pc.Expression, pattern: str, ignore_case: bool) -> list[pc.Expression]:
    """What every match of a general LIKE pattern has, as the string matches
    storage runs: its literal start, its literal end, its longest literal
    piece. They go to storage as conjuncts of their own (Substrait cannot
    carry match_like), so fewer rows reach the client's match_like."""
    if ignore_case or "\\" in pattern:
        return []
    pieces = re.split(r"[%_]", pattern)
    needed = []
    if pieces[0]:
        needed.append(pc.starts_with(column, pieces[0]))
    if len(pieces) > 1 and pieces[-1]:
        needed.append(pc.ends_with(column, pieces[-1]))
    inner = max(pieces[1:-1], key=len, default="")
    if len(inner) > 1:
        needed.append(pc.match_substring(column, inner))
    return needed
