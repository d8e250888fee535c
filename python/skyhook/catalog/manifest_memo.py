"""Values derived from a manifest, computed once per manifest object: manifests
are immutable, and every query on an open dataset would otherwise derive them
again (its partitions' pruning guarantees, its columns' sizes)."""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

Value = TypeVar("Value")
#: A manifest (not imported: manifest.py remembers its own subsets with this).
Manifest = TypeVar("Manifest")


def per_manifest(function: Callable[[Manifest], Value]) -> Callable[[Manifest], Value]:
    """function, remembered for each manifest while that manifest lives."""
    values: dict[int, Value] = {}
    lock = threading.Lock()

    @functools.wraps(function)
    def remembered(manifest: Manifest) -> Value:
        with lock:
            if id(manifest) not in values:
                values[id(manifest)] = function(manifest)
                # Dropped as the manifest is freed, before its id can be another's.
                weakref.finalize(manifest, values.pop, id(manifest), None)
            return values[id(manifest)]

    return remembered
