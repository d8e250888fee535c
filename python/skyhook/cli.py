"""The ``skyhook`` command line."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import skyhook
from skyhook.errors import CorruptManifestError, InvalidRequestError, SkyhookError
from skyhook.ingest.sources import input_files
from skyhook.store import DEFAULT_FSCK_GRACE_SECONDS

app = typer.Typer(
    help="Skyhook: Arrow-native programmable storage.", no_args_is_help=True, pretty_exceptions_enable=False
)
console = Console(width=None if sys.stdout.isatty() else 120)

StoreOption = Annotated[
    str, typer.Option("--store", "-s", envvar="SKYHOOK_STORE", help="Store URI (file:///path or a directory).")
]
DEFAULT_STORE = "skyhook-store"


def _open(store: str) -> skyhook.Store:
    return skyhook.connect(store)


@app.command("import")
def import_(
    dataset: str,
    paths: list[Path],
    store: StoreOption = DEFAULT_STORE,
    format: Annotated[str, typer.Option(help="Object format: parquet or ipc.")] = "parquet",
    target_object_size_mb: Annotated[int, typer.Option(help="Target object size (MiB of Arrow data).")] = 32,
    rows_per_object: Annotated[Optional[int], typer.Option(help="At most this many rows per object.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing dataset.")] = False,
) -> None:
    """Import Parquet, Arrow IPC or CSV files (or directories of them) as a dataset."""
    total = sum(path.stat().st_size for path in input_files(paths))
    with (
        _open(store) as target,
        Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(), TimeElapsedColumn(), console=console
        ) as bar,
    ):
        task = bar.add_task(f"importing {dataset}", total=total)
        rows = 0

        def advance(written_rows: int, written_bytes: int) -> None:
            nonlocal rows
            rows += written_rows
            bar.update(task, advance=written_bytes)

        result = target.write_dataset(
            dataset,
            [str(p) for p in paths],
            format=format,
            target_object_size=target_object_size_mb << 20,
            rows_per_object=rows_per_object,
            mode="overwrite" if overwrite else "create",
            progress=advance,
        )
        bar.update(task, completed=total)
    console.print(
        f"imported {rows:,} rows into {len(result.manifest.partitions)} objects "
        f"({_size(result.manifest.size_bytes)}) as [bold]{dataset}[/bold]"
    )


@app.command("ls")
def list_datasets(store: StoreOption = DEFAULT_STORE) -> None:
    """List the datasets of a store."""
    with _open(store) as source:
        table = Table("dataset", "rows", "objects", "size", "format")
        for name in source.list_datasets():
            try:
                manifest = source.manifest(name)
            except CorruptManifestError:  # one bad manifest must not hide the others
                table.add_row(name, "", "", "", "[red]corrupt manifest[/red] (skyhook fsck says more)")
                continue
            table.add_row(
                name,
                f"{manifest.num_rows:,}",
                str(len(manifest.partitions)),
                _size(manifest.size_bytes),
                manifest.format,
            )
        console.print(table)


@app.command()
def describe(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Schema, partitions, sizes and statistics of a dataset."""
    with _open(store) as source:
        manifest = source.manifest(dataset)
        console.print(
            f"[bold]{dataset}[/bold]: {manifest.num_rows:,} rows, "
            f"{len(manifest.partitions)} objects, {_size(manifest.size_bytes)}, {manifest.format}"
        )
        columns = Table("column", "type", "min", "max", "nulls", title="columns")
        statistics = manifest.statistics
        for field in manifest.schema:
            per_partition = statistics.field(field.name) if len(statistics) else None
            low, high, nulls = _column_summary(per_partition)
            columns.add_row(field.name, str(field.type), low, high, f"{nulls:,}")
        console.print(columns)
        partitions = Table("partition", "object", "rows", "size", title="partitions")
        for partition in manifest.partitions:
            partitions.add_row(
                str(partition.number), partition.object_name, f"{partition.num_rows:,}", _size(partition.size_bytes)
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
        Optional[str], typer.Option("--where", "-w", help="Filter, e.g. \"price > 10 and flag == 'R'\".")
    ] = None,
    limit: Annotated[int, typer.Option(help="Rows to print.")] = 20,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the result to .parquet or .csv.")
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
    with _open(store) as source:
        data = source.dataset(dataset)
        names = [name.strip() for name in columns.split(",")] if columns else None
        keys = [key.strip() for key in group_by.split(",")] if group_by else []
        aggregations = [_aggregation(spec) for spec in agg or []]
        if keys and not aggregations:
            raise SkyhookError("--group-by needs at least one --agg COLUMN:FUNCTION")
        if explain or analyze:
            describe = data.analyze if analyze else data.explain
            console.print(str(describe(names, where, keys=keys, aggregations=aggregations or None)))
            return
        if aggregations:
            result = data.group_by(keys).aggregate(aggregations, filter=where)
            _show(result, output, limit)
            statistics = data.last_aggregate.stats.as_dict()
            statistics.pop("where")
            _print_statistics(statistics)
            return
        modes = {"auto": "auto", "on": True, "off": False}
        if pushdown not in modes:
            raise SkyhookError(f"--pushdown {pushdown!r}: expected auto, on or off")
        scanner = data.scanner(columns=names, filter=where, pushdown=modes[pushdown])
        result = scanner.to_table()
        _show(result, output, limit)
        _print_statistics(scanner.stats.as_dict())


def _aggregation(spec: str) -> tuple[str | list, str]:
    if spec == "count_all":  # rows per group: pyarrow's ([], "count_all")
        return [], spec
    column, _, function = spec.rpartition(":")
    if not column or not function:
        raise SkyhookError(f"--agg {spec!r}: expected COLUMN:FUNCTION, e.g. l_quantity:sum")
    return column, function


def _show(result: pa.Table, output: Optional[Path], limit: int) -> None:
    if output:
        _write(result, output)
        console.print(f"wrote {result.num_rows:,} rows to {output}")
    else:
        _print_table(result, limit)


def _print_statistics(statistics: dict) -> None:
    table = Table("statistic", "value", title="statistics")
    for key, value in statistics.items():
        table.add_row(
            key,
            _size(value) if key.startswith("bytes") else f"{value:,.3f}" if isinstance(value, float) else str(value),
        )
    console.print(table)


@app.command()
def rm(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Delete a dataset and its objects."""
    with _open(store) as source:
        source.delete_dataset(dataset)
    console.print(f"deleted {dataset}")


@app.command()
def fsck(
    dataset: Annotated[Optional[str], typer.Argument(help="Check only this dataset.")] = None,
    store: StoreOption = DEFAULT_STORE,
    repair: Annotated[bool, typer.Option(help="Delete the orphan objects found.")] = False,
    grace_seconds: Annotated[
        float, typer.Option(help="Ceph: a write silent this long counts as abandoned.")
    ] = DEFAULT_FSCK_GRACE_SECONDS,
) -> None:
    """Find objects that no dataset and no running write owns (left by crashed writers) and, on Ceph, where
    the list of datasets and the manifests disagree; --repair fixes both. Exits with 1 if problems remain."""
    with _open(store) as source:
        report = source.fsck(dataset, repair=repair, grace_seconds=grace_seconds)
    for title, names in (
        ("orphan objects", report.orphans),
        ("abandoned writes", report.abandoned_writes),
        ("writes in progress (left alone)", report.in_progress),
        ("corrupt manifests (their objects left alone)", report.corrupt_manifests),
        ("list of datasets", report.index_problems),
    ):
        if names:
            console.print(f"[bold]{title}[/bold] ({len(names)}):")
            for name in names:
                console.print(f"  {name}", markup=False)
    if report.clean:
        console.print("clean")
    elif report.repaired:
        fixed = {
            "orphan objects deleted": report.orphans,
            "abandoned write records dropped": report.abandoned_writes,
            "entries of the list of datasets fixed": report.index_problems,
        }
        console.print("repaired: " + ", ".join(f"{what}: {len(names)}" for what, names in fixed.items() if names))
    else:
        console.print("run again with --repair to delete the orphans")
    if report.corrupt_manifests or not (report.clean or report.repaired):
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


cluster_app = typer.Typer(
    help="A local Ceph cluster (1 mon, 1 mgr, N OSDs) with the skyhook object class.", no_args_is_help=True
)
app.add_typer(cluster_app, name="cluster")
ClusterDir = Annotated[Path, typer.Argument(help="Cluster directory.")]
DEFAULT_CLUSTER_DIR = Path("skyhook-cluster")
NODE_LIMITS = (
    "max_call_ms",
    "max_call_memory_mb",
    "max_reply_mb",
    "min_batch_size",
    "max_in_flight",
    "max_slice_cpu_ms",
)


@cluster_app.command("up")
def cluster_up(
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    osds: Annotated[int, typer.Option(help="Number of OSDs (new clusters).")] = 3,
    store: Annotated[str, typer.Option(help="bluestore (survives restarts) or memstore.")] = "bluestore",
    port: Annotated[Optional[int], typer.Option(help="Monitor port (v2; v1 uses port + 1).")] = None,
    limit: Annotated[
        Optional[list[str]],
        typer.Option(
            help="A node limit of the OSDs (new clusters), NAME=VALUE: max_call_ms, "
            "max_call_memory_mb, max_reply_mb, min_batch_size, max_in_flight, "
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
    started = time.perf_counter()
    uri = LocalCluster(directory).up(osds=osds, store=store, port=port, node_limits=limits)
    console.print(f"cluster ready in {time.perf_counter() - started:.1f} s", style="dim")
    print(uri)


@cluster_app.command("down")
def cluster_down(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Stop every daemon of the cluster (data stays; `up` starts it again)."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).down()
    console.print(f"stopped the cluster in {directory}")


@cluster_app.command("status")
def cluster_status(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Daemons, their PIDs, OSD states and health."""
    from skyhook.dev.cluster import LocalCluster

    report = LocalCluster(directory).status()
    daemons = Table("daemon", "pid", "state", title=f"{report['directory']} ({report['store']}, port {report['port']})")
    for name, pid in report["daemons"].items():
        state = report.get("osds", {}).get(name, "running") if pid else "stopped"
        daemons.add_row(name, str(pid or "-"), state)
    console.print(daemons)
    console.print(f"health: {report.get('health', 'unknown (monitor stopped)')}")
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
        console.print(f"{daemon} '{capability}'", style="dim")
    print(cluster.user_uri(name, keyring, namespace))


def _print_table(table: pa.Table, limit: int) -> None:
    shown = Table(
        *table.column_names, title=f"{table.num_rows:,} rows" + (f" (first {limit})" if table.num_rows > limit else "")
    )
    for row in table.slice(0, limit).to_pylist():
        shown.add_row(*("" if value is None else str(value) for value in row.values()))
    console.print(shown)


def _write(table: pa.Table, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        pq.write_table(table, path)
    elif suffix == ".csv":
        pacsv.write_csv(table, path)
    else:
        raise SkyhookError(f"cannot write {path}: use a .parquet or .csv file name")


def _size(value: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return str(value)


def main() -> None:
    try:
        app()
    except (SkyhookError, FileNotFoundError) as error:
        console.print(f"[red]error:[/red] {error}")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
