"""The object store a backend offers: a flat namespace of objects with
attributes, dataset manifests published by compare-and-swap, a record of
the writes in progress (for fsck) and a log of retired objects (replaced by a
publication, deleted once no reader can still need them)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class StoredManifest:
    data: bytes
    #: Opaque; replace_manifest and delete_manifest act only if the manifest is still at it.
    version: object


@dataclass(frozen=True)
class VersionedObject:
    """An object's bytes and attributes, read at one moment."""

    data: pa.Buffer
    attributes: dict[str, bytes]
    #: Opaque; replace_object_at acts only if the object is still at it.
    version: object


@dataclass(frozen=True)
class PendingWriteRecord:
    dataset: str
    generation: str
    #: True when the writer is known dead (or silent for longer than the grace).
    abandoned: bool


class PendingWrite(ABC):
    """A write in progress, registered before its first object is stored so that
    fsck leaves its objects alone; finish() withdraws it."""

    def heartbeat(self) -> None:
        """Say the writer is still alive (after each object)."""

    @abstractmethod
    def finish(self) -> None: ...


class OpenedObject(ABC):
    """One version of an object, as it was when opened: its size and attributes,
    and reads of byte ranges of that same version (never of a newer one)."""

    size: int
    #: Every attribute of that version (skyhook.design, or skyhook.format before designs).
    attributes: dict[str, bytes]

    @abstractmethod
    def read(self, ranges: list[tuple[int, int]]) -> list[pa.Buffer]:
        """The bytes of each (offset, length); ObjectChangedError if the object was replaced meanwhile."""

    def close(self) -> None:
        """Release what the opened object holds."""


class ObjectStore(ABC):
    @property
    @abstractmethod
    def uri(self) -> str: ...

    # Objects: put, read, delete and list, with attributes (the object's format).

    @abstractmethod
    def put_object(self, name: str, data: pa.Buffer, attributes: dict[str, bytes | str]) -> None:
        """Create or replace an object and its attributes atomically."""

    @abstractmethod
    def create_object(self, name: str, data: bytes) -> bool:
        """Create an object exclusively and atomically; False if one exists (left as it is)."""

    @abstractmethod
    def read_object(self, name: str) -> pa.Buffer:
        """The whole object, as a plain read (no storage-side processing)."""

    @abstractmethod
    def open_object(self, name: str) -> OpenedObject:
        """The object's current version, for reads of its attributes and byte ranges that agree."""

    @abstractmethod
    def object_attribute(self, name: str, key: str) -> bytes | None:
        """One attribute of an object, None when it has none of that name."""

    # Rewriting an object in place (a client-side transform) is a
    # compare-and-swap too, so it cannot clobber another writer's change.

    @abstractmethod
    def read_versioned_object(self, name: str) -> VersionedObject: ...

    @abstractmethod
    def replace_object_at(self, name: str, data: bytes, attributes: dict[str, bytes], version: object) -> bool:
        """Replace an object's bytes and set attributes (keeping the others) atomically,
        if it is still at version; False if it changed."""

    @abstractmethod
    def copy_object(self, source: str, target: str) -> None:
        """Create or replace target as a copy of source, bytes and attributes, made
        by the store (the bytes do not pass through this process)."""

    @abstractmethod
    def delete_object(self, name: str) -> None:
        """Remove an object; a missing object is not an error."""

    @abstractmethod
    def object_names(self) -> list[str]:
        """Every object of the store (partitions, temporaries and anything else in its namespace)."""

    def abandoned_temporary(self, stored_name: str) -> bool:
        """Whether a stored object is a temporary copy of an existing object
        that no writer is making any more (a killed in-place rewrite's)."""
        return False

    def partition_name(self, stored_name: str) -> str:
        """The partition object whose data a stored object holds: itself, or the
        one a temporary object is being written for."""
        return stored_name

    # Manifests are published atomically (readers see the old one or the new
    # one) and only by compare-and-swap, so no write is ever silently lost.

    @abstractmethod
    def get_manifest(self, dataset: str) -> StoredManifest | None: ...

    @abstractmethod
    def create_manifest(self, dataset: str, data: bytes) -> bool:
        """Publish the first manifest of a dataset; False if one exists."""

    @abstractmethod
    def replace_manifest(self, dataset: str, data: bytes, version: object) -> bool:
        """Replace the manifest if it is still at version; False if it changed or is gone."""

    @abstractmethod
    def delete_manifest(self, dataset: str, version: object) -> bool:
        """Remove the manifest if it is still at version; False if it changed or is gone."""

    @abstractmethod
    def dataset_names(self) -> list[str]: ...

    def check_index(self, object_names: list[str], repair: bool) -> list[str]:
        """Disagreements between the list of datasets and the manifests stored (given
        every object name), repaired if asked. None where the manifests are the list."""
        return []

    # Writes in progress, so that fsck tells a live writer's objects from orphans.

    @abstractmethod
    def begin_write(self, dataset: str, generation: str) -> PendingWrite: ...

    @abstractmethod
    def pending_writes(self, grace_seconds: float) -> list[PendingWriteRecord]:
        """Writes begun and not finished; abandoned ones belong to dead writers."""

    @abstractmethod
    def forget_write(self, dataset: str, generation: str) -> None:
        """Drop the record of an abandoned write (after fsck removed its objects)."""

    # The retirement log (skyhook.backends.retirement): records that are each
    # stored once under a key of their own and removed once, never rewritten, so
    # no two clients ever update one record and none can lose another's.

    @abstractmethod
    def put_retirement(self, dataset: str, key: str, record: bytes) -> None:
        """Store a retirement record of dataset under key (a fresh generation)."""

    @abstractmethod
    def retirement_records(self) -> list[tuple[str, str, bytes]]:
        """Every retirement record as (dataset, key, record)."""

    @abstractmethod
    def drop_retirement(self, dataset: str, key: str) -> None:
        """Remove a retirement record; a missing one is not an error."""

    # Earlier versions of a dataset's manifest (skyhook.catalog.versions): each
    # stored once, by the commit that replaces it, under its version number.

    @abstractmethod
    def put_archived_manifest(self, dataset: str, version: int, data: bytes) -> None:
        """Store the manifest of version (replacing any stored under that number)."""

    @abstractmethod
    def archived_manifest(self, dataset: str, version: int) -> bytes | None:
        """The manifest stored as version, or None."""

    @abstractmethod
    def archived_versions(self, dataset: str) -> list[int]:
        """The versions stored, ascending."""

    @abstractmethod
    def drop_archived_manifest(self, dataset: str, version: int) -> None:
        """Remove an archived version; a missing one is not an error."""
