"""What the R wrapper (r/skyhook_expression.R) calls through reticulate.

Debian's reticulate 1.28 cannot convert NumPy 2 arrays (they arrive as Python
objects, and pandas frames become corrupt data.frames), so every result
crosses as plain Python lists, one per column, which R turns into vectors."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

import skyhook
from skyhook.expression.differential import REST
from skyhook.expression.domains import list_domains, list_matrices
from skyhook.expression.marker_filters import filter_rank_genes
from skyhook.expression.matrix import open_matrix
from skyhook.expression.names import DEFAULT_DOMAIN
from skyhook.expression.write import write_matrix


def ttest(
    uri: str,
    matrix: str,
    groupby: str,
    domain: str = DEFAULT_DOMAIN,
    method: str = "welch",
    reference: Any = REST,
    groups: Any = None,
    genes: Any = None,
    cells: str | None = None,
    tie_correct: bool = False,
    pts: bool = False,
    markers: Any = None,
) -> dict[str, list]:
    """markers: filter_rank_genes's keywords (a named list), which imply pts."""
    with skyhook.connect(uri, create=False) as store:
        result = open_matrix(store, matrix, domain).ttest(
            groupby,
            method=method,
            reference=reference,
            groups=_listed(groups),
            genes=_listed(genes),
            cells=cells,
            tie_correct=bool(tie_correct),
            pts=bool(pts) or markers is not None,
        )
    if markers is not None:
        result = filter_rank_genes(result, **dict(markers))
    return _columns(result)


def cell_table(
    uri: str, matrix: str, domain: str = DEFAULT_DOMAIN, filter: str | None = None, columns: Any = None
) -> dict[str, list]:
    with skyhook.connect(uri, create=False) as store:
        return _columns(open_matrix(store, matrix, domain).obs_table(filter, _listed(columns)))


def gene_table(
    uri: str, matrix: str, domain: str = DEFAULT_DOMAIN, filter: str | None = None, columns: Any = None
) -> dict[str, list]:
    with skyhook.connect(uri, create=False) as store:
        return _columns(open_matrix(store, matrix, domain).var_table(filter, _listed(columns)))


def group_stats(
    uri: str,
    matrix: str,
    groupby: str | None = None,
    domain: str = DEFAULT_DOMAIN,
    genes: Any = None,
    cells: str | None = None,
) -> dict[str, list]:
    with skyhook.connect(uri, create=False) as store:
        return _columns(open_matrix(store, matrix, domain).group_stats(groupby, _listed(genes), cells))


def pseudobulk(
    uri: str, matrix: str, by: Any, domain: str = DEFAULT_DOMAIN, genes: Any = None, cells: str | None = None
) -> dict[str, list]:
    with skyhook.connect(uri, create=False) as store:
        return _columns(open_matrix(store, matrix, domain).pseudobulk(_listed(by), _listed(genes), cells))


def highly_variable_genes(
    uri: str,
    matrix: str,
    domain: str = DEFAULT_DOMAIN,
    n_top_genes: Any = None,
    genes: Any = None,
    cells: str | None = None,
    flavor: str = "cell_ranger",
) -> dict[str, list]:
    top = None if n_top_genes is None else int(n_top_genes)  # R's numbers are doubles
    with skyhook.connect(uri, create=False) as store:
        chosen = open_matrix(store, matrix, domain).highly_variable_genes(
            flavor=flavor, n_top_genes=top, genes=_listed(genes), cells=cells
        )
    return _columns(chosen)


def domains(uri: str) -> list[str]:
    with skyhook.connect(uri, create=False) as store:
        return list_domains(store)


def matrices(uri: str, domain: str = DEFAULT_DOMAIN) -> dict[str, list]:
    with skyhook.connect(uri, create=False) as store:
        entries = list_matrices(store, domain)
    return {
        "matrix": [entry.name for entry in entries],
        "cells": [entry.n_cells for entry in entries],
        "genes": [entry.n_genes for entry in entries],
        "layout": [entry.layout for entry in entries],
    }


def import_matrix(uri: str, name: str, path: str, domain: str = DEFAULT_DOMAIN, metadata: Any = None) -> None:
    with skyhook.connect(uri) as store:
        write_matrix(store, name, path, domain=domain, metadata=dict(metadata or {}))


def _listed(value: Any) -> Any:
    """R passes a vector of one as a scalar: a name is a list of one name (a
    gene or group), except a gene filter, which R callers give as filter=."""
    return [value] if isinstance(value, str) else (list(value) if isinstance(value, (tuple, list)) else value)


def _columns(table: pa.Table) -> dict[str, list]:
    return table.to_pydict()
