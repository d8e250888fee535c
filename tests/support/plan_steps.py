"""Running a transform plan while checking what readers see."""

from __future__ import annotations

import pyarrow as pa

import skyhook
from support.transform_answers import assert_answers


def run_step_by_step(store: skyhook.Store, dataset: skyhook.Dataset, plan: skyhook.Plan, expected: pa.Table) -> None:
    """Runs the plan one step at a time, checking the answers before it, after
    every step (so at every fraction of the plan a reader can meet) and at the end."""
    assert_answers(store, dataset.name, expected)
    for done in range(1, len(plan.steps)):
        plan = dataset.run_plan(plan, max_steps=1)
        assert plan.state == "paused" and plan.steps_done == done
        assert_answers(store, dataset.name, expected)
    plan = dataset.run_plan(plan)
    assert plan.state == "done" and plan.steps_done == len(plan.steps)
    assert store.plan(dataset.name, plan.id).state == "done"
    assert_answers(store, dataset.name, expected)
