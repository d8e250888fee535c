"""SQL-style filter text (``price > 10 AND flag = 'R'``) rewritten into the
Python form plan/where.py parses, keeping each piece's position in the
original text so a parse error points at what the user typed.

``=`` and ``<>`` become ``==`` and ``!=``; AND/OR/NOT/IN/IS in any case the
Python keywords; NULL/TRUE/FALSE the Python constants; ``x [NOT] BETWEEN a AND b``
becomes ``x [not] in between(a, b)`` and ``x [NOT] LIKE 'p'`` (or ILIKE)
``x [not] in like('p')``, which where.py turns into comparisons and string matches.
A double-quoted name of a column is that column (SQL's quoted identifier:
``"Dep Delay" > 0``), written as a placeholder identifier; ``DATE '...'`` and
``TIMESTAMP '...'`` are their text, which takes the type of the column it is
compared with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<sql_string>'(?:[^']|'')*')
    |(?P<string>"(?:[^"\\]|\\.)*")
    |(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<word>[A-Za-z_][A-Za-z_0-9]*)
    |(?P<operator><>|!=|<=|>=|==|=|<|>)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_KEYWORDS = {"and", "or", "not", "in", "is"}  # Python's keywords: never column names of a text filter
_CONSTANTS = {"null": "None", "true": "True", "false": "False"}
_OPERATORS = {"=": "==", "<>": "!="}
_TYPED_LITERALS = {"date", "timestamp"}  # their text takes the column's type (where.py)
#: The matches where.py takes as the right side of ``in``.
MATCHES = ("between", "like", "ilike")


@dataclass
class _Token:
    kind: str
    text: str
    start: int


@dataclass
class Rewritten:
    """The Python form, and for each of its characters the offset in the original text."""

    parts: list[str] = field(default_factory=list)  # joined once: growing one string is quadratic
    origins: list[int] = field(default_factory=list)
    #: Placeholder identifier -> the column a double-quoted name named.
    quoted: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, text: str, origin: int) -> None:
        if not self.origins:
            text = text.lstrip()  # a leading space would be an indent
        self.parts.append(text)
        self.origins.extend([origin] * len(text))

    def origin(self, offset: int) -> int:
        """The original offset of the rewritten text's offset (0-based)."""
        if not self.origins:
            return 0
        return self.origins[min(max(offset, 0), len(self.origins) - 1)]


def quotes_a_column(text: str, columns: set[str]) -> bool:
    """Whether text has a double-quoted name of a column (then it is SQL-style)."""
    if '"' not in text:
        return False
    return any(token.kind == "string" and _unquoted(token) in columns for token in _tokens(text))


def rewrite_sql(text: str, columns: set[str]) -> Rewritten:
    """The Python form of a SQL-style filter; words naming columns stay columns."""
    tokens = _tokens(text)
    # DATE '1992-01-05' and TIMESTAMP '...': their text.
    tokens = [
        token
        for token, after in zip(tokens, [*tokens[1:], None])
        if not (_typed_literal(token, columns) and after is not None and after.kind == "sql_string")
    ]
    out = Rewritten()
    # Open BETWEENs, by the parenthesis depth they started at: "and" separates their
    # bounds, and the upper bound ends at the next and/or or ")" of that depth.
    betweens: list[tuple[int, bool]] = []  # (depth, seen the "and")
    depth = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        word = _keyword(token, columns)
        if betweens and betweens[-1][0] == depth and _ends_bound(token, word, betweens[-1][1]):
            opened, seen_and = betweens.pop()
            if seen_and:
                out.add(")", token.start)
                continue  # the token itself is written next round
            out.add(", ", token.start)  # the "and" between the bounds
            betweens.append((opened, True))
            index += 1
            continue
        depth += {"(": 1, ")": -1}.get(token.text, 0)
        negated = word == "not" and index + 1 < len(tokens) and _keyword(tokens[index + 1], columns) in MATCHES
        if negated:  # NOT LIKE -> not in like(...)
            out.add(" not", token.start)
            index += 1
            token, word = tokens[index], _keyword(tokens[index], columns)
        if word in MATCHES:
            out.add(f" in {word}(", token.start)
            if word == "between":
                betweens.append((depth, False))
            elif index + 1 < len(tokens):  # LIKE takes one pattern
                index += 1
                out.add(_python_text(tokens[index], columns) + ")", tokens[index].start)
        elif token.kind == "string" and _unquoted(token) in columns:
            placeholder = f"_quoted_column_{len(out.quoted)}"
            out.quoted[placeholder] = _unquoted(token)
            out.add(" " + placeholder, token.start)
        else:
            out.add(" " + _python_text(token, columns), token.start)
        index += 1
    while betweens:
        betweens.pop()
        out.add(")", len(text))
    return out


def _tokens(text: str) -> list[_Token]:
    return [
        _Token(match.lastgroup or "other", match.group(), match.start())
        for match in _TOKEN.finditer(text)
        if match.lastgroup != "space"
    ]


def _unquoted(token: _Token) -> str:
    return token.text[1:-1]


def _typed_literal(token: _Token, columns: set[str]) -> bool:
    return token.kind == "word" and token.text not in columns and token.text.lower() in _TYPED_LITERALS


def is_sql_keyword(word: str) -> bool:
    word = word.lower()
    return word in _KEYWORDS or word in _CONSTANTS or word in MATCHES


def _keyword(token: _Token, columns: set[str]) -> str:
    """The SQL keyword a word token is, lowercase; "" for anything else (and for columns)."""
    if token.kind != "word" or token.text in columns or not is_sql_keyword(token.text):
        return ""
    return token.text.lower()


def _ends_bound(token: _Token, word: str, seen_and: bool) -> bool:
    if not seen_and:
        return word == "and"
    return word in ("and", "or") or token.text == ")"


def _python_text(token: _Token, columns: set[str]) -> str:
    if token.kind == "sql_string":  # 'O''Brien' is O'Brien
        return repr(token.text[1:-1].replace("''", "'"))
    word = _keyword(token, columns)
    if word:
        return _CONSTANTS.get(word, word)
    return _OPERATORS.get(token.text, token.text)
