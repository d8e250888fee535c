"""Matrix datasets no catalog names: an import killed before it published its
matrix (or an overwrite killed before it deleted the replaced one) leaves
whole datasets that the store sees as ordinary ones. Only this layer knows
their names mean a matrix part, so only it can tell they are left over.

A write's parts share a token (names.py); the parts of a token are in
progress while any of them has a running write or was written within the
grace period, and are left alone then. The listing and the running writes
are read before the catalogs, so a matrix published meanwhile is seen as
published."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from skyhook.catalog.manifest import Manifest
from skyhook.errors import CorruptManifestError
from skyhook.expression.catalog import load_catalog
from skyhook.expression.names import DOMAIN_NAME, MATRIX_NAME, PARTS, PREFIX
from skyhook.names import generation_time
from skyhook.store import DEFAULT_FSCK_GRACE_SECONDS, Store

_PART = re.compile(
    rf"{PREFIX}(?P<domain>{DOMAIN_NAME.pattern})-(?P<matrix>{MATRIX_NAME.pattern})-(?P<token>[0-9a-f]{{8}})"
    rf"-(?P<part>{'|'.join(PARTS)})"
)


@dataclass
class MatrixCheck:
    #: Datasets of matrix parts that no catalog names and no write is still making.
    unpublished: list[str] = field(default_factory=list)
    #: Parts of a write still in progress (left alone).
    in_progress: list[str] = field(default_factory=list)
    repaired: bool = False


def check_matrices(
    store: Store, repair: bool = False, grace_seconds: float = DEFAULT_FSCK_GRACE_SECONDS
) -> MatrixCheck:
    """The matrix parts no catalog names; with repair, they are deleted."""
    datasets = store.list_datasets()
    running = {record.dataset for record in store.backend.pending_writes(grace_seconds) if not record.abandoned}
    by_write: dict[tuple[str, str, str], list[str]] = {}
    for name in datasets:
        part = _PART.fullmatch(name)
        if part is not None:
            by_write.setdefault((part["domain"], part["matrix"], part["token"]), []).append(name)
    # A write still making a part (not yet a dataset: its manifest comes last) keeps its whole token busy.
    writing = {(part["domain"], part["matrix"], part["token"]) for part in map(_PART.fullmatch, running) if part}
    named = set()
    for domain in {domain for domain, _, _ in by_write}:
        catalog = load_catalog(store.backend, domain)
        named |= {name for entry in (catalog.matrices.values() if catalog else ()) for name in entry.datasets.values()}
    check = MatrixCheck()
    recent = time.time() - grace_seconds
    for write, names in by_write.items():
        if all(name in named for name in names):
            continue
        busy = write in writing or any(_written_at(store, name) > recent for name in names)
        (check.in_progress if busy else check.unpublished).extend(name for name in names if name not in named)
    check.unpublished.sort()
    check.in_progress.sort()
    if repair and check.unpublished:
        for name in check.unpublished:
            store.delete_dataset(name)
        check.repaired = True
    return check


def _written_at(store: Store, dataset: str) -> float:
    """When the dataset's manifest was written; now when that cannot be told
    (being created or deleted, unreadable: not for this check to judge)."""
    stored = store.backend.get_manifest(dataset)
    try:
        written = None if stored is None else generation_time(Manifest.from_bytes(stored.data, dataset).generation)
    except CorruptManifestError:
        written = None
    return time.time() if written is None else written
