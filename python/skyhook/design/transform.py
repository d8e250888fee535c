"""Transforming a dataset's objects to a design, then publishing their new
sizes in the manifest by compare-and-swap. A local transform keeps each
object's name, rows and placement, so readers of any version of the manifest
keep reading complete objects: each is its old design or its new one."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from skyhook.backends.base import Backend
from skyhook.catalog.design import Design
from skyhook.catalog.manifest import Manifest
from skyhook.design.object_transform import ObjectTransform, TargetDesign, at_client, in_storage
from skyhook.errors import DatasetChangedError, DatasetNotFoundError, InvalidRequestError

WHERE = ("storage", "client")
#: Called after each object with what was done to it.
TransformProgress = Callable[[ObjectTransform], None]


@dataclass(frozen=True)
class TransformReport:
    dataset: str
    where: str
    objects: tuple[ObjectTransform, ...]
    seconds: float

    @property
    def rewritten(self) -> int:
        return sum(result.rewritten for result in self.objects)

    @property
    def bytes_before(self) -> int:
        return sum(result.bytes_before for result in self.objects)

    @property
    def bytes_after(self) -> int:
        return sum(result.bytes_after for result in self.objects)

    def __str__(self) -> str:
        return (
            f"{self.rewritten} of {len(self.objects)} objects of {self.dataset!r} rewritten in {self.where} "
            f"in {self.seconds:.2f} s: {self.bytes_before:,} -> {self.bytes_after:,} bytes"
        )


def transform_objects(
    backend: Backend,
    manifest: Manifest,
    design: Design,
    objects: Sequence[str | int] | None = None,
    where: str = "storage",
    progress: TransformProgress | None = None,
) -> tuple[TransformReport, Manifest]:
    """Rewrites the objects named (names or partition numbers; None: all) to
    design, in storage or at the client; returns what was done and the
    manifest published with the objects' new sizes."""
    if where not in WHERE:
        raise InvalidRequestError(f"unknown where={where!r}; expected 'storage' or 'client'")
    if not isinstance(design, Design):
        raise InvalidRequestError(f"a transform takes a skyhook.Design, not {type(design).__name__}")
    manifest.refuse_column_objects("a transform in place")
    target = TargetDesign(design, tuple(manifest.schema.names))
    target.request(0)  # unknown columns are refused before any object is touched
    names = _chosen(manifest, objects)
    started = time.perf_counter()
    results = []
    for result in (in_storage if where == "storage" else at_client)(backend, names, target):
        results.append(result)
        if progress:
            progress(result)
    report = TransformReport(manifest.dataset, where, tuple(results), time.perf_counter() - started)
    return report, _published(backend, manifest.dataset, {result.object_name: result for result in results})


def _chosen(manifest: Manifest, objects: Sequence[str | int] | None) -> list[str]:
    names = [partition.object_name for partition in manifest.partitions]
    if objects is None:
        return names
    if isinstance(objects, (str, int)):
        objects = [objects]
    chosen = []
    for item in objects:
        if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < len(names):
            chosen.append(names[item])
        elif isinstance(item, str) and item in names:
            chosen.append(item)
        else:
            raise InvalidRequestError(
                f"dataset {manifest.dataset!r} has no object {item!r}: name one of its objects "
                f"or a partition number 0 .. {len(names) - 1}"
            )
    return list(dict.fromkeys(chosen))


def _published(backend: Backend, dataset: str, results: dict[str, ObjectTransform]) -> Manifest:
    """The current manifest with the transformed objects' designs and sizes, swapped in;
    retried against whatever another writer published meanwhile."""
    while True:
        stored = backend.get_manifest(dataset)
        if stored is None:
            raise DatasetNotFoundError(f"dataset {dataset!r} was deleted while its objects were transformed")
        current = Manifest.from_bytes(stored.data, dataset)
        if not any(partition.object_name in results for partition in current.partitions):
            raise DatasetChangedError(
                f"dataset {dataset!r} was overwritten while its objects were transformed: "
                "the transformed objects belong to no version any more"
            )
        partitions = tuple(
            replace(
                partition,
                size_bytes=results[partition.object_name].bytes_after,
                design=results[partition.object_name].design,
            )
            if partition.object_name in results and results[partition.object_name].design is not None
            else partition
            for partition in current.partitions
        )
        if partitions == current.partitions:
            return current
        updated = replace(current, partitions=partitions)
        if backend.replace_manifest(dataset, updated.to_bytes(), stored.version):
            return updated
