"""The retirement log: objects that a publication replaced (an overwrite, a
delete, a compaction) are recorded as retired instead of being deleted, so
readers that opened the manifest naming them keep reading them; they are
deleted once the retention period after their retirement has passed
(skyhook.ingest.garbage_collection).

A writer records what it retires *before* it swaps the manifest, and withdraws
the record if the swap fails: a crash at any point leaves every object either
named by the current manifest or known to the log. A record of a swap that
never happened only names objects still current, which are never deleted; the
record stays until a later publication retires them for real (or fsck's repair
forgets its abandoned writer), since a collector cannot tell it from a swap
about to happen.
Records live in the store (both backends), are written once under a fresh key
and removed once, so concurrent writers and collectors never update one record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

from skyhook import stored_json
from skyhook.backends.object_store import ObjectStore
from skyhook.errors import InvalidRequestError
from skyhook.names import GENERATION, check_dataset_name, new_generation, object_owner

# One record names at most this many objects (a larger retirement takes several).
_OBJECTS_PER_RECORD = 10_000


@dataclass(frozen=True)
class Retirement:
    dataset: str
    #: The record's own key in the log.
    key: str
    #: The generation of the publication that replaced the objects ("" for a delete).
    replaced_by: str
    #: When the objects were retired (unix seconds, the retiring client's clock).
    retired_at: float
    objects: tuple[str, ...]


def retire_objects(store: ObjectStore, dataset: str, replaced_by: str, object_names: Iterable[str]) -> list[Retirement]:
    """Record object_names of dataset as retired by the publication replaced_by.
    Call it before swapping the manifest that stops naming them; if the swap
    fails, withdraw_retirement the records returned. Objects still named by the
    current manifest are never deleted, whatever a record says."""
    check_dataset_name(dataset)
    names = sorted(set(object_names))
    for name in names:
        owner = object_owner(name)
        if owner is None or owner.dataset != dataset:
            raise InvalidRequestError(f"{name!r} is not an object of dataset {dataset!r}: nothing was retired")
    retired_at = time.time()
    records = []
    for start in range(0, len(names), _OBJECTS_PER_RECORD):
        record = Retirement(
            dataset, new_generation(), replaced_by, retired_at, tuple(names[start : start + _OBJECTS_PER_RECORD])
        )
        store.put_retirement(dataset, record.key, _encode(record))
        records.append(record)
    return records


def withdraw_retirement(store: ObjectStore, records: list[Retirement]) -> None:
    """Drop the records of a retirement whose manifest swap failed."""
    for record in records:
        store.drop_retirement(record.dataset, record.key)


def retirements(store: ObjectStore, dataset: str | None = None) -> tuple[list[Retirement], list[tuple[str, str, str]]]:
    """The log's records (of dataset, or all), and (dataset, key, problem) of each
    record that cannot be trusted: those are never acted upon."""
    records, corrupt = [], []
    for owner, key, data in store.retirement_records():
        if dataset is not None and owner != dataset:
            continue
        try:
            records.append(_decode(owner, key, data))
        except (ValueError, TypeError, KeyError) as error:
            corrupt.append((owner, key, str(error)))
    return records, corrupt


def _encode(record: Retirement) -> bytes:
    fields = {"replaced_by": record.replaced_by, "retired_at": record.retired_at, "objects": record.objects}
    return json.dumps(fields, separators=(",", ":")).encode()


def _decode(dataset: str, key: str, data: bytes) -> Retirement:
    """A record as stored, checked: every object it names must be one of its own
    dataset's partitions, since the collector deletes them."""
    check_dataset_name(dataset)
    if not GENERATION.fullmatch(key):
        raise ValueError(f"invalid key {key!r}")
    fields = stored_json.load(data)
    objects = fields["objects"]
    retired_at = fields["retired_at"]
    replaced_by = fields["replaced_by"]
    if not isinstance(objects, list) or not isinstance(retired_at, (int, float)) or not isinstance(replaced_by, str):
        raise ValueError("malformed record")
    if retired_at != retired_at or retired_at in (float("inf"), float("-inf")):
        raise ValueError("its time is not a number")
    for name in objects:
        owner = object_owner(name) if isinstance(name, str) else None
        if owner is None or owner.dataset != dataset:
            raise ValueError(f"it names {name!r}, not an object of dataset {dataset!r}")
    return Retirement(dataset, key, replaced_by, float(retired_at), tuple(objects))
