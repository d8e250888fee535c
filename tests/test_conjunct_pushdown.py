"""A filter storage can run only in part still goes there in part: each top-level
conjunct Substrait can carry runs in storage (pruning and filtering), the client
evaluates the rest on what comes back, for scans and aggregates; answers equal
pyarrow's."""

from __future__ import annotations

import functools
import operator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skyhook
from skyhook.execution.placement import Placement
from skyhook.plan.expressions import filter_columns, place_filter
from support.assertions import assert_same_table

ROWS = 8000
TABLE = pa.table(
    {
        "price": pa.array(range(ROWS), pa.int64()),
        "comment": [f"xa{i % 7}b" if i % 3 else "plain" for i in range(ROWS)],
        "group": [i % 5 for i in range(ROWS)],
        "padding": [f"{i:0>40}" for i in range(ROWS)],
    }
)
# pyarrow cannot serialise match_like to Substrait: the client runs it.
LIKE = pc.match_like(pc.field("comment"), "%a_b%")


@pytest.fixture
def dataset(store):
    return store.write_dataset("t", TABLE, rows_per_object=2000)


def test_the_conjuncts_storage_can_run_go_there(dataset):
    cheap = pc.field("price") >= 7000
    dataset.to_table(columns=["price"], filter=LIKE)
    nothing_pushed = dataset.last_scan.stats
    answer = dataset.to_table(columns=["price"], filter=cheap & LIKE)
    assert_same_table(answer, TABLE.filter(cheap & LIKE).select(["price"]))
    stats = dataset.last_scan.stats
    assert not stats.filter_in_storage and stats.filter_partly_in_storage
    assert stats.objects_pruned == 3  # by the objects' statistics of price
    # Of the one object left, storage returned the half with price >= 7000 (price and comment).
    assert stats.bytes_returned < 0.75 * nothing_pushed.bytes_returned / 4
    explained = str(dataset.explain(columns=["price"], filter=cheap & LIKE))
    assert "the rest of the filter" in explained and "    (price >= 7000): storage" in explained
    assert "match_like(comment" in explained and "client (Substrait cannot carry it" in explained


def test_an_aggregate_filters_in_storage_with_what_it_can(dataset):
    filter = (pc.field("price") < 3000) & LIKE & (pc.field("group") != 2)
    answer = dataset.group_by("group").aggregate([("price", "sum"), ("price", "count")], filter=filter)
    expected = TABLE.filter(filter).group_by("group").aggregate([("price", "sum"), ("price", "count")])
    assert_same_table(answer.sort_by("group"), expected.sort_by("group"))
    assert set(dataset.last_aggregate.stats.where.values()) == {Placement.STORAGE_PART_OF_FILTER}


def test_placement_splits_only_top_level_conjuncts():
    schema = TABLE.schema
    whole = place_filter(pc.field("price") > 5, schema)
    assert whole.storage is not None and whole.client is None
    neither = place_filter((pc.field("price") > 5) | LIKE, schema)  # an OR: all or nothing
    assert neither.storage is None and neither.client is not None
    split = place_filter((pc.field("price") > 5) & LIKE, schema)
    assert split.storage is not None and str(split.client) == str(LIKE)
    assert split.client_reads == {"comment"} and split.reads == {"price", "comment"}
    assert filter_columns(LIKE, schema) == {"comment"}  # named, though Substrait cannot carry it


_TERMS = [
    pc.field("price") > 1234,
    pc.field("price") <= 6500,
    pc.field("group").isin([1, 3]),
    LIKE,
    pc.utf8_length(pc.field("comment")) > 4,
    ~pc.match_substring(pc.field("padding"), "77"),
]


@pytest.fixture(scope="module")
def embedded_dataset(tmp_path_factory):
    with skyhook.connect(tmp_path_factory.mktemp("conjuncts").as_uri()) as store:
        yield store.write_dataset("t", TABLE, rows_per_object=2000)


@settings(max_examples=25, deadline=None)
@given(chosen=st.lists(st.sampled_from(range(len(_TERMS))), min_size=1, max_size=5), project=st.booleans())
def test_any_conjunction_answers_like_pyarrow(embedded_dataset, chosen, project):
    dataset = embedded_dataset
    filter = functools.reduce(operator.and_, [_TERMS[i] for i in chosen])
    columns = ["price", "group"] if project else None
    expected = TABLE.filter(filter)
    assert_same_table(dataset.to_table(columns=columns, filter=filter), expected.select(columns or TABLE.column_names))


def test_functions_storage_does_not_run_go_to_the_client(dataset):
    """sqrt is valid pyarrow that storage refuses: the client runs it (it failed
    with storage's "not allowed in storage"), and explain says why."""
    scaled = pc.field("price").cast(pa.float64(), safe=False) / 4000.0
    grown = pc.sqrt(scaled) > 1
    answer = dataset.to_table(columns=["price"], filter=grown & (pc.field("price") < 7000))
    assert_same_table(answer, TABLE.filter(grown & (pc.field("price") < 7000)).select(["price"]))
    assert dataset.last_scan.stats.filter_partly_in_storage and not dataset.last_scan.stats.filter_in_storage
    explained = str(dataset.explain(columns=["price"], filter=grown))
    assert "client (storage does not run the function 'sqrt')" in explained
    frame = TABLE.to_pandas()
    expected = {
        "over": (frame.price > 10).groupby(frame["group"]).sum().to_numpy(),
        "grown": np.sqrt(frame.price / 4000).groupby(frame["group"]).sum().to_numpy(),
    }
    over, grown = (pc.field("price") > 10, "sum", "over"), (pc.sqrt(scaled), "sum", "grown")
    for inputs in [over], [over, grown]:
        answer = dataset.group_by("group").aggregate(inputs, pushdown=True).sort_by("group")
        for _, _, name in inputs:
            np.testing.assert_allclose(answer.column(name).to_numpy(), expected[name], rtol=1e-12)
        # A comparison's trues are summed in storage; sqrt makes the client aggregate.
        assert dataset.last_aggregate.stats.aggregate_in_storage == (inputs == [over])


def test_storage_functions_mirror_the_storage_check():
    """The client's list of what storage runs is the storage check's own list."""
    import re
    from pathlib import Path

    from skyhook.plan.substrait import STORAGE_FUNCTIONS

    source = (Path(__file__).parent.parent / "cpp/skyhook/substrait/expression_check.cc").read_text()
    table = source[source.index("ScalarFunctions()") : source.index("return functions;")]
    assert set(re.findall(r'\{"(\w+)", Family::', table)) == STORAGE_FUNCTIONS
