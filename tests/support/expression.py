"""Oracles for the gene-expression tests: SciPy's t-tests on float64 NumPy
copies of the very values stored, and the matrices the tests share."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.stats as st

#: Relative accuracy every t, df and p must reach.
RELATIVE = 1e-9


@functools.lru_cache(maxsize=1)
def pbmc() -> Any:
    import scanpy as sc

    return sc.datasets.pbmc68k_reduced()


def dense64(adata: Any, use_raw: bool = True) -> np.ndarray:
    x = adata.raw.X if use_raw else adata.X
    return np.asarray(x.toarray() if hasattr(x, "toarray") else x, dtype=np.float64)


def scipy_ttest(a: np.ndarray, b: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """t, df, p of each column, scanpy's NaN convention (t 0, p 1) applied."""
    if method == "overestim_var":
        result = st.ttest_ind_from_stats(
            a.mean(0), a.std(0, ddof=1), len(a), b.mean(0), b.std(0, ddof=1), len(a), equal_var=False
        )
        va, vb = a.var(0, ddof=1) / len(a), b.var(0, ddof=1) / len(a)
        with np.errstate(invalid="ignore", divide="ignore"):
            df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(a) - 1))
        df = np.where(np.isnan(df), 1.0, df)
    else:
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # SciPy warns of constant genes; we test them
            result = st.ttest_ind(a, b, equal_var=method == "student")
        df = result.df
    t, p = result.statistic, result.pvalue
    undefined = np.isnan(t)
    return np.where(undefined, 0.0, t), np.asarray(df, dtype=np.float64), np.where(undefined | np.isnan(p), 1.0, p)


def assert_ttest_matches(
    result: pa.Table, group: str, gene_names: list[str], a: np.ndarray, b: np.ndarray, method: str
) -> None:
    """The rows of group in result equal SciPy's test of a against b (columns = genes)."""
    frame = result.to_pandas()
    frame = frame[frame.group == group].set_index("gene").loc[gene_names]
    t, df, p = scipy_ttest(a, b, method)
    # Where the means nearly cancel, t is tiny and only absolutely accurate:
    # allow what the means' rounding contributes, scaled by the standard error.
    n2 = len(a) if method == "overestim_var" else len(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / n2)
        floor = np.where(se > 0, (np.abs(a.mean(0)) + np.abs(b.mean(0))) / se, 0.0)
    assert np.all(np.abs(frame.t.to_numpy() - t) <= RELATIVE * (np.abs(t) + floor)), f"t of {group}, {method}"
    assert np.all(np.abs(frame.df.to_numpy() - df) <= RELATIVE * np.abs(df)), f"df of {group}, {method}"
    assert np.all(np.abs(frame.p.to_numpy() - p) <= RELATIVE * (np.abs(p) + floor)), f"p of {group}, {method}"
    assert frame.n_group.to_numpy()[0] == len(a)
    assert frame.n_reference.to_numpy()[0] == len(b)


def labels_of(adata: Any, column: str) -> np.ndarray:
    return np.asarray(pd.Series(adata.obs[column]).astype(object).where(adata.obs[column].notna(), None))
