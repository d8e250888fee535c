"""No stored object stops the transform worker: fed crafted plan objects (names
that are not their plans, deep nesting, huge arrays, wrong types, truncated or
random bytes) among valid plans, it finishes every valid plan, reports each
crafted one failed once, returns with --once and sleeps between polls. The
workload log is decoded within the same bounds."""

from __future__ import annotations

import json
import random
import threading
import time

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from skyhook import TransformTarget, stored_json
from skyhook.cli import app
from skyhook.distributed import plan_store
from skyhook.distributed.worker import work
from skyhook.errors import InvalidRequestError
from skyhook.execution.workload_log import log_object
from skyhook.names import new_generation
from support.tables import make_typed_table
from support.transform_answers import assert_answers

TABLE = make_typed_table(rows=600)

# A field of a plan record (or of its first step) and a value of the wrong type for it.
WRONG_TYPES = [
    ("state", 5),
    ("state", "finished"),
    ("parallel", 0),
    ("parallel", True),
    ("order", "random"),
    ("lease_expiry", "soon"),
    ("rate", [1]),
    ("summary", {"a": 1}),
    ("groups", "x"),
    ("columns", [1, 2]),
    ("into", 7),
    ("design", "not base64!"),
    ("filter", "AAAA"),
    ("steps", {"kind": "stream"}),
    ("steps", [0]),
    ("step.kind", "delete"),
    ("step.group", 99),
    ("step.group", "0"),
    ("step.bytes_read", "many"),
    ("step.bytes_read", -1),
    ("step.done", "yes"),
    ("step.sources", "t.1.0"),
    ("step.sources", ["../../etc/passwd"]),
    ("step.targets", [["nested"]]),
    ("step.measured", {"wall_s": "slow"}),
    ("step.key_ranges", []),
    ("step.memory", 1.5),
    ("step.unknown", 1),
]


def _nested(depth: int) -> bytes:
    """JSON of lists and objects nested depth deep (json.dumps cannot write it deep)."""
    opening = b"".join(b"[" if level % 2 else b'{"k":' for level in range(depth))
    return opening + b"0" + b"".join(b"]" if level % 2 else b"}" for level in reversed(range(depth)))


def _crafted(valid: dict, plan_id: str, number: int, rng: random.Random) -> bytes:
    """The number-th crafted plan object for the name of plan_id (never a valid plan)."""
    record = json.loads(json.dumps(valid))
    record["id"] = plan_id
    kind = number % 9
    if kind == 0:  # a valid plan stored under another plan's name
        record["id"] = new_generation()
    elif kind == 1:
        record["dataset"] = "other"
    elif kind == 2:  # nesting past the bound, up to far past Python's recursion limit
        record[rng.choice(["summary", "steps", "columns", "error"])] = "NESTED"
        return json.dumps(record).encode().replace(b'"NESTED"', _nested(rng.choice([40, 1500, 100_000])))
    elif kind == 3:
        field, value = WRONG_TYPES[number // 9 % len(WRONG_TYPES)]
        target = record["steps"][0] if field.startswith("step.") else record
        target[field.removeprefix("step.")] = value
    elif kind == 4:  # huge arrays (a few: they are big)
        record["steps"] = [0] * (200_000 if number < 50 else 100)
    elif kind == 5:
        record["version"] = rng.choice([2, "1", None])
    else:
        data = json.dumps(record).encode()
        if kind == 6:
            return data[: rng.randrange(1, len(data) - 1)]
        if kind == 7:
            return rng.randbytes(rng.randrange(1, 400))
        return b"[" + data + b"]"
    return json.dumps(record).encode()


def _queued_plans(store, datasets: list[str]) -> list:
    plans = []
    for name in datasets:
        dataset = store.write_dataset(name, TABLE, rows_per_object=300)
        plans.append(store.queue_plan(dataset.plan_transform(TransformTarget(rows_per_object=200))))
    return plans


def test_the_worker_runs_every_valid_plan_among_crafted_ones(store, backend):
    crafted_count = 1000 if backend == "embedded" else 200  # each one a RADOS object on Ceph
    valid = _queued_plans(store, ["t", "u", "w"])
    record = json.loads(valid[0].to_bytes())
    rng = random.Random(7)
    crafted_ids = []
    for number in range(crafted_count):
        plan_id = new_generation()
        data = _crafted(record, plan_id, number, rng)
        store.backend.put_object(plan_store.plan_object("t", plan_id), pa.py_buffer(data), {})
        crafted_ids.append(plan_id)
    told: list[tuple[str, str | None]] = []
    ran = _bounded(lambda: work(store.backend, lambda plan, outcome: told.append((plan.id, outcome)), once=True))
    assert ran == len(valid)
    for plan in valid:
        assert (plan.id, None) in told
        assert store.plan(plan.dataset, plan.id).state == "done"
    failed = [plan_id for plan_id, outcome in told if outcome not in ("started", None)]
    assert sorted(failed) == sorted(crafted_ids)  # each crafted plan once
    listed = {plan.id: plan for plan in store.plans("t")}
    assert all(listed[plan_id].state == "failed" and listed[plan_id].error for plan_id in crafted_ids)
    assert max(len(listed[plan_id].error) for plan_id in crafted_ids) < 400
    for plan in valid:
        assert_answers(store, plan.dataset, TABLE)


def test_the_worker_sleeps_between_polls_and_tells_each_failure_once(store):
    _queued_plans(store, ["t"])
    for number in range(20):
        plan_id = new_generation()
        store.backend.put_object(plan_store.plan_object("t", plan_id), pa.py_buffer(b'{"steps": [' * 50), {})
    told: list[tuple[str, str | None]] = []
    stop = threading.Event()

    def log(plan, outcome):
        told.append((plan.id if plan else "", outcome))
        if stop.is_set():
            raise KeyboardInterrupt  # the worker's way out: nothing else stops it

    worker = threading.Thread(target=lambda: _ignore_interrupt(lambda: work(store.backend, log, interval=0.5)))
    worker.start()
    deadline = time.monotonic() + 120
    while not any(outcome is None for _, outcome in told):  # the valid plan is done
        assert time.monotonic() < deadline and worker.is_alive()
        time.sleep(0.1)
    cpu = time.process_time()
    time.sleep(4)  # about eight polls of 21 plan objects
    assert time.process_time() - cpu < 2.0  # a worker spinning on a plan takes all 4 s
    assert [outcome for _, outcome in told].count("started") == 1
    assert len(told) == 2 + 20  # started and done, and each unreadable plan once
    stop.set()
    store.backend.put_object(plan_store.plan_object("t", new_generation()), pa.py_buffer(b"{"), {})
    worker.join(timeout=30)
    assert not worker.is_alive()


def test_the_cli_worker_returns_and_status_shows_unreadable_plans(store):
    [plan] = _queued_plans(store, ["t"])
    broken = new_generation()
    store.backend.put_object(plan_store.plan_object("t", broken), pa.py_buffer(b"[" * 100_000), {})
    worked = _bounded(lambda: CliRunner().invoke(app, ["worker", "--once", "--store", store.uri]))
    assert worked.exit_code == 0, worked.output
    assert f"plan {broken} of t: failed" in worked.stdout and "1 plan(s) run" in worked.stdout
    status = CliRunner().invoke(app, ["design", "status", "t", "--store", store.uri])
    assert status.exit_code == 0 and "unreadable" in status.stdout and "failed" in status.stdout, status.output
    resumed = CliRunner().invoke(app, ["design", "resume", "t", "--plan", broken, "--store", store.uri])
    assert resumed.exit_code != 0 and "unreadable" in resumed.output and "Traceback" not in resumed.output


@pytest.mark.parametrize(
    "stored",
    [b"[" * 100_000, b'[{"kind": "scan"}]', b'[{"predicates": ' + b"[" * 30 + b"]" * 30 + b"}]", b"\xff", b"{}"],
)
def test_a_damaged_workload_log_is_no_log(store, stored):
    dataset = store.write_dataset("t", TABLE, rows_per_object=300)
    store.backend.put_object(log_object("t"), pa.py_buffer(stored), {})
    assert dataset.workload() == []
    with pytest.raises(InvalidRequestError, match="no queries of 't' are logged"):
        dataset.advise()


def test_stored_json_bounds():
    assert stored_json.load(b'{"a": [1, {"b": "[[[["}]}') == {"a": [1, {"b": "[[[["}]}
    assert stored_json.nesting_depth(b'{"a": [1, {"b": "[[[[\\"]]"}]}') == 3
    with pytest.raises(stored_json.StoredJSONError, match="nested 33 deep"):
        stored_json.load(b"[" * 33 + b"]" * 33)
    with pytest.raises(stored_json.StoredJSONError, match="malformed"):
        stored_json.load(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(stored_json.StoredJSONError, match="over the 10-byte bound"):
        stored_json.load(b"[1, 2, 3, 4, 5]", max_bytes=10)
    with pytest.raises(stored_json.StoredJSONError, match="malformed"):
        stored_json.load(b'"\\"\\"\\"' * 100_000)  # an unterminated string: linear, not quadratic


def _bounded(call, seconds: float = 300):
    """call's result, failing the test if it has not returned within seconds (a hung worker)."""
    result: list = []
    runner = threading.Thread(target=lambda: result.append(call()), daemon=True)
    runner.start()
    runner.join(seconds)
    assert result, f"no return within {seconds} s"
    return result[0]


def _ignore_interrupt(call) -> None:
    try:
        call()
    except KeyboardInterrupt:
        pass
