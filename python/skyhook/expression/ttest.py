"""t-tests from moments: Student's (pooled variance), Welch's (scanpy's
"t-test") and scanpy's "t-test_overestim_var" (Welch's with the group's size
in place of the other side's), with the formulas of SciPy's
ttest_ind_from_stats, so results equal it to rounding; log2 fold changes as
scanpy computes them; Benjamini-Hochberg adjusted p-values.

scanpy's conventions: a NaN t (0 / 0: a gene constant and equal on both
sides) is reported as t = 0 and p = 1, as scanpy does; Welch's df of such a
gene is 1, as SciPy's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyhook.errors import InvalidRequestError

METHODS = ("welch", "student", "overestim_var")


@dataclass
class TTest:
    t: np.ndarray
    df: np.ndarray
    p: np.ndarray


def check_method(method: str) -> str:
    if method not in METHODS:
        raise InvalidRequestError(f"unknown method {method!r}; expected welch, student or overestim_var")
    return method


def t_test(
    n1: np.ndarray,
    mean1: np.ndarray,
    var1: np.ndarray,
    n2: np.ndarray,
    mean2: np.ndarray,
    var2: np.ndarray,
    method: str,
) -> TTest:
    """Two-sided tests of equal means; variances are unbiased (ddof 1)."""
    from scipy.special import stdtr

    check_method(method)
    if method == "overestim_var":
        n2 = n1
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "student":
            df = n1 + n2 - 2.0
            pooled = ((n1 - 1) * var1 + (n2 - 1) * var2) / df
            denominator = np.sqrt(pooled * (1.0 / n1 + 1.0 / n2))
        else:
            vn1, vn2 = var1 / n1, var2 / n2
            df = (vn1 + vn2) ** 2 / (vn1**2 / (n1 - 1) + vn2**2 / (n2 - 1))
            df = np.where(np.isnan(df), 1.0, df)
            denominator = np.sqrt(vn1 + vn2)
        t = (mean1 - mean2) / denominator
        p = 2 * stdtr(df, -np.abs(t))
    undefined = np.isnan(t)
    return TTest(
        np.where(undefined, 0.0, t),
        np.broadcast_to(df, np.shape(t)).astype(np.float64),
        np.where(undefined | np.isnan(p), 1.0, p),
    )


def log2_fold_change(mean1: np.ndarray, mean2: np.ndarray, log1p_base: float | None) -> np.ndarray:
    """scanpy's: log2((expm1(mean1) + 1e-9) / (expm1(mean2) + 1e-9)), expm1 in
    the base of the data's log1p (means of data that is not log-normalised
    overflow to inf: the input warning says why)."""
    scale = 1.0 if log1p_base is None else np.log(log1p_base)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.log2((np.expm1(mean1 * scale) + 1e-9) / (np.expm1(mean2 * scale) + 1e-9))


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Adjusted p-values (SciPy's false_discovery_control(method="bh"))."""
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    result = np.empty(m)
    result[order] = np.clip(adjusted, 0, 1)
    return result
