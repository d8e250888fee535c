"""``skyhook expression ...``: import, list, describe and test expression matrices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import pyarrow.compute as pc
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from skyhook.cli.app import DEFAULT_STORE, StoreOption, app, console, open_store
from skyhook.cli.output import check_output, show, write_table
from skyhook.errors import InvalidRequestError
from skyhook.expression.differential import REST, score_column
from skyhook.expression.domains import domain_catalog, list_domains, list_matrices
from skyhook.expression.matrix import open_matrix
from skyhook.expression.names import DEFAULT_DOMAIN
from skyhook.expression.table_input import read_tables
from skyhook.expression.volcano import volcano_plot
from skyhook.expression.write import read_input, write_matrix

expression_app = typer.Typer(help="Gene-expression matrices: import, list, describe, t-tests.", no_args_is_help=True)
app.add_typer(expression_app, name="expression")
DomainOption = Annotated[str, typer.Option("--domain", "-d", help="The matrix's domain.")]
GenesOption = Annotated[Optional[str], typer.Option(help="Gene names, comma-separated.")]
GeneFilterOption = Annotated[Optional[str], typer.Option(help="A filter on the gene table, e.g. highly_variable.")]
TableOutputOption = Annotated[
    Optional[Path], typer.Option("--output", "-o", help="Write the table (.parquet or .csv).")
]
LimitOption = Annotated[int, typer.Option(min=0, help="Rows to print (--output writes all).")]
CellsOption = Annotated[Optional[str], typer.Option(help='A filter on the cell table, e.g. "percent_mito < 0.05".')]


@expression_app.command("import")
def import_(
    matrix: str,
    path: Path,
    store: StoreOption = DEFAULT_STORE,
    domain: DomainOption = DEFAULT_DOMAIN,
    layout: Annotated[
        str, typer.Option(help="sparse, dense or auto (sparse: faster at every density measured).")
    ] = "auto",
    layer: Annotated[Optional[str], typer.Option(help="AnnData: this layer's values.")] = None,
    raw: Annotated[
        Optional[bool], typer.Option("--raw/--no-raw", help="AnnData: .raw (default: if set, as scanpy) or .X.")
    ] = None,
    cells: Annotated[Optional[Path], typer.Option(help="CSV/Parquet values: the cell table (ids first).")] = None,
    genes: Annotated[Optional[Path], typer.Option(help="CSV/Parquet values: the gene table (names first).")] = None,
    rows: Annotated[
        str, typer.Option(help="CSV/Parquet values: what a row is, genes (the seed's) or cells.")
    ] = "genes",
    metadata: Annotated[Optional[list[str]], typer.Option(help="KEY=VALUE custom metadata (repeat).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing matrix.")] = False,
) -> None:
    """Import an .h5ad file, a 10x directory or a CSV / Parquet table of values
    as MATRIX; creates the store and the domain if needed."""
    pairs = dict(_pair(item) for item in metadata or [])
    if path.suffix in (".csv", ".parquet") and (cells or genes or rows != "genes"):
        data = read_tables(path, cells, genes, rows)
    else:
        data = read_input(path, layer, raw)
    with open_store(store, create=True) as target, _LazyProgress() as progress:
        entry = write_matrix(
            target,
            matrix,
            data,
            domain=domain,
            metadata=pairs,
            layout=layout,
            mode="overwrite" if overwrite else "create",
            progress=progress.update,
        )
    console.print(
        f"{domain}/{matrix}: {entry.n_cells:,} cells x {entry.n_genes:,} genes, {entry.layout} layout, "
        f"{entry.dtype} from {entry.source}",
        markup=False,
    )


@expression_app.command("ls")
def list_(
    store: StoreOption = DEFAULT_STORE, domain: Annotated[Optional[str], typer.Option("--domain", "-d")] = None
) -> None:
    """The domains of the store, or the matrices of one domain."""
    with open_store(store) as source:
        if domain is None:
            table = Table("domain", "matrices")
            for name in list_domains(source):
                table.add_row(Text(name), str(len(domain_catalog(source, name).matrices)))
        else:
            table = Table("matrix", "cells", "genes", "layout", "values", "source")
            for entry in list_matrices(source, domain):
                table.add_row(
                    Text(entry.name),
                    f"{entry.n_cells:,}",
                    f"{entry.n_genes:,}",
                    entry.layout,
                    entry.dtype,
                    Text(entry.source),
                )
        console.print(table)


@expression_app.command()
def describe(matrix: str, store: StoreOption = DEFAULT_STORE, domain: DomainOption = DEFAULT_DOMAIN) -> None:
    """Shape, layout, custom metadata, cell and gene columns and datasets of a matrix."""
    with open_store(store) as source:
        opened = open_matrix(source, matrix, domain)
        entry = opened.entry
        console.print(
            Text.assemble(
                (f"{domain}/{matrix}", "bold"),
                f": {entry.n_cells:,} cells x {entry.n_genes:,} genes, "
                f"{entry.layout} layout, {entry.dtype} values from {entry.source}",
            )
        )
        console.print(Text(f"metadata: {json.dumps(entry.metadata)}"))
        for title, schema in (("cell columns", opened.obs_dataset.schema), ("gene columns", opened.var_dataset.schema)):
            columns = Table("column", "type", title=title)
            for field in schema:
                columns.add_row(Text(field.name), Text(str(field.type)))
            console.print(columns)
        for part, dataset in entry.datasets.items():
            console.print(Text(f"{part}: dataset {dataset}"))


@expression_app.command()
def ttest(
    matrix: str,
    groupby: str,
    store: StoreOption = DEFAULT_STORE,
    domain: DomainOption = DEFAULT_DOMAIN,
    method: Annotated[
        str, typer.Option(help="welch (scanpy's t-test), student, overestim_var or wilcoxon (rank sums).")
    ] = "welch",
    tie_correct: Annotated[bool, typer.Option(help="Wilcoxon: correct for tied values (as scanpy's).")] = False,
    pts: Annotated[bool, typer.Option(help="Add the fractions of cells expressing each gene.")] = False,
    reference: Annotated[str, typer.Option(help="rest, or the label of a reference group.")] = REST,
    group: Annotated[Optional[list[str]], typer.Option(help="Test only this group (repeat).")] = None,
    genes: GenesOption = None,
    gene_filter: GeneFilterOption = None,
    cells: CellsOption = None,
    top: Annotated[int, typer.Option(help="Genes shown per group.")] = 10,
    output: Annotated[Optional[Path], typer.Option(help="Write the whole result (.parquet or .csv).")] = None,
    plot: Annotated[Optional[Path], typer.Option(help="Write a volcano plot (.png).")] = None,
) -> None:
    """Tests of each group of GROUPBY against the rest (or --reference), t-tests
    or Wilcoxon rank sums, computed from what storage computes; prints the top genes."""
    selected_genes = _gene_selection(genes, gene_filter)
    if output is not None:
        check_output(output)
    if plot is not None and plot.suffix.lower() != ".png":
        raise InvalidRequestError(f"cannot write {plot}: use a .png file name")
    with open_store(store) as source:
        opened = open_matrix(source, matrix, domain)
        result = opened.ttest(
            groupby,
            method=method,
            reference=reference,
            groups=group,
            genes=selected_genes,
            cells=cells,
            tie_correct=tie_correct,
            pts=pts,
        )
    score = score_column(result)
    for label in dict.fromkeys(result.column("group").to_pylist()):
        part = result.filter(pc.equal(result.column("group"), label)).slice(0, top)
        shown = Table("gene", score, "p_adj", "log2 FC", title=Text(f"{label} vs {part.column('reference')[0]}"))
        for row in part.select(["gene", score, "p_adj", "log2_fold_change"]).to_pylist():
            shown.add_row(
                Text(row["gene"]), f"{row[score]:.3f}", f"{row['p_adj']:.3g}", f"{row['log2_fold_change']:.3f}"
            )
        console.print(shown)
    if output is not None:
        write_table(result, output)
    if plot is not None:
        volcano_plot(result, plot, title=f"{domain}/{matrix} by {groupby} ({method})")


@expression_app.command()
def pseudobulk(
    matrix: str,
    by: Annotated[list[str], typer.Option("--by", "-b", help="A cell metadata column to sum per label of (repeat).")],
    store: StoreOption = DEFAULT_STORE,
    domain: DomainOption = DEFAULT_DOMAIN,
    genes: GenesOption = None,
    gene_filter: GeneFilterOption = None,
    cells: CellsOption = None,
    output: TableOutputOption = None,
    limit: LimitOption = 20,
) -> None:
    """Sum each gene's values per combination of the --by columns' labels
    (e.g. --by sample --by cell_type), in storage: the input of DESeq2 / edgeR."""
    selected_genes = _gene_selection(genes, gene_filter)
    if output is not None:
        check_output(output)
    with open_store(store) as source:
        result = open_matrix(source, matrix, domain).pseudobulk(by, genes=selected_genes, cells=cells)
    show(result, output, limit, complete=True)


@expression_app.command("variable-genes")
def variable_genes(
    matrix: str,
    store: StoreOption = DEFAULT_STORE,
    domain: DomainOption = DEFAULT_DOMAIN,
    flavor: Annotated[str, typer.Option(help="cell_ranger or seurat (scanpy's flavours).")] = "cell_ranger",
    n_top_genes: Annotated[
        Optional[int], typer.Option(help="Choose this many genes (default: by the cutoffs below).")
    ] = None,
    min_mean: Annotated[float, typer.Option(help="Cutoff: a chosen gene's mean is above this.")] = 0.0125,
    max_mean: Annotated[float, typer.Option(help="Cutoff: ... and below this.")] = 3.0,
    min_disp: Annotated[float, typer.Option(help="Cutoff: its normalised dispersion is above this.")] = 0.5,
    genes: GenesOption = None,
    gene_filter: GeneFilterOption = None,
    cells: CellsOption = None,
    output: TableOutputOption = None,
    limit: LimitOption = 20,
) -> None:
    """Highly variable genes, as scanpy's flavor="cell_ranger" or "seurat", from
    means and variances computed in storage; prints the chosen genes."""
    selected_genes = _gene_selection(genes, gene_filter)
    if output is not None:
        check_output(output)
    with open_store(store) as source:
        result = open_matrix(source, matrix, domain).highly_variable_genes(
            flavor=flavor, n_top_genes=n_top_genes, min_mean=min_mean, max_mean=max_mean, min_disp=min_disp,
            genes=selected_genes, cells=cells,
        )  # fmt: skip
    chosen = result.filter(result.column("highly_variable"))
    show(result if output is not None else chosen, output, limit, complete=True)


class _LazyProgress:
    """A progress bar on stderr that appears with the first stored object, so
    that a mistake found before any writing stays one line."""

    def __init__(self) -> None:
        self.bar: Progress | None = None

    def __enter__(self) -> _LazyProgress:
        return self

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            columns = (
                TextColumn("importing"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeRemainingColumn(),
            )
            self.bar = Progress(*columns, console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("import", total=total)
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _gene_selection(genes: str | None, gene_filter: str | None) -> list[str] | str | None:
    """--genes (names) or --gene-filter (a filter on the gene table), not both."""
    if genes and gene_filter:
        raise InvalidRequestError("--genes and --gene-filter exclude each other")
    return genes.split(",") if genes else gene_filter


def _pair(item: str) -> tuple[str, str]:
    key, separator, value = item.partition("=")
    if not separator or not key:
        raise InvalidRequestError(f"--metadata {item!r}: expected KEY=VALUE")
    return key, value
