"""AnnData (.h5ad) input: the values scanpy would test, with its cell and gene tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyhook.errors import InvalidInputError, first_line
from skyhook.expression.source import CELL_ID, GENE_NAME, ExpressionData, frame_table


def read_anndata(adata: Any, layer: str | None = None, use_raw: bool | None = None) -> ExpressionData:
    """The matrix scanpy's rank_genes_groups would use: a named layer, else
    ``.raw`` when it is set (use_raw=None, scanpy's default) or asked for, else ``.X``.
    adata: an AnnData object or the path of an .h5ad file."""
    if isinstance(adata, (str, Path)):
        adata = _read_h5ad(Path(adata))
    if layer is not None:
        if use_raw:
            raise InvalidInputError("layer and use_raw=True exclude each other (scanpy refuses both too)")
        if layer not in adata.layers:
            raise InvalidInputError(f"no layer {layer!r} in the AnnData (it has {sorted(adata.layers) or 'none'})")
        values, var, var_names, source = adata.layers[layer], adata.var, adata.var_names, f"layer:{layer}"
    elif use_raw or (use_raw is None and adata.raw is not None):
        if adata.raw is None:
            raise InvalidInputError("use_raw=True but the AnnData has no .raw")
        values, var, var_names, source = adata.raw.X, _raw_var(adata), adata.raw.var_names, "raw"
    else:
        values, var, var_names, source = adata.X, adata.var, adata.var_names, "X"
    if values is None:
        raise InvalidInputError("the AnnData has no expression values (.X is None)")
    base = (adata.uns.get("log1p") or {}).get("base") if hasattr(adata.uns, "get") else None
    return ExpressionData(
        _in_memory(values),
        frame_table(adata.obs, CELL_ID, adata.obs_names),
        frame_table(var, GENE_NAME, var_names),
        source,
        None if base is None else float(base),
    )


def _raw_var(adata: Any) -> Any:
    """The gene table of .raw with the columns of .var its genes have there
    (highly_variable, say: scanpy keeps them in .var), null for the others."""
    raw_var = adata.raw.var
    added = [name for name in adata.var.columns if name not in raw_var.columns]
    if not added:
        return raw_var
    return raw_var.join(adata.var[added], how="left")


def _read_h5ad(path: Path) -> Any:
    import anndata

    if not path.is_file():
        raise InvalidInputError(f"{path}: no such .h5ad file")
    try:
        return anndata.read_h5ad(path)
    except MemoryError:
        raise
    except Exception as error:  # anndata's reader fails in its own ways on HDF5 that is not AnnData
        raise InvalidInputError(
            f"{path}: not a readable .h5ad file ({type(error).__name__}: {first_line(error)})"
        ) from None


def _in_memory(values: Any) -> Any:
    """A backed or array-like matrix as a scipy.sparse matrix or NumPy array."""
    import numpy as np
    import scipy.sparse

    if scipy.sparse.issparse(values):
        return values
    if hasattr(values, "to_memory"):
        return values.to_memory()
    return np.asarray(values)
