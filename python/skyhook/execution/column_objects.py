"""Partitions whose columns live in several objects (manifest version 5): which
of a partition's objects a scan reads, each object as a dataset of its own
columns (so storage binds the scan's expressions to the object's schema), and
the pieces read from several objects zipped back into the partition's rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import groupby

import pyarrow as pa

from skyhook.catalog.design import ObjectDesign
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.errors import CorruptReplyError
from skyhook.execution.dataset_objects import DatasetObjects

#: The columns of each object of a partition, its object first.
Layout = tuple[tuple[str, ...], ...]


def layout(partition: Partition, names: list[str]) -> Layout:
    return tuple(column.columns for column in partition.objects(names))


def holding(partition: Partition, needed: list[str] | None) -> int | None:
    """The object (an index into partition.objects) that holds every needed
    column (None: all); the smallest when none are needed; None if they span
    objects."""
    objects = partition.column_objects
    if needed is None:
        return None if objects else 0
    if not needed:
        sizes = [partition.size_bytes, *(column.size_bytes for column in objects)]
        return min(range(len(sizes)), key=sizes.__getitem__)
    wanted = set(needed)
    inside = next((index for index, column in enumerate(objects, 1) if wanted <= set(column.columns)), None)
    if inside is not None:
        return inside
    return None if any(wanted & set(column.columns) for column in objects) else 0


def runs(
    partitions: list[Partition], names: list[str], needed: list[str] | None
) -> Iterator[tuple[Layout, int | None, list[Partition]]]:
    """partitions in runs of one layout and one object holding the needed
    columns: (layout, that object's index or None if they span objects, the run)."""
    for (objects, index), run in groupby(partitions, key=lambda p: (layout(p, names), holding(p, needed))):
        yield objects, index, list(run)


def opened(partition: Partition, needed: list[str] | None) -> list[tuple[ObjectDesign, int, list[str] | None]]:
    """(design, size, the columns read of it; None: all) of each object of
    partition that a read of needed columns (None: all) opens."""
    objects = [(partition.design, partition.size_bytes), *((c.design, c.size_bytes) for c in partition.column_objects)]
    whole = holding(partition, needed)
    if whole is not None:
        return [(*objects[whole], needed)]
    if needed is None:
        return [(design, size, None) for design, size in objects]
    elsewhere = {name for column in partition.column_objects for name in column.columns}
    held = [[name for name in needed if name not in elsewhere]]
    held += [[name for name in needed if name in column.columns] for column in partition.column_objects]
    return [(design, size, columns) for (design, size), columns in zip(objects, held) if columns]


def column_view(source: DatasetObjects, partitions: list[Partition], index: int) -> DatasetObjects:
    """Object index of each of partitions (all of one layout) as the partitions
    of a dataset of that object's columns, in the order the object holds them."""
    manifest = source.manifest
    objects = [partition.objects(manifest.schema.names)[index] for partition in partitions]
    columns = objects[0].columns
    statistics = manifest.statistics.take(pa.array([partition.number for partition in partitions], pa.int64()))
    view = Manifest(
        manifest.dataset,
        pa.schema([manifest.schema.field(name) for name in columns]),
        manifest.write_design,
        manifest.generation,
        tuple(
            replace(
                partition,
                number=number,
                object_name=column.object_name,
                size_bytes=column.size_bytes,
                design=column.design,
                column_objects=(),
            )
            for number, (partition, column) in enumerate(zip(partitions, objects))
        ),
        pa.StructArray.from_arrays([statistics.field(name) for name in columns], names=list(columns)),
    )
    return DatasetObjects(view, source.backend)


def zipped(partition: Partition, pieces: list[pa.Table], names: list[str]) -> pa.Table:
    """The columns read from each of a partition's objects side by side (rows
    line up), in the dataset's order (names)."""
    if any(piece.num_rows != partition.num_rows for piece in pieces):
        raise CorruptReplyError(
            f"the objects of partition {partition.number} disagree on its rows: "
            f"{[piece.num_rows for piece in pieces]}, the manifest says {partition.num_rows}"
        )
    columns = {name: piece.column(name) for piece in pieces for name in piece.column_names}
    return pa.table({name: columns[name] for name in names if name in columns})
