"""``skyhook import, ls, describe, query, sql, rm, fsck, demo``: datasets and their queries."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

import skyhook
from skyhook.cli.app import DEFAULT_STORE, StoreOption, app, console, open_store
from skyhook.cli.output import check_output, print_statistics, show, size_text
from skyhook.errors import CorruptManifestError, DatasetExistsError, InvalidRequestError
from skyhook.expression.consistency import MatrixCheck, check_matrices
from skyhook.ingest.files import file_format, input_files
from skyhook.ingest.garbage_collection import DEFAULT_RETENTION_SECONDS
from skyhook.names import counted
from skyhook.store import DEFAULT_FSCK_GRACE_SECONDS


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
        bar.update(task, completed=rows, total=total, rows=shown, size=size_text(consumed))
        bar.start()

    with open_store(store, create=True) as target:
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
            f" ({counted(len(result.manifest.partitions), 'object')}, {size_text(result.manifest.size_bytes)} in all)",
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
    with open_store(store) as source:
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
                size_text(manifest.size_bytes),
                manifest.format,
            )
        console.print(table)


@app.command()
def describe(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Schema (full Arrow types), partitions, sizes and statistics of a dataset."""
    with open_store(store) as source:
        manifest = source.manifest(dataset)
        console.print(
            Text.assemble(
                (dataset, "bold"),
                f": {counted(manifest.num_rows, 'row')}, {counted(len(manifest.partitions), 'object')}, "
                f"{size_text(manifest.size_bytes)}, {manifest.format}",
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
                size_text(partition.stored_bytes),
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
    version: Annotated[
        Optional[int], typer.Option("--version", min=0, help="Query this kept version (skyhook versions NAME).")
    ] = None,
    tag: Annotated[Optional[str], typer.Option("--tag", help="Query the version of this tag.")] = None,
) -> None:
    """Filter and project (or aggregate) a dataset in storage; print the result and statistics."""
    modes = {"auto": "auto", "on": True, "off": False}
    if pushdown not in modes:
        raise InvalidRequestError(f"--pushdown {pushdown!r}: expected auto, on or off")
    if output is not None:
        check_output(output)
    aggregations = [_aggregation(spec) for spec in agg or []]
    keys = [key.strip() for key in group_by.split(",")] if group_by else []
    if keys and not aggregations:
        raise InvalidRequestError("--group-by needs at least one --agg COLUMN:FUNCTION")
    with open_store(store) as source:
        data = source.dataset(dataset, version, tag=tag)
        names = [name.strip() for name in columns.split(",")] if columns else None
        if explain or analyze:
            describe = data.analyze if analyze else data.explain
            console.print(str(describe(names, where, keys=keys, aggregations=aggregations or None)), markup=False)
            return
        if aggregations:
            result = data.group_by(keys).aggregate(aggregations, filter=where)
            show(result, output, limit, complete=True)
            statistics = data.last_aggregate.stats.as_dict()
            statistics.pop("where")
            print_statistics(statistics)
            return
        scanner = data.scanner(columns=names, filter=where, pushdown=modes[pushdown])
        if output is not None:
            show(scanner.to_table(), output, limit, complete=True)
        else:  # one row past the limit tells whether there are more
            show(scanner.head(limit + 1), output, limit, complete=False)
        print_statistics(scanner.stats.as_dict())


@app.command("delete")
def delete_rows(
    dataset: str,
    where: Annotated[str, typer.Option("--where", "-w", help="The rows to delete, e.g. \"flag = 'R'\".")],
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Delete the rows where a filter is true, in storage, as the dataset's next version."""
    with open_store(store) as source:
        change = source.dataset(dataset).delete(where)
        if change.manifest is None:
            console.print("no row matches: nothing deleted")
            return
        console.print(
            f"deleted {counted(change.rows_deleted, 'row')}: {counted(change.objects_rewritten, 'object')} "
            f"rewritten in storage, {counted(change.objects_dropped, 'object')} dropped; "
            f"version {change.manifest.version}"
        )


@app.command()
def versions(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """The kept versions of a dataset: number, time, operation, rows, size and tags."""
    with open_store(store) as source:
        listed = source.dataset(dataset).versions()
        table = Table("version", "committed", "operation", "rows", "size", "tags", title=dataset)
        for row in listed.to_pylist():
            committed = row["committed_at"]
            table.add_row(
                str(row["version"]),
                "" if committed is None else committed.strftime("%Y-%m-%d %H:%M:%S %Z"),
                Text(row["operation"] or ""),
                f"{row['num_rows']:,}",
                size_text(row["size_bytes"]),
                Text(", ".join(row["tags"])),
            )
        console.print(table)


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
        check_output(output)
    with open_store(store) as source:
        show(source.sql(query), output, limit, complete=True)


def _aggregation(spec: str) -> tuple[str | list, str]:
    if spec == "count_all":  # rows per group: pyarrow's ([], "count_all")
        return [], spec
    column, _, function = spec.rpartition(":")
    if not column or not function:
        raise InvalidRequestError(f"--agg {spec!r}: expected COLUMN:FUNCTION, e.g. l_quantity:sum")
    return column, function


@app.command()
def rm(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Delete a dataset and its objects."""
    with open_store(store) as source:
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
    with open_store(store, retention_seconds=retention_seconds) as source:
        report = source.fsck(dataset, repair=repair, grace_seconds=grace_seconds, verify=verify)
        matrices = check_matrices(source, repair, grace_seconds) if dataset is None else MatrixCheck()
    for title, names in (
        ("damaged objects (checksums fail; rewrite or delete their datasets)", report.damaged),
        ("orphan objects", report.orphans),
        ("missing objects (dangling references; a repair cannot restore them)", report.dangling),
        ("abandoned writes", report.abandoned_writes),
        ("writes in progress (left alone)", report.in_progress),
        ("corrupt manifests (their objects left alone)", report.corrupt_manifests),
        ("corrupt retirement records", report.corrupt_retirements),
        ("list of datasets", report.index_problems),
        ("datasets of unpublished expression matrices (left by killed imports)", matrices.unpublished),
        ("expression imports in progress (left alone)", matrices.in_progress),
    ):
        if names:
            console.print(Text.assemble((title, "bold"), f" ({len(names)}):"))
            for name in names:
                console.print(f"  {name}", markup=False)
    if report.retired:
        kept = len(report.retired) - len(report.collected)
        console.print(f"retired objects: {len(report.retired)} (deleted now: {len(report.collected)}, kept: {kept})")
    if report.clean and not matrices.unpublished:
        console.print("clean")
    elif report.repaired:
        fixed = {
            "orphan objects deleted": report.orphans,
            "unpublished matrix datasets deleted": matrices.unpublished,
            "abandoned write records dropped": report.abandoned_writes,
            "corrupt retirement records dropped": report.corrupt_retirements,
            "entries of the list of datasets fixed": report.index_problems,
        }
        done = ", ".join(f"{what}: {len(names)}" for what, names in fixed.items() if names)
        console.print(f"repaired: {done}" if done else "nothing a repair can fix")
    elif report.orphans or report.abandoned_writes or report.corrupt_retirements or report.index_problems:
        console.print("run again with --repair to delete the orphans")
    elif matrices.unpublished:
        console.print("run again with --repair to delete the unpublished matrices' datasets")
    unrepaired = not (report.clean or report.repaired) or (matrices.unpublished and not matrices.repaired)
    if report.corrupt_manifests or report.dangling or report.damaged or unrepaired:
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
