"""What a spawned process pool runs: importable by the child, which gets its arguments pickled."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import skyhook


def scan_filtered(dataset: skyhook.Dataset, filter: pc.Expression) -> pa.Table:
    return dataset.to_table(filter=filter)
