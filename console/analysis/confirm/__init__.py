"""Confirmation: the console runs the interventions its bottleneck verdict predicts, and says whether the time
per call responded as predicted — confirmed, refuted (and what the data says instead), or undecided at this
machine's noise.

Why: a verdict inferred from one profiled run can be wrong in ways the profile cannot show (a detector called
host-overhead whose time grew 4.4–6.8× with 4× the pixels). The experiment that defines a class settles it:
scale the data, double the ops, double the threads — repeated and interleaved so noise cannot decide it.

The modules, one job each: `footprint` (what a call of a catalog model costs), `axes` (the interventions a spec
allows, and why others cannot be made), `predictions` (each class's predicted ratio range per axis), `plan` (the
experiments that tell the verdict from its runner-up), `experiment` (interleaved rounds until the interval answers
or a cap), `outcome` (the answer and its words). Qt-free and engine-free: rounds are run by a caller-supplied
`make_runner(planned) -> run_round(side, k)` ("A" the original configuration, "B" the changed one; latencies in
ms back): the CLI uses RunSession (console.cli.analyze_confirm), the tests a model of each class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from console.analysis.confirm.axes import Axes, Axis, axes_for
from console.analysis.confirm.experiment import MAX_ROUNDS, MIN_ROUNDS, run_experiment
from console.analysis.confirm.outcome import judge, lines
from console.analysis.confirm.plan import Plan, Planned, plan
from console.analysis.confirm.predictions import Context, Prediction, predict

__all__ = ["Axes", "Axis", "Context", "MAX_ROUNDS", "MIN_ROUNDS", "Plan", "Planned", "Prediction", "axes_for",
           "judge", "lines", "plan", "plan_for", "predict", "run_confirmation"]


def plan_for(verdict: dict[str, Any], spec: Any, record: dict[str, Any] | None = None,
             card: dict[str, Any] | None = None, worker_cores: int | None = None) -> Plan:
    """The plan for an analysed run: its spec's axes, the context from its verdict, op table and card."""
    record = record or {}
    context = Context.from_run(verdict, record.get("ops"), card)
    resident = _resident_bytes(spec)
    if resident is not None:  # the whole model stays cached between calls, or does not: not its largest op alone
        context = dataclasses.replace(context, working_set=resident)
    return plan(verdict, axes_for(spec, record, worker_cores), context)


def _resident_bytes(spec: Any) -> float | None:
    """What a catalog model with several weight matrices touches every call (footprint.Footprint.resident)."""
    from console.analysis.confirm.footprint import footprint

    try:
        from engines import catalog

        cost = footprint(spec.model, catalog.params_for(spec.model, spec.model_params), spec.batch)
    except (KeyError, ValueError, TypeError, AttributeError):
        return None
    return None if cost is None else cost.resident


def run_confirmation(the_plan: Plan, make_runner: Callable[[Planned], Callable[[str, int], Any]],
                     min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS,
                     on_progress: Callable[[Planned, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run every planned experiment, then judge: the confirmation block (console.analysis.confirm.outcome.judge).
    A round that raises RuntimeError (a run that failed or was cancelled) stops the confirmation: the block's
    outcome is then "failed" with the reason, and the experiments finished so far."""
    done: list[dict[str, Any]] = []
    for planned in the_plan.experiments:
        def progress(event: dict[str, Any], planned: Planned = planned) -> None:
            if on_progress is not None:
                on_progress(planned, event)
        try:
            done.append(run_experiment(planned, make_runner(planned), min_rounds, max_rounds, progress))
        except RuntimeError as exc:
            return judge(the_plan, done, failed=f"{planned.axis.name}: {exc}")
    return judge(the_plan, done)
