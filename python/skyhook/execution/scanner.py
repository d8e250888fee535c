"""The user's scan handle: a real ``pyarrow.dataset.Scanner`` over the Arrow
dataset of the stored objects, so anything that takes a pyarrow Scanner takes
it (``pads.write_dataset``, ``scan_batches``, Acero). Its own ``to_table``,
``to_batches``, ``to_reader``, ``count_rows``, ``head`` and ``take`` run the
scan execution directly, which also computes projections in storage; its
``stats`` are the metrics of everything run through it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook._arrow_dataset import ObjectScanOptions, adopt_scanner
from skyhook.errors import options_from
from skyhook.execution.scan_execution import ScanExecution, ScanStatistics
from skyhook.execution.scan_options import ScanKeywords, ScanOptions
from skyhook.plan.expressions import Columns, conjunction

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from skyhook.execution.dataset_objects import DatasetObjects

#: Keywords of pyarrow's Scanner.from_dataset that the C++ scanner takes as they are.
ARROW_SCAN_OPTIONS = ("batch_readahead", "fragment_readahead", "cache_metadata", "memory_pool")


class Scanner(pads.Scanner):
    def __init__(
        self,
        arrow_dataset: pads.Dataset,
        source: DatasetObjects,
        columns: Columns = None,
        filter: pc.Expression | None = None,
        **options: Unpack[ScanKeywords],
    ) -> None:
        options.pop("fragment_scan_options", None)  # a skyhook scan passes its own
        batch_size, use_threads = options.pop("batch_size", None), options.pop("use_threads", True)
        # What pickling keeps: the dataset's own reference (holding the dataset would
        # make a cycle through its last_scan); a memory pool belongs to this process.
        self._reference = (arrow_dataset.__reduce__(), columns, filter, batch_size, use_threads)
        self._options = {key: value for key, value in options.items() if key != "memory_pool"}
        arrow_options = {key: options.pop(key) for key in ARROW_SCAN_OPTIONS if key in options}
        # As in pyarrow, a filtered dataset's filter applies too (pyarrow adds it to the C++ scan).
        combined = conjunction(arrow_dataset._scan_options.get("filter"), filter)
        self.execution = ScanExecution(
            source,
            columns,
            combined,
            batch_size=batch_size,
            options=options_from(ScanOptions, {**options, "use_threads": use_threads}, "scanner"),
        )
        if batch_size is not None:
            arrow_options["batch_size"] = batch_size
        native = pads.Scanner.from_dataset(
            arrow_dataset,
            columns=columns,
            filter=filter,
            use_threads=use_threads,
            fragment_scan_options=ObjectScanOptions(self.execution),
            **arrow_options,
        )
        adopt_scanner(self, native)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles by reference: its dataset (see skyhook.Dataset), columns, filter,
        batch_size, use_threads and options (but memory_pool); unpickling asks the
        reopened dataset for the same scanner."""
        return (reopen_scanner, (*self._reference, self._options))

    def __repr__(self) -> str:
        execution = self.execution
        return f"<skyhook.Scanner of {execution.source.name!r} filter={execution.filter} columns={execution.columns}>"

    @property
    def stats(self) -> ScanStatistics:
        return self.execution.stats

    @property
    def filter(self) -> pc.Expression | None:
        return self.execution.filter

    @property
    def columns(self) -> Columns:
        return self.execution.columns

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return self.execution.to_batches()

    def to_reader(self) -> pa.RecordBatchReader:
        return self.execution.to_reader()

    def to_table(self) -> pa.Table:
        return self.execution.to_table()

    def count_rows(self) -> int:
        return self.execution.count_rows()

    def head(self, num_rows: int) -> pa.Table:
        return self.execution.head(num_rows)

    def take(self, indices: pa.Array | list[int]) -> pa.Table:
        return self.execution.take(indices)


def reopen_scanner(
    dataset: tuple[Callable[..., Any], tuple[Any, ...]],
    columns: Columns,
    filter: pc.Expression | None,
    batch_size: int | None,
    use_threads: bool,
    options: ScanKeywords,
) -> Scanner:
    """A pickled scanner: the same scan of the reopened dataset."""
    reopen, arguments = dataset
    return reopen(*arguments).scanner(columns, filter, batch_size=batch_size, use_threads=use_threads, **options)
