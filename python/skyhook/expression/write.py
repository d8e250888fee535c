"""Writing a matrix: its values (in the layout chosen), cell and gene tables
as three datasets of fresh names, then one compare-and-swap of the domain's
catalog publishes them together. A failure before that deletes what was
written; an overwrite deletes the replaced matrix's datasets after it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from skyhook.errors import InvalidInputError, InvalidRequestError
from skyhook.expression.anndata_input import read_anndata
from skyhook.expression.catalog import Catalog, MatrixEntry, load_catalog, update_catalog
from skyhook.expression.domains import delete_parts
from skyhook.expression.errors import MatrixExistsError
from skyhook.expression.label_codes import with_codes
from skyhook.expression.layouts import choose_layout, layout_module
from skyhook.expression.mtx_input import read_10x_mtx
from skyhook.expression.names import DEFAULT_DOMAIN, check_domain_name, check_matrix_name, part_datasets
from skyhook.expression.source import CELL_ID, VALUE_KIND, ExpressionData, checked, value_kind
from skyhook.expression.table_input import read_tables
from skyhook.store import Store

#: Called with the cells (or values, for the sparse layout) stored so far and the total.
Progress = Callable[[int, int], None]


def read_input(data: Any, layer: str | None = None, use_raw: bool | None = None) -> ExpressionData:
    """ExpressionData from an AnnData, an .h5ad file, a 10x directory, a CSV /
    Parquet file of values (genes as rows) or ExpressionData itself."""
    if isinstance(data, ExpressionData):
        return data
    if isinstance(data, (str, Path)):
        path = Path(data)
        if path.is_dir():
            return read_10x_mtx(path)
        if path.suffix == ".h5ad":
            return read_anndata(path, layer, use_raw)
        if path.suffix in (".csv", ".parquet"):
            return read_tables(path)
        if not path.exists():
            raise InvalidInputError(f"{path}: no such file or directory")
        raise InvalidInputError(f"{path}: expected an .h5ad file, a 10x directory, or a .csv or .parquet file")
    if hasattr(data, "obs") and hasattr(data, "var"):
        return read_anndata(data, layer, use_raw)
    raise InvalidInputError(f"cannot read an expression matrix from {type(data).__name__}")


def write_matrix(
    store: Store,
    name: str,
    data: Any,
    *,
    domain: str = DEFAULT_DOMAIN,
    metadata: Mapping[str, Any] | None = None,
    layout: str = "auto",
    mode: str = "create",
    layer: str | None = None,
    use_raw: bool | None = None,
    progress: Progress | None = None,
) -> MatrixEntry:
    """Store an expression matrix as name in domain (created if absent); see
    skyhook.expression's documentation. mode: "create" or "overwrite"."""
    check_matrix_name(name)
    check_domain_name(domain)
    if mode not in ("create", "overwrite"):
        raise InvalidRequestError(f"unknown mode {mode!r}; expected create or overwrite")
    metadata = _json_metadata(metadata)
    if mode == "create":
        _refuse_existing(store, domain, name)  # early, before any work; the publish decides for sure
    source = checked(read_input(data, layer, use_raw))
    chosen = choose_layout(layout)
    datasets = part_datasets(domain, name)
    cells, genes = source.shape
    entry = MatrixEntry(
        name, datasets, chosen, cells, genes, str(source.dtype), source.source, metadata, source.log1p_base
    )
    try:
        _write_parts(store, source, chosen, datasets, progress)
        replaced, _ = update_catalog(store.backend, domain, lambda current: _published(current, domain, entry, mode))
    except BaseException:
        delete_parts(store, entry)
        raise
    old = replaced.matrices.get(name) if replaced else None
    if old is not None:
        delete_parts(store, old)
    return entry


def _write_parts(
    store: Store, source: ExpressionData, layout: str, datasets: dict[str, str], progress: Progress | None
) -> None:
    cells, genes = source.shape
    cell_metadata = with_codes(source.obs.drop_columns([CELL_ID]))
    positions = {"cell": pa.array(np.arange(cells, dtype=np.int32)), CELL_ID: source.obs.column(CELL_ID)}
    obs = pa.table({**positions, **dict(zip(cell_metadata.column_names, cell_metadata.columns))})
    var = source.var.add_column(0, "gene", pa.array(np.arange(genes, dtype=np.int32)))
    store.write_dataset(datasets["obs"], obs)
    store.write_dataset(datasets["var"], var)
    module = layout_module(layout)
    total = (
        cells
        if layout == "dense"
        else int(source.values.nnz if hasattr(source.values, "nnz") else np.count_nonzero(source.values))
    )
    done = 0

    def stored(rows: int, _bytes: int) -> None:
        nonlocal done
        done += rows
        if progress:
            progress(done, total)

    kind = {VALUE_KIND: value_kind(source).encode()}
    batches = (
        batch.replace_schema_metadata({**(batch.schema.metadata or {}), **kind})
        for batch in module.batches(source.values, cell_metadata)
    )
    store.write_dataset(datasets["values"], batches, progress=stored)


def _published(current: Catalog | None, domain: str, entry: MatrixEntry, mode: str) -> Catalog:
    catalog = current or Catalog(domain, {})
    if mode == "create" and entry.name in catalog.matrices:
        raise _exists(domain, entry.name)
    return catalog.with_matrix(entry)


def _refuse_existing(store: Store, domain: str, name: str) -> None:

    catalog = load_catalog(store.backend, domain)
    if catalog is not None and name in catalog.matrices:
        raise _exists(domain, name)


def _exists(domain: str, name: str) -> MatrixExistsError:
    return MatrixExistsError(f"matrix {name!r} exists in domain {domain!r}; pass mode='overwrite' to replace it")


def _json_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:

    try:
        return json.loads(json.dumps(dict(metadata or {})))
    except (TypeError, ValueError) as error:
        raise InvalidRequestError(f"metadata must be JSON-able: {error}") from None
