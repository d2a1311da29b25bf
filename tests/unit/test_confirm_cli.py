"""The CLI side of `analyze --confirm`: the rounds' spec (short, fixed-length, no profile, no until-stable) and the
confirmation stored beside the run's verdict."""

from __future__ import annotations

import argparse

import pytest

from console.cli.analyze_confirm import add_arguments, round_spec, store
from console.history import HistoryStore
from engines.spec import RunSpec


def test_a_round_is_the_analysed_spec_measured_briefly_without_profile_or_until_stable():
    spec = RunSpec(model="mlp", duration_s=5.0, iterations=300, profile_iterations=20, threads=1).validate()
    base = round_spec(spec, "abcd1234")
    assert base.duration_s == 2.0 and base.iterations is None and base.profile_iterations is None
    assert base.name == "confirm abcd1234" and base.threads == 1 and base.model == "mlp"
    assert round_spec(RunSpec(model="mlp", duration_s=0.3).validate(), "").duration_s == 0.3
    stable = RunSpec(model="mlp", scenario_options={"until_stable": True}).validate()
    assert round_spec(stable, "x").scenario_options.until_stable is False


def test_the_confirmation_is_stored_beside_the_verdict(tmp_path):
    db = tmp_path / "history.db"
    verdict = {"class": "compute", "confidence": 0.7, "sentence": "Bound by compute."}
    with HistoryStore(db) as history:
        run_id = history.create_run(RunSpec(model="mlp").to_dict())
        history.finish_run(run_id, "completed", summary={"bottleneck": verdict, "valid": True})
    block = {"outcome": "confirmed", "sentence": "confirmed: compute", "experiments": []}
    assert store(db, run_id, verdict, block) is None
    with HistoryStore(db) as history:
        summary = history.get_run(run_id)["summary"]
    assert summary["bottleneck"] == {**verdict, "confirmation": block} and summary["valid"] is True
    assert "no run" in store(db, "f" * 32, verdict, block)
    assert store(db, None, verdict, block) == "the analysed run has no id: the confirmation was not stored"


def test_the_round_cap_is_a_whole_number_of_at_least_two():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["--confirm", "--confirm-max-rounds", "6"]).confirm_max_rounds == 6
    assert parser.parse_args([]).confirm is False
    for bad in ("1", "two"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--confirm-max-rounds", bad])
