"""The embedded store: a directory on one machine, no daemons.

Objects are files under ``objects/``, their attributes are the files' ``user.``
extended attributes, manifests are files under ``manifests/``. Every write goes
to a temporary file that is fsynced and renamed into place, so a crash never
leaves a half-written object or manifest. Storage-side methods run in this
process through the C++ extension, in a thread pool with the GIL released.

A manifest is compared and swapped under an exclusive ``flock`` of
``locks/<dataset>`` (lock files stay: removing one could let two writers hold
"the" lock at once). A write in progress holds an ``flock`` on its record
``pending/<dataset>.<generation>`` until it finishes; the kernel drops the lock
when the writer dies, which is how fsck tells abandoned writes from live ones.
Retirement records are files ``retired/<dataset>.<key>``, each written once;
earlier versions of a manifest are files ``versions/<dataset>/<version>``.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from skyhook import _embedded
from skyhook.backends.base import Backend
from skyhook.backends.object_store import (
    OpenedObject,
    PendingWrite,
    PendingWriteRecord,
    StoredManifest,
    VersionedObject,
)
from skyhook.backends.parallel import Admission, admitted, ordered_map
from skyhook.errors import InvalidRequestError, ObjectNotFoundError, SkyhookError, StorageError, StoreNotFoundError
from skyhook.names import check_dataset_name, object_owner

_MARKER = "skyhook-store"
# _atomic_write's temporary files: "." + the final name + "." + mkstemp's 8 random characters.
_TEMPORARY = re.compile(r"\.(?P<final>.+)\.[a-z0-9_]{8}")


class EmbeddedBackend(Backend):
    runs_in_process = True
    #: Replies never leave the process: compressing them is CPU spent twice for no bytes saved
    #: (lz4 was 8 % of a 1 % scan's process CPU, compressing and decompressing).
    reply_compression = "none"

    def __init__(self, root: str | os.PathLike, *, parallelism: int | None = None, create: bool = True) -> None:
        self.root = Path(root).absolute()
        self.objects = self.root / "objects"
        self.manifests = self.root / "manifests"
        self.locks = self.root / "locks"
        self.pending = self.root / "pending"
        self.retired = self.root / "retired"
        self.versions = self.root / "versions"
        self.parallelism = parallelism or os.cpu_count() or 1
        if not create and not (self.root / _MARKER).exists():
            raise StoreNotFoundError(f"no skyhook store at {self.root}")
        if self.root.exists() and any(self.root.iterdir()) and not (self.root / _MARKER).exists():
            raise SkyhookError(f"{self.root} exists and is not a skyhook store")
        for directory in (self.objects, self.manifests, self.locks, self.pending, self.retired, self.versions):
            directory.mkdir(parents=True, exist_ok=True)
        if not (self.root / _MARKER).exists():
            _atomic_write(self.root / _MARKER, b"skyhook embedded store, layout 1\n", {})
        self._pool = ThreadPoolExecutor(self.parallelism, thread_name_prefix="skyhook-scan")

    @property
    def uri(self) -> str:
        return self.root.as_uri()

    def put_object(self, name: str, data: pa.Buffer, attributes: dict[str, bytes | str]) -> None:
        # A partition object is synced (a name, once durable, is whole) but its
        # name is made durable with the others by the manifest write that names
        # it (_sync_object_names): a machine crash before that only loses
        # objects nothing names yet, which a resumed plan writes again. Any
        # other object (plans, logs) is its own commit point.
        path = self._object_path(name)
        _atomic_write(path, data, attributes, sync_directory=object_owner(name) is None)

    def create_object(self, name: str, data: bytes) -> bool:
        return _atomic_write(self._object_path(name), data, {}, exclusive=True)

    def read_object(self, name: str) -> pa.Buffer:
        try:
            with pa.memory_map(str(self._object_path(name))) as mapped:
                return mapped.read_buffer()
        except FileNotFoundError:
            raise ObjectNotFoundError(f"object {name} is missing from {self.uri}") from None

    def open_object(self, name: str) -> OpenedObject:
        try:
            descriptor = os.open(self._object_path(name), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ObjectNotFoundError(f"object {name} is missing from {self.uri}") from None
        try:
            return _OpenedFile(descriptor)
        finally:
            os.close(descriptor)

    def object_attribute(self, name: str, key: str) -> bytes | None:
        try:
            return os.getxattr(self._object_path(name), f"user.{key}")
        except FileNotFoundError:
            raise ObjectNotFoundError(f"object {name} is missing from {self.uri}") from None
        except OSError as error:
            if error.errno == errno.ENODATA:
                return None
            raise

    def read_versioned_object(self, name: str) -> VersionedObject:
        # Bytes and attributes of one open file: a rename meanwhile does not mix them.
        # Its version is the file itself, which every rewrite replaces.
        try:
            file = open(self._object_path(name), "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            raise ObjectNotFoundError(f"object {name} is missing from {self.uri}") from None
        with file:
            status = os.fstat(file.fileno())
            return VersionedObject(
                pa.py_buffer(file.read()), _user_attributes(file.fileno()), (status.st_dev, status.st_ino)
            )

    def replace_object_at(self, name: str, data: bytes, attributes: dict[str, bytes], version: object) -> bool:
        path = self._object_path(name)
        with _locked_object(path) as descriptor:
            status = os.fstat(descriptor)
            if (status.st_dev, status.st_ino) != version:
                return False
            _atomic_write(path, data, {**_user_attributes(descriptor), **attributes})
            return True

    def copy_object(self, source: str, target: str) -> None:
        # A copy, not a hard link: attributes are set on a file in place (the
        # storage-side SetXattr), which a link would share with its source.
        try:
            file = open(self._object_path(source), "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            raise ObjectNotFoundError(f"object {source} is missing from {self.uri}") from None
        with file:
            _atomic_write(self._object_path(target), file, _user_attributes(file.fileno()))
        # Its statistics and indexes too, as copy_from copies the omap (they name the data, which is the same).
        try:
            _embedded.copy_omap(str(self._object_path(source)), str(self._object_path(target)))
        except ValueError as error:
            raise StorageError(f"cannot copy the omap of {source} to {target}: {error.args[-1]}") from None

    def delete_object(self, name: str) -> None:
        self._object_path(name).unlink(missing_ok=True)

    def object_names(self) -> list[str]:
        return sorted(path.name for path in self.objects.iterdir())

    def partition_name(self, stored_name: str) -> str:
        temporary = _TEMPORARY.fullmatch(stored_name)
        return temporary["final"] if temporary else stored_name

    def abandoned_temporary(self, stored_name: str) -> bool:
        # An in-place rewrite holds its object's lock while its temporary file exists.
        final = self.partition_name(stored_name)
        if final == stored_name:
            return False
        try:
            descriptor = os.open(self._object_path(final), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False  # a new object's: fsck's own rules apply
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(descriptor)

    def call(self, name: str, method: str, request: bytes) -> bytes:
        return _embedded.call(str(self._object_path(name)), method, request)

    def call_many(
        self, method: str, calls: Iterable[tuple[str, bytes]], admission: Admission | None = None
    ) -> Iterator[bytes]:
        return ordered_map(
            self._pool,
            lambda call: self.call(call[0], method, call[1]),
            admitted(calls, admission),
            window=2 * self.parallelism,
        )

    # The manifest's version is its content: every manifest names a generation
    # of its own, so equal content means the same publication.

    def get_manifest(self, dataset: str) -> StoredManifest | None:
        data = self._read_manifest(dataset)
        return None if data is None else StoredManifest(data, data)

    def create_manifest(self, dataset: str, data: bytes) -> bool:
        with self._manifest_lock(dataset):
            if self._read_manifest(dataset) is not None:
                return False
            self._sync_object_names()
            _atomic_write(self._manifest_path(dataset), data, {})
            return True

    def replace_manifest(self, dataset: str, data: bytes, version: object) -> bool:
        with self._manifest_lock(dataset):
            if self._read_manifest(dataset) != version:
                return False
            self._sync_object_names()
            _atomic_write(self._manifest_path(dataset), data, {})
            return True

    def _sync_object_names(self) -> None:
        """The names of the objects put so far made durable, before a manifest
        (by whichever process wrote them) can name them: one fsync for all."""
        _fsync_directory(self.objects)

    def delete_manifest(self, dataset: str, version: object) -> bool:
        with self._manifest_lock(dataset):
            if self._read_manifest(dataset) != version:
                return False
            self._manifest_path(dataset).unlink()
            _fsync_directory(self.manifests)
            return True

    def dataset_names(self) -> list[str]:
        return sorted(path.name for path in self.manifests.iterdir() if not path.name.startswith("."))

    def begin_write(self, dataset: str, generation: str) -> PendingWrite:
        return _LockedRecord(self.pending / f"{dataset}.{generation}")

    def pending_writes(self, grace_seconds: float) -> list[PendingWriteRecord]:
        # Exact, so the grace is not needed: a record whose lock can be taken
        # while it is still linked belongs to a dead writer.
        records = []
        for path in self.pending.iterdir():
            dataset, dot, generation = path.name.partition(".")
            if dataset and dot and not path.name.startswith("."):
                records.append(PendingWriteRecord(dataset, generation, _abandoned(path)))
        return records

    def forget_write(self, dataset: str, generation: str) -> None:
        (self.pending / f"{dataset}.{generation}").unlink(missing_ok=True)

    def put_retirement(self, dataset: str, key: str, record: bytes) -> None:
        _atomic_write(self._retirement_path(dataset, key), record, {})

    def retirement_records(self) -> list[tuple[str, str, bytes]]:
        records = []
        for path in self.retired.iterdir():
            dataset, dot, key = path.name.partition(".")
            if dataset and dot and not path.name.startswith("."):
                try:
                    records.append((dataset, key, path.read_bytes()))
                except FileNotFoundError:
                    continue  # collected meanwhile
        return records

    def drop_retirement(self, dataset: str, key: str) -> None:
        self._retirement_path(dataset, key).unlink(missing_ok=True)

    def put_archived_manifest(self, dataset: str, version: int, data: bytes) -> None:
        path = self._archive_path(dataset, version)
        path.parent.mkdir(exist_ok=True)
        _atomic_write(path, data, {})

    def archived_manifest(self, dataset: str, version: int) -> bytes | None:
        try:
            return self._archive_path(dataset, version).read_bytes()
        except FileNotFoundError:
            return None

    def archived_versions(self, dataset: str) -> list[int]:
        check_dataset_name(dataset)
        try:
            names = [path.name for path in (self.versions / dataset).iterdir()]
        except FileNotFoundError:
            return []
        return sorted(int(name) for name in names if name.isdigit())

    def drop_archived_manifest(self, dataset: str, version: int) -> None:
        self._archive_path(dataset, version).unlink(missing_ok=True)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _object_path(self, name: str) -> Path:
        """objects/NAME, refusing any name that could lead outside objects/."""
        if name in ("", ".", "..") or "/" in name or "\0" in name:
            raise InvalidRequestError(f"invalid object name {name!r}")
        return self.objects / name

    def _manifest_path(self, dataset: str) -> Path:
        check_dataset_name(dataset)
        return self.manifests / dataset

    def _archive_path(self, dataset: str, version: int) -> Path:
        check_dataset_name(dataset)
        return self.versions / dataset / str(int(version))

    def _retirement_path(self, dataset: str, key: str) -> Path:
        """retired/DATASET.KEY, refusing any name that could lead outside retired/."""
        name = f"{dataset}.{key}"
        if name.startswith(".") or "/" in name or "\0" in name:
            raise InvalidRequestError(f"invalid retirement record name {name!r}")
        return self.retired / name

    def _read_manifest(self, dataset: str) -> bytes | None:
        try:
            return self._manifest_path(dataset).read_bytes()
        except FileNotFoundError:
            return None

    @contextmanager
    def _manifest_lock(self, dataset: str) -> Iterator[None]:
        check_dataset_name(dataset)
        descriptor = os.open(self.locks / dataset, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)


class _OpenedFile(OpenedObject):
    """An object file as opened: attributes and bytes from the one descriptor,
    so a file renamed over it meanwhile (a rewrite) is never mixed in; its
    bytes are a read-only map of that file, and reads are views of the map."""

    def __init__(self, descriptor: int) -> None:
        self.size = os.fstat(descriptor).st_size
        self.attributes = {
            key.removeprefix("user."): os.getxattr(descriptor, key)
            for key in os.listxattr(descriptor)
            if key.startswith("user.")
        }
        mapped = mmap.mmap(descriptor, self.size, prot=mmap.PROT_READ) if self.size else b""
        self._data = pa.py_buffer(mapped)

    def read(self, ranges: list[tuple[int, int]]) -> list[pa.Buffer]:
        return [self._data.slice(offset, length) for offset, length in ranges]


class _LockedRecord(PendingWrite):
    """A pending-write record that is locked from the moment it has its name:
    created under a temporary name, locked, then renamed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            os.replace(temporary, path)
        except BaseException:
            os.close(descriptor)
            Path(temporary).unlink(missing_ok=True)
            raise
        self._descriptor = descriptor

    def finish(self) -> None:
        # Unlink while still holding the lock: a record fsck can lock while it is
        # linked is then always abandoned.
        if self._descriptor is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._descriptor)
            self._descriptor = None


def _abandoned(path: Path) -> bool:
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False  # finished meanwhile
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its writer holds the lock: alive
        try:
            return os.stat(path).st_ino == os.fstat(descriptor).st_ino
        except FileNotFoundError:
            return False
    finally:
        os.close(descriptor)


@contextmanager
def _locked_object(path: Path) -> Iterator[int]:
    """An exclusive flock on the file at path, the one the storage-side transform
    takes (cpp/adapters/embedded/file_object_context.cc): a lock taken on a file
    renamed over meanwhile is taken again on the new one."""
    while True:
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ObjectNotFoundError(f"object {path.name} is missing") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            locked = os.fstat(descriptor)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                raise ObjectNotFoundError(f"object {path.name} was deleted meanwhile") from None
            if (current.st_dev, current.st_ino) == (locked.st_dev, locked.st_ino):
                yield descriptor
                return
        finally:
            os.close(descriptor)


def _user_attributes(descriptor: int) -> dict[str, bytes]:
    return {key[5:]: os.getxattr(descriptor, key) for key in os.listxattr(descriptor) if key.startswith("user.")}


def _atomic_write(
    path: Path,
    data: bytes | pa.Buffer | BinaryIO,
    attributes: dict[str, str] | dict[str, bytes],
    *,
    exclusive: bool = False,
    sync_directory: bool = True,
) -> bool:
    """data: the bytes, or an open file whose content to copy (in the kernel).
    exclusive: only if nothing is at path (linked, not renamed: a link fails
    if the name exists); False if something was. The file is synced before
    the rename (a crash never leaves a name on part of it); its name is
    durable once its directory is synced: here, unless the caller does that later."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            if isinstance(data, (bytes, pa.Buffer)):
                file.write(memoryview(data))
            else:
                _copy_file(data.fileno(), file.fileno())
            for key, value in attributes.items():
                os.setxattr(file.fileno(), f"user.{key}", value if isinstance(value, bytes) else value.encode())
            file.flush()
            os.fsync(file.fileno())
        if exclusive:
            try:
                os.link(temporary, path)
            except FileExistsError:
                return False
            finally:
                Path(temporary).unlink(missing_ok=True)
        else:
            os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if sync_directory:
        _fsync_directory(path.parent)
    return True


def _copy_file(source: int, target: int) -> None:
    # copy_file_range: the kernel copies, or shares the extents on a filesystem that can.
    try:
        while os.copy_file_range(source, target, 1 << 30):
            pass
    except OSError as error:  # a filesystem without it
        if error.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            raise
        while chunk := os.read(source, 1 << 20):
            os.write(target, chunk)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
