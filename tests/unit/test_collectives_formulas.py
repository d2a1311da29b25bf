"""algbw and busbw against nccl-tests' own formulas (src/<op>.cu GetBw, GetCollByteCount; doc/PERFORMANCE.md),
the options (sizes as nccl-tests writes them, every bad value refused with its fix), and the result built from
rank times (max or average over ranks, median over trials, figures). Pure Python: no ranks start here."""

from __future__ import annotations

import math

import pytest

from engines.collectives.errors import CollectivesError
from engines.collectives.formulas import (
    FACTOR_TEXT,
    OPS,
    algbw_gbs,
    bandwidths,
    busbw_factor,
    busbw_gbs,
    shape,
)
from engines.collectives.options import format_size, normalize, parse_size, parse_sizes
from engines.collectives.result import build_result, figures_for, label_for


# ---- nccl-tests' GetBw, written out as its C does it, per op
def nccl_tests_get_bw(op, count, typesize, sec, nranks):
    """A transcription of nccl-tests' <Op>GetBw (count = the count passed to the NCCL call)."""
    if op == "all-reduce":
        base = count * typesize / 1.0e9 / sec
        return base, base * (2 * (nranks - 1)) / nranks
    if op in ("all-gather", "reduce-scatter"):
        base = count * typesize * nranks / 1.0e9 / sec
        return base, base * (nranks - 1) / nranks
    if op == "all-to-all":
        base = count * nranks * typesize / 1.0e9 / sec
        return base, base * (nranks - 1) / nranks
    base = count * typesize / 1.0e9 / sec  # broadcast, reduce
    return base, base


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("ranks", [2, 3, 4, 8, 16])
def test_every_op_matches_nccl_tests_get_bw(op, ranks):
    for size in (1024, 1 << 20, 3 * (1 << 20) + 64, 1 << 30):
        split = shape(op, size, ranks, 4)
        sec = 1.7e-4 * (1 + size / 1e6)
        ours = bandwidths(op, split["param_count"], 4, sec, ranks)
        theirs = nccl_tests_get_bw(op, split["param_count"], 4, sec, ranks)
        assert ours == pytest.approx(theirs, rel=1e-12)
        assert algbw_gbs(op, split["param_count"], 4, sec, ranks) == pytest.approx(split["size_bytes"] / sec / 1e9)


def test_bus_bandwidth_factors_are_nccl_tests():
    assert busbw_factor("all-reduce", 2) == 1.0
    assert busbw_factor("all-reduce", 8) == pytest.approx(1.75)
    assert busbw_factor("all-gather", 8) == busbw_factor("reduce-scatter", 8) == busbw_factor("all-to-all", 8) \
        == pytest.approx(0.875)
    assert busbw_factor("broadcast", 8) == busbw_factor("reduce", 8) == 1.0
    assert FACTOR_TEXT == {"all-reduce": "2(n-1)/n", "all-gather": "(n-1)/n", "reduce-scatter": "(n-1)/n",
                           "all-to-all": "(n-1)/n", "broadcast": "1", "reduce": "1"}
    # doc/PERFORMANCE.md's worked reading: 8 ranks, an all-reduce of 1 GB in 10 ms → algbw 100, busbw 175 GB/s
    assert bandwidths("all-reduce", 250_000_000, 4, 0.010, 8) == pytest.approx((100.0, 175.0))


def test_split_ops_move_the_total_buffer_in_16_byte_pieces_per_rank():
    # all-gather of 64 MiB on 8 ranks: 8 MiB sent per rank, the 64 MiB total received (S = sendcount·size·n)
    ag = shape("all-gather", 64 << 20, 8)
    assert ag["param_count"] == ag["send_count"] == (8 << 20) // 4 and ag["recv_count"] == (64 << 20) // 4
    assert ag["size_bytes"] == 64 << 20 and ag["count"] == (64 << 20) // 4
    rs = shape("reduce-scatter", 64 << 20, 8)
    assert rs["send_count"] == (64 << 20) // 4 and rs["recv_count"] == (8 << 20) // 4
    # 3 ranks: 1000 floats / 3 = 333, rounded down to a multiple of 4 floats (16 B) = 332 per rank
    odd = shape("all-to-all", 4000, 3)
    assert odd["param_count"] == 332 and odd["size_bytes"] == 332 * 3 * 4
    assert shape("all-gather", 16, 2)["param_count"] == 0  # too small to split: nccl-tests runs 0 B
    assert shape("all-reduce", 10, 2) == {"param_count": 2, "send_count": 2, "recv_count": 2, "count": 2,
                                          "size_bytes": 8}


def test_formulas_refuse_what_is_not_a_collective():
    with pytest.raises(ValueError, match="unknown collective"):
        busbw_factor("allreduce", 2)
    with pytest.raises(ValueError, match="ranks"):
        busbw_factor("all-reduce", 0)
    with pytest.raises(ValueError, match="no bandwidth"):
        busbw_gbs("all-reduce", 10, 4, 0.0, 2)


# ---- options
def test_sizes_are_written_as_nccl_tests_writes_them():
    assert parse_sizes("8B..64MiB") == [8 << i for i in range(24)]
    assert parse_sizes("1K..4K") == [1024, 2048, 4096]
    assert parse_sizes("1KB,1MiB, 2G") == [1000, 1 << 20, 2 << 30]
    assert parse_sizes("8B..100B") == [8, 16, 32, 64]
    assert parse_size("1.5KiB") == 1536 and parse_size(4096) == 4096
    assert [format_size(s) for s in (8, 1536, 1 << 20, 3 << 30)] == ["8B", "1536B", "1MiB", "3GiB"]


@pytest.mark.parametrize(("options", "named", "fix"), [
    ({"sizes": "64MiB..8B"}, "run downwards", "8B..64MiB"),
    ({"sizes": "8 bananas"}, "is not a size", "64MiB"),
    ({"sizes": "2B"}, "outside", "float32"),
    ({"sizes": "8B..1TiB"}, "is not a size", "GiB"),
    ({"sizes": "8B..32GiB"}, "outside", "16GiB"),
    ({"ranks": 1}, "--ranks 1", "2 or more"),
    ({"ranks": True}, "--ranks True", "2 or more"),
    ({"backend": "mpi"}, "unknown backend", "gloo"),
    ({"ops": "all-reduce,allgather"}, "allgather", "all-gather"),
    ({"iters": 0}, "--iters 0", "1 to 100000"),
    ({"rank_time": "min"}, "min", "max or avg"),
    ({"cluster": ""}, "not an address", "HOST:PORT"),
    ({"colour": "red"}, "colour", "use only"),
])
def test_bad_options_name_the_problem_and_the_fix(options, named, fix):
    with pytest.raises(CollectivesError) as caught:
        normalize(options)
    assert named in caught.value.message and fix in caught.value.fix


def test_defaults_suit_a_cpu_box_and_ops_keep_nccl_tests_order():
    opts = normalize({"ops": "reduce,all-reduce,reduce"})
    assert opts["ops"] == ["all-reduce", "reduce"] and opts["backend"] == "gloo" and opts["ranks"] == 2
    assert max(opts["sizes_bytes"]) == 64 << 20 and opts["placement"] == "local"
    assert normalize({"cluster": "10.0.0.5:6379"})["placement"] == "ray"
    assert normalize({"ops": "all"})["ops"] == list(OPS)
    again = normalize({k: v for k, v in opts.items()})  # normalized options normalize to themselves
    assert again == opts


# ---- result from rank times
def outputs(times_by_rank, op="all-reduce", size=1 << 20):
    return [{"rank": r, "host": f"h{r}", "device": "cpu", "torch": "x", "times": {op: {str(size): t}},
             "skipped": {op: {}}, "checked": {op: True}} for r, t in enumerate(times_by_rank)]


def test_a_trial_takes_the_slowest_rank_and_the_size_the_median_trial():
    opts = normalize({"ops": "all-reduce", "sizes": "1MiB", "trials": 3})
    ranks = [[1e-3, 2e-3, 3e-3], [1.5e-3, 1e-3, 4e-3]]  # max per trial: 1.5, 2, 4 ms → median 2 ms
    result = build_result(opts, outputs(ranks), "m")
    row = result["ops"]["all-reduce"][0]
    assert row["time_us"] == pytest.approx(2000.0) and row["trials"] == 3
    assert row["algbw_gbs"] == pytest.approx((1 << 20) / 2e-3 / 1e9)
    assert row["busbw_gbs"] == pytest.approx(row["algbw_gbs"] * 1.0)  # 2 ranks: 2(n-1)/n = 1
    assert row["time_us_spread"]["min"] == pytest.approx(1500) and row["time_us_spread"]["max"] == pytest.approx(4000)
    averaged = build_result({**opts, "rank_time": "avg"}, outputs(ranks), "m")["ops"]["all-reduce"][0]
    assert averaged["time_us"] == pytest.approx(1500.0)  # averages 1.25, 1.5, 3.5 ms → median 1.5 ms
    assert result["figures"]["all_reduce_peak_busbw_gbs"] == pytest.approx(row["busbw_gbs"])
    assert result["figures"]["all_reduce_small_latency_us"] == pytest.approx(2000.0)
    assert result["kind"] == "collectives" and result["passed"] is None and result["cache_state"] == "n/a"
    assert result["busbw_factor"] == {"all-reduce": "2(n-1)/n"} and result["checked"] == {"all-reduce": True}


def test_a_missing_rank_or_size_is_said_not_invented():
    opts = normalize({"ops": "all-gather", "sizes": "8B,1MiB"})
    outs = outputs([[1e-3], [1e-3]], op="all-gather")
    outs[0]["skipped"]["all-gather"]["8"] = "empty"
    result = build_result(opts, outs, "m")
    assert [r["size_bytes"] for r in result["ops"]["all-gather"]] == [1 << 20]
    assert result["skipped"] == {"all-gather": {"8B": "empty"}}
    with pytest.raises(RuntimeError, match="1 of 2 ranks"):
        build_result(opts, outs[:1], "m")
    assert figures_for({"reduce": []}) == {"reduce_peak_busbw_gbs": None, "reduce_small_latency_us": None}


def test_labels_name_ops_backend_and_ranks():
    assert label_for(normalize({"ops": "all-reduce,all-gather"})) == "all-reduce, all-gather · gloo · 2 ranks"
    assert label_for(normalize({"ranks": 4, "cluster": "h:1"})) == "6 ops · gloo · 4 ranks · ray"
    assert math.isclose(busbw_factor("all-to-all", 4), 0.75)
