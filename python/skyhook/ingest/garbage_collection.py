"""Deleting retired objects (skyhook.backends.retirement) once no reader can
still need them: when the retention period after their latest retirement has
passed, and never while the dataset's current manifest names them.

A retention period, not reader leases: readers need only read access (a
Ceph user with `allow r` cannot register a lease), a crashed reader can pin
nothing, and garbage is bounded by the overwrites of one period. A reader that
is still scanning a replaced version once its objects are gone gets
DatasetChangedError, never a partial answer."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from skyhook.backends.object_store import ObjectStore
from skyhook.backends.retirement import Retirement, retire_objects, retirements
from skyhook.catalog.manifest import Manifest
from skyhook.catalog.versions import expire_versions, kept_manifests
from skyhook.errors import CorruptManifestError, SkyhookError

#: How long replaced objects outlive the publication that replaced them: far
#: longer than a scan takes (every storage call is bounded by the node limits).
DEFAULT_RETENTION_SECONDS = 3600.0


@dataclass
class Collection:
    #: Retired objects deleted now.
    deleted: list[str] = field(default_factory=list)
    #: Retired objects kept because a reader may still use them, as (object, seconds until due).
    kept: list[tuple[str, float]] = field(default_factory=list)


def collect_garbage(store: ObjectStore, retention_seconds: float, dataset: str | None = None) -> Collection:
    """Delete the retired objects (of dataset, or of every dataset) that are due,
    and drop the records left with nothing to delete."""
    # The log first, then the manifests: a record's swap that has not happened
    # by the time a manifest is read leaves its objects named there, so they
    # are kept; one that happened has stopped naming them for good.
    records = retirements(store, dataset)[0]
    datasets = [dataset] if dataset is not None else sorted({record.dataset for record in records})
    current: dict[str, set[str]] = {}
    for name in datasets:
        kept = kept_objects(store, name)
        if kept is not None:
            current[name], expired = kept
            records += expired
    records = [record for record in records if record.dataset in current]
    latest: dict[str, float] = {}  # object -> its latest retirement
    for record in records:
        for name in record.objects:
            latest[name] = max(latest.get(name, record.retired_at), record.retired_at)
    now = time.time()
    collection = Collection()
    owner = {name: record.dataset for record in records for name in record.objects}
    for name, retired_at in sorted(latest.items()):
        if name in current[owner[name]]:
            continue  # its swap has not happened (yet, or ever)
        if retired_at + retention_seconds <= now:
            store.delete_object(name)
            collection.deleted.append(name)
        else:
            collection.kept.append((name, retired_at + retention_seconds - now))
    # A record goes only with the last of its objects: one naming objects
    # still current may belong to a swap about to happen, whose objects would
    # otherwise outlive it unowned (a never-happened swap's record goes once
    # a later publication retires them for real).
    deleted = set(collection.deleted)
    for record in records:
        if all(name in deleted for name in record.objects):
            store.drop_retirement(record.dataset, record.key)
    return collection


def collect_after_write(store: ObjectStore, retention_seconds: float, dataset: str) -> None:
    """collect_garbage(dataset) once a write or delete has published: a failure
    here is not the write's, and leaves what is due to the next write or fsck."""
    try:
        collect_garbage(store, retention_seconds, dataset)
    except SkyhookError:
        pass


def kept_objects(store: ObjectStore, dataset: str) -> tuple[set[str], list[Retirement]] | None:
    """The objects the dataset's manifest and its kept earlier versions name
    (none once it is deleted); None if the manifest cannot be trusted, whose
    dataset is then left alone. Versions no longer kept are expired here: the
    objects only they named are retired anew (the records returned), so that a
    reader who opened such a version just before has the retention period."""
    stored = store.get_manifest(dataset)
    try:
        manifest = None if stored is None else Manifest.from_bytes(stored.data, dataset)
        if manifest is None:
            return set(), []
        named = _named(manifest)
        for earlier in kept_manifests(store, manifest):
            named |= _named(earlier)
    except CorruptManifestError:
        return None
    unkept: set[str] = set()
    for expired in expire_versions(store, manifest):
        unkept |= _named(expired) - named
    return named, retire_objects(store, dataset, "", unkept) if unkept else []


def _named(manifest: Manifest) -> set[str]:
    return {name for partition in manifest.partitions for name in partition.object_names}
