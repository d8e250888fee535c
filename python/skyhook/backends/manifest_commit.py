"""The one way a manifest changes: compare-and-swap, retried.

Every writer (writes and appends, transforms, statistics, plans, deletes, the
expression catalog) states its change as a function of the manifest as stored;
commit reads the manifest, applies the change and swaps the result in only if
the manifest is still the one read, else reads again and re-applies the change
to what the other writer published. A change may raise to give up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from skyhook.backends.object_store import ObjectStore, StoredManifest

T = TypeVar("T")
#: Runs just before a swap; returns what undoes it if the swap does not happen.
BeforeSwap = Callable[[], Callable[[], None]]


@dataclass(frozen=True)
class Publication(Generic[T]):
    """What a change publishes: the manifest's new bytes (None: delete it), and
    what commit returns once they are in place."""

    data: bytes | None
    result: T
    #: E.g. retiring the objects the swap replaces (withdrawn if it fails).
    before_swap: BeforeSwap | None = None


def commit(store: ObjectStore, dataset: str, change: Callable[[StoredManifest | None], Publication[T] | T]) -> T:
    """change applied to dataset's manifest as stored (None: there is none) and
    its Publication swapped in, retried until no other writer came between the
    read and the swap; a change that returns anything else publishes nothing
    and commit returns it."""
    while True:
        stored = store.get_manifest(dataset)
        outcome = change(stored)
        if not isinstance(outcome, Publication):
            return outcome
        undo = outcome.before_swap() if outcome.before_swap is not None else None
        if _swapped(store, dataset, stored, outcome.data):
            return outcome.result
        if undo is not None:
            undo()


def _swapped(store: ObjectStore, dataset: str, stored: StoredManifest | None, data: bytes | None) -> bool:
    if stored is None:
        return data is None or store.create_manifest(dataset, data)
    if data is None:
        return store.delete_manifest(dataset, stored.version)
    return store.replace_manifest(dataset, data, stored.version)
