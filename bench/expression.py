"""Gene expression: one-vs-rest Welch t-tests, Wilcoxon rank sums, highly
variable genes (Cell Ranger) and pseudobulk sums with skyhook (computed in
storage) and with scanpy (rank_genes_groups "t-test" / "wilcoxon",
highly_variable_genes, get.aggregate), each in a process of its own, on
a generated 200,000 cells x 2,000 genes matrix (negative-binomial counts,
~10 % non-zero, 10 unequal groups, normalised and log1p'd, seeded) and on
scanpy's pbmc68k_reduced (.raw by bulk_labels); then the two layouts side by
side over the share of non-zeros (what layouts.DEFAULT_LAYOUT rests on).
Writes JSON and a PNG; prints ratios.

    .venv/bin/python bench/expression.py [--cells 200000] [--genes 2000] [--repeat 3] [--statistics welch,wilcoxon,hvg,pseudobulk]
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
from harness import arguments, cluster_store, write_report

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


STATISTICS = ("welch", "wilcoxon", "hvg", "pseudobulk")


def child_skyhook(uri: str, matrix: str, domain: str, groupby: str, statistic: str, repeat: int, out: str) -> dict:
    import skyhook
    import skyhook.expression as ex

    store = skyhook.connect(uri, create=False)
    opened = ex.open_matrix(store, matrix, domain)
    opened.gene_names  # noqa: B018 (the gene table, read once per matrix)
    baseline = peak_reset()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        frame = _skyhook_statistic(opened, groupby, statistic)
        times.append(time.perf_counter() - start)
    peak = _status("VmHWM") - baseline
    frame.to_parquet(out)
    stats = opened.last_stats
    return {
        "seconds": min(times),
        "all_seconds": times,
        "bytes_to_client": sum(s.bytes_returned for s in stats),
        "client_peak_bytes": peak,
        "in_storage": all(getattr(s, "aggregate_in_storage", False) for s in stats),
        "storage_cpu_s": sum(s.storage_cpu_s for s in stats),
        "objects": sum(s.objects_scanned for s in stats),
    }


def _skyhook_statistic(opened, groupby: str, statistic: str):
    """(keys..., score) of one statistic: the columns both sides are compared on."""
    if statistic in ("welch", "wilcoxon"):
        result = opened.ttest(groupby, method=statistic).to_pandas()
        return result.rename(columns={"t" if statistic == "welch" else "z": "score"})[["group", "gene", "score"]]
    if statistic == "hvg":
        result = opened.highly_variable_genes(n_top_genes=200).to_pandas()
        return result.rename(columns={"dispersions_norm": "score"})[["gene", "score"]]
    result = opened.pseudobulk(groupby).to_pandas()
    return result.rename(columns={groupby: "group", "sum": "score"})[["group", "gene", "score"]]


def child_scanpy(h5ad: str, groupby: str, statistic: str, repeat: int, out: str) -> dict:
    import anndata
    import pandas as pd
    import scanpy as sc

    warm = anndata.AnnData(np.ones((4, 2), dtype=np.float32), obs=pd.DataFrame({"g": ["a", "a", "b", "b"]}))
    sc.tl.rank_genes_groups(warm, "g", method="t-test")  # compiles what scanpy compiles, outside the timing
    baseline = peak_reset()
    start = time.perf_counter()
    adata = anndata.read_h5ad(h5ad)
    if adata.raw is not None:  # the values skyhook imported (.raw, scanpy's default for tests)
        adata = adata.raw.to_adata()
    read = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        frame = _scanpy_statistic(adata, groupby, statistic)
        times.append(time.perf_counter() - start)
    peak = _status("VmHWM") - baseline
    frame.to_parquet(out)
    return {
        "seconds": min(times),
        "all_seconds": times,
        "read_seconds": read,
        "bytes_to_client": Path(h5ad).stat().st_size,
        "client_peak_bytes": peak,
    }


def _scanpy_statistic(adata, groupby: str, statistic: str):
    import pandas as pd
    import scanpy as sc

    if statistic in ("welch", "wilcoxon"):
        method = "t-test" if statistic == "welch" else "wilcoxon"
        sc.tl.rank_genes_groups(adata, groupby, method=method, n_genes=adata.n_vars)
        ranked = adata.uns["rank_genes_groups"]
        rows = [
            (group, name, float(score))
            for group in ranked["names"].dtype.names
            for name, score in zip(ranked["names"][group], ranked["scores"][group])
        ]
        return pd.DataFrame(rows, columns=["group", "gene", "score"])
    if statistic == "hvg":
        found = sc.pp.highly_variable_genes(adata, flavor="cell_ranger", n_top_genes=200, inplace=False)
        return pd.DataFrame({"gene": list(adata.var_names), "score": found["dispersions_norm"].to_numpy()})
    summed = sc.get.aggregate(adata, by=groupby, func="sum")
    frame = pd.DataFrame(summed.layers["sum"], index=summed.obs_names.astype(str), columns=summed.var_names)
    return frame.stack().rename_axis(["group", "gene"]).rename("score").reset_index()


def run_child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(
    name: str, uri: str, matrix: str, domain: str, h5ad: Path, groupby: str, statistic: str, repeat: int, work: Path
) -> dict:
    import pandas as pd

    ours, theirs = work / f"{name}-{statistic}-skyhook.parquet", work / f"{name}-{statistic}-scanpy.parquet"
    project = run_child("skyhook", uri, matrix, domain, groupby, statistic, str(repeat), str(ours))
    scanpy = run_child("scanpy", str(h5ad), groupby, statistic, str(repeat), str(theirs))
    mine, other = pd.read_parquet(ours), pd.read_parquet(theirs)
    keys = [column for column in ("group", "gene") if column in mine]
    mine, other = mine.astype({key: str for key in keys}), other.astype({key: str for key in keys})
    joined = mine.merge(other, on=keys, suffixes=("", "_scanpy")).dropna()
    scale = np.maximum(np.abs(joined.score_scanpy), 1.0)
    result = {
        "skyhook": project,
        "scanpy": scanpy,
        "speedup": scanpy["seconds"] / project["seconds"],
        "memory_ratio": project["client_peak_bytes"] / max(1, scanpy["client_peak_bytes"]),
        "scores_max_scaled_difference": float((np.abs(joined.score - joined.score_scanpy) / scale).max()),
        "rows_compared": len(joined),
    }
    print(
        f"{name} {statistic}: skyhook {project['seconds']:.2f} s, {project['bytes_to_client'] / 1e6:.2f} MB to the "
        f"client, peak {project['client_peak_bytes'] / 2**20:.0f} MiB; scanpy {scanpy['seconds']:.2f} s "
        f"(+{scanpy['read_seconds']:.2f} s reading), peak {scanpy['client_peak_bytes'] / 2**20:.0f} MiB; "
        f"{result['speedup']:.1f}x faster; scores differ by {result['scores_max_scaled_difference']:.1e} at most",
        flush=True,
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
    """A panel of wall times per statistic (skyhook and scanpy, per dataset),
    the bytes each moved for the Welch test, and the layout sweep."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = [name for name in ("generated", "pbmc68k_reduced") if name in results]
    statistics = [name for name in STATISTICS if all(name in results[dataset] for dataset in datasets)]
    panels = [(statistic, "seconds", f"{statistic}: wall time (s)", 1) for statistic in statistics]
    if "welch" in statistics:
        panels.append(("welch", "bytes_to_client", "welch: bytes to the client (MB)", 1e6))
    sweep = results.get("layouts", [])
    figure, axes = plt.subplots(1, len(panels) + bool(sweep), figsize=(4.2 * (len(panels) + bool(sweep)), 3.8))
    axes = np.atleast_1d(axes)
    positions = np.arange(len(datasets))
    for axis, (statistic, key, label, scale) in zip(axes, panels):
        for offset, side in ((-0.2, "skyhook"), (0.2, "scanpy")):
            values = [results[name][statistic][side][key] / scale for name in datasets]
            axis.bar(positions + offset, values, width=0.4, label=side)
        axis.set_xticks(positions, datasets, fontsize=8)
        axis.set_yscale("log")
        axis.set_title(label, fontsize=10)
        axis.legend(fontsize=8)
    if sweep:
        density = [row["density"] for row in sweep]
        axes[-1].plot(density, [row["sparse"] for row in sweep], "o-", label="sparse long")
        axes[-1].plot(density, [row["dense"] for row in sweep], "o-", label="dense (gene blocks)")
        axes[-1].set_xlabel("share of non-zero values")
        axes[-1].set_title("t-test time by layout, 100k x 100 (s)", fontsize=10)
        axes[-1].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        side, *rest = sys.argv[2:]
        if side == "skyhook":
            uri, matrix, domain, groupby, statistic, repeat, out = rest
            print(json.dumps(child_skyhook(uri, matrix, domain, groupby, statistic, int(repeat), out)))
        else:
            h5ad, groupby, statistic, repeat, out = rest
            print(json.dumps(child_scanpy(h5ad, groupby, statistic, int(repeat), out)))
        return
    parser = arguments(__doc__, "expression", repeat=3)
    parser.add_argument("--cells", type=int, default=200_000)
    parser.add_argument("--genes", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-layouts", action="store_true")
    parser.add_argument("--statistics", default=",".join(STATISTICS), help="Which: " + ", ".join(STATISTICS))
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
    statistics = [name for name in options.statistics.split(",") if name]
    unknown = sorted(set(statistics) - set(STATISTICS))
    if unknown:
        raise SystemExit(f"unknown statistics {unknown}; expected some of {', '.join(STATISTICS)}")
    pbmc = work / "pbmc68k_reduced.h5ad"
    sc.datasets.pbmc68k_reduced().write_h5ad(pbmc)
    ex.write_matrix(store, "pbmc", pbmc, domain="bench", mode="overwrite")
    for name, matrix, path, groupby in (
        ("generated", "generated", h5ad, "group"),
        ("pbmc68k_reduced", "pbmc", pbmc, "bulk_labels"),
    ):
        results[name] = {
            statistic: compare(name, uri, matrix, "bench", path, groupby, statistic, options.repeat, work)
            for statistic in statistics
        }
    if not options.skip_layouts:
        results["layouts"] = layout_sweep(store, options.repeat)
    write_report(results, options.output, plot)


if __name__ == "__main__":
    main()
