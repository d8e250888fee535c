"""A pyarrow Expression's shape, measured and changed before pyarrow serialises
it to Substrait: that serializer's work doubles with every level of nesting
(a chain of 22 ORs built with functools.reduce took over 50 s, 1,024 balanced
ORs serialise to 133 MB). Chains of one AND or OR become balanced trees, an
expression nested deeper than MAX_EXPRESSION_DEPTH is refused, and one whose
serialization would still cost more than SERIALIZATION_BUDGET is not sent to
storage (the client evaluates it).

The tree is read from Arrow's own serialization of an Expression (the one
pickling uses, linear in its size): a schema whose metadata lists the nodes in
pre-order (``call`` name, its arguments, ``options`` column, ``end`` name;
``field_ref`` name; ``literal`` column) and a record batch of the literals and
options. Python sees a schema's metadata as a dict, which keeps one entry per
key, so the ordered entries are read through the Arrow C data interface.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.errors import InvalidRequestError, first_line

#: Storage refuses deeper expressions (cpp/skyhook/substrait/checks.h).
MAX_EXPRESSION_DEPTH = 256
#: Work of pyarrow's serializer: each call costs 2 ** (its level), about 95 bytes
#: of output per unit (2 ** 18 units: 25 MB in about 0.3 s on this project's CI).
SERIALIZATION_BUDGET = 2**18
_ASSOCIATIVE = {b"and", b"or", b"and_kleene", b"or_kleene"}

Entry = tuple[bytes, bytes]
_COLUMN_KEYS = (b"literal", b"options")  # entries whose value is a column of the batch


class NotSerializable(Exception):
    """pyarrow cannot serialise the expression, or would take out of all proportion."""


@dataclass
class _Node:
    entries: list[Entry]  # a leaf's entry; a call's "call", then its "options" entry if any
    operands: list[_Node] = field(default_factory=list)
    depth: int = 1  # levels, once chains are balanced
    below: int = 0  # the deepest operand's depth (kept as operands come: chains are long)

    @property
    def chain(self) -> bytes | None:
        """The associative function this call chains, if it is one without options."""
        key, name = self.entries[0]
        return name if key == b"call" and name in _ASSOCIATIVE and len(self.entries) == 1 else None


def serializable(expression: pc.Expression) -> pc.Expression:
    """expression with its chains of one AND/OR balanced; InvalidRequestError if
    nested deeper than MAX_EXPRESSION_DEPTH, NotSerializable if pyarrow's
    serializer would still take out of all proportion."""
    try:
        entries, batch = _arrow_serialization(expression)
    except pa.ArrowNotImplementedError:  # a reference into a nested field: as it is
        return expression
    root = _tree(entries)
    if root.depth > MAX_EXPRESSION_DEPTH:
        raise InvalidRequestError(
            f"the expression is nested {root.depth} levels deep (after balancing its AND/OR chains); "
            f"at most {MAX_EXPRESSION_DEPTH} are allowed"
        )
    balanced: list[Entry] = []
    if _emit(root, 0, balanced) > SERIALIZATION_BUDGET:
        raise NotSerializable(f"pyarrow's Substrait serializer would take over {SERIALIZATION_BUDGET} units")
    return expression if balanced == entries else _rebuilt(balanced, batch)


def deserialized(data: bytes, functions: frozenset[str]) -> pc.Expression:
    """An expression in Arrow's serialization (what pickling writes) from an
    untrusted sender, calling only functions: the IPC file validated in full
    and the tree checked (depth, calls) and rebuilt balanced before Arrow
    reads it (recursively: a chain of 100,000 ANDs would overflow its stack)."""
    try:
        reader = pa.ipc.open_file(pa.py_buffer(data))
        if reader.num_record_batches != 1:
            raise ValueError(f"{reader.num_record_batches} record batches, not one")
        batch = reader.get_batch(0)
        batch.validate(full=True)
        entries = _metadata_entries(reader.schema)
        root = _tree(entries)
    except (pa.ArrowException, OSError, ValueError, IndexError, KeyError, TypeError, struct.error) as error:
        raise InvalidRequestError(f"a serialized expression that does not decode: {first_line(error)}") from None
    called = sorted({value.decode(errors="replace") for key, value in entries if key == b"call"} - functions)
    if called:
        raise InvalidRequestError(
            f"a filter here may not call {called[0][:64]!r}; it may call {', '.join(sorted(functions))}"
        )
    if root.depth > MAX_EXPRESSION_DEPTH:
        raise InvalidRequestError(f"the expression is nested {root.depth} levels deep; at most {MAX_EXPRESSION_DEPTH}")
    balanced: list[Entry] = []
    _emit(root, 0, balanced)
    try:
        return _rebuilt(balanced, batch)
    except (pa.ArrowException, OSError, ValueError, TypeError) as error:
        raise InvalidRequestError(f"a serialized expression that does not decode: {first_line(error)}") from None


def conjuncts(expression: pc.Expression) -> list[pc.Expression]:
    """The operands of expression's top-level AND (itself if it is none): a row
    passes the filter exactly when it passes each of them."""
    try:
        entries, batch = _arrow_serialization(expression)
    except pa.ArrowNotImplementedError:
        return [expression]
    root = _tree(entries)
    if root.chain not in (b"and", b"and_kleene"):
        return [expression]
    parts = []
    for operand in root.operands:
        part: list[Entry] = []
        _emit(operand, 0, part)
        parts.append(_rebuilt(*_compacted(part, batch)))
    return parts


def _compacted(entries: list[Entry], batch: pa.RecordBatch) -> tuple[list[Entry], pa.RecordBatch]:
    """entries with only the columns of batch (literals, options) they use,
    renumbered: each of 3,000 conjuncts would otherwise carry all 3,000 literals."""
    used = sorted({int(value) for key, value in entries if key in _COLUMN_KEYS})
    renumbered = {str(old).encode(): str(new).encode() for new, old in enumerate(used)}
    entries = [(key, renumbered[value]) if key in _COLUMN_KEYS else (key, value) for key, value in entries]
    return entries, batch.select(used)


def field_names(expression: pc.Expression) -> set[str] | None:
    """The names of the columns expression reads (of a nested reference, its
    column); None if Arrow cannot say."""
    try:
        entries, _ = _arrow_serialization(expression)
    except pa.ArrowNotImplementedError:
        return None
    names, position = set(), 0
    while position < len(entries):
        key, value = entries[position]
        if key == b"nested_field_ref":  # its column: the first name of its path
            names.add(entries[position + 1][1].decode())
            position += int(value)
        elif key == b"field_ref":
            names.add(value.decode())
        position += 1
    return names


def _rebuilt(entries: list[Entry], batch: pa.RecordBatch) -> pc.Expression:
    """The expression of entries, its literals and options in batch (one row,
    also when it has no columns)."""
    batch = batch.replace_schema_metadata(pa.KeyValueMetadata(entries))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return pc.Expression._deserialize(sink.getvalue())


def _arrow_serialization(expression: pc.Expression) -> tuple[list[Entry], pa.RecordBatch]:
    reader = pa.ipc.open_file(expression.__reduce__()[1][0])
    return _metadata_entries(reader.schema), reader.get_batch(0)


def _tree(entries: list[Entry]) -> _Node:
    """The nodes of Arrow's pre-order entries, each chain of one associative
    function flattened into one node with all its operands."""
    open_calls: list[_Node] = []
    position = 0
    while position < len(entries):
        key, value = entries[position]
        position += 1
        if key == b"nested_field_ref":  # one leaf with the names of its path
            path = int(value)
            node = _Node([(key, value), *entries[position : position + path]])
            position += path
        elif key == b"call":
            open_calls.append(_Node([(key, value)]))
            continue
        elif key == b"options":
            open_calls[-1].entries.append((key, value))
            continue
        elif key == b"end":
            node = open_calls.pop()
            node.depth = _depth(node)
        else:
            node = _Node([(key, value)])
        if not open_calls:
            return node
        parent = open_calls[-1]
        if parent.chain is not None and node.chain == parent.chain:
            parent.operands.extend(node.operands)
            parent.below = max(parent.below, node.below)
        else:
            parent.operands.append(node)
            parent.below = max(parent.below, node.depth)
    raise ValueError("Arrow's serialization of the expression ends inside a call")


def _depth(node: _Node) -> int:
    if node.chain is None or len(node.operands) <= 2:
        return 1 + node.below
    return (len(node.operands) - 1).bit_length() + node.below  # a balanced tree of binary calls


def _emit(node: _Node, level: int, out: list[Entry]) -> int:
    """Appends node's entries to out, chains as balanced binary calls; returns
    the serializer's cost of them."""
    if node.chain is not None and len(node.operands) > 2:
        half = len(node.operands) // 2
        parts = [_Node(node.entries, node.operands[:half]), _Node(node.entries, node.operands[half:])]
        parts = [part.operands[0] if len(part.operands) == 1 else part for part in parts]
        return _emit(_Node(node.entries, parts), level, out)
    if node.entries[0][0] != b"call":
        out.extend(node.entries)
        return 0
    out.append(node.entries[0])
    cost = 2**level  # pyarrow declares the extensions again at every level of calls
    for operand in node.operands:
        cost += _emit(operand, level + 1, out)
    out.extend(node.entries[1:])
    out.append((b"end", node.entries[0][1]))
    return cost


class _ArrowSchema(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _metadata_entries(schema: pa.Schema) -> list[Entry]:
    """The schema's metadata in order, repeated keys included: the C data
    interface's encoding, an int32 count then each key and value as an int32
    length and its bytes (native byte order)."""
    capsule = schema.__arrow_c_schema__()  # released when collected: read it first
    address = _ArrowSchema.from_address(_capsule_pointer(capsule, b"arrow_schema")).metadata
    if not address:
        return []

    def take(size: int) -> bytes:
        nonlocal address
        data = ctypes.string_at(address, size)
        address += size
        return data

    def int32() -> int:
        return struct.unpack("=i", take(4))[0]

    return [(take(int32()), take(int32())) for _ in range(int32())]
