"""10x Genomics Matrix Market directories: matrix.mtx (genes x cells),
features.tsv (or genes.tsv of older versions) and barcodes.tsv, each maybe gzipped."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa

from skyhook.errors import InvalidInputError
from skyhook.expression.source import CELL_ID, GENE_NAME, ExpressionData


def read_10x_mtx(directory: str | Path) -> ExpressionData:
    """Genes are named by their symbol (the second column of features.tsv, as
    scanpy's default), with their id and type as gene metadata."""
    import scipy.io

    directory = Path(directory)
    matrix_path = _find(directory, "matrix.mtx")
    features = _rows(_find(directory, "features.tsv", "genes.tsv"))
    barcodes = [row[0] for row in _rows(_find(directory, "barcodes.tsv"))]
    try:
        with _open(matrix_path) as stream:
            matrix = scipy.io.mmread(stream)
    except ValueError as error:
        raise InvalidInputError(f"{matrix_path}: not a Matrix Market file ({error})") from None
    genes, cells = matrix.shape
    if (genes, cells) != (len(features), len(barcodes)):
        raise InvalidInputError(
            f"{matrix_path} is {genes} genes x {cells} cells, but there are {len(features)} features "
            f"and {len(barcodes)} barcodes"
        )
    var = {GENE_NAME: [row[1] if len(row) > 1 else row[0] for row in features], "gene_id": [row[0] for row in features]}
    if all(len(row) > 2 for row in features):
        var["feature_type"] = [row[2] for row in features]
    return ExpressionData(matrix.T.tocsc(), pa.table({CELL_ID: barcodes}), pa.table(var), "mtx")


def _find(directory: Path, *names: str) -> Path:
    for name in names:
        for candidate in (directory / name, directory / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    raise InvalidInputError(f"{directory}: no {' or '.join(names)}[.gz] (not a 10x matrix directory)")


def _open(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _rows(path: Path) -> list[list[str]]:
    with _open(path) as stream:
        return [line.decode().rstrip("\r\n").split("\t") for line in stream if line.strip()]
