"""Gene expression (MSG Express): expression matrices with cell and gene
metadata in domains, group statistics computed in storage, t-tests and
Wilcoxon rank sums, pseudobulk sums, highly variable genes.

    import skyhook, skyhook.expression as ex
    store = skyhook.connect("file:///abs/store")
    ex.write_matrix(store, "pbmc", adata, domain="blood", metadata={"study": "..."})
    m = ex.open_matrix(store, "pbmc", domain="blood")
    m.ttest("bulk_labels", method="welch")          # an Arrow table, a row per (group, gene)
    result = m.ttest("bulk_labels", method="wilcoxon", pts=True)
    ex.filter_rank_genes(result, min_in_group_fraction=0.25)   # scanpy's marker-gene filters
    m.query(obs="bulk_labels == 'CD19+ B'", var=["CD79A", "MS4A1"])  # AnnData, selection run in storage
    ex.query(store, obs="tissue == 'blood'", var=["CD79A"], domain="blood")   # across a domain's matrices
    adata.uns["rank_genes_groups"] = ex.rank_genes_groups(result, "bulk_labels")   # for scanpy's plots
    m.pseudobulk(["sample", "bulk_labels"])          # values summed per combination, in storage
    m.highly_variable_genes(n_top_genes=2000)        # Cell Ranger's dispersions from storage's moments

A use-case layer over the client: nothing below it imports it."""

from skyhook.expression.anndata_input import read_anndata
from skyhook.expression.atlas import query
from skyhook.expression.catalog import MatrixEntry
from skyhook.expression.differential import rank_genes, ttest_between
from skyhook.expression.domains import create_domain, delete_domain, delete_matrix, list_domains, list_matrices
from skyhook.expression.errors import (
    DomainExistsError,
    DomainNotFoundError,
    ExpressionInputWarning,
    GroupError,
    MatrixExistsError,
    MatrixNotFoundError,
    UnknownGeneError,
)
from skyhook.expression.marker_filters import filter_rank_genes
from skyhook.expression.matrix import Matrix, open_matrix
from skyhook.expression.moments import Moments
from skyhook.expression.mtx_input import read_10x_mtx
from skyhook.expression.names import DEFAULT_DOMAIN
from skyhook.expression.pseudobulk import pseudobulk
from skyhook.expression.scanpy_result import rank_genes_groups
from skyhook.expression.source import ExpressionData
from skyhook.expression.table_input import read_tables
from skyhook.expression.variable_genes import highly_variable_genes
from skyhook.expression.write import read_input, write_matrix

__all__ = [
    "DEFAULT_DOMAIN",
    "DomainExistsError",
    "DomainNotFoundError",
    "ExpressionData",
    "ExpressionInputWarning",
    "GroupError",
    "Matrix",
    "MatrixEntry",
    "MatrixExistsError",
    "MatrixNotFoundError",
    "Moments",
    "UnknownGeneError",
    "create_domain",
    "delete_domain",
    "delete_matrix",
    "filter_rank_genes",
    "highly_variable_genes",
    "list_domains",
    "list_matrices",
    "open_matrix",
    "pseudobulk",
    "query",
    "rank_genes",
    "rank_genes_groups",
    "read_10x_mtx",
    "read_anndata",
    "read_input",
    "read_tables",
    "ttest_between",
    "write_matrix",
]
