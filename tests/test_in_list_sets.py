"""IN lists in storage: evaluated as sets (a lookup per row, however long
the list) and skipping objects and row groups as the range from the list's
least to its greatest value does; answers equal pyarrow's, for scans and
aggregates, short lists and lists past what zones are simplified for."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.assertions import assert_same_table

ROWS = 16_000
TABLE = pa.table(
    {
        "key": pa.array(range(ROWS), pa.int64()),  # sorted: row groups of 1,000 keys
        "spread": pa.array([(i * 7919) % 4001 if i % 13 else None for i in range(ROWS)], pa.int32()),
        "name": [f"n{i % 97}" for i in range(ROWS)],
        "day": pa.array([i % 400 for i in range(ROWS)], pa.int32()).cast(pa.date32()),
        "ratio": [float("nan") if i % 17 == 0 else (i % 8) / 4 for i in range(ROWS)],
    }
)


@pytest.fixture
def dataset(store):
    return store.write_dataset("t", TABLE, rows_per_object=4_000, row_group_size=1_000)


@pytest.mark.parametrize("length", [3, 40, 500])
def test_an_in_list_skips_what_its_range_skips(dataset, length):
    keys = list(range(6_100, 6_100 + length))
    in_list = pc.field("key").isin(keys)
    in_range = (pc.field("key") >= keys[0]) & (pc.field("key") <= keys[-1])
    answer = dataset.to_table(filter=in_list, pushdown=True)
    listed = dataset.last_scan.stats
    assert_same_table(answer, TABLE.filter(in_list))
    dataset.to_table(filter=in_range, pushdown=True)
    ranged = dataset.last_scan.stats
    assert listed.filter_in_storage
    assert (listed.objects_pruned, listed.zones_skipped) == (ranged.objects_pruned, ranged.zones_skipped)
    assert listed.zones_skipped >= 2  # of the one object left, 4 row groups, 1 holds the keys


@pytest.mark.parametrize(
    "filter",
    [
        pc.field("spread").isin(list(range(0, 4001, 3))),
        pc.field("name").isin([f"n{i}" for i in range(0, 97, 5)]),
        pc.field("day").isin(pa.array([0, 31, 59, 365], pa.int32()).cast(pa.date32())),
        pc.field("spread").isin([5, 9, 77]) | (pc.field("key") < 20),
    ],
    ids=["long-ints-with-nulls", "text", "dates", "or"],
)
def test_in_lists_answer_as_pyarrow(dataset, filter):
    assert_same_table(dataset.to_table(filter=filter, pushdown=True), TABLE.filter(filter))
    assert dataset.last_scan.stats.filter_in_storage
    grouped = dataset.group_by("name").aggregate([("key", "sum"), ("key", "count")], filter=filter, pushdown=True)
    expected = TABLE.filter(filter).group_by("name").aggregate([("key", "sum"), ("key", "count")])
    assert_same_table(grouped.sort_by("name"), expected.sort_by("name"))


def test_a_list_holding_nan_prunes_no_object_of_nan(dataset):
    filter = pc.field("ratio").isin([float("nan"), 0.5])
    assert_same_table(dataset.to_table(filter=filter), TABLE.filter(filter))
    assert dataset.last_scan.stats.objects_pruned == 0
