"""The expression layer on a Dask cluster (engine="dask"): a local
dask.distributed cluster of worker processes computes a matrix's moments, a
task per group of the values' objects, merged in a tree of tasks; group
statistics and t-tests equal those merged at the client and a float64 NumPy
oracle, on both layouts and backends, with every aggregate run in storage."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow.compute as pc
import pytest

import skyhook.expression as ex
from skyhook.errors import InvalidRequestError
from skyhook.expression.distributed_moments import moments_graph
from skyhook.expression.synthetic import generate_anndata

distributed = pytest.importorskip("dask.distributed")

LAYOUTS = ["sparse", "dense"]
#: Rows of each rewritten values object: a dozen objects or more per matrix.
ROWS_PER_OBJECT = {"sparse": 80, "dense": 30}


@functools.lru_cache(maxsize=1)
def generated():
    return generate_anndata(360, 24, groups=4, seed=11, dtype=np.float64, unlabelled=0.1)


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def many_objects(store, layout: str) -> ex.Matrix:
    """The generated matrix, its values rewritten as many small objects."""
    ex.write_matrix(store, f"nb_{layout}", generated(), layout=layout)
    values = ex.open_matrix(store, f"nb_{layout}").values
    store.write_dataset(values.name, values.to_table(), mode="overwrite", rows_per_object=ROWS_PER_OBJECT[layout])
    matrix = ex.open_matrix(store, f"nb_{layout}")
    assert len(matrix.values.manifest.partitions) >= 10
    return matrix


def in_storage(matrix: ex.Matrix) -> None:
    assert matrix.last_stats and all(stats.aggregate_in_storage for stats in matrix.last_stats)
    assert all(stats.objects_at_client == 0 for stats in matrix.last_stats)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_group_statistics_equal_the_client_merge_and_numpy(client, store, layout):
    matrix = many_objects(store, layout)
    on_dask = matrix.group_stats("group", engine="dask", partition_bytes=1, pushdown=True)
    in_storage(matrix)
    # A task per object: the aggregates' statistics came back from every one of them.
    assert len(matrix.last_stats) >= len(matrix.values.manifest.partitions)
    at_client = matrix.group_stats("group", pushdown=True)
    assert on_dask.column("group").equals(at_client.column("group"))
    assert on_dask.column("n").equals(at_client.column("n"))
    for column in ("mean", "variance"):
        np.testing.assert_allclose(on_dask.column(column).to_numpy(), at_client.column(column).to_numpy(), rtol=1e-12)
    adata = generated()
    x = adata.X.toarray()
    labels = adata.obs["group"].astype(object).where(adata.obs["group"].notna(), None).to_numpy()
    assert None in on_dask.column("group").to_pylist()  # unlabelled cells are a group of their own
    for row in on_dask.to_pylist():
        chosen = x[labels == row["group"], int(row["gene"][4:])]
        assert row["n"] == len(chosen)
        assert row["mean"] == pytest.approx(chosen.mean(), rel=1e-9, abs=1e-12)
        assert row["variance"] == pytest.approx(chosen.var(ddof=1), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_t_tests_on_dask_equal_those_merged_at_the_client(client, store, layout):
    matrix = many_objects(store, layout)
    chosen = dict(genes=[f"gene{j}" for j in range(2, 20, 3)], cells=pc.field("percent_mito") < 0.08)
    for method in ("welch", "student", "overestim_var"):
        on_dask = matrix.ttest("group", method=method, **chosen, engine="dask", partition_bytes=1, pts=True)
        at_client = matrix.ttest("group", method=method, **chosen, pts=True)
        assert on_dask.column("gene").equals(at_client.column("gene"))
        for column in ("t", "df", "p", "pts_group", "pts_reference"):
            np.testing.assert_allclose(on_dask.column(column).to_numpy(), at_client.column(column).to_numpy(), 1e-10)
    against = matrix.ttest("group", reference="group1", engine="dask", partition_bytes=1)
    expected = matrix.ttest("group", reference="group1")
    assert against.column("gene").equals(expected.column("gene"))
    np.testing.assert_allclose(against.column("t").to_numpy(), expected.column("t").to_numpy(), 1e-10)
    variable = matrix.highly_variable_genes(engine="dask", partition_bytes=1)
    np.testing.assert_allclose(
        variable.column("dispersions").to_numpy(), matrix.highly_variable_genes().column("dispersions").to_numpy()
    )


def test_partials_merge_in_a_tree_of_tasks_on_the_workers(client, store):
    matrix = many_objects(store, "sparse")
    objects = len(matrix.values.manifest.partitions)
    moments = matrix.moments("group", engine="dask", partition_bytes=1)
    groups = ex.open_matrix(store, "nb_sparse").moments("group")
    np.testing.assert_allclose(moments.m2, groups.m2, rtol=1e-12, atol=1e-12)
    graph = moments_graph(
        matrix.values, lambda values, record: None, None, partition_bytes=1, split_every=2
    ).__dask_graph__()
    names = [str(key).split("-")[0] for key in graph]
    assert names.count("partial_moments") == objects
    levels, width = [], objects
    while width > 1:  # pairs, pairs of pairs, ... up to one root
        width = -(-width // 2)
        levels.append(width)
    assert names.count("merged_moments") == sum(levels)
    with distributed.get_task_stream(client) as stream:
        matrix.moments("group", engine="dask", partition_bytes=1)
    workers = {task["worker"] for task in stream.data if str(task["key"]).startswith("partial_moments")}
    assert workers and workers <= set(client.scheduler_info()["workers"])


def test_a_selection_prunes_tasks_and_mistakes_are_clear(client, store):
    matrix = many_objects(store, "sparse")
    objects = len(matrix.values.manifest.partitions)
    graph = moments_graph(
        matrix.values, lambda values, record: None, pc.field("gene") == 3, partition_bytes=1
    ).__dask_graph__()
    assert sum(str(key).startswith("partial_moments") for key in graph) < objects / 3
    with pytest.raises(InvalidRequestError, match="wilcoxon"):
        matrix.ttest("group", method="wilcoxon", engine="dask")
    with pytest.raises(InvalidRequestError, match="engine"):
        matrix.group_stats("group", engine="spark")
    with pytest.raises(InvalidRequestError, match="partition_bytes"):
        matrix.group_stats("group", engine="dask", partition_bytes=0)
