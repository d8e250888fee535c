"""A write whose objects several processes store, published by one commit
(a distributed engine's workers writing one dataset): the driver begins it
(StagedWrite: a fresh generation, registered as a write in progress so fsck
leaves its objects alone, kept alive while the workers write); each worker
stores its rows with stage() as objects of that generation numbered in a
range of its own part; the driver publishes the partitions the parts report
in one manifest commit (create, overwrite or append, as write_dataset), or
abandons the write, deleting every object of the generation. Readers see all
the parts' rows or none."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.catalog.design import Design, ObjectDesign
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.errors import InvalidRequestError, SchemaMismatchError
from skyhook.ingest.garbage_collection import collect_after_write
from skyhook.ingest.publish import check_mode, exists_error, publish
from skyhook.ingest.schema_match import conform, schema_problems
from skyhook.ingest.sources import DataSource, open_source
from skyhook.ingest.statistics import concat_statistics
from skyhook.ingest.write import WriteOptions, asked_design, current_manifest, store_partitions
from skyhook.names import check_dataset_name, new_generation, object_owner

#: Objects a part may store: part p numbers its objects from p * PART_OBJECTS
#: (object numbers have at most 9 digits: MAX_PARTS parts).
PART_OBJECTS = 10_000
MAX_PARTS = 100_000
#: How often the driver says the write is alive while the workers store (fsck's grace is minutes).
HEARTBEAT_SECONDS = 5.0


@dataclass(frozen=True)
class StagedTarget:
    """What a worker needs to store its part (picklable: no connection)."""

    dataset: str
    generation: str
    #: The dataset's schema for an append (rows conform to it); else None (the rows' own).
    schema: pa.Schema | None
    #: An append's write design; else None (asked, requested for the rows' columns).
    design: ObjectDesign | None
    asked: Design
    options: WriteOptions


@dataclass(frozen=True)
class StagedPart:
    """What one part stored: its partitions (numbered from 0) and their statistics."""

    part: int
    schema: pa.Schema
    partitions: tuple[Partition, ...]
    statistics: pa.StructArray
    #: The design its objects were built as (an "auto" codec chosen).
    design: ObjectDesign


def stage(backend: Backend, target: StagedTarget, part: int, data: DataSource) -> StagedPart:
    """data stored as objects of target's write numbered in part's range; on
    failure the objects it stored are deleted (the driver abandons the rest)."""
    if not 0 <= part < MAX_PARTS:
        raise InvalidRequestError(f"a part is a number from 0 to {MAX_PARTS - 1}, not {part}")
    source = open_source(data)
    if target.schema is not None:
        source = conform(source, target.schema, target.dataset)
    requested = target.design or ObjectDesign.request(target.asked, source.schema.names, 0)
    partitions, statistics, design = store_partitions(
        backend,
        target.dataset,
        target.generation,
        source,
        requested,
        target.options,
        part * PART_OBJECTS,
        lambda: None,
        max_objects=PART_OBJECTS,
    )
    return StagedPart(part, source.schema, tuple(partitions), concat_statistics(statistics, source.schema), design)


class StagedWrite:
    """The driver's side of a staged write (see the module)."""

    def __init__(self, backend: Backend, name: str, mode: str, options: WriteOptions, retention_seconds: float) -> None:
        check_dataset_name(name)
        check_mode(mode)
        if options.progress is not None or options.codec_chosen is not None:
            raise InvalidRequestError("a staged write's parts run elsewhere: no progress or codec_chosen callbacks")
        design = asked_design(options.design, options.format, options.row_group_size, options.compression)
        if mode == "create" and backend.get_manifest(name) is not None:
            raise exists_error(name)
        current = current_manifest(backend, name) if mode == "append" else None
        schema = current.schema if current is not None else None
        requested = current.write_design if current is not None and design is None else None
        self.backend, self.mode, self.retention_seconds = backend, mode, retention_seconds
        self.target = StagedTarget(name, new_generation(), schema, requested, design or Design(), options)
        self._pending = backend.begin_write(name, self.target.generation)
        self._ended = threading.Event()
        self._heartbeats = threading.Thread(target=self._beat, daemon=True, name=f"staged write of {name}")
        self._heartbeats.start()

    def publish(self, parts: list[StagedPart]) -> Manifest:
        """The parts' partitions, in part order, published in one commit; if that
        fails, the write is abandoned (nothing of it stays)."""
        target = self.target
        try:
            parts = sorted(parts, key=lambda part: part.part)
            if len({part.part for part in parts}) != len(parts):
                raise InvalidRequestError("two parts of one staged write have the same number")
            schema = target.schema if target.schema is not None else (parts[0].schema if parts else pa.schema([]))
            for part in parts:
                if part.schema != schema:
                    problems = "; ".join(schema_problems(part.schema, schema)) or "their column metadata differ"
                    raise SchemaMismatchError(f"the parts of a write to {target.dataset!r} differ: {problems}")
            partitions = [partition for part in parts for partition in part.partitions]
            renumbered = tuple(replace(partition, number=index) for index, partition in enumerate(partitions))
            statistics = [part.statistics for part in parts]
            design = parts[0].design if parts else target.design or ObjectDesign.request(target.asked, schema.names, 0)
            manifest = Manifest(
                target.dataset, schema, design, target.generation, renumbered, concat_statistics(statistics, schema)
            )
            published = publish(self.backend, manifest, self.mode)
        except BaseException:
            self.abandon()
            raise
        try:  # what a retried part stored before it failed
            self._delete_objects(keep={partition.object_name for partition in renumbered})
        finally:
            self._end()
        collect_after_write(self.backend, self.retention_seconds, target.dataset)
        return published

    def abandon(self) -> None:
        """Deletes every object the parts stored (those of its generation) and ends the write."""
        try:
            self._delete_objects(keep=set())
        finally:
            self._end()

    def _delete_objects(self, keep: set[str]) -> None:
        """The generation's objects (and temporaries of them) but those in keep."""
        for name in self.backend.object_names():
            partition = self.backend.partition_name(name)
            owner = object_owner(partition)
            if owner == (self.target.dataset, self.target.generation) and (partition not in keep or name != partition):
                self.backend.delete_object(name)

    def _end(self) -> None:
        if not self._ended.is_set():
            self._ended.set()
            self._heartbeats.join()
            self._pending.finish()

    def _beat(self) -> None:
        while not self._ended.wait(HEARTBEAT_SECONDS):
            self._pending.heartbeat()
