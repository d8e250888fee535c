"""The reply codec chosen by the observed rates when the user leaves it open:
zstd on a slow link, lz4 for a client with a small CPU share on a fast link,
none where the link outruns both ends; as requested, or the backend's default
until the rates are known. Answers equal pyarrow's whatever the codec."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.execution.observed_rates import ObservedRates, Smoothed, rates_of
from skyhook.execution.reply_codec import compression_factor, reply_codec
from support.assertions import assert_same_table

ACROSS_A_LINK = SimpleNamespace(reply_compression="zstd", runs_in_process=False)
IN_PROCESS = SimpleNamespace(reply_compression="none", runs_in_process=True)


def observed(link: float | None, client: float | None, storage: float | None = 1.5) -> ObservedRates:
    rates = ObservedRates(link)
    for value, smoothed in ((client, rates.client_parallelism), (storage, rates.storage_parallelism)):
        if value is not None:
            smoothed.observe(value)
    return rates


@pytest.mark.parametrize(
    ("link", "client", "storage", "codec"),
    [
        (12.5e6, 2.0, 1.5, "zstd"),  # 100 Mbit/s: bytes cost the most
        (125e6, 2.0, 1.5, "zstd"),  # 1 Gbit/s, a client with two cores to spare
        (125e6, 0.25, 1.6, "lz4"),  # 1 Gbit/s, a quarter of a core: zstd's decoding is the limit
        (125e6, 0.25, 0.1, "none"),  # storage with a tenth of a core: any encoding is the limit
        (2e9, 2.0, 1.5, "none"),  # loopback: the link outruns both ends' codecs
    ],
)
def test_the_fastest_codec_for_the_rates(link, client, storage, codec):
    assert reply_codec(None, ACROSS_A_LINK, observed(link, client, storage)) == codec


def test_requested_defaults_and_unknown_rates_keep_the_codec():
    fast = observed(2e9, 2.0)
    assert reply_codec("zstd", ACROSS_A_LINK, fast) == "zstd"  # the user's choice
    assert reply_codec(None, IN_PROCESS, fast) == "none"  # no link: the backend's
    assert reply_codec(None, ACROSS_A_LINK, observed(None, 2.0)) == "zstd"  # link not yet observed
    assert reply_codec(None, ACROSS_A_LINK, observed(2e9, None)) == "zstd"  # nor the client's share


def test_observed_rates_come_before_the_priors():
    rates = observed(125e6, 0.25, 1.6)
    rates.compression["zstd"] = Smoothed(0.023)  # data ten times as compressible as lineitem's
    assert compression_factor(rates, "zstd") == 0.023
    assert compression_factor(rates, "lz4") == pytest.approx(0.04)  # the prior, scaled alike
    assert compression_factor(rates, "none") == 1.0
    rates.reply_cpu["lz4"] = Smoothed(20e-9)  # a slow lz4 decoder here
    assert reply_codec(None, ACROSS_A_LINK, rates) == "zstd"


@pytest.mark.parametrize("link", [1e5, 1e13])
def test_scans_follow_the_chosen_codec(store, link):
    table = pa.table({"x": np.arange(200_000, dtype=np.int64), "y": np.arange(200_000, dtype=np.int64) % 7})
    store.write_dataset("codec", table, rows_per_object=50_000)
    with skyhook.connect(store.uri, link_bytes_per_second=link) as connection:
        rates_of(connection.backend).client_parallelism.observe(2.0)
        scanner = connection.dataset("codec").scanner(columns=["x", "y"], filter=pc.field("y") == 3, pushdown=True)
        assert_same_table(scanner.to_table(), table.filter(pc.field("y") == 3))
        compressed = scanner.stats.bytes_returned < scanner.stats.bytes_decoded
        # In process no codec; across a slow link zstd; across a fast one none.
        assert compressed is (link == 1e5 and not connection.backend.runs_in_process)
