"""A generated single-cell matrix, for tests, benchmarks and demos (seeded):
negative-binomial counts (about 10 % non-zero), unequal groups with
differentially expressed genes, normalised to 10,000 counts per cell and
log1p'd, as scanpy's pipeline leaves them; built gene block by gene block so
that 200,000 x 2,000 fits in memory as a sparse matrix."""

from __future__ import annotations

from typing import Any

import numpy as np

#: Negative-binomial dispersion (size): small, so counts are overdispersed as in real data.
DISPERSION = 0.6
_GENES_PER_BLOCK = 64


def generate_anndata(
    cells: int, genes: int, groups: int = 10, seed: int = 0, dtype: Any = np.float32, unlabelled: float = 0.0
) -> Any:
    """An AnnData: X (CSR, dtype) log1p of normalised counts; obs "group"
    (categorical, group k about twice as large as group k+1 halfway down,
    a fraction unlabelled left NaN), "percent_mito" and "batch"; var
    "highly_variable"."""
    import anndata
    import pandas as pd
    import scipy.sparse

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, groups + 1) ** 0.8
    label = rng.choice(groups, size=cells, p=weights / weights.sum())
    base = np.exp(rng.normal(-2.45, 1.0, genes))  # mean count per gene
    effect = np.exp(rng.normal(0.0, 0.6, (groups, genes)) * (rng.random((groups, genes)) < 0.2))
    blocks = []
    for start in range(0, genes, _GENES_PER_BLOCK):
        stop = min(start + _GENES_PER_BLOCK, genes)
        mean = base[start:stop] * effect[label, start:stop]
        counts = rng.negative_binomial(DISPERSION, DISPERSION / (DISPERSION + mean)).astype(np.float64)
        blocks.append(scipy.sparse.csc_matrix(counts))
    x = scipy.sparse.hstack(blocks, format="csr")
    totals = np.asarray(x.sum(axis=1)).ravel()
    x = scipy.sparse.diags(1e4 / np.maximum(totals, 1.0)) @ x
    x.data = np.log1p(x.data)
    x = x.astype(dtype).tocsr()
    names = np.array([f"group{k}" for k in range(groups)], dtype=object)[label]
    names[rng.random(cells) < unlabelled] = np.nan
    obs = pd.DataFrame(
        {
            "group": pd.Categorical(names, categories=[f"group{k}" for k in range(groups)]),
            "percent_mito": rng.uniform(0.0, 0.1, cells),
            "batch": rng.choice(["a", "b"], size=cells),
        },
        index=[f"cell{i}" for i in range(cells)],
    )
    var = pd.DataFrame({"highly_variable": rng.random(genes) < 0.3}, index=[f"gene{j}" for j in range(genes)])
    return anndata.AnnData(x, obs=obs, var=var, uns={"log1p": {"base": None}})
