"""Filters with a NaN literal answer as pyarrow does on every path. Arrow's
expression simplification orders NaN above every number, so against bounds
it takes `x < NaN` as true and `not (x < NaN)` as false (both are wrong for
every number): statistics would rule out objects and zones whose rows all
match. Such filters are never simplified against statistics (manifest
pruning, the Arrow Dataset's fragments, zones in storage)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

F = pc.field
NAN = float("nan")
ROWS = 6_000
FILTERS = [
    ~(F("x") < NAN),
    ~(F("x") <= NAN),
    ~(F("i") < NAN),
    ~(F("x") > NAN) & (F("x") > 100),
    (F("x") != NAN) & (F("i") < 4_500),
    ~F("x").isin(pa.array([NAN, 7.0])),
    (F("x") < NAN) | (F("i") >= 5_900),
    ~(F("x") == pc.scalar(pa.scalar(NAN, pa.float32()))),
]


@pytest.fixture(scope="module")
def table() -> pa.Table:
    x = [NAN if i % 997 == 0 else float(i) for i in range(ROWS)]
    return pa.table({"i": pa.array(range(ROWS), pa.int64()), "x": pa.array(x, pa.float64())})


@pytest.fixture(scope="module", params=["parquet", "ipc"])
def designed(module_store, table, request):
    """Sorted objects of several zones, with statistics computed in storage and an index."""
    name = f"nan_{request.param}"
    dataset = module_store.write_dataset(name, table, rows_per_object=1_500, row_group_size=250, format=request.param)
    dataset.compute_statistics()
    dataset.create_index("i")
    return module_store.dataset(name)


def rows(table: pa.Table) -> list[int]:
    """The rows by their i (NaN is not equal to itself, so tables are not compared)."""
    return sorted(table["i"].to_pylist())


@pytest.mark.parametrize("filter", FILTERS, ids=str)
def test_every_path_answers_as_pyarrow(designed, table, filter):
    expected = rows(table.filter(filter))
    assert expected
    for pushdown in (True, False):
        assert rows(designed.to_table(filter=filter, pushdown=pushdown)) == expected, pushdown
    assert rows(pads.Scanner.from_dataset(designed, filter=filter).to_table()) == expected
    assert designed.count_rows(filter=filter) == len(expected)
    assert pads.Scanner.from_dataset(designed, filter=filter).count_rows() == len(expected)
    counted = designed.group_by([]).aggregate([("i", "count")], filter=filter)
    assert counted.column(0).to_pylist() == [len(expected)]


def test_filters_without_nan_still_prune(designed, table):
    filter = (F("i") >= 4_500) & ~F("x").is_nan()
    scanner = designed.scanner(filter=filter)
    assert rows(scanner.to_table()) == rows(table.filter(filter))
    assert scanner.stats.objects_pruned == 3
