"""The ``skyhook`` command line.

Every mistake a user can make ends as one line on stderr and a nonzero exit
(2 for wrong usage, 130 for Ctrl-C, 1 for the rest), never a traceback; text
that comes from the user or from an error is printed as it is, never as markup.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

import skyhook
from skyhook.distributed.schedule import parse_rate
from skyhook.errors import (
    CorruptManifestError,
    DatasetExistsError,
    InvalidRequestError,
    SkyhookError,
    StoreNotFoundError,
    first_line,
)
from skyhook.expression.commands import expression_app
from skyhook.ingest.files import file_format, input_files
from skyhook.ingest.garbage_collection import DEFAULT_RETENTION_SECONDS
from skyhook.names import counted
from skyhook.store import DEFAULT_FSCK_GRACE_SECONDS


class _Interrupted(Exception):
    """Ctrl-C, carried past typer (which would turn it into a silent exit)."""


class _Commands(TyperGroup):
    """Runs a command and turns whatever a user's mistake raises into one line."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted from None

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: object) -> Any:
        extra["standalone_mode"] = False
        try:
            code = super().main(args, prog_name, **extra)
        except _Interrupted:
            _fail("interrupted", 130)
        except typer.Abort:
            _fail("aborted", 1)
        except typer.TyperException as error:  # wrong usage, as click words it
            context = getattr(error, "ctx", None)
            hint = f" (see {context.command_path} --help)" if context is not None else ""
            message = error.format_message().strip() or "missing command"  # the help was just printed
            _fail(message + hint, getattr(error, "exit_code", 2))
        except (SkyhookError, OSError, pa.ArrowException) as error:
            _fail(first_line(error), 1)
        except Exception as error:  # a bug, not the user's mistake: say so, on one line
            if os.environ.get("SKYHOOK_DEBUG"):
                raise
            _fail(f"internal error: {type(error).__name__}: {first_line(error)} (SKYHOOK_DEBUG=1 shows where)", 1)
        sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(code)


app = typer.Typer(
    cls=_Commands,
    help="Skyhook: Arrow-native programmable storage.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(highlight=False)

StoreOption = Annotated[
    str, typer.Option("--store", "-s", envvar="SKYHOOK_STORE", help="Store URI (file:///path or a directory).")
]
DEFAULT_STORE = "skyhook-store"
# A cell wider than this is cut (with …) when a table is printed: --output has the full values.
MAX_CELL_WIDTH = 40


def _open(
    store: str,
    create: bool = False,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
    link_bytes_per_second: float | None = None,
) -> skyhook.Store:
    try:
        return skyhook.connect(
            store, create=create, retention_seconds=retention_seconds, link_bytes_per_second=link_bytes_per_second
        )
    except StoreNotFoundError as error:
        raise StoreNotFoundError(
            f"{error} (a mistyped --store? `skyhook import DATASET FILE --store {store}` creates a store)"
        ) from None


@app.command("import")
def import_(
    dataset: str,
    paths: list[Path],
    store: StoreOption = DEFAULT_STORE,
    format: Annotated[
        Optional[str], typer.Option(help="Object format: parquet (default) or ipc; an append keeps the dataset's.")
    ] = None,
    target_object_size_mb: Annotated[int, typer.Option(help="Target object size (MiB of Arrow data).")] = 32,
    rows_per_object: Annotated[Optional[int], typer.Option(help="At most this many rows per object.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing dataset.")] = False,
    append: Annotated[bool, typer.Option(help="Add the rows to the dataset (created if absent).")] = False,
    delimiter: Annotated[str, typer.Option(help="CSV: the field delimiter.")] = ",",
    null_value: Annotated[Optional[list[str]], typer.Option(help="CSV: a text meaning null (repeat).")] = None,
    column_type: Annotated[Optional[list[str]], typer.Option(help="CSV: NAME:TYPE, e.g. id:int64 (repeat).")] = None,
    header: Annotated[bool, typer.Option(help="CSV: the first line names the columns.")] = True,
    column_names: Annotated[Optional[str], typer.Option(help="CSV: column names, comma-separated.")] = None,
    skip_rows: Annotated[int, typer.Option(help="CSV: lines to skip at the start of each file.")] = 0,
) -> None:
    """Import Parquet, Arrow IPC or CSV files (or directories of them, Hive
    partitions kept as columns) as a dataset; creates the store if there is
    none at --store yet."""
    if overwrite and append:
        raise InvalidRequestError("--overwrite and --append exclude each other")
    csv_options = skyhook.CsvOptions(
        delimiter,
        null_value,
        _column_types(column_type or []),
        header,
        column_names and column_names.split(","),
        skip_rows,
    )
    files = input_files(paths)  # before the store: a wrong path creates nothing
    total_rows, estimated = _input_rows(files)
    # Shown from the first object on: a mistake found before that prints only its error.
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[rows]}"),
        TextColumn("{task.fields[size]}"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    task = bar.add_task(escape(f"importing {dataset}"), total=total_rows, rows="", size="")
    rows = consumed = objects = 0

    def advance(batch_rows: int, batch_bytes: int) -> None:  # called once per object stored
        nonlocal rows, consumed, objects
        rows, consumed, objects = rows + batch_rows, consumed + batch_bytes, objects + 1
        total = max(total_rows, rows)  # a CSV's row count is an estimate
        shown = f"{rows:,}/{'~' if estimated else ''}{total:,} rows"
        bar.update(task, completed=rows, total=total, rows=shown, size=_size(consumed))
        bar.start()

    with _open(store, create=True) as target:
        try:
            result = target.write_dataset(
                dataset,
                [str(p) for p in paths],
                format=format,
                target_object_size=target_object_size_mb << 20,
                rows_per_object=rows_per_object,
                mode="overwrite" if overwrite else "append" if append else "create",
                progress=advance,
                csv_options=csv_options,
            )
            bar.update(task, completed=rows, total=rows, rows=f"{rows:,} rows")
        except DatasetExistsError:
            raise DatasetExistsError(
                f"dataset {dataset!r} exists in {target.uri}: --overwrite replaces it, --append adds to it, "
                "`skyhook rm` deletes it"
            ) from None
        finally:
            if bar.live.is_started:
                bar.stop()
    console.print(
        Text.assemble(
            f"imported {counted(rows, 'row')} into {counted(objects, 'object')} as ",
            (dataset, "bold"),
            f" ({counted(len(result.manifest.partitions), 'object')}, {_size(result.manifest.size_bytes)} in all)",
        )
    )


def _input_rows(files: list[Path]) -> tuple[int, bool]:
    """Rows in the input files, and whether that is an estimate: Parquet and Arrow
    IPC files say how many they hold; a CSV file's count is estimated from the
    lines in its first MiB (counting all would read it twice)."""
    total, estimated = 0, False
    for path in files:
        kind = file_format(path)
        if kind != "csv":
            total += pads.dataset(str(path), format=kind).count_rows()
            continue
        size = path.stat().st_size
        with path.open("rb") as source:
            sample = source.read(1 << 20)
        lines = max(sample.count(b"\n"), 1)
        total += max(round(lines * size / max(len(sample), 1)) - 1, 0)  # - the header
        estimated = estimated or len(sample) < size
    return total, estimated


def _column_types(specs: list[str]) -> dict[str, pa.DataType]:
    types = {}
    for spec in specs:
        name, _, type_name = spec.rpartition(":")
        try:
            types[name] = pa.type_for_alias(type_name)
        except ValueError:
            raise InvalidRequestError(f"--column-type {spec!r}: expected NAME:TYPE with a type such as int64") from None
    return types


@app.command("ls")
def list_datasets(store: StoreOption = DEFAULT_STORE) -> None:
    """List the datasets of a store."""
    with _open(store) as source:
        names = source.list_datasets()
        if not names:
            console.print(f"no datasets in {source.uri}", markup=False)
            return
        table = Table("dataset", "rows", "objects", "size", "format")
        for name in names:
            try:
                manifest = source.manifest(name)
            except CorruptManifestError:  # one bad manifest must not hide the others
                table.add_row(Text(name), "", "", "", Text("corrupt manifest (skyhook fsck says more)", "red"))
                continue
            table.add_row(
                Text(name),
                f"{manifest.num_rows:,}",
                str(len(manifest.partitions)),
                _size(manifest.size_bytes),
                manifest.format,
            )
        console.print(table)


@app.command()
def describe(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Schema (full Arrow types), partitions, sizes and statistics of a dataset."""
    with _open(store) as source:
        manifest = source.manifest(dataset)
        console.print(
            Text.assemble(
                (dataset, "bold"),
                f": {counted(manifest.num_rows, 'row')}, {counted(len(manifest.partitions), 'object')}, "
                f"{_size(manifest.size_bytes)}, {manifest.format}",
            )
        )
        columns = Table("column", "type", "min", "max", "nulls", title="columns")
        statistics = manifest.statistics
        for field in manifest.schema:
            per_partition = statistics.field(field.name) if len(statistics) else None
            low, high, nulls = _column_summary(per_partition)
            columns.add_row(Text(field.name), Text(str(field.type)), Text(low), Text(high), f"{nulls:,}")
        console.print(columns)
        partitions = Table("partition", "object", "rows", "size", title="partitions")
        for partition in manifest.partitions:
            partitions.add_row(
                str(partition.number),
                Text(" + ".join(partition.object_names)),
                f"{partition.num_rows:,}",
                _size(partition.stored_bytes),
            )
        console.print(partitions)


def _column_summary(per_partition: pa.StructArray | None) -> tuple[str, str, int]:
    if per_partition is None:
        return "", "", 0
    nulls = pc.sum(per_partition.field("null_count")).as_py() or 0
    try:
        low = pc.min(per_partition.field("min")).as_py()
        high = pc.max(per_partition.field("max")).as_py()
    except pa.ArrowNotImplementedError:
        low = high = None
    return ("" if low is None else str(low)), ("" if high is None else str(high)), nulls


@app.command()
def query(
    dataset: str,
    store: StoreOption = DEFAULT_STORE,
    columns: Annotated[Optional[str], typer.Option("--columns", "-c", help="Comma-separated columns.")] = None,
    where: Annotated[
        Optional[str],
        typer.Option(
            "--where",
            "-w",
            help="Filter, e.g. \"price > 10 and flag == 'R'\" or SQL-style \"price > 10 AND flag = 'R'\".",
        ),
    ] = None,
    limit: Annotated[int, typer.Option(min=0, help="Rows to print (the scan stops there; --output writes all).")] = 20,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the whole result to .parquet or .csv.")
    ] = None,
    pushdown: Annotated[
        str, typer.Option(help="auto (the cost model decides per object), on, or off (plain reads).")
    ] = "auto",
    group_by: Annotated[Optional[str], typer.Option("--group-by", "-g", help="Comma-separated group keys.")] = None,
    agg: Annotated[
        Optional[list[str]],
        typer.Option("--agg", "-a", help="COLUMN:FUNCTION, e.g. l_quantity:sum, or count_all (repeatable)."),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show the plan and what will run where, without running it.")
    ] = False,
    analyze: Annotated[
        bool, typer.Option("--analyze", help="Run the query and say what ran in storage and what at the client.")
    ] = False,
) -> None:
    """Filter and project (or aggregate) a dataset in storage; print the result and statistics."""
    modes = {"auto": "auto", "on": True, "off": False}
    if pushdown not in modes:
        raise InvalidRequestError(f"--pushdown {pushdown!r}: expected auto, on or off")
    if output is not None:
        _check_output(output)
    aggregations = [_aggregation(spec) for spec in agg or []]
    keys = [key.strip() for key in group_by.split(",")] if group_by else []
    if keys and not aggregations:
        raise InvalidRequestError("--group-by needs at least one --agg COLUMN:FUNCTION")
    with _open(store) as source:
        data = source.dataset(dataset)
        names = [name.strip() for name in columns.split(",")] if columns else None
        if explain or analyze:
            describe = data.analyze if analyze else data.explain
            console.print(str(describe(names, where, keys=keys, aggregations=aggregations or None)), markup=False)
            return
        if aggregations:
            result = data.group_by(keys).aggregate(aggregations, filter=where)
            _show(result, output, limit, complete=True)
            statistics = data.last_aggregate.stats.as_dict()
            statistics.pop("where")
            _print_statistics(statistics)
            return
        scanner = data.scanner(columns=names, filter=where, pushdown=modes[pushdown])
        if output is not None:
            _show(scanner.to_table(), output, limit, complete=True)
        else:  # one row past the limit tells whether there are more
            _show(scanner.head(limit + 1), output, limit, complete=False)
        _print_statistics(scanner.stats.as_dict())


@app.command("sql")
def sql_query(
    query: str,
    store: StoreOption = DEFAULT_STORE,
    limit: Annotated[int, typer.Option(min=0, help="Rows to print (--output writes all).")] = 20,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the whole result to .parquet or .csv.")
    ] = None,
) -> None:
    """Run a SQL query with DuckDB, the store's datasets its tables (filters and projections run in storage)."""
    if output is not None:
        _check_output(output)
    with _open(store) as source:
        _show(source.sql(query), output, limit, complete=True)


def _aggregation(spec: str) -> tuple[str | list, str]:
    if spec == "count_all":  # rows per group: pyarrow's ([], "count_all")
        return [], spec
    column, _, function = spec.rpartition(":")
    if not column or not function:
        raise InvalidRequestError(f"--agg {spec!r}: expected COLUMN:FUNCTION, e.g. l_quantity:sum")
    return column, function


def _show(result: pa.Table, output: Optional[Path], limit: int, complete: bool) -> None:
    """The result written to output, or its first limit rows printed; complete: result is all of it."""
    if output:
        _write(result, output)
        console.print(f"wrote {result.num_rows:,} rows to {output}", markup=False)
    elif limit == 0:
        console.print(
            f"{counted(result.num_rows, 'row')}, none printed (--limit 0)"
            if complete
            else "rows not printed (--limit 0)",
            markup=False,
        )
    elif complete or result.num_rows <= limit:
        _print_table(
            result.slice(0, limit), f"{result.num_rows:,} rows" + (f", first {limit}" * (result.num_rows > limit))
        )
    else:
        _print_table(result.slice(0, limit), f"first {limit:,} rows (there are more; --output writes all)")


def _print_statistics(statistics: dict) -> None:
    table = Table("statistic", "value", title="statistics")
    for key, value in statistics.items():
        table.add_row(
            key,
            Text(
                _size(value) if key.startswith("bytes") else f"{value:,.3f}" if isinstance(value, float) else str(value)
            ),
        )
    console.print(table)


@app.command()
def rm(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Delete a dataset and its objects."""
    with _open(store) as source:
        source.delete_dataset(dataset)
    console.print(f"deleted {dataset}", markup=False)


@app.command()
def fsck(
    dataset: Annotated[Optional[str], typer.Argument(help="Check only this dataset.")] = None,
    store: StoreOption = DEFAULT_STORE,
    repair: Annotated[
        bool, typer.Option(help="Delete the orphans and the retired objects whose retention is over.")
    ] = False,
    grace_seconds: Annotated[
        float, typer.Option(help="Ceph: a write silent this long counts as abandoned.")
    ] = DEFAULT_FSCK_GRACE_SECONDS,
    retention_seconds: Annotated[
        float, typer.Option(help="How long replaced objects are kept for the readers that opened them.")
    ] = DEFAULT_RETENTION_SECONDS,
    verify: Annotated[
        bool, typer.Option(help="Also read every object whole in storage and check its bytes' checksums.")
    ] = False,
) -> None:
    """Find objects that no dataset and no running write owns (left by crashed writers), objects that
    manifests name and the store lacks, and, on Ceph, where the list of datasets and the manifests
    disagree; --repair fixes what it can (a missing object's data cannot be restored: rewrite or delete
    its dataset). Retired objects (replaced, kept for their readers) are not problems. Exits with 1 if
    problems remain."""
    with _open(store, retention_seconds=retention_seconds) as source:
        report = source.fsck(dataset, repair=repair, grace_seconds=grace_seconds, verify=verify)
    for title, names in (
        ("damaged objects (checksums fail; rewrite or delete their datasets)", report.damaged),
        ("orphan objects", report.orphans),
        ("missing objects (dangling references; a repair cannot restore them)", report.dangling),
        ("abandoned writes", report.abandoned_writes),
        ("writes in progress (left alone)", report.in_progress),
        ("corrupt manifests (their objects left alone)", report.corrupt_manifests),
        ("corrupt retirement records", report.corrupt_retirements),
        ("list of datasets", report.index_problems),
    ):
        if names:
            console.print(Text.assemble((title, "bold"), f" ({len(names)}):"))
            for name in names:
                console.print(f"  {name}", markup=False)
    if report.retired:
        kept = len(report.retired) - len(report.collected)
        console.print(f"retired objects: {len(report.retired)} (deleted now: {len(report.collected)}, kept: {kept})")
    if report.clean:
        console.print("clean")
    elif report.repaired:
        fixed = {
            "orphan objects deleted": report.orphans,
            "abandoned write records dropped": report.abandoned_writes,
            "corrupt retirement records dropped": report.corrupt_retirements,
            "entries of the list of datasets fixed": report.index_problems,
        }
        done = ", ".join(f"{what}: {len(names)}" for what, names in fixed.items() if names)
        console.print(f"repaired: {done}" if done else "nothing a repair can fix")
    elif report.orphans or report.abandoned_writes or report.corrupt_retirements or report.index_problems:
        console.print("run again with --repair to delete the orphans")
    if report.corrupt_manifests or report.dangling or report.damaged or not (report.clean or report.repaired):
        raise SystemExit(1)


@app.command()
def demo(
    store: StoreOption = "skyhook-demo-store",
    scale_factor: Annotated[float, typer.Option(help="TPC-H scale factor of lineitem.")] = 0.5,
    work_dir: Annotated[Path, typer.Option(help="Where the generated data goes.")] = Path("data"),
) -> None:
    """Generate TPC-H lineitem, import it, and compare pushdown with client-side filtering."""
    from skyhook.dev.demo import run_demo

    run_demo(store, scale_factor, work_dir, console)


design_app = typer.Typer(
    help="Physical designs of a dataset's objects, and transforms between them.", no_args_is_help=True
)
app.add_typer(design_app, name="design")


@design_app.command("show")
def design_show(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """The design of each object: format, column groups, sort order, compression, size."""
    with _open(store) as source:
        designs = source.dataset(dataset).design()
    table = Table(*designs.column_names)
    for row in designs.to_pylist():
        table.add_row(*(Text(_design_cell(value)) for value in row.values()))
    console.print(table)


def _design_cell(value: object) -> str:
    """Numbers with separators; column groups as "a,b | c", other lists as "a,b"."""
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return (
            " | ".join(_design_cell(item) for item in value)
            if value and isinstance(value[0], list)
            else ",".join(f"{item:,}" if isinstance(item, int) else str(item) for item in value)
        )
    return str(value)


@design_app.command("transform")
def design_transform(
    dataset: str,
    format: Annotated[str, typer.Option(help="rows, ipc or parquet.")],
    column_groups: Annotated[
        Optional[str],
        typer.Option(help="Columns stored together: 'a,b:c' (groups split by ':'), or 'each' (a group per column)."),
    ] = None,
    sort_by: Annotated[
        Optional[str], typer.Option(help="Sort keys inside each object: 'k1,k2:desc' (':desc' for descending).")
    ] = None,
    compression: Annotated[str, typer.Option(help="none, lz4, zstd or auto (chosen by measured cost).")] = "lz4",
    objects: Annotated[Optional[str], typer.Option(help="Partition numbers or object names, comma-separated.")] = None,
    client_side: Annotated[bool, typer.Option(help="Convert at the client instead of inside storage.")] = False,
    link_bytes_per_second: Annotated[
        Optional[float], typer.Option(help="The link's rate for --compression auto (default: observed, else local).")
    ] = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Rewrite a dataset's objects to a design, each in place, inside storage (or at the client)."""
    design = skyhook.Design(format, _column_groups(column_groups), _sort_keys(sort_by), compression)
    chosen = None if objects is None else [int(item) if item.isdigit() else item for item in objects.split(",")]
    with _open(store, link_bytes_per_second=link_bytes_per_second) as source:
        ds = source.dataset(dataset)
        if design.compression == "auto":
            choice = ds.choose_codec(design)
            console.print(str(choice), markup=False)
            design = dataclasses.replace(design, compression=choice.codec)
        total = len(ds.manifest.partitions) if chosen is None else len(chosen)
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} objects"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        task = bar.add_task(escape(f"transforming {dataset}"), total=total)
        with bar:
            report = ds.transform(design, chosen, "client" if client_side else "storage", lambda _: bar.advance(task))
    console.print(
        f"{report.rewritten} of {counted(len(report.objects), 'object')} rewritten ({'at the client' if client_side else 'in storage'}) "
        f"in {report.seconds:.2f} s: {_size(report.bytes_before)} -> {_size(report.bytes_after)}",
        markup=False,
    )


def _column_groups(spec: str | None) -> str | list[list[str]] | None:
    if spec is None or spec == "each":
        return spec
    return [[column for column in group.split(",") if column] for group in spec.split(":")]


def _sort_keys(spec: str | None) -> list[tuple[str, str]]:
    keys = []
    for item in (spec or "").split(","):
        if item:
            column, _, order = item.partition(":")
            if order not in ("", "asc", "desc"):
                raise InvalidRequestError(f"--sort-by {item!r}: expected COLUMN or COLUMN:desc")
            keys.append((column, "descending" if order == "desc" else "ascending"))
    return keys


cluster_app = typer.Typer(
    help="A local Ceph cluster (1 mon, 1 mgr, N OSDs) with the skyhook object class.", no_args_is_help=True
)
app.add_typer(cluster_app, name="cluster")
app.add_typer(expression_app, name="expression")
ClusterDir = Annotated[Path, typer.Argument(help="Cluster directory.")]
DEFAULT_CLUSTER_DIR = Path("skyhook-cluster")
NODE_LIMITS = (
    "max_call_ms",
    "max_call_memory_mb",
    "max_node_memory_mb",
    "max_reply_mb",
    "min_batch_size",
    "max_in_flight",
    "max_slice_cpu_ms",
)


@cluster_app.command("up")
def cluster_up(
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    osds: Annotated[
        Optional[int], typer.Option(help="Number of OSDs (new clusters): 3, or with --hosts 1 on each host.")
    ] = None,
    store: Annotated[str, typer.Option(help="bluestore (survives restarts) or memstore.")] = "bluestore",
    hosts: Annotated[
        Optional[int],
        typer.Option(help="Emulated hosts (new clusters; root): each a network namespace, link and cgroup."),
    ] = None,
    host_rate: Annotated[int, typer.Option(help="Each host's link, Mbit/s (with --hosts).")] = 1000,
    client_rate: Annotated[int, typer.Option(help="The client node's link, Mbit/s (with --hosts).")] = 1000,
    host_cpu: Annotated[float, typer.Option(help="Each host's CPU quota in cores, 0: none (with --hosts).")] = 0.0,
    client_cpu: Annotated[float, typer.Option(help="The client's CPU quota in cores, 0: none (with --hosts).")] = 0.0,
    host_memory: Annotated[int, typer.Option(help="Each host's memory budget, MiB, 0: none (with --hosts).")] = 1024,
    port: Annotated[Optional[int], typer.Option(help="Monitor port (v2; v1 uses port + 1).")] = None,
    worker: Annotated[
        bool, typer.Option(help="Start the transform worker beside the OSDs (log: DIR/log/worker.log).")
    ] = True,
    limit: Annotated[
        Optional[list[str]],
        typer.Option(
            help="A node limit of the OSDs (new clusters), NAME=VALUE: max_call_ms, "
            "max_call_memory_mb, max_node_memory_mb, max_reply_mb, min_batch_size, max_in_flight, "
            "max_slice_cpu_ms."
        ),
    ] = None,
) -> None:
    """Create and start a cluster, or start an existing one again; prints the store URI."""
    from skyhook.dev.cluster import LocalCluster

    limits = {}
    for item in limit or []:
        name, _, value = item.partition("=")
        if name not in NODE_LIMITS or not value.isdigit():
            raise InvalidRequestError(f"--limit {item!r}: expected NAME=INTEGER, NAME one of {', '.join(NODE_LIMITS)}")
        limits[name] = int(value)
    spec = None
    if hosts is not None:
        from skyhook.dev.hosts import HostsSpec

        spec = HostsSpec(
            hosts,
            host_rate_mbit=host_rate,
            client_rate_mbit=client_rate,
            host_cpu=host_cpu,
            client_cpu=client_cpu,
            host_memory_mib=host_memory,
        )
    started = time.perf_counter()
    uri = LocalCluster(directory).up(
        osds=osds or (1 if hosts else 3), store=store, port=port, node_limits=limits, worker=worker, hosts=spec
    )
    console.print(f"cluster ready in {time.perf_counter() - started:.1f} s", style="dim")
    print(uri)


@cluster_app.command("down")
def cluster_down(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Stop every daemon of the cluster (data stays; `up` starts it again)."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).down()
    console.print(f"stopped the cluster in {directory}", markup=False)


@cluster_app.command("status")
def cluster_status(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Daemons, their PIDs, OSD states and health."""
    from skyhook.dev.cluster import LocalCluster

    report = LocalCluster(directory).status()
    daemons = Table("daemon", "pid", "state", title=f"{report['directory']} ({report['store']}, port {report['port']})")
    for name, pid in report["daemons"].items():
        state = report.get("osds", {}).get(name, "running") if pid else "stopped"
        daemons.add_row(name, str(pid or "-"), Text(state))
    console.print(daemons)
    console.print(f"health: {report.get('health', 'unknown (monitor stopped)')}", markup=False)
    print(report["uri"])


@cluster_app.command("stop-osd")
def cluster_stop_osd(
    osd: int,
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    kill: Annotated[bool, typer.Option(help="SIGKILL instead of a clean stop.")] = False,
) -> None:
    """Stop one OSD."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).stop_osd(osd, kill=kill)
    console.print(f"osd.{osd} stopped")


@cluster_app.command("start-osd")
def cluster_start_osd(osd: int, directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Start one OSD again and wait until it is up."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).start_osd(osd)
    console.print(f"osd.{osd} up")


@cluster_app.command("stop-host")
def cluster_stop_host(
    host: Annotated[str, typer.Argument(help="An emulated host: h0, h1, ...")],
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    how: Annotated[
        str, typer.Option(help="freeze (its processes stop where they stand) or link (cut off).")
    ] = "freeze",
) -> None:
    """Stop an emulated host."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).stop_host(host, how)
    console.print(f"{host} stopped ({how})")


@cluster_app.command("start-host")
def cluster_start_host(
    host: Annotated[str, typer.Argument(help="An emulated host: h0, h1, ...")],
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
) -> None:
    """Bring a stopped emulated host back."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).start_host(host)
    console.print(f"{host} back")


@cluster_app.command("as", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def cluster_as(
    context: typer.Context,
    node: Annotated[str, typer.Argument(help="client, h0, h1, ..., gateway or control.")],
    directory: Annotated[Path, typer.Option("--cluster", help="Cluster directory.")] = DEFAULT_CLUSTER_DIR,
) -> None:
    """Run a command as an emulated node (its namespace, link and CPU quota): skyhook cluster as client -- CMD."""
    from skyhook.dev.cluster import LocalCluster

    if not context.args:
        raise InvalidRequestError("give the command to run after --, e.g. skyhook cluster as client -- skyhook ls URI")
    prefix = LocalCluster(directory).hosts().command_prefix(node)
    raise SystemExit(subprocess.run([*prefix, *context.args]).returncode)


@cluster_app.command("user")
def cluster_user(
    name: str,
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    role: Annotated[str, typer.Option(help="reader, writer or admin.")] = "reader",
    namespace: Annotated[
        Optional[str], typer.Option(help="Restrict the user to this RADOS namespace (default: the whole pool).")
    ] = None,
) -> None:
    """Create a Ceph user with the least capabilities of a role; prints its store URI."""
    from skyhook.dev.cluster import LocalCluster, role_capabilities

    cluster = LocalCluster(directory)
    capabilities = role_capabilities(role, namespace=namespace)
    keyring = cluster.add_user(name, capabilities)
    for daemon, capability in capabilities.items():
        console.print(f"{daemon} '{capability}'", style="dim", markup=False)
    print(cluster.user_uri(name, keyring, namespace))


gateway_app = typer.Typer(help="The cluster's S3 gateway (RGW), for the baseline readers.", no_args_is_help=True)
cluster_app.add_typer(gateway_app, name="gateway")


@gateway_app.command("up")
def gateway_up(
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    port: Annotated[
        Optional[int], typer.Option(help="Its port (default: the one it had, else 7480 or next free).")
    ] = None,
) -> None:
    """Start the cluster's RGW (and its S3 user); prints the endpoint and keys as JSON."""
    import json

    from skyhook.dev.cluster import LocalCluster
    from skyhook.dev.gateway import Gateway

    print(json.dumps(Gateway(LocalCluster(directory), port).up().as_dict()))


@gateway_app.command("down")
def gateway_down(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Stop the cluster's RGW (its buckets stay)."""
    from skyhook.dev.cluster import LocalCluster
    from skyhook.dev.gateway import Gateway

    Gateway(LocalCluster(directory)).down()
    console.print("gateway stopped")


def _print_table(table: pa.Table, title: str) -> None:
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


def _check_output(path: Path) -> None:
    if path.suffix.lower() not in (".parquet", ".pq", ".csv"):
        raise InvalidRequestError(f"cannot write {path}: use a .parquet or .csv file name")


def _write(table: pa.Table, path: Path) -> None:
    if path.suffix.lower() == ".csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)


def _size(value: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return str(value)


# Distributed transforms: plans stored in the store, run here or by `skyhook worker`.


@design_app.command("plan")
def design_plan(
    dataset: str,
    rows_per_object: Annotated[Optional[int], typer.Option(help="Rows per target object.")] = None,
    object_size: Annotated[Optional[int], typer.Option(help="Bytes per target object (default 32 MiB).")] = None,
    cluster_by: Annotated[
        Optional[str],
        typer.Option(help="Range-partition by this column (sorted inside), or by several (a,b) with --zorder."),
    ] = None,
    zorder: Annotated[
        bool, typer.Option(help="Cluster by the --cluster-by keys in Z-order: each object a box of their space.")
    ] = False,
    where: Annotated[Optional[str], typer.Option("--where", "-w", help="Copy only these rows (needs --into).")] = None,
    columns: Annotated[
        Optional[str], typer.Option("--columns", "-c", help="Copy only these columns (needs --into).")
    ] = None,
    into: Annotated[
        Optional[str], typer.Option(help="Copy into this new dataset instead of rewriting in place.")
    ] = None,
    format: Annotated[Optional[str], typer.Option(help="Target objects' format: rows, ipc or parquet.")] = None,
    pass_memory: Annotated[
        Optional[int],
        typer.Option(help="A cluster's target bytes held per pass over the sources, decoded (default 512 MiB)."),
    ] = None,
    column_objects: Annotated[
        Optional[str],
        typer.Option(help='Gather column groups into objects of their own ("a|b,c"; "" merges them back).'),
    ] = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Plan a transform across a dataset's objects (compact or split, cluster by a key, filter-then-copy, column
    objects): prints its steps and the bytes each reads, moves and writes; nothing changes until `skyhook design
    run`."""
    target = skyhook.TransformTarget(
        rows_per_object=rows_per_object,
        object_size=object_size,
        cluster_by=None if cluster_by is None else [key for key in cluster_by.split(",") if key],
        zorder=zorder,
        filter=where,
        columns=None if columns is None else [column for column in columns.split(",") if column],
        into=into,
        design=None if format is None else skyhook.Design(format),
        pass_memory=pass_memory,
        column_objects=None
        if column_objects is None
        else [group.split(",") for group in column_objects.split("|") if group],
    )
    with _open(store) as source:
        plan = source.dataset(dataset).plan_transform(target)
    console.print(str(plan), markup=False)
    console.print(f"stored as plan {plan.id}: run it with `skyhook design run {dataset}`", markup=False)


@design_app.command("advise")
def design_advise(
    dataset: str,
    apply: Annotated[
        bool, typer.Option(help="Plan and run the first proposed transform, then build the indexes that cut bytes.")
    ] = False,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Propose designs from the dataset's workload log, with the bytes the logged queries would read before and
    after; --apply plans and runs the first transform among them, what the workload reads most first, then builds
    the proposed indexes estimated to cut bytes (on the transformed objects)."""
    with _open(store) as source:
        target = source.dataset(dataset)
        advice = target.advise()
        for item in advice:
            console.print(str(item), markup=False)
        transform = next((item for item in advice if item.target is not None), None)
        indexes = [item.index for item in advice if item.index is not None and item.applicable]
        if apply and transform is None and not indexes:
            raise InvalidRequestError(f"nothing to apply to {dataset!r}: no transform or useful index is proposed")
        if not apply:
            return
        if transform is not None:
            plan = target.plan_transform(transform.target)
            console.print(str(plan), markup=False)
            _run_with_bar(source, plan, skyhook.Schedule(order="working-set"))
        for column in indexes:
            source.dataset(dataset).create_index(column)
            console.print(f"index on {column!r}: built in every object", markup=False)


def _chosen_plan(source: skyhook.Store, dataset: str, plan_id: str | None, states: tuple[str, ...]) -> skyhook.Plan:
    if plan_id is not None:
        return source.plan(dataset, plan_id)
    candidates = [plan for plan in source.plans(dataset) if plan.state in states]
    if not candidates:
        raise InvalidRequestError(f"dataset {dataset!r} has no plan that is {' or '.join(states)}")
    return candidates[-1]


def _run_with_bar(source: skyhook.Store, plan: skyhook.Plan, schedule: skyhook.Schedule | None = None) -> skyhook.Plan:
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps"),
        TimeElapsedColumn(),
        console=console,
    )
    task = bar.add_task(escape(f"plan {plan.id} of {plan.dataset}"), total=len(plan.steps), completed=plan.steps_done)
    with bar:
        done = source.resume_plan(plan, lambda progress, _: bar.update(task, completed=progress.steps_done), schedule)
    console.print(f"plan {done.id}: {done.state}, {done.steps_done}/{len(done.steps)} steps", markup=False)
    return done


PlanOption = Annotated[Optional[str], typer.Option("--plan", help="The plan's id (default: the latest that fits).")]


@design_app.command("run")
def design_run(
    dataset: str,
    plan: PlanOption = None,
    worker: Annotated[bool, typer.Option(help="Queue it for `skyhook worker` instead of running it here.")] = False,
    rate: Annotated[
        Optional[str], typer.Option(help="At most this many bytes/s read and written, e.g. 50MB/s.")
    ] = None,
    parallel: Annotated[int, typer.Option(help="Stream steps in flight at once.")] = 1,
    order: Annotated[
        str, typer.Option(help="key (as planned) or working-set (what the logged workload reads most first).")
    ] = "key",
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Run a dataset's planned transform under a schedule, with a progress bar."""
    schedule = skyhook.Schedule(None if rate is None else parse_rate(rate), parallel, order)
    with _open(store) as source:
        chosen = _chosen_plan(source, dataset, plan, ("planned",))
        if worker:
            source.queue_plan(chosen, schedule)
            console.print(f"plan {chosen.id} queued for `skyhook worker`", markup=False)
        else:
            _run_with_bar(source, chosen, schedule)


@design_app.command("resume")
def design_resume(dataset: str, plan: PlanOption = None, store: StoreOption = DEFAULT_STORE) -> None:
    """Finish a transform whose run stopped (crashed, killed, paused or failed)."""
    with _open(store) as source:
        _run_with_bar(source, _chosen_plan(source, dataset, plan, ("running", "paused", "failed")))


@design_app.command("cancel")
def design_cancel(dataset: str, plan: PlanOption = None, store: StoreOption = DEFAULT_STORE) -> None:
    """Cancel a transform: groups committed stay, the others' new objects are deleted."""
    with _open(store) as source:
        chosen = source.cancel_plan(
            _chosen_plan(source, dataset, plan, ("planned", "queued", "running", "paused", "failed"))
        )
    console.print(f"plan {chosen.id} cancelled", markup=False)


@design_app.command("status")
def design_status(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """The dataset's transform plans: state, steps done, bytes, and the latest one's steps."""
    with _open(store) as source:
        plans = source.plans(dataset)
    table = Table("plan", "state", "steps", "read", "move", "write", "what")
    for plan in plans:
        table.add_row(
            *(Text(value) for value in (plan.id, plan.state, f"{plan.steps_done}/{len(plan.steps)}")),
            *(Text(_size(value)) for value in (plan.bytes_read, plan.bytes_moved, plan.bytes_written)),
            Text(plan.summary + (f" (error: {plan.error})" if plan.error else "")),
        )
    console.print(table)
    for plan in plans:
        if plan.state == "running":
            until = time.strftime("%H:%M:%S", time.localtime(plan.lease_expiry))
            console.print(f"plan {plan.id}: run by {plan.runner}, its lease until {until}", markup=False)


@app.command()
def worker(
    store: StoreOption = DEFAULT_STORE,
    once: Annotated[bool, typer.Option(help="Stop when no plan is left to run.")] = False,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between polls.")] = 5.0,
) -> None:
    """Run the transform plans queued (`skyhook design run --worker`) or left by a dead runner: the storage tier's
    driver of distributed transforms (run it beside the OSDs)."""
    from skyhook.distributed.worker import work

    def log(plan: skyhook.Plan | None, outcome: str | None) -> None:
        if plan is None:
            console.print(f"cannot list the plans (polling again): {outcome}", markup=False)
            return
        said = "started" if outcome == "started" else ("done" if outcome is None else f"failed: {outcome}")
        console.print(f"plan {plan.id} of {plan.dataset}: {said}", markup=False)

    with _open(store) as source:
        ran = work(source.backend, log, once, interval, source.retention_seconds)
    console.print(f"{ran} plan(s) run", markup=False)


# Secondary design (statistics and indexes in each object's omap).


def _object_progress(description: str) -> tuple[Progress, Any]:
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


@design_app.command("analyze")
def design_analyze(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Compute statistics per column and zone (row group, record batch) in every object: scans in storage
    skip the zones their filter excludes."""
    with _open(store) as source:
        data = source.dataset(dataset)
        bar, advance = _object_progress(f"analyzing {dataset}")
        try:
            published = data.compute_statistics(progress=advance)
        finally:
            if bar.live.is_started:
                bar.stop()
    console.print(
        f"statistics of {dataset} computed in {counted(len(data.manifest.partitions), 'object')}, "
        f"published in the manifest for {published}",
        markup=False,
    )


@design_app.command("index")
def design_index(
    dataset: str,
    column: Annotated[str, typer.Option("--column", "-c", help="The column to index.")],
    drop: Annotated[bool, typer.Option(help="Remove the column's index instead.")] = False,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Index a column in every object (equality, range and IN filters on it read only matching rows)."""
    with _open(store) as source:
        data = source.dataset(dataset)
        bar, advance = _object_progress(f"{'dropping the index of' if drop else 'indexing'} {dataset}.{column}")
        try:
            (data.drop_index if drop else data.create_index)(column, progress=advance)
        finally:
            if bar.live.is_started:
                bar.stop()
    done = "dropped from" if drop else "built in"
    console.print(f"index of {column} {done} {counted(len(data.manifest.partitions), 'object')}", markup=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
