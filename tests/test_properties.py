"""Randomly generated filters and projections: storage always agrees with pyarrow."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.assertions import assert_same_table
from support.oracle import expected
from support.strategies import TABLE, filters


@pytest.fixture(scope="module")
def dataset(module_store):
    return module_store.write_dataset("t", TABLE, rows_per_object=400)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters(), columns=st.lists(st.sampled_from(TABLE.column_names), min_size=1, max_size=5, unique=True))
def test_random_filters_match_pyarrow(dataset, filter, columns):
    assert_same_table(dataset.to_table(columns=columns, filter=filter), expected(TABLE, columns, filter))
    assert dataset.count_rows(filter=filter) == expected(TABLE, None, filter).num_rows
