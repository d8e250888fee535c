"""Request fields every data-returning method shares (cpp/skyhook/protocol/result_options.h).
A field left None is absent from the request: storage takes its default."""

from __future__ import annotations

from dataclasses import dataclass

from skyhook.errors import InvalidRequestError
from skyhook.rpc.frame import HeaderValue

#: Codecs of a reply's IPC body (Arrow IPC buffer compression).
COMPRESSIONS = ("none", "lz4", "zstd")


def checked_compression(requested: str | None, default: str) -> str:
    """The codec a request asks for: requested, or the backend's default when None."""
    if requested is None:
        return default
    if requested not in COMPRESSIONS:
        raise InvalidRequestError(
            f"reply_compression must be one of {', '.join(COMPRESSIONS)} or None, not {requested!r}"
        )
    return requested


@dataclass(frozen=True, kw_only=True)
class ResultOptions:
    """How to encode the result."""

    #: "none", "lz4" or "zstd", for the reply's IPC body (storage: none).
    compression: str | None = None
    #: Rows per reply batch (storage: 64 Ki).
    batch_size: int | None = None
    #: The method fails with ResultTooLarge rather than reply with more (storage: 1 GiB).
    max_result_bytes: int | None = None
    #: Where in the object to start: the resume_row of the previous call's reply (storage: 0).
    start_row: int | None = None
    #: Push back rather than reply with more bytes than the object holds (storage: False).
    reply_within_object: bool | None = None
    #: Bytes of the object's earlier replies, which count towards its size (storage: 0).
    reply_bytes_before: int | None = None
    #: Send sorted integer columns as first differences, which compress several
    #: times better (storage: False); None asks for it whenever the reply is compressed.
    delta_sorted_integers: bool | None = None

    def header_fields(self) -> dict[str, HeaderValue]:
        delta = self.delta_sorted_integers
        if delta is None:
            delta = self.compression not in (None, "none")
        return {
            "compression": self.compression,
            "batch_size": self.batch_size,
            "max_result_bytes": self.max_result_bytes,
            "start_row": self.start_row,
            "reply_within_object": None if self.reply_within_object is None else int(self.reply_within_object),
            "reply_bytes_before": self.reply_bytes_before,
            "delta_sorted_integers": 1 if delta else None,
        }


@dataclass(frozen=True, kw_only=True)
class PushbackLimits:
    """When a loaded node declines work (the reply executed nothing and the
    client does it); absent limits take the node's defaults."""

    #: Decline when more skyhook calls than this are running on the node.
    max_in_flight: int | None = None
    #: Stop when the measured CPU per slice exceeds this (0: never).
    max_slice_cpu_ns: int | None = None

    def header_fields(self) -> dict[str, HeaderValue]:
        return {"max_in_flight": self.max_in_flight, "max_slice_cpu_ns": self.max_slice_cpu_ns}
