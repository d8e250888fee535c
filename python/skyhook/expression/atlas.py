"""Queries across the matrices of a domain, as a cell atlas answers them
(CELLxGENE Census's get_anndata): the cells of every matrix whose metadata
match a filter and the genes asked for, as one AnnData. Each matrix's
selection runs in storage (Matrix.query), so only the selection crosses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skyhook.expression.domains import list_matrices
from skyhook.expression.errors import UnknownGeneError
from skyhook.expression.matrix import open_matrix
from skyhook.expression.names import DEFAULT_DOMAIN
from skyhook.expression.selection import CellSelection, GeneSelection
from skyhook.store import Store


def query(
    store: Store,
    obs: CellSelection = None,
    var: GeneSelection = None,
    *,
    domain: str = DEFAULT_DOMAIN,
    matrices: Sequence[str] | None = None,
    obs_columns: Sequence[str] | None = None,
    var_columns: Sequence[str] | None = None,
) -> Any:
    """The matching cells of each matrix of domain (or of those named), stacked
    (obs gains "matrix"; ids that repeat across matrices become
    "<id>-<matrix>"), and their genes by name, outer-joined: a gene that a
    matrix lacks is a zero for its cells (an unmeasured gene has no stored
    value, as in a cell atlas). var: gene names (each in some matrix) or a
    filter on the gene tables. Values are float64 when matrices differ."""
    import anndata
    import scipy.sparse

    names = list(matrices) if matrices is not None else [entry.name for entry in list_matrices(store, domain)]
    wanted = list(var) if var is not None and not isinstance(var, str) and hasattr(var, "__iter__") else None
    parts, found = {}, set()
    for name in names:
        matrix = open_matrix(store, name, domain)
        genes: GeneSelection = var
        if wanted is not None:
            present = set(matrix.gene_names.to_pylist())
            genes = [gene for gene in wanted if gene in present]
            found.update(genes)
            if not genes:
                continue
        try:
            part = matrix.query(obs, genes, obs_columns=obs_columns, var_columns=var_columns)
        except UnknownGeneError:
            if wanted is not None:
                raise
            continue  # a gene filter no gene of this matrix matches
        part.X = scipy.sparse.csr_matrix(part.X)
        parts[name] = part
    missing = [gene for gene in wanted or [] if gene not in found]
    if missing:
        raise UnknownGeneError(f"gene {missing[0]!r} is in no matrix of domain {domain!r}")
    if var is not None and wanted is None and not parts:
        raise UnknownGeneError(f"no gene of any matrix of domain {domain!r} matches {var}")
    if not parts:
        return anndata.AnnData(obs=None, uns={"skyhook": {"domain": domain, "matrices": {}}})
    ids = [cell for part in parts.values() for cell in part.obs_names]
    combined = anndata.concat(
        parts, join="outer", label="matrix", index_unique=None if len(set(ids)) == len(ids) else "-", merge="first"
    )
    combined.uns["skyhook"] = {
        "domain": domain,
        "matrices": {name: part.uns["skyhook"]["metadata"] for name, part in parts.items()},
    }
    return combined
