"""What a store must hold after writers ran: exactly the objects its manifests name."""

from __future__ import annotations

import pyarrow as pa

import skyhook
from skyhook.names import object_owner
from support.assertions import assert_same_table


def partition_objects(store: skyhook.Store, dataset: str | None = None) -> list[str]:
    """Every partition object (or temporary file of one) in storage, of one dataset if given."""
    return sorted(
        name
        for name in store.backend.object_names()
        if (owner := object_owner(store.backend.partition_name(name))) and dataset in (None, owner.dataset)
    )


def assert_consistent(store: skyhook.Store, dataset: str, expected: pa.Table) -> None:
    """The dataset reads as expected, storage holds exactly its objects once the
    retired ones are collected (store keeps none), fsck is clean."""
    store.collect_garbage(dataset)
    assert_same_table(store.dataset(dataset).to_table(), expected)
    assert partition_objects(store, dataset) == sorted(p.object_name for p in store.manifest(dataset).partitions)
    report = store.fsck()
    assert report.clean and not report.in_progress, report
