"""The statistics storage computes on each object (compute_statistics), published
in the manifest: they equal pyarrow's, the selectivity estimated from their
histograms is within a bucket of pyarrow's true selectivity, the cost model
decides by them instead of a sample, pruning uses them, stale ones (after a
transform, for appended objects) are not used, a race loses nothing and older
manifests still read. Both backends."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skyhook
from skyhook.catalog.pruning import matching_partitions
from skyhook.execution.cost import object_selectivities
from support.assertions import assert_same_table
from support.manifests import manifest_table, put_manifest_table
from support.oracle import expected
from support.strategies import TABLE as TYPED
from support.strategies import filters

F = pc.field
ROWS, PER_OBJECT = 12_000, 3_000
BUCKET = 1 / 32
#: Per predicate: a bucket, plus the rounding of ranks to rows.
TOLERANCE = BUCKET + 2 / PER_OBJECT


def make_table(rows: int = ROWS, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i:04d}" for i in range(400)])
    floats = rng.normal(100, 30, rows)
    return pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "u": pa.array(rng.integers(0, 10_000, rows), pa.int32()),
            "skew": pa.array(np.minimum(rng.zipf(1.6, rows), 1000), pa.int64()),  # heavy ties
            "few": pa.array(rng.integers(0, 5, rows), pa.int16()),
            "f": pa.array(floats, pa.float64(), mask=rng.random(rows) < 0.1),
            "s": pa.array(words[rng.integers(0, len(words), rows)], pa.string()),
        }
    )


TABLE = make_table()
COLUMNS = ["u", "skew", "few", "f", "s"]


@pytest.fixture(scope="module")
def analyzed(module_store):
    written = module_store.write_dataset("stats", TABLE, rows_per_object=PER_OBJECT)
    assert all(not row.is_valid for row in written.manifest.object_statistics)
    written.compute_statistics()
    return module_store.dataset("stats")


def piece(number: int) -> pa.Table:
    return TABLE.slice(number * PER_OBJECT, PER_OBJECT)


def test_published_statistics_equal_pyarrow(analyzed):
    manifest = analyzed.manifest
    for partition in manifest.partitions:
        fresh = manifest.fresh_object_statistics(partition.number)
        assert fresh is not None
        rows = piece(partition.number)
        for name in COLUMNS:
            column, stats = rows.column(name), fresh[name]
            low, high = pc.min_max(column).values()
            assert (stats["min"], stats["max"]) == (low, high)
            assert stats["null_count"].as_py() == column.null_count
            true_distinct = pc.count_distinct(column).as_py()
            assert abs(stats["distinct"].as_py() - true_distinct) <= 0.1 * true_distinct + 1
            bounds = stats["histogram"].values
            assert len(bounds) == 33 and bounds[0] == low and bounds[-1] == high


def true_selectivities(filter: pc.Expression, count: int) -> np.ndarray:
    return np.array([piece(n).filter(filter).num_rows / PER_OBJECT for n in range(count)])


def estimated(dataset: skyhook.Dataset, filter: pc.Expression) -> np.ndarray:
    estimate = object_selectivities(dataset.manifest, filter, list(dataset.manifest.partitions))
    assert estimate is not None
    return estimate


@st.composite
def ranges(draw, name: str | None = None) -> pc.Expression:
    """A range or equality predicate (or an IN list) on a column, from its values."""
    name = name or draw(st.sampled_from(COLUMNS))
    column = TABLE.column(name).drop_null()
    value = lambda: column[draw(st.integers(0, len(column) - 1))]  # noqa: E731
    kind = draw(st.sampled_from(["<", "<=", ">", ">=", "between", "==", "!=", "in"]))
    field, low = F(name), value()
    if kind == "between":
        high = value()
        low, high = (low, high) if pc.less_equal(low, high).as_py() else (high, low)
        return (field >= low) & (field < high)
    if kind == "in":
        return field.isin(pa.array([low.as_py(), value().as_py(), value().as_py()], column.type))
    return {
        "<": field < low,
        "<=": field <= low,
        ">": field > low,
        ">=": field >= low,
        "==": field == low,
        "!=": field != low,
    }[kind]


def values_compared(filter: pc.Expression) -> int:
    """An IN list errs by up to a bucket per distinct value."""
    text = str(filter)
    if not text.startswith("is_in("):
        return 1
    return len({value.strip() for value in text[text.index("[") + 1 : text.index("]")].split(",")})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=ranges())
def test_a_predicate_is_estimated_within_a_bucket(analyzed, filter):
    count = len(analyzed.manifest.partitions)
    error = np.abs(estimated(analyzed, filter) - true_selectivities(filter, count))
    assert error.max() <= TOLERANCE * values_compared(filter), (str(filter), error)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(left=ranges("u"), right=ranges("f"), kind=st.sampled_from(["and", "or", "not"]))
def test_combinations_of_independent_columns_are_estimated(analyzed, left, right, kind):
    """u and f (with nulls) are drawn independently: AND multiplies, OR adds
    (bounded: the rule over-counts the overlap), NOT complements the non-null rows (NOT IN
    keeps the nulls, as pyarrow's is_in is false for them)."""
    filter = left & right if kind == "and" else left | right if kind == "or" else ~right
    count = len(analyzed.manifest.partitions)
    truth = true_selectivities(filter, count)
    estimate = estimated(analyzed, filter)
    if kind == "or":
        overlap = true_selectivities(left & right, count)
        assert np.all(estimate >= truth - 2 * TOLERANCE - 0.03)
        assert np.all(estimate <= truth + overlap + 2 * TOLERANCE + 0.03)
    else:
        slack = TOLERANCE * (values_compared(left) + values_compared(right)) + 0.03  # noise of independence
        assert np.abs(estimate - truth).max() <= slack, (str(filter), estimate, truth)


def test_not_in_keeps_the_nulls_as_pyarrow_does(analyzed):
    """is_in is false for a null value (never null), so NOT IN keeps f's ~10 % nulls."""
    values = TABLE.column("f").drop_null()
    filter = ~F("f").isin(pa.array([values[0].as_py(), values[1].as_py()], pa.float64()))
    count = len(analyzed.manifest.partitions)
    error = np.abs(estimated(analyzed, filter) - true_selectivities(filter, count))
    assert error.max() <= 2 * TOLERANCE, (estimated(analyzed, filter), true_selectivities(filter, count))
    with_null = ~F("f").isin(pa.array([values[0].as_py(), None], pa.float64()))
    assert object_selectivities(analyzed.manifest, with_null, list(analyzed.manifest.partitions)) is None


def test_shapes_without_an_estimate_fall_back_to_a_sample(analyzed):
    for filter in [F("u") < F("skew"), pc.starts_with(F("s"), "w00"), (F("u") + 1) == 5]:
        assert object_selectivities(analyzed.manifest, filter, list(analyzed.manifest.partitions)) is None
        scanner = analyzed.scanner(filter=filter)
        assert_same_table(scanner.to_table(), TABLE.filter(filter))
        assert scanner.stats.cost_model.startswith("sampled object")


def test_the_cost_model_decides_from_statistics(analyzed):
    selective = (F("u") < 500) & (F("few") == 2)
    scanner = analyzed.scanner(columns=["id", "s"], filter=selective)
    assert_same_table(scanner.to_table(), TABLE.filter(selective).select(["id", "s"]))
    assert scanner.stats.cost_model.startswith("statistics: estimated selectivity")
    assert "pushdown for" in scanner.stats.cost_model
    assert scanner.stats.objects_read_plain == 0
    explained = str(analyzed.explain(columns=["id", "s"], filter=selective))
    assert "cost model: statistics: estimated selectivity" in explained
    assert "(object histograms)" in explained
    analyzed_text = str(analyzed.analyze(columns=["id", "s"], filter=selective))
    assert "cost model decided: statistics: estimated selectivity" in analyzed_text

    wide = F("u") > 20  # keeps nearly every row, yet statistics cannot prove all
    scanner = analyzed.scanner(filter=wide, reply_compression="none")
    assert_same_table(scanner.to_table(), TABLE.filter(wide))
    assert scanner.stats.cost_model.startswith("statistics: estimated selectivity")
    assert "plain reads for" in scanner.stats.cost_model
    assert scanner.stats.objects_read_plain == len(analyzed.manifest.partitions)
    # Compressed replies: the decoded estimate is too large to decide, a sample measures.
    scanner = analyzed.scanner(filter=wide, reply_compression="zstd")
    assert_same_table(scanner.to_table(), TABLE.filter(wide))
    assert scanner.stats.cost_model.startswith("sampled object")
    planned = str(analyzed.explain(filter=wide, reply_compression="zstd"))
    assert "statistics: estimated selectivity" in planned and "zstd unknown: sampled object 0 decides" in planned


def test_without_statistics_a_sample_decides(store):
    dataset = store.write_dataset("plain", TABLE, rows_per_object=PER_OBJECT)
    scanner = dataset.scanner(filter=F("u") < 500)
    assert_same_table(scanner.to_table(), TABLE.filter(F("u") < 500))
    assert scanner.stats.cost_model.startswith("sampled object")


def test_pruning_uses_fresh_statistics_where_ingest_had_none(store):
    """Ingest statistics that could not express a column (here: erased) prune
    nothing; the object statistics prune, until the objects change."""
    dataset = store.write_dataset("t", TABLE, rows_per_object=PER_OBJECT)
    erase_ingest_bounds(store, "t", "id")
    filter = F("id") < 100
    assert len(matching_partitions(store.dataset("t").manifest, filter)) == ROWS // PER_OBJECT
    dataset.compute_statistics()
    fresh = store.dataset("t")
    assert [p.number for p in matching_partitions(fresh.manifest, filter)] == [0]
    scanner = fresh.scanner(filter=filter)
    assert_same_table(scanner.to_table(), TABLE.filter(filter))
    assert scanner.stats.objects_pruned == ROWS // PER_OBJECT - 1

    fresh.transform(skyhook.Design(format="ipc"), objects=[1, 2])
    stale = store.dataset("t")
    assert [stale.manifest.fresh_object_statistics(n) is not None for n in range(4)] == [True, False, False, True]
    assert [p.number for p in matching_partitions(stale.manifest, filter)] == [0, 1, 2]
    assert_same_table(stale.to_table(filter=filter), TABLE.filter(filter))
    scanner = stale.scanner(filter=F("u") < 500)
    assert_same_table(scanner.to_table(), TABLE.filter(F("u") < 500))
    assert scanner.stats.cost_model.startswith("sampled object")

    stale.compute_statistics()  # after the transform: fresh again, for the new designs
    again = store.dataset("t")
    assert all(again.manifest.fresh_object_statistics(n) is not None for n in range(4))
    assert [p.number for p in matching_partitions(again.manifest, filter)] == [0]


def erase_ingest_bounds(store, name: str, column: str) -> None:
    stored = store.backend.get_manifest(name)
    manifest = store.dataset(name).manifest
    rows = manifest.statistics.to_pylist()
    for row in rows:
        row[column]["min"] = row[column]["max"] = None
    erased = dataclasses.replace(manifest, statistics=pa.array(rows, manifest.statistics.type))
    assert store.backend.replace_manifest(name, erased.to_bytes(), stored.version)


def test_appended_objects_have_no_statistics_until_analyzed(store):
    dataset = store.write_dataset("t", TABLE.slice(0, 6000), rows_per_object=PER_OBJECT)
    dataset.compute_statistics()
    dataset.append(TABLE.slice(6000), rows_per_object=PER_OBJECT)
    appended = store.dataset("t")
    assert [appended.manifest.fresh_object_statistics(n) is not None for n in range(4)] == [True, True, False, False]
    filter = F("u") < 500
    scanner = appended.scanner(filter=filter)
    assert_same_table(scanner.to_table(), TABLE.filter(filter))
    assert scanner.stats.cost_model.startswith("sampled object")


def test_an_append_during_compute_statistics_loses_nothing(store):
    """The publication retries against the manifest the append published: the
    appended partitions stay, the analyzed ones get their statistics."""
    dataset = store.write_dataset("t", TABLE.slice(0, 6000), rows_per_object=PER_OBJECT)
    appended = []

    def append_once(done: int, total: int) -> None:
        if not appended:
            appended.append(dataset.append(TABLE.slice(6000), rows_per_object=PER_OBJECT))

    dataset.compute_statistics(progress=append_once)
    after = store.dataset("t")
    assert_same_table(after.to_table(), TABLE)
    assert [after.manifest.fresh_object_statistics(n) is not None for n in range(4)] == [True, True, False, False]


def test_a_transform_during_compute_statistics_leaves_statistics_of_the_new_designs(store):
    """Each object's statistics are tagged with the design generation storage
    computed them on: those of a transformed object describe its new design."""
    dataset = store.write_dataset("t", TABLE, rows_per_object=PER_OBJECT)
    transformed = []

    def transform_once(done: int, total: int) -> None:
        if not transformed:
            transformed.append(dataset.transform(skyhook.Design(format="ipc"), objects=[0, 1]))

    assert dataset.compute_statistics(progress=transform_once) == 4
    after = store.dataset("t")
    assert [p.design.format for p in after.manifest.partitions] == ["ipc", "ipc", "parquet", "parquet"]
    generations = after.manifest.object_statistics.field("generation").to_pylist()
    assert generations == [p.design.generation for p in after.manifest.partitions]
    assert generations[0] > generations[2]
    assert_same_table(after.to_table(filter=F("u") < 500), TABLE.filter(F("u") < 500))


def test_concurrent_appends_and_compute_statistics_lose_no_rows(store):
    store.write_dataset("t", TABLE.slice(0, 3000), rows_per_object=1000)
    chunks = [TABLE.slice(3000 + 1000 * i, 1000) for i in range(6)]

    def appender() -> None:
        for chunk in chunks:
            store.dataset("t").append(chunk)

    thread = threading.Thread(target=appender)
    thread.start()
    for _ in range(3):
        store.dataset("t").compute_statistics()
    thread.join()
    after = store.dataset("t")
    assert_same_table(after.to_table(), TABLE.slice(0, 9000))
    assert after.manifest.fresh_object_statistics(0) is not None


def test_a_version_3_manifest_still_reads(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=PER_OBJECT)
    current = manifest_table(dataset)
    metadata = {**current.schema.metadata, b"skyhook.manifest_version": b"3"}
    put_manifest_table(store, "t", current.drop_columns(["object_statistics"]).replace_schema_metadata(metadata))
    legacy = store.dataset("t")
    assert all(not row.is_valid for row in legacy.manifest.object_statistics)
    assert_same_table(legacy.to_table(filter=F("u") < 500), TABLE.filter(F("u") < 500))
    legacy.compute_statistics()  # publishes a version 4 manifest
    assert all(store.dataset("t").manifest.fresh_object_statistics(n) is not None for n in range(4))


@pytest.fixture(scope="module")
def typed(module_store):
    """Every type of the typed table, with statistics published."""
    written = module_store.write_dataset("typed", TYPED, rows_per_object=400, row_group_size=100)
    assert written.compute_statistics() == len(written.manifest.partitions)
    return module_store.dataset("typed")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters(), columns=st.lists(st.sampled_from(TYPED.column_names), min_size=1, max_size=3, unique=True))
def test_random_filters_over_every_type_match_pyarrow(typed, filter, columns):
    """Whatever the cost model and pruning make of the statistics, answers stay pyarrow's."""
    selectivities = object_selectivities(typed.manifest, filter, list(typed.manifest.partitions))
    assert selectivities is None or ((selectivities >= 0) & (selectivities <= 1)).all()
    assert_same_table(typed.to_table(columns=columns, filter=filter), expected(TYPED, columns, filter))
