"""Writing a dataset: the source split into partitions, one encoded object
each, described in storage, then the manifest published by compare-and-swap.
A failed write deletes its own objects; a successful one deletes those of the
manifest it replaced (Store.write_dataset states the guarantees). An append
replaces nothing: its manifest names the objects before it and its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.object_format import DEFAULT_ROW_GROUP_SIZE, FORMAT_ATTRIBUTE, check_format, encode_partition
from skyhook.errors import DatasetNotFoundError, InvalidRequestError
from skyhook.ingest.csv_options import CsvOptions
from skyhook.ingest.files import Partitioning
from skyhook.ingest.partitioning import DEFAULT_TARGET_OBJECT_SIZE, split_partitions
from skyhook.ingest.publish import check_mode, delete_objects, exists_error, publish
from skyhook.ingest.schema_match import conform
from skyhook.ingest.sources import DataSource, open_source
from skyhook.ingest.statistics import concat_statistics, partition_statistics
from skyhook.names import check_dataset_name, new_generation, object_name

#: Called after each object is stored with the rows and bytes (Arrow, in memory)
#: of input it consumed: progress through the input, whatever the encoding made of it.
Progress = Callable[[int, int], None]
DEFAULT_FORMAT = "parquet"


def write_dataset(
    backend: Backend,
    name: str,
    data: DataSource,
    *,
    format: str | None = None,
    target_object_size: int = DEFAULT_TARGET_OBJECT_SIZE,
    rows_per_object: int | None = None,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    compression: str = "zstd",
    mode: str = "create",
    progress: Progress | None = None,
    partitioning: Partitioning = "hive",
    csv_options: CsvOptions | Mapping[str, Any] | None = None,
    must_exist: bool = False,
) -> Manifest:
    """Store data as the dataset name (see Store.write_dataset); returns its
    published manifest. must_exist: an append fails if the dataset is gone."""
    check_dataset_name(name)
    check_mode(mode)
    if mode == "create" and backend.get_manifest(name) is not None:
        raise exists_error(name)  # early, before any work; the publish decides for sure
    current = _current_manifest(backend, name) if mode == "append" else None
    if must_exist and current is None:
        raise DatasetNotFoundError(f"no dataset named {name!r} in {backend.uri}")
    source = open_source(data, partitioning, csv_options)
    if current is not None:  # an append: the rows take the dataset's schema and format
        source = conform(source, current.schema, name)
        if format not in (None, current.format):
            raise InvalidRequestError(f"dataset {name!r} is stored as {current.format}, not {format}")
        format = current.format
    format = format or DEFAULT_FORMAT
    check_format(format)
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
            for table in split_partitions(source.schema, source.batches, target_object_size, rows_per_object):
                number = len(partitions)
                partition_object = object_name(name, generation, number)
                encoded = encode_partition(table, format, row_group_size, compression)
                written.append(partition_object)  # before the put: a failed put may have stored it
                backend.put_object(partition_object, encoded, {FORMAT_ATTRIBUTE: format})
                statistics.append(partition_statistics(backend, partition_object, source.schema))
                partitions.append(Partition(number, partition_object, table.num_rows, encoded.size))
                pending.heartbeat()
                if progress:
                    progress(table.num_rows, table.nbytes)
            manifest = Manifest(
                name, source.schema, format, generation, tuple(partitions), concat_statistics(statistics, source.schema)
            )
            manifest, replaced = publish(backend, manifest, mode, must_exist)
        except BaseException:
            for written_object in written:
                backend.delete_object(written_object)
            raise
        if replaced is not None:
            delete_objects(backend, replaced)
    finally:
        pending.finish()
    return manifest


def _current_manifest(backend: Backend, name: str) -> Manifest | None:
    stored = backend.get_manifest(name)
    return None if stored is None else Manifest.from_bytes(stored.data, name)
