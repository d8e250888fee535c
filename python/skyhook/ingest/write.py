"""Writing a dataset: the source split into partitions, one encoded object
each, described in storage, then the manifest published by compare-and-swap.
A failed write deletes its own objects; a successful one deletes those of the
generation it replaced (Store.write_dataset states the guarantees)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.object_format import FORMAT_ATTRIBUTE, check_format, encode_partition
from skyhook.ingest.partitioning import split_partitions
from skyhook.ingest.publish import check_mode, delete_objects, exists_error, publish
from skyhook.ingest.sources import DataSource, open_source
from skyhook.ingest.statistics import concat_statistics, partition_statistics
from skyhook.names import check_dataset_name, new_generation, object_name

#: Called after each object is stored with the rows and bytes (Arrow, in memory)
#: of input it consumed: progress through the input, whatever the encoding made of it.
Progress = Callable[[int, int], None]


def write_dataset(
    backend: Backend,
    name: str,
    data: DataSource,
    *,
    format: str,
    target_object_size: int,
    rows_per_object: int | None,
    row_group_size: int,
    compression: str,
    mode: str,
    progress: Progress | None,
) -> Manifest:
    """Store data as the dataset name (see Store.write_dataset); returns its published manifest."""
    check_dataset_name(name)
    check_format(format)
    check_mode(mode)
    if mode == "create" and backend.get_manifest(name) is not None:
        raise exists_error(name)  # early, before any work; the publish decides for sure
    reader = open_source(data)
    # A fresh generation names the new objects, so readers of the previous
    # manifest keep reading complete, unchanged objects until it is replaced.
    generation = new_generation()
    # Registered before the first object exists, so fsck never takes the
    # objects of this write for orphans while it runs.
    pending = backend.begin_write(name, generation)
    try:
        written: list[str] = []
        partitions: list[Partition] = []
        statistics: list[pa.StructArray] = []
        try:
            for table in split_partitions(reader, target_object_size, rows_per_object):
                number = len(partitions)
                partition_object = object_name(name, generation, number)
                encoded = encode_partition(table, format, row_group_size, compression)
                written.append(partition_object)  # before the put: a failed put may have stored it
                backend.put_object(partition_object, encoded, {FORMAT_ATTRIBUTE: format})
                statistics.append(partition_statistics(backend, partition_object, reader.schema))
                partitions.append(Partition(number, partition_object, table.num_rows, encoded.size))
                pending.heartbeat()
                if progress:
                    progress(table.num_rows, table.nbytes)
            manifest = Manifest(
                name, reader.schema, format, generation, tuple(partitions), concat_statistics(statistics, reader.schema)
            )
            replaced = publish(backend, manifest, mode)
        except BaseException:
            for written_object in written:
                backend.delete_object(written_object)
            raise
        if replaced is not None:
            delete_objects(backend, replaced)
    finally:
        pending.finish()
    return manifest
