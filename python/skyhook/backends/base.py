"""What the client needs of a storage backend: a flat namespace of objects with
attributes, storage-side method calls on them, and dataset manifests."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator

import pyarrow as pa

from skyhook.errors import CorruptObjectError, TypeMismatchError, UnknownColumnError
from skyhook.protocol import Reply, decode_reply


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
    def get_manifest(self, dataset: str) -> bytes | None: ...

    @abstractmethod
    def put_manifest(self, dataset: str, data: bytes) -> None:
        """Publish a manifest atomically: readers see the old one or the new one."""

    @abstractmethod
    def delete_manifest(self, dataset: str) -> None: ...

    @abstractmethod
    def dataset_names(self) -> list[str]: ...

    def call_each(self, method: str, object_names: list[str], request: bytes, context: str,
                  parallel: bool = True) -> Iterator[Reply]:
        """Decoded replies of one request sent to each object, in order; a reply
        that reports an error raises it, naming context and the object."""
        calls = ((name, request) for name in object_names)
        replies = self.call_many(method, calls) if parallel else \
            (self.call(name, method, body) for name, body in calls)
        for name, encoded in zip(object_names, replies):
            reply = decode_reply(encoded, f"object {name}")
            try:
                reply.raise_for_status(f"{context} (object {name})")
            except (UnknownColumnError, TypeMismatchError) as error:
                # The client checked the request against the dataset's schema: the object disagrees with it.
                raise CorruptObjectError(f"{error}: the object is inconsistent with its dataset's schema") from None
            yield reply

    def close(self) -> None:
        """Release connections; the default backend holds none."""
