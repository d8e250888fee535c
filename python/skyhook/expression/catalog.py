"""A domain's catalog: the matrices it holds, each naming its three datasets,
its layout and its custom metadata.

The catalog is the schema metadata of an empty dataset's manifest (names.py),
so it is published by the same compare-and-swap as every manifest: a matrix
appears, is replaced or disappears in one step, and readers see either the old
catalog or the new one. To the rest of the store it is an ordinary empty
dataset (ls, describe and fsck read it as one).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pyarrow as pa

from skyhook import stored_json
from skyhook.backends.manifest_commit import Publication, commit
from skyhook.backends.object_store import ObjectStore, StoredManifest
from skyhook.catalog.design import Design, ObjectDesign
from skyhook.catalog.manifest import Manifest, statistics_type
from skyhook.errors import CorruptManifestError
from skyhook.expression.names import PARTS, catalog_dataset, check_matrix_name
from skyhook.names import new_generation

CATALOG_KEY = b"skyhook.expression.catalog"
CATALOG_VERSION = 1
_SCHEMA = pa.schema([("matrix", pa.string())])


@dataclass(frozen=True)
class MatrixEntry:
    name: str
    #: part ("values", "obs", "var") -> the dataset holding it.
    datasets: dict[str, str]
    layout: str  # "sparse" or "dense" (layouts.py)
    n_cells: int
    n_genes: int
    dtype: str  # of the values: "float32" or "float64"
    #: Where the values came from: "X", "raw" or "layer:<name>" (AnnData), "mtx", "table".
    source: str
    #: The user's custom metadata, carried into every result.
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The base of log1p (AnnData's uns["log1p"]["base"]; None: natural), for fold changes.
    log1p_base: float | None = None


@dataclass(frozen=True)
class Catalog:
    domain: str
    matrices: dict[str, MatrixEntry]

    def with_matrix(self, entry: MatrixEntry) -> Catalog:
        return replace(self, matrices={**self.matrices, entry.name: entry})

    def without_matrix(self, name: str) -> Catalog:
        return replace(self, matrices={key: entry for key, entry in self.matrices.items() if key != name})

    def to_manifest(self) -> Manifest:
        text = json.dumps(
            {"version": CATALOG_VERSION, "matrices": [asdict(entry) for entry in self.matrices.values()]}
        ).encode()
        schema = _SCHEMA.with_metadata({CATALOG_KEY: text})
        empty = pa.array([], statistics_type(schema))
        write_design = ObjectDesign.request(Design(), schema.names, 0)
        return Manifest(catalog_dataset(self.domain), schema, write_design, new_generation(), (), empty)

    @classmethod
    def from_bytes(cls, data: bytes, domain: str) -> Catalog:
        name = catalog_dataset(domain)
        manifest = Manifest.from_bytes(data, name)
        try:
            content = stored_json.load((manifest.schema.metadata or {})[CATALOG_KEY])
            if content["version"] != CATALOG_VERSION:
                raise ValueError(f"unsupported catalog version {content['version']!r}")
            entries = [MatrixEntry(**entry) for entry in content["matrices"]]
            for entry in entries:
                check_matrix_name(entry.name)
                if set(entry.datasets) != set(PARTS):
                    raise ValueError(f"matrix {entry.name!r} names parts {sorted(entry.datasets)}")
        except (KeyError, ValueError, TypeError) as error:
            raise CorruptManifestError(f"the catalog of domain {domain!r} is unreadable: {error}") from None
        return cls(domain, {entry.name: entry for entry in entries})


def load_catalog(store: ObjectStore, domain: str) -> Catalog | None:
    stored = store.get_manifest(catalog_dataset(domain))
    return None if stored is None else Catalog.from_bytes(stored.data, domain)


def update_catalog(
    store: ObjectStore, domain: str, change: Callable[[Catalog | None], Catalog | None]
) -> tuple[Catalog | None, Catalog | None]:
    """Apply change to the current catalog (None: no domain) and publish its
    result (None: delete the domain) by compare-and-swap, trying again against
    whatever another writer published meanwhile. change may raise to give up.
    Returns (the catalog replaced, the one published)."""

    def step(stored: StoredManifest | None) -> Publication[tuple[Catalog | None, Catalog | None]]:
        current = None if stored is None else Catalog.from_bytes(stored.data, domain)
        changed = change(current)
        return Publication(None if changed is None else changed.to_manifest().to_bytes(), (current, changed))

    return commit(store, catalog_dataset(domain), step)
