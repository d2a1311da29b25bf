"""The summary card's environment line: both core sets, or not confined (why), and the console's CPU."""

import pytest

pytest.importorskip("pytestqt")

from widgets.summary_card import SummaryCard  # noqa: E402


def test_the_card_shows_both_core_sets_and_the_consoles_cpu(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    card.show()
    card.set_summary({"partition": {"confined": True, "text": "worker CPUs 1, console CPUs 0 (reserved: 1 core)",
                                    "cost": "the worker gets 1 of 2 physical cores"},
                      "console_cpu": {"percent_of_core": 3.14}})
    assert card.cores_text() == ("Cores: worker CPUs 1, console CPUs 0 (reserved: 1 core) · the console used 3.1% "
                                 "of a core while measuring")
    card.set_summary({"partition": {"confined": False, "text": "not confined (macOS has no call to bind a process)"},
                      "console_cpu": {"percent_of_core": None, "reason": "the run never reached its measuring phase"}})
    assert card.cores_text() == "Cores: not confined (macOS has no call to bind a process)"
    card.set_summary({})  # a run stored before partitions: no line, never a made-up one
    assert card.cores_text() == ""
    card.set_summary({"partition": {"text": "worker CPUs 1, console CPUs 0"}})
    card.clear()
    assert card.cores_text() == ""
