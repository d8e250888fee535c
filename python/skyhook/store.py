"""The user's entry point: a store of datasets over one storage backend."""

from __future__ import annotations

import atexit
import math
import os
import threading
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlparse

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.backends.object_store import StoredManifest
from skyhook.backends.retirement import retirements
from skyhook.catalog.design import DESIGN_ATTRIBUTE
from skyhook.catalog.manifest import Manifest
from skyhook.catalog.versions import (
    NextVersion,
    commit_version,
    forget_versions,
    read_version,
    tagged,
    version_as_of,
)
from skyhook.dataset import Dataset
from skyhook.distributed import plan_store
from skyhook.distributed.plan import Plan
from skyhook.distributed.runner import PlanProgress, cancel_plan, queue_plan, run_plan
from skyhook.distributed.schedule import Schedule
from skyhook.errors import (
    CorruptManifestError,
    DatasetNotFoundError,
    InvalidRequestError,
    ObjectNotFoundError,
    options_from,
)
from skyhook.execution.observed_rates import rates_of
from skyhook.execution.workload_log import clear_log, flush
from skyhook.ingest import statistics, write
from skyhook.ingest.garbage_collection import (
    DEFAULT_RETENTION_SECONDS,
    Collection,
    collect_after_write,
    collect_garbage,
)
from skyhook.ingest.publish import retiring
from skyhook.ingest.sources import DataSource
from skyhook.names import ObjectOwner, check_dataset_name, object_owner
from skyhook.sql import run_sql

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from skyhook.flight.client import RemoteStore

# fsck counts a RADOS write whose writer has been silent this long as abandoned.
DEFAULT_FSCK_GRACE_SECONDS = 600


def connect(
    uri: str | os.PathLike[str],
    *,
    create: bool = True,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
    workload_log: int | None = None,
    link_bytes_per_second: float | None = None,
    user: str | None = None,
    password: str | None = None,
) -> Store | RemoteStore:
    """Open a store: ``file:///abs/path`` (or a plain path, str or Path) for the embedded store,
    ``ceph://POOL?conf=/path/ceph.conf[&namespace=NS][&user=NAME][&keyring=/path][&timeout=SECONDS]``
    for RADOS (every Ceph operation fails after the timeout, 30 s by default),
    ``grpc[+tls]://HOST:PORT[?user=NAME][&ca=/path/ca.pem]`` for a store served
    by ``skyhook serve`` (user and password: its account; the password, if not
    given, from the environment's SKYHOOK_PASSWORD).
    An embedded store that does not exist yet is created, or with create=False
    is a StoreNotFoundError (so a mistyped path is not silently a new, empty
    store); a Ceph pool must exist either way. retention_seconds: how long the
    objects an overwrite or a delete replaced outlive it, for the readers that
    opened them (see Store.collect_garbage). workload_log: records of the
    workload log kept per dataset (0: queries are not logged; default: the
    environment's SKYHOOK_WORKLOAD_LOG, else 200). link_bytes_per_second: the
    link's rate for the cost model, instead of the rate it measures on this
    connection's plain reads."""
    if workload_log is not None and (
        isinstance(workload_log, bool) or not isinstance(workload_log, int) or workload_log < 0
    ):
        raise InvalidRequestError(f"workload_log must be a number of records >= 0, not {workload_log!r}")
    if link_bytes_per_second is not None and (
        isinstance(link_bytes_per_second, bool)
        or not isinstance(link_bytes_per_second, (int, float))
        or not math.isfinite(link_bytes_per_second)
        or link_bytes_per_second <= 0
    ):
        raise InvalidRequestError(f"link_bytes_per_second must be a number > 0, not {link_bytes_per_second!r}")
    if isinstance(uri, os.PathLike):  # a directory: the embedded store there
        uri = os.fspath(uri)
    if isinstance(uri, str) and urlparse(uri).scheme.startswith("grpc"):
        from skyhook.flight.client import RemoteStore  # pyarrow.flight only for those who use it

        return RemoteStore(uri, user, password)
    store = _connected(uri, create, retention_seconds)
    store.backend.workload_log_records = workload_log
    store.backend.link_bytes_per_second = link_bytes_per_second
    return store


def _connected(uri: str, create: bool, retention_seconds: float) -> Store:
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        from skyhook.backends.embedded import EmbeddedBackend

        backend = EmbeddedBackend(unquote(parsed.path) if parsed.scheme else uri, create=create)
        return Store(backend, retention_seconds)
    if parsed.scheme == "ceph":
        from skyhook.backends.rados import RadosBackend

        options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
        unknown = set(options) - {"conf", "namespace", "user", "keyring", "timeout", "replica_reads"}
        timeout = options.pop("timeout", None)
        replica_reads = options.pop("replica_reads", "1")
        if (
            not parsed.netloc
            or "conf" not in options
            or unknown
            or (timeout is not None and not timeout.isdigit())
            or replica_reads not in ("0", "1")
        ):
            raise InvalidRequestError(
                f"invalid Ceph URI {uri!r}: expected ceph://POOL?conf=/path/ceph.conf"
                "[&namespace=NS][&user=NAME][&keyring=/path][&timeout=SECONDS][&replica_reads=0|1]"
            )
        if timeout is not None:
            options["timeout_seconds"] = int(timeout)
        options["replica_reads"] = replica_reads == "1"
        return Store(RadosBackend(parsed.netloc, options.pop("conf"), **options), retention_seconds)
    raise InvalidRequestError(
        f"unsupported store URI {uri!r}: expected file:///path, ceph://POOL?conf=... or grpc[+tls]://HOST:PORT"
    )


def _flush_at_exit(backend: weakref.ref[Backend]) -> None:
    """The workload log's queued records of a store still open at exit."""
    alive = backend()
    if alive is not None:
        flush(alive)


# Stores opened by unpickling, one per URI and options in each process (a fork
# starts afresh): a worker that unpickles a dataset per task keeps one
# connection, not one a task.
_UnpickledKey = tuple[str, float, "int | None", "float | None"]
_unpickled: dict[_UnpickledKey, Store] = {}
_unpickled_lock = threading.Lock()


def _forget_after_fork() -> None:
    global _unpickled_lock
    _unpickled.clear()
    _unpickled_lock = threading.Lock()  # another thread may have held it


os.register_at_fork(after_in_child=_forget_after_fork)


def reconnect(
    uri: str,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
    workload_log: int | None = None,
    link_bytes_per_second: float | None = None,
) -> Store:
    """The store a pickled Store (or Dataset) names, with the options it was
    opened with, shared by everything this process unpickles with them until
    it is closed."""
    key = (uri, retention_seconds, workload_log, link_bytes_per_second)
    with _unpickled_lock:
        store = _unpickled.get(key)
        if store is None:
            store = _unpickled[key] = connect(
                uri,
                retention_seconds=retention_seconds,
                workload_log=workload_log,
                link_bytes_per_second=link_bytes_per_second,
            )
        return store


class Store:
    """Pickles by reference, as its URI (which carries every connection option)
    and the options of connect(): unpickling connects to the same store with
    the same options, once per process."""

    def __init__(self, backend: Backend, retention_seconds: float = DEFAULT_RETENTION_SECONDS) -> None:
        if not retention_seconds >= 0:
            raise InvalidRequestError(f"retention_seconds must be >= 0, not {retention_seconds}")
        self.backend = backend
        #: How long replaced objects outlive the publication that replaced them.
        self.retention_seconds = retention_seconds
        # Registered after the backend's own exit handler, so it runs before it;
        # by weak reference, so that a store dropped unclosed is still freed.
        atexit.register(_flush_at_exit, weakref.ref(backend))

    def __reduce__(self) -> tuple[Any, ...]:
        return (reconnect, self._unpickled_key())

    def _unpickled_key(self) -> _UnpickledKey:
        backend = self.backend
        return (self.uri, self.retention_seconds, backend.workload_log_records, backend.link_bytes_per_second)

    @property
    def uri(self) -> str:
        return self.backend.uri

    def __repr__(self) -> str:
        return f"skyhook.Store({self.uri!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with _unpickled_lock:
            if _unpickled.get(self._unpickled_key()) is self:
                del _unpickled[self._unpickled_key()]
        flush(self.backend)  # the workload log's queued records
        self.backend.close()

    def list_datasets(self) -> list[str]:
        return self.backend.dataset_names()

    def sql(self, query: str) -> pa.Table:
        """The result of a SQL query run by DuckDB, this store's datasets its
        tables by name; the filters and projections DuckDB pushes down run in
        storage (skyhook.sql)."""
        return run_sql(self, query)

    def dataset(
        self, name: str, version: int | None = None, *, as_of: datetime | None = None, tag: str | None = None
    ) -> Dataset:
        """The dataset name as it is now, or a version of it kept for time
        travel: by number (ds.versions() lists them), as of a time (the newest
        committed then; a datetime with a time zone) or by tag."""
        current = self.manifest(name)
        if sum(asked is not None for asked in (version, as_of, tag)) > 1:
            raise InvalidRequestError("give one of version, as_of and tag")
        if tag is not None:
            version = tagged(current, tag)
        if version is not None:
            return Dataset(self, read_version(self.backend, current, version))
        if as_of is not None:
            return Dataset(self, version_as_of(self.backend, current, as_of))
        return Dataset(self, current)

    def manifest(self, name: str) -> Manifest:
        return Manifest.from_bytes(self._stored_manifest(name).data, name)

    def _stored_manifest(self, name: str) -> StoredManifest:
        check_dataset_name(name)
        stored = self.backend.get_manifest(name)
        if stored is None:
            raise self._missing(name)
        return stored

    def _missing(self, name: str) -> DatasetNotFoundError:
        return DatasetNotFoundError(f"no dataset named {name!r} in {self.uri}")

    def write_dataset(
        self,
        name: str,
        data: DataSource,
        *,
        mode: str = "create",
        **options: Unpack[write.WriteKeywords],
    ) -> Dataset:
        """Split data into partitions, store one object per partition and publish
        the manifest. data: a pyarrow Table, RecordBatch, RecordBatchReader or
        Dataset (a skyhook one is copied), a pandas DataFrame, anything with
        ``__arrow_c_stream__`` (polars), an iterable of record batches or tables,
        or Parquet / Arrow IPC / CSV files and directories of them. mode is
        "create" (fail if the dataset exists), "overwrite" or "append" (add rows
        to the dataset, or create it; see Dataset.append). design: the
        skyhook.Design every new object is built as (format, column groups, sort
        order, compression, rows per row group; default Design(): Parquet, lz4,
        every column together); format, row_group_size and compression are its
        shorthand. compression="auto" measures each codec on the first object's
        rows and takes the one of the shortest estimated read over this
        connection's link (skyhook.ingest.codec_choice); codec_chosen, if given,
        is called with the choice and its measurements. A new dataset keeps it as its write design, which appends use
        unless they ask for another (objects of different designs mix freely). progress, if given, is
        called with the rows and Arrow bytes of input each stored object consumed.

        Directories keep their partitioning as columns (partitioning: "hive" for
        key=value directories, a list of field names, a pyarrow Partitioning, or
        None) and objects never mix partitions, so filters on those columns prune
        objects. csv_options: a CsvOptions or a dict of its fields. Every file
        must have the columns of the first; a file or value that cannot be read
        raises InvalidInputError naming the file (and line and column).

        Concurrent writers of one dataset never lose data silently: of concurrent
        creators exactly one succeeds and the others raise DatasetExistsError; of
        concurrent overwriters the last to publish wins; concurrent appends all
        land. A writer that fails deletes its own objects; the objects of the
        manifest an overwrite replaced are retired, and deleted once
        retention_seconds have passed (see collect_garbage)."""
        manifest = write.write_dataset(
            self.backend,
            name,
            data,
            options_from(write.WriteOptions, options, "write_dataset"),
            mode=mode,
            retention_seconds=self.retention_seconds,
            link_bytes_per_second=rates_of(self.backend).link_bytes_per_second,
        )
        return Dataset(self, manifest)

    def delete_dataset(self, name: str) -> None:
        """Delete the manifest and the dataset's workload log; its objects are
        retired, deleted once retention_seconds have passed. A corrupt manifest raises
        CorruptManifestError and nothing is deleted."""
        check_dataset_name(name)

        deleted: list[Manifest] = []

        def change(stored: StoredManifest | None) -> NextVersion:
            # Replaced meanwhile: delete what is there now (its writer retired the old objects).
            if stored is None:
                raise self._missing(name)
            deleted[:] = [Manifest.from_bytes(stored.data, name)]  # a corrupt one is refused
            return NextVersion(None, None, retiring(self.backend, name, stored, ""))

        commit_version(self.backend, name, change)
        clear_log(self.backend, name)
        forget_versions(self.backend, deleted[0])
        collect_after_write(self.backend, self.retention_seconds, name)

    def collect_garbage(self, name: str | None = None) -> Collection:
        """Delete the retired objects (of dataset name, or of all) whose
        retention period has passed: objects that an overwrite, a delete or a
        compaction replaced, kept meanwhile for the readers that opened them.
        Writes and fsck(repair=True) do this too."""
        if name is not None:
            check_dataset_name(name)
        return collect_garbage(self.backend, self.retention_seconds, name)

    def plans(self, dataset: str | None = None) -> list[Plan]:
        """The transformation plans stored (of dataset, if given), oldest first, with their progress."""
        if dataset is not None:
            check_dataset_name(dataset)
        return plan_store.plans(self.backend, dataset)

    def plan(self, dataset: str, plan_id: str) -> Plan:
        return plan_store.load(self.backend, dataset, plan_id)[0]

    def resume_plan(self, plan: Plan, progress: PlanProgress | None = None, schedule: Schedule | None = None) -> Plan:
        """Finishes a plan whose run stopped (crashed, killed, paused or failed),
        under schedule (None: the plan's own); a finished or cancelled plan, or
        one another live process runs, is refused."""
        return run_plan(self.backend, plan, progress, schedule=schedule, retention_seconds=self.retention_seconds)

    def queue_plan(self, plan: Plan, schedule: Schedule | None = None) -> Plan:
        """Leaves a stored plan to ``skyhook worker`` (the storage tier runs it, under schedule)."""
        return queue_plan(self.backend, plan, schedule)

    def cancel_plan(self, plan: Plan) -> Plan:
        """Stops a plan: groups committed stay, new objects of the others are deleted."""
        return cancel_plan(self.backend, plan)

    def fsck(
        self,
        name: str | None = None,
        repair: bool = False,
        grace_seconds: float = DEFAULT_FSCK_GRACE_SECONDS,
        verify: bool = False,
    ) -> FsckReport:
        """Check the datasets (name, or all) against the objects stored. Orphans:
        partitions (and temporary files of partitions) that no manifest, no write
        in progress and no retirement owns, left by crashed or killed writers.
        Retired objects are reported, not orphans: a repair deletes those whose
        retention has passed (collect_garbage). Dangling references: objects a
        manifest names that are missing; a repair cannot invent their data and
        leaves them (rewrite or delete the dataset). On RADOS a write whose
        writer has been silent for grace_seconds counts as abandoned; the
        embedded store knows exactly which writers are alive. Without a name,
        the list of datasets is checked against the manifests too (RADOS).
        With verify, every object the manifests name is read whole in storage,
        in parallel, each byte checked against its checksums (damaged: what
        does not check; a repair cannot restore it)."""
        if name is not None:
            check_dataset_name(name)

        def wanted(dataset: str) -> bool:
            return name is None or dataset == name

        # Order matters. An object listed now was stored after its write was
        # registered; a write still registered after the listing is protected,
        # and one that finished since has published a manifest read after this;
        # an object that manifest no longer names was retired before it, so is
        # in the log read last.
        listing = self.backend.object_names()
        objects = [(object_owner(self.backend.partition_name(listed)), listed) for listed in listing]
        owned = [(owner, listed) for owner, listed in objects if owner is not None and wanted(owner.dataset)]
        pending = [record for record in self.backend.pending_writes(grace_seconds) if wanted(record.dataset)]
        live = {ObjectOwner(record.dataset, record.generation) for record in pending if not record.abandoned}
        report = FsckReport(in_progress=sorted(f"{owner.dataset}.{owner.generation}" for owner in live))
        current: dict[str, set[str]] = {}  # dataset -> the objects its manifest names
        for dataset in sorted({owner.dataset for owner, _ in owned} | set(filter(wanted, self.list_datasets()))):
            stored = self.backend.get_manifest(dataset)
            try:
                manifest = None if stored is None else Manifest.from_bytes(stored.data, dataset)
            except CorruptManifestError as error:
                report.corrupt_manifests.append(f"{dataset}: {error}")  # its objects are left alone
                continue
            current[dataset] = {name for p in manifest.partitions for name in p.object_names} if manifest else set()
        records, corrupt_records = retirements(self.backend, name)
        report.corrupt_retirements = [f"{dataset}.{key}: {problem}" for dataset, key, problem in corrupt_records]
        retired = {object_name for record in records for object_name in record.objects}
        for owner, listed in owned:
            partition = self.backend.partition_name(listed)
            named = partition in current.get(owner.dataset, ())
            if owner.dataset not in current or owner in live:
                continue
            if not named and partition == listed and listed in retired:
                report.retired.append(listed)
            elif not named or self.backend.abandoned_temporary(listed):
                report.orphans.append(listed)
        stored_names = set(listing)
        for dataset, named in sorted(current.items()):
            report.dangling.extend(
                f"{dataset}: {object_name}"
                for object_name in sorted(named - stored_names)
                if not self._object_exists(object_name)  # stored after the listing?
            )
        report.abandoned_writes = sorted(
            f"{record.dataset}.{record.generation}" for record in pending if record.abandoned
        )
        if name is None:
            report.index_problems = self.backend.check_index(listing, repair)
        if verify:
            named = sorted({object_name for names in current.values() for object_name in names} & stored_names)
            report.damaged = statistics.damaged_objects(self.backend, named)
        if repair:
            for orphan in report.orphans:
                self.backend.delete_object(orphan)
            # An abandoned write's retirement whose swap never happened names
            # objects still current; it goes with the write (a live one's swap may still come).
            abandoned = {(record.dataset, record.generation) for record in pending if record.abandoned}
            for record in records:
                if (record.dataset, record.replaced_by) in abandoned and set(record.objects) <= current.get(
                    record.dataset, set()
                ):
                    self.backend.drop_retirement(record.dataset, record.key)
            for dataset, generation in abandoned:
                self.backend.forget_write(dataset, generation)
            for dataset, key, _ in corrupt_records:
                self.backend.drop_retirement(dataset, key)
            report.collected = collect_garbage(self.backend, self.retention_seconds, name).deleted
            report.repaired = True
        return report

    def _object_exists(self, object_name: str) -> bool:
        try:
            self.backend.object_attribute(object_name, DESIGN_ATTRIBUTE)
        except ObjectNotFoundError:
            return False
        return True

    def describe_object(self, object_name: str) -> tuple[pa.StructArray, dict[str, int]]:
        """Per-column statistics of one object ({min, max, null_count} per column,
        a one-row struct array) and the call's statistics, computed in storage."""
        return statistics.describe_object(self.backend, object_name)


@dataclass
class FsckReport:
    #: Partition objects no manifest, no live write and no retirement owns (deleted by a repair).
    orphans: list[str] = field(default_factory=list)
    #: Objects replaced and kept for the readers that opened them (a repair deletes those due).
    retired: list[str] = field(default_factory=list)
    #: Retired objects this repair deleted, their retention over.
    collected: list[str] = field(default_factory=list)
    #: "<dataset>: <object>" a manifest names and the store lacks (a repair cannot restore them).
    dangling: list[str] = field(default_factory=list)
    #: "<dataset>.<generation>" of writes still running: their objects were left alone.
    in_progress: list[str] = field(default_factory=list)
    #: "<dataset>.<generation>" of writes whose writer died (their records are dropped by a repair).
    abandoned_writes: list[str] = field(default_factory=list)
    #: Datasets whose manifest cannot be trusted: their objects were left alone.
    corrupt_manifests: list[str] = field(default_factory=list)
    #: "<dataset>.<key>: <problem>" of retirement records that cannot be trusted (dropped by a repair).
    corrupt_retirements: list[str] = field(default_factory=list)
    #: Where the list of datasets and the manifests disagree (RADOS; fixed by a repair).
    index_problems: list[str] = field(default_factory=list)
    #: "<object>: <what>" of objects whose bytes fail their checksums (fsck's verify; not repairable).
    damaged: list[str] = field(default_factory=list)
    repaired: bool = False

    @property
    def clean(self) -> bool:
        return not (
            self.orphans
            or self.dangling
            or self.abandoned_writes
            or self.corrupt_manifests
            or self.corrupt_retirements
            or self.index_problems
            or self.damaged
        )
