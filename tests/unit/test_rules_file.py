"""Validity rules as the lab's choice: the rules file, where each rule came from, the rules a run stores, and a
summary recomputed later by the rules the run stored."""

from __future__ import annotations

import json

import numpy as np
import pytest

from console.analysis import rules_file, until_stable
from console.analysis.rules_file import RulesError, in_force
from console.analysis.summary import summarize
from console.analysis.validity import ValidityRules
from console.cli import main
from console.history import HistoryStore
from engines.spec import RunSpec


@pytest.fixture
def lab_file(tmp_path):
    path = tmp_path / "lab" / "rules.toml"
    path.parent.mkdir()
    return path


def test_without_files_the_defaults_are_in_force(lab_file):
    found = in_force(lab_file=lab_file)
    assert found.rules == ValidityRules() and found.files == ()
    assert set(found.sources.values()) == {"default"}


def test_the_lab_file_then_the_option_override_the_defaults_key_by_key(lab_file, tmp_path):
    lab_file.write_text("# the lab's rules\nstability_tolerance = 0.2\nmin_count = 500\n")
    option = tmp_path / "strict.toml"
    option.write_text("[validity]\nmin_count = 1000\npercentiles = [50, 99.9]\n")
    found = in_force(option, lab_file=lab_file)
    assert found.rules.stability_tolerance == 0.2 and found.rules.min_count == 1000
    assert found.rules.percentiles == (50.0, 99.9)
    assert found.sources["stability_tolerance"] == "data folder" and found.sources["min_count"] == "--rules"
    assert found.sources["percentiles"] == "--rules" and found.sources["windows"] == "default"
    assert found.files == (str(lab_file), str(option))
    stored = found.to_dict()
    assert stored["rules"]["percentiles"] == [50.0, 99.9] and json.loads(json.dumps(stored)) == stored


def test_the_data_folder_file_is_found_in_the_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    path = tmp_path / "labconsole" / "rules.toml"
    path.parent.mkdir()
    path.write_text("min_duration_s = 7\n")
    assert rules_file.data_file() == path
    assert in_force().rules.min_duration_s == 7.0


@pytest.mark.parametrize(("text", "words"), [
    ("stabilty_tolerance = 0.2", ["unknown key 'stabilty_tolerance'", "did you mean 'stability_tolerance'"]),
    ("windows = 2.5", ["windows = 2.5", "expected a whole number", "from 2 to 10000"]),
    ("stability_tolerance = -0.1", ["stability_tolerance = -0.1", "out of range", "from 0 to 10"]),
    ("min_count = true", ["min_count = True", "expected a whole number"]),
    ("percentiles = [50, 100]", ["100 is not a percentile", "strictly between 0 and 100"]),
    ("percentiles = 99", ["expected a list"]),
    ("stable_windows = 20", ["stable_windows ≤ windows"]),
    ("min_count = ", ["is not valid TOML"]),
])
def test_a_bad_key_or_value_names_the_key_and_what_is_allowed(lab_file, text, words):
    lab_file.write_text(text + "\n")
    with pytest.raises(RulesError) as caught:
        in_force(lab_file=lab_file)
    assert str(caught.value).startswith(str(lab_file))
    for word in words:
        assert word in str(caught.value)


def test_a_missing_rules_option_file_is_an_error_but_a_missing_lab_file_is_not(lab_file, tmp_path):
    with pytest.raises(RulesError, match="no such rules file"):
        in_force(tmp_path / "nope.toml", lab_file=lab_file)
    assert in_force(lab_file=lab_file).rules == ValidityRules()


def test_stored_rules_are_read_back_leaving_out_keys_this_version_does_not_know():
    block = rules_file.RulesInForce(ValidityRules(stability_tolerance=0.3, percentiles=(50, 90))).to_dict()
    block["rules"]["a_rule_from_a_newer_console"] = 1
    rules = rules_file.from_stored(block)
    assert rules.stability_tolerance == 0.3 and rules.percentiles == (50, 90)
    assert rules_file.from_stored(None) is None and rules_file.from_stored({"rules": {"windows": 1}}) is None


def test_a_run_measuring_until_stable_aims_for_the_rules_in_force():
    spec = RunSpec.from_dict({"scenario_options": {"until_stable": True}}).validate()
    rules_file.aim(spec, ValidityRules(stable_windows=4, stability_tolerance=0.15, windows=8))
    options = spec.scenario_options
    assert (options.stable_windows, options.stability_tolerance, options.windows_per_duration) == (4, 0.15, 8)
    fixed = RunSpec().validate()
    rules_file.aim(fixed, ValidityRules(stable_windows=4))
    assert fixed.scenario_options.stable_windows is None
    assert options.stability_allowance is None  # no noise floor: only the tolerance on the last windows


def test_with_a_noise_floor_the_engine_aims_for_the_verdicts_allowance():
    spec = RunSpec.from_dict({"scenario_options": {"until_stable": True}}).validate()
    floor = {"spread": 0.15, "window_s": 1.0}
    rules_file.aim(spec, ValidityRules(), floor)
    assert spec.scenario_options.stability_allowance == pytest.approx(0.30)  # max(10%, 2 × 15%)
    assert RunSpec.from_dict(spec.to_dict()).validate().scenario_options.stability_allowance == pytest.approx(0.30)
    quiet = RunSpec.from_dict({"scenario_options": {"until_stable": True}}).validate()
    rules_file.aim(quiet, ValidityRules(stability_tolerance=0.2), {"spread": 0.03})
    assert quiet.scenario_options.stability_allowance == pytest.approx(0.2)  # the tolerance is the larger


# ---- The summary: judged by the rules given, on the windows an until-stable run took
def _steady(n=3000, step=1_000_000):
    latency = np.full(n, 500_000, dtype=np.int64)
    latency[::2] = 520_000
    return latency, np.arange(n, dtype=np.int64) * step


def test_the_summary_stores_the_rules_it_was_judged_by():
    latency, t = _steady()
    rules = ValidityRules(min_count=5000)
    summary = summarize(latency, {"measured_s": 3.0}, None, 1, t_ns=t, rules=rules)
    assert summary["validity"]["rules"]["min_count"] == 5000
    assert any(r["rule"] == "min_count" for r in summary["invalid_reasons"])
    assert summary["until_stable"] is None


def test_an_until_stable_run_is_judged_on_the_windows_it_took():
    latency, t = _steady(n=2600)  # 2.6 s: a 2-s run that took 13 windows of 0.2 s
    result = {"measured_s": 2.6, "until_stable": {
        "windows": 13, "base_windows": 10, "added_windows": 3, "window_s": 0.2, "stable": True, "spread": 0.04,
        "tolerance": 0.1, "compared": 3, "medians_ms": [0.5, 0.52, 0.5], "cap_s": 8.0, "ended": "stable"}}
    summary = summarize(latency, result, None, 1, t_ns=t)
    assert len(summary["validity"]["windows"]) == 13
    assert summary["validity"]["rules"]["windows"] == 10  # the rules as given; the cut follows the run
    assert summary["until_stable"]["text"] == "stable after 13 windows (0.2 s each), spread 4% (tolerance 10%)"
    assert "until_stable" not in summary["scenario"]
    assert any(note.startswith("measured until stable: stable after 13 windows") for note in summary["notes"])


def test_the_until_stable_texts():
    capped = {"windows": 40, "window_s": 0.5, "stable": False, "spread": 0.18, "tolerance": 0.1, "compared": 3,
              "cap_s": 20.0, "ended": "cap"}
    assert until_stable.text(capped) == ("not stable after the 20 s cap (40 windows (0.5 s each)), spread 18% over "
                                         "the last 3 (tolerance 10%)")
    stopped = {**capped, "ended": "cancelled", "spread": None}
    assert until_stable.text(stopped).startswith("stopped before it was stable (40 windows")
    assert "spread not available" in until_stable.text(stopped)
    assert until_stable.block({"until_stable": "garbage"}) is None


# ---- Recovery recomputes with the stored rules
def test_an_interrupted_run_is_summarised_by_the_rules_it_stored(tmp_path):
    db = tmp_path / "history.db"
    latency, t = _steady(n=700, step=4_000_000)
    store = HistoryStore(db)
    run_id = store.create_run({"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1,
                               "scenario": "single-stream"})
    strict = rules_file.RulesInForce(ValidityRules(min_count=10_000, percentiles=(50, 90)))
    store.set_environment(run_id, {"validity_rules": strict.to_dict()})
    store.add_latencies(run_id, t, latency)
    store.commit()
    store._abandon()
    with HistoryStore(db) as reopened:
        summary = reopened.get_run(run_id)["summary"]
    assert summary["validity"]["rules"]["min_count"] == 10_000
    assert summary["validity"]["rules"]["percentiles"] == [50, 90]
    assert any(reason["rule"] == "min_count" for reason in summary["invalid_reasons"])


# ---- The command line
def test_rules_show_json_says_where_each_rule_came_from(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    option = tmp_path / "mine.toml"
    option.write_text("min_duration_s = 4\n")
    assert main(["rules", "show", "--json", "--rules", str(option)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["schema"] == "labconsole.rules/1"
    assert shown["rules"]["min_duration_s"] == 4.0 and shown["sources"]["min_duration_s"] == "--rules"
    assert shown["sources"]["stability_tolerance"] == "default"
    assert shown["lab_file"] == str(tmp_path / "labconsole" / "rules.toml")
    assert main(["rules", "show"]) == 0
    text = capsys.readouterr().out
    assert "not present: defaults" in text and "stability_tolerance" in text


@pytest.mark.parametrize("command", [["run"], ["sweep", "--batch", "1,2"], ["analyze"]])
def test_a_bad_rules_file_stops_a_command_before_it_runs(tmp_path, capsys, command):
    bad = tmp_path / "bad.toml"
    bad.write_text("windows = 1\n")
    db = tmp_path / "history.db"
    assert main([*command, "--rules", str(bad), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "windows = 1" in err and "from 2 to 10000" in err and str(bad) in err
    assert not db.exists()


# ---- What people read: the CLI line, the Markdown summary, the report
def test_describe_says_which_file_set_which_rule():
    assert rules_file.describe(rules_file.RulesInForce().to_dict()) == "the default rules"
    block = {"sources": {"min_count": "--rules", "stability_tolerance": "data folder", "windows": "default"},
             "files": ["/lab/rules.toml", "/tmp/strict.toml"]}
    assert rules_file.describe(block) == ("the defaults, with stability_tolerance from the data folder's rules.toml "
                                          "and min_count from --rules strict.toml")
    assert "not stored" in rules_file.describe(None)


def test_the_markdown_summary_says_how_long_it_measured_until_stable():
    from console.analysis.summary_markdown import run_markdown

    latency, t = _steady(n=2600)
    result = {"measured_s": 2.6, "until_stable": {"windows": 13, "window_s": 0.2, "stable": True, "spread": 0.04,
                                                  "tolerance": 0.1, "compared": 3, "ended": "stable"}}
    summary = summarize(latency, result, None, 1, t_ns=t)
    text = run_markdown({"run_id": "ab" * 16, "status": "completed", "summary": summary,
                         "spec": RunSpec().to_dict()})
    assert "**Measured until stable:** stable after 13 windows (0.2 s each), spread 4%" in text


def test_a_report_prints_the_rules_each_run_was_judged_by(tmp_path):
    import sys
    from datetime import datetime, timezone
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gui"))
    import week_history

    from console.history import open_reader
    from console.report import document, gather

    rng = np.random.default_rng(5)
    strict = rules_file.RulesInForce(ValidityRules(stability_tolerance=0.2), {"stability_tolerance": "--rules"},
                                     ("/tmp/strict.toml",)).to_dict()
    with HistoryStore(tmp_path / "h.db") as store:
        run_id = week_history.store_run(store, RunSpec().to_dict(), datetime(2026, 11, 1, tzinfo=timezone.utc),
                                        1.0, rng)
        store.set_environment(run_id, {"validity_rules": strict})
        store.set_summary_field(run_id, "until_stable", {"text": "stable after 12 windows (0.5 s each), spread 5%"})
    with open_reader(tmp_path / "h.db") as reader:
        blocks = document.build(gather(reader, [run_id]))
    table = next(b for b in blocks if b.kind == "table" and b.headers[:2] == ["Run", "Judged by"])
    row = table.rows[0]
    assert row[1] == "the defaults, with stability_tolerance from --rules strict.toml"
    assert "the last 3 of 10 windows within 20%" in row[2] and row[3].startswith("stable after 12 windows")


def test_the_window_starts_until_stable_and_iterations_win_over_it():
    from console.spec.build import fields_by_path, form_field, window_values

    field = form_field(fields_by_path()["scenario_options.until_stable"])
    assert field["default"] is True and field["kind"] == "bool"
    assert form_field(fields_by_path()["batch"])["default"] == 1  # everything else keeps the spec's default
    values = {"iterations": 40, "scenario_options.until_stable": True, "scenario_options.max_duration_s": 9.0}
    assert window_values(values) == {"iterations": 40}
    timed = {"iterations": None, "scenario_options.until_stable": True}
    assert window_values(timed) == timed


def test_the_until_stable_text_states_the_typical_spread_against_the_allowance_when_aimed_for():
    found = {"windows": 10, "window_s": 0.5, "stable": True, "spread": 0.19, "tolerance": 0.1, "compared": 3,
             "typical_spread": 0.12, "allowance": 0.24, "ended": "stable", "base_windows": 10, "added_windows": 0}
    text = until_stable.text(found)
    assert text.startswith("stable after 10 windows (0.5 s each), typical spread of 3 windows in a row 12% "
                           "(allowed 24%")
    assert text.endswith("last 3: 19%")
    capped = {**found, "stable": False, "ended": "cap", "cap_s": 20.0, "windows": 40, "typical_spread": 0.4}
    assert "not stable after the 20 s cap (40 windows (0.5 s each)), typical spread of 3 windows in a row 40%" \
        in until_stable.text(capped)
    assert until_stable.extended_from(found) is None  # not extended: the drift test covers the whole run
    assert until_stable.extended_from({**found, "windows": 14, "added_windows": 4}) == 10
    assert "typical spread 12% (allowed 24%)" in until_stable.progress_text(
        {"windows": 12, "spread": 0.19, "typical_spread": 0.12, "allowance": 0.24, "cap_s": 20})
