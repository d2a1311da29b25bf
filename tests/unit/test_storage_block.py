"""console.analysis.storage: a run's storage reads in GB/s beside the machine card's measured read ceiling."""

import socket

import pytest

from console.analysis.storage import storage_block
from console.history import HistoryStore
from console.machine.cards import newest_card

CARD = {"target": "cpu", "host": socket.gethostname(), "storage_read_gbs": 2.0,
        "storage": {"dir": "/data", "state": "cold", "bytes": 1 << 30, "reason": ""}}


def summary(cold=None, scenario=None):
    return {"cold_start": cold or {}, "scenario": scenario or {}}


def test_model_file_and_data_reads_are_set_against_the_ceiling():
    block = storage_block(summary({"read_bytes": 500_000_000, "read_s": 0.5},
                                  {"disk_read_mb_s": 400.0, "checkpoint_load_mb_s": 1000.0, "cache_state": "cold"}),
                          CARD)
    assert block["model_read_gbs"] == pytest.approx(1.0) and block["model_read_of_ceiling"] == pytest.approx(0.5)
    assert block["data_read_gbs"] == pytest.approx(0.4) and block["data_read_of_ceiling"] == pytest.approx(0.2)
    assert block["checkpoint_load_of_ceiling"] == pytest.approx(0.5)
    assert block["checkpoint_save_gbs"] is None and block["checkpoint_save_of_ceiling"] is None
    assert block["storage_read_gbs"] == 2.0 and block["cache_state"] == block["ceiling_state"] == "cold"
    assert "reason" not in block and block["method"]


def test_without_a_card_or_its_storage_figure_the_reason_says_how_to_get_one():
    block = storage_block(summary({"read_bytes": 10, "read_s": 1.0}), None)
    assert block["model_read_of_ceiling"] is None and "labconsole machine --storage DIR" in block["reason"]
    card = {**CARD, "storage_read_gbs": None, "not_available": {"storage_read_gbs": "no --storage directory"}}
    assert "no --storage directory" in storage_block(summary({"read_bytes": 10, "read_s": 1.0}), card)["reason"]


def test_a_run_that_read_nothing_has_no_block():
    assert storage_block(summary({"read_bytes": None, "read_s": None}, {"samples_per_s": 3.0}), CARD) is None


def test_the_stored_card_is_the_newest_of_this_host_and_target(tmp_path):
    with HistoryStore(tmp_path / "h.db") as store:
        assert newest_card(store, "cpu") is None
        store.add_machine_card({**CARD, "measured_at": "2024-01-01T00:00:00Z", "storage_read_gbs": 1.0})
        store.add_machine_card({**CARD, "measured_at": "2024-06-01T00:00:00Z"})
        store.add_machine_card({**CARD, "host": "elsewhere", "measured_at": "2025-01-01T00:00:00Z"})
        assert newest_card(store, "cpu")["storage_read_gbs"] == 2.0
        assert newest_card(store, "cuda:0") is None
