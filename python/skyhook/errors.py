"""Exceptions raised by skyhook; storage-side error codes map onto them (rpc/error_codes.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


class SkyhookError(Exception):
    """Base of every error skyhook raises."""


class SkyhookWarning(Warning):
    """Base of every warning skyhook gives (the CLI prints these, on one line each)."""


class ClassCallsRefusedWarning(SkyhookWarning, RuntimeWarning):
    """The user may not call the object class: the work runs at the client instead."""


class InvalidRequestError(SkyhookError, ValueError):
    """A request (filter, projection, option) that storage cannot execute."""


class InvalidInputError(SkyhookError, ValueError):
    """Data to write that cannot be read as a table: the message names the file,
    line and column (or the input) at fault. Nothing was stored."""


class SchemaMismatchError(InvalidInputError):
    """Data whose columns or types do not fit the dataset (or the other files) it joins."""


class UnsupportedVersionError(SkyhookError):
    """The other side speaks a newer protocol version."""


class UnknownColumnError(SkyhookError, KeyError):
    """A column named in a request does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class TypeMismatchError(SkyhookError, TypeError):
    """A value or column has a type the operation cannot use."""


class CorruptObjectError(SkyhookError):
    """An object in storage is not a readable partition."""


class ResultTooLargeError(SkyhookError):
    """A storage reply would exceed the configured size limit."""


class ObjectNotFoundError(SkyhookError):
    """An object the manifest names is missing from storage."""


class DatasetNotFoundError(SkyhookError, KeyError):
    """No dataset of that name exists in the store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StoreNotFoundError(SkyhookError):
    """connect(..., create=False) found no store at the URI."""


class DatasetExistsError(SkyhookError):
    """A dataset of that name exists and the write did not ask to replace it."""


class VersionNotFoundError(SkyhookError, KeyError):
    """The dataset has no kept version of that number, tag or time."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DatasetChangedError(SkyhookError):
    """The version of a dataset asked for is gone: a pickled dataset was overwritten
    since, or a scan of a replaced version outlived the retention of its objects."""


class LimitExceededError(SkyhookError):
    """A storage call needs more time or memory than the node allows."""


class ObjectChangedError(SkyhookError):
    """An object was rewritten by another writer since it was read: nothing was written."""


class CorruptManifestError(SkyhookError):
    """A dataset's manifest is unreadable or names objects outside the dataset."""


class StorageError(SkyhookError):
    """Storage failed for a reason of its own (a bug or an I/O failure)."""


class StorageTimeoutError(StorageError, TimeoutError):
    """Storage did not answer within the client's operation timeout."""


class CorruptReplyError(StorageError):
    """A storage reply is not a well-formed skyhook reply (damaged on its way or a storage bug)."""


class PermissionDeniedError(SkyhookError, PermissionError):
    """Storage refused an operation to this user (in Ceph: its capabilities)."""


class ClassCallsNotPermittedError(PermissionDeniedError):
    """The user may read objects but not call the skyhook object class."""


class OutOfMemoryError(SkyhookError, MemoryError):
    """The client ran out of memory decoding an object."""


def first_line(error: BaseException) -> str:
    """The gist of a (possibly multi-line) library error, for our own messages."""
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def options_from(options_type: type[T], keywords: Mapping[str, Any], method: str) -> T:
    """The options dataclass of keywords; InvalidRequestError naming the first
    keyword that method does not take, and those it takes."""
    known = sorted(field.name for field in fields(options_type))
    unknown = sorted(set(keywords) - set(known))
    if unknown:
        raise InvalidRequestError(f"{method} takes no option {unknown[0]!r}; it takes {', '.join(known)}")
    return options_type(**keywords)
