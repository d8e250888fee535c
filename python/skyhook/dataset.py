"""A stored dataset, usable wherever a ``pyarrow.dataset.Dataset`` is: DuckDB,
for one, hands it projections and filters through ``scanner()``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook._arrow_dataset import ObjectDataset
from skyhook.backends.base import Backend
from skyhook.backends.object_store import StoredManifest
from skyhook.catalog.design import AUTO_COMPRESSION, Design, ObjectDesign
from skyhook.catalog.design_table import design_table
from skyhook.catalog.manifest import Manifest
from skyhook.catalog.pruning import guarantees
from skyhook.catalog.versions import (
    NextVersion,
    commit_version,
    read_version,
    reopened,
    tagged,
    version_table,
    with_keep_versions,
    with_tag,
)
from skyhook.design.transform import TransformProgress, TransformReport, transform_objects
from skyhook.distributed import plan_store
from skyhook.distributed.advisor import Advice, advise
from skyhook.distributed.plan import Plan
from skyhook.distributed.planner import make_plan
from skyhook.distributed.row_changes import RowChange, delete_rows
from skyhook.distributed.runner import PlanProgress, run_plan
from skyhook.distributed.schedule import Schedule
from skyhook.distributed.target import TransformTarget, resolve
from skyhook.errors import (
    DatasetChangedError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidRequestError,
    options_from,
)
from skyhook.execution import secondary_design
from skyhook.execution.aggregate_execution import AggregateExecution
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.explain import Explanation, analyze_aggregate, analyze_scan, explain_aggregate, explain_scan
from skyhook.execution.object_scans import ObjectScans
from skyhook.execution.observed_rates import rates_of
from skyhook.execution.scan_execution import ScanExecution, ScanStatistics
from skyhook.execution.scan_options import AggregateKeywords, ScanKeywords, ScanOptions
from skyhook.execution.scanner import Scanner
from skyhook.execution.workload_log import QueryRecord, read_log
from skyhook.ingest.codec_choice import SAMPLE_ROWS, CodecChoice, choose_codec
from skyhook.ingest.publish import restore
from skyhook.ingest.sources import DataSource
from skyhook.ingest.write import WriteKeywords, WriteOptions, write_dataset
from skyhook.names import counted
from skyhook.plan.aggregate import AggregateQuery
from skyhook.plan.expressions import Columns, conjunction, projected_schema
from skyhook.plan.where import parse_where

if TYPE_CHECKING:
    from typing_extensions import Unpack


class DatasetStore(Protocol):
    """What a dataset keeps of the store that opened it (skyhook.Store)."""

    backend: Backend
    uri: str
    retention_seconds: float

    def dataset(self, name: str) -> Dataset: ...

    def manifest(self, name: str) -> Manifest: ...


class Dataset(ObjectDataset):
    """A stored dataset, backed by an Arrow C++ Dataset with one fragment per
    object: every pyarrow, Acero, DuckDB or Polars entry point scans it
    natively, pruning objects by their statistics and pushing each object's
    filter and columns into storage where the placement policy says."""

    def __init__(self, store: DatasetStore, manifest: Manifest, filter: pc.Expression | None = None) -> None:
        self.store = store
        self.manifest = manifest
        self.objects = DatasetObjects(manifest, store.backend)
        # The fragments' handler must not hold the dataset: C++ references are
        # invisible to Python's garbage collector, so a cycle would never be freed.
        self._object_scans = ObjectScans(self.objects)
        self._filter = filter
        #: The most recent scanner made by this dataset (by you or by DuckDB).
        self.last_scan: Scanner | None = None
        #: The most recent aggregation run on this dataset.
        self.last_aggregate: AggregateExecution | None = None
        self._attach(
            manifest.schema,
            guarantees(manifest),
            [partition.num_rows for partition in manifest.partitions],
            self._object_scans,
        )
        if filter is not None:  # pyarrow's own scans of this dataset apply it too
            self._scan_options = {"filter": filter}

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles by reference: the store (as its URI), the name, the manifest
        generation it was opened at and its filter; nothing of the data. Unpickling
        reopens that generation while it is still the dataset's current one; if the
        dataset was overwritten since, it raises DatasetChangedError (and if it was
        deleted, DatasetNotFoundError) rather than read other data. deepcopy reopens
        it the same way."""
        return (reopen_dataset, (self.store, self.name, self.manifest.generation, self._filter, self.version))

    def __repr__(self) -> str:
        return (
            f"<skyhook.Dataset {self.name!r}: {counted(self.manifest.num_rows, 'row')} in "
            f"{counted(len(self.manifest.partitions), 'object')}, {self.manifest.format}>"
        )

    @property
    def name(self) -> str:
        return self.manifest.dataset

    @property
    def arrow_scans(self) -> ScanStatistics:
        """Metrics of the scans pyarrow itself ran on this dataset (joins, Acero,
        ``pads.Scanner.from_dataset``); a skyhook Scanner keeps its own."""
        return self._object_scans.stats

    def join_asof(
        self,
        right_dataset: pads.Dataset,
        on: str,
        by: str | list[str],
        tolerance: int,
        right_on: str | None = None,
        right_by: str | list[str] | None = None,
    ) -> pads.InMemoryDataset:
        """pyarrow's as-of join numbers a dataset's batches in arrival order, and
        this dataset's objects arrive in parallel: the left side is read in order
        first (pyarrow returns a materialised dataset either way)."""
        left = pads.dataset(self.to_table())
        return left.join_asof(right_dataset, on, by, tolerance, right_on=right_on, right_by=right_by)

    def scanner(
        self,
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        **options: Unpack[ScanKeywords],
    ) -> Scanner:
        """filter is a pyarrow expression or text such as "price > 10 and flag == 'R'".
        options (keywords, skyhook.ScanKeywords): batch_size, use_threads,
        pushdown (False reads whole objects and filters here), pushdown_threshold,
        max_result_bytes (per object reply), max_in_flight and max_slice_cpu_ns (push-back),
        reply_compression ("none", "lz4", "zstd"; None: chosen by the link's and the client's
        observed rates, else the backend's), reply_within_object
        (storage pushes back a reply larger than its object; None: unless pushdown=True),
        and pyarrow's batch_readahead, fragment_readahead, cache_metadata, memory_pool.
        The other reading methods (to_table, to_batches, count_rows, head, take, explain) take the same."""
        if isinstance(filter, str):
            filter = parse_where(filter, self.schema)
        self.last_scan = Scanner(self, self.objects, columns, filter, **options)
        return self.last_scan

    def to_table(
        self, columns: Columns = None, filter: pc.Expression | str | None = None, **options: Unpack[ScanKeywords]
    ) -> pa.Table:
        return self.scanner(columns, filter, **options).to_table()

    def to_batches(
        self, columns: Columns = None, filter: pc.Expression | str | None = None, **options: Unpack[ScanKeywords]
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns, filter, **options).to_batches()

    def to_dask(
        self,
        columns: list[str] | None = None,
        filter: pc.Expression | str | None = None,
        partition_bytes: int = 64 << 20,
    ) -> Any:
        """The rows as a Dask DataFrame, a partition per group of about
        partition_bytes of objects, each scanned by a dask worker with the
        filter and columns in storage (skyhook.dask; pip install 'skyhook[dask]')."""
        from skyhook.dask import frame_of

        return frame_of(self, columns, self._expression(filter), partition_bytes)

    def to_ray(self, columns: list[str] | None = None, filter: pc.Expression | str | None = None) -> Any:
        """The rows as a ray.data.Dataset whose read tasks scan groups of objects
        with the filter and columns in storage (skyhook.ray; pip install 'skyhook[ray]')."""
        from skyhook.ray import read

        return read(self, columns, self._expression(filter))

    def count_rows(self, filter: pc.Expression | str | None = None, **options: Unpack[ScanKeywords]) -> int:
        return self.scanner(None, filter, **options).count_rows()

    def head(
        self,
        num_rows: int,
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        **options: Unpack[ScanKeywords],
    ) -> pa.Table:
        return self.scanner(columns, filter, **options).head(num_rows)

    def take(
        self,
        indices: pa.Array | list[int],
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        **options: Unpack[ScanKeywords],
    ) -> pa.Table:
        return self.scanner(columns, filter, **options).take(indices)

    def design(self) -> pa.Table:
        """The physical design of each object, one row per object: object,
        format, column_groups (each group's columns), group_bytes, sort_by,
        compression, row_group_size, rows, bytes and generation."""
        return design_table(self.manifest)

    @property
    def version(self) -> int:
        """The dataset's version this Dataset reads (0: published before versions were numbered)."""
        return self.manifest.version

    def versions(self) -> pa.Table:
        """The dataset's kept versions, oldest first: version, committed_at,
        operation (create, overwrite, append, transform, plan, restore),
        num_rows, size_bytes and tags. Any of them opens with
        store.dataset(name, version=...), as_of= or tag=."""
        return version_table(self.store.backend, self.store.manifest(self.name))

    def tag(self, tag: str, version: int | None = None) -> None:
        """Name a kept version (default: the one this Dataset reads); a tagged
        version is kept until untagged. Tags do not make versions."""
        version = self.version if version is None else version

        def change(stored: StoredManifest | None) -> NextVersion:
            current = self._current(stored)
            read_version(self.store.backend, current, version)  # a kept one
            return NextVersion(with_tag(current, tag, version), None)

        commit_version(self.store.backend, self.name, change)

    def untag(self, tag: str) -> None:
        def change(stored: StoredManifest | None) -> NextVersion:
            current = self._current(stored)
            tagged(current, tag)  # a tag it has
            return NextVersion(with_tag(current, tag, None), None)

        commit_version(self.store.backend, self.name, change)

    def keep_versions(self, versions: int) -> None:
        """Keep this many newest versions (and the tagged ones) for time travel;
        garbage collection removes the others' archives, and their objects once
        the store's retention period has passed."""

        def change(stored: StoredManifest | None) -> NextVersion:
            return NextVersion(with_keep_versions(self._current(stored), versions), None)

        commit_version(self.store.backend, self.name, change)

    def restore(self, version: int) -> Dataset:
        """Publish a kept version again, as the dataset's next version (what
        the current version holds is retired, as by an overwrite)."""
        return Dataset(self.store, restore(self.store.backend, self.name, version))

    def delete(self, filter: pc.Expression | str) -> RowChange:
        """Delete the rows where filter is true (null: kept, as SQL's DELETE), in
        storage: each object the filter touches is copied by the store and the
        copy rewritten there without them; one commit publishes the next version
        (earlier versions keep the rows). Returns the rows deleted and objects
        rewritten (distributed/row_changes.py)."""
        expression = self._expression(filter)
        if expression is None:
            raise InvalidRequestError("delete takes a filter (to delete every row, overwrite or delete the dataset)")
        return delete_rows(self.store.backend, self.store.manifest(self.name), expression)

    def _current(self, stored: StoredManifest | None) -> Manifest:
        if stored is None:
            raise DatasetNotFoundError(f"dataset {self.name!r} was deleted")
        return Manifest.from_bytes(stored.data, self.name)

    def append(self, data: DataSource, **options: Unpack[WriteKeywords]) -> Dataset:
        """Add data's rows to this dataset in storage and return the new version.
        This Dataset, and every reader that opened the dataset before, keeps
        reading exactly the rows it had (appends add objects, never change one).
        Concurrent appends all land; appending to a dataset deleted meanwhile
        raises DatasetNotFoundError and stores nothing. data is anything
        Store.write_dataset takes; its columns must fit the dataset's schema
        (skyhook.ingest.schema_match: same columns, lossless widenings, nullable
        columns left out), else SchemaMismatchError. options: design (default:
        the dataset's write design) or its shorthand format, row_group_size and
        compression, target_object_size, rows_per_object, progress,
        partitioning, csv_options (as for Store.write_dataset)."""
        manifest = write_dataset(
            self.store.backend,
            self.name,
            data,
            options_from(WriteOptions, options, "append"),
            mode="append",
            must_exist=True,
            retention_seconds=self.store.retention_seconds,
            link_bytes_per_second=rates_of(self.store.backend).link_bytes_per_second,
        )
        return Dataset(self.store, manifest)

    def transform(
        self,
        design: Design,
        objects: Sequence[str | int] | None = None,
        where: str = "storage",
        progress: TransformProgress | None = None,
    ) -> TransformReport:
        """Rewrite objects (names or partition numbers; None: every object of
        the dataset) to design, each in place: inside storage (one call per
        object, many at once) or at the client (read, convert, write back).
        Readers see each object whole, in its old design or its new one.
        Objects that have the design already are left alone, so a transform
        that failed part-way completes when run again. Raises ObjectChangedError
        when another writer rewrote an object meanwhile (that object is left
        as the other writer made it). The manifest's sizes are updated
        (store.dataset(name) reads them). compression="auto": the codec of
        choose_codec(design). With column objects a partition number names
        every object of the partition, each rewritten to the design's column
        groups within it; a sort is refused there (their rows must line up)."""
        if isinstance(design, Design) and design.compression == AUTO_COMPRESSION:
            design = replace(design, compression=self.choose_codec(design).codec)
        report, _ = transform_objects(self.store.backend, self.manifest, design, objects, where, progress)
        return report

    def choose_codec(self, design: Design | None = None) -> CodecChoice:
        """The codec of the shortest estimated read of this dataset's objects in
        design (None: its write design) over this connection's link, measured on
        its first rows (skyhook.ingest.codec_choice); print it for the
        measurements."""
        if design is not None and not isinstance(design, Design):
            raise InvalidRequestError(f"choose_codec takes a skyhook.Design, not {type(design).__name__}")
        columns = self.manifest.schema.names
        requested = self.manifest.write_design if design is None else ObjectDesign.request(design, columns, 0)
        link = rates_of(self.store.backend).link_bytes_per_second
        sample = ScanExecution(self.objects, logged=False).head(SAMPLE_ROWS)  # not a query of the workload
        return choose_codec(sample, requested, link)

    def plan_transform(self, target: TransformTarget) -> Plan:
        """A plan to rewrite this dataset across its objects to target (compact
        or split to a size, cluster by a key, copy a filtered projection into a
        new dataset): its steps with the bytes each reads in storage, moves out
        of storage and writes, and an estimated time (print it). Nothing is
        changed yet; the plan is stored, for run_plan, store.resume_plan or
        ``skyhook worker``."""
        resolved = resolve(target, self.manifest)
        if resolved.into is not None and self.store.backend.get_manifest(resolved.into) is not None:
            raise DatasetExistsError(f"dataset {resolved.into!r} exists: a copy goes into a new dataset")
        plan = make_plan(self.store.backend, self.manifest, resolved)
        plan_store.save_new(self.store.backend, plan)
        return plan

    def workload(self) -> list[QueryRecord]:
        """The dataset's logged queries, oldest first (skyhook.connect's workload_log)."""
        return read_log(self.store.backend, self.name)

    def advise(self) -> list[Advice]:
        """Designs proposed from the workload log (cluster key, compaction, an
        index, column groups), each with the bytes the logged queries would read
        in storage before and after, estimated from the statistics; the
        transforms first, the most beneficial first. Apply one with
        ``run_plan(plan_transform(advice.target))``, an index with
        ``create_index(advice.index)``. A codec whose measured
        read (choose_codec) is shorter than the objects' is advice too: apply
        it with ``transform(Design(compression=...))``."""
        records = read_log(self.store.backend, self.name)
        codec = self.choose_codec() if records and self.manifest.partitions else None
        return advise(self.store.backend, self.manifest, records, codec)

    def run_plan(
        self,
        plan: Plan,
        progress: PlanProgress | None = None,
        max_steps: int | None = None,
        schedule: Schedule | None = None,
    ) -> Plan:
        """Runs a stored plan of this dataset (or resumes it), at most max_steps
        steps (then it is paused; None: to the end), under schedule (rate,
        parallel streams, order; None: the plan's own); returns its progress. Each
        group of objects commits by compare-and-swap on the manifest: readers see
        the objects before it or after it, and appends made meanwhile are kept.
        A plan whose sources another writer replaced fails cleanly (nothing of
        that group is published): cancel it and plan again."""
        if not isinstance(plan, Plan) or plan.dataset != self.name:
            raise InvalidRequestError(f"run_plan takes a plan of dataset {self.name!r}")
        return run_plan(self.store.backend, plan, progress, max_steps, schedule, self.store.retention_seconds)

    def filter(self, expression: pc.Expression | str) -> Dataset:
        if isinstance(expression, str):
            expression = parse_where(expression, self.schema)
        combined = conjunction(self._filter, expression)
        projected_schema(self.schema, [], combined)  # a boolean over this dataset's columns
        return Dataset(self.store, self.manifest, combined)

    def replace_schema(self, schema: pa.Schema) -> Dataset:
        """pyarrow unions datasets through this; a stored schema itself is fixed."""
        if not schema.equals(self.schema):
            raise NotImplementedError(
                f"a stored dataset's schema is fixed ({self.name!r} has {self.schema}); write a new dataset instead"
            )
        return Dataset(self.store, self.manifest, self._filter)

    def group_by(self, keys: str | list[str]) -> DatasetGroupBy:
        """Like ``pyarrow.Table.group_by``; the aggregation runs in storage."""
        return DatasetGroupBy(self, keys)

    def aggregate(
        self,
        aggregations: list[tuple[str, str]],
        filter: pc.Expression | str | None = None,
        **options: Unpack[AggregateKeywords],
    ) -> pa.Table:
        """Aggregates over the whole dataset (no keys): one row."""
        return self.group_by([]).aggregate(aggregations, filter=filter, **options)

    def explain(
        self,
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        *,
        keys: str | list[str] | None = None,
        aggregations: list[tuple] | None = None,
        analyze: bool = False,
        **options: Unpack[ScanKeywords],
    ) -> Explanation:
        """The plan of a scan (or, with aggregations, an aggregate) and what will
        run where, decided before anything runs: nothing is read. With analyze,
        runs it and adds what ran where, the actual selectivity and bytes."""
        if aggregations is not None:
            execution = self.group_by(keys or []).execution(aggregations, filter, **options)
            return (analyze_aggregate if analyze else explain_aggregate)(execution)
        scan = self.scanner(columns, filter, **options).execution
        return (analyze_scan if analyze else explain_scan)(scan)

    def analyze(
        self,
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        *,
        keys: str | list[str] | None = None,
        aggregations: list[tuple] | None = None,
        **options: Unpack[ScanKeywords],
    ) -> Explanation:
        """Runs the scan (or aggregate) and says what ran where: explain(..., analyze=True)."""
        return self.explain(columns, filter, keys=keys, aggregations=aggregations, analyze=True, **options)

    def compute_statistics(self, progress: secondary_design.Progress | None = None) -> int:
        """Statistics per column and zone (row group, record batch) of every
        object, kept in storage: scans in storage then skip zones their filter
        excludes. Stale after the object changes, and then unused. The
        object-level ones are published in the manifest too, where the client's
        pruning and cost model use them (store.dataset(name) reads them).
        Returns how many of the manifest's objects now have fresh ones there."""
        published = secondary_design.analyze(self.objects, progress)
        return sum(published.fresh_object_statistics(index) is not None for index in range(len(published.partitions)))

    def create_index(self, column: str, progress: secondary_design.Progress | None = None) -> None:
        """An index on column in every object: an equality, range or IN filter
        on it reads only the zones holding matches."""
        secondary_design.create_index(self.objects, column, progress)

    def drop_index(self, column: str, progress: secondary_design.Progress | None = None) -> None:
        secondary_design.drop_index(self.objects, column, progress)

    def secondary_design(self) -> pa.Table:
        """Per object: statistics and indexes present (and stale ones)."""
        return secondary_design.secondary_designs(self.objects)[0]

    def _expression(self, filter: pc.Expression | str | None) -> pc.Expression | None:
        if isinstance(filter, str):
            filter = parse_where(filter, self.schema)
        return conjunction(self._filter, filter)


def reopen_dataset(
    store: DatasetStore, name: str, generation: str, filter: pc.Expression | None, version: int = 0
) -> Dataset:
    """A pickled dataset: generation of name in store (appends since leave it
    readable: it reads the rows it had then, exactly), else its version while
    that is kept; refused once neither is there."""
    current = store.manifest(name)
    manifest = reopened(store.backend, current, generation, version)
    if manifest is None:
        raise DatasetChangedError(
            f"dataset {name!r} in {store.uri} was overwritten since it was pickled, or transformed (generation "
            f"{generation}, now {current.generation}): open it again with store.dataset({name!r})"
        )
    return Dataset(store, manifest, filter)


class DatasetGroupBy:
    def __init__(self, dataset: Dataset, keys: str | list[str]) -> None:
        self.dataset = dataset
        self.keys = keys

    def aggregate(
        self,
        aggregations: list[tuple[str, str]],
        filter: pc.Expression | str | None = None,
        **options: Unpack[AggregateKeywords],
    ) -> pa.Table:
        """aggregations: (column, function) pairs with pyarrow's function names
        (count, count_distinct, sum, min, max, mean, variance, stddev, first,
        last). options: use_threads, max_in_flight, max_slice_cpu_ns, pushdown,
        pushdown_threshold, reply_compression, reply_within_object (as for scanner())."""
        execution = self.execution(aggregations, filter, **options)
        return execution.run()

    def execution(
        self,
        aggregations: list[tuple[str, str]],
        filter: pc.Expression | str | None = None,
        **options: Unpack[AggregateKeywords],
    ) -> AggregateExecution:
        filter = self.dataset._expression(filter)
        if filter is not None:
            projected_schema(self.dataset.schema, [], filter)  # validates the filter
        query = AggregateQuery.make(self.dataset.schema, self.keys, aggregations, filter)
        self.dataset.last_aggregate = AggregateExecution(
            self.dataset.objects, query, options_from(ScanOptions, options, "aggregate")
        )
        return self.dataset.last_aggregate
