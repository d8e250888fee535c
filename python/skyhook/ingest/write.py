"""Writing a dataset: the source split into partitions, one object each, built
by the C++ core's one writer in the write's design and stored with its design
attribute, described in storage, then the manifest published by compare-and-swap.
A failed write deletes its own objects; a successful one retires those of the
manifest it replaced and collects what is due (Store.write_dataset states the guarantees). An append
replaces nothing: its manifest names the objects before it and its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.backends.object_codec import encode_object
from skyhook.catalog.design import AUTO_COMPRESSION, DESIGN_ATTRIBUTE, Design, ObjectDesign
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.errors import DatasetNotFoundError, InvalidRequestError
from skyhook.ingest.codec_choice import CodecChoice, choose_codec
from skyhook.ingest.csv_options import CsvOptions
from skyhook.ingest.files import Partitioning
from skyhook.ingest.garbage_collection import DEFAULT_RETENTION_SECONDS, collect_after_write
from skyhook.ingest.partitioning import DEFAULT_TARGET_OBJECT_SIZE, split_partitions
from skyhook.ingest.publish import check_mode, exists_error, publish
from skyhook.ingest.schema_match import conform
from skyhook.ingest.sources import DataSource, Source, open_source
from skyhook.ingest.statistics import concat_statistics, partition_statistics
from skyhook.names import check_dataset_name, new_generation, object_name

#: Called after each object is stored with the rows and bytes (Arrow, in memory)
#: of input it consumed: progress through the input, whatever the encoding made of it.
Progress = Callable[[int, int], None]
#: Called with the codec a compression="auto" write chose and its measurements.
CodecChosen = Callable[[CodecChoice], None]


@dataclass(frozen=True)
class WriteOptions:
    """How a write stores its rows (Store.write_dataset says what each means).
    design (or its shorthand format, row_group_size, compression) is what the
    new objects are built as; by default a new dataset's Design() and an
    append's the dataset's write design. A design of compression "auto" takes
    the codec chosen on the first object's rows (skyhook.ingest.codec_choice),
    told to codec_chosen."""

    design: Design | None = None
    format: str | None = None
    target_object_size: int = DEFAULT_TARGET_OBJECT_SIZE
    rows_per_object: int | None = None
    row_group_size: int | None = None
    compression: str | None = None
    progress: Progress | None = None
    partitioning: Partitioning = "hive"
    csv_options: CsvOptions | Mapping[str, Any] | None = None
    codec_chosen: CodecChosen | None = None


class WriteKeywords(TypedDict, total=False):
    """WriteOptions as keywords (Store.write_dataset, Dataset.append), field for field."""

    design: Design | None
    format: str | None
    target_object_size: int
    rows_per_object: int | None
    row_group_size: int | None
    compression: str | None
    progress: Progress | None
    partitioning: Partitioning
    csv_options: CsvOptions | Mapping[str, Any] | None
    codec_chosen: CodecChosen | None


def write_dataset(
    backend: Backend,
    name: str,
    data: DataSource,
    options: WriteOptions = WriteOptions(),
    *,
    mode: str = "create",
    must_exist: bool = False,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
    link_bytes_per_second: float | None = None,
) -> Manifest:
    """Store data as the dataset name (see Store.write_dataset); returns its
    published manifest. must_exist: an append fails if the dataset is gone.
    retention_seconds: how long the objects an overwrite replaces outlive it
    (skyhook.ingest.garbage_collection); the retired objects already due are
    deleted after the write. link_bytes_per_second: the link compression "auto"
    chooses for."""
    check_dataset_name(name)
    check_mode(mode)
    design = asked_design(options.design, options.format, options.row_group_size, options.compression)
    if mode == "create" and backend.get_manifest(name) is not None:
        raise exists_error(name)  # early, before any work; the publish decides for sure
    current = current_manifest(backend, name) if mode == "append" else None
    if must_exist and current is None:
        raise DatasetNotFoundError(f"no dataset named {name!r} in {backend.uri}")
    source = open_source(data, options.partitioning, options.csv_options)
    if current is not None:  # an append: the rows take the dataset's schema and its write design
        source = conform(source, current.schema, name)
    # Checked against the columns before anything is read or written.
    requested = current.write_design if current is not None and design is None else None
    if requested is None:
        requested = ObjectDesign.request(design or Design(), source.schema.names, 0)
    # A fresh generation names the new objects, so readers of the previous
    # manifest keep reading complete, unchanged objects until it is replaced.
    generation = new_generation()
    # Registered before the first object exists, so fsck never takes the
    # objects of this write for orphans while it runs.
    pending = backend.begin_write(name, generation)
    try:
        partitions, statistics, requested = store_partitions(
            backend, name, generation, source, requested, options, 0, pending.heartbeat, link_bytes_per_second
        )
        try:
            manifest = Manifest(
                name,
                source.schema,
                requested,
                generation,
                tuple(partitions),
                concat_statistics(statistics, source.schema),
            )
            manifest = publish(backend, manifest, mode, must_exist)
        except BaseException:
            for partition in partitions:
                backend.delete_object(partition.object_name)
            raise
    finally:
        pending.finish()
    collect_after_write(backend, retention_seconds, name)
    return manifest


def store_partitions(
    backend: Backend,
    name: str,
    generation: str,
    source: Source,
    requested: ObjectDesign,
    options: WriteOptions,
    first_number: int,
    after_each: Callable[[], None],
    link_bytes_per_second: float | None = None,
    max_objects: int | None = None,
) -> tuple[list[Partition], list[pa.StructArray], ObjectDesign]:
    """source's rows stored as objects of generation numbered from first_number,
    with their partitions and statistics, and the design asked for (its "auto"
    codec chosen on the first object's rows). More than max_objects objects is an
    error. If any step fails, the objects it stored are deleted before it raises."""
    partitions: list[Partition] = []
    statistics: list[pa.StructArray] = []
    written: list[str] = []
    try:
        for table in split_partitions(
            source.schema, source.batches, options.target_object_size, options.rows_per_object
        ):
            if max_objects is not None and len(partitions) == max_objects:
                raise InvalidRequestError(
                    f"one part of a write stores at most {max_objects} objects: write larger ones"
                )
            if requested.compression == AUTO_COMPRESSION:
                choice = choose_codec(table, requested, link_bytes_per_second)
                requested = replace(requested, compression=choice.codec)
                if options.codec_chosen:
                    options.codec_chosen(choice)
            partition_object = object_name(name, generation, first_number + len(partitions))
            encoded, attribute = encode_object(table, requested.to_bytes())
            written.append(partition_object)
            backend.put_object(partition_object, encoded, {DESIGN_ATTRIBUTE: attribute})
            statistics.append(partition_statistics(backend, partition_object, source.schema))
            object_design = ObjectDesign.from_bytes(attribute)
            partitions.append(Partition(len(partitions), partition_object, table.num_rows, encoded.size, object_design))
            after_each()
            if options.progress:
                options.progress(table.num_rows, table.nbytes)
    except BaseException:
        for object in written:  # a failed put may have stored its object too
            backend.delete_object(object)
        raise
    return partitions, statistics, requested


def asked_design(
    design: Design | None, format: str | None, row_group_size: int | None, compression: str | None
) -> Design | None:
    """The design a write asks for: design=, or a Design of the shorthand arguments given."""
    shorthand = {
        key: value
        for key, value in (("format", format), ("row_group_size", row_group_size), ("compression", compression))
        if value is not None
    }
    if design is not None and shorthand:
        raise InvalidRequestError(f"give design= or {', '.join(shorthand)}, not both")
    if design is not None and not isinstance(design, Design):
        raise InvalidRequestError(f"design must be a skyhook.Design, not {type(design).__name__}")
    return Design(**shorthand) if shorthand else design


def current_manifest(backend: Backend, name: str) -> Manifest | None:
    stored = backend.get_manifest(name)
    return None if stored is None else Manifest.from_bytes(stored.data, name)
