"""The advisor's index estimate against measurement: point lookups on a
column are recorded, the advisor estimates the index's benefit from their
records, the index is built and held-out lookups are replayed with and
without it (bytes read in storage, index blocks included, and storage CPU).
Also each recorded lookup's modelled read without an index (lookup_reads.py)
against the bytes storage read for it, and the old model's (whole objects).
Builds an index on the store's dataset: run it on a copy.

    cp -r /tmp/cc/store /tmp/advisor-store
    python bench/advisor_estimates.py --store file:///tmp/advisor-store --dataset lineitem_engine
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pyarrow.compute as pc

import skyhook
from skyhook.catalog.pruning import matching_partitions
from skyhook.distributed.advisor import index_advice
from skyhook.distributed.lookup_reads import lookup_reads
from skyhook.execution.cost import bytes_read


def replay(dataset: skyhook.Dataset, lookups: list[pc.Expression], repeat: int) -> dict:
    """Bytes read in storage (index blocks included) and storage CPU, best of repeat."""
    read, cpu = 0, 0.0
    for lookup in lookups:
        best = None
        for _ in range(repeat):
            scanner = dataset.scanner(filter=lookup, pushdown=True)
            scanner.to_table()
            if best is None or scanner.stats.storage_cpu_s < best.storage_cpu_s:
                best = scanner.stats
        read += best.bytes_read + best.index_bytes_read
        cpu += best.storage_cpu_s
    return {"bytes_read": read, "storage_cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--column", default="l_partkey")
    parser.add_argument("--lookups", type=int, default=8)
    parser.add_argument("--held-out", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", type=Path, default=Path("bench/results/advisor_estimates.json"))
    options = parser.parse_args()
    store = skyhook.connect(options.store)
    dataset = store.dataset(options.dataset)
    if any(options.column in names for names in dataset.secondary_design()["indexes"].to_pylist()):
        raise SystemExit(f"{options.column!r} is indexed already: run on a fresh copy of the store")
    values = dataset.to_table([options.column], pushdown=False).column(0)
    keys = random.Random(5).sample(values.to_pylist(), options.lookups + options.held_out)
    lookups = [pc.field(options.column) == key for key in keys]
    recorded, held_out = lookups[: options.lookups], lookups[options.lookups :]
    for lookup in recorded:
        dataset.scanner(filter=lookup, pushdown=True).to_table()
    records = dataset.workload()[-options.lookups :]
    manifest = dataset.manifest
    modelled = []
    for record, lookup in zip(records, recorded):
        partitions = matching_partitions(manifest, lookup)
        reads = lookup_reads(manifest, record, partitions)
        modelled.append(
            {
                "estimated": reads.bytes,
                "measured": record.bytes_read,
                "whole_objects": sum(bytes_read(p, record.columns) for p in partitions),
                "model": reads.describe(),
            }
        )
    index = index_advice(manifest, records)  # as if no cluster key were proposed
    before = replay(dataset, held_out, options.repeat)
    dataset.create_index(options.column)
    after = replay(store.dataset(options.dataset), held_out, options.repeat)
    result = {
        "dataset": options.dataset,
        "column": options.column,
        "advice": str(index),
        "estimated_benefit": index.benefit,
        "measured_bytes_ratio": before["bytes_read"] / max(1, after["bytes_read"]),
        "measured_storage_cpu_ratio": before["storage_cpu_s"] / max(1e-9, after["storage_cpu_s"]),
        "held_out_without_index": before,
        "held_out_with_index": after,
        "recorded_lookups": modelled,
        "no_index_estimate_over_measured": sum(m["estimated"] for m in modelled)
        / max(1, sum(m["measured"] for m in modelled)),
        "old_model_over_measured": sum(m["whole_objects"] for m in modelled)
        / max(1, sum(m["measured"] for m in modelled)),
    }
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "recorded_lookups"}, indent=2))


if __name__ == "__main__":
    main()
