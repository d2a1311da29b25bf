"""console.machine.cards: a stored card is reused only when it answers the request; measuring goes through the worker
call and lands in the history. console.machine.table: every figure with its unit, spread and reason."""

import socket

import pytest

import console.machine.cards as machine
from console.history import HistoryStore
from console.machine.table import ceiling_rows, format_spread, format_value, row_keys, view_columns
from engines.machine import MachineError


def fake_card(target="cpu", host=None, quick=False, storage_dir="/data", fp32=4.0e10, measured_at=None):
    return {"target": target, "device_name": "Test CPU", "host": host or socket.gethostname(),
            "measured_at": measured_at or "2026-01-02T03:04:05Z", "quick": quick, "repeats": 5,
            "peak_flops": {"fp32": fp32}, "memory_bandwidth_gbs": 5.3, "call_floor_us": {"torch": 21.0},
            "llc_bytes": 8 * 1024 ** 2, "caches": {"l1d": 32768, "l2": 524288, "l3": 8 * 1024 ** 2},
            "storage_read_gbs": 1.1, "storage": {"dir": storage_dir, "state": "cold", "bytes": 1, "reason": ""},
            "h2d_gbs": None, "device_memory_bandwidth_gbs": None,
            "spread": {"peak_flops.fp32": {"min": 3.9e10, "max": 4.1e10, "cv": 0.02, "n": 5}},
            "method": {"peak_flops.fp32": "torch.matmul 2048×2048 fp32, median of 5", "caches": "sysfs"},
            "not_available": {"h2d_gbs": "no GPU on this target (cpu)",
                              "call_floor_us.onnxruntime": "onnxruntime is not installed"}}


@pytest.fixture
def measured(monkeypatch):
    """Replace the worker: each measurement returns a fresh card and is counted."""
    calls = []

    def fake_measure(target, storage_dir=None, repeats=5, quick=False, on_progress=None):
        calls.append((target, storage_dir, repeats, quick))
        if on_progress:
            on_progress("peak FLOP/s fp32: 1/5")
        return fake_card(target, quick=quick, storage_dir=storage_dir, fp32=1e10 * len(calls),
                         measured_at=f"2026-01-02T03:04:{len(calls):02d}Z")

    monkeypatch.setattr(machine, "measure", fake_measure)
    return calls


def test_the_first_call_measures_and_stores_then_the_stored_card_is_reused(tmp_path, measured):
    db = tmp_path / "h.db"
    first = machine.card_for("cpu", storage_dir=tmp_path, db=db)
    assert len(measured) == 1 and measured[0][1] == str(tmp_path) and first["card_id"]
    again = machine.card_for("cpu", db=db)
    assert len(measured) == 1 and again["card_id"] == first["card_id"]
    with HistoryStore(db) as store:
        assert [c["card_id"] for c in store.machine_cards()] == [first["card_id"]]


def test_refresh_measures_again_and_the_newest_card_wins(tmp_path, measured):
    db = tmp_path / "h.db"
    machine.card_for("cpu", storage_dir=tmp_path, db=db)
    fresh = machine.card_for("cpu", refresh=True, storage_dir=tmp_path, db=db)
    assert len(measured) == 2
    assert machine.card_for("cpu", db=db)["card_id"] == fresh["card_id"]


def test_a_card_of_another_storage_directory_or_size_is_not_reused(tmp_path, measured):
    db, other = tmp_path / "h.db", tmp_path / "other"
    other.mkdir()
    machine.card_for("cpu", storage_dir=tmp_path, db=db)
    machine.card_for("cpu", storage_dir=other, db=db)
    assert [call[1] for call in measured] == [str(tmp_path), str(other)]
    machine.card_for("cpu", storage_dir=other, db=db, quick=True)
    assert len(measured) == 3 and measured[-1][3] is True


def test_without_a_storage_directory_the_data_directory_is_measured(tmp_path, measured):
    machine.card_for("cpu", db=tmp_path / "h.db")
    assert measured[0][1] == str(machine.default_storage_dir())


def test_targets_are_canonical_and_bad_requests_fail_before_a_worker(tmp_path, measured):
    db = tmp_path / "h.db"
    machine.card_for("CPU", storage_dir=tmp_path, db=db)
    assert measured[0][0] == "cpu"
    with pytest.raises(MachineError, match="supported targets"):
        machine.card_for("mps", db=db)
    with pytest.raises(MachineError, match="does not exist"):
        machine.card_for("cpu", storage_dir=tmp_path / "missing", db=db)
    assert len(measured) == 1


def test_cards_of_other_hosts_are_compared_but_never_taken_for_this_one(tmp_path, measured):
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        store.add_machine_card(fake_card(host="lab-gpu-01", target="cuda:0", measured_at="2030-01-01T00:00:00Z"))
        store.add_machine_card(fake_card(host="aaa-other", measured_at="2030-01-01T00:00:00Z"))
    assert machine.stored_card("cpu", db) is None
    mine = machine.card_for("cpu", storage_dir=tmp_path, db=db)
    with HistoryStore(db) as store:
        hosts = [(c["host"], c["target"]) for c in machine.latest_cards(store)]
    assert hosts == [(mine["host"], "cpu"), ("aaa-other", "cpu"), ("lab-gpu-01", "cuda:0")]


def test_values_carry_their_units_at_a_readable_scale():
    assert format_value(4.12e10, "flops") == "41.2 GFLOP/s"
    assert format_value(7.3e14, "flops") == "730 TFLOP/s"
    assert format_value(5.31, "gbs") == "5.31 GB/s" and format_value(0.766, "gbs") == "766 MB/s"
    assert format_value(2900.0, "gbs") == "2.9 TB/s"
    assert format_value(21.85, "us") == "21.9 µs"
    assert format_value(8 * 1024 ** 2, "bytes") == "8 MiB" and format_value(32768, "bytes") == "32 KiB"
    assert format_value(None, "gbs") == "—"


def test_a_spread_shows_both_ends_on_one_scale_with_cv_and_n():
    assert format_spread({"min": 3.9e10, "max": 4.1e10, "cv": 0.0213, "n": 5}, "flops") \
        == "39–41 GFLOP/s, cv 2.1%, n=5"
    assert format_spread({"min": 1.0, "max": 1.0, "cv": None, "n": 1}, "us") == "1–1 µs, cv —, n=1"
    assert format_spread(None, "gbs") == ""


def test_rows_say_why_a_figure_is_missing_and_leave_out_what_the_target_has_no_business_with():
    rows = {row["key"]: row for row in ceiling_rows(fake_card())}
    assert rows["peak_flops.fp32"]["text"] == "40 GFLOP/s" and "2048×2048" in rows["peak_flops.fp32"]["method"]
    assert rows["h2d_gbs.pinned"]["reason"] == "no GPU on this target (cpu)"  # the group's reason
    assert rows["call_floor_us.onnxruntime"]["reason"] == "onnxruntime is not installed"
    assert rows["peak_flops.fp16"]["value"] is None and rows["peak_flops.fp16"]["reason"] == ""
    assert rows["storage_read_gbs"]["text"] == "1.1 GB/s (cold)"
    assert rows["caches.l3"]["method"] == "sysfs" and rows["llc_bytes"]["text"] == "8 MiB"


def test_view_columns_share_rows_across_cards_including_precisions_only_one_has():
    gpu = fake_card(host="lab-gpu-01", target="cuda:0", quick=True)
    gpu["peak_flops"]["tf32"] = 4.9e14
    columns, rows = view_columns([fake_card(), gpu])
    assert [c["title"] for c in columns] == [f"{socket.gethostname()} · cpu", "lab-gpu-01 · cuda:0"]
    keys = [key for key, _ in rows]
    assert keys[:2] == ["peak_flops.fp32", "peak_flops.tf32"] and keys == [k for k, _, _ in row_keys([fake_card(), gpu])]
    assert columns[0]["cells"]["peak_flops.tf32"]["value"] is None
    assert columns[1]["header"]["repeats"] == "5 (quick sizes: not ceilings)"
    assert columns[0]["header"]["measured_at"] == "2026-01-02 03:04:05"


def test_one_lookup_answers_every_surface_newest_full_card_of_this_host_and_canonical_target(tmp_path):
    """console.machine.cards.newest_card: the findings, the Run page, a report, analyze and whatif ask the same question."""
    db = tmp_path / "history.db"
    with HistoryStore(db) as store:
        assert machine.newest_card(store, "cuda") is None
        store.add_machine_card(fake_card("cuda:0", fp32=1e12, measured_at="2026-01-01T00:00:00Z"))
        store.add_machine_card(fake_card("cuda:0", fp32=2e12, measured_at="2026-02-01T00:00:00Z"))
        store.add_machine_card(fake_card("cuda:0", quick=True, fp32=9e12, measured_at="2026-03-01T00:00:00Z"))
        store.add_machine_card(fake_card("cuda:0", host="lab-gpu-01", fp32=7e12, measured_at="2026-04-01T00:00:00Z"))
        store.add_machine_card(fake_card("cuda:1", fp32=5e12, measured_at="2026-04-01T00:00:00Z"))
        newest = machine.newest_card(store, "cuda")  # "cuda" is cuda:0, as the cards are stored
        assert newest["peak_flops"]["fp32"] == 2e12  # the newest full card: the newer quick one is no ceiling
        assert machine.newest_card(store, " CUDA:0 ")["card_id"] == newest["card_id"]
        assert machine.newest_card(store, "cuda", quick=True)["peak_flops"]["fp32"] == 9e12  # asked for: the quick one
        assert machine.newest_card(store, "cuda:0", hostname="lab-gpu-01")["peak_flops"]["fp32"] == 7e12
        assert machine.newest_card(store, "cuda:1")["peak_flops"]["fp32"] == 5e12
        assert machine.newest_card(store, "cuda", storage_dir=tmp_path / "elsewhere") is None
        assert machine.newest_card(store, "mps") is None  # a target no card is measured for has none
    assert machine.stored_card("cuda", db)["card_id"] == newest["card_id"]
    judged = machine.card_to_judge_by("cuda", db)  # what a finished run's findings use: the same card
    assert judged["card_id"] == newest["card_id"] and "storage_sweep" not in judged
    assert machine.card_to_judge_by("cuda", tmp_path / "missing.db") is None
