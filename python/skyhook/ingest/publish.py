"""Publishing a manifest by compare-and-swap, and deleting the objects of the
manifest it replaced."""

from __future__ import annotations

from skyhook.backends.object_store import ObjectStore, StoredManifest
from skyhook.catalog.manifest import Manifest
from skyhook.errors import CorruptManifestError, DatasetExistsError, InvalidRequestError

#: create fails if the dataset exists; overwrite replaces whatever is there.
MODES = ("create", "overwrite")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InvalidRequestError(f"unknown mode {mode!r}; expected create or overwrite")


def exists_error(name: str) -> DatasetExistsError:
    return DatasetExistsError(f"dataset {name!r} exists; pass mode='overwrite' to replace it")


def publish(store: ObjectStore, manifest: Manifest, mode: str) -> Manifest | None:
    """Compare-and-swap the manifest into place; returns the one replaced."""
    name, data = manifest.dataset, manifest.to_bytes()
    while True:
        current = store.get_manifest(name)
        if current is None:
            if store.create_manifest(name, data):
                return None
            if mode == "create":
                raise exists_error(name)
        elif mode == "create":
            raise exists_error(name)
        elif store.replace_manifest(name, data, current.version):
            return _readable_manifest(current, name)
        # Another writer published in between: overwrite means "replace
        # whatever is there now", so try again against it.


def delete_objects(store: ObjectStore, manifest: Manifest) -> None:
    for partition in manifest.partitions:
        store.delete_object(partition.object_name)


def _readable_manifest(stored: StoredManifest, name: str) -> Manifest | None:
    """The manifest just replaced, if it can be trusted; a corrupt one's objects are left to fsck."""
    try:
        return Manifest.from_bytes(stored.data, name)
    except CorruptManifestError:
        return None
