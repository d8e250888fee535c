"""Gene expression: the one-vs-rest Welch t-test with skyhook (statistics
computed in storage) and with scanpy's rank_genes_groups(method="t-test"), on
a generated 200,000 cells x 2,000 genes matrix (negative-binomial counts,
~10 % non-zero, 10 unequal groups, normalised and log1p'd, seeded) and on
scanpy's pbmc68k_reduced (.raw by bulk_labels); then the two layouts side by
side over the share of non-zeros (what layouts.SPARSE_BELOW_DENSITY rests on).
Writes JSON and a PNG; prints ratios.

    .venv/bin/python bench/expression.py [--cells 200000] [--genes 2000] [--repeat 3]
        [--store URI | --cluster DIR] [--output bench/results/expression.json]

Each side runs in a process of its own, so that its peak resident memory
(VmHWM, reset after the imports) is its own: scanpy's includes reading the
.h5ad (it tests what it holds in memory); skyhook's the client's whole work.
With the embedded store (the default) storage runs inside the client
process, so its memory counts as the client's too; --cluster separates them.
Bytes to the client: skyhook's replies as moved; scanpy's, the .h5ad read.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from harness import arguments, cluster_store

DENSITIES = (0.02, 0.1, 0.3, 0.6, 1.0)


def peak_reset() -> int:
    """Reset this process's peak resident memory; returns the current resident bytes."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status("VmRSS")


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def child_skyhook(uri: str, matrix: str, domain: str, groupby: str, repeat: int, out: str) -> dict:
    import pyarrow.parquet as pq

    import skyhook
    import skyhook.expression as ex

    store = skyhook.connect(uri, create=False)
    opened = ex.open_matrix(store, matrix, domain)
    opened.gene_names  # noqa: B018 (the gene table, read once per matrix)
    baseline = peak_reset()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = opened.ttest(groupby, method="welch")
        times.append(time.perf_counter() - start)
    peak = _status("VmHWM") - baseline
    pq.write_table(result.select(["group", "gene", "t", "p"]), out)
    stats = opened.last_stats
    return {
        "seconds": min(times),
        "all_seconds": times,
        "bytes_to_client": sum(s.bytes_returned for s in stats),
        "client_peak_bytes": peak,
        "in_storage": all(s.aggregate_in_storage for s in stats),
        "storage_cpu_s": sum(s.storage_cpu_s for s in stats),
        "objects": sum(s.objects_scanned for s in stats),
    }


def child_scanpy(h5ad: str, groupby: str, repeat: int, out: str) -> dict:
    import anndata
    import pandas as pd
    import scanpy as sc

    warm = anndata.AnnData(np.ones((4, 2), dtype=np.float32), obs=pd.DataFrame({"g": ["a", "a", "b", "b"]}))
    sc.tl.rank_genes_groups(warm, "g", method="t-test")  # compiles what scanpy compiles, outside the timing
    baseline = peak_reset()
    start = time.perf_counter()
    adata = anndata.read_h5ad(h5ad)
    read = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        sc.tl.rank_genes_groups(
            adata, groupby, method="t-test", n_genes=adata.raw.n_vars if adata.raw else adata.n_vars
        )
        times.append(time.perf_counter() - start)
    peak = _status("VmHWM") - baseline
    ranked = adata.uns["rank_genes_groups"]
    rows = [
        (group, name, float(score))
        for group in ranked["names"].dtype.names
        for name, score in zip(ranked["names"][group], ranked["scores"][group])
    ]
    pd.DataFrame(rows, columns=["group", "gene", "score"]).to_parquet(out)
    return {
        "seconds": min(times),
        "all_seconds": times,
        "read_seconds": read,
        "bytes_to_client": Path(h5ad).stat().st_size,
        "client_peak_bytes": peak,
    }


def run_child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(name: str, uri: str, matrix: str, domain: str, h5ad: Path, groupby: str, repeat: int, work: Path) -> dict:
    import pandas as pd

    ours, theirs = work / f"{name}-skyhook.parquet", work / f"{name}-scanpy.parquet"
    project = run_child("skyhook", uri, matrix, domain, groupby, str(repeat), str(ours))
    scanpy = run_child("scanpy", str(h5ad), groupby, str(repeat), str(theirs))
    joined = pd.read_parquet(ours).merge(pd.read_parquet(theirs), on=["group", "gene"])
    scale = np.maximum(np.abs(joined.score), 1.0)
    result = {
        "skyhook": project,
        "scanpy": scanpy,
        "speedup": scanpy["seconds"] / project["seconds"],
        "memory_ratio": project["client_peak_bytes"] / max(1, scanpy["client_peak_bytes"]),
        "scores_max_scaled_difference": float((np.abs(joined.t - joined.score) / scale).max()),
        "rows_compared": len(joined),
    }
    print(
        f"{name}: skyhook {project['seconds']:.2f} s, {project['bytes_to_client'] / 1e6:.2f} MB to the client, "
        f"peak {project['client_peak_bytes'] / 2**20:.0f} MiB; scanpy {scanpy['seconds']:.2f} s "
        f"(+{scanpy['read_seconds']:.2f} s reading), peak {scanpy['client_peak_bytes'] / 2**20:.0f} MiB; "
        f"{result['speedup']:.1f}x faster, memory {result['memory_ratio']:.1%} of scanpy's"
    )
    return result


def layout_sweep(store, repeat: int) -> list[dict]:
    """Both layouts of one matrix per share of non-zeros: the t-test's time."""
    import anndata
    import pandas as pd
    import scipy.sparse

    import skyhook.expression as ex

    rng = np.random.default_rng(1)
    cells, genes = 100_000, 100
    labels = pd.Categorical(rng.choice([f"g{k}" for k in range(10)], cells))
    rows = []
    for density in DENSITIES:
        x = scipy.sparse.random(cells, genes, density=density, random_state=rng, format="csr", dtype=np.float32)
        adata = anndata.AnnData(x, obs=pd.DataFrame({"group": labels}, index=[f"c{i}" for i in range(cells)]))
        row = {"density": density}
        for layout in ("sparse", "dense"):
            name = f"sweep_{layout}_{int(density * 100)}"
            ex.write_matrix(store, name, adata, layout=layout, domain="bench", mode="overwrite")
            matrix = ex.open_matrix(store, name, "bench")
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                matrix.ttest("group")
                times.append(time.perf_counter() - start)
            row[layout] = min(times)
        print(f"layouts at {density:.0%} non-zero: sparse {row['sparse']:.2f} s, dense {row['dense']:.2f} s")
        rows.append(row)
    return rows


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    datasets = [name for name in ("generated", "pbmc68k_reduced") if name in results]
    for axis, (key, label, scale) in zip(
        axes,
        [("seconds", "t-test wall time (s)", 1), ("bytes_to_client", "bytes to the client (MB)", 1e6),
         ("client_peak_bytes", "client peak memory (MiB)", 2**20)],
    ):  # fmt: skip
        positions = np.arange(len(datasets))
        for offset, side in ((-0.2, "skyhook"), (0.2, "scanpy")):
            values = [results[name][side][key] / scale for name in datasets]
            axis.bar(positions + offset, values, width=0.4, label=side)
        axis.set_xticks(positions, datasets)
        axis.set_yscale("log")
        axis.set_title(label, fontsize=10)
        axis.legend(fontsize=8)
    sweep = results.get("layouts", [])
    if sweep:
        density = [row["density"] for row in sweep]
        axes[3].plot(density, [row["sparse"] for row in sweep], "o-", label="sparse long")
        axes[3].plot(density, [row["dense"] for row in sweep], "o-", label="dense")
        axes[3].set_xlabel("share of non-zero values")
        axes[3].set_title("t-test time by layout, 100k x 100 (s)", fontsize=10)
        axes[3].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        side, *rest = sys.argv[2:]
        if side == "skyhook":
            uri, matrix, domain, groupby, repeat, out = rest
            print(json.dumps(child_skyhook(uri, matrix, domain, groupby, int(repeat), out)))
        else:
            h5ad, groupby, repeat, out = rest
            print(json.dumps(child_scanpy(h5ad, groupby, int(repeat), out)))
        return
    parser = arguments(__doc__, "expression", repeat=3)
    parser.add_argument("--cells", type=int, default=200_000)
    parser.add_argument("--genes", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-layouts", action="store_true")
    options = parser.parse_args()
    import scanpy as sc

    import skyhook
    import skyhook.expression as ex
    from skyhook.expression.synthetic import generate_anndata

    work = Path(tempfile.mkdtemp(prefix="skyhook-expression-"))
    uri, _ = cluster_store(options.cluster, options.store or (work / "store").as_uri())
    store = skyhook.connect(uri)
    results: dict = {"cells": options.cells, "genes": options.genes, "store": uri.split("?")[0]}
    options.data_dir.mkdir(parents=True, exist_ok=True)
    h5ad = options.data_dir / f"expression-{options.cells}x{options.genes}-seed{options.seed}.h5ad"
    if not h5ad.exists():
        start = time.perf_counter()
        generated = generate_anndata(options.cells, options.genes, groups=10, seed=options.seed)
        generated.write_h5ad(h5ad)
        results["generate_seconds"] = time.perf_counter() - start
        del generated
    start = time.perf_counter()
    entry = ex.write_matrix(store, "generated", h5ad, domain="bench", mode="overwrite")
    results["import_seconds"] = time.perf_counter() - start
    results["density"] = ex.read_input(h5ad).density
    print(
        f"imported {h5ad.name} ({results['density']:.1%} non-zero, {entry.layout}) in {results['import_seconds']:.0f} s"
    )
    results["generated"] = compare("generated", uri, "generated", "bench", h5ad, "group", options.repeat, work)
    pbmc = work / "pbmc68k_reduced.h5ad"
    sc.datasets.pbmc68k_reduced().write_h5ad(pbmc)
    ex.write_matrix(store, "pbmc", pbmc, domain="bench", mode="overwrite")
    results["pbmc68k_reduced"] = compare(
        "pbmc68k_reduced", uri, "pbmc", "bench", pbmc, "bulk_labels", options.repeat, work
    )
    if not options.skip_layouts:
        results["layouts"] = layout_sweep(store, options.repeat)
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(results, indent=2))
    plot(results, options.output.with_suffix(".png"))
    print(f"wrote {options.output} and {options.output.with_suffix('.png')}")


if __name__ == "__main__":
    main()
