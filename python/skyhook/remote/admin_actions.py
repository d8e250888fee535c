"""The administrative verbs remote users need, as Flight actions with JSON
bodies and results: list the datasets, describe one (schema, objects and
their designs), check the store (fsck; a repair needs a writer)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from skyhook.errors import InvalidRequestError, PermissionDeniedError
from skyhook.store import Store

ACTIONS = {
    "skyhook.list": "The datasets: name, rows, objects, bytes.",
    "skyhook.describe": 'One dataset ({"dataset": name}): schema, rows, objects with their sizes and designs.',
    "skyhook.fsck": 'Check the store ({"repair": true} repairs too: writers only).',
}


def run_action(store: Store, kind: str, body: bytes, role: str) -> bytes:
    """The JSON result of the action kind with its JSON body, for a caller of role."""
    try:
        arguments: Any = json.loads(body) if body else {}
    except ValueError:
        raise InvalidRequestError(f"{kind} takes a JSON object") from None
    if not isinstance(arguments, dict):
        raise InvalidRequestError(f"{kind} takes a JSON object")
    if kind == "skyhook.list":
        result: Any = [_summary(store, name) for name in store.list_datasets()]
    elif kind == "skyhook.describe":
        name = arguments.get("dataset")
        if not isinstance(name, str):
            raise InvalidRequestError('skyhook.describe takes {"dataset": name}')
        manifest = store.manifest(name)
        objects = [
            {"partition": p.number, "objects": list(p.object_names), "rows": p.num_rows, "bytes": p.stored_bytes}
            for p in manifest.partitions
        ]
        design = store.dataset(name).design().to_pylist()
        result = {**_summary(store, name), "schema": str(manifest.schema), "partitions": objects, "design": design}
    elif kind == "skyhook.fsck":
        repair = arguments.get("repair", False) is True
        if repair and role != "writer":
            raise PermissionDeniedError("a repair needs a user of the writer role")
        report = store.fsck(repair=repair)
        result = {**asdict(report), "clean": report.clean}
    else:
        raise InvalidRequestError(f"unknown action {kind[:64]!r}")
    return json.dumps(result, default=str).encode()


def _summary(store: Store, name: str) -> dict[str, Any]:
    manifest = store.manifest(name)
    return {"name": name, "rows": manifest.num_rows, "objects": len(manifest.partitions), "bytes": manifest.size_bytes}
