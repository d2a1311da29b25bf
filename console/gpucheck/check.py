"""Run the gpu-check steps in order, within one time budget, and build its JSON document.

Order matters: the targets step finds the CUDA targets the run, card and collectives steps use; NVML's own
account of the GPUs (probe) is what targets, telemetry and topology are checked against. A step that raises
anything but Failed is a fault of the check itself: it is recorded as a failed step with the exception, and the
remaining steps still run.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

from console.gpucheck import steps
from console.gpucheck.steps import FAIL, PASS, SKIPPED, Completed, Context, Failed

BUDGET_S = 480.0  # the whole check on an 8-GPU box: under 8 minutes
STEPS: tuple[tuple[str, Callable[[Context], tuple[str, str, dict[str, Any]]]], ...] = (
    ("targets", steps.targets),
    ("nvml-telemetry", steps.telemetry),
    ("run-torch", lambda ctx: steps.engine_run(ctx, "torch")),
    ("run-onnxruntime", lambda ctx: steps.engine_run(ctx, "onnxruntime")),
    ("machine-card", steps.card),
    ("topology", steps.topology),
    ("nccl-collectives", steps.collectives),
)
DISTRIBUTIONS = ("lab-console", "torch", "onnxruntime", "onnxruntime-gpu", "nvidia-ml-py", "ray")


# ---- Public API
def run_check(runner: steps.Runner, nvidia: dict[str, Any], *, db: str, workdir: str, quick: bool = False,
              budget_s: float = BUDGET_S, on_step: Callable[[dict[str, Any]], None] | None = None,
              clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Every step, in order; the document {"machine", "versions", "budget_s", "steps", "summary"}."""
    started = clock()
    ctx = Context(runner=runner, db=db, workdir=workdir, nvidia=nvidia, quick=quick, deadline=started + budget_s,
                  clock=clock)
    records = []
    for name, step in STEPS:
        ctx.commands = []
        t0 = clock()
        try:
            status, reason, figures = step(ctx)
        except Failed as exc:
            status, reason, figures = FAIL, str(exc), {}
        except Exception as exc:  # noqa: BLE001 — a fault in the check: that step fails, the others still run
            status, reason, figures = FAIL, f"gpu-check error in this step: {type(exc).__name__}: {exc}", {}
        record = {"step": name, "status": status, "reason": reason, "figures": figures,
                  "seconds": round(clock() - t0, 2), "commands": ctx.commands}
        records.append(record)
        if on_step:
            on_step(record)
    return {"machine": machine(nvidia), "versions": versions(), "budget_s": budget_s,
            "quick": quick, "steps": records, "summary": summarize(records, clock() - started, budget_s)}


def summarize(records: list[dict[str, Any]], seconds: float, budget_s: float) -> dict[str, Any]:
    counts = {status: sum(r["status"] == status for r in records) for status in (PASS, FAIL, SKIPPED)}
    if counts[FAIL]:
        result = FAIL
    elif counts[PASS]:
        result = PASS
    else:
        result = SKIPPED
    return {**counts, "result": result, "exit_code": 1 if counts[FAIL] else 0, "seconds": round(seconds, 2),
            "within_budget": seconds <= budget_s}


def machine(nvidia: dict[str, Any]) -> dict[str, Any]:
    from console.history import host

    row = host.describe()
    return {"host": row["hostname"], "os": row["os"], "cpu": row["cpu"], "python": row["python"],
            "cpus": os.cpu_count(), "nvidia": nvidia}


def versions() -> dict[str, str | None]:
    """Installed package versions from their metadata (no import: torch stays out of this process)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def cli_runner(env: dict[str, str] | None = None) -> steps.Runner:
    """The real runner: `labconsole ARGS` as a child process (this interpreter with -m console, or the bundle's
    own executable), in its own session so a time-out (or Ctrl-C here) kills its workers too."""
    base = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "console"]

    def run(argv: list[str], timeout_s: float) -> Completed:
        t0 = time.monotonic()
        proc = subprocess.Popen([*base, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
            return Completed(proc.returncode, out, err, time.monotonic() - t0)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                out, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:  # a grandchild that left the group still holds the pipes
                proc.kill()
                out, err = "", ""
            return Completed(None, out, err, time.monotonic() - t0, timed_out=True)
        except BaseException:  # Ctrl-C: its own session does not hear the terminal's signal, so end it here
            _kill_group(proc)
            proc.wait()
            raise

    return run


# ---- Private API
def _kill_group(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and the workers it spawned, not only the command
    except ProcessLookupError:
        pass
