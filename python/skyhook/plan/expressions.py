"""Filters and projections: validation against a dataset schema and encoding as Substrait."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.substrait as pas
from google.protobuf.message import Message
from substrait.gen.proto.algebra_pb2 import Expression
from substrait.gen.proto.extended_expression_pb2 import ExtendedExpression

from skyhook.errors import InvalidRequestError, TypeMismatchError, UnknownColumnError

Columns = Sequence[str] | Mapping[str, pc.Expression] | None

_MISSING_FIELD = re.compile(r"No match for FieldRef\.Name\((?P<name>[^)]*)\)")


def projected_schema(schema: pa.Schema, columns: Columns, filter: pc.Expression | None) -> pa.Schema:
    """The schema a scan returns; raises a skyhook error naming what is wrong."""
    if filter is not None and not isinstance(filter, pc.Expression):
        raise InvalidRequestError(f"filter must be a pyarrow.compute.Expression, not {type(filter).__name__}")
    if columns is not None and not isinstance(columns, Mapping):
        if isinstance(columns, str):
            raise InvalidRequestError("columns must be a list of names, not a string")
        columns = list(columns)
        unknown = [name for name in columns if schema.get_field_index(name) < 0]
        if unknown:
            raise UnknownColumnError(f"unknown column {unknown[0]!r}; the dataset has {', '.join(schema.names)}")
    try:
        scanner = pads.dataset(schema.empty_table()).scanner(columns=columns, filter=filter)
        if filter is not None:
            scanner.to_table()  # binds the filter: one that is not boolean is refused here
        return scanner.projected_schema
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as error:
        raise _translate(error, schema) from None


def _translate(error: Exception, schema: pa.Schema) -> Exception:
    message = str(error).splitlines()[0]
    missing = _MISSING_FIELD.search(str(error))
    if missing:
        return UnknownColumnError(f"unknown column {missing['name']!r}; the dataset has {', '.join(schema.names)}")
    if "no kernel matching input types" in message or isinstance(error, (pa.ArrowTypeError, TypeError)):
        return TypeMismatchError(f"type mismatch in expression: {message}")
    return InvalidRequestError(f"invalid expression: {message}")


# Substrait has no is_in: pyarrow encodes it as OR-ed equalities, which give
# null instead of false for a null input, and never match a null in the value
# set (nor a NaN). A filter only notices the first under operators that tell
# null from false; a projection always does.
_NULL_SENSITIVE = (
    "invert(",
    "is_null(",
    "is_valid(",
    "if_else(",
    "coalesce(",
    "fill_null",
    "case_when(",
    "true_unless_null(",
    "choose(",
)


def _changes_meaning_in_substrait(expression: pc.Expression, is_filter: bool) -> bool:
    text = str(expression)
    if "is_in(" not in text:
        return False
    # is_in also matches NaN with NaN; equality never does.
    null_or_nan_in_value_set = re.search(r"^\s+(null|nan|-nan),?$", text, re.MULTILINE) is not None
    return not is_filter or null_or_nan_in_value_set or any(operator in text for operator in _NULL_SENSITIVE)


def to_substrait(
    expressions: list[pc.Expression], names: list[str], schema: pa.Schema, *, is_filter: bool = False
) -> bytes | None:
    """Substrait for validated expressions, or None when Substrait cannot carry
    them faithfully (an implicit safe cast, a function without a Substrait
    mapping, is_in where nulls matter): the client then completes that part."""
    if any(_changes_meaning_in_substrait(expression, is_filter) for expression in expressions):
        return None
    try:
        serialized = bytes(pas.serialize_expressions(expressions, names, schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return serialized if _within_storage_limits(serialized) else None


# Storage refuses deeper expressions and longer IN lists (cpp/skyhook/substrait/checks.h):
# Arrow recurses once per level, and an IN list becomes a chain of ORs as long as the list.
MAX_EXPRESSION_DEPTH = 256
MAX_IN_LIST_LENGTH = 1000


def _within_storage_limits(serialized: bytes) -> bool:
    pending: list[tuple[Message, int]] = [(ExtendedExpression.FromString(serialized), 0)]
    while pending:
        message, depth = pending.pop()
        if isinstance(message, Expression):
            depth += 1
            if depth > MAX_EXPRESSION_DEPTH:
                return False
            if message.HasField("singular_or_list") and len(message.singular_or_list.options) > MAX_IN_LIST_LENGTH:
                return False
        for descriptor, value in message.ListFields():
            if descriptor.message_type is not None:
                pending.extend((item, depth) for item in (value if descriptor.is_repeated else [value]))
    return True


def output_expressions(columns: Columns) -> tuple[list[pc.Expression], list[str]]:
    if isinstance(columns, Mapping):
        return list(columns.values()), list(columns)
    return [pc.field(name) for name in columns], list(columns)
