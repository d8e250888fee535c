"""Filters on columns a request names by another type (their carrier) run in
storage where they mean the same there: comparisons of zoned timestamps (also
beside columns whose types pyarrow declares as extensions, such as
large_string and unsigned integers), and every string function on a view,
whose carrier is the same text in another layout. Answers equal pyarrow's."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.assertions import assert_same_table

ZONED = pa.timestamp("us", tz="America/New_York")
START = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
ROWS = 3000
TABLE = pa.table(
    {
        "ts": pa.array([START + datetime.timedelta(hours=i) for i in range(ROWS)], ZONED),
        "ls": pa.array([f"x{i % 13}" for i in range(ROWS)], pa.large_string()),
        "u": pa.array(range(ROWS), pa.uint16()),
        "vs": pa.array([f"y{i % 5}" for i in range(ROWS)], pa.string_view()),
    }
)
# pyarrow cannot filter string views: the oracle reads them as strings.
PLAIN = TABLE.set_column(3, "vs", TABLE["vs"].cast(pa.string()))


@pytest.mark.parametrize(
    "filter",
    [
        pc.field("ts") >= pa.scalar(START + datetime.timedelta(hours=2100), ZONED),
        (pc.field("ts") < pa.scalar(START + datetime.timedelta(days=3), ZONED))
        & (pc.field("u") > pa.scalar(10, pa.uint16())),
        pc.ends_with(pc.field("vs"), "3"),
        pc.starts_with(pc.field("vs"), "y1") | pc.match_substring(pc.field("vs"), "4"),
    ],
    ids=["zoned", "zoned-and-unsigned", "view-ends-with", "view-substrings"],
)
def test_the_filter_runs_in_storage_and_answers_as_pyarrow(store, filter):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    answer = dataset.to_table(filter=filter)
    assert dataset.last_scan.stats.filter_in_storage
    answer = answer.set_column(3, "vs", answer["vs"].cast(pa.string()))
    assert_same_table(answer, PLAIN.filter(filter))
