"""Polars over a skyhook Dataset (``pl.scan_pyarrow_dataset``): the filters and
projections Polars hands to pyarrow run in storage, and every answer equals
Polars' own over the same data in memory."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

from skyhook.rpc.reply import decode_reply

pl = pytest.importorskip("polars")

ROWS = 400
TABLE = pa.table(
    {
        "a": pa.array([None if i % 37 == 0 else i for i in range(ROWS)], pa.int64()),
        "s": pa.array([None if i % 41 == 0 else f"x{i % 7}y{i % 3}" for i in range(ROWS)]),
        "f": pa.array([i * 0.25 for i in range(ROWS)], pa.float64()),
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i) for i in range(ROWS)]),
    }
)

QUERIES: dict[str, Callable] = {
    "comparison": lambda frame: frame.filter(pl.col("a") > 350).select("a", "s"),
    "is_in": lambda frame: frame.filter(pl.col("s").is_in(["x1y1", "x2y0"])).select("a"),
    "starts_with": lambda frame: frame.filter(pl.col("s").str.starts_with("x1")).select("a", "f"),
    "contains": lambda frame: frame.filter(pl.col("s").str.contains("y2", literal=True)).select("a"),
    "date": lambda frame: frame.filter(pl.col("d") < datetime.date(2020, 1, 20)).select("a", "d"),
    "between": lambda frame: frame.filter(pl.col("f").is_between(3, 9)).select("a"),
    "nulls": lambda frame: frame.filter(pl.col("s").is_null() | pl.col("a").is_null()).select("a", "s"),
    "and_or": lambda frame: frame.filter((pl.col("a") < 20) & ((pl.col("f") > 2) | pl.col("s").is_null())),
    "group_by": lambda frame: frame.filter(pl.col("a") > 100).group_by("s").agg(pl.col("f").sum()).sort("s"),
    "count": lambda frame: frame.filter(pl.col("f") >= 95).select(pl.len()),
}
# Polars 2.1 evaluates string predicates itself: no filter reaches the dataset.
KEPT_BY_POLARS = {"starts_with", "contains"}


@pytest.fixture
def replies(store, monkeypatch) -> Iterator[list]:
    """The replies of the storage-side scans the queries cause."""
    seen: list = []
    call_many = store.backend.call_many

    def recording(method: str, calls, admission=None):
        for reply in call_many(method, calls, admission):
            seen.append(decode_reply(reply))
            yield reply

    monkeypatch.setattr(store.backend, "call_many", recording)
    yield seen


@pytest.mark.parametrize("name", list(QUERIES))
def test_polars_queries_run_in_storage(store, replies, name):
    dataset = store.write_dataset("t", TABLE, rows_per_object=100)
    query = QUERIES[name]
    result = query(pl.scan_pyarrow_dataset(dataset)).collect()
    expected = query(pl.from_arrow(TABLE).lazy()).collect()
    assert result.equals(expected), (result, expected)
    # Storage filtered: some object returned fewer rows than it scanned, or skipped
    # zones that its footers' statistics exclude.
    assert name in KEPT_BY_POLARS or any(
        reply.statistics.get("rows_returned", 0) < reply.statistics.get("rows_scanned", 0)
        or reply.statistics.get("zones_skipped", 0) > 0
        for reply in replies
    )
