"""What an execution needs of a dataset: its manifest (schema, partitions,
statistics) and the backend that holds its objects. Executions never reach
back to the user-facing Dataset or Store."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.catalog.manifest import Manifest


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
