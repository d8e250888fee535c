"""The aggregate functions beyond the basic ones (count_all, product, any, all,
min_max, first_last, tdigest, approximate_median) and function options
(ddof, count modes, skip_nulls / min_count), against pyarrow's
group_by().aggregate() on many objects, in storage and on the forced client
paths; the quantile sketch against exact quantiles."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from substrait.gen.proto import plan_pb2

import skyhook
from skyhook.plan.aggregate_functions import SKETCH_QUANTILES
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import PlanRequest
from support.aggregates import assert_same_result as assert_same_columns
from support.tables import make_typed_table

F = pc.field
TABLE = make_typed_table(rows=4000, seed=11)
INTEGERS = ["i8", "i32", "u16"]
NUMERIC = INTEGERS + ["f32", "f64"]
ORDERED = NUMERIC + ["dec", "s", "d", "ts", "b"]
NULLS_STRICT = pc.ScalarAggregateOptions(skip_nulls=False, min_count=0)
FEW_VALUES = pc.ScalarAggregateOptions(skip_nulls=True, min_count=40)
NO_MINIMUM = pc.ScalarAggregateOptions(skip_nulls=True, min_count=0)
SCALAR_OPTIONS = [NULLS_STRICT, FEW_VALUES, NO_MINIMUM, pc.ScalarAggregateOptions(skip_nulls=False, min_count=5)]

AGGREGATIONS = (
    [([], "count_all")]
    + [(column, "product") for column in NUMERIC]
    + [("b", "any"), ("b", "all"), ("all_null", "count")]
    + [(column, "min_max") for column in ORDERED]
    + [(column, "first_last") for column in ["i32", "s", "d"]]
)
WITH_OPTIONS = (
    [("i32", "count", pc.CountOptions(mode=mode)) for mode in ("all", "only_null", "only_valid")]
    + [("s", "count", pc.CountOptions(mode="only_null"))]
    + [(column, "variance", pc.VarianceOptions(ddof=1)) for column in ["i32", "f64", "dec"]]
    + [("f32", "stddev", pc.VarianceOptions(ddof=2, min_count=30))]
    + [("u16", "variance", pc.VarianceOptions(ddof=1, skip_nulls=False))]
    + [
        (column, function, options)
        for options in SCALAR_OPTIONS
        for column, function in [
            ("i32", "sum"),
            ("f64", "mean"),
            ("dec", "sum"),
            ("s", "min"),
            ("d", "max"),
            ("i8", "product"),
            ("b", "any"),
            ("b", "all"),
        ]
    ]
)


@pytest.fixture(scope="module")
def dataset(module_store):
    return module_store.write_dataset("t", TABLE, rows_per_object=450, row_group_size=150)


def _named(aggregations: list[tuple]) -> list[tuple]:
    """pyarrow names two aggregations of one column and function alike: each
    runs as (field, function, name[, options]) under a name of its own."""
    return [(F(e[0]), e[1], f"out{i}", *e[2:]) if e[0] else e for i, e in enumerate(aggregations)]


def _expected(table: pa.Table, keys: list[str], aggregations: list[tuple]) -> pa.Table:
    """pyarrow's answer over the same rows, (field, function, name[, options])
    being that column aggregated under name."""
    inputs = {"__rows": table.column("id"), **{key: table.column(key) for key in keys}}
    plain, names = [], {}
    for i, entry in enumerate(aggregations):
        if isinstance(entry[0], pc.Expression):
            field, function, name, *options = entry
            inputs[f"c{i}"] = table.column(str(field))
            plain.append((f"c{i}", function, *options))
            names[f"c{i}_{function}"] = name
        else:
            plain.append(entry)
    result = pa.table(inputs).group_by(keys, use_threads=False).aggregate(plain)
    return result.rename_columns([names.get(name, name) for name in result.column_names])


def assert_same_result(actual: pa.Table, expected: pa.Table, keys: list[str]) -> None:
    """Struct outputs (min_max, first_last) compared field by field: NaN included."""
    assert actual.schema == expected.schema
    assert_same_columns(actual.flatten(), expected.flatten(), keys)


def _assert_in_storage(dataset) -> None:
    """Asked with pushdown=True: partials of many small groups can outgrow an
    object, which in auto mode sends that object to the client."""
    stats = dataset.last_aggregate.stats
    assert stats.aggregate_in_storage and stats.objects_at_client == 0
    assert set(stats.where.values()) == {"storage"}


@pytest.mark.parametrize("keys", [[], ["s"], ["b", "i8"]])
def test_new_functions_match_pyarrow(dataset, keys):
    filter = F("i32") > -700
    aggregations = _named(AGGREGATIONS)
    result = dataset.group_by(keys).aggregate(aggregations, filter=filter, pushdown=True)
    assert_same_result(result, _expected(TABLE.filter(filter), keys, aggregations), keys)
    _assert_in_storage(dataset)


@pytest.mark.parametrize("keys", [[], ["s"], ["i8"]])
def test_options_match_pyarrow(dataset, keys):
    aggregations = _named(WITH_OPTIONS)
    result = dataset.group_by(keys).aggregate(aggregations, pushdown=True)
    assert_same_result(result, _expected(TABLE, keys, aggregations), keys)
    _assert_in_storage(dataset)


def test_products_of_integers_wrap_as_pyarrow_does(store):
    table = pa.table(
        {"k": [i % 3 for i in range(3000)], "x": pa.array([(i % 97) + 2 for i in range(3000)], pa.int32())}
    )
    dataset = store.write_dataset("products", table, rows_per_object=250)
    result = dataset.group_by("k").aggregate([("x", "product")], pushdown=True)
    assert_same_result(result, table.group_by("k", use_threads=False).aggregate([("x", "product")]), ["k"])
    _assert_in_storage(dataset)


def test_no_rows_and_all_null_groups(dataset):
    aggregations = _named(
        [([], "count_all"), ("i32", "product"), ("b", "any"), ("f64", "min_max"), ("all_null", "approximate_median")]
        + [("all_null", "sum", NO_MINIMUM), ("all_null", "count", pc.CountOptions(mode="all"))]
    )
    for keys, filter in (([], F("id") < 0), (["s"], F("id") < 0), (["s"], F("i32").is_null())):
        expected = _expected(TABLE.filter(filter), keys, aggregations)
        assert_same_result(dataset.group_by(keys).aggregate(aggregations, filter=filter), expected, keys)


@pytest.mark.parametrize("limits", [{"max_in_flight": 0}, {"pushdown": False}, {"computed_decimal": True}])
def test_every_path_gives_the_same_answer(dataset, limits):
    aggregations = _named(AGGREGATIONS + WITH_OPTIONS[:12])
    expected = _expected(TABLE, ["s"], aggregations)
    limits = dict(limits)  # the parameter is shared by both backends' runs
    at_client = len(dataset.manifest.partitions)
    if limits.pop("computed_decimal", False):
        # Arrow 26's Substrait consumer crashed typing this; storage builds the aggregate itself.
        aggregations.append((F("dec") * F("dec"), "sum", "square"))
        at_client = 0
    result = dataset.group_by("s").aggregate(aggregations, **limits)
    assert_same_result(result.select(expected.column_names), expected, ["s"])
    assert dataset.last_aggregate.stats.objects_at_client == at_client


def _rank_error(data: np.ndarray, value: float, q: float) -> float:
    """How far q lies from the ranks (as fractions) value holds in data."""
    ordered = np.sort(data)
    low, high = (np.searchsorted(ordered, value, side) / len(data) for side in ("left", "right"))
    return 0.0 if low <= q <= high else min(abs(low - q), abs(high - q))


QUANTILES = [0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0]
RANK_ERROR_BOUND = 0.01  # README: 1 / (2 * SKETCH_QUANTILES) plus the digests' own; measured <= 0.0035


@pytest.mark.parametrize("objects", [1, 7, 60])
def test_quantiles_within_the_documented_rank_error(store, objects):
    rng = np.random.default_rng(objects)
    rows = 60_000
    data = {
        "normal": rng.normal(0, 1, rows),
        "skewed": rng.lognormal(0, 2, rows),
        "uniform": rng.uniform(-5, 5, rows),
        "discrete": rng.integers(0, 10, rows).astype(np.float64),
        "sorted": np.sort(rng.normal(0, 1, rows)),
    }
    keys = np.arange(rows) % 3
    table = pa.table({"k": keys, **data})
    dataset = store.write_dataset("quantiles", table, rows_per_object=rows // objects)
    options = pc.TDigestOptions(q=QUANTILES)
    aggregations = [(name, "tdigest", options) for name in data] + [(name, "approximate_median") for name in data]
    result = dataset.group_by("k").aggregate(aggregations, pushdown=True).sort_by("k")
    _assert_in_storage(dataset)
    for name, values in data.items():
        for group in range(3):
            members = values[keys == group]
            estimates = result.column(f"{name}_tdigest")[group].as_py()
            errors = [_rank_error(members, v, q) for v, q in zip(estimates, QUANTILES)]
            errors.append(_rank_error(members, result.column(f"{name}_approximate_median")[group].as_py(), 0.5))
            assert max(errors) <= RANK_ERROR_BOUND, (name, group, errors)
            assert estimates[0] == members.min() and estimates[-1] == members.max()
    # One sketch per column (tdigest and approximate_median share it): 800 bytes per object and group.
    sketches = len(data) * 3 * len(dataset.manifest.partitions) * SKETCH_QUANTILES * 8
    assert sketches < dataset.last_aggregate.stats.bytes_returned < 1.3 * sketches


def test_quantiles_follow_pyarrow_options_and_types(dataset):
    """Output types, nulls, skip_nulls / min_count and no-key answers as pyarrow's."""
    aggregations = _named(
        [("i32", "tdigest"), ("u16", "approximate_median"), ("dec", "approximate_median")]
        + [("f64", "tdigest", pc.TDigestOptions(q=[0.2, 0.8], skip_nulls=False))]
        + [("i8", "tdigest", pc.TDigestOptions(q=[0.5], min_count=40))]
        + [("all_null", "tdigest"), ("f32", "approximate_median", pc.ScalarAggregateOptions(min_count=20))]
    )
    for keys in ([], ["s"], ["i8"]):
        # Without keys, pyarrow's null answer to several quantiles is a column
        # longer than its table: that one is left out.
        wanted = aggregations if keys else [a for a in aggregations if a[2] != "out3"]
        result = dataset.group_by(keys).aggregate(wanted)
        expected = _expected(TABLE, keys, wanted)
        assert result.schema == expected.schema
        if keys:
            result, expected = result.sort_by(keys[0]), expected.sort_by(keys[0])
        for name in expected.column_names[len(keys) :]:
            got, want = result.column(name).to_pylist(), expected.column(name).to_pylist()
            assert [_is_null(v) for v in got] == [_is_null(v) for v in want], name


def _is_null(value: object) -> bool:
    """pyarrow's tdigest gives a list of nulls where it has no answer."""
    return value is None or (isinstance(value, list) and all(v is None for v in value))


def test_bad_function_options(dataset):
    with pytest.raises(skyhook.InvalidRequestError, match="'first' takes no options"):
        dataset.aggregate([("i32", "first", pc.ScalarAggregateOptions())])
    with pytest.raises(skyhook.InvalidRequestError, match="count_all"):
        dataset.aggregate([("i32", "count_all")])
    with pytest.raises(skyhook.InvalidRequestError, match="takes a column"):
        dataset.aggregate([([], "sum")])
    with pytest.raises(skyhook.InvalidRequestError, match="'variance' takes VarianceOptions"):
        dataset.aggregate([("i32", "variance", pc.CountOptions())])
    with pytest.raises(skyhook.TypeMismatchError, match="cannot aggregate"):
        dataset.aggregate([("s", "product")])
    with pytest.raises(skyhook.TypeMismatchError, match="does not merge exactly"):
        dataset.aggregate([("dec", "product")])
    with pytest.raises(skyhook.InvalidRequestError, match="an aggregation is"):
        dataset.aggregate([("i32", "sum", "not options")])
    assert dataset.aggregate([("i32", "sum", None)]).equals(TABLE.group_by([]).aggregate([("i32", "sum")]))


def _sub_plan(dataset, aggregations: list[tuple]) -> plan_pb2.Plan:
    execution = dataset.group_by("s").execution(aggregations)
    return plan_pb2.Plan.FromString(execution.decomposition.sub_plan.plan)


def _refusal(dataset, plan: plan_pb2.Plan) -> str:
    name = dataset.manifest.partitions[0].object_name
    reply = decode_reply(
        dataset.store.backend.call(name, PlanRequest.METHOD, PlanRequest(plan=plan.SerializeToString()).encode())
    )
    assert reply.code == 1, "storage ran a mistyped measure"
    return reply.message


def test_mistyped_partial_measures_are_refused(dataset):
    """skyhook's own measures have type rules in storage like Substrait's."""
    any_of_integers = _sub_plan(dataset, [("b", "any")])
    measure = any_of_integers.relations[0].root.input.aggregate.measures[0].measure
    measure.arguments[0].value.selection.direct_reference.struct_field.field = 0  # s, a string
    assert "function 'any' expects" in _refusal(dataset, any_of_integers)
    sketch = _sub_plan(dataset, [("f64", "approximate_median")])
    for measure in sketch.relations[0].root.input.aggregate.measures:
        if measure.measure.output_type.HasField("list"):
            measure.measure.output_type.list.type.CopyFrom(measure.measure.output_type.list.type.__class__(string={}))
    assert "function 'quantile_sketch' expects" in _refusal(dataset, sketch)
    # The node still answers.
    assert dataset.aggregate([("b", "any")]).column(0).to_pylist() == [pc.any(TABLE.column("b")).as_py()]
