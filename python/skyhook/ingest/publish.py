"""Publishing a manifest by compare-and-swap, and deleting the objects of the
manifest it replaced."""

from __future__ import annotations

from skyhook.backends.object_store import ObjectStore, StoredManifest
from skyhook.catalog.manifest import Manifest
from skyhook.errors import (
    CorruptManifestError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidRequestError,
    SchemaMismatchError,
)

#: create fails if the dataset exists; overwrite replaces whatever is there;
#: append adds rows to whatever is there (creating the dataset if there is none).
MODES = ("create", "overwrite", "append")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InvalidRequestError(f"unknown mode {mode!r}; expected create, overwrite or append")


def exists_error(name: str) -> DatasetExistsError:
    return DatasetExistsError(f"dataset {name!r} exists; pass mode='overwrite' to replace it")


def publish(
    store: ObjectStore, manifest: Manifest, mode: str, must_exist: bool = False
) -> tuple[Manifest, Manifest | None]:
    """Compare-and-swap the manifest into place; returns the manifest published
    (an append's holds the rows before it too) and the one replaced (whose
    objects the caller deletes; never for an append, which keeps them)."""
    name, data = manifest.dataset, manifest.to_bytes()
    while True:
        current = store.get_manifest(name)
        if current is None:
            if must_exist:
                raise DatasetNotFoundError(f"dataset {name!r} was deleted: nothing to append to")
            if store.create_manifest(name, data):
                return manifest, None
            if mode == "create":
                raise exists_error(name)
        elif mode == "create":
            raise exists_error(name)
        elif mode == "append":
            # Re-read on every try: the objects of this write go after whatever
            # the others published, each named once.
            appended = _appendable(Manifest.from_bytes(current.data, name), manifest).appended(manifest)
            if store.replace_manifest(name, appended.to_bytes(), current.version):
                return appended, None
        elif store.replace_manifest(name, data, current.version):
            return manifest, _readable_manifest(current, name)
        # Another writer published in between: overwrite means "replace
        # whatever is there now", append "add to it", so try again against it.


def _appendable(current: Manifest, added: Manifest) -> Manifest:
    """current, if added's objects (written in its schema) fit it: a racing
    overwrite may have changed it. Objects of any design mix."""
    if not current.schema.equals(added.schema):
        raise SchemaMismatchError(
            f"dataset {current.dataset!r} was replaced while appending to it, by one of another "
            "schema: nothing was appended"
        )
    return current


def delete_objects(store: ObjectStore, manifest: Manifest) -> None:
    for partition in manifest.partitions:
        store.delete_object(partition.object_name)


def _readable_manifest(stored: StoredManifest, name: str) -> Manifest | None:
    """The manifest just replaced, if it can be trusted; a corrupt one's objects are left to fsck."""
    try:
        return Manifest.from_bytes(stored.data, name)
    except CorruptManifestError:
        return None
