"""How domains and matrices are named in the store's namespace of datasets.

A domain is one dataset, ``expr-<domain>``, holding no rows: its manifest's
schema metadata is the domain's catalog (catalog.py), published by the store's
compare-and-swap. Each matrix is three datasets, ``expr-<domain>-<matrix>-<token>-<part>``
(values, obs, var), where a fresh token per write keeps an overwrite's new datasets
apart from the ones readers still use. Domain and matrix names have no '-', so
the parts of a name never run into each other.
"""

from __future__ import annotations

import re
import secrets

from skyhook.errors import InvalidRequestError

PREFIX = "expr-"
DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{0,39}")
MATRIX_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{0,59}")
DEFAULT_DOMAIN = "default"
PARTS = ("values", "obs", "var")


def check_domain_name(name: object) -> str:
    if not isinstance(name, str) or not DOMAIN_NAME.fullmatch(name):
        raise InvalidRequestError(f"invalid domain name {name!r}: use letters, digits and '_' (at most 40)")
    return name


def check_matrix_name(name: object) -> str:
    if not isinstance(name, str) or not MATRIX_NAME.fullmatch(name):
        raise InvalidRequestError(f"invalid matrix name {name!r}: use letters, digits and '_' (at most 60)")
    return name


def catalog_dataset(domain: str) -> str:
    return PREFIX + domain


def domain_of_catalog(dataset: str) -> str | None:
    """The domain whose catalog dataset this is; None for any other dataset."""
    rest = dataset[len(PREFIX) :] if dataset.startswith(PREFIX) else ""
    return rest if DOMAIN_NAME.fullmatch(rest) else None


def part_datasets(domain: str, matrix: str) -> dict[str, str]:
    """Fresh dataset names for one write of a matrix, one per part."""
    token = secrets.token_hex(4)
    return {part: f"{PREFIX}{domain}-{matrix}-{token}-{part}" for part in PARTS}
