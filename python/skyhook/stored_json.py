"""JSON read from the store, decoded within bounds. Any writer of a namespace can
store any bytes where skyhook keeps plans, workload logs, retirement records and
manifest metadata, so their size and nesting are checked before anything walks
them: Python's decoder and everything after it (repr, comparisons) recurse."""

from __future__ import annotations

import json
import re
from typing import Any

from skyhook.errors import first_line

#: The deepest nesting any record skyhook writes needs (a plan: object, steps, step, list).
MAX_DEPTH = 32
#: A plan of a dataset of 100,000 objects is about 30 MB.
MAX_BYTES = 256 << 20

# A JSON string (escapes included), then the brackets left once strings are gone.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


class StoredJSONError(ValueError):
    """Stored JSON that is malformed or beyond the bounds (a ValueError, like json's own)."""


def load(data: bytes | str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """The decoded value of data; StoredJSONError if it is not JSON, is larger
    than max_bytes or nests containers more than max_depth deep."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise StoredJSONError(f"{len(raw):,} bytes of JSON, over the {max_bytes:,}-byte bound")
    try:
        # The C decoder gives up past the interpreter's recursion limit; nothing else recurses before the check.
        value = json.loads(raw)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise StoredJSONError(f"malformed JSON: {first_line(error)}") from None
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise StoredJSONError(f"JSON nested {depth} deep, over the bound of {max_depth}")
    return value


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of brackets outside strings, for valid JSON (on which
    the string pattern is linear: every string it starts at ends)."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", raw))
    depth = deepest = 0
    for code in brackets:
        depth += 1 if code in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest
