"""A commit step: a group's new objects published by compare-and-swap on the
manifest. In place, exactly the group's sources are swapped for its targets
and every other partition (appends since the plan included) is kept; if a
source is gone (another writer replaced it) nothing is published. A copy
appends the group's objects to the new dataset. Either is idempotent: a
commit that finds its own objects published is done. The swapped-out sources
are retired (skyhook.backends.retirement), not deleted under their readers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.backends.object_store import StoredManifest
from skyhook.backends.retirement import retire_objects, withdraw_retirement
from skyhook.catalog.design import DESIGN_ATTRIBUTE, ObjectDesign
from skyhook.catalog.manifest import ColumnObject, Manifest, Partition, statistics_type
from skyhook.catalog.versions import NextVersion, commit_version
from skyhook.errors import DatasetChangedError, DatasetNotFoundError, ObjectNotFoundError
from skyhook.ingest.publish import publish
from skyhook.ingest.statistics import concat_statistics, objects_statistics
from skyhook.names import object_owner


def built_partitions(
    backend: Backend, designs: dict[str, bytes], schema: pa.Schema, layout: list[list[str]] | None = None
) -> tuple[list[Partition], pa.StructArray]:
    """The partitions of written objects (from their design attributes, as
    object_designs read them) and their statistics, computed in storage: the
    plan's statistics build. layout: the columns of each object of a
    partition (its object first), for column objects; None: one object each."""
    layout = layout or [schema.names]
    objects = []
    for name, columns in zip(designs, layout * -(-len(designs) // len(layout))):
        design = ObjectDesign.from_bytes(designs[name])
        objects.append(ColumnObject(name, tuple(columns), sum(group.length for group in design.column_groups), design))
    described = objects_statistics(
        backend, [(column.object_name, pa.schema([schema.field(n) for n in column.columns])) for column in objects]
    )
    partitions, rows = [], []
    for number, start in enumerate(range(0, len(objects), len(layout))):
        first, *others = objects[start : start + len(layout)]
        partitions.append(
            Partition(number, first.object_name, first.design.num_rows, first.size_bytes, first.design, tuple(others))
        )
        rows.append(_statistics([first, *others], described[start : start + len(layout)], schema))
    return partitions, concat_statistics(rows, schema)


def _statistics(objects: list[ColumnObject], described: list[pa.StructArray], schema: pa.Schema) -> pa.StructArray:
    """A partition's statistics row from those of its objects, each over its columns."""
    if len(objects) == 1:
        return described[0]
    fields: dict[str, pa.Array] = {}
    for column, row in zip(objects, described):
        fields.update({name: row.field(name) for name in column.columns})
    return pa.StructArray.from_arrays([fields[name] for name in schema.names], schema.names).cast(
        statistics_type(schema)
    )


def object_designs(backend: Backend, names: list[str]) -> dict[str, bytes | None]:
    """Each written object's design attribute, read once; None for an object that is missing."""
    designs: dict[str, bytes | None] = {}
    for name in names:
        try:
            designs[name] = backend.object_attribute(name, DESIGN_ATTRIBUTE)
        except ObjectNotFoundError:
            designs[name] = None
    return designs


def commit_in_place(
    backend: Backend,
    dataset: str,
    generation: str,
    sources: list[str],
    targets: dict[str, bytes],
    layout: list[list[str]] | None = None,
    *,
    held: Callable[[], None],
    operation: str = "plan",
) -> tuple[Manifest, bool]:
    """Swaps sources for targets (object -> design attribute; for column
    objects, an object per group of layout each) in dataset's current
    manifest, as the version operation makes; (the manifest, whether this call
    published it: False when an earlier run did). held() is called just before
    each swap: it raises if the runner may no longer publish (its lease lost)."""
    built: tuple[list[Partition], pa.StructArray] | None = None

    def change(stored: StoredManifest | None) -> NextVersion | tuple[Manifest, bool]:
        nonlocal built
        if stored is None:
            raise DatasetNotFoundError(f"dataset {dataset!r} was deleted while a plan was transforming it")
        current = Manifest.from_bytes(stored.data, dataset)
        names = [name for partition in current.partitions for name in partition.object_names]
        if set(targets) <= set(names) and not set(sources) & set(names):
            return current, False
        gone = [name for name in sources if name not in names]
        if gone:
            raise DatasetChangedError(
                f"dataset {dataset!r} no longer has object {gone[0]} (another writer replaced it since the "
                "plan was made): nothing was committed; cancel the plan and plan again"
            )
        if built is None:
            built = built_partitions(backend, targets, current.schema, layout)
        updated = _swapped(current, generation, set(sources), *built)
        retiring = [name for p in current.partitions if p.object_name in sources for name in p.object_names]
        return NextVersion(updated, operation, lambda: _retired_while_held(retiring))

    def _retired_while_held(retiring: list[str]) -> Callable[[], None]:
        """The commit protocol: the sources are retired before the swap (readers of
        earlier manifests keep them for the retention period), withdrawn if it fails."""
        records = retire_objects(backend, dataset, generation, retiring)
        try:
            held()
        except BaseException:
            withdraw_retirement(backend, records)
            raise
        return lambda: withdraw_retirement(backend, records)

    # Against another writer's publication (an append), the swap is made again on its manifest.
    outcome = commit_version(backend, dataset, change)
    return outcome if isinstance(outcome, tuple) else (outcome, True)


def _swapped(
    current: Manifest, generation: str, sources: set[str], targets: list[Partition], statistics: pa.StructArray
) -> Manifest:
    """current with the sources' partitions replaced by targets where the first source stood."""
    partitions: list[Partition] = []
    rows: list[pa.StructArray] = []
    kept_rows: list[int | None] = []  # rows of current's object statistics; None for a target (none yet)
    placed = False
    for index, partition in enumerate(current.partitions):
        if partition.object_name not in sources:
            partitions.append(partition)
            rows.append(current.statistics.slice(index, 1))
            kept_rows.append(index)
        elif not placed:
            partitions.extend(targets)
            rows.append(statistics)
            kept_rows.extend([None] * len(targets))
            placed = True
    kept = {
        owner.generation for p in partitions for name in p.object_names if (owner := object_owner(name)) is not None
    }
    return replace(
        current,
        generation=generation,
        partitions=tuple(replace(partition, number=number) for number, partition in enumerate(partitions)),
        statistics=pa.concat_arrays(rows) if rows else current.statistics.slice(0, 0),
        object_statistics=current.object_statistics.take(pa.array(kept_rows, pa.int64())),
        history=(),
        kept=tuple(sorted(kept - {generation})),
    )


def commit_copy(
    backend: Backend,
    into: str,
    generation: str,
    design: ObjectDesign,
    schema: pa.Schema,
    targets: dict[str, bytes],
    first: bool,
    layout: list[list[str]] | None = None,
    *,
    held: Callable[[], None],
) -> bool:
    """Appends targets (object -> design attribute; for column objects, an
    object per group of layout each) to the dataset into (creating it if
    first); False when an earlier run had. held() as for commit_in_place."""
    stored = backend.get_manifest(into)
    if stored is not None:
        current = Manifest.from_bytes(stored.data, into)
        if generation in {current.generation, *(earlier for earlier, _ in current.history), *current.kept}:
            return False
    if not targets and not first:
        return True
    partitions, statistics = built_partitions(backend, targets, schema, layout)
    manifest = Manifest(into, schema, design, generation, tuple(partitions), statistics)
    held()
    publish(backend, manifest, "create" if first else "append", must_exist=not first)
    return True
