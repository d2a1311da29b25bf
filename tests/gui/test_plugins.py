"""Plug-ins own their options: a backend and a scenario registered here, from inside the test, with no other
file edited, show up on every surface — `--help`, the run form, sweep validation and About."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

import pytest

from console.about import version_text
from console.cli import build_parser
from console.spec.build import build_spec
from console.sweep import SweepGrid, expand
from console.ui.app import build_main_window
from engines import backends, scenarios
from engines.backends.info import BackendInfo
from engines.options import option
from engines.scenarios.base import NoOptions, ScenarioInfo


@dataclass
class KnobOptions:
    knob: int = option(3, flag="--fake-knob", maximum=10, label="Knob", help="fakeengine: how hard to turn the knob")


@dataclass
class BurstOptions(NoOptions):
    burst: int | None = option(None, flag="--burst", metavar="N", label="Burst size",
                               help="burst: queries fired at once")


@pytest.fixture
def throwaway_plugins():
    backend = BackendInfo(name="fakeengine", label="Fake Engine", module="tests.nowhere", options=KnobOptions,
                          precisions={"cpu": ("fp32", "fp8")}, distributions=("pytest",))
    scenario = ScenarioInfo("burst", "Burst", "tests.nowhere", BurstOptions, summary="queries in bursts")
    backends.register(backend)
    scenarios.register(scenario)
    yield backend, scenario
    backends.unregister("fakeengine")
    scenarios.unregister("burst")


def _run_help() -> str:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices["run"].format_help() + action.choices["sweep"].format_help()


def test_flags_and_help_come_from_the_plugins(throwaway_plugins):
    text = _run_help()
    assert "--fake-knob" in text and "how hard to turn the knob" in text and "Fake Engine options" in text
    assert "--burst" in text and "queries fired at once" in text
    assert "fakeengine" in text and "| burst" in text
    assert "fp8" in text  # a precision only the new backend offers
    spec = build_spec({"engine": "fakeengine", "fakeengine.knob": 7, "scenario": "burst",
                       "scenario_options.burst": 4, "precision": "fp8"})
    assert spec.options_for("fakeengine").knob == 7 and spec.scenario_options.burst == 4


def test_about_lists_the_new_engine(throwaway_plugins):
    assert "Fake Engine " in version_text() and "Fake Engine not installed" not in version_text()


def test_sweep_validation_knows_the_new_engine_and_its_precision(throwaway_plugins):
    targets = [{"id": "cpu", "available": True, "engine_details": {
        "torch": {"available": True, "precisions": ["fp32"]},
        "fakeengine": {"available": True, "precisions": ["fp32", "fp8"]}}}]
    expansion = expand({"model": "mlp", "scenario": "burst", "engine_options": {"fakeengine": {"knob": 9}}},
                       SweepGrid.parse(engine="torch,fakeengine", precision="fp32,fp8"), targets=targets)
    runnable = {(p["spec"]["engine"], p["spec"]["precision"]) for p in expansion.points}
    assert runnable == {("torch", "fp32"), ("fakeengine", "fp32"), ("fakeengine", "fp8")}
    assert [p["point"] for p in expansion.impossible] == [{"engine": "torch", "precision": "fp8"}]
    fake = next(p for p in expansion.points if p["spec"]["engine"] == "fakeengine")
    assert fake["spec"]["engine_options"]["fakeengine"] == {"knob": 9}


def test_the_run_form_offers_the_new_engine_scenario_and_their_options(qtbot, tmp_path, throwaway_plugins):
    window = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(window)
    form = window.run_page.form
    assert form.combo("engine").findData("fakeengine") >= 0
    assert form.combo("scenario").findData("burst") >= 0
    window._set_targets([{"id": "cpu", "name": "CPU", "kind": "cpu", "available": True, "reason": "",
                          "engine_details": {"fakeengine": {"available": True, "precisions": ["fp32", "fp8"]}}}])
    form.set_values({"engine": "fakeengine", "scenario": "burst"})
    assert form.values()["fakeengine.knob"] == 3
    assert form.scenario_section.paths() == ["scenario_options.burst"]
    assert form.combo("precision").findData("fp8") >= 0
    form.set_values({"fakeengine.knob": 8, "scenario_options.burst": 5, "precision": "fp8"})
    values = form.values()
    spec = build_spec({k: v for k, v in values.items() if k != "model"} | {"model": "mlp"})
    assert dataclasses.asdict(spec.options_for("fakeengine")) == {"knob": 8}
    assert spec.scenario_options.burst == 5 and spec.precision == "fp8"
