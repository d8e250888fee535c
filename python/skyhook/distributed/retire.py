"""Removing the objects a commit replaced. The one place distributed transforms
remove published objects: today they are deleted at once (as an overwrite
deletes the generation it replaced), which a scan still reading the previous
manifest can notice; the commit protocol's retire_objects will replace this
with removal after a grace period."""

from __future__ import annotations

from dataclasses import replace

from skyhook.backends.object_store import ObjectStore
from skyhook.catalog.manifest import Manifest
from skyhook.ingest.publish import delete_objects


def retire(store: ObjectStore, manifest: Manifest, names: list[str]) -> None:
    """Retire the objects names (partitions a commit swapped out of manifest's
    dataset); a name already gone is no error, so a resumed commit retires again."""
    template = manifest.partitions[0] if manifest.partitions else None
    if template is None:
        return
    partitions = tuple(replace(template, number=number, object_name=name) for number, name in enumerate(names))
    delete_objects(store, replace(manifest, partitions=partitions))
