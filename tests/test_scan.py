"""Scans in storage against pyarrow computing the same query on the original table."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.execution.placement import sample_admission
from support.assertions import assert_same_table
from support.oracle import expected

F = pc.field
FILTERS = {
    "int_range": (F("id") >= 100) & (F("id") < 250),
    "int8_eq": F("i8") == 5,
    "int32_neg": F("i32") < -900,
    "uint16": F("u16") > 59000,
    "float32": F("f32") > pa.scalar(9.5, pa.float32()),
    "float64_nan_aware": F("f64") > 150.0,
    "float64_is_nan": pc.is_nan(F("f64")),
    "not_le_float": ~(F("f64") <= 0.0),
    "decimal": F("dec") > pa.scalar(decimal.Decimal("900.00"), pa.decimal128(12, 2)),
    "string_eq": F("s") == "banana",
    "string_empty": F("s") == "",
    "string_unicode": F("s") == "ünïcode",
    "string_isin": F("s").isin(["fig", "grape"]),
    "starts_with": pc.starts_with(F("s"), "ch"),
    "binary": F("bin") == b"\x01\x01",
    "date": F("d") <= pa.scalar(datetime.date(1995, 3, 1)),
    "timestamp": F("ts") > pa.scalar(datetime.datetime(2020, 4, 1), pa.timestamp("us")),
    "timestamp_tz": F("tsz")
    < pa.scalar(datetime.datetime(2021, 6, 2, tzinfo=datetime.timezone.utc), pa.timestamp("ms", tz="UTC")),
    "bool": F("b"),
    "bool_not": ~F("b"),
    "is_null": F("s").is_null(),
    "is_valid_all_null": F("all_null").is_valid(),
    "all_null_is_null": F("all_null").is_null(),
    "or": (F("i8") > 120) | (F("s") == "zeta"),
    "arithmetic": (F("i32") * 2 + 1) > 1990,
    "empty": F("id") < 0,
    "everything": F("id") >= 0,
    "unsafe_cast_falls_back": F("id") > 2990.5,
    "literal_true": pc.scalar(True),
}


@pytest.fixture(params=["parquet", "ipc"])
def typed_dataset(request, store, typed_table):
    return store.write_dataset("typed", typed_table, format=request.param, rows_per_object=700)


@pytest.mark.parametrize("name", FILTERS)
def test_filter_matches_pyarrow(typed_dataset, typed_table, name):
    columns = ["id", "s", "f64", "dec", "d", "tags"]
    result = typed_dataset.to_table(columns=columns, filter=FILTERS[name])
    assert_same_table(result, expected(typed_table, columns, FILTERS[name]))


def test_all_columns_no_filter(typed_dataset, typed_table):
    assert_same_table(typed_dataset.to_table(), typed_table)


@pytest.mark.parametrize("pushdown", [True, False, "auto"])
@pytest.mark.parametrize("filter", [None, pc.field("i32") > 0])
def test_no_column_still_counts_the_rows(typed_dataset, typed_table, pushdown, filter):
    """A plain read of no column kept its row count once (pyarrow's cast of no column dropped it)."""
    table = typed_dataset.to_table(columns=[], filter=filter, pushdown=pushdown)
    assert table.num_columns == 0
    assert table.num_rows == (typed_table.num_rows if filter is None else typed_table.filter(filter).num_rows)


def test_computed_projection_runs_in_storage(typed_dataset, typed_table):
    columns = {"id": F("id"), "twice": F("i32") * 2, "late": F("d") > pa.scalar(datetime.date(1998, 1, 1))}
    filter = F("i8") > 0
    scanner = typed_dataset.scanner(columns=columns, filter=filter)
    assert_same_table(scanner.to_table(), expected(typed_table, columns, filter))
    assert scanner.stats.projection_in_storage and scanner.stats.filter_in_storage


def test_projection_without_substrait_mapping_is_completed_by_client(typed_dataset, typed_table):
    columns = {"id": F("id"), "upper": pc.utf8_upper(F("s"))}
    filter = F("i8") > 0
    scanner = typed_dataset.scanner(columns=columns, filter=filter)
    assert_same_table(scanner.to_table(), expected(typed_table, columns, filter))
    assert not scanner.stats.projection_in_storage and scanner.stats.filter_in_storage


def test_text_filter_coerces_literals(typed_dataset, typed_table):
    text = "dec > 900 and d <= '1995-03-01' or s in ('fig', 'date') and not i8 < 0"
    oracle = (
        (F("dec") > pa.scalar(decimal.Decimal("900.00"), pa.decimal128(12, 2)))
        & (F("d") <= pa.scalar(datetime.date(1995, 3, 1)))
    ) | (F("s").isin(["fig", "date"]) & ~(F("i8") < 0))
    scanner = typed_dataset.scanner(columns=["id", "dec", "s"], filter=text)
    assert_same_table(scanner.to_table(), expected(typed_table, ["id", "dec", "s"], oracle))
    assert scanner.stats.filter_in_storage


def test_pruning_skips_objects_and_keeps_results(typed_dataset, typed_table):
    filter = (F("id") >= 710) & (F("id") < 720)
    scanner = typed_dataset.scanner(columns=["id"], filter=filter)
    assert_same_table(scanner.to_table(), expected(typed_table, ["id"], filter))
    assert scanner.stats.objects_scanned == 1
    assert scanner.stats.objects_pruned == len(typed_dataset.manifest.partitions) - 1


def test_statistics_are_consistent(typed_dataset, typed_table):
    scanner = typed_dataset.scanner(columns=["id", "s"], filter=F("s") == "fig")
    table = scanner.to_table()
    stats = scanner.stats
    assert stats.rows_returned == table.num_rows
    assert stats.rows_scanned == typed_table.num_rows
    assert 0 < stats.bytes_returned
    assert stats.bytes_read > 0
    assert stats.storage_cpu_s > 0


def test_projection_reads_only_needed_columns_in_storage(store):
    table = pa.table({name: pa.array(range(i, 200_000 + i)) for i, name in enumerate("abcd")})
    dataset = store.write_dataset("wide", table, compression="none")
    scanner = dataset.scanner(columns=["a"], filter=F("b") < 10)
    assert scanner.to_table().column("a").to_pylist() == list(range(9))
    assert scanner.stats.bytes_read < 0.6 * dataset.manifest.size_bytes


def test_reader_batches_count_and_head(typed_dataset, typed_table):
    filter = F("i32") > 0
    want = expected(typed_table, ["id", "i32"], filter)
    reader = typed_dataset.scanner(columns=["id", "i32"], filter=filter, batch_size=100).to_reader()
    assert reader.schema == want.schema
    batches = list(reader)
    assert max(batch.num_rows for batch in batches) <= 100
    assert_same_table(pa.Table.from_batches(batches, want.schema), want)
    assert typed_dataset.count_rows(filter=filter) == want.num_rows
    assert typed_dataset.count_rows() == typed_table.num_rows
    assert_same_table(typed_dataset.head(5, columns=["id", "i32"], filter=filter), want.slice(0, 5))
    assert_same_table(typed_dataset.take([0, 3], columns=["id"]), typed_table.select(["id"]).take([0, 3]))


def test_client_side_read_gives_same_answer(typed_dataset, typed_table):
    filter = (F("s") == "apple") | F("f64").is_null()
    pushed = typed_dataset.to_table(columns=["id", "s"], filter=filter)
    client = typed_dataset.scanner(columns=["id", "s"], filter=filter, pushdown=False)
    assert_same_table(client.to_table(), pushed)
    assert client.stats.bytes_returned == typed_dataset.manifest.size_bytes


def test_dataset_filter_and_sort(typed_dataset, typed_table):
    narrowed = typed_dataset.filter(F("i8") > 100).filter("s == 'fig'")
    want = expected(typed_table, ["id"], (F("i8") > 100) & (F("s") == "fig"))
    assert_same_table(narrowed.to_table(columns=["id"]), want)
    assert narrowed.sort_by([("id", "descending")]).to_table(columns=["id"]).column(0).to_pylist() == sorted(
        want.column(0).to_pylist(), reverse=True
    )


def test_reopen_sees_same_data(store, typed_table):
    store.write_dataset("again", typed_table, rows_per_object=1000)
    reopened = skyhook.connect(store.uri)
    assert reopened.list_datasets() == ["again"]
    assert_same_table(reopened.dataset("again").to_table(), typed_table)


def test_string_view_input_is_served_as_string(store):
    table = pa.table({"s": pa.array(["a", "b", None], pa.string_view()), "n": [1, 2, 3]})
    dataset = store.write_dataset("views", table)
    assert dataset.schema.field("s").type == pa.string()
    assert dataset.to_table(filter=F("s") == "b").column("n").to_pylist() == [2]


def test_cost_model_reads_plainly_when_pushdown_cannot_pay(store, typed_table):
    dataset = store.write_dataset("cost", typed_table, rows_per_object=500)
    objects = len(dataset.manifest.partitions)
    # Every column, no filter, uncompressed replies: statistics decide, no sample.
    everything = dataset.scanner(reply_compression="none")
    assert_same_table(everything.to_table(), typed_table)
    assert everything.stats.objects_read_plain == objects and "statistics" in everything.stats.cost_model
    # i32 has nulls, so statistics cannot tell: a sample, then plain reads.
    wide = dataset.scanner(filter=F("i32") > -2000, pushdown_threshold=0.0)
    assert_same_table(wide.to_table(), expected(typed_table, None, F("i32") > -2000))
    started = objects - wide.stats.objects_read_plain  # the sample, and calls started beside it
    assert 1 <= started < objects and sample_admission(store.backend).admits(started - 1)
    assert "plain reads" in wide.stats.cost_model
    narrow = dataset.scanner(columns=["id"], filter=F("s") == "fig")
    assert_same_table(narrow.to_table(), expected(typed_table, ["id"], F("s") == "fig"))
    assert narrow.stats.objects_read_plain == 0 and "pushdown for" in narrow.stats.cost_model
    assert "cost model: sampled object 0" in str(dataset.explain(columns=["id"], filter=F("s") == "fig"))
