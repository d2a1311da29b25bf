"""Verdicts that name the storage (console.analysis.storage.storage_verdict): which device feeds an input-bound run,
how close to its measured ceiling, and which lever — each with its evidence numbers."""

from __future__ import annotations

import pytest

from console.analysis import bottleneck
from console.analysis.storage import (
    feed_facts,
    joules_per_gb,
    storage_block,
    storage_verdict,
    stored_sweep_best,
)
from console.history import HistoryStore

NVME = {"path": "/data", "dev": "259:2", "device": "nvme0n1p2", "disk": "nvme0n1", "kind": "NVMe",
        "model": "Lab NVMe 2TB", "physical": [], "backing_file": None, "rotational": False, "fstype": "ext4",
        "reason": ""}
CARD = {"target": "cpu", "host": "lab-a", "storage_read_gbs": 2.0, "storage": {"dir": "/nonexistent-card-dir"}}


def pipeline(wait=0.6, read_mb_s=400.0, busy=0.95, decode=0.2, read=1.0, telemetry=None, files=1000,
             sample_bytes=150_000, cache="cold", device=NVME):
    scenario = {"wait_fraction": wait, "disk_read_mb_s": read_mb_s, "iops": 3000.0, "loader_workers": 2,
                "loader_busy_fraction": busy, "loader_read_ms_per_sample": read,
                "loader_decode_ms_per_sample": decode, "cache_state": cache, "data_dir": "/data",
                "data_device": device, "data_files": files, "sample_bytes": sample_bytes, "samples_per_s": 800.0,
                "batch": 8}
    return {"scenario": scenario, "telemetry": telemetry or {}, "latency_ms": {"mean": 10.0, "p50": 9.5}}


def tele(disk="nvme0n1", **means):
    return {f"storage.{disk}.{k}": {"mean": v} for k, v in means.items()} | {"mem.total": {"max": 64.0}}


def test_a_device_at_its_ceiling_asks_for_a_faster_device():
    v = storage_verdict(pipeline(read_mb_s=1800.0, busy=0.4, telemetry=tele(busy=97.0, queue_depth=6.0,
                                                                         read_iops=7000, read_mb_s=1800.0)), CARD)
    assert v["lever"] == "faster-device" and v["device_name"] == "nvme0n1"
    assert v["ceiling_mb_s"] == 2000.0 and v["of_ceiling"] == pytest.approx(0.9)
    assert v["evidence"]["device_busy_percent"] == 97.0
    assert "nvme0n1 (NVMe, Lab NVMe 2TB, partition nvme0n1p2)" in v["sentence"]
    assert "90% of its measured 2000 MB/s" in v["sentence"] and "busy 97%" in v["sentence"]


def test_busy_readers_with_a_idle_device_ask_for_more_readers():
    v = storage_verdict(pipeline(read_mb_s=300.0, busy=0.95, telemetry=tele(busy=30.0, queue_depth=1.1,
                                                                         read_iops=2000, read_mb_s=300.0)), CARD)
    assert v["lever"] == "more-readers"
    assert "2 readers, busy 95% of their time, device busy 30%, queue depth 1.1" in v["sentence"]


def test_decoding_that_dominates_asks_for_a_different_format():
    v = storage_verdict(pipeline(read_mb_s=200.0, busy=0.97, decode=4.0, read=0.5), CARD)
    assert v["lever"] == "different-format" and "more-readers" in v["also"]
    assert "decode 4 ms vs read 0.5 ms per sample" in v["sentence"]


def test_small_requests_far_from_the_ceiling_ask_for_larger_reads():
    # 40 MB/s in 10 000 requests/s: 3.9 KiB each, 2% of the ceiling, readers mostly waiting
    v = storage_verdict(pipeline(read_mb_s=40.0, busy=0.3, telemetry=tele(busy=60.0, queue_depth=3.0,
                                                                       read_iops=10_000, read_mb_s=40.0)), CARD)
    assert v["lever"] == "larger-reads" and v["evidence"]["request_kib"] == pytest.approx(3.9063, rel=1e-3)
    assert "page-cache" in v["also"]  # 150 MB of data on a 64 GiB machine, read cold


def test_a_data_set_that_fits_in_ram_names_the_page_cache():
    v = storage_verdict(pipeline(read_mb_s=300.0, busy=0.3, telemetry=tele(busy=50.0, queue_depth=4.0,
                                                                        read_iops=2000, read_mb_s=300.0)), CARD)
    assert v["lever"] == "page-cache" and "data set 0.15 GB, RAM 68.7 GB, read cold" in v["sentence"]


def test_not_input_bound_or_no_input_figures_gives_no_verdict():
    assert storage_verdict(pipeline(wait=0.05), CARD) is None
    assert storage_verdict({"scenario": {"samples_per_s": 3.0}}, CARD) is None


def test_the_ceiling_says_where_it_came_from():
    summary = pipeline(read_mb_s=500.0)
    assert "labconsole machine --storage" in storage_verdict(summary, None)["ceiling_source"]
    v = storage_verdict(summary, CARD, sweep_best_mb_s=2500.0, sweep_label="I/O sweep run abcd1234's best read")
    assert v["ceiling_mb_s"] == 2500.0 and v["of_ceiling"] == pytest.approx(0.2)
    assert "abcd1234" in v["sentence"]
    no_dev = storage_verdict(pipeline(device=None) | {"scenario": {**pipeline()["scenario"], "data_device": None,
                                                                   "data_dir": "/nowhere"}}, CARD)
    assert "unknown device" in no_dev["device"]


def test_a_feed_result_below_its_au_threshold_is_judged_too():
    result = {"kind": "feed", "passed": False, "figures": {"au_percent": 62.0, "samples_per_s": 900.0,
                                                            "read_mb_s": 1900.0},
              "au_threshold_percent": 90.0, "data_device": NVME, "readers": 8, "reader_busy_fraction": 0.3}
    v = storage_verdict(result, CARD)
    assert v["bound"] == "AU 62.0% below the 90% the workload needs" and v["lever"] == "faster-device"
    facts = feed_facts(result)
    assert facts["au_percent"] == 62.0 and facts["readers"] == 8
    assert storage_verdict({**result, "passed": True, "figures": {**result["figures"], "au_percent": 95.0}},
                           CARD) is None


def test_the_storage_block_and_the_bottleneck_sentence_name_the_device():
    summary = pipeline(read_mb_s=1800.0, telemetry=tele(busy=97.0, queue_depth=6.0, read_iops=7000,
                                                        read_mb_s=1800.0))
    assert storage_block(summary, CARD)["verdict"]["lever"] == "faster-device"
    verdict = bottleneck.diagnose({"spec": {"scenario": "input-pipeline"}, "summary": summary, "ops": [],
                                   "profile": {}, "machine": CARD})
    assert verdict["class"] == "input-pipeline"
    assert "from nvme0n1 (NVMe" in verdict["sentence"] and "90% of its measured ceiling" in verdict["sentence"]
    assert verdict["evidence"]["storage_lever"] == "faster-device"


def test_joules_per_gb_only_from_measured_energy():
    measured = {"energy": {"scopes": [{"scope": "package-0", "method": "counter", "joules": 50.0}]}}
    got = joules_per_gb(measured, 10e9)
    assert got["value"] == pytest.approx(5.0) and "not measured" in got["note"] and got["scope"] == "package-0"
    estimated = {"energy": {"scopes": [{"scope": "cpu", "method": "estimated", "joules": 50.0}]}}
    assert joules_per_gb(estimated, 10e9)["value"] is None and "estimated" in joules_per_gb(estimated, 1e9)["reason"]
    assert joules_per_gb({}, 1e9)["value"] is None and joules_per_gb(measured, 0)["value"] is None
    summary = {**measured, "scenario": {"disk_read_mb_s": 100.0, "storage_bytes": 5e9}}
    assert storage_block(summary, CARD)["joules_per_gb"]["value"] == pytest.approx(10.0)


def test_the_best_stored_sweep_is_found_by_device(tmp_path):
    with HistoryStore(tmp_path / "h.db") as store:
        assert stored_sweep_best(store) == (None, "")
        run_id = store.create_run({"model": "storage", "engine": "storage", "scenario": "storage-sweep",
                                   "target": "cpu"})
        store.finish_run(run_id, "completed", {"kind": "sweep", "data_device": NVME,
                                               "figures": {"best_read_mb_s": 2400.0, "best_write_mb_s": 900.0}})
        best, label = stored_sweep_best(store, "nvme0n1")
        assert best == 2400.0 and run_id[:8] in label
        assert stored_sweep_best(store, "sda") == (None, "")


def test_a_sweep_attached_to_the_card_is_the_ceiling_on_its_own_device():
    summary = pipeline(read_mb_s=500.0)
    card = {**CARD, "storage_sweep": {"best_read_mb_s": 2500.0, "label": "I/O sweep run 1234abcd's best read",
                                      "disk": "nvme0n1"}}
    v = storage_verdict(summary, card)
    assert v["ceiling_mb_s"] == 2500.0 and "1234abcd" in v["ceiling_source"]
    elsewhere = {**card, "storage_sweep": {**card["storage_sweep"], "disk": "sdb"}}
    assert storage_verdict(summary, elsewhere)["ceiling_mb_s"] == 2000.0  # the card's read, not another disk's sweep


def test_this_hosts_card_carries_the_stored_sweep(tmp_path):
    import socket

    from console.machine.cards import card_to_judge_by

    with HistoryStore(tmp_path / "h.db") as store:
        store.add_machine_card({**CARD, "host": socket.gethostname(), "measured_at": "2026-12-01T00:00:00Z"})
        assert "storage_sweep" not in card_to_judge_by("cpu", tmp_path / "h.db")
        run_id = store.create_run({"model": "storage", "engine": "storage", "scenario": "storage-sweep",
                                   "target": "cpu"})
        store.finish_run(run_id, "completed", {"kind": "sweep", "figures": {"seq_read_best_mb_s": 1900.0}})
    card = card_to_judge_by("cpu", tmp_path / "h.db")
    assert card["storage_sweep"]["best_read_mb_s"] == 1900.0 and card["storage_read_gbs"] == 2.0


def test_a_drive_that_throttled_during_the_run_says_so():
    telemetry = tele(busy=97.0, queue_depth=6.0, read_iops=7000, read_mb_s=1800.0) | {
        "storage.nvme0.temperature": {"max": 78.4, "mean": 70.0},
        "storage.nvme0.throttle_events": {"min": 8.0, "max": 11.0, "mean": 9.0}}
    v = storage_verdict(pipeline(read_mb_s=1800.0, telemetry=telemetry), CARD)
    assert v["evidence"]["nvme_throttle_events"] == 3.0 and v["evidence"]["nvme_temperature_max_c"] == 78.4
    assert "throttled itself 3 times during the run" in v["sentence"] and "78 °C" in v["sentence"]
