"""Partition pruning without a backend: synthetic manifests whose statistics
are computed here as storage's describe computes them."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skyhook.catalog.design import Design, ObjectDesign
from skyhook.catalog.manifest import Manifest, Partition, statistics_type
from skyhook.catalog.pruning import matching_partitions
from skyhook.names import object_name
from skyhook.plan.expressions import filter_columns
from support.strategies import TABLE, filters

F = pc.field
GENERATION = "1700000000abcdef"


def column_statistics(column: pa.ChunkedArray) -> dict:
    """{min, max, null_count, bytes}; min and max null where they cannot prune
    (unorderable types, NaN, no values), as describe reports them."""
    bounds = {"min": None, "max": None}
    floating_nan = pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py()
    if column.null_count < len(column) and not floating_nan:
        try:
            bounds = pc.min_max(column).as_py()
        except pa.ArrowNotImplementedError:
            pass
    return {**bounds, "null_count": column.null_count, "bytes": column.nbytes}


def manifest_of(pieces: list[pa.Table], statistics: list[dict] | None = None) -> Manifest:
    schema = pieces[0].schema
    rows = statistics or [{name: column_statistics(piece.column(name)) for name in schema.names} for piece in pieces]
    return Manifest(
        "t",
        schema,
        ObjectDesign.request(Design(), schema.names, 0),
        GENERATION,
        tuple(
            Partition(
                number,
                object_name("t", GENERATION, number),
                piece.num_rows,
                piece.nbytes,
                ObjectDesign.legacy("parquet", piece.nbytes),
            )
            for number, piece in enumerate(pieces)
        ),
        pa.array(rows, statistics_type(schema)),
    )


def kept(manifest: Manifest, filter: pc.Expression | None) -> list[int]:
    return [partition.number for partition in matching_partitions(manifest, filter)]


def pieces_of(table: pa.Table, size: int) -> list[pa.Table]:
    return [table.slice(start, size) for start in range(0, table.num_rows, size)]


PIECES = pieces_of(TABLE, 300)  # id ascending: 0-299, 300-599, ...
MANIFEST = manifest_of(PIECES)


@pytest.mark.parametrize(
    "filter, expected",
    [
        (None, [0, 1, 2, 3, 4]),
        (F("id") < 300, [0]),
        (F("id") >= 1200, [4]),
        ((F("id") > 299) & (F("id") < 600), [1]),
        ((F("id") < 10) | (F("id") > 1450), [0, 4]),
        (F("id") > 10_000, []),
        (F("id").isin(pa.array([5, 905], pa.int64())), [0, 3]),
        (F("all_null").is_null(), [0, 1, 2, 3, 4]),
        (F("all_null") > 3, []),
        (F("all_null").is_valid(), []),
    ],
)
def test_statistics_prune_what_they_rule_out(filter, expected):
    assert kept(MANIFEST, filter) == expected


def test_partitions_without_usable_bounds_are_kept():
    statistics = [{name: column_statistics(piece.column(name)) for name in TABLE.schema.names} for piece in PIECES[:2]]
    statistics[0]["id"] = {"min": None, "max": None, "null_count": 0, "bytes": 1}  # e.g. NaN or unorderable
    manifest = manifest_of(PIECES[:2], statistics)
    assert kept(manifest, F("id") > 700) == [0]  # ids 300-599 ruled out; 0-299 has no bounds


def test_nulls_weaken_the_guarantee_without_losing_rows():
    table = pa.table({"x": pa.array([1, None, 3, 10, 11, 12], pa.int64())})
    manifest = manifest_of(pieces_of(table, 3))
    assert kept(manifest, F("x") > 5) == [0, 1]  # 1-3 and nulls: "null or in range" is not used to prune
    assert kept(manifest, F("x") < 5) == [0]
    assert kept(manifest, F("x").is_null()) == [0]  # 10-12, no nulls
    assert kept(manifest, F("x") == 2) == [0]  # in range, not a value: statistics cannot tell


def test_nan_bounds_are_not_trusted():
    table = pa.table({"f": pa.array([1.0, math.nan, 2.0, 5.0, 6.0, 7.0], pa.float64())})
    manifest = manifest_of(pieces_of(table, 3))
    assert kept(manifest, F("f") > 4) == [0, 1]
    assert kept(manifest, F("f") < 3) == [0]


@settings(max_examples=150, deadline=None)
@given(filter=filters(), size=st.sampled_from([1, 7, 250, 1500]))
def test_pruning_never_drops_a_matching_row(filter, size):
    pieces = pieces_of(TABLE, size) if size > 1 else pieces_of(TABLE.slice(0, 40), size)
    manifest = manifest_of(pieces)
    survivors = set(kept(manifest, filter))
    # Guarantees cut to the columns the filter reads prune exactly as the whole ones.
    cut = matching_partitions(manifest, filter, filter_columns(filter, TABLE.schema))
    assert {partition.number for partition in cut} == survivors
    for number, piece in enumerate(pieces):
        if piece.filter(filter).num_rows:
            assert number in survivors, f"partition {number} pruned but holds matching rows"


def test_each_manifest_prunes_by_its_own_statistics_though_ids_are_reused():
    """Guarantees are remembered per manifest object: a freed manifest's must
    never serve a new one that got its id (CPython reuses them at once)."""
    seen_ids = set()
    for round in range(40):
        piece = pa.table({"x": pa.array([round * 10, round * 10 + 5], pa.int64())})
        manifest = manifest_of([piece])
        seen_ids.add(id(manifest))
        assert kept(manifest, F("x") == round * 10 + 5) == [0]
        assert kept(manifest, F("x") == (round - 1) * 10 + 5) == []
        assert matching_partitions(manifest, F("x") == (round - 1) * 10 + 5, {"x"}) == []
        del manifest
    assert len(seen_ids) < 40  # ids were reused: the test exercised what it names


def test_each_set_of_columns_prunes_by_its_own_guarantees():
    """The partitions with their guarantees are remembered per manifest and per
    set of columns read: a set must not be served another's (here: one whose
    guarantees say nothing of the filter's column, which would prune nothing)."""
    by_id, by_flag = F("id") >= 1200, F("all_null").is_valid()
    for columns, filter, expected in [
        ({"id"}, by_id, [4]),
        ({"all_null"}, by_flag, []),
        ({"id"}, by_id, [4]),
        ({"all_null", "id"}, by_id & by_flag, []),
        (["id", "all_null"], by_id, [4]),  # the same set in another order
        (None, by_flag, []),
    ]:
        assert [p.number for p in matching_partitions(MANIFEST, filter, columns)] == expected


def test_a_subset_is_made_once_and_prunes_by_its_own_partitions():
    """A manifest's subsets are remembered (a server's tickets and a Dask
    graph's partitions ask for the same ones again), each with its own
    partitions' statistics, numbered anew."""
    subset = MANIFEST.subset([4, 1])
    assert MANIFEST.subset([4, 1]) is subset and MANIFEST.subset([1, 4]) is not subset
    assert [p.object_name for p in subset.partitions] == [
        MANIFEST.partitions[4].object_name,
        MANIFEST.partitions[1].object_name,
    ]
    assert kept(subset, F("id") >= 1200) == [0] and kept(subset, (F("id") > 299) & (F("id") < 600)) == [1]
    assert kept(MANIFEST.subset([1, 4]), F("id") >= 1200) == [1]
