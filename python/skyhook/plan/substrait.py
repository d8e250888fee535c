"""Building Substrait plans from pyarrow expressions.

pyarrow serialises expressions (``ExtendedExpression``); this module places
them into a plan ``read -> filter -> project -> aggregate`` whose read is the
named table ``object``: the one object a storage method runs on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas
from google.protobuf.message import Message
from substrait.gen.proto import algebra_pb2, extended_expression_pb2, plan_pb2, type_pb2
from substrait.gen.proto.extensions import extensions_pb2

ARITHMETIC = "https://github.com/substrait-io/substrait/blob/main/extensions/functions_arithmetic.yaml"
GENERIC = "https://github.com/substrait-io/substrait/blob/main/extensions/functions_aggregate_generic.yaml"
ARROW = "urn:arrow:substrait_simple_extension_function"
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
    data = bytes(pas.serialize_expressions(list(expressions), list(names), schema))
    return extended_expression_pb2.ExtendedExpression.FromString(data)


def substrait_type(type: pa.DataType) -> type_pb2.Type:
    return serialize([pc.field("x")], ["x"], pa.schema([("x", type)])).base_schema.struct.types[0]


def declare_function(plan: plan_pb2.Plan, uri: str, name: str) -> int:
    """The anchor of an extension function in plan, declared if missing."""
    uris = {declared.uri: declared.extension_uri_anchor for declared in plan.extension_uris}
    if uri not in uris:
        uris[uri] = 1 + max(uris.values(), default=0)
        plan.extension_uris.add(extension_uri_anchor=uris[uri], uri=uri)
    functions = [declaration.extension_function for declaration in plan.extensions]
    for function in functions:
        if (function.extension_uri_reference, function.name) == (uris[uri], name):
            return function.function_anchor
    anchor = 1 + max((function.function_anchor for function in functions), default=0)
    plan.extensions.add(
        extension_function=extensions_pb2.SimpleExtensionDeclaration.ExtensionFunction(
            extension_uri_reference=uris[uri], function_anchor=anchor, name=name
        )
    )
    return anchor


class PlanBuilder:
    """One plan over expressions bound to ``schema``: only the columns they
    reference are read, so the read's base schema names what storage decodes."""

    def __init__(self, schema: pa.Schema, filter: pc.Expression | None, projections: Sequence[pc.Expression]) -> None:
        expressions = ([filter] if filter is not None else []) + list(projections)
        names = [f"e{i}" for i in range(len(expressions))]
        used = referenced_fields(serialize(expressions, names, schema))
        self.read_schema = pa.schema([schema.field(i) for i in sorted(used)])
        bound = serialize(expressions, names, self.read_schema)
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
