"""Status codes of reply headers (cpp/skyhook/errors/error.h) and the
exception each raises at the client."""

from __future__ import annotations

from enum import IntEnum

from skyhook.errors import (
    CorruptObjectError,
    InvalidRequestError,
    LimitExceededError,
    ObjectChangedError,
    ObjectNotFoundError,
    ResultTooLargeError,
    SkyhookError,
    StorageError,
    TypeMismatchError,
    UnknownColumnError,
    UnsupportedVersionError,
)


class ErrorCode(IntEnum):
    """skyhook::ErrorCode, member for member (kInvalidRequest: INVALID_REQUEST)."""

    OK = 0
    INVALID_REQUEST = 1
    UNSUPPORTED_VERSION = 2
    UNKNOWN_COLUMN = 3
    TYPE_MISMATCH = 4
    CORRUPT_OBJECT = 5
    RESULT_TOO_LARGE = 6
    NOT_FOUND = 7
    INTERNAL = 8
    PUSHED_BACK = 9  # internal to a method: a reply that executed nothing; never sent
    LIMIT_EXCEEDED = 10
    CONFLICT = 11


#: The exception of every code a reply carries.
ERROR_BY_CODE: dict[int, type[SkyhookError]] = {
    ErrorCode.INVALID_REQUEST: InvalidRequestError,
    ErrorCode.UNSUPPORTED_VERSION: UnsupportedVersionError,
    ErrorCode.UNKNOWN_COLUMN: UnknownColumnError,
    ErrorCode.TYPE_MISMATCH: TypeMismatchError,
    ErrorCode.CORRUPT_OBJECT: CorruptObjectError,
    ErrorCode.RESULT_TOO_LARGE: ResultTooLargeError,
    ErrorCode.NOT_FOUND: ObjectNotFoundError,
    ErrorCode.INTERNAL: StorageError,
    ErrorCode.LIMIT_EXCEEDED: LimitExceededError,
    ErrorCode.CONFLICT: ObjectChangedError,
}
