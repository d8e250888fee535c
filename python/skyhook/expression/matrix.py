"""A stored expression matrix: its cell and gene tables, group statistics
computed in storage, t-tests and slices for scanpy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.dataset import Dataset
from skyhook.errors import UnknownColumnError
from skyhook.expression import dense_layout, sparse_layout
from skyhook.expression.catalog import MatrixEntry
from skyhook.expression.differential import rank_genes
from skyhook.expression.distributed_moments import DASK, MomentsKeywords, dask_moments, split_engine
from skyhook.expression.domains import matrix_entry
from skyhook.expression.label_codes import group_sizes
from skyhook.expression.moments import Moments
from skyhook.expression.names import DEFAULT_DOMAIN
from skyhook.expression.pseudobulk import pseudobulk
from skyhook.expression.selection import (
    CellSelection,
    GeneSelection,
    cell_filter,
    cell_metadata_columns,
    gene_filter,
    gene_indices,
)
from skyhook.expression.source import GENE_NAME
from skyhook.expression.variable_genes import highly_variable_genes
from skyhook.plan.expressions import conjunction
from skyhook.store import Store

if TYPE_CHECKING:
    from typing_extensions import Unpack

METADATA_KEY = b"skyhook.expression.metadata"
MATRIX_KEY = b"skyhook.expression.matrix"


def open_matrix(store: Store, name: str, domain: str = DEFAULT_DOMAIN) -> Matrix:
    return Matrix(store, domain, matrix_entry(store, name, domain))


class Matrix:
    def __init__(self, store: Store, domain: str, entry: MatrixEntry) -> None:
        self.store = store
        self.domain = domain
        self.entry = entry
        #: The storage statistics of the last computation's aggregates (where they ran, bytes returned).
        self.last_stats: list = []

    def __repr__(self) -> str:
        cells, genes = self.shape
        return f"skyhook.expression.Matrix({self.domain}/{self.name}: {cells} cells x {genes} genes, {self.layout})"

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def layout(self) -> str:
        return self.entry.layout

    @property
    def metadata(self) -> dict[str, Any]:
        return self.entry.metadata

    @property
    def shape(self) -> tuple[int, int]:
        return self.entry.n_cells, self.entry.n_genes

    @cached_property
    def values(self) -> Dataset:
        return self.store.dataset(self.entry.datasets["values"])

    @cached_property
    def obs_dataset(self) -> Dataset:
        return self.store.dataset(self.entry.datasets["obs"])

    @cached_property
    def var_dataset(self) -> Dataset:
        return self.store.dataset(self.entry.datasets["var"])

    @property
    def obs(self) -> pa.Table:
        """The cell table: cell (position), cell_id, then the cell metadata."""
        return self.obs_dataset.to_table()

    @property
    def var(self) -> pa.Table:
        """The gene table: gene (position), gene_name, then the gene metadata."""
        return self.var_dataset.to_table()

    @cached_property
    def gene_names(self) -> pa.Array:
        return self.var_dataset.to_table(columns=[GENE_NAME]).column(GENE_NAME).combine_chunks()

    def moments(
        self,
        groupby: str | None = None,
        genes: GeneSelection = None,
        cells: CellSelection = None,
        count_nonzero: bool = False,
        expm1_scale: float | None = None,
        **options: Unpack[MomentsKeywords],
    ) -> Moments:
        """Per (group, gene) count, mean and M2 over the selected cells, from
        partials computed in storage, and the cells with a non-zero value
        (always in the sparse layout; with count_nonzero in the dense one);
        with expm1_scale, of expm1 of the values (moments.measured). options:
        engine ("client", or "dask": the partials merge in a tree on the
        active Dask cluster, distributed_moments.py), partition_bytes (dask's
        task size) and the aggregates' options (pushdown, ...)."""
        engine, partition_bytes, options = split_engine(options)
        if groupby is not None:
            self.check_groupby(groupby)
        selected_cells = cell_filter(cells, self.obs_dataset.schema)
        positions = gene_indices(genes, self.var_dataset, self.gene_names)
        self.last_stats = []
        groups = group_sizes(self.obs_dataset, groupby, selected_cells, options, self.last_stats)
        selection = dict(groupby=groupby, groups=groups, genes=positions, cells=selected_cells, options=options)
        prune = selected_cells
        if self.layout == sparse_layout.NAME:
            genes_kept = gene_filter(positions, self.shape[1])
            prune = conjunction(selected_cells, genes_kept)
            measure = partial(sparse_layout.data_moments, **selection, gene_filter=genes_kept, expm1_scale=expm1_scale)
        else:
            measure = partial(
                dense_layout.data_moments, **selection, count_nonzero=count_nonzero, expm1_scale=expm1_scale
            )
        if engine == DASK:
            stored = dask_moments(self.values, measure, prune, self.last_stats, partition_bytes)
        else:
            stored = measure(self.values, self.last_stats)
        return sparse_layout.completed(groups, stored) if self.layout == sparse_layout.NAME else stored

    def group_stats(
        self,
        groupby: str | None = None,
        genes: GeneSelection = None,
        cells: CellSelection = None,
        **options: Unpack[MomentsKeywords],
    ) -> pa.Table:
        """A row per (group, gene): n, mean and variance (ddof 1) over the
        selected cells; options as moments' (engine="dask": on a Dask cluster)."""
        moments = self.moments(groupby, genes, cells, **options)
        groups, genes_count = len(moments.groups), len(moments.genes)
        table = pa.table(
            {
                "group": pa.array(np.repeat(np.array(moments.groups, dtype=object), genes_count)).cast(pa.string()),
                "gene": pa.array(
                    np.tile(self.gene_names.take(pa.array(moments.genes)).to_numpy(zero_copy_only=False), groups)
                ),
                "n": pa.array(moments.count.ravel().astype(np.int64)),
                "mean": pa.array(moments.mean.ravel()),
                "variance": pa.array(moments.variance(1).ravel()),
            }
        )
        return self.with_metadata(table)

    #: Differential expression between groups of cells (skyhook.expression.differential.rank_genes).
    ttest = rank_genes
    #: Values summed per combination of cell labels (skyhook.expression.pseudobulk.pseudobulk).
    pseudobulk = pseudobulk
    #: Genes of high normalised dispersion (skyhook.expression.variable_genes.highly_variable_genes).
    highly_variable_genes = highly_variable_genes

    def to_anndata(self, genes: GeneSelection = None, cells: CellSelection = None) -> Any:
        """The selected cells and genes as an AnnData (values as stored), for scanpy."""
        return self.query(obs=cells, var=genes)

    def query(
        self,
        obs: CellSelection = None,
        var: GeneSelection = None,
        *,
        obs_columns: Sequence[str] | None = None,
        var_columns: Sequence[str] | None = None,
    ) -> Any:
        """The cells whose metadata match obs (a filter: "cell_type == 'B cell'
        and tissue == 'blood'") and the genes var names (a list) or matches (a
        filter on the gene table), as an AnnData with the cell and gene
        metadata columns asked for (None: all); both selections run in
        storage, so only the selection crosses (as a cell atlas's get_anndata)."""
        from skyhook.expression.slices import matrix_slice

        return matrix_slice(self, var, obs, obs_columns, var_columns)

    def obs_table(self, filter: str | pc.Expression | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """The cell table's rows that match filter (run in storage), with columns (None: all)."""
        return self.obs_dataset.to_table(columns=None if columns is None else list(columns), filter=filter)

    def var_table(self, filter: str | pc.Expression | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """The gene table's rows that match filter (run in storage), with columns (None: all)."""
        return self.var_dataset.to_table(columns=None if columns is None else list(columns), filter=filter)

    def with_metadata(self, table: pa.Table) -> pa.Table:
        """table carrying the matrix's name and custom metadata in its schema."""
        return table.replace_schema_metadata(
            {
                **(table.schema.metadata or {}),
                MATRIX_KEY: f"{self.domain}/{self.name}".encode(),
                METADATA_KEY: json.dumps(self.metadata).encode(),
            }
        )

    def check_groupby(self, groupby: str) -> None:
        """UnknownColumnError unless groupby is a cell metadata column."""
        names = cell_metadata_columns(self.obs_dataset.schema)
        if groupby not in names:
            raise UnknownColumnError(
                f"no cell metadata column {groupby!r} to group by; the matrix has {', '.join(names) or 'none'}"
            )
