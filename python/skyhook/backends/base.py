"""What the client needs of a storage backend: an object store
(backends/object_store.py) and a caller of storage-side methods on its objects."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

from skyhook.backends.object_store import ObjectStore
from skyhook.backends.parallel import Admission, admitted, ordered_map
from skyhook.errors import CorruptObjectError, CorruptReplyError, TypeMismatchError, UnknownColumnError
from skyhook.rpc.reply import Executed, Reply, decode_reply, merge_continuations
from skyhook.rpc.requests import DataRequest
from skyhook.rpc.statistics import BYTES_RETURNED

#: Where reply bodies are decoded, beside the calls still running in storage.
_decoding = ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="skyhook-reply")
#: Replies taken from the calls ahead of the one the caller reads (decoding meanwhile).
DECODE_AHEAD = 2 * (os.cpu_count() or 1)


class MethodCaller(ABC):
    """Storage-side methods run on objects, one call or many."""

    #: How replies travel back unless a request says otherwise: zstd shrinks a
    #: sorted key column 24x where lz4 does 4.7x (bench/replies.py).
    reply_compression: str = "zstd"
    #: True when storage-side methods run in the client's own process.
    runs_in_process: bool = False

    #: False where a method that writes answers only success or an error class
    #: (Ceph returns no output of a write): the reason is asked of a checking method.
    writer_replies: bool = True

    @property
    def storage_hosts(self) -> int:
        """Hosts that serve calls at once (the cost model samples one object per host)."""
        return 1

    @abstractmethod
    def call(self, name: str, method: str, request: bytes) -> bytes:
        """Run a storage-side method on one object and return its encoded reply."""

    @abstractmethod
    def call_many(
        self, method: str, calls: Iterable[tuple[str, bytes]], admission: Admission | None = None
    ) -> Iterator[bytes]:
        """Replies of many calls, in the order given, with a bounded number in flight.
        Closing the iterator early abandons calls not yet started; so does
        admission, checked before each call starts (the replies end early)."""

    def call_each(
        self,
        object_names: list[str],
        request: DataRequest,
        context: str,
        parallel: bool = True,
        admission: Admission | None = None,
    ) -> Iterator[Reply]:
        """Decoded replies of one request sent to each object, in order, each
        body decoded into rows (when parallel, on threads of their own while
        later calls run); a reply that reports an error raises it,
        naming context and the object. An object whose call a node limit ended
        early is continued with more calls (each told the bytes replied before,
        which count towards the object's size), and its replies are merged into
        one; if any of them was pushed back, the object's reply is that push-back.
        admission: how many of the calls may start (call_many); the replies of
        those that did, in order."""
        method, encoded_request = request.METHOD, request.encode()
        calls = [(name, encoded_request) for name in object_names]
        replies = (
            self.call_many(method, calls, admission)
            if parallel
            else (self.call(name, method, body) for name, body in admitted(calls, admission))
        )
        decode = lambda call: self._whole(*call, request, context).with_rows()  # noqa: E731
        answers = zip(object_names, replies)
        yield from (ordered_map(_decoding, decode, answers, window=DECODE_AHEAD) if parallel else map(decode, answers))

    def _whole(self, name: str, encoded: bytes, request: DataRequest, context: str) -> Reply:
        """An object's reply, continued while a node limit ended its calls early."""
        parts = [self._checked(encoded, name, context)]
        start = request.result.start_row or 0
        while parts[-1].resume_row is not None and parts[-1].executed is not Executed.NONE:
            if parts[-1].resume_row <= start:  # a node that never progresses must not loop us
                raise CorruptReplyError(
                    f"{context} (object {name}): storage resumed at row {parts[-1].resume_row} after starting at {start}"
                )
            start = parts[-1].resume_row
            replied = sum(part.statistics.get(BYTES_RETURNED, 0) for part in parts)
            continuation = request.resumed_at(start, replied).encode()
            parts.append(self._checked(self.call(name, request.METHOD, continuation), name, context))
        return merge_continuations(parts)

    @staticmethod
    def _checked(encoded: bytes, name: str, context: str) -> Reply:
        reply = decode_reply(encoded, f"object {name}")
        try:
            reply.raise_for_status(f"{context} (object {name})")
        except (UnknownColumnError, TypeMismatchError) as error:
            # The client checked the request against the dataset's schema: the object disagrees with it.
            raise CorruptObjectError(f"{error}: the object is inconsistent with its dataset's schema") from None
        return reply


class Backend(ObjectStore, MethodCaller):
    """A storage backend: an object store whose objects run storage-side methods."""

    #: Records of the workload log kept per dataset (None: the environment's setting; 0: off).
    workload_log_records: int | None = None
    #: The link's rate for the cost model (None: measured on the connection's plain reads).
    link_bytes_per_second: float | None = None

    def close(self) -> None:
        """Release connections; the default backend holds none."""
