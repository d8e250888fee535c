"""Rewriting one object to a design: inside storage (the ``transform`` method,
one call per object) or at the client, which reads the object, runs the same
transform method on it in memory (the embedded extension) and writes it back
by compare-and-swap, so both build identical objects and neither clobbers a
concurrent rewrite."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from skyhook import _embedded
from skyhook.backends.base import Backend
from skyhook.backends.parallel import ordered_map
from skyhook.catalog.design import DESIGN_ATTRIBUTE, Design, ObjectDesign
from skyhook.errors import ObjectChangedError
from skyhook.rpc.reply import Reply, decode_reply
from skyhook.rpc.requests import TransformRequest
from skyhook.rpc.statistics import BYTES_BEFORE, BYTES_READ, BYTES_WRITTEN, STORAGE_CPU_NS

#: The storage-side method that checks a transform request without writing.
CHECK_METHOD = "transform_check"
#: Objects rewritten at once in this process (each holds its object and the new one in memory).
IN_PROCESS_PARALLELISM = 4
#: Storage-side calls in flight at once (as the RADOS store's streams).
REMOTE_PARALLELISM = 16


@dataclass(frozen=True)
class ObjectTransform:
    """What happened to one object."""

    object_name: str
    design: ObjectDesign  # the object's design afterwards
    bytes_before: int
    bytes_after: int
    bytes_read: int = 0
    storage_cpu_s: float = 0.0
    #: False when the object had the design already (nothing was written).
    rewritten: bool = True


@dataclass(frozen=True)
class TargetDesign:
    """A design resolved against a dataset's columns: what to ask the writer
    for, and how to tell an object that has it already."""

    design: Design
    columns: tuple[str, ...]

    def request(self, generation: int) -> TransformRequest:
        wanted = ObjectDesign.request(self.design, self.columns, generation)
        return TransformRequest(wanted.to_bytes(), generation)

    def built_by(self, design: ObjectDesign | None) -> bool:
        """Whether an object of this design is what the transform would build."""
        if design is None:
            return False
        groups = tuple(group.columns for group in design.column_groups)
        return (
            design.format == self.design.format
            and groups == self._built_groups()
            and design.sort_by == self.design.sort_by
            and design.compression == self.design.compression
            and design.row_group_size == self.design.row_group_size
        )

    def _built_groups(self) -> tuple[tuple[str, ...], ...]:
        # As the writer resolves them: the groups named, then the rest in schema
        # order; one group of every column is "every column".
        named = [tuple(group) for group in self.design.resolved_groups(self.columns) if group]
        grouped = {column for group in named for column in group}
        rest = tuple(column for column in self.columns if column not in grouped)
        groups = named + ([rest] if rest or not named else [])
        return ((),) if len(groups) == 1 else tuple(groups)


def stored_design(attribute: bytes | None) -> ObjectDesign | None:
    """The design an object's attribute names; None for objects written before designs."""
    return None if attribute is None else ObjectDesign.from_bytes(attribute)


def in_storage(backend: Backend, targets: dict[str, TargetDesign]) -> Iterator[ObjectTransform]:
    """Transforms each object (to its target) by a storage-side call, many at once, in order."""
    # One call per object, not a stream: a refusal of one object must not end the others' calls.
    parallelism = IN_PROCESS_PARALLELISM if backend.runs_in_process else REMOTE_PARALLELISM
    with ThreadPoolExecutor(parallelism, thread_name_prefix="skyhook-transform") as pool:
        yield from ordered_map(
            pool, lambda name: _in_storage(backend, name, targets[name]), list(targets), window=parallelism
        )


def at_client(backend: Backend, targets: dict[str, TargetDesign]) -> Iterator[ObjectTransform]:
    """Transforms each object (to its target) at the client, a few at once, in order."""
    with ThreadPoolExecutor(IN_PROCESS_PARALLELISM, thread_name_prefix="skyhook-transform") as pool:
        yield from ordered_map(
            pool, lambda name: _at_client(backend, name, targets[name]), list(targets), window=IN_PROCESS_PARALLELISM
        )


def _in_storage(backend: Backend, name: str, target: TargetDesign) -> ObjectTransform:
    design = stored_design(backend.object_attribute(name, DESIGN_ATTRIBUTE))
    if target.built_by(design):
        return _unchanged(name, design)
    try:
        return rewrite_in_storage(backend, name, target.request(_generation(design)))
    except ObjectChangedError:
        # A resent call whose first attempt was applied (an OSD failed over)
        # finds its own result: done, not a conflict.
        return _settled(backend, name, target)


def rewrite_in_storage(backend: Backend, name: str, request: TransformRequest) -> ObjectTransform:
    """One storage-side call rewriting object name as request asks."""
    if backend.writer_replies:
        return _done(name, _checked(backend.call(name, request.METHOD, request.encode()), name))
    # A refusal comes back as an error class only: the check says why first.
    check = replace(request, method=CHECK_METHOD)
    checked = _checked(backend.call(name, CHECK_METHOD, check.encode()), name)
    backend.call(name, request.METHOD, request.encode())
    return _written(backend, name, checked)


def _at_client(backend: Backend, name: str, target: TargetDesign) -> ObjectTransform:
    stored = backend.read_versioned_object(name)
    design = stored_design(stored.attributes.get(DESIGN_ATTRIBUTE))
    if target.built_by(design):
        return ObjectTransform(name, design, stored.data.size, stored.data.size, rewritten=False)
    request = target.request(_generation(design)).encode()
    encoded, data, attributes = _embedded.call_in_memory(
        stored.data.to_pybytes(), stored.attributes, TransformRequest.METHOD, request
    )
    reply = _checked(encoded, name)
    if not backend.replace_object_at(name, data, {DESIGN_ATTRIBUTE: attributes[DESIGN_ATTRIBUTE]}, stored.version):
        raise ObjectChangedError(f"object {name} was rewritten by another writer meanwhile: nothing was written")
    return _done(name, reply)


def _generation(design: ObjectDesign | None) -> int:
    return 0 if design is None else design.generation


def _checked(encoded: bytes, name: str) -> Reply:
    reply = decode_reply(encoded, f"object {name}")
    reply.raise_for_status(f"transforming object {name}")
    return reply


def _done(name: str, reply: Reply) -> ObjectTransform:
    statistics = reply.statistics
    return ObjectTransform(
        name,
        ObjectDesign.from_bytes(reply.body.to_pybytes()),
        statistics[BYTES_BEFORE],
        statistics[BYTES_WRITTEN],
        statistics[BYTES_READ],
        statistics[STORAGE_CPU_NS] / 1e9,
    )


def _written(backend: Backend, name: str, check: Reply) -> ObjectTransform:
    """What a call without a reply wrote: the object's design attribute says."""
    design = stored_design(backend.object_attribute(name, DESIGN_ATTRIBUTE))
    size = sum(group.length for group in design.column_groups)
    return ObjectTransform(name, design, check.statistics[BYTES_BEFORE], size, check.statistics[BYTES_BEFORE])


def _unchanged(name: str, design: ObjectDesign) -> ObjectTransform:
    size = sum(group.length for group in design.column_groups)
    return ObjectTransform(name, design, size, size, rewritten=False)


def _settled(backend: Backend, name: str, target: TargetDesign) -> ObjectTransform:
    design = stored_design(backend.object_attribute(name, DESIGN_ATTRIBUTE))
    if not target.built_by(design):
        raise ObjectChangedError(f"object {name} was rewritten by another transform meanwhile: nothing was written")
    return _unchanged(name, design)
