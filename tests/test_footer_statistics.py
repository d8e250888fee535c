"""Zone skipping by Parquet footers' statistics, without `analyze`
(cpp/skyhook/storage/object/zone_bounds.*): scans answer exactly as pyarrow
does over sorted and unsorted objects of many row groups (nulls, all-null row
groups, NaN, decimals, dates, strings), skip row groups on a sorted key, and
NaN — which footers leave out of their bounds — never goes missing. Both backends."""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skyhook.catalog.design import DESIGN_ATTRIBUTE, Design, ObjectDesign
from support.aggregates import assert_same_result
from support.assertions import assert_same_table
from support.oracle import expected
from support.scans import pushed_down
from support.strategies import TABLE, filters

ROW_GROUP = 50  # 12 row groups per 600-row object
AGGREGATIONS = [("i32", "sum"), ("dec", "sum"), ("f64", "max"), ("s", "count_distinct"), ("id", "count")]

LAYOUTS = {
    "sorted": TABLE,
    "shuffled": TABLE.take(np.random.default_rng(3).permutation(TABLE.num_rows)),
    # Nulls last: the last row groups of each object hold only nulls of dec.
    "by_dec": TABLE.sort_by([("dec", "ascending")]),
}


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def layout(module_store, request):
    table = LAYOUTS[request.param]
    dataset = module_store.write_dataset(
        f"footers_{request.param}", table, rows_per_object=600, row_group_size=ROW_GROUP
    )
    return table, dataset


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters(), columns=st.lists(st.sampled_from(TABLE.column_names), min_size=1, max_size=4, unique=True))
def test_random_filters_match_pyarrow(layout, filter, columns):
    table, dataset = layout
    result, _ = pushed_down(dataset, filter, columns)
    assert_same_table(result, expected(table, columns, filter))


def test_sorted_key_skips_row_groups_and_reads_less(layout):
    table, dataset = layout
    narrow = (pc.field("id") >= 100) & (pc.field("id") < 160)
    result, stats = pushed_down(dataset, narrow, ["id", "s"])
    assert_same_table(result, expected(table, ["id", "s"], narrow))
    everything, all_stats = pushed_down(dataset, pc.field("id") >= 0, ["id", "s"])
    assert_same_table(everything, expected(table, ["id", "s"], pc.field("id") >= 0))
    assert all_stats.zones_skipped == 0
    if dataset.name.endswith("sorted"):  # ids 100-159 lie in 2 of object 0's 12 row groups
        assert stats.zones_skipped == 10 and stats.objects_pruned == 2
        assert stats.bytes_read < all_stats.bytes_read / 3


def aggregate(dataset, table, keys, filter):
    """The dataset's aggregate in storage and pyarrow's over the same rows."""
    result = dataset.group_by(keys).aggregate(AGGREGATIONS, filter=filter, pushdown=True)
    local = expected(table, None, filter).group_by(keys, use_threads=False).aggregate(AGGREGATIONS)
    return result, local, dataset.last_aggregate.stats


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters(), keys=st.sampled_from([[], ["s"], ["b", "d"]]))
def test_plans_over_random_filters_match_pyarrow(layout, filter, keys):
    table, dataset = layout
    result, local, _ = aggregate(dataset, table, keys, filter)
    assert_same_result(result, local, keys)


@pytest.mark.parametrize("keys", [[], ["s"]])
def test_plans_skip_row_groups_the_filter_excludes(layout, keys):
    table, dataset = layout
    sorted_key = dataset.name.endswith("sorted")
    # ids 100-159: 2 of object 0's 12 row groups; (149, 150) holds no id and
    # falls between two row groups' bounds: every zone skipped, an empty answer.
    for filter, skipped in [
        ((pc.field("id") >= 100) & (pc.field("id") < 160), 10),
        ((pc.field("id") > 149) & (pc.field("id") < 150), 12),
        (pc.field("id") >= 0, 0),
    ]:
        result, local, stats = aggregate(dataset, table, keys, filter)
        assert_same_result(result, local, keys)
        assert set(stats.where.values()) <= {"storage"}
        if sorted_key or skipped == 0:  # twice: count_distinct runs a plan of its own
            assert stats.zones_skipped == 2 * skipped


def test_all_null_row_groups_are_skipped_by_a_comparison(module_store):
    table = LAYOUTS["by_dec"]
    dataset = module_store.write_dataset("footers_nulls", table, rows_per_object=1500, row_group_size=ROW_GROUP)
    filter = pc.field("dec") > pa.scalar(0, pa.decimal128(12, 2))
    result, stats = pushed_down(dataset, filter)
    assert_same_table(result, expected(table, None, filter))
    nulls = table["dec"].null_count
    negative = pc.sum(pc.less_equal(table["dec"], pa.scalar(0, pa.decimal128(12, 2)))).as_py()
    assert stats.zones_skipped >= nulls // ROW_GROUP + negative // ROW_GROUP - 1
    result, stats = pushed_down(dataset, pc.field("dec").is_null())
    assert_same_table(result, expected(table, None, pc.field("dec").is_null()))
    assert stats.zones_skipped >= (table.num_rows - nulls) // ROW_GROUP - 1


@pytest.mark.parametrize(
    "filter",
    [
        ~(pc.field("f") < 5.0),
        pc.field("f") != 1.5,
        pc.field("f").is_nan(),
        ~((pc.field("f") >= 0.0) & (pc.field("f") <= 3.0)),
        (pc.field("f") > 5.0) | (pc.field("k") == 3),
    ],
)
def test_nan_outside_footer_bounds_is_never_lost(module_store, filter):
    # Row group 0: NaN and values in [1, 2] (Parquet's bounds leave NaN out);
    # row group 1: values in [10, 20].
    values = [math.nan, 1.0, 1.5, 2.0, math.nan] + [10.0, 15.0, 20.0, 12.0, 11.0]
    table = pa.table({"k": pa.array(range(10), pa.int64()), "f": pa.array(values, pa.float64())})
    dataset = module_store.write_dataset("footers_nan", table, row_group_size=5, mode="overwrite")
    result, _ = pushed_down(dataset, filter)
    assert_same_table(result, expected(table, None, filter))


def test_nan_safe_filter_still_skips(module_store):
    table = pa.table({"f": pa.array([math.nan, 1.0, 2.0, 3.0] + [10.0, 11.0, 12.0, 13.0], pa.float64())})
    dataset = module_store.write_dataset("footers_nan_safe", table, row_group_size=4)
    filter = pc.field("f") > 5.0
    result, stats = pushed_down(dataset, filter)
    assert_same_table(result, expected(table, None, filter))
    assert stats.zones_skipped == 1


def test_column_groups_skip_default_zones_by_their_row_groups(module_store):
    rows = 4 * 65_536
    rng = np.random.default_rng(9)
    table = pa.table({"k": np.arange(rows), "x": rng.random(rows), "s": rng.integers(0, 9, rows).astype(str)})
    design = Design(column_groups="each", row_group_size=65_536)
    dataset = module_store.write_dataset("footers_groups", table, design=design, rows_per_object=rows)
    filter = (pc.field("k") >= 140_000) & (pc.field("k") < 150_000)
    result, stats = pushed_down(dataset, filter, ["x", "s"])
    assert_same_table(result, expected(table, ["x", "s"], filter))
    assert stats.zones_skipped == 3


@pytest.mark.parametrize("lie", ["min_above_max", "nan_bound"])
def test_a_footer_whose_bounds_are_invalid_skips_nothing(store, lie):
    # Row group 0 holds k 0..9 and f 0.5..9.5; its footer is patched to claim
    # bounds that are not valid (min > max; NaN): the scan must read it.
    table = pa.table({"k": pa.array(range(20), pa.int64()), "f": pa.array([i + 0.5 for i in range(20)])})
    dataset = store.write_dataset("lying", table, row_group_size=10)
    name = dataset.manifest.partitions[0].object_name
    data = store.backend.read_object(name).to_pybytes()
    if lie == "min_above_max":  # k's max 9 becomes -1, below its min 0
        old, new, filter = struct.pack("<q", 9), struct.pack("<q", -1), pc.field("k") == 5
    else:  # f's min 0.5 becomes NaN
        old, new, filter = struct.pack("<d", 0.5), struct.pack("<d", math.nan), pc.field("f") == 0.5
    footer_start = len(data) - 8 - struct.unpack("<i", data[-8:-4])[0]
    assert old in data[footer_start:]
    data = data[:footer_start] + data[footer_start:].replace(old, new)
    # As a hostile writer stores it: its design without checksums (they would refuse the patched footer).
    attribute = ObjectDesign.from_bytes(store.backend.object_attribute(name, DESIGN_ATTRIBUTE)).to_bytes()
    store.backend.put_object(name, pa.py_buffer(data), {DESIGN_ATTRIBUTE: attribute})
    result, stats = pushed_down(store.dataset("lying"), filter)
    assert_same_table(result, expected(table, None, filter))
    assert stats.zones_skipped == 1  # row group 1, whose bounds are valid
