"""The confirmed-verdicts benchmark's bookkeeping (tests/benchmarks/bench_confusion.py): the label a confirmation
establishes, the badly wrong margin, the agreement between repeats and the printed matrices — checked here so
`make test` guards what `make bench` counts."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


confusion = _load("bench_confusion")


def experiment(ci, predicted_range, outcome, cls="host-overhead", intervention="batch ×4"):
    return {"intervention": intervention, "ratio": (ci[0] + ci[1]) / 2, "ci95": list(ci), "outcome": outcome,
            "predicted": {"class": cls, "range": list(predicted_range)}}


@pytest.mark.parametrize("block, label", [
    ({"outcome": "confirmed", "tested": "compute", "says": "compute"}, "compute"),
    ({"outcome": "refuted", "says": "compute", "shown": True}, "compute"),
    ({"outcome": "refuted", "says": "compute", "shown": False}, "open"),  # merely not ruled out: not established
    ({"outcome": "refuted", "says": "none of the classes", "shown": True}, "none"),
    ({"outcome": "undecided"}, "undecided"),
    ({"outcome": "untestable"}, "untestable"),
    ({"outcome": "failed"}, "failed"),
])
def test_the_label_a_confirmation_establishes(block, label):
    assert confusion.established(block) == label


def test_the_issues_detector_is_badly_wrong_and_a_near_miss_is_not():
    # host-overhead predicted ≤ ×1.25 for 4× the pixels; measured ×4.4–6.8 (the issue's PaddleOCR detector)
    detector = experiment((4.4, 6.8), (0.0, 1.25), "not as predicted")
    assert confusion.margin(detector) == pytest.approx(4.4 / 1.25)
    near = experiment((1.0, 1.15), (1.2, 3.0), "not as predicted", cls="compute", intervention="rows ×2")
    assert confusion.margin(near) == pytest.approx(1.2 / 1.15)
    held = experiment((1.0, 1.1), (0.0, 1.25), "as predicted")
    assert confusion.margin(held) == 1.0
    block = {"experiments": [detector, near, held]}
    wrong = confusion.badly_wrong(block)
    assert len(wrong) == 1 and wrong[0].startswith("batch ×4 ×5.6 [4.4, 6.8] where host-overhead predicted")
    assert "×3.5 beyond" in wrong[0]


def test_an_open_ended_range_fails_only_below():
    below = experiment((0.5, 0.6), (1.3, None), "not as predicted", cls="cache-resident")
    assert confusion.margin(below) == pytest.approx(1.3 / 0.6)
    assert confusion.badly_wrong({"experiments": [below]})[0].endswith("predicted ≥ ×1.3 (×2.2 beyond)")


def test_agreement_counts_cases_with_two_verdicts():
    same, total = confusion.agreement([["compute", "compute"], ["compute", "inconclusive"], ["mlp-only"],
                                       ["none", "none"], ["cache-resident", "cache-resident", "cache-resident"]])
    assert (same, total) == (2, 3)  # one repeat is no pair; runs with no op table gave no verdict


def test_the_confusion_matrix_counts_each_verdict_against_its_label():
    lines = confusion.matrix_lines([("compute", "compute"), ("compute", "compute"), ("compute", "undecided"),
                                    ("host-overhead", "compute"), ("cache-resident", "none")])
    header, *rows = lines
    assert header.split()[-3:] == ["compute", "none", "undecided"]  # classes first, then what decided nothing
    by_row = {row.split()[0]: row.split()[1:] for row in rows}
    assert by_row == {"cache-resident": ["·", "1", "·"], "compute": ["2", "·", "1"], "host-overhead": ["1", "·", "·"]}


def test_outcome_counts_per_class():
    header, *rows = confusion.outcome_lines([("compute", "confirmed"), ("compute", "refuted"),
                                             ("host-overhead", "undecided")], "verdict")
    assert header.split() == ["verdict", *confusion.OUTCOMES]
    assert rows[0].split() == ["compute", "1", "1", "·", "·", "·"]
    assert rows[1].split() == ["host-overhead", "·", "·", "1", "·", "·"]


def test_calibration_bins_the_decided_cases_by_the_confidence_shown():
    calibration, calibration_lines = confusion.calibration, confusion.calibration_lines
    rows = [(0.99, "confirmed"), (1.0, "refuted"), (0.9, "confirmed"), (0.6, "refuted"), (0.7, "undecided"),
            (None, "confirmed")]
    bins = calibration(rows)
    assert [(b["bin"], b["cases"], b["confirmed"]) for b in bins] == [((0.0, 0.8), 1, 0), ((0.8, 0.95), 1, 1),
                                                                     ((0.95, 1.0), 2, 1)]
    assert bins[2]["mean_confidence"] == pytest.approx(0.995)
    assert calibration_lines(bins)[3] == "0.95–1.00          2        0.99       0.50"
