"""A copy step: an object a copy keeps whole (every row and column, in its own
design) copied by the store itself with its attributes, so its bytes never
pass through the transform driver: RADOS copy_from (OSD to OSD), a file copy
in the embedded store. Re-running it copies the object again."""

from __future__ import annotations

from skyhook.backends.base import Backend
from skyhook.backends.object_store import PendingWrite
from skyhook.catalog.manifest import Manifest
from skyhook.distributed.plan import Step
from skyhook.distributed.source_scan import source_numbers


def run_copy(backend: Backend, step: Step, manifest: Manifest, pending: PendingWrite) -> None:
    """Copies the step's source (still an object of the current manifest) to its
    target; records what it wrote and what moved in step."""
    (source,), (target,) = step.sources, step.targets
    source_numbers(manifest, [source])
    backend.copy_object(source, target)
    pending.heartbeat()
    step.written = [target]
    step.measured = {
        "rows": step.rows,
        "bytes_read": 0,
        "bytes_returned": 0,
        "bytes_decoded": 0,
        "selected_bytes": 0,
        "bytes_copied": step.bytes_written,
    }
