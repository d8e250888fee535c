"""The embedded store: a directory on one machine, no daemons.

Objects are files under ``objects/``, their attributes are the files' ``user.``
extended attributes, manifests are files under ``manifests/``. Every write goes
to a temporary file that is fsynced and renamed into place, so a crash never
leaves a half-written object or manifest. Storage-side methods run in this
process through the C++ extension, in a thread pool with the GIL released.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from skyhook import _embedded
from skyhook.backends.base import Backend
from skyhook.errors import ObjectNotFoundError, SkyhookError
from skyhook.parallel import ordered_map

_MARKER = "skyhook-store"


class EmbeddedBackend(Backend):
    runs_in_process = True

    def __init__(self, root: str | os.PathLike, *, parallelism: int | None = None) -> None:
        self.root = Path(root).absolute()
        self.objects = self.root / "objects"
        self.manifests = self.root / "manifests"
        self.parallelism = parallelism or os.cpu_count() or 1
        if self.root.exists() and any(self.root.iterdir()) and not (self.root / _MARKER).exists():
            raise SkyhookError(f"{self.root} exists and is not a skyhook store")
        self.objects.mkdir(parents=True, exist_ok=True)
        self.manifests.mkdir(parents=True, exist_ok=True)
        if not (self.root / _MARKER).exists():
            _atomic_write(self.root / _MARKER, b"skyhook embedded store, layout 1\n", {})
        self._pool = ThreadPoolExecutor(self.parallelism, thread_name_prefix="skyhook-scan")

    @property
    def uri(self) -> str:
        return self.root.as_uri()

    def put_object(self, name: str, data: pa.Buffer, attributes: dict[str, str]) -> None:
        _atomic_write(self.objects / name, data, attributes)

    def read_object(self, name: str) -> pa.Buffer:
        try:
            with pa.memory_map(str(self.objects / name)) as mapped:
                return mapped.read_buffer()
        except FileNotFoundError:
            raise ObjectNotFoundError(f"object {name} is missing from {self.uri}") from None

    def delete_object(self, name: str) -> None:
        (self.objects / name).unlink(missing_ok=True)

    def call(self, name: str, method: str, request: bytes) -> bytes:
        return _embedded.call(str(self.objects / name), method, request)

    def call_many(self, method: str, calls: Iterable[tuple[str, bytes]]) -> Iterator[bytes]:
        return ordered_map(self._pool, lambda call: self.call(call[0], method, call[1]), calls,
                           window=2 * self.parallelism)

    def get_manifest(self, dataset: str) -> bytes | None:
        try:
            return (self.manifests / dataset).read_bytes()
        except FileNotFoundError:
            return None

    def put_manifest(self, dataset: str, data: bytes) -> None:
        _atomic_write(self.manifests / dataset, data, {})

    def delete_manifest(self, dataset: str) -> None:
        (self.manifests / dataset).unlink(missing_ok=True)
        _fsync_directory(self.manifests)

    def dataset_names(self) -> list[str]:
        return sorted(path.name for path in self.manifests.iterdir() if not path.name.startswith("."))

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _atomic_write(path: Path, data: bytes | pa.Buffer, attributes: dict[str, str]) -> None:
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(memoryview(data))
            for key, value in attributes.items():
                os.setxattr(file.fileno(), f"user.{key}", value.encode())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
