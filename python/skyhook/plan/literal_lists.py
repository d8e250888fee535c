"""Long IN lists of plain literals taken out of a text filter before it is
parsed: tokenizing and parsing 100,000 values one by one takes seconds, a
regular expression and int()/float() on each value a fraction of that.

Each list ``(1, 2, 3, ...)`` after ``in`` becomes a placeholder name padded to
the list's own length, so every other character keeps its offset (a parse
error still points at what the user typed). Only numbers and simple quoted
strings qualify, which mean the same in the Python and the SQL form; any
other list (NULL, expressions, escapes) is left for the parser.
"""

from __future__ import annotations

import re
from typing import Any

_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_STRING = r"'[^'\n]*'"
# Atomic elements and possessive repetition: a list that turns out not to be
# one (an expression or NULL before its end) fails in one pass. Backtracking
# into the digits of each element took exponential time (2 s for 10 values).
_ELEMENT = rf"(?>{_NUMBER}|{_STRING})"
_SCAN = re.compile(
    rf"""'(?:[^']|'')*'
    |"[^"]*"
    |(?<![\w.])(?i:in)\s*(?P<open>[(\[])(?P<body>\s*+{_ELEMENT}(?:\s*+,\s*+{_ELEMENT})*+\s*+)(?P<close>[)\]])""",
    re.VERBOSE,
)
_VALUE = re.compile(rf"{_NUMBER}|{_STRING}")
_INTEGER = re.compile(r"-?\d+")
#: Lists shorter than this are left to the parser (the placeholder must fit).
MIN_LENGTH = 32
PREFIX = "_skyhook_in_list_"


def extract_lists(text: str) -> tuple[str, dict[str, list[Any]]]:
    """text with its long literal IN lists as placeholders, and each placeholder's values."""
    if "\\" in text or text.count(",") < 8:  # escapes could hide a quote's end; short lists parse fast
        return text, {}
    lists: dict[str, list[Any]] = {}

    def replace(match: re.Match[str]) -> str:
        body = match.group("body")
        if body is None or len(body) < MIN_LENGTH or {match["open"], match["close"]} not in ({"(", ")"}, {"[", "]"}):
            return match.group()
        name = f"{PREFIX}{len(lists)}"
        lists[name] = [_value(value) for value in _VALUE.findall(body)]
        start = match.start("body") - match.start()
        return match.group()[:start] + name.ljust(len(body)) + match["close"]

    return _SCAN.sub(replace, text), lists


def _value(text: str) -> Any:
    if text[0] == "'":
        return text[1:-1]
    return int(text) if _INTEGER.fullmatch(text) else float(text)
