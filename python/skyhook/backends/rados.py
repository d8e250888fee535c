"""The RADOS store: objects of a Ceph pool; storage-side methods run in the
OSDs as the skyhook object class. Talks to the cluster through librados' C++
API (the ``_rados`` extension), which has no fixed-size reply buffer.

A RADOS namespace (``&namespace=`` in the URI) gives a separate store in the
same pool. Object names: ``<dataset>.<generation>.<n>`` for partitions and
``<dataset>.manifest`` for manifests (replaced whole by one write, which RADOS
applies atomically); the omap of ``_skyhook.datasets`` lists the datasets.

Manifests are created exclusively and replaced or removed only at the object
version read (``assert_version``). Writes in progress are omap entries of
``_skyhook.pending`` (``<dataset>.<generation>`` -> time of the writer's last
heartbeat); RADOS cannot tell a dead client from a slow one, so fsck counts a
write silent for longer than its grace as abandoned. Retirement records are
omap entries of ``_skyhook.retired`` (``<dataset>.<key>`` -> the record), each
set once and removed once. Every operation gives up
after ``timeout`` seconds (URI option, default 30) instead of waiting for ever
on a placement group whose OSDs are down.
"""

from __future__ import annotations

import atexit
import errno
import threading
import time
from collections.abc import Iterable, Iterator
from urllib.parse import quote

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.backends.object_store import (
    OpenedObject,
    PendingWrite,
    PendingWriteRecord,
    StoredManifest,
    VersionedObject,
)
from skyhook.backends.parallel import Admission, admitted
from skyhook.backends.replica_reads import ReplicaReads
from skyhook.errors import (
    ClassCallsNotPermittedError,
    CorruptObjectError,
    InvalidRequestError,
    LimitExceededError,
    ObjectChangedError,
    ObjectNotFoundError,
    PermissionDeniedError,
    SkyhookError,
    StorageError,
    StorageTimeoutError,
    TypeMismatchError,
    UnknownColumnError,
    UnsupportedVersionError,
)
from skyhook.names import DATASET_NAME, GENERATION
from skyhook.rpc.requests import CHANGING_METHODS, WRITING_METHODS

try:
    from skyhook import _rados
except ImportError:  # built without librados-dev
    _rados = None

CLASS_NAME = "skyhook"
DATASET_INDEX = "_skyhook.datasets"
PENDING_WRITES = "_skyhook.pending"
RETIREMENTS = "_skyhook.retired"
MANIFEST_SUFFIX = ".manifest"
#: The index of a dataset's archived manifests (omap keys: versions), each an object <dataset>.version.<n>.
VERSIONS_SUFFIX = ".versions"
DEFAULT_TIMEOUT_SECONDS = 30
#: Reading calls in flight at most by default: their replies wait in memory until taken in order.
MAX_IN_FLIGHT = 64
# Operations of the _rados module, by the OSD capability they need.
_CLASS_CALLS = ("exec", "submit", "next")
_WRITES = (
    "put",
    "copy_from",
    "create",
    "replace",
    "replace_at_version",
    "remove",
    "remove_at_version",
    "omap_set",
    "omap_remove",
)
# What a skyhook method that writes returns instead of a reply when it fails
# (cpp/adapters/ceph/cls_skyhook.cc, WriterErrno); ENOENT is a missing object.
WRITER_ERRORS: dict[int, type[SkyhookError]] = {
    errno.EINVAL: InvalidRequestError,
    errno.EOPNOTSUPP: UnsupportedVersionError,
    errno.ENOKEY: UnknownColumnError,
    errno.EDOM: TypeMismatchError,
    errno.EUCLEAN: CorruptObjectError,
    errno.ECANCELED: ObjectChangedError,
    errno.EFBIG: LimitExceededError,
}
# One write is limited by osd_max_write_size (90 MiB); keep well inside it.
MAX_OBJECT_BYTES = 64 << 20


class RadosBackend(Backend):
    writer_replies = False

    def __init__(
        self,
        pool: str,
        conf: str,
        *,
        namespace: str = "",
        user: str = "admin",
        keyring: str | None = None,
        max_in_flight: int | None = None,
        timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
        replica_reads: bool = True,
    ) -> None:
        """max_in_flight: reading calls in flight at once (default: 4 per host
        serving the pool, from 16 to MAX_IN_FLIGHT). replica_reads: reading calls spread over
        the hosts holding copies (replica_reads.py), not only the primaries."""
        if _rados is None:
            raise StorageError(
                "this skyhook was built without librados: run scripts/install-ceph.sh, then scripts/setup.sh"
            )
        if timeout_seconds < 1:
            raise InvalidRequestError(f"the Ceph timeout must be at least 1 s, not {timeout_seconds}")
        self.pool_name, self.conf, self.namespace = pool, conf, namespace
        self.user, self.keyring = user, keyring
        self.max_in_flight = max_in_flight
        self.timeout_seconds = timeout_seconds
        self.replica_reads = replica_reads
        try:
            self._pool = _rados.Pool(conf, pool, namespace, user, keyring, timeout_seconds)
        except OSError as error:
            raise self._error(error, f"cannot open Ceph pool {pool!r} with {conf}") from None
        # librados' threads must stop before the interpreter does; through close(),
        # so that a call made after it (a late flush) is a StorageError, not a crash.
        atexit.register(self.close)
        self._replicas = ReplicaReads(pool, lambda command: self._pool.command(command), self._placement_seeds)
        self._unsettled: set[str] = set()  # objects written since the last commit (replica_reads.py)
        self._unsettled_lock = threading.Lock()
        # Operations running on the pool (plain reads a closed scan left to finish
        # on worker threads, say): closing the pool under them would crash.
        self._running = 0
        self._closed = False
        self._idle = threading.Condition()

    @property
    def uri(self) -> str:
        options = {
            "conf": self.conf,
            "namespace": self.namespace,
            "user": self.user if self.user != "admin" else "",
            "keyring": self.keyring or "",
            "timeout": str(self.timeout_seconds) if self.timeout_seconds != DEFAULT_TIMEOUT_SECONDS else "",
            "replica_reads": "" if self.replica_reads else "0",
        }
        return f"ceph://{self.pool_name}?" + "&".join(
            f"{key}={quote(value)}" for key, value in options.items() if value
        )

    def put_object(self, name: str, data: pa.Buffer, attributes: dict[str, bytes | str]) -> None:
        if data.size > MAX_OBJECT_BYTES:
            raise InvalidRequestError(
                f"object {name} would be {data.size:,} bytes, over the "
                f"{MAX_OBJECT_BYTES:,}-byte limit: lower target_object_size"
            )
        encoded = {key: value.encode() if isinstance(value, str) else value for key, value in attributes.items()}
        self._do(self._pool.put, name, data.to_pybytes(), encoded)
        self._written(name)

    def create_object(self, name: str, data: bytes) -> bool:
        return self._do(self._pool.create, name, data)

    def read_object(self, name: str) -> pa.Buffer:
        return pa.py_buffer(self._do(self._pool.read, name))

    def open_object(self, name: str) -> OpenedObject:
        return _OpenedRadosObject(self, name, *self._do(self._pool.open, name))

    def object_attribute(self, name: str, key: str) -> bytes | None:
        return self._do(self._pool.get_xattr, name, key)

    def read_versioned_object(self, name: str) -> VersionedObject:
        data, attributes, version = self._do(self._pool.read_with_attributes, name)
        return VersionedObject(pa.py_buffer(data), attributes, version)

    def replace_object_at(self, name: str, data: bytes, attributes: dict[str, bytes], version: object) -> bool:
        if len(data) > MAX_OBJECT_BYTES:
            raise InvalidRequestError(
                f"object {name} would be {len(data):,} bytes, over the {MAX_OBJECT_BYTES:,}-byte limit"
            )
        return self._do(self._pool.replace_at_version, name, data, attributes, version)

    def copy_object(self, source: str, target: str) -> None:
        # copy_from: the target's primary OSD reads the source from its OSD; it copies the xattrs and omap too.
        self._do(self._pool.copy_from, target, source)
        self._written(target)

    def delete_object(self, name: str) -> None:
        self._do(self._pool.remove, name)

    def call(self, name: str, method: str, request: bytes) -> bytes:
        execute = self._pool.exec_write if method in WRITING_METHODS else self._pool.exec
        try:
            return self._do(execute, name, CLASS_NAME, method, request)
        finally:
            if method in CHANGING_METHODS:
                self._written(name)

    def call_many(
        self, method: str, calls: Iterable[tuple[str, bytes]], admission: Admission | None = None
    ) -> Iterator[bytes]:
        if method in WRITING_METHODS:  # rare and heavy: one at a time
            for name, request in admitted(calls, admission):
                yield self.call(name, method, request)
            return
        calls = list(calls)
        hosts, window = self._routes([name for name, _ in calls])
        stream = self._pool.stream(CLASS_NAME, method)
        started = 0
        try:
            while True:
                while (
                    started < len(calls)
                    and stream.in_flight < window
                    and (admission is None or admission.admits(started))
                ):
                    name, request = calls[started]
                    self._do(stream.submit, name, request, hosts[started])
                    started += 1
                if not stream.in_flight:
                    return
                yield self._do(stream.next)
        finally:
            stream.drain()

    @property
    def storage_hosts(self) -> int:
        return max(1, self._replicas.hosts)

    def _routes(self, objects: list[str]) -> tuple[list[str | None], int]:
        """The host to answer each reading call (None: its primary), and how many may be in flight."""
        window = self.max_in_flight or min(MAX_IN_FLIGHT, max(16, 4 * self._replicas.hosts))
        if not self.replica_reads:
            return [None] * len(objects), window
        return self._do(self._replicas.hosts_for, objects), window

    def _placement_seeds(self, objects: list[str]) -> list[int]:
        return self._pool.placement_seeds(objects)

    def object_names(self) -> list[str]:
        return sorted(self._do(self._pool.list))

    def get_manifest(self, dataset: str) -> StoredManifest | None:
        try:
            data, version = self._do(self._pool.read_versioned, _manifest_object(dataset))
        except ObjectNotFoundError:
            return None
        return StoredManifest(data, version)

    def create_manifest(self, dataset: str, data: bytes) -> bool:
        # Manifest first, then the index: a listed dataset is always complete.
        if not self._do(self._pool.create, _manifest_object(dataset), data):
            return False
        self._do(self._pool.omap_set, DATASET_INDEX, {dataset: b""})
        self._settle()
        return True

    def replace_manifest(self, dataset: str, data: bytes, version: object) -> bool:
        replaced = self._do(self._pool.replace, _manifest_object(dataset), data, version)
        if replaced:
            self._settle()
        return replaced

    def _written(self, name: str) -> None:
        with self._unsettled_lock:
            self._unsettled.add(name)

    def _settle(self) -> None:
        """The objects written before this commit, readable at their replicas (replica_reads.py).
        The commit has happened: a failure here only leaves reads at primaries, never an error."""
        with self._unsettled_lock:
            written, self._unsettled = self._unsettled, set()
        try:
            self._replicas.settle(
                written,
                lambda marker: self._do(self._pool.put, marker, b"", {}),
                lambda marker: self._do(self._pool.remove, marker),
            )
        except (SkyhookError, OSError):
            pass

    def delete_manifest(self, dataset: str, version: object) -> bool:
        # Unlist first and list again if the manifest changed meanwhile: a
        # concurrent create can then never lose its index entry to this delete.
        self._do(self._pool.omap_remove, DATASET_INDEX, [dataset])
        if self._do(self._pool.remove_at_version, _manifest_object(dataset), version):
            return True
        if self.get_manifest(dataset) is not None:
            self._do(self._pool.omap_set, DATASET_INDEX, {dataset: b""})
        return False

    def dataset_names(self) -> list[str]:
        return sorted(self._do(self._pool.omap_keys, DATASET_INDEX))

    def check_index(self, object_names: list[str], repair: bool) -> list[str]:
        # A crash between a manifest's creation and its index entry, or between
        # unlisting and removing it, leaves the two out of step. Each suspect is
        # read again: the listing may be older than a create or delete since.
        manifests = (name.removesuffix(MANIFEST_SUFFIX) for name in object_names if name.endswith(MANIFEST_SUFFIX))
        stored = set(filter(DATASET_NAME.fullmatch, manifests))
        listed = set(self.dataset_names())
        problems = []
        for dataset in sorted(listed - stored):
            if self.get_manifest(dataset) is None:
                problems.append(f"{dataset}: listed, but has no manifest")
                if repair:
                    self._do(self._pool.omap_remove, DATASET_INDEX, [dataset])
        for dataset in sorted(stored - listed):
            if self.get_manifest(dataset) is not None:
                problems.append(f"{dataset}: has a manifest, but is not listed")
                if repair:
                    self._do(self._pool.omap_set, DATASET_INDEX, {dataset: b""})
        return problems

    def begin_write(self, dataset: str, generation: str) -> PendingWrite:
        return _HeartbeatRecord(self, f"{dataset}.{generation}")

    def pending_writes(self, grace_seconds: float) -> list[PendingWriteRecord]:
        now = time.time()
        records = []
        for key, heartbeat in self._do(self._pool.omap_items, PENDING_WRITES).items():
            dataset, _, generation = key.partition(".")
            if not (DATASET_NAME.fullmatch(dataset) and GENERATION.fullmatch(generation)):
                continue  # not ours: never acted upon
            try:
                silent_for = now - float(heartbeat)
            except ValueError:
                silent_for = float("inf")
            records.append(PendingWriteRecord(dataset, generation, silent_for > grace_seconds))
        return records

    def forget_write(self, dataset: str, generation: str) -> None:
        self._do(self._pool.omap_remove, PENDING_WRITES, [f"{dataset}.{generation}"])

    def put_retirement(self, dataset: str, key: str, record: bytes) -> None:
        self._do(self._pool.omap_set, RETIREMENTS, {f"{dataset}.{key}": record})

    def retirement_records(self) -> list[tuple[str, str, bytes]]:
        records = []
        for entry, record in self._do(self._pool.omap_items, RETIREMENTS).items():
            dataset, dot, key = entry.partition(".")
            if dot:  # else not ours: never acted upon
                records.append((dataset, key, record.encode()))
        return records

    def drop_retirement(self, dataset: str, key: str) -> None:
        self._do(self._pool.omap_remove, RETIREMENTS, [f"{dataset}.{key}"])

    def put_archived_manifest(self, dataset: str, version: int, data: bytes) -> None:
        self._do(self._pool.put, _archive_object(dataset, version), data, {})
        self._do(self._pool.omap_set, dataset + VERSIONS_SUFFIX, {f"{version:020d}": b""})

    def archived_manifest(self, dataset: str, version: int) -> bytes | None:
        try:
            return self._do(self._pool.read, _archive_object(dataset, version))
        except ObjectNotFoundError:
            return None

    def archived_versions(self, dataset: str) -> list[int]:
        try:
            keys = self._do(self._pool.omap_keys, dataset + VERSIONS_SUFFIX)
        except ObjectNotFoundError:
            return []
        return sorted(int(key) for key in keys if key.isdigit())

    def drop_archived_manifest(self, dataset: str, version: int) -> None:
        try:
            self._do(self._pool.remove, _archive_object(dataset, version))
        except ObjectNotFoundError:
            pass
        try:
            self._do(self._pool.omap_remove, dataset + VERSIONS_SUFFIX, [f"{version:020d}"])
        except ObjectNotFoundError:
            pass

    def close(self) -> None:
        """Closes the pool once the operations running on it have finished
        (librados' own timeouts bound them); later ones raise StorageError."""
        with self._idle:
            if self._closed:
                return
            self._closed = True
            self._idle.wait_for(lambda: self._running == 0)
        # Freed now, not at the interpreter's end: nanobind reports every handle still alive then.
        pool, self._pool = self._pool, _ClosedPool()
        pool.close()

    def _do(self, operation, *args):
        with self._idle:
            if self._closed:
                raise StorageError(f"the Ceph store {self.uri} is closed")
            self._running += 1
        try:
            return operation(*args)
        except OSError as error:
            raise self._error(error, "Ceph", operation.__name__) from None
        finally:
            with self._idle:
                self._running -= 1
                if not self._running:  # only close() waits, for none running
                    self._idle.notify_all()

    def _error(self, error: OSError, context: str, operation: str = "") -> SkyhookError:
        if error.errno == errno.ENOENT:
            return ObjectNotFoundError(str(error))
        if error.errno == errno.ETIMEDOUT:
            return StorageTimeoutError(
                f"{context}: no answer within {self.timeout_seconds} s ({error}); the cluster's monitors "
                "or the OSDs of a placement group may be down (timeout= in the store URI sets the limit)"
            )
        if error.errno in (errno.EPERM, errno.EACCES):
            return self._refusal(operation, error)
        if operation in _CLASS_CALLS and error.errno in WRITER_ERRORS:
            return WRITER_ERRORS[error.errno](f"storage refused the write ({error}); nothing was written")
        return StorageError(f"{context}: {error}")

    def _refusal(self, operation: str, error: OSError) -> PermissionDeniedError:
        """A refusal that names the OSD capability this user lacks (see the README, "Ceph")."""
        scope = f"pool={self.pool_name}" + (f" namespace={self.namespace}" if self.namespace else "")
        refused = f"Ceph refused client.{self.user} ({error.strerror})"
        if operation in _CLASS_CALLS:
            return ClassCallsNotPermittedError(
                f"{refused}: calling the skyhook object class needs `allow {scope} class skyhook` in its OSD caps"
            )
        if operation == "exec_write":  # a writing method (analyze, create_index, transform): both grants
            return PermissionDeniedError(
                f"{refused}: writing through the skyhook object class needs `allow rw {scope}` and "
                f"`allow {scope} class skyhook` in its OSD caps"
            )
        needed = "rw" if operation in _WRITES else "r"
        return PermissionDeniedError(f"{refused}: this needs `allow {needed} {scope}` in its OSD caps")


class _ClosedPool:
    """In place of a closed pool: every operation (made only after _do found the store closed) refuses."""

    def __getattr__(self, name: str):
        def closed(*_: object) -> None:
            raise StorageError("the Ceph store is closed")

        closed.__name__ = name
        return closed


def _manifest_object(dataset: str) -> str:
    return dataset + MANIFEST_SUFFIX


def _archive_object(dataset: str, version: int) -> str:
    return f"{dataset}.version.{int(version)}"


class _OpenedRadosObject(OpenedObject):
    """An object at the version its attributes were read at: ranged reads
    assert that version, so a rewrite in between is noticed, never mixed in."""

    def __init__(self, backend: RadosBackend, name: str, size: int, version: int, attributes: dict[str, bytes]) -> None:
        self.backend, self.name, self.version = backend, name, version
        self.size, self.attributes = size, attributes

    def read(self, ranges: list[tuple[int, int]]) -> list[pa.Buffer]:
        return [pa.py_buffer(part) for part in self.backend._do(self._read_ranges, ranges)]

    def _read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        try:
            return self.backend._pool.read_ranges(self.name, self.version, ranges)
        except OSError as error:
            if error.errno in (errno.ERANGE, errno.EOVERFLOW):
                raise ObjectChangedError(self.name) from None
            raise


class _HeartbeatRecord(PendingWrite):
    def __init__(self, backend: RadosBackend, key: str) -> None:
        self.backend, self.key = backend, key
        self.heartbeat()

    def heartbeat(self) -> None:
        self.backend._do(self.backend._pool.omap_set, PENDING_WRITES, {self.key: repr(time.time()).encode()})

    def finish(self) -> None:
        self.backend._do(self.backend._pool.omap_remove, PENDING_WRITES, [self.key])
