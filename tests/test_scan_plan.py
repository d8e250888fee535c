"""A query is planned once (plan_scan: what storage runs of its filter and
projection, what the client completes), also when Arrow scans its objects one
fragment at a time (joins, Acero, pyarrow's own Scanner)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook.execution import object_scans
from support.assertions import assert_same_table

TABLE = pa.table({"price": pa.array(range(6000), pa.int64()), "comment": [f"c{i % 11}x" for i in range(6000)]})


def test_arrow_plans_a_query_once_for_all_its_objects(store, monkeypatch):
    dataset = store.write_dataset("t", TABLE, rows_per_object=500)
    planned = []
    plan_scan = object_scans.plan_scan
    monkeypatch.setattr(object_scans, "plan_scan", lambda *args: planned.append(args) or plan_scan(*args))
    filter = (pc.field("price") >= 1000) & pc.match_like(pc.field("comment"), "c1_x")
    answer = pads.Scanner.from_dataset(dataset, columns=["price"], filter=filter).to_table()
    assert_same_table(answer.sort_by("price"), TABLE.filter(filter).select(["price"]))
    assert len(planned) == 1 and dataset.arrow_scans.objects_scanned == 10
