"""Manifests as stored tables, for tests of older versions' shapes."""

from __future__ import annotations

import pyarrow as pa

import skyhook


def manifest_table(dataset: skyhook.Dataset) -> pa.Table:
    return pa.ipc.open_file(pa.py_buffer(dataset.manifest.to_bytes())).read_all()


def put_manifest_table(store: skyhook.Store, name: str, table: pa.Table) -> None:
    """table replaces the manifest of name, as it is (no check)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    stored = store.backend.get_manifest(name)
    assert store.backend.replace_manifest(name, sink.getvalue().to_pybytes(), stored.version)
