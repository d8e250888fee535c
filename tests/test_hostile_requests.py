"""Requests crafted to crash, or to reach outside the object, get a clear
InvalidRequest from storage: each of these once killed the process (embedded)
or the OSD (Ceph). The store keeps working afterwards."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas
import pytest
from substrait.gen.proto import algebra_pb2, extended_expression_pb2, plan_pb2, type_pb2

import skyhook
from skyhook.rpc.frame import encode_request_frame
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import PlanRequest

F = pc.field
TABLE = pa.table(
    {
        "k": pa.array(range(1000), pa.int64()),
        "s": pa.array([f"v{i % 7}" for i in range(1000)]),
        "d": pa.array([i * 0.5 for i in range(1000)]),
    }
)

Plan = plan_pb2.Plan


@pytest.fixture
def dataset(store):
    return store.write_dataset("hostile", TABLE, rows_per_object=500)


def call(dataset, method: str, **fields) -> tuple[int, str]:
    name = dataset.manifest.partitions[0].object_name
    reply = decode_reply(dataset.store.backend.call(name, method, encode_request_frame({"method": method, **fields})))
    return reply.code, reply.message


def aggregate_plan(dataset) -> Plan:
    """A valid sub-plan the client sends: sum(d) grouped by s where k > 10."""
    execution = dataset.group_by("s").execution([("d", "sum")], filter=F("k") > 10)
    return Plan.FromString(execution.decomposition.sub_plan.plan)


def relations(
    plan: Plan,
) -> tuple[algebra_pb2.AggregateRel, algebra_pb2.ProjectRel, algebra_pb2.FilterRel, algebra_pb2.ReadRel]:
    aggregate = plan.relations[0].root.input.aggregate
    project = aggregate.input.project
    filter = project.input.filter
    return aggregate, project, filter, filter.input.read


def assert_refused(dataset, plan: Plan, message: str) -> None:
    code, text = call(dataset, "execute_plan", plan=plan.SerializeToString())
    assert code == 1, text
    assert message in text
    # The node is still there and still answers correctly.
    assert dataset.to_table(filter=F("k") < 3).equals(TABLE.slice(0, 3))


def test_valid_plan_runs(dataset):
    code, text = call(dataset, "execute_plan", plan=aggregate_plan(dataset).SerializeToString())
    assert code == 0, text


def _decimal_everywhere() -> list[tuple[str, Callable[[Plan], None]]]:
    def in_read_schema(plan: Plan) -> None:
        _, _, _, read = relations(plan)
        read.base_schema.struct.types[0].CopyFrom(_decimal_type(0, 0))

    def in_cast(plan: Plan) -> None:
        _, project, _, _ = relations(plan)
        cast = algebra_pb2.Expression(
            cast=algebra_pb2.Expression.Cast(type=_decimal_type(39, 2), input=project.expressions[0])
        )
        project.expressions[0].CopyFrom(cast)

    def in_output_type(plan: Plan) -> None:
        aggregate, _, _, _ = relations(plan)
        aggregate.measures[0].measure.output_type.CopyFrom(_decimal_type(100, 101))

    def in_literal(plan: Plan) -> None:
        _, _, filter, _ = relations(plan)
        literal = filter.condition.scalar_function.arguments[1].value.literal
        literal.CopyFrom(
            algebra_pb2.Expression.Literal(
                decimal=algebra_pb2.Expression.Literal.Decimal(value=bytes(16), precision=40, scale=2)
            )
        )

    return [
        ("read schema", in_read_schema),
        ("cast", in_cast),
        ("output type", in_output_type),
        ("literal", in_literal),
    ]


def _decimal_type(precision: int, scale: int) -> type_pb2.Type:
    return type_pb2.Type(decimal=type_pb2.Type.Decimal(precision=precision, scale=scale))


@pytest.mark.parametrize("where, corrupt", _decimal_everywhere(), ids=lambda x: x if isinstance(x, str) else "")
def test_decimal_precision_out_of_range(dataset, where, corrupt):
    plan = aggregate_plan(dataset)
    corrupt(plan)
    assert_refused(dataset, plan, "")


def test_decimal_precision_in_a_scan_filter(dataset):
    filter = extended_expression_pb2.ExtendedExpression.FromString(
        bytes(pas.serialize_expressions([F("k") > 5], ["f"], TABLE.schema))
    )
    filter.base_schema.struct.types[2].CopyFrom(_decimal_type(0, 0))
    code, text = call(dataset, "scan", filter=filter.SerializeToString())
    assert code == 1 and "decimal(0, 0)" in text


@pytest.mark.parametrize("relation", ["project", "filter", "aggregate"])
def test_emit_out_of_range(dataset, relation):
    plan = aggregate_plan(dataset)
    aggregate, project, filter, _ = relations(plan)
    target = {"project": project, "filter": filter, "aggregate": aggregate}[relation]
    target.common.emit.output_mapping[:] = [0, 1_000_000]
    assert_refused(dataset, plan, "emit index 1000000 is out of range")


def test_read_naming_a_column_twice(dataset):
    plan = aggregate_plan(dataset)
    _, _, _, read = relations(plan)
    read.base_schema.names.append(read.base_schema.names[0])
    read.base_schema.struct.types.append(read.base_schema.struct.types[0])
    assert_refused(dataset, plan, "named twice")


def test_filter_that_is_not_boolean(dataset):
    plan = aggregate_plan(dataset)
    _, _, filter, read = relations(plan)
    filter.condition.CopyFrom(filter.condition.scalar_function.arguments[0].value)  # just the column
    assert_refused(dataset, plan, "boolean")


def test_string_compared_with_an_integer(dataset):
    plan = aggregate_plan(dataset)
    _, _, filter, read = relations(plan)
    names = list(read.base_schema.names)
    string_column = names.index("s")
    # k > 10 becomes s > 10.
    filter.condition.scalar_function.arguments[0].value.selection.direct_reference.struct_field.field = string_column
    assert_refused(dataset, plan, "comparable types")


@pytest.mark.parametrize("path", ["/etc/passwd", "/", "../../objects"])
def test_local_files_cannot_be_read(dataset, path):
    plan = aggregate_plan(dataset)
    _, _, _, read = relations(plan)
    read.ClearField("named_table")
    item = read.local_files.items.add(uri_file=path)
    item.parquet.SetInParent()
    assert_refused(dataset, plan, "may only read the named table 'object'")


def test_other_named_tables_cannot_be_read(dataset):
    plan = aggregate_plan(dataset)
    _, _, _, read = relations(plan)
    read.named_table.names[:] = [dataset.manifest.partitions[1].object_name]
    assert_refused(dataset, plan, "may only read the named table 'object'")


def test_functions_outside_the_allowlist(dataset):
    plan = aggregate_plan(dataset)
    for declaration in plan.extensions:
        if declaration.extension_function.name.startswith("gt"):
            declaration.extension_function.name = "regexp_replace"
    assert_refused(dataset, plan, "function 'regexp_replace' is not allowed in storage")


def test_field_reference_out_of_range(dataset):
    plan = aggregate_plan(dataset)
    _, _, filter, _ = relations(plan)
    filter.condition.scalar_function.arguments[0].value.selection.direct_reference.struct_field.field = 7
    assert_refused(dataset, plan, "field reference 7 is out of range")


def test_unknown_fields_are_refused(dataset):
    plan = aggregate_plan(dataset)
    data = plan.SerializeToString() + bytes([0xF8, 0x3F, 0x01])  # field 1023, varint 1
    code, text = call(dataset, "execute_plan", plan=data)
    assert code == 1 and "does not know" in text


@pytest.mark.parametrize("length", [1001, 70_000])
def test_oversized_in_list(dataset, length):
    filter = extended_expression_pb2.ExtendedExpression.FromString(
        bytes(pas.serialize_expressions([F("k") == 1], ["f"], TABLE.schema))
    )
    comparison = filter.referred_expr[0].expression.scalar_function
    in_list = algebra_pb2.Expression(
        singular_or_list=algebra_pb2.Expression.SingularOrList(
            value=comparison.arguments[0].value, options=[comparison.arguments[1].value] * length
        )
    )
    filter.referred_expr[0].expression.CopyFrom(in_list)
    code, text = call(dataset, "scan", filter=filter.SerializeToString())
    assert code == 1 and f"IN list of {length} values" in text


def test_in_list_values_are_bounded_in_all(dataset):
    """Every IN-list value costs an equality per row however the lists nest: 190
    lists of 1,000 values once ran 5 s of CPU on one 1,024-row slice."""
    lists = [F("k").isin(list(range(start, start + 1000))) for start in (0, 1000)]
    within = extended_expression_pb2.ExtendedExpression.FromString(
        bytes(pas.serialize_expressions([lists[0] | lists[1]], ["f"], TABLE.schema))
    )
    code, text = call(dataset, "scan", filter=within.SerializeToString())
    assert code == 0, text
    both = within.referred_expr[0].expression.scalar_function
    one_more = algebra_pb2.FunctionArgument()
    one_more.CopyFrom(both.arguments[1])
    del one_more.value.singular_or_list.options[1:]
    both.arguments.append(one_more)
    code, text = call(dataset, "scan", filter=within.SerializeToString())
    assert code == 1 and "IN lists of more than 2000 values in all" in text


def test_long_is_in_completes_at_the_client(dataset):
    """An IN list of 20,000 values overflowed Arrow's binder (SIGSEGV); the client
    keeps such filters to itself, with the same answer."""
    filter = F("k").isin(list(range(0, 40_000, 2)))
    scanner = dataset.scanner(columns=["k", "s"], filter=filter, pushdown=True)
    assert scanner.to_table().equals(TABLE.filter(filter).select(["k", "s"]))
    assert not scanner.stats.filter_in_storage
    result = dataset.group_by("s").aggregate([("d", "sum")], filter=filter).sort_by("s")
    assert result.equals(TABLE.filter(filter).group_by("s").aggregate([("d", "sum")]).sort_by("s"))
    short = F("k").isin(list(range(0, 2000, 2)))  # 1,000 values: still in storage
    scanner = dataset.scanner(columns=["k"], filter=short, pushdown=True)
    assert scanner.to_table().equals(TABLE.filter(short).select(["k"]))
    assert scanner.stats.filter_in_storage


def _remap_references(message, mapping: dict[int, int]) -> None:
    """Rewrites every direct field reference below message through mapping."""
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        for item in value if descriptor.is_repeated else [value]:
            if isinstance(item, algebra_pb2.Expression.ReferenceSegment.StructField):
                item.field = mapping.get(item.field, item.field)
            else:
                _remap_references(item, mapping)


@pytest.mark.parametrize("format", ["parquet", "ipc"])
def test_plan_reads_columns_in_its_own_order(store, format):
    dataset = store.write_dataset("ordered", TABLE, rows_per_object=500, format=format)
    plan = aggregate_plan(dataset)
    _, project, _, read = relations(plan)
    assert list(read.base_schema.names) == ["k", "s", "d"]
    read.base_schema.names[:] = ["d", "s", "k"]
    types = list(read.base_schema.struct.types)
    del read.base_schema.struct.types[:]
    read.base_schema.struct.types.extend([types[2], types[1], types[0]])
    _remap_references(project, {0: 2, 2: 0})  # the filter and the projections read the new order
    reordered = call(dataset, "execute_plan", plan=plan.SerializeToString())
    original = call(dataset, "execute_plan", plan=aggregate_plan(dataset).SerializeToString())
    assert reordered == original  # (code, message)
    name = dataset.manifest.partitions[0].object_name
    tables = [
        decode_reply(
            dataset.store.backend.call(name, PlanRequest.METHOD, PlanRequest(plan=p.SerializeToString()).encode())
        )
        .reader()
        .read_all()
        .sort_by("s")
        for p in (plan, aggregate_plan(dataset))
    ]
    assert tables[0].equals(tables[1])


def test_parquet_text_that_is_not_utf8_is_a_corrupt_object(store):
    """Parquet stores string bytes as given; storage checks them like IPC's."""
    good = pa.array(["ok", "fine"])
    offsets, data = good.buffers()[1], pa.py_buffer(b"ok\xff\xfeine")
    bad = pa.Array.from_buffers(pa.string(), 2, [None, offsets, data])
    with pytest.raises(skyhook.CorruptObjectError, match="not a readable Parquet partition: Invalid UTF8"):
        store.write_dataset("text", pa.table({"s": bad}))
    assert "text" not in store.list_datasets()
