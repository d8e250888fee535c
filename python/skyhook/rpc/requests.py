"""Typed requests, one per storage-side method, mirroring cpp/skyhook/protocol/
(scan_request.h, plan_request.h, describe_request.h, column_request.h, transform_request.h) field for
field."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import ClassVar, TypeVar

from skyhook.rpc.frame import HeaderValue, encode_request_frame
from skyhook.rpc.result_options import PushbackLimits, ResultOptions

_Request = TypeVar("_Request", bound="DataRequest")

#: Methods that write their object (its omap): on RADOS they run as write
#: operations, whose replies the OSD returns up to osd_max_write_op_reply_len
#: (raised to 64 KiB by skyhook.dev.cluster; Pacific's default is 64 bytes).
WRITING_METHODS = frozenset({"analyze", "create_index", "drop_index"})
#: Methods that change their object: those, and the transform (a reading call
#: on RADOS, as its reply can be long; the OSD applies its writes all the same).
CHANGING_METHODS = WRITING_METHODS | {"transform"}


@dataclass(frozen=True, kw_only=True)
class DataRequest(ABC):
    """A request of a method that returns data: it may stop at a node limit and
    be continued from the row its reply names."""

    METHOD: ClassVar[str]
    result: ResultOptions = ResultOptions()
    pushback: PushbackLimits = PushbackLimits()

    def encode(self) -> bytes:
        return encode_request_frame(
            {
                "method": self.METHOD,
                **self._method_fields(),
                **self.result.header_fields(),
                **self.pushback.header_fields(),
            }
        )

    def resumed_at(self: _Request, row: int, bytes_before: int | None = None) -> _Request:
        """The same request, continued from row of the object after replies of bytes_before."""
        return replace(self, result=replace(self.result, start_row=row, reply_bytes_before=bytes_before))

    @abstractmethod
    def _method_fields(self) -> dict[str, HeaderValue]:
        """The fields of this method (beyond the shared ones)."""


@dataclass(frozen=True, kw_only=True)
class ScanRequest(DataRequest):
    """Which rows and columns of one object."""

    METHOD: ClassVar[str] = "scan"
    #: A Substrait ExtendedExpression with one boolean expression; None keeps every row.
    filter: bytes | None = None
    #: A Substrait ExtendedExpression, one named expression per output column;
    #: None returns every column, an empty one row counts only.
    projection: bytes | None = None

    def _method_fields(self) -> dict[str, HeaderValue]:
        return {"filter": self.filter, "projection": self.projection}


@dataclass(frozen=True, kw_only=True)
class PlanRequest(DataRequest):
    """A Substrait plan whose one named table is the object."""

    METHOD: ClassVar[str] = "execute_plan"
    plan: bytes  # a serialized substrait.Plan

    def _method_fields(self) -> dict[str, HeaderValue]:
        return {"plan": self.plan}


@dataclass(frozen=True)
class DescribeRequest:
    """Per-column statistics of one object: no fields beyond the method."""

    METHOD: ClassVar[str] = "describe"

    def encode(self) -> bytes:
        return encode_request_frame({"method": self.METHOD})


@dataclass(frozen=True)
class AnalyzeRequest(DescribeRequest):
    """Compute and keep the object's statistics per column and zone (writes its omap)."""

    METHOD: ClassVar[str] = "analyze"


@dataclass(frozen=True)
class SecondaryDesignRequest(DescribeRequest):
    """The statistics and indexes the object's omap holds for its current data."""

    METHOD: ClassVar[str] = "secondary_design"


@dataclass(frozen=True)
class IndexRequest:
    """Build (create_index) or remove (drop_index) the index of one column of an object."""

    column: str
    drop: bool = False

    @property
    def METHOD(self) -> str:  # noqa: N802 - the name every request has
        return "drop_index" if self.drop else "create_index"

    def encode(self) -> bytes:
        return encode_request_frame({"method": self.METHOD, "column": self.column})


@dataclass(frozen=True)
class TransformRequest:
    """Rewrite one object to a design, if its design is still at a generation
    (method "transform"), or only check that it could ("transform_check")."""

    METHOD: ClassVar[str] = "transform"
    design: bytes  # a skyhook.design attribute value in request form (catalog/design.py)
    expected_generation: int
    method: str = METHOD
    #: The rows the new object holds: an encoded ScanRequest whose filter keeps
    #: them and whose projection (if any) computes every column (None: all, unchanged).
    rows: bytes | None = None

    def encode(self) -> bytes:
        return encode_request_frame(
            {
                "method": self.method,
                "design": self.design,
                "expected_generation": self.expected_generation,
                "rows": self.rows,
            }
        )
