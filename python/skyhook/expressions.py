"""Filters and projections: validation against a dataset schema and encoding as Substrait."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.substrait as pas

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
            raise UnknownColumnError(
                f"unknown column {unknown[0]!r}; the dataset has {', '.join(schema.names)}")
    try:
        return pads.dataset(schema.empty_table()).scanner(columns=columns, filter=filter).projected_schema
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as error:
        raise _translate(error, schema) from None


def _translate(error: Exception, schema: pa.Schema) -> Exception:
    message = str(error).splitlines()[0]
    missing = _MISSING_FIELD.search(str(error))
    if missing:
        return UnknownColumnError(
            f"unknown column {missing['name']!r}; the dataset has {', '.join(schema.names)}")
    if "no kernel matching input types" in message or isinstance(error, (pa.ArrowTypeError, TypeError)):
        return TypeMismatchError(f"type mismatch in expression: {message}")
    return InvalidRequestError(f"invalid expression: {message}")


def serialize_filter(filter: pc.Expression, schema: pa.Schema) -> bytes | None:
    """Substrait for a validated filter, or None when Substrait cannot express it
    (for example an implicit safe cast); the client then applies it itself."""
    try:
        return bytes(pas.serialize_expressions([filter], ["filter"], schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def serialize_projection(columns: Columns, schema: pa.Schema) -> bytes | None:
    """Substrait for the output columns; None means every column."""
    if columns is None:
        return None
    if isinstance(columns, Mapping):
        names, expressions = list(columns), list(columns.values())
    else:
        names, expressions = list(columns), [pc.field(name) for name in columns]
    try:
        return bytes(pas.serialize_expressions(expressions, names, schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise InvalidRequestError(
            f"projection cannot run in storage: {str(error).splitlines()[0]}") from None
