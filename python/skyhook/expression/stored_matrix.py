"""What computations over a stored matrix use of it (matrix.Matrix is one):
the t-tests and slices take this, so that Matrix can offer them as methods
without the modules importing each other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from skyhook.dataset import Dataset
from skyhook.expression.catalog import MatrixEntry
from skyhook.expression.distributed_moments import MomentsKeywords
from skyhook.expression.moments import Moments

if TYPE_CHECKING:
    from typing_extensions import Unpack


class StoredMatrix(Protocol):
    name: str
    domain: str
    entry: MatrixEntry
    last_stats: list

    @property
    def metadata(self) -> dict[str, Any]: ...

    @property
    def layout(self) -> str: ...

    @property
    def shape(self) -> tuple[int, int]: ...

    @property
    def gene_names(self) -> pa.Array: ...

    @property
    def values(self) -> Dataset: ...

    @property
    def obs_dataset(self) -> Dataset: ...

    @property
    def var_dataset(self) -> Dataset: ...

    def moments(
        self,
        groupby: str | None = None,
        genes: Any = None,
        cells: Any = None,
        count_nonzero: bool = False,
        expm1_scale: float | None = None,
        **options: Unpack[MomentsKeywords],
    ) -> Moments: ...

    def with_metadata(self, table: pa.Table) -> pa.Table: ...

    def check_groupby(self, groupby: str) -> None: ...
