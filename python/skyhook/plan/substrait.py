"""Building Substrait plans from pyarrow expressions.

pyarrow serialises expressions (``ExtendedExpression``); this module places
them into a plan ``read -> filter -> project -> aggregate`` whose read is the
named table ``object``: the one object a storage method runs on.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas
from google.protobuf.message import Message
from substrait.gen.proto import algebra_pb2, extended_expression_pb2, plan_pb2, type_pb2

from skyhook.plan.carried_types import is_carried, request_schema
from skyhook.plan.expression_tree import NotSerializable, serializable

ARITHMETIC = "https://github.com/substrait-io/substrait/blob/main/extensions/functions_arithmetic.yaml"
GENERIC = "https://github.com/substrait-io/substrait/blob/main/extensions/functions_aggregate_generic.yaml"
ARROW = "urn:arrow:substrait_simple_extension_function"
#: skyhook's own measures (cpp/skyhook/storage/methods/partial_measures.h)
SKYHOOK = "urn:skyhook:partial_measures"
OBJECT_TABLE = "object"

Expression = algebra_pb2.Expression


def field_reference(index: int) -> Expression:
    segment = Expression.ReferenceSegment(struct_field=Expression.ReferenceSegment.StructField(field=index))
    return Expression(
        selection=Expression.FieldReference(
            direct_reference=segment, root_reference=Expression.FieldReference.RootReference()
        )
    )


def referenced_fields(message: Message) -> set[int]:
    """Top-level field indices that root field references in message point at."""
    found: set[int] = set()
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        values = value if descriptor.is_repeated else [value]
        for item in values:
            if isinstance(item, Expression) and item.WhichOneof("rex_type") == "literal":
                continue  # no reference inside (an IN list holds thousands)
            if (
                isinstance(item, Expression.FieldReference)
                and item.HasField("root_reference")
                and item.direct_reference.HasField("struct_field")
            ):
                found.add(item.direct_reference.struct_field.field)
            elif isinstance(item, Message):
                found |= referenced_fields(item)
    return found


def serialize(
    expressions: Sequence[pc.Expression], names: Sequence[str], schema: pa.Schema
) -> extended_expression_pb2.ExtendedExpression:
    """pyarrow's Substrait for expressions, their AND/OR chains balanced first
    (plan/expression_tree.py); NotSerializable when pyarrow cannot serialise
    them or would take out of all proportion."""
    try:
        balanced = [serializable(expression) for expression in expressions]
        data = bytes(pas.serialize_expressions(balanced, list(names), schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        raise NotSerializable(str(error)) from None
    message = extended_expression_pb2.ExtendedExpression.FromString(data)
    _declare_each_uri_once(message)
    return message


def _declare_each_uri_once(message: extended_expression_pb2.ExtendedExpression) -> None:
    """pyarrow declares each extension URI again at every level of nested calls
    (2 ** depth copies): one declaration each, the extensions pointed at it."""
    anchor_of: dict[str, int] = {}
    same_as: dict[int, int] = {}
    for declared in message.extension_uris:
        same_as[declared.extension_uri_anchor] = anchor_of.setdefault(declared.uri, declared.extension_uri_anchor)
    if len(anchor_of) == len(message.extension_uris):
        return
    kept = {anchor: uri for uri, anchor in anchor_of.items()}
    del message.extension_uris[:]
    for anchor, uri in sorted(kept.items()):
        message.extension_uris.add(extension_uri_anchor=anchor, uri=uri)
    for declaration in message.extensions:
        mapping = getattr(declaration, declaration.WhichOneof("mapping_type"))
        mapping.extension_uri_reference = same_as[mapping.extension_uri_reference]


def top_level_names(schema: type_pb2.NamedStruct) -> list[str]:
    """The column names of a NamedStruct, whose names also name struct fields, depth first."""
    names, position = [], 0
    for type in schema.struct.types:
        names.append(schema.names[position])
        position += _names_for(type)
    return names


def _names_for(type: type_pb2.Type) -> int:
    # Arrow names the fields of structs, but nothing inside lists and maps.
    return 1 + sum(_names_for(child) for child in type.struct.types) if type.HasField("struct") else 1


def substrait_type(type: pa.DataType, plan: plan_pb2.Plan) -> type_pb2.Type:
    """type in Substrait, its user-defined types (unsigned integers, ...) declared in plan."""
    if pa.types.is_fixed_size_list(type):  # Substrait has variable-length lists only
        type = pa.list_(type.value_type)
    named = _one_column(type)
    uris = {declared.extension_uri_anchor: declared.uri for declared in named.extension_uris}
    declared_types = {
        declaration.extension_type.type_anchor: declaration.extension_type
        for declaration in named.extensions
        if declaration.HasField("extension_type")
    }
    result = type_pb2.Type()
    result.CopyFrom(named.base_schema.struct.types[0])  # the kept message stays as serialised
    for user_defined in _user_defined_types(result):
        declared = declared_types[user_defined.type_reference]
        user_defined.type_reference = declare_type(plan, uris[declared.extension_uri_reference], declared.name)
    return result


@functools.lru_cache(maxsize=256)
def _one_column(type: pa.DataType) -> extended_expression_pb2.ExtendedExpression:
    """A column of type, serialised once per type (plans declare their measures' types)."""
    return serialize([pc.field("x")], ["x"], pa.schema([("x", type)]))


def _user_defined_types(message: Message) -> Iterator[type_pb2.Type.UserDefined]:
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        for item in value if descriptor.is_repeated else [value]:
            if isinstance(item, type_pb2.Type.UserDefined):
                yield item
            else:
                yield from _user_defined_types(item)


Declarable = plan_pb2.Plan | extended_expression_pb2.ExtendedExpression
_ANCHORS = {"extension_function": "function_anchor", "extension_type": "type_anchor"}


def declare_function(plan: Declarable, uri: str, name: str) -> int:
    """The anchor of an extension function in plan, declared if missing."""
    return _declare(plan, "extension_function", uri, name)


def declare_type(plan: Declarable, uri: str, name: str) -> int:
    """The anchor of an extension type in plan, declared if missing."""
    return _declare(plan, "extension_type", uri, name)


def _declare(plan: Declarable, kind: str, uri: str, name: str) -> int:
    uris = {declared.uri: declared.extension_uri_anchor for declared in plan.extension_uris}
    if uri not in uris:
        uris[uri] = 1 + max(uris.values(), default=0)
        plan.extension_uris.add(extension_uri_anchor=uris[uri], uri=uri)
    anchor_field = _ANCHORS[kind]
    declared = [getattr(declaration, kind) for declaration in plan.extensions if declaration.HasField(kind)]
    for item in declared:
        if (item.extension_uri_reference, item.name) == (uris[uri], name):
            return getattr(item, anchor_field)
    anchor = 1 + max((getattr(item, anchor_field) for item in declared), default=0)
    added = getattr(plan.extensions.add(), kind)
    added.extension_uri_reference, added.name = uris[uri], name
    setattr(added, anchor_field, anchor)
    return anchor


class UncarriedTypes(Exception):
    """A plan's projections read a column Substrait names by another type
    (plan/carried_types.py): pyarrow computes such a query at the client."""


class PlanBuilder:
    """One plan over expressions bound to ``schema``: only the columns they
    reference are read, so the read's base schema names what storage decodes,
    each column by its carrier; a filter (vetted by to_substrait) may read
    columns whose carrier is another type, the projections may not."""

    def __init__(self, schema: pa.Schema, filter: pc.Expression | None, projections: Sequence[pc.Expression]) -> None:
        expressions = ([filter] if filter is not None else []) + list(projections)
        names = [f"e{i}" for i in range(len(expressions))]
        carried = request_schema(schema)
        try:
            whole = serialize(expressions, names, carried)
        except NotSerializable as error:
            raise UncarriedTypes(str(error)) from None
        read = [referenced_fields(referred) for referred in whole.referred_expr]
        used = set().union(*read)
        projected = set().union(*read[len(expressions) - len(projections) :])
        if not all(is_carried(schema.field(i)) for i in used):
            raise UncarriedTypes("the query reads a column Substrait cannot carry")
        if any(carried.field(i).type != schema.field(i).type for i in projected):
            raise UncarriedTypes("a projection reads a column Substrait names by another type")
        self.read_schema = pa.schema([carried.field(i) for i in sorted(used)])
        bound = serialize(expressions, names, self.read_schema)
        storage_form(bound, filters=0 if filter is None else 1)  # to_substrait has vetted the filter
        refusal = storage_refusal(bound)
        if refusal is not None:
            raise UncarriedTypes(refusal)
        self.plan = plan_pb2.Plan()
        self.plan.extension_uris.extend(bound.extension_uris)
        self.plan.extensions.extend(bound.extensions)
        bodies = [referred.expression for referred in bound.referred_expr]
        self.filter = bodies[0] if filter is not None else None
        self.projections = bodies[1:] if filter is not None else bodies
        self.base_schema = bound.base_schema

    def function(self, uri: str, name: str) -> int:
        """The anchor of an extension function, declared on first use."""
        return declare_function(self.plan, uri, name)

    def input(self) -> algebra_pb2.Rel:
        """read -> filter -> project: the projections, in order, are the output."""
        read = algebra_pb2.ReadRel(
            base_schema=self.base_schema, named_table=algebra_pb2.ReadRel.NamedTable(names=[OBJECT_TABLE])
        )
        rel = algebra_pb2.Rel(read=read)
        if self.filter is not None:
            rel = algebra_pb2.Rel(filter=algebra_pb2.FilterRel(input=rel, condition=self.filter))
        width = len(self.read_schema)
        emit = algebra_pb2.RelCommon.Emit(output_mapping=range(width, width + len(self.projections)))
        return algebra_pb2.Rel(
            project=algebra_pb2.ProjectRel(
                input=rel, expressions=self.projections, common=algebra_pb2.RelCommon(emit=emit)
            )
        )

    def finish(self, rel: algebra_pb2.Rel, names: Sequence[str]) -> bytes:
        plan = plan_pb2.Plan()
        plan.CopyFrom(self.plan)
        plan.relations.add(root=algebra_pb2.RelRoot(input=rel, names=list(names)))
        return plan.SerializeToString()


def measures_of(plan: plan_pb2.Plan) -> Iterator[tuple[str, algebra_pb2.AggregateFunction]]:
    """(function name, call) of each measure of the plan's aggregate."""
    names = {
        declaration.extension_function.function_anchor: declaration.extension_function.name
        for declaration in plan.extensions
    }
    for measure in plan.relations[0].root.input.aggregate.measures:
        yield names[measure.measure.function_reference], measure.measure


# IN lists. pyarrow writes is_in as a SingularOrList, which Arrow's consumer
# runs as OR-ed equalities: null instead of false for a null value, and a null
# or NaN in the list never matches. That is faithful in a filter under and /
# or alone (where null and false both drop the row), for a list without null
# or NaN. DuckDB guards its IN lists, `if_else(is_valid(x), is_in(x, L),
# null)` (NOT IN is invert() of that): null for a null x, otherwise whether x
# is in L, which is exactly the OR-ed equalities over L's non-null values, in
# any context.
BOOLEAN = "https://github.com/substrait-io/substrait/blob/main/extensions/functions_boolean.yaml"
IN_LIST_CHUNK = 1000  # storage's longest IN list (cpp/skyhook/substrait/checks.h)
_NULL_AS_FALSE = ("and", "or")  # a filter drops a row for null as for false under these alone
_BOOLEAN_TYPE = type_pb2.Type(bool=type_pb2.Type.Boolean(nullability=type_pb2.Type.NULLABILITY_NULLABLE))


def _is_nan(option: Expression) -> bool:
    kind = option.literal.WhichOneof("literal_type")
    return kind in ("fp32", "fp64") and math.isnan(getattr(option.literal, kind))


def _matches_like_equality(option: Expression) -> bool:
    """A literal that equality matches as is_in does: not null, not NaN."""
    return option.HasField("literal") and option.literal.WhichOneof("literal_type") != "null" and not _is_nan(option)


def _child_expressions(message: Message) -> Iterator[Expression]:
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        for item in value if descriptor.is_repeated else [value]:
            if isinstance(item, Expression):
                yield item
            else:
                yield from _child_expressions(item)


class InListRewriter:
    """Rewrites the IN lists of a serialised expression in place into what
    storage runs exactly (see above); ``faithful`` says whether it succeeded."""

    def __init__(self, message: extended_expression_pb2.ExtendedExpression) -> None:
        self.message = message
        self.names = {
            declaration.extension_function.function_anchor: declaration.extension_function.name
            for declaration in message.extensions
        }

    def faithful(self, expression: Expression, is_filter: bool) -> bool:
        return self._visit(expression, is_filter)

    def _visit(self, expression: Expression, null_as_false: bool) -> bool:
        kind = expression.WhichOneof("rex_type")
        if kind == "if_then" and (guarded := self._guarded_in(expression)) is not None:
            value, options = guarded
            if not self._visit(value, False):
                return False
            if options:
                expression.CopyFrom(self._any_of(value, options))
                return True
            # x in (null): null or false, never true
            expression.CopyFrom(Expression(literal=Expression.Literal(boolean=False)))
            return null_as_false
        if kind == "scalar_function":
            call = expression.scalar_function
            inner = null_as_false and self.names.get(call.function_reference) in _NULL_AS_FALSE
            return all(self._visit(child, inner) for child in _child_expressions(call))
        if kind == "singular_or_list":
            in_list = expression.singular_or_list
            if not null_as_false or not all(_matches_like_equality(o) for o in in_list.options):
                return False
            if not self._visit(in_list.value, False):
                return False
            if len(in_list.options) > IN_LIST_CHUNK:
                expression.CopyFrom(self._any_of(in_list.value, list(in_list.options)))
            return True
        return all(self._visit(child, False) for child in _child_expressions(expression))

    def _guarded_in(self, expression: Expression) -> tuple[Expression, list[Expression]] | None:
        """(x, L without nulls) of `if_else(is_valid(x), is_in(x, L), null)`, when L has no NaN."""
        if_then = expression.if_then
        otherwise = getattr(if_then, "else")
        if len(if_then.ifs) != 1 or otherwise.literal.WhichOneof("literal_type") != "null":
            return None
        condition, then = getattr(if_then.ifs[0], "if"), if_then.ifs[0].then
        check = condition.scalar_function
        if (
            not condition.HasField("scalar_function")
            or self.names.get(check.function_reference) != "is_not_null"
            or len(check.arguments) != 1
            or not then.HasField("singular_or_list")
            or then.singular_or_list.value != check.arguments[0].value
        ):
            return None
        options = list(then.singular_or_list.options)
        if not all(option.HasField("literal") and not _is_nan(option) for option in options):
            return None
        # x is valid here, so a null in L matches nothing.
        value = Expression()
        value.CopyFrom(then.singular_or_list.value)
        return value, [option for option in options if _matches_like_equality(option)]

    def _any_of(self, value: Expression, options: list[Expression]) -> Expression:
        """value = one of options: IN lists of at most IN_LIST_CHUNK values under a balanced OR."""
        if len(options) <= IN_LIST_CHUNK:
            return Expression(singular_or_list=Expression.SingularOrList(value=value, options=options))
        half = (len(options) + 1) // 2
        return self._call(BOOLEAN, "or", [self._any_of(value, options[:half]), self._any_of(value, options[half:])])

    def _call(self, uri: str, name: str, arguments: list[Expression]) -> Expression:
        anchor = declare_function(self.message, uri, name)
        self.names[anchor] = name
        return Expression(
            scalar_function=Expression.ScalarFunction(
                function_reference=anchor,
                output_type=_BOOLEAN_TYPE,
                arguments=[algebra_pb2.FunctionArgument(value=argument) for argument in arguments],
            )
        )


#: What storage runs (cpp/skyhook/substrait/expression_check.cc): these scalar
#: functions, over literals, column references, casts and IN lists. An
#: expression with anything else runs at the client.
STORAGE_FUNCTIONS = frozenset(
    {
        *("equal", "not_equal", "lt", "gt", "lte", "gte", "and", "or", "not"),
        *("is_null", "is_not_null", "is_nan", "is_finite", "is_infinite"),
        *("add", "subtract", "multiply", "divide", "negate", "abs", "exp"),
        *("starts_with", "ends_with", "contains"),
    }
)
_STORAGE_KINDS = frozenset({"literal", "selection", "scalar_function", "cast", "singular_or_list"})


def storage_refusal(message: extended_expression_pb2.ExtendedExpression) -> str | None:
    """Why storage would refuse message's expressions (None: it runs them),
    checked here so that such expressions run at the client instead of failing."""
    declared = {
        declaration.extension_function.name.split(":")[0]
        for declaration in message.extensions
        if declaration.HasField("extension_function")
    }
    outside = sorted(declared - STORAGE_FUNCTIONS)
    if outside:
        return f"storage does not run the function {outside[0]!r}"
    pending = [referred.expression for referred in message.referred_expr]
    while pending:
        expression = pending.pop()
        kind = expression.WhichOneof("rex_type")
        if kind not in _STORAGE_KINDS:
            return f"storage does not run {kind} expressions"
        if kind == "scalar_function":
            pending.extend(argument.value for argument in expression.scalar_function.arguments)
        elif kind == "cast":
            pending.append(expression.cast.input)
        elif kind == "singular_or_list":
            pending.extend([expression.singular_or_list.value, *expression.singular_or_list.options])
    return None


def storage_form(message: extended_expression_pb2.ExtendedExpression, filters: int = 0) -> bool:
    """Rewrites message's IN lists in place for storage (its first ``filters``
    expressions are filters); False when some IN list cannot be carried exactly.
    (Substrait drops is_in's options; pyarrow sets MATCH or SKIP: either way a
    null in L matches no valid x.)"""
    rewriter = InListRewriter(message)
    return all(
        rewriter.faithful(referred.expression, index < filters) for index, referred in enumerate(message.referred_expr)
    )
