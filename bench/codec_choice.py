"""compression="auto" on TPC-H lineitem: the codec chosen on a sample for a
1 Gbit/s link, a 10 Gbit/s link and the local read rate, against every codec's
whole-dataset read. Writes JSON; prints the ratios.

    .venv/bin/python bench/codec_choice.py [--scale-factor 0.1] [--repeat 3] [--store URI]

lineitem is written once per codec (none, lz4, zstd); the plain reads of the
copies (pushdown off: the client decodes every object) are interleaved in each
of --repeat rounds and their medians taken. Each codec's read of the store
over a link is estimated as its stored bytes / link rate + its measured decode
time (this machine has no shaped link: loopback is free), and "auto" is
compared with the best codec by that estimate and with zstd, the default.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time

import pyarrow.parquet as pq
from harness import arguments

import skyhook
from skyhook.catalog.design import COMPRESSIONS
from skyhook.dev.tpch import generate_lineitem

LINKS = {"1 Gbit/s": 125e6, "10 Gbit/s": 1.25e9}


def main() -> None:
    options = arguments(__doc__, "codec_choice", 3).parse_args()
    table = pq.read_table(generate_lineitem(options.scale_factor, options.data_dir))
    with tempfile.TemporaryDirectory() as directory:
        store = skyhook.connect(options.store or f"{directory}/store", create=True)
        datasets = {codec: store.write_dataset(f"li_{codec}", table, compression=codec) for codec in COMPRESSIONS}
        reads: dict[str, list[float]] = {codec: [] for codec in COMPRESSIONS}
        for _ in range(options.repeat):
            for codec, dataset in datasets.items():
                started = time.perf_counter()
                dataset.to_table(pushdown=False)
                reads[codec].append(time.perf_counter() - started)
        stored = {codec: int(sum(dataset.design().column("bytes").to_pylist())) for codec, dataset in datasets.items()}
        read_s = {codec: statistics.median(times) for codec, times in reads.items()}
        links = {}
        for label, rate in {**LINKS, "local": None}.items():
            choice = skyhook.connect(store.uri, link_bytes_per_second=rate).dataset("li_zstd").choose_codec()
            link = choice.link_bytes_per_second
            estimated = {codec: stored[codec] / link + read_s[codec] for codec in COMPRESSIONS}
            best = min(estimated, key=estimated.get)
            links[label] = {
                "chosen": choice.codec,
                "best_by_whole_read": best,
                "estimated_read_s": estimated,
                "auto_over_best": estimated[choice.codec] / estimated[best],
                "auto_over_zstd": estimated[choice.codec] / estimated["zstd"],
                "sample": str(choice),
            }
            print(
                f"{label}: auto chose {choice.codec}, best by the whole read {best}: "
                f"{links[label]['auto_over_best']:.2f}x the best, {links[label]['auto_over_zstd']:.2f}x zstd's"
            )
        result = {"scale_factor": options.scale_factor, "stored_bytes": stored, "plain_read_s": read_s, "links": links}
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(result, indent=2))
    print(json.dumps({"stored_bytes": stored, "plain_read_s": read_s}, indent=2))


if __name__ == "__main__":
    main()
