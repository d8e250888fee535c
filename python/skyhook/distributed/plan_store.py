"""Plans kept in the store, one object each (``_skyhook.plan.<dataset>.<id>``:
no dataset's object has such a name, so fsck and listings pass it by), and
updated only by compare-and-swap so a cancel and a runner never clobber each
other's progress."""

from __future__ import annotations

import pyarrow as pa

from skyhook.backends.object_store import ObjectStore
from skyhook.distributed.plan import Plan
from skyhook.errors import CorruptManifestError, InvalidRequestError, ObjectChangedError, ObjectNotFoundError
from skyhook.names import DATASET_NAME, GENERATION

PREFIX = "_skyhook.plan."
#: The summary of the failed plan listed for an unreadable plan object.
UNREADABLE = "unreadable plan object"


def plan_object(dataset: str, plan_id: str) -> str:
    return f"{PREFIX}{dataset}.{plan_id}"


def save_new(store: ObjectStore, plan: Plan) -> None:
    store.put_object(plan_object(plan.dataset, plan.id), _buffer(plan), {})


def load(store: ObjectStore, dataset: str, plan_id: str) -> tuple[Plan, object]:
    """The stored plan and its version (for update)."""
    if not (DATASET_NAME.fullmatch(dataset) and GENERATION.fullmatch(plan_id)):
        raise InvalidRequestError(f"invalid plan {dataset}.{plan_id}")
    name = plan_object(dataset, plan_id)
    try:
        stored = store.read_versioned_object(name)
    except ObjectNotFoundError:
        raise InvalidRequestError(f"no plan {plan_id} for dataset {dataset!r} in {store.uri}") from None
    plan = Plan.from_bytes(stored.data.to_pybytes(), name)
    if (plan.dataset, plan.id) != (dataset, plan_id):
        raise CorruptManifestError(f"the plan {name} is unreadable: it holds plan {plan.id} of {plan.dataset!r}")
    return plan, stored.version


def update(store: ObjectStore, plan: Plan, version: object) -> object:
    """Store plan if the stored one is still at version; its new version.
    ObjectChangedError if another process changed it meanwhile."""
    name = plan_object(plan.dataset, plan.id)
    if not store.replace_object_at(name, _buffer(plan).to_pybytes(), {}, version):
        raise ObjectChangedError(f"plan {plan.id} of {plan.dataset!r} was changed by another process meanwhile")
    return store.read_versioned_object(name).version


def plans(store: ObjectStore, dataset: str | None = None) -> list[Plan]:
    """Every plan of the store (of dataset, if given), oldest first; a plan object
    that is unreadable as its own plan is listed as a failed plan without steps,
    its error saying why (never run, never in the way of the others)."""
    found = []
    for name in store.object_names():
        if not name.startswith(PREFIX):
            continue
        owner, _, plan_id = name.removeprefix(PREFIX).rpartition(".")
        if (dataset is None or owner == dataset) and DATASET_NAME.fullmatch(owner) and GENERATION.fullmatch(plan_id):
            try:
                found.append(load(store, owner, plan_id)[0])
            except InvalidRequestError:
                continue  # deleted since the listing
            except CorruptManifestError as error:
                found.append(_unreadable(owner, plan_id, str(error)))
    return sorted(found, key=lambda plan: plan.id)


def is_unreadable(plan: Plan) -> bool:
    """Whether plans() listed plan in place of an unreadable plan object."""
    return plan.summary == UNREADABLE and plan.state == "failed" and not plan.steps


def _unreadable(dataset: str, plan_id: str, reason: str) -> Plan:
    return Plan(plan_id, dataset, None, plan_id, [], [], UNREADABLE, state="failed", error=reason)


def _buffer(plan: Plan) -> pa.Buffer:
    return pa.py_buffer(plan.to_bytes())
