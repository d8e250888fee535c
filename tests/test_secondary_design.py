"""Statistics and indexes in each object's omap (cpp/skyhook/storage/secondary/):
scans that use them answer exactly as pyarrow does, skip zones and read only
indexed matches (visible in the scan's statistics), ignore them once the object
changes, and bad requests change nothing. Both backends, both formats."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import skyhook
from skyhook.backends.object_codec import encode_object
from skyhook.catalog.design import DESIGN_ATTRIBUTE, Design, ObjectDesign
from skyhook.cli import app
from support.aggregates import assert_same_result
from support.assertions import assert_same_table
from support.oracle import expected
from support.scans import pushed_down
from support.strategies import TABLE, filters

INDEXED = ["id", "i32", "s", "d", "ts", "dec", "bin"]
ZONE_ROWS = 100  # row groups / record batches: several zones per object


@pytest.fixture(scope="module", params=["parquet", "ipc"])
def analyzed(module_store, request):
    """The same table twice: plain, and with statistics and indexes."""
    options = {"rows_per_object": 600, "row_group_size": ZONE_ROWS, "format": request.param}
    plain = module_store.write_dataset(f"plain_{request.param}", TABLE, **options)
    designed = module_store.write_dataset(f"designed_{request.param}", TABLE, **options)
    designed.compute_statistics()
    for column in INDEXED:
        designed.create_index(column)
    return plain, designed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters(), columns=st.lists(st.sampled_from(TABLE.column_names), min_size=1, max_size=4, unique=True))
def test_random_filters_match_pyarrow_with_and_without_secondary_design(analyzed, filter, columns):
    plain, designed = analyzed
    oracle = expected(TABLE, columns, filter)
    with_design, _ = pushed_down(designed, filter, columns)
    without, _ = pushed_down(plain, filter, columns)
    assert_same_table(with_design, oracle)
    assert_same_table(without, oracle)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters(), keys=st.sampled_from([[], ["s"], ["b"]]))
def test_plans_read_through_statistics_and_indexes(analyzed, filter, keys):
    aggregations = [("i32", "sum"), ("dec", "max"), ("id", "count")]
    local = expected(TABLE, None, filter).group_by(keys, use_threads=False).aggregate(aggregations)
    for dataset in analyzed:
        result = dataset.group_by(keys).aggregate(aggregations, filter=filter, pushdown=True)
        assert_same_result(result, local, keys)


def test_design_lists_statistics_and_indexes(analyzed):
    plain, designed = analyzed
    design = designed.secondary_design()
    assert design.num_rows == len(designed.manifest.partitions)
    assert all(design["statistics"].to_pylist())
    assert all(sorted(indexes) == sorted(INDEXED) for indexes in design["indexes"].to_pylist())
    assert design["zones"].to_pylist() == [6, 6, 3]  # 1,500 rows: 600, 600, 300
    assert not any(plain.secondary_design()["statistics"].to_pylist())


def test_sorted_key_range_skips_zones(analyzed):
    plain, designed = analyzed
    filter = (pc.field("id") >= 250) & (pc.field("id") < 330)
    result, stats = pushed_down(designed, filter)
    plain_result, plain_stats = pushed_down(plain, filter)
    assert_same_table(result, expected(TABLE, None, filter))
    assert_same_table(plain_result, expected(TABLE, None, filter))
    # Objects 1-2 of the others are pruned by the manifest; in object 0, 4 of 6 zones go,
    # by Parquet footers' statistics without analyze too (IPC files have none).
    assert stats.zones_skipped >= 4
    assert plain_stats.zones_skipped == (stats.zones_skipped if plain.name.endswith("parquet") else 0)
    assert stats.rows_scanned < plain_stats.rows_scanned
    designed.group_by([]).aggregate([("id", "count")], filter=filter, pushdown=True)
    assert designed.last_aggregate.stats.zones_skipped == stats.zones_skipped  # plans skip alike


@pytest.mark.parametrize(
    "filter",
    [
        pc.field("id") == 1234,
        pc.field("id").isin([3, 700, 1499]),
        (pc.field("i32") == pa.scalar(17, pa.int32())) & (pc.field("i8") > pa.scalar(-100, pa.int8())),
        pc.field("d") == TABLE["d"][123],
        (pc.field("dec") > pa.scalar(990, pa.decimal128(12, 2))),
    ],
)
def test_indexed_lookups_read_only_matching_rows(analyzed, filter):
    plain, designed = analyzed
    result, stats = pushed_down(designed, filter)
    plain_result, plain_stats = pushed_down(plain, filter)
    assert_same_table(result, expected(TABLE, None, filter))
    assert_same_table(plain_result, expected(TABLE, None, filter))
    assert 0 < stats.rows_read_by_index <= plain_stats.rows_scanned / 4
    assert stats.rows_scanned == stats.rows_read_by_index
    assert stats.index_bytes_read > 0
    # Parquet footers' statistics may skip the same zones in the plain dataset. Reads are of
    # whole 4 KiB chunks of the objects' checksums: a row's batch may cost three more, a tail one.
    assert stats.bytes_read <= plain_stats.bytes_read + 4096 * (3 * stats.rows_read_by_index + stats.objects_scanned)


def test_point_lookup_reads_under_one_percent(module_store):
    """Issue 11's done-when at a smaller scale: an IPC object of 200 record
    batches, an index on its key; one row costs its batch, the footer and the
    batch's message."""
    rows = 100_000
    rng = np.random.default_rng(5)
    table = pa.table({"k": np.arange(rows), **{f"x{i}": rng.random(rows) for i in range(3)}})
    dataset = module_store.write_dataset("points", table, format="ipc", row_group_size=rows // 200)
    dataset.create_index("k")
    result, stats = pushed_down(dataset, pc.field("k") == 12_345)
    assert_same_table(result, expected(table, None, pc.field("k") == 12_345))
    object_bytes = sum(partition.size_bytes for partition in dataset.manifest.partitions)
    assert stats.bytes_read <= 0.01 * object_bytes


def test_stale_statistics_and_indexes_are_ignored(store):
    dataset = store.write_dataset("t", TABLE.slice(0, 600), row_group_size=ZONE_ROWS)
    dataset.compute_statistics()
    dataset.create_index("id")
    # The object's data changes under its statistics (as a transform would,
    # without rebuilding them): fewer rows, in the opposite order (the stale
    # index would find row 100, now id 399).
    name = dataset.manifest.partitions[0].object_name
    changed = TABLE.slice(0, 500).sort_by([("id", "descending")])
    requested = ObjectDesign.request(Design(row_group_size=ZONE_ROWS), changed.column_names, 0)
    data, attribute = encode_object(changed, requested.to_bytes())
    store.backend.put_object(name, data, {DESIGN_ATTRIBUTE: attribute})
    design = dataset.secondary_design()
    assert not design["statistics"][0].as_py()
    # A filter the stale statistics and index would answer with nothing.
    filter = pc.field("id") == 100
    scanner = store.dataset("t").scanner(filter=filter, pushdown=True)
    assert scanner.to_table()["id"].to_pylist() == [100]
    # Only the new data's own Parquet footers skip: 4 of its 5 row groups.
    assert scanner.stats.zones_skipped == 4 and scanner.stats.rows_read_by_index == 0


def test_a_storage_side_transform_rebuilds_statistics_and_indexes(store):
    """The transform rewrites the object and, in the same call, the secondary
    design of its new data: fresh statistics and indexes that the scan uses."""
    table = TABLE.slice(0, 600)
    dataset = store.write_dataset("t", table, row_group_size=ZONE_ROWS)
    dataset.compute_statistics()
    dataset.create_index("id")
    dataset.transform(Design("ipc", sort_by=[("id", "descending")], row_group_size=ZONE_ROWS // 2))
    design = store.dataset("t").secondary_design()
    assert design["statistics"][0].as_py() and design["indexes"][0].as_py() == ["id"]
    assert design["zones"][0].as_py() == 12  # the new object's record batches
    for filter in (pc.field("id") == 123, (pc.field("id") > 500) & (pc.field("id") < 520)):
        result, stats = pushed_down(store.dataset("t"), filter)
        assert_same_table(result.sort_by("id"), expected(table, None, filter).sort_by("id"))
        assert stats.rows_read_by_index == result.num_rows > 0


def test_bad_requests_are_clear_errors_and_write_nothing(store):
    dataset = store.write_dataset("t", TABLE.slice(0, 300))
    with pytest.raises(skyhook.errors.UnknownColumnError, match="no column 'nope'"):
        dataset.create_index("nope")
    with pytest.raises(skyhook.errors.TypeMismatchError, match="f64.*cannot be indexed"):
        dataset.create_index("f64")
    with pytest.raises(skyhook.errors.TypeMismatchError, match="cannot be indexed"):
        dataset.create_index("lst") if "lst" in TABLE.column_names else dataset.create_index("f32")
    assert dataset.secondary_design()["indexes"].to_pylist() == [[]]
    name = dataset.manifest.partitions[0].object_name
    store.backend.delete_object(name)
    with pytest.raises(skyhook.errors.ObjectNotFoundError):
        dataset.create_index("id")
    with pytest.raises(skyhook.errors.ObjectNotFoundError):
        dataset.compute_statistics()
    with pytest.raises(skyhook.errors.ObjectNotFoundError):
        store.backend.read_object(name)  # the failed calls did not create it


def test_drop_index(store):
    dataset = store.write_dataset("t", TABLE.slice(0, 300))
    dataset.create_index("id")
    dataset.create_index("s")
    dataset.drop_index("id")
    dataset.drop_index("id")  # again: not an error
    assert dataset.secondary_design()["indexes"].to_pylist() == [["s"]]
    _, stats = pushed_down(dataset, pc.field("id") == 5)
    assert stats.rows_read_by_index == 0


def test_progress_counts_objects(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=500)
    seen = []
    dataset.compute_statistics(progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i, 3) for i in range(1, 4)]


def test_cli_design_analyze_and_index(tmp_path):
    store = skyhook.connect(tmp_path.as_uri())
    store.write_dataset("t", TABLE.slice(0, 300))
    uri = tmp_path.as_uri()
    analyzed = CliRunner().invoke(app, ["design", "analyze", "t", "--store", uri])
    assert analyzed.exit_code == 0, analyzed.output
    assert "statistics of t computed in 1 object, published in the manifest for 1" in analyzed.output
    assert store.dataset("t").manifest.fresh_object_statistics(0) is not None
    indexed = CliRunner().invoke(app, ["design", "index", "t", "--column", "id", "--store", uri])
    assert indexed.exit_code == 0, indexed.output
    assert store.dataset("t").secondary_design()["indexes"].to_pylist() == [["id"]]
    dropped = CliRunner().invoke(app, ["design", "index", "t", "-c", "id", "--drop", "--store", uri])
    assert dropped.exit_code == 0, dropped.output
    assert store.dataset("t").secondary_design()["indexes"].to_pylist() == [[]]
    wrong = CliRunner().invoke(app, ["design", "index", "t", "-c", "f64", "--store", uri])
    assert wrong.exit_code == 1
    assert wrong.output.startswith("error: ") and "cannot be indexed" in wrong.output
