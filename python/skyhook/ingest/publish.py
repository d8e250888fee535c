"""Publishing a manifest by compare-and-swap, retiring the objects of the
manifest it replaced (skyhook.backends.retirement)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from skyhook.backends.manifest_commit import BeforeSwap
from skyhook.backends.object_store import ObjectStore, StoredManifest
from skyhook.backends.retirement import retire_objects, withdraw_retirement
from skyhook.catalog.manifest import Manifest
from skyhook.catalog.versions import NextVersion, commit_version, read_version
from skyhook.errors import (
    CorruptManifestError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidRequestError,
    SchemaMismatchError,
)
from skyhook.names import object_owner

#: create fails if the dataset exists; overwrite replaces whatever is there;
#: append adds rows to whatever is there (creating the dataset if there is none).
MODES = ("create", "overwrite", "append")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InvalidRequestError(f"unknown mode {mode!r}; expected create, overwrite or append")


def exists_error(name: str) -> DatasetExistsError:
    return DatasetExistsError(f"dataset {name!r} exists; pass mode='overwrite' to replace it")


def publish(store: ObjectStore, manifest: Manifest, mode: str, must_exist: bool = False) -> Manifest:
    """Commit the manifest and return the manifest published (an append's holds
    the rows before it too). An overwrite retires the objects of the manifest
    it replaces (an append keeps them). Against another writer's publication,
    overwrite means "replace whatever is there now", append "add to it"."""
    name = manifest.dataset

    def change(current: StoredManifest | None) -> NextVersion:
        if current is None:
            if must_exist:
                raise DatasetNotFoundError(f"dataset {name!r} was deleted: nothing to append to")
            return NextVersion(manifest, "create")
        if mode == "create":
            raise exists_error(name)
        if mode == "append":  # after whatever the others published, each object named once
            appended = _appendable(Manifest.from_bytes(current.data, name), manifest).appended(manifest)
            return NextVersion(appended, "append")
        return NextVersion(manifest, "overwrite", retiring(store, name, current, manifest.generation))

    published = commit_version(store, name, change)
    assert published is not None
    return published


def retiring(store: ObjectStore, name: str, replaced: StoredManifest, replaced_by: str) -> BeforeSwap:
    """Before a swap of the manifest replaced, by the publication replaced_by
    ("" for a delete): its objects retired; withdrawn if the swap fails. A
    corrupt manifest's objects are left to fsck."""

    def retire() -> Callable[[], None]:
        manifest = _readable_manifest(replaced, name)
        names = [name for partition in manifest.partitions for name in partition.object_names] if manifest else []
        records = retire_objects(store, name, replaced_by, names)
        return lambda: withdraw_retirement(store, records)

    return retire


def _appendable(current: Manifest, added: Manifest) -> Manifest:
    """current, if added's objects (written in its schema) fit it: a racing
    overwrite may have changed it. Objects of any design mix."""
    if not current.schema.equals(added.schema):
        raise SchemaMismatchError(
            f"dataset {current.dataset!r} was replaced while appending to it, by one of another "
            "schema: nothing was appended"
        )
    return current


def _readable_manifest(stored: StoredManifest, name: str) -> Manifest | None:
    """The manifest just replaced, if it can be trusted; a corrupt one's objects are left to fsck."""
    try:
        return Manifest.from_bytes(stored.data, name)
    except CorruptManifestError:
        return None


def restore(store: ObjectStore, dataset: str, version: int) -> Manifest:
    """Publish a kept version of dataset again, as its next version (the
    objects of the version it replaces are retired, as by an overwrite)."""

    def change(stored: StoredManifest | None) -> NextVersion:
        if stored is None:
            raise DatasetNotFoundError(f"no dataset named {dataset!r}: nothing to restore")
        current = Manifest.from_bytes(stored.data, dataset)
        earlier = read_version(store, current, version)
        # Its objects may be of writers it does not list (a transform since rewrote some): kept, by name.
        listed = {earlier.generation, *(generation for generation, _ in earlier.history)}
        writers = {object_owner(name).generation for p in earlier.partitions for name in p.object_names}  # type: ignore[union-attr]
        restored = replace(earlier, kept=tuple(sorted((set(earlier.kept) | writers) - listed)))
        return NextVersion(restored, "restore", retiring(store, dataset, stored, earlier.generation))

    published = commit_version(store, dataset, change)
    assert published is not None
    return published
