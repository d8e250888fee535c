"""The link-aware cost model: rates observed per store connection (link from
plain reads, client and storage CPU, compression), estimated times of pushdown
and plain reads, and scans whose placement follows the estimates, with answers
equal to pyarrow's. Constructed rates make the decisions deterministic; the
last test checks that a connection observes its own rates. Both backends."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.errors import InvalidRequestError
from skyhook.execution import observed_rates
from skyhook.execution.link_cost import Work, estimate
from skyhook.execution.observed_rates import STORAGE_MEMORY, LinearFit, ObservedRates, rates_of
from skyhook.execution.placement import sample_admission
from support.assertions import assert_same_table
from support.oracle import expected

F = pc.field
ROWS, PER_OBJECT = 400_000, 100_000  # objects of ~2.4 MB decoded: their reads are link samples
SLOW, FAST = 1e5, 1e13  # bytes/s


def constructed(link: float | None, client: float = 1e-9) -> ObservedRates:
    """Rates as if observed: client decode 1 ns/byte, storage 1 ns/byte read +
    4 ns/byte replied, zstd replies a fifth of their decoded size."""
    rates = ObservedRates(link)
    rates.client_cpu_per_byte.observe(client)
    for read, reply in ((1e6, 0.0), (1e6, 1e6), (2e6, 5e5)):
        rates.storage.observe((read, reply), 1e-9 * read + 4e-9 * reply)
    rates.compression["zstd"] = observed_rates.Smoothed(0.2)
    return rates


def test_storage_costs_are_fitted_from_replies():
    fit = LinearFit(2, STORAGE_MEMORY)
    rng = np.random.default_rng(3)
    for _ in range(40):
        read, reply = rng.uniform(1e5, 1e7), rng.uniform(0, 1e7)
        fit.observe((read, reply), 2e-9 * read + 7e-9 * reply)
    per_read, per_reply = fit.coefficients()
    assert per_read == pytest.approx(2e-9, rel=1e-6) and per_reply == pytest.approx(7e-9, rel=1e-6)
    alike = LinearFit(2, STORAGE_MEMORY)  # every reply the same shape: one term explains them
    for _ in range(5):
        alike.observe((1e6, 0.0), 3e-3)
    assert alike.coefficients() == pytest.approx((3e-9, 0.0))
    assert LinearFit(2, STORAGE_MEMORY).coefficients() is None


def test_a_term_that_would_be_negative_is_left_out():
    fit = LinearFit(3, 0.8)
    for objects, fixed, variable in ((10, 1e7, 0.0), (20, 2e7, 1e6), (5, 1e6, 4e7), (40, 3e7, 2e7)):
        fit.observe((objects, fixed, variable), 0.02 * objects + 3e-9 * variable - 1e-10 * fixed)
    coefficients = fit.coefficients()
    assert all(value >= 0 for value in coefficients)
    assert coefficients[1] == 0.0 and coefficients[2] > 0


def test_plain_reads_are_estimated_by_their_batches_once_a_few_were_seen():
    """Batches of plain reads: 20 ms an object plus 1 ns per fixed-width and 4 ns
    per variable-width byte (what the client's CPU share, threads and link made
    of them). Until three were seen the client's CPU rate decides."""
    rates = constructed(1e10)
    work = Work(object_bytes=1e6, decoded_bytes=30e6, reply_decoded=1e5, objects=10, variable_bytes=10e6)
    assert estimate(rates, work, "zstd").plain_s == pytest.approx(1e-9 * 30e6 / (os.cpu_count() or 1))
    for objects, fixed, variable in ((61, 2e8, 0.0), (61, 2e8, 6e8), (4, 1e7, 0.0), (61, 5e7, 1e6)):
        rates.plain_phase(objects, 0, 0.0, 0.02 * objects + 1e-9 * fixed + 4e-9 * variable, (fixed, variable))
    assert estimate(rates, work, "zstd").plain_s == pytest.approx(0.2 + 0.02 + 0.04)
    assert estimate(rates, replace(work, objects=0), "zstd").plain_s < 0.1  # shape unknown: the CPU rate


def test_overlapping_transfers_count_the_link_once(monkeypatch):
    clock = iter([0.0, 2.0, 2.5, 3.0])  # two reads in flight together from 0 s to 2 s, then one
    monkeypatch.setattr(observed_rates.time, "perf_counter", lambda: next(clock))
    rates = ObservedRates()
    rates.transfer_started()
    rates.transfer_started()
    rates.transfer_ended(3 << 20)
    assert rates.link_bytes_per_second is None  # a read still in flight
    rates.transfer_ended(1 << 20)
    assert rates.link_bytes_per_second == pytest.approx((4 << 20) / 2.0)
    rates.transfer_started()  # small transfers say more about latency: not a sample
    rates.transfer_ended(1000)
    assert rates.link_bytes_per_second == pytest.approx((4 << 20) / 2.0)
    assert ObservedRates(link_bytes_per_second=5.0).link_bytes_per_second == 5.0


def test_estimates_follow_the_rates():
    work = Work(object_bytes=10e6, decoded_bytes=30e6, reply_decoded=30e6)  # every row, every column
    slow, fast = estimate(constructed(1e6), work, "zstd"), estimate(constructed(1e10), work, "zstd")
    # Slow link: the plain read moves 10 MB, pushdown a fifth of 30 MB.
    assert slow.plain_s == pytest.approx(10.0) and slow.pushdown_s == pytest.approx(6.0)
    assert slow.pushdown and not fast.pushdown  # fast: storage's 150 ms of CPU against the client's decode
    assert estimate(constructed(1e6), work, "lz4") is None  # lz4's compression never observed
    assert estimate(constructed(None), work, "zstd") is None  # the link's rate never observed
    assert estimate(constructed(1e6), work, "none").pushdown_s == pytest.approx(30.0)
    # Replies larger than their objects are pushed back after storage's work: both paths' time.
    pushed_back = estimate(constructed(1e6), work, "none", within_object=True)
    assert pushed_back.pushdown_s == pytest.approx(30.0 + 10.0) and not pushed_back.pushdown
    # A measured sample's CPU and reply bytes come before the fitted ones.
    sampled = Work(10e6, 30e6, 30e6, reply_sent=1e5, storage_cpu_s=1e-5)
    assert estimate(constructed(1e10), sampled, "zstd").pushdown


@pytest.fixture(scope="module")
def table() -> pa.Table:
    rng = np.random.default_rng(11)
    return pa.table(
        {
            "id": np.arange(ROWS, dtype=np.int64),
            "value": rng.normal(0, 1, ROWS),
            "group": rng.integers(0, 1000, ROWS).astype(np.int32),
        }
    )


@pytest.fixture(scope="module")
def written(module_store: skyhook.Store, table: pa.Table) -> skyhook.Store:
    module_store.write_dataset("link", table, rows_per_object=PER_OBJECT)
    return module_store


def connected(store: skyhook.Store, link: float) -> skyhook.Dataset:
    """The dataset through a new connection with constructed rates (a client
    that decodes nearly for free: storage's measured work costs more)."""
    connection = skyhook.connect(store.uri, link_bytes_per_second=link)
    seeded = constructed(link, client=1e-12)
    rates = rates_of(connection.backend)
    rates.client_cpu_per_byte, rates.storage, rates.compression = (
        seeded.client_cpu_per_byte,
        seeded.storage,
        seeded.compression,
    )
    return connection.dataset("link")


@pytest.mark.parametrize("link", [SLOW, FAST])
def test_statistics_and_rates_decide_without_a_sample(written, table, link):
    dataset = connected(written, link)
    scanner = dataset.scanner(reply_compression="zstd")  # every row passes
    assert_same_table(scanner.to_table(), table)
    assert scanner.stats.cost_model.startswith("statistics: every row passes: estimated pushdown")
    pushdown = link == SLOW
    assert ("pushdown for 4 objects" in scanner.stats.cost_model) is pushdown
    assert scanner.stats.objects_read_plain == (0 if pushdown else 4)  # no sampled object either way
    assert "estimated pushdown" in str(dataset.explain(reply_compression="zstd"))


@pytest.mark.parametrize("link", [SLOW, FAST])
def test_a_sample_and_the_rates_decide(written, table, link):
    dataset = connected(written, link)
    filter = F("value") > 2.0  # no statistics tell its selectivity: the first object is the sample
    scanner = dataset.scanner(columns=["id", "group"], filter=filter)
    assert_same_table(scanner.to_table(), expected(table, ["id", "group"], filter))
    assert scanner.stats.cost_model.startswith("sampled object 0: estimated pushdown")
    # Slow link: 2 % of the rows cross instead of whole objects; fast: storage's work is not free
    # (plain reads for the objects whose calls had not started beside the sample's).
    assert ("plain reads for 3 objects" in scanner.stats.cost_model) is (link == FAST)
    started = 4 - scanner.stats.objects_read_plain
    assert started == 4 if link == SLOW else sample_admission(dataset.store.backend).admits(started - 1)


def test_a_given_threshold_decides_by_bytes(written, table):
    dataset = connected(written, SLOW)
    scanner = dataset.scanner(columns=["id"], filter=F("value") > 2.0, pushdown_threshold=0.0)
    assert_same_table(scanner.to_table(), expected(table, ["id"], F("value") > 2.0))
    assert "reply/object bytes" in scanner.stats.cost_model and "plain reads for 3 objects" in scanner.stats.cost_model
    assert sample_admission(dataset.store.backend).admits(4 - scanner.stats.objects_read_plain - 1)


def test_a_connection_observes_its_rates(written, table):
    connection = skyhook.connect(written.uri)
    dataset = connection.dataset("link")
    assert_same_table(dataset.to_table(pushdown=False), table)
    scanner = dataset.scanner(filter=F("value") > 0, pushdown=True)
    assert_same_table(scanner.to_table(), table.filter(F("value") > 0))
    rates = rates_of(connection.backend)
    assert rates.link_bytes_per_second > 0 and rates.client_cpu_per_byte.value > 0
    assert rates.storage.coefficients() is not None
    # The codec the rates chose once the plain reads observed the client's CPU share, or the default.
    codec = scanner.execution.policy.compression
    assert rates.compression_factor(codec) < 1 if codec != "none" else rates.compression_factor(codec) == 1
    assert rates.storage_parallelism.value > 0


@pytest.mark.parametrize("rate", [0, -1.0, float("nan"), "fast", True])
def test_a_bad_link_rate_is_one_line(tmp_path, rate):
    with pytest.raises(InvalidRequestError, match="link_bytes_per_second must be a number > 0") as raised:
        skyhook.connect(str(tmp_path / "s"), link_bytes_per_second=rate)
    assert "\n" not in str(raised.value)
