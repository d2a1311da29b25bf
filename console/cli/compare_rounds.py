"""`labconsole compare A B --interleave`: re-run both runs' stored specs here in alternating rounds and pool them.

The judging (order A B B A …, when to stop, the cap) is console.analysis.interleave; this module only runs a
round: the stored spec of one side, measured for --round-duration seconds (a stored --iterations or
--until-stable is dropped for the rounds: pairs must measure alike), through RunSession like `labconsole run` (so
each round is an ordinary run in the history, named "interleave A/B … round k"), and hands its latencies back.
Telemetry is off in the rounds: a sampler would compete for the cores the rounds share.

A stored spec never grants trust in its model's code (as `run --spec`): a spec with trust_code needs
--trust-code here too.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
from typing import Any

import numpy as np

ROUND_S = 2.0  # default measured seconds per round: short rounds, many of them, put the machine's changes on both sides


class RoundFailed(RuntimeError):
    """A round did not complete: the comparison stops, and says which round and why."""


def round_specs(args: argparse.Namespace, runs: list[dict[str, Any]]) -> dict[str, Any] | str:
    """{"A": RunSpec, "B": RunSpec} for the rounds, or the problem (for `fail`) when a stored spec cannot run."""
    from engines.spec import RunSpec, SpecError

    specs: dict[str, Any] = {}
    for side, run in zip("AB", runs, strict=True):
        stored = run.get("spec")
        if not isinstance(stored, dict):
            return f"--interleave: run {side} ({run['run_id'][:8]}) stored no spec to run again"
        try:
            spec = RunSpec.from_dict(dict(stored))
        except (SpecError, TypeError, ValueError) as exc:
            return f"--interleave: run {side}'s stored spec is not one this build reads ({exc})"
        if spec.trust_code and not args.trust_code:
            return (f"--interleave: run {side} ran {spec.model} trusting its code (trust_code), and a stored spec "
                    "never grants that: add --trust-code if you trust it")
        options = spec.scenario_options  # rounds are fixed-length, so pairs measure alike: no until-stable
        if dataclasses.is_dataclass(options) and getattr(options, "until_stable", False):
            options = dataclasses.replace(options, until_stable=False, max_duration_s=None)
        spec = dataclasses.replace(spec, duration_s=float(args.round_duration), iterations=None,
                                   scenario_options=options,
                                   name=f"interleave {runs[0]['run_id'][:8]}/{runs[1]['run_id'][:8]} {side}")
        try:
            specs[side] = spec.validate()
        except SpecError as exc:
            return f"--interleave: run {side}'s spec with --round-duration {args.round_duration:g}: {exc}"
    return specs


def runner(specs: dict[str, Any], writer: Any, pool: Any = None, partition: Any = None, on_session: Any = None):
    """run_round(side, k) for console.analysis.interleave: one RunSession of that side's spec, its latencies in
    ms. Ctrl-C cancels the round running and stops the comparison (RoundFailed). `pool` (a
    console.run.worker_pool.WorkerPool) hands each round a worker spawned ahead, so rounds skip the engine's import;
    `partition` keeps the console off the rounds' cores, as the run being confirmed was (`analyze --confirm`).
    Off the main thread (the window's confirmation) Ctrl-C is not the caller's: `on_session(session)` hears each
    round's RunSession as it starts, so the caller can cancel it."""
    from console.run.session import RunSession

    def run_round(side: str, k: int) -> np.ndarray:
        spec = dataclasses.replace(specs[side], name=f"{specs[side].name} round {k + 1}")
        chunks: list[np.ndarray] = []

        def listen(event: dict[str, Any]) -> None:
            if event.get("type") == "latencies":
                chunks.append(np.asarray(event["latency_ns"], dtype=np.int64))

        session = RunSession(spec, writer, listener=listen, telemetry_hz=None, pool=pool, partition=partition)
        main = threading.current_thread() is threading.main_thread()  # signal handlers belong to the main thread
        previous = signal.signal(signal.SIGINT, lambda *_: session.cancel()) if main else None
        if on_session is not None:
            on_session(session)
        try:
            session.start()
            record = session.wait() or {}
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        if record.get("status") != "completed":
            raise RoundFailed(f"round {k + 1} of {side} ({record.get('run_id', '?')[:8]}) "
                              f"{record.get('status', 'did not finish')}: {record.get('message') or 'no message'}")
        if not chunks:
            raise RoundFailed(f"round {k + 1} of {side} measured no iterations")
        return np.concatenate(chunks) / 1e6

    return run_round


def progress_printer(quiet: bool):
    """Progress on stderr ("round 3 A: 1,204 iterations", each judgement), nothing with --json."""
    def show(event: dict[str, Any]) -> None:
        if quiet:
            return
        if "side" in event:
            print(f"  round {event['round'] + 1} {event['side']}: {event['n']:,} iterations", file=sys.stderr)
        else:
            result = event["result"]
            low, high = result["ci95"]
            print(f"  after {event['rounds']} rounds a side: ratio {result['ratio']:.4f} [{low:.4f}, {high:.4f}], "
                  f"{result['p_label']} = {result['p_value']:.2g} → {result['verdict']}", file=sys.stderr)
    return show
