"""Versions of a dataset, and the one way its manifest changes.

Every commit that changes what a dataset holds (a write, an append, a
transform, a plan's step, a restore) publishes the next version: numbered
from 1 (manifests from before versions read as version 0), with its time and
operation. Commits that change only what describes it (statistics, tags, the
retention) keep the version. Before the swap, the manifest being replaced is
archived under its version number, so a kept version reads exactly the rows
it held: its archive names its objects, and garbage collection deletes no
object a kept version names.

Kept: the current version, the keep_versions newest (10 unless set), and every
tagged one. A version's archive belongs to the dataset's lineage (the first
version's generation, carried by every later one), so the archives of a
deleted and recreated dataset are never read as the new one's.

Objects rewritten in place by a transform keep their names: an earlier version
reads each of its objects as the newest version naming it describes it (its
design and sizes now), which is the same rows."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

import pyarrow as pa

from skyhook.backends.manifest_commit import BeforeSwap, Publication, commit
from skyhook.backends.object_store import ObjectStore, StoredManifest
from skyhook.catalog.manifest import Manifest
from skyhook.errors import CorruptManifestError, InvalidRequestError, VersionNotFoundError
from skyhook.names import TAG_NAME

T = TypeVar("T")


@dataclass(frozen=True)
class NextVersion:
    """What a change publishes: the manifest (None: delete the dataset), as
    the next version made by operation, or as the same version (None: it
    changes only what describes the data)."""

    manifest: Manifest | None
    operation: str | None
    before_swap: BeforeSwap | None = None


def commit_version(
    store: ObjectStore, dataset: str, change: Callable[[StoredManifest | None], NextVersion | T]
) -> Manifest | None | T:
    """change applied to the dataset's manifest as stored and committed by
    compare-and-swap as its next version (see the module), retried against
    other writers; returns the manifest published (None: deleted), or what
    change returned when it publishes nothing."""

    def step(stored: StoredManifest | None) -> Publication[Manifest | None] | T:
        outcome = change(stored)
        if not isinstance(outcome, NextVersion):
            return outcome
        if outcome.manifest is None:
            return Publication(None, None, outcome.before_swap)
        previous = readable(stored, dataset)
        if outcome.operation is None:
            return Publication(outcome.manifest.to_bytes(), outcome.manifest, outcome.before_swap)
        published = next_version(outcome.manifest, previous, outcome.operation, time.time())
        archived = previous is not None and stored is not None
        archive = (lambda: store.put_archived_manifest(dataset, previous.version, stored.data)) if archived else None
        return Publication(published.to_bytes(), published, _both(archive, outcome.before_swap))

    return commit(store, dataset, step)


def next_version(manifest: Manifest, previous: Manifest | None, operation: str, at: float) -> Manifest:
    """manifest published as the version after previous (None: the first)."""
    if previous is None:
        return replace(manifest, version=1, committed_at=at, operation=operation, lineage=manifest.generation)
    return replace(
        manifest,
        version=previous.version + 1,
        committed_at=at,
        operation=operation,
        tags=previous.tags,
        keep_versions=previous.keep_versions,
        lineage=previous.lineage,
    )


def readable(stored: StoredManifest | None, dataset: str) -> Manifest | None:
    """The stored manifest, if there is one to trust (a corrupt one is replaced as none)."""
    if stored is None:
        return None
    try:
        return Manifest.from_bytes(stored.data, dataset)
    except CorruptManifestError:
        return None


def kept(current: Manifest, version: int) -> bool:
    """Whether version of the dataset whose current manifest is current is kept."""
    return (
        version == current.version
        or current.version - current.keep_versions < version < current.version
        or version in dict(current.tags).values()
    )


def read_version(store: ObjectStore, current: Manifest, version: int) -> Manifest:
    """The manifest of a kept version (the current one, or its archive with its
    objects as the newest version naming them describes them)."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidRequestError(f"a version is a number, not {version!r}")
    if version == current.version:
        return current
    if not 0 <= version < current.version or not kept(current, version):
        raise VersionNotFoundError(
            f"dataset {current.dataset!r} has no version {version} (kept: {kept_versions(store, current)})"
        )
    earlier = _archived(store, current, version)
    if earlier is None:
        raise VersionNotFoundError(f"version {version} of dataset {current.dataset!r} is no longer stored")
    return _refreshed(store, current, earlier)


def reopened(store: ObjectStore, current: Manifest, generation: str, version: int) -> Manifest | None:
    """What a dataset opened at generation and version reads now: that
    generation (appends since leave it readable, exactly), else the version
    while it is kept; None once neither is there."""
    manifest = current.at_generation(generation)
    if manifest is None and version:
        try:
            manifest = read_version(store, current, version)
        except VersionNotFoundError:
            return None
    return manifest if manifest is not None and manifest.generation == generation else None


def version_as_of(store: ObjectStore, current: Manifest, moment: datetime) -> Manifest:
    """The newest kept version committed at or before moment."""
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise InvalidRequestError(f"as_of is a datetime with a time zone, not {moment!r}")
    cutoff = moment.timestamp()
    for version in reversed(kept_versions(store, current)):
        manifest = current if version == current.version else _archived(store, current, version)
        if manifest is not None and manifest.committed_at <= cutoff:
            return read_version(store, current, version)
    raise VersionNotFoundError(f"dataset {current.dataset!r} has no kept version as of {moment.isoformat()}")


def tagged(current: Manifest, tag: str) -> int:
    found = dict(current.tags).get(tag)
    if found is None:
        raise VersionNotFoundError(
            f"dataset {current.dataset!r} has no tag {tag!r} (tags: {sorted(dict(current.tags))})"
        )
    return found


def kept_versions(store: ObjectStore, current: Manifest) -> list[int]:
    """The kept versions still stored, ascending (the current one last)."""
    stored = [version for version in store.archived_versions(current.dataset) if version < current.version]
    return [version for version in stored if kept(current, version)] + [current.version]


def version_table(store: ObjectStore, current: Manifest) -> pa.Table:
    """A row per kept version: version, committed_at, operation, num_rows, size_bytes, tags."""
    by_version: dict[int, list[str]] = {}
    for tag, version in current.tags:
        by_version.setdefault(version, []).append(tag)
    rows = []
    for version in kept_versions(store, current):
        manifest = current if version == current.version else _archived(store, current, version)
        if manifest is not None:
            rows.append(
                {
                    "version": version,
                    "committed_at": round(manifest.committed_at * 1e6) if manifest.committed_at else None,
                    "operation": manifest.operation or None,
                    "num_rows": manifest.num_rows,
                    "size_bytes": manifest.size_bytes,
                    "tags": sorted(by_version.get(version, [])),
                }
            )
    return pa.Table.from_pylist(rows, VERSION_TABLE_SCHEMA)


VERSION_TABLE_SCHEMA = pa.schema(
    [
        ("version", pa.int64()),
        ("committed_at", pa.timestamp("us", tz="UTC")),
        ("operation", pa.string()),
        ("num_rows", pa.int64()),
        ("size_bytes", pa.int64()),
        ("tags", pa.list_(pa.string())),
    ]
)


def with_tag(current: Manifest, tag: str, version: int | None) -> Manifest:
    """current with tag naming version (None: untagged); checked."""
    if not isinstance(tag, str) or not TAG_NAME.fullmatch(tag):
        raise InvalidRequestError(f"invalid tag {tag!r}: letters, digits, '_', '-' and '.' (at most 128)")
    tags = {name: number for name, number in current.tags if name != tag}
    if version is not None:
        tags[tag] = version
    return replace(current, tags=tuple(sorted(tags.items())))


def with_keep_versions(current: Manifest, versions: int) -> Manifest:
    if isinstance(versions, bool) or not isinstance(versions, int) or versions < 1:
        raise InvalidRequestError(f"keep_versions must be a number of versions >= 1, not {versions!r}")
    return replace(current, keep_versions=versions)


def kept_manifests(store: ObjectStore, current: Manifest) -> list[Manifest]:
    """The archived manifests of the kept earlier versions (their objects must stay)."""
    found = (_archived(store, current, version) for version in kept_versions(store, current)[:-1])
    return [manifest for manifest in found if manifest is not None]


def expire_versions(store: ObjectStore, current: Manifest) -> list[Manifest]:
    """Delete the archives of versions no longer kept (older than current's
    version only: a newer archive is a commit in flight); the manifests they
    held (of current's lineage)."""
    expired = []
    for version in store.archived_versions(current.dataset):
        if version < current.version and not kept(current, version):
            try:
                manifest = _archived(store, current, version)
            except CorruptManifestError:
                manifest = None
            if manifest is not None:
                expired.append(manifest)
            store.drop_archived_manifest(current.dataset, version)
    return expired


def _archived(store: ObjectStore, current: Manifest, version: int) -> Manifest | None:
    """The archive of version, if it is one of current's lineage (else a deleted dataset's: none)."""
    data = store.archived_manifest(current.dataset, version)
    if data is None:
        return None
    manifest = Manifest.from_bytes(data, current.dataset)
    if manifest.version != version:
        raise CorruptManifestError(
            f"the archive of version {version} of dataset {current.dataset!r} holds version {manifest.version}"
        )
    return manifest if manifest.lineage == current.lineage else None


def _refreshed(store: ObjectStore, current: Manifest, earlier: Manifest) -> Manifest:
    """earlier with each partition as the newest version naming its object
    describes it (a transform since may have rewritten it in place)."""
    wanted = {partition.object_name for partition in earlier.partitions}
    newest: dict[str, tuple[Manifest, int]] = {}
    newer = [version for version in kept_versions(store, current)[:-1] if version > earlier.version]
    for manifest in _newest_first(store, current, newer):
        if not manifest.schema.equals(earlier.schema):
            continue
        for index, partition in enumerate(manifest.partitions):
            if partition.object_name in wanted and partition.object_name not in newest:
                newest[partition.object_name] = (manifest, index)
        if len(newest) == len(wanted):
            break
    if not newest:
        return earlier
    partitions, statistics, object_statistics = [], [], []
    for index, partition in enumerate(earlier.partitions):
        source, at = newest.get(partition.object_name, (earlier, index))
        partitions.append(replace(source.partitions[at], number=index))
        statistics.append(source.statistics.slice(at, 1))
        object_statistics.append(source.object_statistics.slice(at, 1))
    return replace(
        earlier,
        partitions=tuple(partitions),
        statistics=pa.concat_arrays(statistics),
        object_statistics=pa.concat_arrays(object_statistics),
    )


def _newest_first(store: ObjectStore, current: Manifest, versions: list[int]):
    yield current
    for version in reversed(versions):
        manifest = _archived(store, current, version)
        if manifest is not None:
            yield manifest


def _both(first: BeforeSwap | None, second: BeforeSwap | None) -> BeforeSwap | None:
    if first is None or second is None:
        return first or second

    def before() -> Callable[[], None]:
        first()
        return second()

    return before


def forget_versions(store: ObjectStore, deleted: Manifest) -> None:
    """Drop the archived versions of a deleted dataset (of its lineage: a
    dataset created again since under its name keeps its own)."""
    for version in store.archived_versions(deleted.dataset):
        data = store.archived_manifest(deleted.dataset, version)
        try:
            ours = data is not None and Manifest.from_bytes(data, deleted.dataset).lineage == deleted.lineage
        except CorruptManifestError:
            ours = True
        if ours:
            store.drop_archived_manifest(deleted.dataset, version)
