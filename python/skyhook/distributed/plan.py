"""A transformation plan: groups of source objects, each rewritten into target
objects by stream steps and swapped in by a commit step (or rewritten in place
by a local transform step), with the bytes each step reads in storage, moves
out of storage and writes. Kept as JSON in one object of the store, with the
progress of every step, so a crashed run resumes where it stopped."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field, fields, replace

import pyarrow as pa
import pyarrow.compute as pc

from skyhook import stored_json
from skyhook.catalog.design import ObjectDesign
from skyhook.errors import CorruptManifestError, first_line
from skyhook.names import DATASET_NAME, GENERATION, object_owner

PLAN_VERSION = 1
#: planned: not started; queued: for ``skyhook worker``; running: a runner has it (or
#: died with it); paused: stopped after some steps on request; failed: a step raised
#: (resume retries it).
STATES = ("planned", "queued", "running", "paused", "failed", "done", "cancelled")
FINISHED = ("done", "cancelled")
KINDS = ("stream", "copy", "commit", "local")
#: Steps that write a group's new objects (the commit publishes them).
WRITES = ("stream", "copy")
#: Plan fields of bytes, stored as base64.
SERIALIZED = ("design", "filter", "bounds", "bucket_bounds")
# Rough rates for the estimate (one OSD's disk, the client link, object writes).
READ_BYTES_PER_S = 400e6
MOVE_BYTES_PER_S = 100e6
WRITE_BYTES_PER_S = 150e6
#: A plan object larger than this is damaged (a plan over 100,000 objects is about 30 MB).
MAX_PLAN_BYTES = 128 << 20
#: Characters of a stored plan's defect quoted in its error.
MAX_REASON = 200
#: The schedule orders (distributed/schedule.py's).
ORDERS = ("key", "working-set")


@dataclass
class Step:
    kind: str
    group: int
    #: Objects read (stream), copied whole (copy), swapped out (commit) or rewritten in place (local).
    sources: list[str]
    #: Objects a stream or copy step writes (a stream's planned names; fewer if a filter leaves fewer rows).
    targets: list[str]
    #: For a stream step of a cluster: the key range it copies (index into the plan's bounds).
    key_range: int | None = None
    #: Rows of the sources (a stream of a filter writes fewer objects, in proportion).
    rows: int = 0
    bytes_read: int = 0
    bytes_moved: int = 0
    bytes_written: int = 0
    done: bool = False
    #: What the step did, once done: objects written (stream), scan statistics.
    written: list[str] = field(default_factory=list)
    measured: dict[str, float] = field(default_factory=dict)
    #: For a stream step of a cluster that serves several key ranges in one pass: the ranges, in
    #: key order, one target each (plans made before passes have key_range instead).
    key_ranges: list[int] | None = None
    #: For a cluster's stream step: the estimated bytes of its ranges' rows decoded (what the pass holds).
    memory: int = 0

    def ranges(self) -> list[int]:
        """The cluster key ranges the step writes (none: not a cluster's stream)."""
        return self.key_ranges if self.key_ranges is not None else [] if self.key_range is None else [self.key_range]

    def describe(self) -> str:
        what = {
            "stream": f"stream {len(self.sources)} object(s) -> {len(self.targets)} new",
            "copy": "copy the object whole, storage to storage",
            "commit": f"commit: swap {len(self.sources)} object(s) for the group's new ones, build their statistics",
            "local": f"local transform of {len(self.sources)} object(s) in storage",
        }[self.kind]
        served = self.ranges()
        if len(served) == 1:
            what += f" (key range {served[0]})"
        elif served:
            what += f" in one pass (key ranges {served[0]}..{served[-1]})"
        if self.memory:
            what += f", holding ~{self.memory:,} bytes decoded"
        return what


@dataclass
class Plan:
    id: str  # a generation: unique, and orders plans by time
    dataset: str
    into: str | None
    #: The manifest generation the plan was made from (for messages).
    planned_from: str
    #: Per group: the generation its new objects are named after.
    groups: list[str]
    steps: list[Step]
    #: What the target asked for, as text (for printing).
    summary: str
    state: str = "planned"
    error: str = ""
    #: The lease of a running plan (distributed/lease.py): its holder (host:pid) and expiry (epoch seconds).
    runner: str = ""
    lease_expiry: float = 0.0
    #: Serialized: the target design, filter, columns and cluster bounds.
    design: bytes = b""
    filter: bytes = b""
    columns: list[str] | None = None
    cluster_by: str | None = None
    #: Column objects: the columns of each object of a target partition (its object first).
    column_objects: list[list[str]] | None = None
    #: A range cluster's key bounds, or a Z-order cluster's z-value bounds (uint64).
    bounds: bytes = b""
    #: A Z-order cluster: its keys, the bits of each key's bucket, each key's
    #: bucket bounds, and per range the box of its rows ([low, high] bucket per key).
    zorder: list[str] | None = None
    zorder_bits: int = 0
    bucket_bounds: bytes = b""
    boxes: list[list[int] | None] | None = None
    #: The schedule it runs under (distributed/schedule.py), kept for resumes and the worker.
    rate: float | None = None
    parallel: int = 1
    order: str = "key"

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def steps_done(self) -> int:
        return sum(step.done for step in self.steps)

    @property
    def bytes_read(self) -> int:
        return sum(step.bytes_read for step in self.steps)

    @property
    def bytes_moved(self) -> int:
        return sum(step.bytes_moved for step in self.steps)

    @property
    def bytes_written(self) -> int:
        return sum(step.bytes_written for step in self.steps)

    @property
    def estimated_seconds(self) -> float:
        return (
            self.bytes_read / READ_BYTES_PER_S
            + self.bytes_moved / MOVE_BYTES_PER_S
            + self.bytes_written / WRITE_BYTES_PER_S
        )

    def target_design(self) -> ObjectDesign:
        return ObjectDesign.from_bytes(self.design)

    def target_filter(self) -> pc.Expression | None:
        # Arrow's own serialization (what pickling an expression uses), never pickle.
        return pc.Expression._deserialize(pa.py_buffer(self.filter)) if self.filter else None

    def key_bounds(self) -> pa.Array | None:
        """The cluster's range bounds: range i holds keys in [bounds[i-1], bounds[i])."""
        if not self.bounds:
            return None
        return pa.ipc.open_stream(pa.py_buffer(self.bounds)).read_all().column(0).combine_chunks()

    def key_bucket_bounds(self) -> list[pa.Array]:
        """A Z-order cluster's bucket bounds, per key."""
        if not self.bucket_bounds:
            return []
        table = pa.ipc.open_stream(pa.py_buffer(self.bucket_bounds)).read_all()
        return [column.combine_chunks()[0].values for column in table.columns]

    def __str__(self) -> str:
        lines = [
            f"plan {self.id} for {self.dataset!r} (as of version {self.planned_from}): {self.summary} "
            f"[{self.state}, {self.steps_done}/{len(self.steps)} steps done]",
            f"  bytes to read in storage {self.bytes_read:,}, to move out of storage {self.bytes_moved:,}, "
            f"to write {self.bytes_written:,}; estimated {self.estimated_seconds:.1f} s",
        ]
        lines += [
            f"  {number:>3} {'done' if step.done else '    '} group {step.group}: {step.describe()}; "
            f"read {step.bytes_read:,} move {step.bytes_moved:,} write {step.bytes_written:,}"
            for number, step in enumerate(self.steps)
        ]
        if (self.rate, self.parallel, self.order) != (None, 1, "key"):
            rate = "unlimited" if self.rate is None else f"{self.rate:,.0f} bytes/s"
            lines.append(f"  schedule: rate {rate}, {self.parallel} stream(s) in flight, {self.order} order")
        if self.error:
            lines.append(f"  error: {self.error}")
        return "\n".join(lines)

    def to_bytes(self) -> bytes:
        # Shallow, not asdict, which deep-copies every step on every save of the plan (after each step).
        record = {item.name: getattr(self, item.name) for item in fields(self)}
        record["steps"] = [vars(step) for step in self.steps]
        for key in SERIALIZED:
            record[key] = base64.b64encode(record[key]).decode()
        return json.dumps({"version": PLAN_VERSION, **record}).encode()

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Plan:
        """A stored plan, checked; anything else is a CorruptManifestError naming where."""
        try:
            record = stored_json.load(data, max_bytes=MAX_PLAN_BYTES)
            if not isinstance(record, dict) or not isinstance(record.get("steps"), list):
                raise ValueError("not a plan record")
            if record.pop("version", None) != PLAN_VERSION:
                raise ValueError("unsupported plan version")
            record.pop("heartbeat", None)  # plans stored before leases: an expired lease
            for key in SERIALIZED:
                record[key] = base64.b64decode(record.get(key, ""), validate=True)
            plan = cls(**{**record, "steps": [Step(**step) for step in record["steps"]]})
            plan._check_types()
            plan._check()
        except (ValueError, TypeError, KeyError, AttributeError, pa.ArrowException) as error:
            reason = f"{type(error).__name__}: {first_line(error)}"
            if len(reason) > MAX_REASON:  # it may quote the stored bytes
                reason = reason[:MAX_REASON] + "..."
            raise CorruptManifestError(f"the plan {where} is unreadable: {reason}") from None
        return plan

    def _check_types(self) -> None:
        """Every field of the type the code that prints and runs plans expects (JSON can hold anything)."""
        texts = (
            self.id,
            self.dataset,
            self.planned_from,
            self.summary,
            self.state,
            self.error,
            self.runner,
            self.order,
        )
        if not all(isinstance(text, str) for text in texts):
            raise ValueError("invalid text field")
        optional_texts = (self.into, self.cluster_by)
        if not all(text is None or isinstance(text, str) for text in optional_texts):
            raise ValueError("invalid text field")
        if not (_is_number(self.lease_expiry) and (self.rate is None or _is_number(self.rate))):
            raise ValueError("invalid lease or rate")
        if not (_is_count(self.parallel) and self.parallel >= 1 and self.order in ORDERS):
            raise ValueError("invalid schedule")
        if not (isinstance(self.groups, list) and (self.columns is None or _is_texts(self.columns))):
            raise ValueError("invalid groups or columns")
        for step in self.steps:
            counts = (step.rows, step.bytes_read, step.bytes_moved, step.bytes_written, step.memory)
            if not (all(_is_count(count) for count in counts) and isinstance(step.done, bool)):
                raise ValueError("invalid step counts")
            if not all(_is_texts(names) for names in (step.sources, step.targets, step.written)):
                raise ValueError("invalid step objects")
            if step.key_range is not None and not _is_count(step.key_range):
                raise ValueError("invalid key range")
            if step.key_ranges is not None and not (isinstance(step.key_ranges, list) and step.key_ranges):
                raise ValueError("invalid key ranges")
            measured = step.measured
            if not (isinstance(measured, dict) and all(_is_number(value) for value in measured.values())):
                raise ValueError("invalid step measurements")

    def _check(self) -> None:
        # The runner writes and deletes the objects a plan names: only its own kind of names.
        if not (isinstance(self.id, str) and GENERATION.fullmatch(self.id)) or self.state not in STATES:
            raise ValueError("invalid id or state")
        datasets = {self.dataset, *([self.into] if self.into is not None else [])}
        if not all(isinstance(name, str) and DATASET_NAME.fullmatch(name) for name in datasets):
            raise ValueError("invalid dataset name")
        if not all(isinstance(generation, str) and GENERATION.fullmatch(generation) for generation in self.groups):
            raise ValueError("invalid group generation")
        if self.column_objects is not None and not (
            isinstance(self.column_objects, list)
            and self.column_objects
            and all(isinstance(c, list) and c and all(isinstance(n, str) for n in c) for c in self.column_objects)
        ):
            raise ValueError("invalid column objects")
        written_to = self.into or self.dataset
        for step in self.steps:
            if step.kind not in KINDS or not (isinstance(step.group, int) and 0 <= step.group < len(self.groups)):
                raise ValueError("invalid step")
            if isinstance(step.memory, bool) or not isinstance(step.memory, int):
                raise ValueError("invalid step")
            for name in step.sources:
                owner = object_owner(name) if isinstance(name, str) else None
                if owner is None or owner.dataset != self.dataset:
                    raise ValueError(f"step source {name!r} is no object of {self.dataset!r}")
            served = step.ranges()
            if step.key_ranges is not None and (
                step.key_range is not None
                or len(served) * len(self.column_objects or [[]]) != len(step.targets)
                or not all(isinstance(index, int) and not isinstance(index, bool) for index in served)
                or served != sorted(set(served))
                or served[0] < 0
                or served[-1] >= self._range_count()
            ):
                raise ValueError("invalid key ranges")
            for name in [*step.targets, *step.written]:
                owner = object_owner(name) if isinstance(name, str) else None
                if owner is None or owner != (written_to, self.groups[step.group]):
                    raise ValueError(f"step target {name!r} is no object of its group")
        ObjectDesign.from_bytes(self.design)
        self.target_filter()
        self.key_bounds()
        if self.zorder is not None:
            self._check_zorder()

    def _range_count(self) -> int:
        if self.zorder is not None:
            return len(self.boxes) if isinstance(self.boxes, list) else 0
        bounds = self.key_bounds()
        return 0 if bounds is None else len(bounds) + 1

    def _check_zorder(self) -> None:
        keys = len(self.zorder or [])
        if keys < 2 or not all(isinstance(key, str) for key in self.zorder or []):
            raise ValueError("invalid Z-order keys")
        if not (isinstance(self.zorder_bits, int) and 1 <= self.zorder_bits and keys * self.zorder_bits <= 62):
            raise ValueError("invalid Z-order bits")
        if len(self.key_bucket_bounds()) != keys or not isinstance(self.boxes, list):
            raise ValueError("invalid Z-order bounds")
        if any(not 0 <= index < len(self.boxes) for step in self.steps for index in step.ranges()):
            raise ValueError("invalid key range")
        for box in self.boxes:
            if box is not None and not (
                isinstance(box, list) and len(box) == 2 * keys and all(isinstance(b, int) and b >= 0 for b in box)
            ):
                raise ValueError("invalid Z-order box")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(text, str) for text in value)


def expression_bytes(expression: pc.Expression | None) -> bytes:
    """Arrow's serialization of an expression (what pickling one uses); empty for None."""
    return b"" if expression is None else expression.__reduce__()[1][0].to_pybytes()


def with_state(plan: Plan, state: str, **changes: object) -> Plan:
    return replace(plan, state=state, **changes)
