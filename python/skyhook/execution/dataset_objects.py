"""What an execution needs of a dataset: its manifest (schema, partitions,
statistics) and the backend that holds its objects. Executions never reach
back to the user-facing Dataset or Store."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.catalog.manifest import Manifest
from skyhook.errors import CorruptManifestError, DatasetChangedError, ObjectNotFoundError, SkyhookError


@dataclass(frozen=True)
class DatasetObjects:
    manifest: Manifest
    backend: Backend

    @property
    def name(self) -> str:
        return self.manifest.dataset

    @property
    def schema(self) -> pa.Schema:
        return self.manifest.schema

    def missing(self, error: ObjectNotFoundError) -> SkyhookError:
        """What an object of this version missing means: if the dataset was
        replaced or deleted since, the version's objects were retired and their
        retention is over (DatasetChangedError); else the error itself."""
        stored = self.backend.get_manifest(self.name)
        try:
            current = None if stored is None else Manifest.from_bytes(stored.data, self.name)
        except CorruptManifestError:
            return error
        if current is not None and current.at_generation(self.manifest.generation) is not None:
            return error
        now = "deleted" if current is None else f"now generation {current.generation}"
        return DatasetChangedError(
            f"dataset {self.name!r} was replaced since this version of it (generation "
            f"{self.manifest.generation}) was opened ({now}), and its objects outlived their "
            f"retention: open it again with store.dataset({self.name!r})"
        )
