"""What the commands print and write: tables cut to the terminal, results to
.parquet or .csv, statistics, sizes, progress bars. Text that comes from the
user or from an error is printed as it is, never as markup."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from skyhook.cli.app import console
from skyhook.errors import InvalidRequestError
from skyhook.names import counted

# A cell wider than this is cut (with …) when a table is printed: --output has the full values.
MAX_CELL_WIDTH = 40


def show(result: pa.Table, output: Optional[Path], limit: int, complete: bool) -> None:
    """The result written to output, or its first limit rows printed; complete: result is all of it."""
    if output:
        write_table(result, output)
        console.print(f"wrote {result.num_rows:,} rows to {output}", markup=False)
    elif limit == 0:
        console.print(
            f"{counted(result.num_rows, 'row')}, none printed (--limit 0)"
            if complete
            else "rows not printed (--limit 0)",
            markup=False,
        )
    elif complete or result.num_rows <= limit:
        print_table(
            result.slice(0, limit), f"{result.num_rows:,} rows" + (f", first {limit}" * (result.num_rows > limit))
        )
    else:
        print_table(result.slice(0, limit), f"first {limit:,} rows (there are more; --output writes all)")


def print_statistics(statistics: dict) -> None:
    table = Table("statistic", "value", title="statistics")
    for key, value in statistics.items():
        table.add_row(
            key,
            Text(
                size_text(value)
                if key.startswith("bytes")
                else f"{value:,.3f}"
                if isinstance(value, float)
                else str(value)
            ),
        )
    console.print(table)


def print_table(table: pa.Table, title: str) -> None:
    """As many leading columns as fit the terminal, cells cut at MAX_CELL_WIDTH; the rest named below."""
    cells = [[_cell(value) for value in column.to_pylist()] for column in table.columns]
    used, shown = 1, 0  # the left border
    for name, values in zip(table.column_names, cells):
        width = min(max(map(len, [name, *values])), MAX_CELL_WIDTH) + 3  # padding and a border
        if shown and used + width > console.width:
            break
        used, shown = used + width, shown + 1
    hidden = table.column_names[shown:]
    caption = f"… {len(hidden)} more columns: {', '.join(hidden)} (--columns picks, --output writes all)"
    printed = Table(title=Text(title), caption=Text(caption) if hidden else None, caption_justify="left")
    for name in table.column_names[:shown]:
        printed.add_column(Text(name), no_wrap=True, overflow="ellipsis", max_width=MAX_CELL_WIDTH)
    for row in zip(*cells[:shown]):
        printed.add_row(*map(Text, row))
    console.print(printed)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def check_output(path: Path) -> None:
    if path.suffix.lower() not in (".parquet", ".pq", ".csv"):
        raise InvalidRequestError(f"cannot write {path}: use a .parquet or .csv file name")


def write_table(table: pa.Table, path: Path) -> None:
    if path.suffix.lower() == ".csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)


def size_text(value: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return str(value)


def object_progress(description: str) -> tuple[Progress, Any]:
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[objects]}"),
        TimeElapsedColumn(),
        console=console,
    )
    task = bar.add_task(escape(description), total=None, objects="")

    def advance(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total, objects=f"{done}/{total} objects")
        bar.start()

    return bar, advance
