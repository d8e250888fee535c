"""What a dataset must answer while transforms run over it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import skyhook
from support.assertions import assert_same_table


def by_id(table: pa.Table) -> pa.Table:
    return table.sort_by("id")


def assert_answers(store: skyhook.Store, name: str, expected: pa.Table) -> None:
    """A whole scan and a filtered one equal pyarrow's."""
    dataset = store.dataset(name)
    assert_same_table(by_id(dataset.to_table()), by_id(expected))
    wanted = expected.filter(pc.field("i32") > 200)
    assert_same_table(by_id(dataset.to_table(filter=pc.field("i32") > 200)), by_id(wanted))
    assert dataset.count_rows() == expected.num_rows
