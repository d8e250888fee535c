"""What the client needs of a storage backend: a flat namespace of objects with
attributes, storage-side method calls on them, and dataset manifests."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from skyhook.protocol import Reply, decode_reply, encode_request, merge_continuations


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

    def call_each(self, method: str, object_names: list[str], request: dict[str, Any], context: str,
                  parallel: bool = True) -> Iterator[Reply]:
        """Decoded replies of one request (header fields) sent to each object, in
        order; a reply that reports an error raises it, naming context and the
        object. An object whose call a node limit ended early is continued with
        more calls, and its replies are merged into one; if any of them was
        pushed back, the object's reply is that push-back."""
        encoded_request = encode_request(request)
        calls = ((name, encoded_request) for name in object_names)
        replies = self.call_many(method, calls) if parallel else \
            (self.call(name, method, body) for name, body in calls)
        for name, encoded in zip(object_names, replies):
            parts = [self._checked(encoded, f"{context} (object {name})")]
            while parts[-1].resume_row is not None and parts[-1].executed != "none":
                continuation = encode_request({**request, "start_row": parts[-1].resume_row})
                parts.append(self._checked(self.call(name, method, continuation), f"{context} (object {name})"))
            yield parts[-1] if parts[-1].executed == "none" else merge_continuations(parts)

    @staticmethod
    def _checked(encoded: bytes, context: str) -> Reply:
        reply = decode_reply(encoded)
        reply.raise_for_status(context)
        return reply

    def close(self) -> None:
        """Release connections; the default backend holds none."""
