"""pyarrow computing a query locally: the answer every scan is checked against."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads


def expected(table: pa.Table, columns=None, filter: pc.Expression | None = None) -> pa.Table:
    return pads.dataset(table).to_table(columns=columns, filter=filter)
