"""The RADOS store: objects of a Ceph pool; storage-side methods run in the
OSDs as the skyhook object class. Talks to the cluster through librados' C++
API (the ``_rados`` extension), which has no fixed-size reply buffer.

A RADOS namespace (``&namespace=`` in the URI) gives a separate store in the
same pool. Object names: ``<dataset>.<generation>.<n>`` for partitions and
``<dataset>.manifest`` for manifests (replaced whole by one write, which RADOS
applies atomically); the omap of ``_skyhook.datasets`` lists the datasets.
"""

from __future__ import annotations

import atexit
import errno
from collections.abc import Iterable, Iterator
from urllib.parse import quote

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.errors import (ClassCallsNotPermittedError, InvalidRequestError, ObjectNotFoundError,
                            PermissionDeniedError, StorageError)

try:
    from skyhook import _rados
except ImportError:  # built without librados-dev
    _rados = None

CLASS_NAME = "skyhook"
DATASET_INDEX = "_skyhook.datasets"
# Operations of the _rados module, by the OSD capability they need.
_CLASS_CALLS = ("exec", "submit", "next")
_WRITES = ("put", "remove", "omap_set", "omap_remove")
# One write is limited by osd_max_write_size (90 MiB); keep well inside it.
MAX_OBJECT_BYTES = 64 << 20


class RadosBackend(Backend):
    reply_compression = "lz4"

    def __init__(self, pool: str, conf: str, *, namespace: str = "", user: str = "admin",
                 keyring: str | None = None, max_in_flight: int = 16, timeout_seconds: int = 30) -> None:
        if _rados is None:
            raise StorageError("this skyhook was built without librados: run scripts/install-ceph.sh, "
                               "then scripts/setup.sh")
        self.pool_name, self.conf, self.namespace = pool, conf, namespace
        self.user, self.keyring = user, keyring
        self.max_in_flight = max_in_flight
        try:
            self._pool = _rados.Pool(conf, pool, namespace, user, keyring, timeout_seconds)
        except OSError as error:
            raise StorageError(f"cannot open Ceph pool {pool!r} with {conf}: {error}") from None
        # librados' threads must stop before the interpreter does.
        atexit.register(self._pool.close)

    @property
    def uri(self) -> str:
        options = {"conf": self.conf, "namespace": self.namespace, "user": self.user if self.user != "admin" else "",
                   "keyring": self.keyring or ""}
        return f"ceph://{self.pool_name}?" + "&".join(f"{key}={quote(value)}" for key, value in options.items() if value)

    def put_object(self, name: str, data: pa.Buffer, attributes: dict[str, str]) -> None:
        if data.size > MAX_OBJECT_BYTES:
            raise InvalidRequestError(f"object {name} would be {data.size:,} bytes, over the "
                                      f"{MAX_OBJECT_BYTES:,}-byte limit: lower target_object_size")
        self._do(self._pool.put, name, data.to_pybytes(), attributes)

    def read_object(self, name: str) -> pa.Buffer:
        return pa.py_buffer(self._do(self._pool.read, name))

    def delete_object(self, name: str) -> None:
        self._do(self._pool.remove, name)

    def call(self, name: str, method: str, request: bytes) -> bytes:
        return self._do(self._pool.exec, name, CLASS_NAME, method, request)

    def call_many(self, method: str, calls: Iterable[tuple[str, bytes]]) -> Iterator[bytes]:
        stream = self._pool.stream(CLASS_NAME, method)
        try:
            for name, request in calls:
                self._do(stream.submit, name, request)
                if stream.in_flight >= self.max_in_flight:
                    yield self._do(stream.next)
            while stream.in_flight:
                yield self._do(stream.next)
        finally:
            stream.drain()

    def get_manifest(self, dataset: str) -> bytes | None:
        try:
            return self._do(self._pool.read, _manifest_object(dataset))
        except ObjectNotFoundError:
            return None

    def put_manifest(self, dataset: str, data: bytes) -> None:
        # Manifest first, then the index: a listed dataset is always complete.
        self._do(self._pool.put, _manifest_object(dataset), data, {})
        self._do(self._pool.omap_set, DATASET_INDEX, {dataset: ""})

    def delete_manifest(self, dataset: str) -> None:
        self._do(self._pool.omap_remove, DATASET_INDEX, [dataset])
        self._do(self._pool.remove, _manifest_object(dataset))

    def dataset_names(self) -> list[str]:
        return sorted(self._do(self._pool.omap_keys, DATASET_INDEX))

    def close(self) -> None:
        self._pool.close()

    def _do(self, operation, *args):
        try:
            return operation(*args)
        except OSError as error:
            if error.errno == errno.ENOENT:
                raise ObjectNotFoundError(str(error)) from None
            if error.errno in (errno.EPERM, errno.EACCES):
                raise self._refusal(operation.__name__, error) from None
            raise StorageError(f"Ceph: {error}") from None

    def _refusal(self, operation: str, error: OSError) -> PermissionDeniedError:
        """A refusal that names the OSD capability this user lacks (see the README, "Ceph")."""
        scope = f"pool={self.pool_name}" + (f" namespace={self.namespace}" if self.namespace else "")
        refused = f"Ceph refused client.{self.user} ({error.strerror})"
        if operation in _CLASS_CALLS:
            return ClassCallsNotPermittedError(
                f"{refused}: calling the skyhook object class needs `allow {scope} class skyhook` in its OSD caps")
        needed = "rw" if operation in _WRITES else "r"
        return PermissionDeniedError(f"{refused}: this needs `allow {needed} {scope}` in its OSD caps")


def _manifest_object(dataset: str) -> str:
    return f"{dataset}.manifest"
