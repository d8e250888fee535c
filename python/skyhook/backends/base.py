"""What the client needs of a storage backend: a flat namespace of objects with
attributes, storage-side method calls on them, dataset manifests published by
compare-and-swap, and a record of the writes in progress (for fsck)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from skyhook.errors import CorruptObjectError, CorruptReplyError, TypeMismatchError, UnknownColumnError
from skyhook.rpc.reply import Executed, Reply, decode_reply, merge_continuations
from skyhook.rpc.requests import DataRequest


@dataclass(frozen=True)
class StoredManifest:
    data: bytes
    #: Opaque; replace_manifest and delete_manifest act only if the manifest is still at it.
    version: object


@dataclass(frozen=True)
class PendingWriteRecord:
    dataset: str
    generation: str
    #: True when the writer is known dead (or silent for longer than the grace).
    abandoned: bool


class PendingWrite(ABC):
    """A write in progress, registered before its first object is stored so that
    fsck leaves its objects alone; finish() withdraws it."""

    def heartbeat(self) -> None:
        """Say the writer is still alive (after each object)."""

    @abstractmethod
    def finish(self) -> None: ...


class Backend(ABC):
    #: How replies travel back; compression pays off only across a network.
    reply_compression: str = "none"
    #: True when storage-side methods run in the client's own process.
    runs_in_process: bool = False

    @property
    @abstractmethod
    def uri(self) -> str: ...

    @abstractmethod
    def put_object(self, name: str, data: pa.Buffer, attributes: dict[str, str]) -> None:
        """Create or replace an object and its attributes atomically."""

    @abstractmethod
    def read_object(self, name: str) -> pa.Buffer:
        """The whole object, as a plain read (no storage-side processing)."""

    @abstractmethod
    def delete_object(self, name: str) -> None:
        """Remove an object; a missing object is not an error."""

    @abstractmethod
    def call(self, name: str, method: str, request: bytes) -> bytes:
        """Run a storage-side method on one object and return its encoded reply."""

    @abstractmethod
    def call_many(self, method: str, calls: Iterable[tuple[str, bytes]]) -> Iterator[bytes]:
        """Replies of many calls, in the order given, with a bounded number in flight.
        Closing the iterator early abandons calls not yet started."""

    @abstractmethod
    def object_names(self) -> list[str]:
        """Every object of the store (partitions, temporaries and anything else in its namespace)."""

    def partition_name(self, stored_name: str) -> str:
        """The partition object whose data a stored object holds: itself, or the
        one a temporary object is being written for."""
        return stored_name

    # Manifests are published atomically (readers see the old one or the new
    # one) and only by compare-and-swap, so no write is ever silently lost.

    @abstractmethod
    def get_manifest(self, dataset: str) -> StoredManifest | None: ...

    @abstractmethod
    def create_manifest(self, dataset: str, data: bytes) -> bool:
        """Publish the first manifest of a dataset; False if one exists."""

    @abstractmethod
    def replace_manifest(self, dataset: str, data: bytes, version: object) -> bool:
        """Replace the manifest if it is still at version; False if it changed or is gone."""

    @abstractmethod
    def delete_manifest(self, dataset: str, version: object) -> bool:
        """Remove the manifest if it is still at version; False if it changed or is gone."""

    @abstractmethod
    def dataset_names(self) -> list[str]: ...

    def check_index(self, object_names: list[str], repair: bool) -> list[str]:
        """Disagreements between the list of datasets and the manifests stored (given
        every object name), repaired if asked. None where the manifests are the list."""
        return []

    @abstractmethod
    def begin_write(self, dataset: str, generation: str) -> PendingWrite: ...

    @abstractmethod
    def pending_writes(self, grace_seconds: float) -> list[PendingWriteRecord]:
        """Writes begun and not finished; abandoned ones belong to dead writers."""

    @abstractmethod
    def forget_write(self, dataset: str, generation: str) -> None:
        """Drop the record of an abandoned write (after fsck removed its objects)."""

    def call_each(
        self, method: str, object_names: list[str], request: DataRequest, context: str, parallel: bool = True
    ) -> Iterator[Reply]:
        """Decoded replies of one request sent to each object, in order (method
        is the request's METHOD); a reply that reports an error raises it,
        naming context and the object. An object whose call a node limit ended
        early is continued with more calls, and its replies are merged into
        one; if any of them was pushed back, the object's reply is that push-back."""
        encoded_request = request.encode()
        calls = ((name, encoded_request) for name in object_names)
        replies = self.call_many(method, calls) if parallel else (self.call(name, method, body) for name, body in calls)
        for name, encoded in zip(object_names, replies):
            parts = [self._checked(encoded, name, context)]
            start = request.result.start_row or 0
            while parts[-1].resume_row is not None and parts[-1].executed is not Executed.NONE:
                if parts[-1].resume_row <= start:  # a node that never progresses must not loop us
                    raise CorruptReplyError(
                        f"{context} (object {name}): storage resumed at row "
                        f"{parts[-1].resume_row} after starting at {start}"
                    )
                start = parts[-1].resume_row
                continuation = request.resumed_at(start).encode()
                parts.append(self._checked(self.call(name, method, continuation), name, context))
            yield parts[-1] if parts[-1].executed is Executed.NONE else merge_continuations(parts)

    @staticmethod
    def _checked(encoded: bytes, name: str, context: str) -> Reply:
        reply = decode_reply(encoded, f"object {name}")
        try:
            reply.raise_for_status(f"{context} (object {name})")
        except (UnknownColumnError, TypeMismatchError) as error:
            # The client checked the request against the dataset's schema: the object disagrees with it.
            raise CorruptObjectError(f"{error}: the object is inconsistent with its dataset's schema") from None
        return reply

    def close(self) -> None:
        """Release connections; the default backend holds none."""
