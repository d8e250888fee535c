"""The user's entry point: a store of datasets over one storage backend."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.backends.object_store import StoredManifest
from skyhook.catalog.design import Design
from skyhook.catalog.manifest import Manifest
from skyhook.dataset import Dataset
from skyhook.distributed import plan_store
from skyhook.distributed.plan import Plan
from skyhook.distributed.runner import PlanProgress, cancel_plan, queue_plan, run_plan
from skyhook.distributed.schedule import Schedule
from skyhook.errors import CorruptManifestError, DatasetNotFoundError, InvalidRequestError
from skyhook.execution.workload_log import clear_log
from skyhook.ingest import statistics, write
from skyhook.ingest.csv_options import CsvOptions
from skyhook.ingest.files import Partitioning
from skyhook.ingest.partitioning import DEFAULT_TARGET_OBJECT_SIZE
from skyhook.ingest.publish import delete_objects
from skyhook.ingest.sources import DataSource
from skyhook.names import ObjectOwner, check_dataset_name, object_owner

# fsck counts a RADOS write whose writer has been silent this long as abandoned.
DEFAULT_FSCK_GRACE_SECONDS = 600


def connect(uri: str, *, create: bool = True, workload_log: int | None = None) -> Store:
    """Open a store: ``file:///abs/path`` (or a plain path) for the embedded store,
    ``ceph://POOL?conf=/path/ceph.conf[&namespace=NS][&user=NAME][&keyring=/path][&timeout=SECONDS]``
    for RADOS (every Ceph operation fails after the timeout, 30 s by default).
    An embedded store that does not exist yet is created, or with create=False
    is a StoreNotFoundError (so a mistyped path is not silently a new, empty
    store); a Ceph pool must exist either way. workload_log: records of the
    workload log kept per dataset (0: queries are not logged; default: the
    environment's SKYHOOK_WORKLOAD_LOG, else 200)."""
    if workload_log is not None and (
        isinstance(workload_log, bool) or not isinstance(workload_log, int) or workload_log < 0
    ):
        raise InvalidRequestError(f"workload_log must be a number of records >= 0, not {workload_log!r}")
    store = _connected(uri, create)
    store.backend.workload_log_records = workload_log
    return store


def _connected(uri: str, create: bool) -> Store:
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        from skyhook.backends.embedded import EmbeddedBackend

        return Store(EmbeddedBackend(unquote(parsed.path) if parsed.scheme else uri, create=create))
    if parsed.scheme == "ceph":
        from skyhook.backends.rados import RadosBackend

        options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
        unknown = set(options) - {"conf", "namespace", "user", "keyring", "timeout"}
        timeout = options.pop("timeout", None)
        if not parsed.netloc or "conf" not in options or unknown or (timeout is not None and not timeout.isdigit()):
            raise InvalidRequestError(
                f"invalid Ceph URI {uri!r}: expected ceph://POOL?conf=/path/ceph.conf"
                "[&namespace=NS][&user=NAME][&keyring=/path][&timeout=SECONDS]"
            )
        if timeout is not None:
            options["timeout_seconds"] = int(timeout)
        return Store(RadosBackend(parsed.netloc, options.pop("conf"), **options))
    raise InvalidRequestError(f"unsupported store URI {uri!r}: expected file:///path or ceph://POOL?conf=...")


# Stores opened by unpickling, one per URI in each process (a fork starts afresh):
# a worker that unpickles a dataset per task keeps one connection, not one a task.
_unpickled: dict[str, Store] = {}
_unpickled_lock = threading.Lock()


def _forget_after_fork() -> None:
    global _unpickled_lock
    _unpickled.clear()
    _unpickled_lock = threading.Lock()  # another thread may have held it


os.register_at_fork(after_in_child=_forget_after_fork)


def reconnect(uri: str) -> Store:
    """The store a pickled Store (or Dataset) names, shared by everything this
    process unpickles with that URI until it is closed."""
    with _unpickled_lock:
        store = _unpickled.get(uri)
        if store is None:
            store = _unpickled[uri] = connect(uri)
        return store


class Store:
    """Pickles by reference, as its URI (which carries every connection option):
    unpickling connects to the same store, once per process and URI."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __reduce__(self) -> tuple[Any, ...]:
        return (reconnect, (self.uri,))

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
            if _unpickled.get(self.uri) is self:
                del _unpickled[self.uri]
        self.backend.close()

    def list_datasets(self) -> list[str]:
        return self.backend.dataset_names()

    def dataset(self, name: str) -> Dataset:
        return Dataset(self, self.manifest(name))

    def manifest(self, name: str) -> Manifest:
        return Manifest.from_bytes(self._stored_manifest(name).data, name)

    def _stored_manifest(self, name: str) -> StoredManifest:
        check_dataset_name(name)
        stored = self.backend.get_manifest(name)
        if stored is None:
            raise DatasetNotFoundError(f"no dataset named {name!r} in {self.uri}")
        return stored

    def write_dataset(
        self,
        name: str,
        data: DataSource,
        *,
        design: Design | None = None,
        format: str | None = None,
        target_object_size: int = DEFAULT_TARGET_OBJECT_SIZE,
        rows_per_object: int | None = None,
        row_group_size: int | None = None,
        compression: str | None = None,
        mode: str = "create",
        progress: write.Progress | None = None,
        partitioning: Partitioning = "hive",
        csv_options: CsvOptions | Mapping[str, Any] | None = None,
    ) -> Dataset:
        """Split data into partitions, store one object per partition and publish
        the manifest. data: a pyarrow Table, RecordBatch, RecordBatchReader or
        Dataset (a skyhook one is copied), a pandas DataFrame, anything with
        ``__arrow_c_stream__`` (polars), an iterable of record batches or tables,
        or Parquet / Arrow IPC / CSV files and directories of them. mode is
        "create" (fail if the dataset exists), "overwrite" or "append" (add rows
        to the dataset, or create it; see Dataset.append). design: the
        skyhook.Design every new object is built as (format, column groups, sort
        order, compression, rows per row group; default Design(): Parquet, zstd,
        every column together); format, row_group_size and compression are its
        shorthand. A new dataset keeps it as its write design, which appends use
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
        land. Every writer deletes the objects of the manifest it replaced (an
        append replaces none) and, if it fails, its own."""
        manifest = write.write_dataset(
            self.backend,
            name,
            data,
            design=design,
            format=format,
            target_object_size=target_object_size,
            rows_per_object=rows_per_object,
            row_group_size=row_group_size,
            compression=compression,
            mode=mode,
            progress=progress,
            partitioning=partitioning,
            csv_options=csv_options,
        )
        return Dataset(self, manifest)

    def delete_dataset(self, name: str) -> None:
        """Delete the manifest, then the objects it names and its workload log.
        A corrupt manifest raises CorruptManifestError and nothing is deleted."""
        while True:
            stored = self._stored_manifest(name)
            manifest = Manifest.from_bytes(stored.data, name)
            if self.backend.delete_manifest(name, stored.version):
                delete_objects(self.backend, manifest)
                clear_log(self.backend, name)
                return
            # Replaced meanwhile: delete what is there now (its writer deleted the old objects).

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
        return run_plan(self.backend, plan, progress, schedule=schedule)

    def queue_plan(self, plan: Plan, schedule: Schedule | None = None) -> Plan:
        """Leaves a stored plan to ``skyhook worker`` (the storage tier runs it, under schedule)."""
        return queue_plan(self.backend, plan, schedule)

    def cancel_plan(self, plan: Plan) -> Plan:
        """Stops a plan: groups committed stay, new objects of the others are deleted."""
        return cancel_plan(self.backend, plan)

    def fsck(
        self, name: str | None = None, repair: bool = False, grace_seconds: float = DEFAULT_FSCK_GRACE_SECONDS
    ) -> FsckReport:
        """Find (and with repair, delete) orphan objects: partitions (and temporary
        files of partitions) that neither a dataset's manifest names nor a write in
        progress owns, left by crashed or killed writers. On RADOS a write whose
        writer has been silent for grace_seconds counts as abandoned; the
        embedded store knows exactly which writers are alive. Without a name,
        the list of datasets is checked against the manifests too (RADOS)."""
        if name is not None:
            check_dataset_name(name)

        def wanted(dataset: str) -> bool:
            return name is None or dataset == name

        # Order matters. An object listed now was stored after its write was
        # registered; a write still registered after the listing is protected,
        # and one that finished since has published a manifest read after this.
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
            current[dataset] = {p.object_name for p in manifest.partitions} if manifest else set()
        for owner, listed in owned:
            named = self.backend.partition_name(listed) in current.get(owner.dataset, ())
            if (
                owner.dataset in current
                and owner not in live
                and (not named or self.backend.abandoned_temporary(listed))
            ):
                report.orphans.append(listed)
        report.abandoned_writes = sorted(
            f"{record.dataset}.{record.generation}" for record in pending if record.abandoned
        )
        if name is None:
            report.index_problems = self.backend.check_index(listing, repair)
        if repair:
            for orphan in report.orphans:
                self.backend.delete_object(orphan)
            for record in pending:
                if record.abandoned:
                    self.backend.forget_write(record.dataset, record.generation)
            report.repaired = True
        return report

    def describe_object(self, object_name: str) -> tuple[pa.StructArray, dict[str, int]]:
        """Per-column statistics of one object ({min, max, null_count} per column,
        a one-row struct array) and the call's statistics, computed in storage."""
        return statistics.describe_object(self.backend, object_name)


@dataclass
class FsckReport:
    #: Partition objects no manifest and no live write owns (deleted by a repair).
    orphans: list[str] = field(default_factory=list)
    #: "<dataset>.<generation>" of writes still running: their objects were left alone.
    in_progress: list[str] = field(default_factory=list)
    #: "<dataset>.<generation>" of writes whose writer died (their records are dropped by a repair).
    abandoned_writes: list[str] = field(default_factory=list)
    #: Datasets whose manifest cannot be trusted: their objects were left alone.
    corrupt_manifests: list[str] = field(default_factory=list)
    #: Where the list of datasets and the manifests disagree (RADOS; fixed by a repair).
    index_problems: list[str] = field(default_factory=list)
    repaired: bool = False

    @property
    def clean(self) -> bool:
        return not (self.orphans or self.abandoned_writes or self.corrupt_manifests or self.index_problems)
