"""The bandwidth matrix on the machine card: the card's `_links` step stores measure_links' dict under
card["links"] (or says why there is none), and `labconsole machine` prints each path with its spread, theoretical
rate and method, and what was not measured with the reason."""

import json

import pytest

import engines.machine.card as card_module
from console.cli.machine_cmd import card_lines
from console.machine.table import link_lines, link_rows
from engines.machine import measure_card


@pytest.fixture
def only_links(monkeypatch):
    for name in ("_peak_flops", "_memory", "_floors", "_thread_gains"):  # the links step alone is under test
        monkeypatch.setattr(card_module, name, lambda *_args: None)


def test_the_card_keeps_the_matrix_of_this_machine(only_links, tmp_path):
    progress = []
    card = measure_card("cpu", storage_dir=str(tmp_path), repeats=1, quick=True, progress=progress.append)
    links = card["links"]
    assert json.loads(json.dumps(card)) == card
    assert links["schema"] == 1 and links["quick"] is True
    kinds = {entry["kind"]: entry for entry in links["entries"]}
    local = next(e for e in links["entries"] if e["kind"] == "host-memory" and e["variant"] == "local")
    assert local["median_gbs"] > 0 and local["src"] == local["dst"]
    assert "drive-read" in kinds and kinds["drive-read"]["directory"] == str(tmp_path)
    assert "gpu copies" in links["not_available"]  # torch here is CPU-only
    assert "measure_links" in card["method"]["links"]
    assert any(text.startswith("links: host memory") for text in progress) and progress[-1] == "done"
    assert list(tmp_path.iterdir()) == []


def test_a_topology_that_cannot_be_read_leaves_no_matrix_and_says_why(only_links, monkeypatch):
    import engines.topology

    def broken(_root="/"):
        raise OSError("sysfs is not mounted")

    monkeypatch.setattr(engines.topology, "discover", broken)
    card = measure_card("cpu", repeats=1, quick=True)
    assert card["links"] is None and "sysfs is not mounted" in card["not_available"]["links"]
    assert link_lines(card) == ["", f"links: not available ({card['not_available']['links']})"]


GPU_CARD = {
    "target": "cuda:0", "device_name": "H100", "host": "box", "measured_at": "2026-12-04T02:00:00Z", "repeats": 5,
    "peak_flops": {}, "spread": {}, "method": {}, "not_available": {},
    "links": {"schema": 1, "not_available": {"host-memory remote": "not available (this machine has one NUMA node)"},
              "entries": [
                  {"id": "h2d:pci:0000:03:00.0:pinned", "kind": "h2d", "src": "numa0", "dst": "pci:0000:03:00.0",
                   "variant": "pinned", "link_ids": ["pcie:0000:03:00.0", "pcie:0000:01:00.0"],
                   "label": "host→device pinned, PCIe Gen4 x16 cuda:0", "link_label": "PCIe Gen4 x16",
                   "device": "cuda:0", "median_gbs": 24.1,
                   "spread": {"repeats": 9, "min": 23.0, "max": 24.5, "cv": 0.02, "interval_95": [23.8, 24.3],
                              "half_width": 0.0104, "within_goal": True, "note": None},
                   "theoretical_gbs": 31.5, "efficiency": 24.1 / 31.5, "method": "Tensor.copy_ … median of 9",
                   "not_available": None},
                  {"id": "d2d:pci:0000:03:00.0->pci:0000:04:00.0", "kind": "d2d", "src": "pci:0000:03:00.0",
                   "dst": "pci:0000:04:00.0", "variant": "peer", "link_ids": [], "label": "device→device peer",
                   "median_gbs": None, "spread": None, "theoretical_gbs": None, "efficiency": None, "method": "",
                   "not_available": "cuda:0 has no peer access to cuda:1"}]}}


def test_machine_prints_each_path_against_its_links_rate():
    rows = link_rows(GPU_CARD)
    assert rows[0]["text"] == "24.1 GB/s" and rows[0]["theoretical"] == "of 31.5 GB/s theoretical, 77%"
    assert rows[0]["spread"].startswith("23.8–24.3 GB/s (95% CI, ±1.0%)") and rows[0]["spread"].endswith("n=9")
    assert rows[1]["value"] is None and "peer access" in rows[1]["reason"]
    text = "\n".join(card_lines(GPU_CARD))
    assert "host→device pinned, PCIe Gen4 x16 cuda:0" in text and "crosses pcie:0000:03:00.0" in text
    assert "links not available:" in text and "device→device peer: cuda:0 has no peer access" in text
    assert "host-memory remote: not available (this machine has one NUMA node)" in text


def test_an_older_card_without_links_prints_as_before():
    assert link_rows({"target": "cpu"}) == [] and link_lines({"target": "cpu"}) == []
