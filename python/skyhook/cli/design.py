"""``skyhook design ...`` and ``skyhook worker``: physical designs, transforms
(planned, run here or by the worker), statistics and indexes."""

from __future__ import annotations

import dataclasses
import time
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

import skyhook
from skyhook.cli.app import DEFAULT_STORE, StoreOption, app, console, open_store
from skyhook.cli.output import object_progress, size_text
from skyhook.distributed.schedule import parse_rate
from skyhook.errors import InvalidRequestError
from skyhook.names import counted

design_app = typer.Typer(
    help="Physical designs of a dataset's objects, and transforms between them.", no_args_is_help=True
)


app.add_typer(design_app, name="design")


@design_app.command("show")
def design_show(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """The design of each object: format, column groups, sort order, compression, size."""
    with open_store(store) as source:
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
    with open_store(store, link_bytes_per_second=link_bytes_per_second) as source:
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
        f"in {report.seconds:.2f} s: {size_text(report.bytes_before)} -> {size_text(report.bytes_after)}",
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
    with open_store(store) as source:
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
    with open_store(store) as source:
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
    with open_store(store) as source:
        chosen = _chosen_plan(source, dataset, plan, ("planned",))
        if worker:
            source.queue_plan(chosen, schedule)
            console.print(f"plan {chosen.id} queued for `skyhook worker`", markup=False)
        else:
            _run_with_bar(source, chosen, schedule)


@design_app.command("resume")
def design_resume(dataset: str, plan: PlanOption = None, store: StoreOption = DEFAULT_STORE) -> None:
    """Finish a transform whose run stopped (crashed, killed, paused or failed)."""
    with open_store(store) as source:
        _run_with_bar(source, _chosen_plan(source, dataset, plan, ("running", "paused", "failed")))


@design_app.command("cancel")
def design_cancel(dataset: str, plan: PlanOption = None, store: StoreOption = DEFAULT_STORE) -> None:
    """Cancel a transform: groups committed stay, the others' new objects are deleted."""
    with open_store(store) as source:
        chosen = source.cancel_plan(
            _chosen_plan(source, dataset, plan, ("planned", "queued", "running", "paused", "failed"))
        )
    console.print(f"plan {chosen.id} cancelled", markup=False)


@design_app.command("status")
def design_status(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """The dataset's transform plans: state, steps done, bytes, and the latest one's steps."""
    with open_store(store) as source:
        plans = source.plans(dataset)
    table = Table("plan", "state", "steps", "read", "move", "write", "what")
    for plan in plans:
        table.add_row(
            *(Text(value) for value in (plan.id, plan.state, f"{plan.steps_done}/{len(plan.steps)}")),
            *(Text(size_text(value)) for value in (plan.bytes_read, plan.bytes_moved, plan.bytes_written)),
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

    with open_store(store) as source:
        ran = work(source.backend, log, once, interval, source.retention_seconds)
    console.print(f"{ran} plan(s) run", markup=False)


@design_app.command("analyze")
def design_analyze(dataset: str, store: StoreOption = DEFAULT_STORE) -> None:
    """Compute statistics per column and zone (row group, record batch) in every object: scans in storage
    skip the zones their filter excludes."""
    with open_store(store) as source:
        data = source.dataset(dataset)
        bar, advance = object_progress(f"analyzing {dataset}")
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
    with open_store(store) as source:
        data = source.dataset(dataset)
        bar, advance = object_progress(f"{'dropping the index of' if drop else 'indexing'} {dataset}.{column}")
        try:
            (data.drop_index if drop else data.create_index)(column, progress=advance)
        finally:
            if bar.live.is_started:
                bar.stop()
    done = "dropped from" if drop else "built in"
    console.print(f"index of {column} {done} {counted(len(data.manifest.partitions), 'object')}", markup=False)
