"""The user's entry point: a store of datasets over one storage backend."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlparse

import pyarrow as pa

from skyhook.backends.base import Backend, StoredManifest
from skyhook.catalog.manifest import (
    Manifest,
    ObjectOwner,
    Partition,
    check_dataset_name,
    new_generation,
    object_name,
    object_owner,
    statistics_type,
)
from skyhook.dataset import Dataset
from skyhook.errors import CorruptManifestError, DatasetExistsError, DatasetNotFoundError, InvalidRequestError
from skyhook.ingest.writer import FORMATS, DataSource, encode_partition, open_source, split_partitions
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import DescribeRequest

FORMAT_ATTRIBUTE = "skyhook.format"
# fsck counts a RADOS write whose writer has been silent this long as abandoned.
DEFAULT_FSCK_GRACE_SECONDS = 600

DEFAULT_TARGET_OBJECT_SIZE = 32 << 20
DEFAULT_ROW_GROUP_SIZE = 64 * 1024


def connect(uri: str) -> Store:
    """Open a store: ``file:///abs/path`` (or a plain path) for the embedded store,
    ``ceph://POOL?conf=/path/ceph.conf[&namespace=NS][&user=NAME][&keyring=/path][&timeout=SECONDS]``
    for RADOS (every Ceph operation fails after the timeout, 30 s by default)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        from skyhook.backends.embedded import EmbeddedBackend

        return Store(EmbeddedBackend(unquote(parsed.path) if parsed.scheme else uri))
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


class Store:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

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
        format: str = "parquet",
        target_object_size: int = DEFAULT_TARGET_OBJECT_SIZE,
        rows_per_object: int | None = None,
        row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
        compression: str = "zstd",
        mode: str = "create",
        progress: Callable[[int, int], None] | None = None,
    ) -> Dataset:
        """Split data into partitions, store one object per partition and publish
        the manifest. mode is "create" (fail if the dataset exists) or "overwrite".
        progress, if given, is called with (rows written, bytes written) per object.

        Concurrent writers of one dataset never lose data silently: of concurrent
        creators exactly one succeeds and the others raise DatasetExistsError; of
        concurrent overwriters the last to publish wins. Every writer deletes the
        objects of the generation it replaced and, if it fails, its own."""
        check_dataset_name(name)
        if format not in FORMATS:
            raise InvalidRequestError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
        if mode not in ("create", "overwrite"):
            raise InvalidRequestError(f"unknown mode {mode!r}; expected create or overwrite")
        if mode == "create" and self.backend.get_manifest(name) is not None:
            raise _exists(name)  # early, before any work; the publish decides for sure
        reader = open_source(data)
        # A fresh generation names the new objects, so readers of the previous
        # manifest keep reading complete, unchanged objects until it is replaced.
        generation = new_generation()
        # Registered before the first object exists, so fsck never takes the
        # objects of this write for orphans while it runs.
        pending = self.backend.begin_write(name, generation)
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
                    self.backend.put_object(partition_object, encoded, {FORMAT_ATTRIBUTE: format})
                    statistics.append(self._describe(partition_object, reader.schema))
                    partitions.append(Partition(number, partition_object, table.num_rows, encoded.size))
                    pending.heartbeat()
                    if progress:
                        progress(table.num_rows, encoded.size)
                manifest = Manifest(
                    name, reader.schema, format, generation, tuple(partitions), _concat(statistics, reader.schema)
                )
                replaced = self._publish(manifest, mode)
            except BaseException:
                for written_object in written:
                    self.backend.delete_object(written_object)
                raise
            if replaced is not None:
                self._delete_objects(replaced)
        finally:
            pending.finish()
        return Dataset(self, manifest)

    def _publish(self, manifest: Manifest, mode: str) -> Manifest | None:
        """Compare-and-swap the manifest into place; returns the one replaced."""
        name, data = manifest.dataset, manifest.to_bytes()
        while True:
            current = self.backend.get_manifest(name)
            if current is None:
                if self.backend.create_manifest(name, data):
                    return None
                if mode == "create":
                    raise _exists(name)
            elif mode == "create":
                raise _exists(name)
            elif self.backend.replace_manifest(name, data, current.version):
                return _readable_manifest(current, name)
            # Another writer published in between: overwrite means "replace
            # whatever is there now", so try again against it.

    def delete_dataset(self, name: str) -> None:
        """Delete the manifest, then the objects it names. A corrupt manifest
        raises CorruptManifestError and nothing is deleted."""
        while True:
            stored = self._stored_manifest(name)
            manifest = Manifest.from_bytes(stored.data, name)
            if self.backend.delete_manifest(name, stored.version):
                self._delete_objects(manifest)
                return
            # Replaced meanwhile: delete what is there now (its writer deleted the old objects).

    def fsck(
        self, name: str | None = None, repair: bool = False, grace_seconds: float = DEFAULT_FSCK_GRACE_SECONDS
    ) -> FsckReport:
        """Find (and with repair, delete) orphan objects: partitions (and temporary
        files of partitions) that neither a dataset's manifest nor a write in
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
        current: dict[str, str | None] = {}  # dataset -> generation of its manifest
        for dataset in sorted({owner.dataset for owner, _ in owned} | set(filter(wanted, self.list_datasets()))):
            stored = self.backend.get_manifest(dataset)
            try:
                current[dataset] = None if stored is None else Manifest.from_bytes(stored.data, dataset).generation
            except CorruptManifestError as error:
                report.corrupt_manifests.append(f"{dataset}: {error}")  # its objects are left alone
        for owner, listed in owned:
            if owner.dataset in current and current[owner.dataset] != owner.generation and owner not in live:
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
        reply = decode_reply(self.backend.call(object_name, DescribeRequest.METHOD, DescribeRequest().encode()))
        reply.raise_for_status(f"describing object {object_name}")
        return reply.reader().read_all().to_struct_array().combine_chunks(), reply.statistics

    def _describe(self, object_name: str, schema: pa.Schema) -> pa.StructArray:
        row, _ = self.describe_object(object_name)
        return row.cast(statistics_type(schema))

    def _delete_objects(self, manifest: Manifest) -> None:
        for partition in manifest.partitions:
            self.backend.delete_object(partition.object_name)


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


def _exists(name: str) -> DatasetExistsError:
    return DatasetExistsError(f"dataset {name!r} exists; pass mode='overwrite' to replace it")


def _readable_manifest(stored: StoredManifest, name: str) -> Manifest | None:
    """The manifest just replaced, if it can be trusted; a corrupt one's objects are left to fsck."""
    try:
        return Manifest.from_bytes(stored.data, name)
    except CorruptManifestError:
        return None


def _concat(rows: list[pa.StructArray], schema: pa.Schema) -> pa.StructArray:
    if not rows:
        return pa.array([], statistics_type(schema))
    return pa.concat_arrays(rows)
