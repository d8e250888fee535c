"""Skyhook: Arrow-native programmable storage. Filters and projections run
inside storage; only results cross to the client."""

from skyhook.catalog.design import Design, SortKey
from skyhook.dataset import Dataset
from skyhook.distributed.plan import Plan
from skyhook.distributed.schedule import Schedule
from skyhook.distributed.target import TransformTarget
from skyhook.errors import (
    ClassCallsNotPermittedError,
    CorruptManifestError,
    CorruptObjectError,
    CorruptReplyError,
    DatasetChangedError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    InvalidRequestError,
    LimitExceededError,
    ObjectChangedError,
    ObjectNotFoundError,
    OutOfMemoryError,
    PermissionDeniedError,
    ResultTooLargeError,
    SchemaMismatchError,
    SkyhookError,
    SkyhookWarning,
    StorageError,
    StorageTimeoutError,
    StoreNotFoundError,
    TypeMismatchError,
    UnknownColumnError,
    UnsupportedVersionError,
    VersionNotFoundError,
)
from skyhook.execution.scan_options import AggregateKeywords, ScanKeywords, ScanOptions
from skyhook.execution.scanner import Scanner, ScanStatistics
from skyhook.ingest.csv_options import CsvOptions
from skyhook.ingest.write import WriteKeywords, WriteOptions
from skyhook.store import Store, connect

__version__ = "0.1.0"

__all__ = [
    "connect",
    "Store",
    "Dataset",
    "Plan",
    "TransformTarget",
    "Schedule",
    "Design",
    "SortKey",
    "Scanner",
    "ScanStatistics",
    "ScanOptions",
    "ScanKeywords",
    "AggregateKeywords",
    "WriteOptions",
    "WriteKeywords",
    "CsvOptions",
    "SkyhookError",
    "SkyhookWarning",
    "InvalidRequestError",
    "UnsupportedVersionError",
    "UnknownColumnError",
    "TypeMismatchError",
    "CorruptObjectError",
    "ResultTooLargeError",
    "ObjectNotFoundError",
    "DatasetNotFoundError",
    "DatasetExistsError",
    "StoreNotFoundError",
    "DatasetChangedError",
    "VersionNotFoundError",
    "StorageError",
    "StorageTimeoutError",
    "CorruptManifestError",
    "LimitExceededError",
    "ObjectChangedError",
    "CorruptReplyError",
    "PermissionDeniedError",
    "ClassCallsNotPermittedError",
    "OutOfMemoryError",
    "InvalidInputError",
    "SchemaMismatchError",
]
