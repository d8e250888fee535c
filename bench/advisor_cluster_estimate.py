"""The advisor's cluster estimate against measurement: 1-week ranges of a date
column are recorded (two columns read), the advisor estimates clustering by
the date from their records alone, the cluster is applied and held-out ranges
(and the recorded ones) are replayed before and after, in bytes read in
storage. Also the estimate of the model of whole objects (the advisor's
before of old: the objects the statistics cannot rule out, whole).
Rewrites the store's dataset: run it on a copy.

    cp -a /tmp/cc/store /tmp/advisor-store
    python bench/advisor_cluster_estimate.py --store file:///tmp/advisor-store --dataset lineitem_engine
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import skyhook
from skyhook.catalog.pruning import matching_partitions
from skyhook.distributed.advisor import advise
from skyhook.execution.cost import bytes_read

#: Ranges recorded, and held out.
RANGES, HELD_OUT = 6, 3


def replay(dataset: skyhook.Dataset, columns: list[str], queries: list[pc.Expression]) -> int:
    read = 0
    for query in queries:
        scanner = dataset.scanner(columns, filter=query, pushdown=True)
        scanner.to_table()
        read += scanner.stats.bytes_read
    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--column", default="l_shipdate")
    parser.add_argument("--read", default="l_extendedprice,l_discount")
    parser.add_argument("--output", type=Path, default=Path("bench/results/advisor_cluster_estimate.json"))
    options = parser.parse_args()
    store = skyhook.connect(options.store)
    dataset = store.dataset(options.dataset)
    columns = options.read.split(",")
    first, last = dataset.aggregate([(options.column, "min"), (options.column, "max")]).to_pylist()[0].values()
    starts = random.Random(5).sample(range((last - first).days - 7), RANGES + HELD_OUT)
    queries = []
    for start in (first + datetime.timedelta(days=offset) for offset in starts):
        end = start + datetime.timedelta(days=7)
        queries.append((pc.field(options.column) >= pa.scalar(start)) & (pc.field(options.column) < pa.scalar(end)))
    recorded, held_out = queries[:RANGES], queries[RANGES:]
    recorded_before = replay(dataset, columns, recorded)
    records = dataset.workload()[-RANGES:]
    manifest = dataset.manifest
    cluster = next(a for a in advise(store.backend, manifest, records) if a.kind == "cluster")
    whole = sum(
        bytes_read(p, record.columns)
        for record, query in zip(records, recorded)
        for p in matching_partitions(manifest, query)
    )
    before = replay(dataset, columns, held_out)
    dataset.run_plan(dataset.plan_transform(cluster.target))
    clustered = store.dataset(options.dataset)
    after = replay(clustered, columns, held_out)
    result = {
        "dataset": options.dataset,
        "advice": str(cluster),
        "estimated_benefit": cluster.benefit,
        "measured_held_out_ratio": before / max(1, after),
        "measured_recorded_ratio": recorded_before / max(1, replay(clustered, columns, recorded)),
        "before_estimate_over_measured": cluster.bytes_before / max(1, recorded_before),
        "whole_objects_before_over_measured": whole / max(1, recorded_before),
        "held_out_bytes": {"before": before, "after": after},
    }
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
