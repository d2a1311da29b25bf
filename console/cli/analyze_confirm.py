"""`labconsole analyze --confirm`: after the analysis run, run the interventions its verdict predicts, interleaved
with the original configuration, and say whether the verdict is confirmed, refuted or undecided.

The planning and judging are console.analysis.confirm's; this module runs the rounds and keeps the answer. Each
round is an ordinary RunSession run of the original (A) or changed (B) spec, measured for a short fixed time
(ROUND_S, or the analysis's own duration when shorter; no profiling, no until-stable, no telemetry: pairs must
measure alike and a sampler would compete for the rounds' cores), on the same console partition as the analysed
run, with a warm worker handed to each round (console.run.worker_pool) so a round does not pay the engine's import.
The rounds are stored in the history as runs named "confirm <run> <intervention> A/B round k". The confirmation
is stored with the analysed run, beside its verdict (summary["bottleneck"]["confirmation"]), so `report` and
the History page read it there.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from console.cli.common import EXIT_FAILED, EXIT_OK

ROUND_S = 2.0  # measured seconds per round, at most: many short rounds put the machine's changes on both sides


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.analysis.confirm import MAX_ROUNDS

    parser.add_argument("--confirm", action="store_true",
                        help="then run the interventions the verdict predicts (more data, twice the ops, twice the "
                             "threads), interleaved with this configuration, and say confirmed, refuted or undecided")
    parser.add_argument("--confirm-max-rounds", metavar="N", type=_rounds, default=MAX_ROUNDS,
                        help=f"with --confirm: at most N interleaved rounds a side per experiment (default {MAX_ROUNDS}; "
                             "≥ 2)")


def confirm(args: argparse.Namespace, spec: Any, record: dict[str, Any], report: dict[str, Any],
            card: dict[str, Any] | None, quiet: bool) -> int:
    """Plan, run and judge; report["confirmation"] gets the block (also stored with the run). EXIT_OK when the
    confirmation ran, whatever it found; EXIT_FAILED when a round failed or the history could not take it."""
    from console.cli.common import console_partition, db_path

    confirmation, problem = confirm_run(db_path(args), spec, record, report.get("bottleneck"), card,
                                        args.confirm_max_rounds, console_partition(args),
                                        None if quiet else _say, None if quiet else _progress)
    report["confirmation"] = confirmation
    if problem:
        print(f"labconsole: error: {problem}", file=sys.stderr)
    return EXIT_FAILED if confirmation["outcome"] == "failed" or problem else EXIT_OK


def confirm_run(db: Any, spec: Any, record: dict[str, Any], verdict: dict[str, Any] | None,
                card: dict[str, Any] | None, max_rounds: int | None = None, partition: Any = None,
                on_text: Callable[[str], None] | None = None,
                on_progress: Callable[[Any, dict[str, Any]], None] | None = None,
                on_session: Callable[[Any], None] | None = None) -> tuple[dict[str, Any], str | None]:
    """Confirm an analysed run's verdict and store the answer with it: (the confirmation block, the problem when
    it could not be stored or the rounds' history not opened; None when all went well). Args-free, so the window
    can call it on a background thread for a run just analysed or one from the history (`record`: the finished
    session record, or a stored run with its `ops`; `spec`: an engines.spec.RunSpec). `on_text` hears the plan
    in a line, `on_progress(planned, event)` each round and look, `on_session` each round's RunSession (to cancel
    it)."""
    from console.analysis.confirm import MAX_ROUNDS, MIN_ROUNDS, plan_for, run_confirmation
    from console.history import HistoryError, HistoryWriter
    from console.run.worker_pool import WorkerPool

    cap = int(max_rounds or MAX_ROUNDS)
    if record.get("status", "completed") != "completed" or not verdict:
        why = "the run did not complete" if record.get("status", "completed") != "completed" else \
            "the run has no verdict (no op table from its profiling phase)"
        return {"outcome": "untestable", "sentence": f"not tested: {why}", "experiments": [], "untestable": []}, None
    the_plan = plan_for(verdict, spec, record, card)
    if on_text is not None:
        on_text(f"  … confirming {verdict['class']}: "
                + ("; ".join(f"{p.axis.name} (predicted {_range(p.tested)}, {p.rival.cls} {_range(p.rival)})"
                             for p in the_plan.experiments) or the_plan.reason or "nothing to run"))
    base = round_spec(spec, str(record.get("run_id") or "")[:8])
    writer = pool = None
    if the_plan.experiments:
        try:
            writer = HistoryWriter.open(db)
        except (HistoryError, OSError) as exc:
            why = f"the history cannot be written for the rounds ({exc})"
            return {"outcome": "failed", "sentence": f"not run: {why}", "failed": why, "experiments": [],
                    "untestable": list(the_plan.untestable)}, why
        pool = WorkerPool(partition)
    try:
        if pool is not None:
            pool.prepare(spec.engine)
        confirmation = run_confirmation(the_plan, round_runners(base, writer, pool, partition, on_session),
                                        min(MIN_ROUNDS, cap), cap, on_progress)
    finally:
        if pool is not None:
            pool.close()
        if writer is not None:
            writer.close()
    confirmation["round_s"] = base.duration_s
    return confirmation, store(db, record.get("run_id"), verdict, confirmation)


def round_spec(spec: Any, run8: str) -> Any:
    """The analysed spec as a round: measured for min(ROUND_S, its duration) seconds, no fixed iteration count, no
    until-stable, no profiling phase."""
    options = spec.scenario_options
    if dataclasses.is_dataclass(options) and getattr(options, "until_stable", False):
        options = dataclasses.replace(options, until_stable=False, max_duration_s=None)
    return dataclasses.replace(spec, duration_s=min(ROUND_S, float(spec.duration_s)), iterations=None,
                               profile_iterations=None, scenario_options=options,
                               name=f"confirm {run8 or spec.model}").validate()


def round_runners(base: Any, writer: Any, pool: Any = None, partition: Any = None, on_session: Any = None):
    """make_runner(planned) for console.analysis.confirm.run_confirmation: the original (`base`, a round_spec)
    as A and the planned change as B, each round a RunSession through console.cli.compare_rounds.runner (a round
    that fails raises RoundFailed, a RuntimeError), each taking the pool's spare, warm or still importing. A threads
    experiment's rounds are watched for other processes' load on the worker's CPUs (console.run.round_load)."""
    from console.cli.compare_rounds import runner

    def make_runner(planned: Any):
        changed = dataclasses.replace(planned.axis.apply(base), name=f"{base.name} {planned.axis.name} B")
        run_round = runner({"A": dataclasses.replace(base, name=f"{base.name} {planned.axis.name} A"),
                            "B": changed}, writer, pool=pool, partition=partition, on_session=on_session)
        if planned.axis.kind != "threads":
            return run_round
        # a second thread's gain is the machine's only while other processes leave its cores idle
        from console.run.round_load import LoadWatched

        confined = getattr(partition, "confined", False)
        return LoadWatched(run_round, list(partition.worker) if confined else None)
    return make_runner


def store(db: Any, run_id: str | None, verdict: dict[str, Any], confirmation: dict[str, Any]) -> str | None:
    """Keep the confirmation beside the run's verdict (summary["bottleneck"]["confirmation"]) in the history at
    `db`; the problem, or None when stored."""
    from console.history import HistoryError, HistoryStore

    if not run_id:
        return "the analysed run has no id: the confirmation was not stored"
    try:
        with HistoryStore(db) as history:
            history.set_summary_field(run_id, "bottleneck", {**verdict, "confirmation": confirmation})
    except HistoryError as exc:
        return f"the confirmation could not be stored with run {run_id[:8]} ({exc})"
    return None


def print_confirmation(confirmation: dict[str, Any]) -> None:
    from console.analysis.confirm import lines

    print()
    for line in lines(confirmation):
        print(f"  {line}")


# ---- Private API
def _progress(planned: Any, event: dict[str, Any]) -> None:
    if "side" in event:
        _say(f"  {planned.axis.name}: round {event['round'] + 1} {event['side']}: {event['n']:,} iterations")
    else:
        low, high = event["result"]["ci95"]
        said = {"yes": "inside", "no": "outside", "undecided": "neither inside nor outside"}[event["answer"]]
        _say(f"  {planned.axis.name}: after {event['rounds']} rounds a side: ×{event['result']['ratio']:.3g} "
             f"[{low:.3g}, {high:.3g}], {said} {planned.tested.cls}'s {_range(planned.tested)}")


def _range(prediction: Any) -> str:
    from console.analysis.confirm.experiment import range_text

    return range_text(prediction.to_dict()["range"])


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--confirm-max-rounds takes a whole number ≥ 2, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"--confirm-max-rounds must be ≥ 2 (a paired interval needs two rounds a "
                                         f"side), got {value}")
    return value
