"""The cost model's sample does not stall storage: the calls of a sample and a
wave more start before the client decides, and the decision either lets the
rest start in the same stream or stops it (the replies of calls already
started still count), on both backends."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from skyhook.backends.parallel import Admission
from skyhook.execution.placement import Decision, sample_admission, sample_size
from skyhook.execution.scan_execution import ScanExecution
from skyhook.rpc.requests import ScanRequest
from support.assertions import assert_same_table

F = pc.field
ROWS = 24_000


@pytest.fixture
def dataset(store):
    table = pa.table(
        {
            "x": pa.array(range(ROWS), pa.int64()),
            "r": pa.array([n * 7919 % 1000 for n in range(ROWS)], pa.int64()),  # no object pruned by it
            "s": pa.array([f"row {n}" * 8 for n in range(ROWS)]),
        }
    )
    return store.write_dataset("sampled", table, rows_per_object=1_500), table


def replies(store, names: list[str], admission: Admission, decide_after: int | None = None, go_on: bool = True):
    """How many replies a stream gives when admission is decided after decide_after of them."""
    count = 0
    for _ in store.backend.call_each(names, ScanRequest(), "scanning", admission=admission):
        count += 1
        if count == decide_after:
            admission.admit_all() if go_on else admission.stop()
    return count


@pytest.mark.parametrize("parallel", [True, False])
def test_admission_bounds_the_calls_that_start(store, dataset, parallel, monkeypatch):
    ds, _ = dataset
    names = [partition.object_name for partition in ds.manifest.partitions]
    if not parallel:
        call_each = store.backend.call_each
        monkeypatch.setattr(
            store.backend, "call_each", lambda *args, **options: call_each(*args, **options, parallel=False)
        )
    assert replies(store, names, Admission(3)) == 3  # undecided: no call past the admitted ones
    # Decided while calls still run (more admitted than the client takes ahead): one stream.
    assert replies(store, names, Admission(12), decide_after=1) == len(names)
    assert 1 <= replies(store, names, Admission(12), decide_after=1, go_on=False) <= 12


def test_a_sample_that_decides_pushdown_keeps_one_stream(store, dataset, monkeypatch):
    """Across a link the objects after the sample start before it decides: one
    stream of calls for the whole scan (in process: the sample, then the rest)."""
    ds, table = dataset
    streams = []
    call_many = store.backend.call_many

    def counted(method, calls, admission=None):
        streams.append(method)
        return call_many(method, calls, admission)

    monkeypatch.setattr(store.backend, "call_many", counted)
    scanner = ds.scanner(columns=["x"], filter=F("r") < 10, pushdown="auto", reply_compression="none")
    assert_same_table(scanner.to_table(), table.filter(F("r") < 10).select(["x"]))
    assert "sampled object" in scanner.stats.cost_model and "pushdown for" in scanner.stats.cost_model
    assert scanner.stats.objects_read_plain == 0
    assert len(streams) == (2 if store.backend.runs_in_process else 1)


def test_a_sample_that_decides_plain_reads_stops_the_stream(store, dataset):
    """Replies passing their objects' size: the calls started before the decision
    answer (pushed back: read here), the others are never sent."""
    ds, table = dataset
    options = {"reply_within_object": True} if store.backend.runs_in_process else {}
    scanner = ds.scanner(columns=["s"], filter=F("r") >= 1, reply_compression="none", **options)
    assert_same_table(scanner.to_table(), table.filter(F("r") >= 1).select(["s"]))
    stats = scanner.stats
    assert "would pass its size" in stats.cost_model
    started = sample_admission(store.backend)
    assert sample_size(store.backend) <= stats.objects_over_object
    assert started.admits(stats.objects_over_object - 1) and stats.objects_read_plain == len(ds.manifest.partitions)


def test_a_chosen_pushdown_whose_replies_pass_their_objects_turns_to_plain_reads(store, dataset, monkeypatch):
    """Statistics chose pushdown (forced here) but the first replies pass their
    objects' size: the objects whose calls had not started are read plainly."""
    ds, table = dataset
    monkeypatch.setattr(ScanExecution, "planned_decision", lambda *_: Decision(True, "statistics: pushdown"))
    options = {"reply_within_object": True} if store.backend.runs_in_process else {}
    scanner = ds.scanner(columns=["s"], reply_compression="none", **options)
    assert_same_table(scanner.to_table(), table.select(["s"]))
    stats = scanner.stats
    assert stats.cost_model.startswith("statistics: pushdown; but ") and "plain reads" in stats.cost_model
    assert stats.objects_read_plain == len(ds.manifest.partitions)
    assert stats.objects_over_object < len(ds.manifest.partitions)  # not all storage's work thrown away
    assert sample_admission(store.backend).admits(stats.objects_over_object - 1)
