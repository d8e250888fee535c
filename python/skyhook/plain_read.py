"""The plain path: read a whole object and let pyarrow decode and filter it at
the client (pushdown off, chosen by the cost model, or pushed back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook.errors import CorruptObjectError, InvalidRequestError

if TYPE_CHECKING:
    from skyhook.dataset import Dataset
    from skyhook.manifest import Partition


def read_partition(dataset: Dataset, partition: Partition, columns=None,
                   filter: pc.Expression | None = None) -> tuple[int, int, pa.Table]:
    """(object bytes moved, rows in the object, the filtered and projected table)."""
    data = dataset.store.backend.read_object(partition.object_name)
    file_format = pads.ParquetFileFormat() if dataset.manifest.format == "parquet" else pads.IpcFileFormat()
    try:
        fragment = file_format.make_fragment(pa.BufferReader(data))
        rows = fragment.count_rows()
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as error:
        raise _corrupt(partition, dataset.manifest.format, error) from None
    try:
        table = fragment.to_table(schema=dataset.schema, columns=columns, filter=filter, use_threads=False)
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as error:
        try:  # the data itself, or the expressions?
            fragment.to_table(schema=dataset.schema, use_threads=False)
        except (pa.ArrowInvalid, pa.ArrowIOError, OSError):
            raise _corrupt(partition, dataset.manifest.format, error) from None
        raise InvalidRequestError(f"evaluating the filter or projection failed: {error}") from None
    return data.size, rows, table


def _corrupt(partition: Partition, format: str, error: Exception) -> CorruptObjectError:
    return CorruptObjectError(f"object {partition.object_name} is not a readable {format} partition: "
                              f"{str(error).splitlines()[0]}")
