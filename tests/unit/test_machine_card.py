"""The machine card: its shape, the spread of repeats, cache sizes from sysfs, and storage errors. No timing
asserts: figures are only checked to exist, be positive and carry their spread and method."""

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines.machine import MachineError, measure_card
from engines.machine import caches as caches_module
from engines.machine import storage as storage_module
from engines.machine.caches import cache_sizes, parse_size
from engines.machine.card import GAINS
from engines.machine.devices import canonical_target
from engines.machine.repeat import repeated, spread
from engines.machine.storage import StorageRead, check_directory

KIB, MIB = 1024, 1024 ** 2


# ---- spread and repeats
def test_spread_is_min_max_sample_cv_and_count():
    s = spread([1.0, 2.0, 3.0])
    assert s == {"min": 1.0, "max": 3.0, "cv": pytest.approx(0.5), "n": 3}  # stdev 1 / mean 2
    assert spread([4.0]) == {"min": 4.0, "max": 4.0, "cv": None, "n": 1}
    with pytest.raises(ValueError, match="at least one"):
        spread([])


def test_repeated_takes_the_median_and_reports_each_repeat():
    values = iter([5.0, 1.0, 100.0, 3.0, 4.0])
    seen = []
    median, s, all_values = repeated(lambda: next(values), 5, seen.append)
    assert median == 4.0 and all_values == [5.0, 1.0, 100.0, 3.0, 4.0]
    assert s["min"] == 1.0 and s["max"] == 100.0 and s["n"] == 5 and seen == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="at least 1"):
        repeated(lambda: 1.0, 0)


# ---- cache sizes
def _cache(root: Path, cpu: int, index: int, level: int, kind: str, size: str, shared: str) -> None:
    folder = root / f"cpu{cpu}" / "cache" / f"index{index}"
    folder.mkdir(parents=True)
    for name, text in (("level", str(level)), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
        (folder / name).write_text(text + "\n")


def _fake_sysfs(root: Path, cpus: int, cpus_per_l3: int) -> Path:
    """Private L1d/L1i/L2 per CPU and one 32 MiB L3 per group of `cpus_per_l3` CPUs (as on an EPYC's CCXs)."""
    for cpu in range(cpus):
        _cache(root, cpu, 0, 1, "Data", "32K", str(cpu))
        _cache(root, cpu, 1, 1, "Instruction", "64K", str(cpu))
        _cache(root, cpu, 2, 2, "Unified", "1024K", str(cpu))
        first = cpu // cpus_per_l3 * cpus_per_l3
        _cache(root, cpu, 3, 3, "Unified", "32768K", f"{first}-{first + cpus_per_l3 - 1}")
    return root


def test_cache_sizes_come_from_sysfs_and_the_llc_counts_every_instance(tmp_path):
    found = cache_sizes(_fake_sysfs(tmp_path, 4, cpus_per_l3=2))
    assert found["caches"] == {"l1d": 32 * KIB, "l2": MIB, "l3": 32 * MIB}  # the instruction cache is left out
    assert found["llc_instances"] == 2 and found["llc_bytes"] == 64 * MIB
    assert found["reason"] == "" and "sysfs" in found["method"]


def test_one_shared_llc_is_counted_once(tmp_path):
    found = cache_sizes(_fake_sysfs(tmp_path, 2, cpus_per_l3=2))
    assert found["llc_instances"] == 1 and found["llc_bytes"] == 32 * MIB


def test_without_any_source_the_sizes_are_none_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(caches_module, "_from_sysconf", lambda: None)
    monkeypatch.setattr(caches_module, "_from_lscpu", lambda: None)
    found = cache_sizes(tmp_path / "no-such-sysfs")
    assert found["caches"] == {} and found["llc_bytes"] is None
    assert found["reason"].startswith("cache sizes unknown") and "sysconf" in found["reason"]


def test_a_broken_sysfs_falls_back_to_the_next_source(tmp_path, monkeypatch):
    _cache(tmp_path, 0, 0, 1, "Data", "lots", "0")
    monkeypatch.setattr(caches_module, "_from_sysconf", lambda: {"caches": {"l2": MIB}, "llc_bytes": MIB,
                                                                 "llc_instances": None, "method": "sysconf"})
    found = cache_sizes(tmp_path)
    assert found["caches"] == {"l2": MIB} and found["method"] == "sysconf"


@pytest.mark.parametrize("text, size", [("32K", 32 * KIB), ("8192K", 8 * MIB), ("1M", MIB), ("512 KiB", 512 * KIB),
                                        ("65536", 65536), ("2G", 2 * 1024 * MIB)])
def test_parse_size(text, size):
    assert parse_size(text) == size


def test_parse_size_refuses_what_is_not_a_size():
    with pytest.raises(ValueError, match="not a cache size"):
        parse_size("big")


# ---- targets
def test_targets_are_canonical_and_unknown_kinds_are_refused_with_the_list():
    assert canonical_target(None) == "cpu" and canonical_target("CPU") == "cpu"
    assert canonical_target("cuda") == "cuda:0" and canonical_target("cuda:1") == "cuda:1"
    with pytest.raises(MachineError, match="supported targets are cpu, cuda, cuda:N"):
        canonical_target("mps")


# ---- storage
def test_a_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(MachineError, match="does not exist: create it, or choose another with --storage DIR"):
        check_directory(tmp_path / "nowhere")


def test_a_file_is_not_a_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(MachineError, match="is not a directory"):
        check_directory(tmp_path / "file")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_directory_is_a_clear_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(MachineError, match="cannot write a test file"):
        check_directory(locked)


def test_a_refused_test_file_is_a_clear_error(tmp_path, monkeypatch):
    def refuse(**_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(storage_module.tempfile, "mkstemp", refuse)
    with pytest.raises(MachineError, match=r"cannot write a test file .*Permission denied.*--storage DIR"):
        with StorageRead(tmp_path, 4 * MIB):
            pass


def test_a_nearly_full_disk_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(storage_module.shutil, "disk_usage", lambda _path: SimpleNamespace(free=3 * MIB))
    with pytest.raises(MachineError, match="not enough free space"):
        StorageRead(tmp_path, 256 * MIB)


def test_storage_read_measures_the_file_and_deletes_it(tmp_path):
    with StorageRead(tmp_path, 4 * MIB) as reader:
        assert reader.path is not None and reader.path.stat().st_size == 4 * MIB
        assert reader.once() > 0
    assert list(tmp_path.iterdir()) == []
    described = reader.description()
    assert described["dir"] == str(tmp_path.resolve()) and described["bytes"] == 4 * MIB
    assert described["state"] in ("cold", "warm")
    if described["state"] == "warm":
        assert described["reason"]  # warm is always explained


def test_without_fadvise_the_read_is_labelled_warm_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.delattr(storage_module.os, "posix_fadvise", raising=False)
    with StorageRead(tmp_path, 4 * MIB) as reader:
        reader.once()
    assert reader.description()["state"] == "warm"
    assert "posix_fadvise is not available" in reader.description()["reason"]


def test_a_cache_that_keeps_the_file_makes_it_warm(tmp_path, monkeypatch):
    monkeypatch.setattr(storage_module, "_still_cached", lambda _fd, _size: True)
    with StorageRead(tmp_path, 4 * MIB) as reader:
        reader.once()
    assert reader.description()["state"] == "warm"
    assert "kept the file" in reader.description()["reason"]


# ---- the card
CONTRACT_KEYS = {"target", "device_name", "host", "measured_at", "peak_flops", "memory_bandwidth_gbs", "call_floor_us",
                 "llc_bytes", "caches", "storage_read_gbs", "storage", "h2d_gbs", "device_memory_bandwidth_gbs",
                 "spread", "method", "not_available"}


@pytest.fixture(scope="module")
def quick_card(tmp_path_factory):
    storage = tmp_path_factory.mktemp("storage")
    progress = []
    card = measure_card("cpu", storage_dir=str(storage), repeats=2, quick=True, progress=progress.append)
    return card, storage, progress


def test_the_card_has_every_field_of_the_contract_and_is_plain_json(quick_card):
    card, storage, progress = quick_card
    assert CONTRACT_KEYS <= set(card)
    assert json.loads(json.dumps(card)) == card
    assert card["target"] == "cpu" and card["quick"] is True and card["repeats"] == 2
    assert card["measured_at"].endswith("Z") and card["host"]
    assert set(card["peak_flops"]) >= {"fp32", "bf16"} and "fp16" not in card["peak_flops"]
    assert all(value > 0 for value in card["peak_flops"].values())
    assert card["memory_bandwidth_gbs"] > 0 and card["storage_read_gbs"] > 0
    assert set(card["call_floor_us"]) == {"torch", "onnxruntime"}
    assert all(value > 0 for value in card["call_floor_us"].values())
    assert card["storage"]["dir"] == str(storage.resolve()) and card["storage"]["state"] in ("cold", "warm")
    assert list(storage.iterdir()) == []  # the test file is gone
    assert progress[-1] == "done" and any("peak FLOP/s fp32" in text for text in progress)


def test_every_measured_ceiling_has_its_spread_and_method(quick_card):
    card, _, _ = quick_card
    measured = ["peak_flops.fp32", "peak_flops.bf16", "memory_bandwidth_gbs", "call_floor_us.torch",
                "call_floor_us.onnxruntime", "storage_read_gbs"]
    # the thread gains are measured where the worker has two cores (kept out, with why, on a busy machine)
    gains = [key for key in GAINS if not card["not_available"].get(key, "").startswith("one core")]
    assert set(card["spread"]) == set(measured + gains)
    measured += [key for key in gains if card[key] is not None]
    for key in measured:
        s = card["spread"][key]
        assert {"min", "max", "cv", "n", "interval", "level", "within_goal", "stopped", "note"} <= set(s)
        assert s["n"] >= 2 and s["min"] <= s["interval"][0] <= s["interval"][1] <= s["max"]
        assert (s["stopped"] == "goal") == s["within_goal"] == (s["note"] is None)
        assert card["method"][key].endswith(f"median of {s['n']}")
    assert "torch.matmul 256×256 fp32" in card["method"]["peak_flops.fp32"]
    assert "quick size" in card["method"]["memory_bandwidth_gbs"]


def test_each_thread_gain_is_measured_or_says_why_not(quick_card):
    card, _, progress = quick_card
    for key in GAINS:
        assert (card[key] is not None and card[key] > 0) != bool(card["not_available"].get(key))
        assert key in card["thread_gain_load"] or card["not_available"][key].startswith("one core")


def test_what_a_cpu_lacks_is_none_with_the_reason(quick_card):
    card, _, _ = quick_card
    assert card["h2d_gbs"] is None and card["device_memory_bandwidth_gbs"] is None
    assert "no GPU" in card["not_available"]["h2d_gbs"]
    assert "no GPU" in card["not_available"]["device_memory_bandwidth_gbs"]


def test_without_a_storage_directory_storage_is_not_available(monkeypatch):
    import engines.machine.card as card_module

    for name in ("_peak_flops", "_memory", "_floors"):  # storage alone is under test
        monkeypatch.setattr(card_module, name, lambda *_args: None)
    card = measure_card("cpu", repeats=1, quick=True)
    assert card["storage_read_gbs"] is None and card["storage"] is None
    assert "--storage DIR" in card["not_available"]["storage_read_gbs"]


def test_bad_requests_fail_before_anything_is_measured(tmp_path):
    with pytest.raises(MachineError, match="does not exist"):
        measure_card("cpu", storage_dir=str(tmp_path / "missing"), quick=True)
    with pytest.raises(MachineError, match="repeats must be at least 1"):
        measure_card("cpu", repeats=0, quick=True)
    with pytest.raises(MachineError, match="supported targets"):
        measure_card("tpu", quick=True)


def test_the_card_carries_the_machines_noise_floor(quick_card):
    card, _, progress = quick_card
    floor = card["noise_floor"]
    assert floor["windows"] == 3 and floor["window_s"] == 0.02 and len(floor["medians_us"]) == 3
    assert floor["spread"] >= 0 and floor["k"] == 3 and "reference kernel" in card["method"]["noise_floor"]
    assert any(text.startswith("noise floor: 3 windows") for text in progress)
