"""Errors of the gene-expression layer: one line each, all SkyhookErrors (the CLI prints them)."""

from __future__ import annotations

from skyhook.errors import DatasetNotFoundError, SkyhookError, SkyhookWarning


class DomainNotFoundError(DatasetNotFoundError):
    """No domain of that name exists in the store."""


class MatrixNotFoundError(DatasetNotFoundError):
    """No matrix of that name exists in the domain."""


class DomainExistsError(SkyhookError):
    """create_domain found the domain already there."""


class MatrixExistsError(SkyhookError):
    """A matrix of that name exists in the domain and the write did not ask to replace it."""


class UnknownGeneError(SkyhookError, KeyError):
    """A gene named in a request is not in the matrix."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class GroupError(SkyhookError, ValueError):
    """A group to test is missing or too small (fewer than 2 cells)."""


class ExpressionInputWarning(SkyhookWarning, UserWarning):
    """The values do not look like what a statistic expects (log-normalised data)."""
