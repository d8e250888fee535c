"""Filters and projections: validation against a dataset schema and encoding as Substrait."""

from __future__ import annotations

import functools
import operator
import pickle
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
from google.protobuf.message import Message
from substrait.gen.proto.algebra_pb2 import Expression
from substrait.gen.proto.extended_expression_pb2 import ExtendedExpression

from skyhook.errors import InvalidRequestError, TypeMismatchError, UnknownColumnError, first_line
from skyhook.plan.carried_types import carrier, is_carried, is_faithful, is_layout_only, request_schema
from skyhook.plan.expression_tree import MAX_EXPRESSION_DEPTH, NotSerializable, conjuncts, field_names
from skyhook.plan.substrait import IN_LIST_CHUNK, referenced_fields, serialize, storage_form, storage_refusal

Columns = Sequence[str] | Mapping[str, pc.Expression] | None

_MISSING_FIELD = re.compile(r"No match for FieldRef\.Name\((?P<name>[^)]*)\)")


def conjunction(first: pc.Expression | None, second: pc.Expression | None) -> pc.Expression | None:
    """Both filters (either may be absent)."""
    if first is None or second is None:
        return second if first is None else first
    return first & second


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


def to_substrait(
    expressions: list[pc.Expression], names: list[str], schema: pa.Schema, *, is_filter: bool = False
) -> bytes | None:
    """Substrait for validated expressions, or None when Substrait cannot carry
    them faithfully (an implicit safe cast, a function without a Substrait
    mapping, is_in where nulls matter, a column type it cannot carry as used,
    plan/carried_types.py): the client then completes that part. The request
    names only the columns the expressions read, each by its carrier; IN lists
    become what storage runs exactly (plan/substrait.py: storage_form)."""
    try:
        message = serialize(expressions, names, request_schema(schema))
    except NotSerializable:
        return None
    return _for_storage(message, _read_fields(message, schema), len(expressions) if is_filter else 0)


def filter_for_storage(filter: pc.Expression, schema: pa.Schema) -> tuple[bytes | None, set[str]]:
    """to_substrait([filter], ["filter"], schema, is_filter=True) and
    filter_columns(filter, schema) from one serialization (a query needs both)."""
    message = _filter_message(filter, schema)
    if message is None:
        return None, _named_columns(filter, schema)
    read = _read_fields(message, schema)
    return _for_storage(message, read, filters=1), {field.name for field in read}


@dataclass(frozen=True)
class FilterPlacement:
    """Where a validated filter runs: the conjuncts storage can run, as Substrait
    (None: none of them), and the rest, which the client evaluates on what storage
    returns (None: nothing is left)."""

    storage: bytes | None
    client: pc.Expression | None
    reads: set[str]  # the columns the whole filter reads
    client_reads: set[str]  # those the client's part reads


#: A filter storage cannot run whole is split into its conjuncts up to this many.
MAX_PLACED_CONJUNCTS = 256


def place_filter(filter: pc.Expression, schema: pa.Schema) -> FilterPlacement:
    """The filter whole in storage if it can go there, else each of its top-level
    conjuncts that can (`price > 100 AND match_like(comment, ...)`: the
    comparison prunes and filters in storage, the client runs match_like)."""
    substrait, reads = filter_for_storage(filter, schema)
    if substrait is not None:
        return FilterPlacement(substrait, None, reads, set())
    parts = conjuncts(filter)
    if len(parts) > MAX_PLACED_CONJUNCTS:  # each is serialized and checked on its own
        return FilterPlacement(None, filter, reads, reads)
    storable = [filter_for_storage(part, schema)[0] is not None for part in parts]
    if any(storable) and not all(storable):  # (all of them but not together: past storage's bounds)
        pushed = functools.reduce(operator.and_, [part for part, ok in zip(parts, storable) if ok])
        rest = functools.reduce(operator.and_, [part for part, ok in zip(parts, storable) if not ok])
        substrait = filter_for_storage(pushed, schema)[0]  # None past the IN-list bounds together
        if substrait is not None:
            return FilterPlacement(substrait, rest, reads, filter_columns(rest, schema))
    return FilterPlacement(None, filter, reads, reads)


def _filter_message(filter: pc.Expression, schema: pa.Schema) -> ExtendedExpression | None:
    """The filter serialised as a request carries it; None when pyarrow cannot."""
    try:
        return serialize([filter], ["filter"], request_schema(schema))
    except NotSerializable:
        return None


def _for_storage(message: ExtendedExpression, read: list[pa.Field], filters: int) -> bytes | None:
    return None if _refusal(message, read, filters) else message.SerializeToString()


def _refusal(message: ExtendedExpression, read: list[pa.Field], filters: int) -> str | None:
    """Why storage cannot run message as the client means it (None: it can);
    rewrites its IN lists for storage on the way (storage_form)."""
    if not _types_kept(message, read, filters > 0):
        return "a column it reads travels to storage as another type, on which it would mean something else"
    if _in_list_values(message) > MAX_IN_VALUES:  # before storage_form: splitting 100,000 values takes seconds
        return _PAST_LIMITS
    if not storage_form(message, filters=filters):
        return "an IN list whose null semantics Substrait cannot carry"
    refusal = storage_refusal(message)
    if refusal is not None:
        return refusal
    if not _within_storage_limits(message):
        return _PAST_LIMITS
    return None


_PAST_LIMITS = "past storage's limits (IN-list values, nesting, nodes)"


def placement_reasons(filter: pc.Expression, schema: pa.Schema) -> list[tuple[pc.Expression, str | None]]:
    """Each top-level conjunct of a validated filter and why it cannot run in
    storage (None: it can), for explain()."""
    reasons = []
    for part in conjuncts(filter):
        try:
            message = serialize([part], ["filter"], request_schema(schema))
        except NotSerializable as error:
            reasons.append((part, f"Substrait cannot carry it ({first_line(error)})"))
            continue
        reasons.append((part, _refusal(message, _read_fields(message, schema), filters=1)))
    return reasons


def _read_fields(message: ExtendedExpression, schema: pa.Schema) -> list[pa.Field]:
    """The fields of schema that message reads."""
    return [schema.field(index) for index in sorted(referenced_fields(message))]


# On a column whose carrier is another type, only these keep the dataset's
# meaning (comparisons and null tests; IN lists are SingularOrList).
_SAME_ON_CARRIERS = {"equal", "not_equal", "lt", "lte", "gt", "gte", "is_null", "is_not_null", "and", "or", "not"}


def _types_kept(message: ExtendedExpression, read: list[pa.Field], is_filter: bool) -> bool:
    """Whether the expressions mean on the carriers what they mean on the read fields' types."""
    if not all(is_carried(field) for field in read):
        return False
    converted = [field for field in read if carrier(field.type) != field.type and not is_layout_only(field.type)]
    if not converted:
        return True
    bodies = [referred.expression for referred in message.referred_expr]
    if not all(is_faithful(field.type) for field in converted):  # opaque: projected only
        return not is_filter and all(body.WhichOneof("rex_type") == "selection" for body in bodies)
    functions = {
        declaration.extension_function.name.split(":")[0]
        for declaration in message.extensions
        if declaration.HasField("extension_function")  # not the types pyarrow declares (large_string, ...)
    }
    return functions <= _SAME_ON_CARRIERS and all(_only_comparisons(body) for body in bodies)


def _only_comparisons(expression: Expression) -> bool:
    kind = expression.WhichOneof("rex_type")
    if kind in ("literal", "selection"):
        return True
    if kind == "scalar_function":
        return all(_only_comparisons(argument.value) for argument in expression.scalar_function.arguments)
    if kind == "singular_or_list":
        in_list = expression.singular_or_list
        return _only_comparisons(in_list.value) and all(_only_comparisons(option) for option in in_list.options)
    if kind == "if_then":  # the null-guarded IN list: if_else(is_valid(x), x IN L, null)
        branches = [part for clause in expression.if_then.ifs for part in (getattr(clause, "if"), clause.then)]
        return all(_only_comparisons(part) for part in [*branches, getattr(expression.if_then, "else")])
    return False


# Storage refuses deeper expressions, longer IN lists and more nodes
# (cpp/skyhook/substrait/checks.h): Arrow recurses once per level, and an IN
# list becomes a chain of ORs as long as the list. Longer lists are split into
# IN lists under a balanced OR, but Arrow's canonicalisation flattens nested
# ORs into one chain again (10,000 values overflowed a thread's stack) and
# each value costs an equality per row: past MAX_IN_VALUES in all, the client
# filters (storage still projects).
MAX_IN_LIST_LENGTH = IN_LIST_CHUNK
MAX_IN_VALUES = 2 * IN_LIST_CHUNK
MAX_MESSAGES = 100_000  # storage counts at most 200,000 nodes per request
_NESTED_LITERALS = {"list", "map", "struct", "empty_list", "empty_map", "user_defined"}


def _flat(literal: Expression.Literal) -> bool:
    return literal.WhichOneof("literal_type") not in _NESTED_LITERALS


def _in_list_values(serialized: ExtendedExpression) -> int:
    """How many values serialized's IN lists hold (literals are not walked)."""
    pending: list[Message] = [serialized]
    values = 0
    while pending:
        message = pending.pop()
        if isinstance(message, Expression):
            if message.WhichOneof("rex_type") == "literal":
                continue
            if message.HasField("singular_or_list"):
                values += len(message.singular_or_list.options)
                pending.append(message.singular_or_list.value)
                continue
        for descriptor, value in message.ListFields():
            if descriptor.message_type is not None:
                pending.extend(value if descriptor.is_repeated else [value])
    return values


def _within_storage_limits(serialized: ExtendedExpression) -> bool:
    pending: list[tuple[Message, int]] = [(serialized, 0)]
    in_values = messages = 0
    while pending:
        message, depth = pending.pop()
        messages += 1
        if messages > MAX_MESSAGES:
            return False
        if isinstance(message, Expression):
            depth += 1
            if depth > MAX_EXPRESSION_DEPTH:
                return False
            if message.WhichOneof("rex_type") == "literal" and _flat(message.literal):
                continue  # a node or two in storage's count: an IN list's values, walked no further
            if message.HasField("singular_or_list"):
                in_values += len(message.singular_or_list.options)
                if len(message.singular_or_list.options) > MAX_IN_LIST_LENGTH or in_values > MAX_IN_VALUES:
                    return False
        for descriptor, value in message.ListFields():
            if descriptor.message_type is not None:
                pending.extend((item, depth) for item in (value if descriptor.is_repeated else [value]))
    return True


def filter_columns(filter: pc.Expression, schema: pa.Schema) -> set[str]:
    """The names of the columns filter reads (a validated filter)."""
    message = _filter_message(filter, schema)
    return (
        _named_columns(filter, schema) if message is None else {field.name for field in _read_fields(message, schema)}
    )


def _named_columns(filter: pc.Expression, schema: pa.Schema) -> set[str]:
    """The columns filter names, for one Substrait cannot carry: every column
    when Arrow cannot say either (a reference into a nested field)."""
    names = field_names(filter)
    return set(schema.names) if names is None else names & set(schema.names)


def unbound(expression: pc.Expression) -> pc.Expression:
    """expression with its columns by name. Arrow hands fragments filters bound
    to the dataset's schema, whose columns Substrait then names by position in
    that schema; Arrow's own serialization keeps names and binds nothing."""
    return pickle.loads(pickle.dumps(expression))


def columns_read(
    schema: pa.Schema, columns: Columns, filter: pc.Expression | None, filter_reads: set[str] | None = None
) -> list[str] | None:
    """The columns a scan of columns with filter decodes, in the schema's order
    (None: every one). filter_reads: filter_columns(filter), when the caller has it."""
    if columns is None:
        return None
    expressions = list(columns.values()) if isinstance(columns, Mapping) else []
    names = set() if isinstance(columns, Mapping) else set(columns)
    if filter is not None:
        names |= filter_columns(filter, schema) if filter_reads is None else filter_reads
    for expression in expressions:
        names |= filter_columns(expression, schema)
    return [name for name in schema.names if name in names]


def output_expressions(columns: Columns) -> tuple[list[pc.Expression], list[str]]:
    if isinstance(columns, Mapping):
        return list(columns.values()), list(columns)
    return [pc.field(name) for name in columns], list(columns)
