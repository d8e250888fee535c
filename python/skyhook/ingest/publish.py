"""Publishing a manifest by compare-and-swap, retiring the objects of the
manifest it replaced (skyhook.backends.retirement)."""

from __future__ import annotations

from collections.abc import Callable

from skyhook.backends.object_store import ObjectStore, StoredManifest
from skyhook.backends.retirement import retire_objects, withdraw_retirement
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


def publish(store: ObjectStore, manifest: Manifest, mode: str, must_exist: bool = False) -> Manifest:
    """Compare-and-swap the manifest into place and return the manifest
    published (an append's holds the rows before it too). An overwrite retires
    the objects of the manifest it replaces (an append keeps them)."""
    name, data = manifest.dataset, manifest.to_bytes()
    while True:
        current = store.get_manifest(name)
        if current is None:
            if must_exist:
                raise DatasetNotFoundError(f"dataset {name!r} was deleted: nothing to append to")
            if store.create_manifest(name, data):
                return manifest
            if mode == "create":
                raise exists_error(name)
        elif mode == "create":
            raise exists_error(name)
        elif mode == "append":
            # Re-read on every try: the objects of this write go after whatever
            # the others published, each named once.
            appended = _appendable(Manifest.from_bytes(current.data, name), manifest).appended(manifest)
            if store.replace_manifest(name, appended.to_bytes(), current.version):
                return appended
        elif swap_retiring(
            store, name, current, manifest.generation, lambda: store.replace_manifest(name, data, current.version)
        ):
            return manifest
        # Another writer published in between: overwrite means "replace
        # whatever is there now", append "add to it", so try again against it.


def swap_retiring(
    store: ObjectStore, name: str, replaced: StoredManifest, replaced_by: str, swap: Callable[[], bool]
) -> bool:
    """Run swap (a compare-and-swap of the manifest replaced, by the publication
    replaced_by; "" for a delete) with the objects of replaced retired just
    before it; a swap that fails withdraws them. A corrupt manifest's objects are left to fsck."""
    manifest = _readable_manifest(replaced, name)
    names = [name for partition in manifest.partitions for name in partition.object_names] if manifest else []
    records = retire_objects(store, name, replaced_by, names)
    if swap():
        return True
    withdraw_retirement(store, records)
    return False


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
