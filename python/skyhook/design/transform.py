"""Transforming a dataset's objects to a design, then publishing their new
sizes in the manifest by compare-and-swap. A local transform keeps each
object's name, rows and placement, so readers of any version of the manifest
keep reading complete objects: each is its old design or its new one. A
partition whose columns live in several objects has each object transformed
to the design restricted to its columns; a sort is refused there, since it
would reorder one object's rows apart from its siblings'."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from skyhook.backends.base import Backend
from skyhook.backends.object_store import StoredManifest
from skyhook.catalog.design import Design
from skyhook.catalog.manifest import ColumnObject, Manifest, Partition
from skyhook.catalog.versions import NextVersion, commit_version
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
    TargetDesign(design, tuple(manifest.schema.names)).request(0)  # unknown columns: refused before any change
    names = manifest.schema.names
    chosen = _chosen(manifest, objects)
    if design.sort_by and any(len(held.columns) < len(names) for held in chosen):
        raise InvalidRequestError(
            f"dataset {manifest.dataset!r} keeps columns in column objects, whose rows must stay in line: "
            "a sort cannot reorder one object alone; merge them back first (TransformTarget(column_objects=[]))"
        )
    targets = {held.object_name: TargetDesign(_object_design(design, held, names), held.columns) for held in chosen}
    started = time.perf_counter()
    results = []
    for result in (in_storage if where == "storage" else at_client)(backend, targets):
        results.append(result)
        if progress:
            progress(result)
    report = TransformReport(manifest.dataset, where, tuple(results), time.perf_counter() - started)
    return report, _published(backend, manifest.dataset, {result.object_name: result for result in results})


def _chosen(manifest: Manifest, objects: Sequence[str | int] | None) -> list[ColumnObject]:
    """The objects named: a partition number names all of its objects, a name that object alone."""
    held = [partition.objects(manifest.schema.names) for partition in manifest.partitions]
    if objects is None:
        return [o for partition in held for o in partition]
    if isinstance(objects, (str, int)):
        objects = [objects]
    by_name = {o.object_name: (o,) for partition in held for o in partition}
    chosen = []
    for item in objects:
        if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < len(held):
            chosen.append(held[item])
        elif isinstance(item, str) and item in by_name:
            chosen.append(by_name[item])
        else:
            raise InvalidRequestError(
                f"dataset {manifest.dataset!r} has no object {item!r}: name one of its objects "
                f"or a partition number 0 .. {len(held) - 1}"
            )
    return list(dict.fromkeys(o for partition in chosen for o in partition))


def _object_design(design: Design, held: ColumnObject, columns: list[str]) -> Design:
    """design for an object holding some of a partition's columns: the
    column groups within it (a group may not span objects)."""
    if not isinstance(design.column_groups, tuple) or len(held.columns) == len(columns):
        return design
    inside = [group for group in design.column_groups if set(group) & set(held.columns)]
    for group in inside:
        if not set(group) <= set(held.columns):
            raise InvalidRequestError(
                f"column group {list(group)} spans column objects (object {held.object_name!r} holds "
                f"{list(held.columns)}): a group lives in one object"
            )
    return replace(design, column_groups=inside or None)


def _published(backend: Backend, dataset: str, results: dict[str, ObjectTransform]) -> Manifest:
    """The current manifest with the transformed objects' designs and sizes, committed."""

    def change(stored: StoredManifest | None) -> NextVersion | Manifest:
        if stored is None:
            raise DatasetNotFoundError(f"dataset {dataset!r} was deleted while its objects were transformed")
        current = Manifest.from_bytes(stored.data, dataset)
        if not any(name in results for partition in current.partitions for name in partition.object_names):
            raise DatasetChangedError(
                f"dataset {dataset!r} was overwritten while its objects were transformed: "
                "the transformed objects belong to no version any more"
            )
        partitions = tuple(
            replace(
                _rewritten(partition, results),
                column_objects=tuple(_rewritten(column, results) for column in partition.column_objects),
            )
            for partition in current.partitions
        )
        if partitions == current.partitions:
            return current
        return NextVersion(replace(current, partitions=partitions), "transform")

    published = commit_version(backend, dataset, change)
    assert published is not None
    return published


def _rewritten(held: Partition | ColumnObject, results: dict[str, ObjectTransform]) -> Partition | ColumnObject:
    """held with the design and size its object was transformed to, if it was."""
    result = results.get(held.object_name)
    if result is None or result.design is None:
        return held
    return replace(held, size_bytes=result.bytes_after, design=result.design)
