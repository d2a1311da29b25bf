"""The machine card's thread gains (engines/machine/threads.py): rate at 2 threads ÷ at 1 for the GEMM and the
memory-bandwidth kernel, from fake measurements whose rate depends on the thread count — the ratio and its spread,
the batch sized at one thread, the threads restored, "not available" on one core, on a GPU and on a busy machine,
and how the Machine table shows them (older cards without them say so)."""

from __future__ import annotations

from pathlib import Path

import pytest

import engines.machine.card as card_module
from console.cli.machine_cmd import card_lines
from console.machine.table import ceiling_rows, format_spread, format_value
from engines.machine import devices, threads
from engines.machine.card import GAINS, QUICK, _Card, _thread_gains


class FakeTorch:
    """torch's thread knob, nothing else; `float32` for the GEMM's dtype."""

    float32 = "float32"

    def __init__(self, count: int = 4):
        self.count, self.history = count, []

    def get_num_threads(self) -> int:
        return self.count

    def set_num_threads(self, count: int) -> None:
        self.count = count
        self.history.append(count)


class FakeRate:
    """A kernel whose rate is `rates[threads]`; remembers the threads it was built (sized) at."""

    def __init__(self, torch: FakeTorch, rates: dict[int, float]):
        self.torch, self.rates, self.built_at = torch, rates, torch.count
        self.seen: list[int] = []
        self.n, self.batch = 256, type("B", (), {"calls": 7})()

    def once(self) -> float:
        self.seen.append(self.torch.count)
        return self.rates[self.torch.count]


# ---- the ratio
def test_a_gain_is_the_rate_at_two_threads_over_one_sized_at_one_and_the_threads_are_restored():
    torch = FakeTorch(4)
    gain = threads.ThreadGain(torch, lambda: FakeRate(torch, {1: 10.0, 2: 19.0}))
    assert gain.measurement.built_at == 1 and torch.count == 4  # sized at the slower setting, then put back
    assert gain.once() == pytest.approx(1.9) and gain.once() == pytest.approx(1.9)
    assert gain.measurement.seen == [2, 1, 1, 2]  # ABBA: neither side always runs first
    assert torch.count == 4


def test_threads_are_restored_when_the_measurement_fails():
    torch = FakeTorch(3)
    with pytest.raises(RuntimeError), threads.threads(torch, 1):
        raise RuntimeError("kernel failed")
    assert torch.count == 3


# ---- cores
def _topology(root: Path, cpu: int, core: int, package: int = 0) -> None:
    folder = root / f"sys/devices/system/cpu/cpu{cpu}/topology"
    folder.mkdir(parents=True)
    (folder / "core_id").write_text(f"{core}\n")
    (folder / "physical_package_id").write_text(f"{package}\n")


def test_two_physical_cores_allow_a_gain_one_core_or_its_smt_siblings_do_not(tmp_path):
    for cpu, core in ((0, 0), (1, 1), (2, 0), (3, 1)):  # two cores, each with an SMT sibling
        _topology(tmp_path, cpu, core)
    assert threads.second_core(str(tmp_path), [0, 1]) is None
    alone = threads.second_core(str(tmp_path), [0])
    assert alone.startswith("one core: the worker may run on CPU 0,") and "two or more physical cores" in alone
    siblings = threads.second_core(str(tmp_path), [0, 2])
    assert siblings.startswith("one core: the worker may run on CPUs 0,2 (SMT siblings of one core)")


# ---- how busy the worker's CPUs were
def _stat(root: Path, rows: dict[int, tuple[int, ...]]) -> None:
    (root / "proc").mkdir(exist_ok=True)
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"] + [f"cpu{c} " + " ".join(str(int(x)) for x in f) for c, f in rows.items()]
    (root / "proc/stat").write_text("\n".join(lines) + "\n")


def test_other_load_is_the_busy_time_of_the_workers_cpus_less_its_own(tmp_path):
    # user nice system idle iowait irq softirq steal: busy = all but idle and iowait, in clock ticks
    _stat(tmp_path, {0: (100, 0, 0, 900, 50, 0, 0, 0), 1: (0, 0, 0, 1000, 0, 0, 0, 0), 2: (0, 0, 0, 0, 0, 0, 0, 0)})
    clock, own = iter([0.0, 2.0]), iter([0.0, 1.0])
    load = threads.OtherLoad(str(tmp_path), [0, 1], own_cpu_s=lambda: next(own), clock=lambda: next(clock))
    load.start()
    hz = threads.os.sysconf("SC_CLK_TCK")
    # over 2 s: CPU 0 busy 2 s (user 1.5 s + steal 0.5 s), CPU 1 busy 1 s, this process used 1 s → 1 s of others
    _stat(tmp_path, {0: (100 + 1.5 * hz, 0, 0, 900, 50, 0, 0, 0.5 * hz), 1: (hz, 0, 0, 1000 + hz, 0, 0, 0, 0),
                     2: (50 * hz, 0, 0, 0, 0, 0, 0, 0)})  # CPU 2 is not the worker's: not counted
    assert load.stop() == {"other_cores": pytest.approx(1.0), "seconds": 2.0, "cpus": [0, 1]}


def test_without_proc_stat_the_load_is_unknown(tmp_path):
    load = threads.OtherLoad(str(tmp_path), [0, 1])
    load.start()
    assert load.stop() is None and threads.busy_seconds([0], str(tmp_path)) is None


# ---- on the card
@pytest.fixture
def fake_kernels(monkeypatch):
    """The card's GEMM and stream kernels replaced by fakes: GEMM 1.9×, memory 1.15× from a second thread."""
    torch = FakeTorch(2)
    monkeypatch.setattr(card_module.compute, "MatmulCeiling",
                        lambda *_a, **_k: FakeRate(torch, {1: 50e9, 2: 95e9}))
    monkeypatch.setattr(card_module.memory, "StreamCeiling", lambda *_a, **_k: FakeRate(torch, {1: 10.0, 2: 11.5}))
    monkeypatch.setattr(threads, "second_core", lambda: None)
    return torch


def _quiet(other_cores: float | None):
    class Load:
        def start(self):
            pass

        def stop(self):
            return None if other_cores is None else {"other_cores": other_cores, "seconds": 1.0, "cpus": [0, 1]}
    return Load


def _card(torch, kind: str = "cpu") -> _Card:
    device = devices.Device(target="cpu" if kind == "cpu" else "cuda:0", kind=kind, index=None if kind == "cpu" else 0,
                            name="fake")
    card = _Card(device, 3, True, lambda _t: None)
    card.data["llc_bytes"] = 32 << 20
    _thread_gains(card, device, torch, QUICK, True)
    return card


def test_the_card_stores_both_gains_with_their_spread_method_and_load(fake_kernels, monkeypatch):
    monkeypatch.setattr(threads, "OtherLoad", _quiet(0.1))
    card = _card(fake_kernels).data
    assert card["compute_thread_gain"] == pytest.approx(1.9) and card["stream_thread_gain"] == pytest.approx(1.15)
    for key in GAINS:
        assert card["spread"][key]["n"] >= 3 and card["spread"][key]["interval"][0] == pytest.approx(card[key])
        assert "rate at 2 intra-op threads ÷ at 1" in card["method"][key] and key not in card["not_available"]
        assert card["thread_gain_load"][key]["other_cores"] == 0.1
    assert card["method"]["compute_thread_gain"].startswith("torch.matmul 256×256 fp32")
    assert "quick size 4 MiB per array" in card["method"]["stream_thread_gain"]
    assert fake_kernels.count == 2  # the card's own thread count is back


def test_on_one_core_neither_gain_is_measured_and_both_say_why(fake_kernels, monkeypatch):
    monkeypatch.setattr(threads, "second_core", lambda: "one core: the worker may run on CPU 0, …")
    card = _card(fake_kernels).data
    for key in GAINS:
        assert card[key] is None and card["not_available"][key].startswith("one core")
        assert key not in card["spread"]
    assert fake_kernels.history == []  # nothing was measured


def test_a_gain_measured_while_others_took_a_core_is_not_the_machines(fake_kernels, monkeypatch):
    monkeypatch.setattr(threads, "OtherLoad", _quiet(0.9))
    card = _card(fake_kernels).data
    assert card["stream_thread_gain"] is None
    assert card["not_available"]["stream_thread_gain"].startswith(
        "measured ×1.15 while other processes used 0.90 of a core on the worker's CPUs")
    assert "labconsole machine --refresh" in card["not_available"]["compute_thread_gain"]


def test_an_unknown_load_keeps_the_gain_and_says_so(fake_kernels, monkeypatch):
    monkeypatch.setattr(threads, "OtherLoad", _quiet(None))
    card = _card(fake_kernels).data
    assert card["compute_thread_gain"] == pytest.approx(1.9)
    assert card["method"]["compute_thread_gain"].endswith("load on the worker's CPUs unknown (no /proc/stat)")


def test_a_gpu_card_has_no_host_thread_gain(fake_kernels):
    card = _card(fake_kernels, "cuda").data
    assert card["compute_thread_gain"] is None and "not on host threads" in card["not_available"]["compute_thread_gain"]


# ---- the Machine table and `labconsole machine`
def test_the_table_shows_a_gain_as_a_ratio_with_its_interval():
    card = {"compute_thread_gain": 1.93, "stream_thread_gain": None,
            "spread": {"compute_thread_gain": {"min": 1.8, "max": 1.97, "cv": 0.02, "n": 6, "interval": [1.9, 1.95],
                                               "half_width": 0.013, "level": 0.97}},
            "method": {"compute_thread_gain": "torch.matmul 2048×2048 fp32, rate at 2 intra-op threads ÷ at 1"},
            "not_available": {"stream_thread_gain": "one core: the worker may run on CPU 0"}}
    rows = {row["key"]: row for row in ceiling_rows(card)}
    assert rows["compute_thread_gain"]["text"] == "×1.93" and rows["compute_thread_gain"]["label"] == \
        "Gain from 2nd thread, GEMM"
    assert rows["compute_thread_gain"]["spread"] == "×1.9–×1.95 (97% CI, ±1.3%), cv 2.0%, n=6"
    assert rows["stream_thread_gain"]["text"] == "not available"
    assert rows["stream_thread_gain"]["reason"] == "one core: the worker may run on CPU 0"
    text = "\n".join(card_lines(card))
    assert "Gain from 2nd thread, GEMM     ×1.93" in text
    assert "  Gain from 2nd thread, memory: one core: the worker may run on CPU 0" in text
    assert format_value(1.0, "ratio") == "×1" and format_spread(None, "ratio") == ""


def test_an_older_card_without_the_gains_says_it_predates_them():
    old = {"target": "cpu", "memory_bandwidth_gbs": 9.1, "spread": {}, "method": {}, "not_available": {}}
    rows = {row["key"]: row for row in ceiling_rows(old)}
    for key in GAINS:
        assert rows[key]["value"] is None and rows[key]["reason"].startswith("this card predates the thread gains")
    assert "Gain from 2nd thread, memory: this card predates the thread gains" in "\n".join(card_lines(old))
