"""What a store must hold after writers ran: exactly the objects its manifests
name, its current ones and those of the versions each keeps for time travel."""

from __future__ import annotations

import pyarrow as pa

import skyhook
from skyhook.catalog.versions import kept_manifests
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
    """The dataset reads as expected, storage holds exactly the objects of its
    kept versions once the retired ones are collected (store keeps none), fsck is clean."""
    store.collect_garbage(dataset)
    assert_same_table(store.dataset(dataset).to_table(), expected)
    assert partition_objects(store, dataset) == kept_objects(store, dataset)
    report = store.fsck()
    assert report.clean and not report.in_progress, report


def kept_objects(store: skyhook.Store, dataset: str) -> list[str]:
    """The objects the dataset's current version and the earlier ones it keeps name."""
    current = store.manifest(dataset)
    manifests = [current, *kept_manifests(store.backend, current)]
    return sorted({name for manifest in manifests for p in manifest.partitions for name in p.object_names})
