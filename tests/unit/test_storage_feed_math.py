"""The feed benchmark's arithmetic without a clock: AU (first step excluded), the percentile rule, what limited a
trial, the find-max search, the cache verdict, and the published workloads' numbers."""

from __future__ import annotations

import pytest

from engines.storage import au, workloads
from engines.storage.errors import StorageError
from engines.storage.feed import cache_verdict


def test_au_excludes_the_first_step():
    # the first step waited 5 s for the empty pipeline; the rest waited 0.1 s per 0.9 s of compute
    steps = [(5.0, 0.9)] + [(0.1, 0.9)] * 4
    assert au.accelerator_utilization(steps) == pytest.approx(0.9)
    # counting the first step would have charged the start-up to the storage
    assert sum(c for _, c in steps) / sum(w + c for w, c in steps) < 0.7


def test_au_needs_a_measured_step_and_the_overall_is_the_mean():
    assert au.accelerator_utilization([(0.2, 1.0)]) is None
    assert au.overall_au([0.8, 1.0]) == pytest.approx(0.9)
    assert au.overall_au([0.8, None]) is None


def test_percentiles_are_shown_only_with_enough_reads():
    few = au.percentiles_ms([1_000_000] * 100)
    assert few["p50"] == pytest.approx(1.0) and few["p90"] == pytest.approx(1.0)
    assert few["p99"] is None and "662" in few["note"]
    many = au.percentiles_ms(list(range(1, 1001)))  # 1..1000 ns
    assert many["p99"] == pytest.approx(990 / 1e6) and many["note"] == ""


def test_limited_by_tells_readers_from_device():
    assert au.limited_by(0.95, 0.9, [0.99]) == "none"
    assert au.limited_by(0.5, 0.9, [0.95, 0.9]) == "readers"
    assert au.limited_by(0.5, 0.9, [0.05, 0.1]) == "device"


@pytest.mark.parametrize("capacity", [1, 5, 6, 7, 13, 64, 100])
def test_find_max_finds_the_largest_passing_n(capacity):
    tried = []

    def trial(n):  # a device that feeds `capacity` accelerators at 100%, fewer above
        tried.append(n)
        return min(1.0, capacity / n)

    best, series = au.find_max(trial, 0.9, limit=1024)
    assert best == int(capacity / 0.9)
    assert [n for n, _ in series] == tried and len(tried) <= 2 * (best.bit_length() + 1)


def test_find_max_zero_when_one_fails_and_limit_when_none_does():
    assert au.find_max(lambda n: 0.3, 0.9) == (0, [(1, 0.3)])
    best, series = au.find_max(lambda n: 1.0, 0.9, limit=8)
    assert best == 8 and [n for n, _ in series] == [1, 2, 4, 8]


def _readers(cold=0, cached=0, unverified=0):
    return [{"proven_cold": cold, "still_cached": cached, "unverified": unverified}]


def test_cache_verdict():
    small = {"bytes": 10**9, "mem_total_bytes": 16 * 10**9, "can_drop": True, "drop_reason": ""}
    assert cache_verdict(True, small, _readers(cold=50))[0] == "cold"
    assert cache_verdict(True, small, _readers(cold=30, cached=20))[0] == "mixed"
    state, why = cache_verdict(True, small, _readers(unverified=50))
    assert state == "warm" and "RWF_NOWAIT" in why
    assert cache_verdict(False, small, _readers())[0] == "warm"
    tmpfs = {**small, "can_drop": False, "drop_reason": "/x is on tmpfs"}
    state, why = cache_verdict(True, tmpfs, _readers())
    assert state == "warm" and "tmpfs" in why
    huge = {**small, "bytes": 40 * 10**9}
    assert cache_verdict(True, {**huge, "can_drop": False, "drop_reason": "no"}, _readers())[0] == "cold"
    assert cache_verdict(True, huge, _readers(unverified=50))[0] == "cold"


def test_published_workloads_are_dlio_s():
    unet = workloads.published("unet3d", "h100")
    assert (unet.sample_bytes, unet.samples_per_file, unet.batch, unet.compute_s, unet.au_threshold) == (
        146_600_628, 1, 7, 0.323, 0.90)
    assert workloads.published("unet3d", "a100").compute_s == 0.636
    resnet = workloads.published("resnet50", "a100")
    assert (resnet.sample_bytes, resnet.samples_per_file, resnet.batch, resnet.compute_s) == (114_660, 1251, 400, 0.435)
    cosmo = workloads.published("cosmoflow", "h100")
    assert (cosmo.sample_bytes, cosmo.batch, cosmo.compute_s, cosmo.au_threshold) == (2_828_486, 1, 0.0035, 0.70)
    assert "unet3d_h100.yaml" in unet.source and "dlio_benchmark" in unet.source
    assert len(workloads.table()) == 6


def test_the_arithmetic():
    wl = workloads.custom(1_000_000, 1, 0.1)
    assert wl.max_accelerators(50e6) == pytest.approx(50e6 * 0.1 / (1e6 * 0.9))


def test_bad_workload_requests_name_the_fix():
    with pytest.raises(StorageError, match="unknown workload"):
        workloads.published("bert")
    with pytest.raises(StorageError, match="--gpu"):
        workloads.published("unet3d", "v100")
    with pytest.raises(StorageError, match="--compute-ms"):
        workloads.from_options({"workload": "custom", "sample_bytes": 10, "batch": 1})
    with pytest.raises(StorageError, match="custom"):
        workloads.from_options({"workload": "unet3d", "batch": 3})
    assert workloads.from_options({"workload": "custom", "sample_bytes": 10, "batch": 2, "compute_ms": 5,
                                   "au_threshold_percent": 70}).au_threshold == pytest.approx(0.7)


def test_page_cache_checks_agree_and_prove_a_drop(tmp_path):
    import os

    from engines.datafiles import can_drop_cache
    from engines.storage import pagecache

    if not can_drop_cache(tmp_path)[0]:
        pytest.skip(f"cannot drop pages under {tmp_path}: {can_drop_cache(tmp_path)[1]}")
    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(1 << 20))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        while os.read(fd, 1 << 20):
            pass
        stat = pagecache._by_cachestat(fd)
        resident = pagecache._by_mincore(fd, 1 << 20)
        if stat is None and resident is None:
            pytest.skip("neither cachestat nor mincore is available here")
        assert {v for v in (stat, resident) if v is not None} == {256 * 4096 // pagecache.PAGE}
        assert pagecache.drop_and_check(fd, 1 << 20)[0] == "cold"
        assert pagecache._by_mincore(fd, 1 << 20) in (0, None)
    finally:
        os.close(fd)
