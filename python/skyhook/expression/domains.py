"""Domains group matrices like a database schema: list, create, delete; and
the matrices of a domain: list, delete."""

from __future__ import annotations

from skyhook.errors import DatasetNotFoundError
from skyhook.expression.catalog import Catalog, MatrixEntry, load_catalog, update_catalog
from skyhook.expression.errors import DomainExistsError, DomainNotFoundError, MatrixNotFoundError
from skyhook.expression.names import DEFAULT_DOMAIN, check_domain_name, check_matrix_name, domain_of_catalog
from skyhook.store import Store


def list_domains(store: Store) -> list[str]:
    return sorted(domain for domain in map(domain_of_catalog, store.list_datasets()) if domain is not None)


def create_domain(store: Store, domain: str) -> None:
    check_domain_name(domain)

    def created(current: Catalog | None) -> Catalog:
        if current is not None:
            raise DomainExistsError(f"domain {domain!r} exists")
        return Catalog(domain, {})

    update_catalog(store.backend, domain, created)


def delete_domain(store: Store, domain: str) -> None:
    """Delete the domain and every matrix in it."""

    def deleted(current: Catalog | None) -> None:
        _existing(current, domain)  # raises if there is no such domain

    replaced, _ = update_catalog(store.backend, check_domain_name(domain), deleted)
    for entry in replaced.matrices.values():
        delete_parts(store, entry)


def domain_catalog(store: Store, domain: str) -> Catalog:
    return _existing(load_catalog(store.backend, check_domain_name(domain)), domain)


def list_matrices(store: Store, domain: str = DEFAULT_DOMAIN) -> list[MatrixEntry]:
    return sorted(domain_catalog(store, domain).matrices.values(), key=lambda entry: entry.name)


def matrix_entry(store: Store, name: str, domain: str = DEFAULT_DOMAIN) -> MatrixEntry:
    """The catalog entry of a matrix; a name found only in other domains says where it is."""
    check_matrix_name(name)
    catalog = domain_catalog(store, domain)
    if name in catalog.matrices:
        return catalog.matrices[name]
    elsewhere = [other for other in list_domains(store) if other != domain and name in _matrices_of(store, other)]
    hint = f" (it is in domain {', '.join(map(repr, elsewhere))})" if elsewhere else ""
    raise MatrixNotFoundError(f"no matrix {name!r} in domain {domain!r}{hint}")


def delete_matrix(store: Store, name: str, domain: str = DEFAULT_DOMAIN) -> None:
    check_matrix_name(name)

    def without(current: Catalog | None) -> Catalog:
        catalog = _existing(current, domain)
        if name not in catalog.matrices:
            raise MatrixNotFoundError(f"no matrix {name!r} in domain {domain!r}")
        return catalog.without_matrix(name)

    replaced, _ = update_catalog(store.backend, domain, without)
    delete_parts(store, replaced.matrices[name])


def delete_parts(store: Store, entry: MatrixEntry) -> None:
    for dataset in entry.datasets.values():
        try:
            store.delete_dataset(dataset)
        except DatasetNotFoundError:
            pass  # never published, or deleted by a racing delete


def _matrices_of(store: Store, domain: str) -> dict[str, MatrixEntry]:
    catalog = load_catalog(store.backend, domain)
    return catalog.matrices if catalog else {}


def _existing(catalog: Catalog | None, domain: str) -> Catalog:
    if catalog is None:
        raise DomainNotFoundError(f"no domain {domain!r} in the store")
    return catalog
