"""The worker side of a data-parallel run: plan the ranks, start them, turn what they send into the run's events.

`run_distributed(spec, emit, cancelled)` is what engines.worker.run_spec calls for a spec with `torch.ranks`:
the events are the ones every run emits (phase loading → loaded → phase warmup → phase measuring → latencies →
result | error), so the history, compare, sweep and analyze treat a DDP run like any other. A measured step's
latency is the global step time, the slowest rank's step_s, emitted once every rank has reported that step;
its t_ns is rank 0's step start (perf_counter_ns: the same clock in every process of this machine) or, across a
Ray cluster, the driver's clock when the step arrived. The result carries the DDP block (contract section 4):
each rank's step record, the all-reduce probe, the breakdown (engines.ddp.breakdown) and the prediction
(engines.ddp.predict). Runs in the worker; imports no torch itself (the ranks do).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

from engines import protocol
from engines.collectives.formulas import bandwidths
from engines.ddp.plan import STEP_KEYS, plan_for
from engines.spec import RunSpec

KEEP_STEPS = 256  # each rank's last steps kept per key in the stored block

__all__ = ["run_distributed", "probe_rows"]


class _Cancelled(Exception):
    """Raised from inside the watcher to end every rank when the user cancels."""


# ---- Public API
def run_distributed(spec: RunSpec, emit: Callable[[dict[str, Any]], None], cancelled: Callable[[], bool]) -> None:
    """Run the validated `spec` as DDP ranks, emitting the run's events; never raises for a failed run."""
    emit(protocol.make("phase", phase="loading", t_ns=time.perf_counter_ns()))
    try:
        plan = plan_for(spec, _worker_cores())
    except RuntimeError as exc:
        emit(protocol.make("error", kind="spec", message=f"torch.ranks: {exc}", traceback=""))
        return
    try:
        run_ranks = _launcher(plan)
    except ImportError as exc:
        emit(protocol.make("error", kind="load", message=f"cannot start ranks on {plan['placement']}: {exc}",
                           traceback=traceback.format_exc()))
        return
    if plan["profile_iterations"] and plan["placement"] == "local":
        handle, plan["trace_path"] = tempfile.mkstemp(prefix="labconsole-trace-", suffix=".json")
        os.close(handle)
    run = _Run(plan, emit, cancelled)
    try:
        outputs = run_ranks(plan, run.progress, run.on_message)
    except _Cancelled:
        _remove(plan["trace_path"])
        emit(protocol.make("phase", phase="finishing", t_ns=time.perf_counter_ns()))
        emit(protocol.make("result", cancelled=True, **run.result(None)))
        return
    except Exception as exc:  # noqa: BLE001 — a rank's death, hang or error fails the run with its cause
        _remove(plan["trace_path"])  # no profile event will name it
        kind = "runtime" if run.loaded else "load"
        context = f"{spec.model} failed while running on {plan['ranks']} ranks" if run.loaded else \
            f"could not start {plan['ranks']} ranks of {spec.model} on {spec.engine}/{spec.target}"
        emit(protocol.make("error", kind=kind, message=f"{context}: {exc}", traceback=traceback.format_exc()))
        return
    run.flush_latencies(final=True)
    if outputs[0].get("profile") is not None:
        emit(protocol.make("profile", **_profile_fields(outputs[0]["profile"])))
    else:
        _remove(plan["trace_path"])
    emit(protocol.make("phase", phase="finishing", t_ns=time.perf_counter_ns()))
    emit(protocol.make("result", cancelled=bool(cancelled()), **run.result(outputs)))


def probe_rows(times_by_rank: list[dict[str, list[float]]], ranks: int) -> list[dict[str, Any]]:
    """Collectives rows (size_bytes, time_us, algbw_gbs, busbw_gbs, trials, time_us_spread) from every rank's
    all-reduce trial times per size: a trial's time is the slowest rank's (nccl-tests -a 3), the row's the
    median over trials, the bandwidths exactly as nccl-tests computes them (engines.collectives.formulas)."""
    rows = []
    sizes = sorted({int(size) for times in times_by_rank for size in times}, key=int)
    for size in sizes:
        per_rank = [times.get(str(size)) or [] for times in times_by_rank]
        trials = min(len(t) for t in per_rank)
        if not trials:
            continue
        per_trial = [max(t[i] for t in per_rank) for i in range(trials)]
        seconds = statistics.median(per_trial)
        count = max(1, size // 4)
        algbw, busbw = bandwidths("all-reduce", count, 4, seconds, ranks)
        us = [t * 1e6 for t in per_trial]
        rows.append({"size_bytes": count * 4, "time_us": seconds * 1e6, "algbw_gbs": algbw, "busbw_gbs": busbw,
                     "trials": trials, "time_us_spread": {"trials": trials, "min": min(us), "max": max(us)}})
    return rows


# ---- Private API
class _Run:
    """What the ranks have said so far, and the events it has become."""

    def __init__(self, plan: dict[str, Any], emit: Callable[[dict[str, Any]], None], cancelled: Callable[[], bool]):
        self.plan, self.emit, self.cancelled = plan, emit, cancelled
        self.ranks = int(plan["ranks"])
        self.started = time.perf_counter()
        self.ready: dict[int, dict[str, Any]] = {}
        self.loaded = False
        self.held: list[dict[str, Any]] = []  # rank 0's phase messages that arrive before every rank is ready
        self.counts: dict[str, Any] = {}
        self.steps: list[dict[str, list]] = [{key: [] for key in ("t0_ns", *STEP_KEYS)} for _ in range(self.ranks)]
        self.emitted = 0
        self.measure_began: float | None = None

    def progress(self, update: dict[str, Any]) -> None:
        """The launcher's text updates (rank pids, rendezvous): the events carry the facts, so nothing to do.
        Never raises: the launcher calls it before it watches its ranks."""

    def on_message(self, tag: str, rank: int, payload: Any) -> None:
        if self.cancelled():
            raise _Cancelled()
        if tag == "ready":
            self.ready[rank] = payload
            if len(self.ready) == self.ranks and not self.loaded:
                self._loaded()
                for held in self.held:
                    self._phase(held)
                self.held = []
        elif tag == "phase":
            if self.loaded:
                self._phase(payload)
            else:
                self.held.append(payload)
        elif tag == "progress" and rank == 0 and self.loaded:
            of = max(1, int(payload["of"]))
            self.emit(protocol.make("progress", phase="warmup", fraction=min(1.0, payload["step"] / of),
                                    iterations=int(payload["step"]), elapsed_s=time.perf_counter() - self.started))
        elif tag == "steps":
            mine = self.steps[rank]
            if int(payload["first"]) != len(mine["step_s"]):
                raise RuntimeError(f"rank {rank} sent steps from {payload['first']} after {len(mine['step_s'])}: "
                                   "its messages were lost or reordered")
            for key in mine:
                mine[key].extend(payload[key])
            self.flush_latencies()

    def flush_latencies(self, final: bool = False) -> None:
        """Latencies for every step all ranks have now reported (global step time = the slowest rank's)."""
        done = min(len(s["step_s"]) for s in self.steps)
        if done <= self.emitted:
            return
        new = range(self.emitted, done)
        latency_ns = [int(max(s["step_s"][i] for s in self.steps) * 1e9) for i in new]
        if self.plan["placement"] == "local":
            t_ns = [int(self.steps[0]["t0_ns"][i]) for i in new]
        else:  # other machines' clocks are not ours: the steps end now, back to back
            now, t_ns, end = time.perf_counter_ns(), [], 0
            for latency in reversed(latency_ns):
                end += latency
                t_ns.append(now - end)
            t_ns.reverse()
        self.emitted = done
        self.emit(protocol.make("latencies", t_ns=t_ns, latency_ns=latency_ns))
        total = int(self.counts.get("measured_steps") or done)
        self.emit(protocol.make("progress", phase="measuring", fraction=min(1.0, done / max(1, total)),
                                iterations=done, elapsed_s=time.perf_counter() - (self.measure_began or self.started)))

    def result(self, outputs: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The result event's fields; `outputs` None when the run was cancelled (only streamed steps are known)."""
        plan = self.plan
        measured = min((len(s["step_s"]) for s in self.steps), default=0)
        first = self.steps[0]
        if outputs:
            measured_s = float(outputs[0]["measured_s"])
        elif measured:
            measured_s = (first["t0_ns"][measured - 1] - first["t0_ns"][0]) / 1e9 + first["step_s"][measured - 1]
        else:
            measured_s = 0.0
        samples = measured * int(plan["global_batch"])
        return {
            "iterations": measured, "measured_s": measured_s,
            "warmup_iterations": int(plan["probe_steps"]) + int(self.counts.get("warmup_steps") or 0),
            "first_inference_ms": self.counts.get("first_step_ms"), "batch": int(plan["global_batch"]),
            "samples": samples, "samples_per_s": samples / measured_s if measured_s > 0 else None,
            "scenario_note": (f"{plan['ranks']} data-parallel rank(s); a latency is one optimizer step of all ranks "
                              f"(the slowest rank's step time); samples/s counts the global batch of "
                              f"{plan['global_batch']}; first_inference_ms is rank 0's first (probe) step"),
            "ddp": self._block(outputs, measured),
        }

    # ---- Private API
    def _loaded(self) -> None:
        self.loaded = True
        first = self.ready[0]
        details = dict(first.get("details") or {})
        details.update({"device": first["device"], "threads": first.get("threads"),
                        "data": first.get("data_method"), "ddp": self._facts()})
        self.emit(protocol.make("loaded", load_s=time.perf_counter() - self.started, params=int(first["params"]),
                                model_bytes=int(first["model_bytes"]), versions={"torch": first.get("torch", "")},
                                details=details))

    def _facts(self) -> dict[str, Any]:
        plan, ready = self.plan, [self.ready[r] for r in range(self.ranks)]
        return {"ranks": self.ranks, "backend": plan["backend"], "placement": plan["placement"],
                "rank_hosts": [r["host"] for r in ready], "rank_devices": [r["device"] for r in ready],
                "rank_pids": [r["pid"] for r in ready], "rank_cores": [r["cores"] for r in ready],
                "per_rank_batch": plan["per_rank_batch"], "global_batch": plan["global_batch"],
                "micro_batches": plan["micro_batches"]}

    def _phase(self, payload: dict[str, Any]) -> None:
        if payload["phase"] == "warmup":
            self.counts.update(payload)
            self.emit(protocol.make("phase", phase="warmup", t_ns=time.perf_counter_ns()))
        elif payload["phase"] == "profiling":
            self.emit(protocol.make("phase", phase="profiling", t_ns=int(payload.get("t_ns") or
                                                                        time.perf_counter_ns())))
        elif payload["phase"] == "measuring":
            self.measure_began = time.perf_counter()
            self.emit(protocol.make("phase", phase="measuring", t_ns=int(payload.get("t_ns") or
                                                                        time.perf_counter_ns())))

    def _block(self, outputs: list[dict[str, Any]] | None, measured: int) -> dict[str, Any]:
        plan = self.plan
        hosts = [self.ready.get(r, {}).get("host") for r in range(self.ranks)]
        steps_by_rank = [{key: list(s[key][:measured]) for key in STEP_KEYS} for s in self.steps]
        ranks_out = []
        for rank in range(self.ranks):
            facts = self.ready.get(rank, {})
            out = outputs[rank] if outputs else {}
            ranks_out.append({"rank": rank, "host": facts.get("host"), "device": facts.get("device"),
                              "cores": facts.get("cores"), "pid": facts.get("pid"),
                              "steps_total": out.get("steps_total"),
                              "steps": {key: values[-KEEP_STEPS:] for key, values in steps_by_rank[rank].items()}})
        bucket_bytes = list(outputs[0]["bucket_bytes"]) if outputs else []
        grad_bytes = int((self.ready.get(0) or {}).get("grad_bytes") or 0)
        probe = None
        if outputs and self.ranks > 1:
            probe = {"rows": probe_rows([o.get("probe_times") or {} for o in outputs], self.ranks),
                     "method": (f"after measuring, all-reduce of float32 buffers at each distinct bucket size: a "
                                f"barrier, {plan['probe']['warmup']} warm-up operations, {plan['probe']['trials']} "
                                f"trials of {plan['probe']['iters']} operations back to back (time per operation "
                                "= trial / operations; a trial's time is the slowest rank's); time_us is the median "
                                "trial; algbw and busbw as nccl-tests")}
        breakdown, notes = None, []
        if measured:
            try:
                from engines.ddp.breakdown import summarize

                breakdown = summarize(steps_by_rank, hosts=hosts, scaling=plan["scaling"],
                                      global_batch=int(plan["global_batch"]))
            except (ImportError, ValueError) as exc:
                notes.append(f"breakdown not available ({type(exc).__name__}: {exc})")
        prediction = None
        if probe and probe["rows"] and bucket_bytes:
            try:
                from engines.ddp.predict import allreduce

                measured_comm = ((breakdown or {}).get("comm") or {}).get("allreduce_s")
                prediction = allreduce(bucket_bytes, self.ranks, probe["rows"], source="probe in this run",
                                       measured_s=measured_comm)
            except (ImportError, ValueError) as exc:
                notes.append(f"prediction not available ({type(exc).__name__}: {exc})")
        elif self.ranks > 1:
            notes.append("prediction not available (no all-reduce probe: the run ended before it)")
        return {
            "schema": 1, "ranks": self.ranks, "backend": plan["backend"], "placement": plan["placement"],
            "scaling": plan["scaling"], "global_batch": plan["global_batch"], "per_rank_batch": plan["per_rank_batch"],
            "grad_accum": plan["micro_batches"], "bucket_mb": plan["bucket_mb"], "precision": plan["precision"],
            "grad_bytes": grad_bytes, "bucket_bytes": bucket_bytes, "injected": plan["inject"],
            "ranks_out": ranks_out, "probe": probe, "breakdown": breakdown, "prediction": prediction,
            "method": _method(plan, (self.ready.get(0) or {}).get("data_method")), "notes": notes,
        }


def _method(plan: dict[str, Any], data: str | None) -> str:
    where = "local processes (spawn), each pinned to an equal share of the worker's cores" \
        if plan["placement"] == "local" else "Ray actors placed by a placement group"
    group = "no process group and no DDP wrapper (one rank)" if plan["ranks"] == 1 else \
        f"torch DistributedDataParallel over {plan['backend']} (bucket_cap_mb {plan['bucket_mb']:g})"
    return (f"{plan['ranks']} rank(s) as {where}; {group}; per rank, each part of a step timed with perf_counter "
            "(a device synchronize after forward, backward and the optimizer on CUDA): data wait, forward (the "
            "injected sleep inside it), backward, backward compute = backward start to the last gradient bucket "
            "handed to the all-reduce (a comm hook wrapping DDP's default allreduce_hook, stamped at launch and when "
            "its future completes: host-side stamps, which on NCCL mark the host's view, not the kernel's), "
            "comm busy = the union of the buckets' intervals, exposed = the part of it after compute ended; "
            f"step counts agreed from {plan['probe_steps']} probe steps timed on rank 0; data: {data or 'n/a'}")


def _profile_fields(event: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's profile as the protocol's event fields: an empty trace file is dropped (no trace), no counters."""
    event = dict(event)
    path = event.get("trace_path")
    if path and (not os.path.exists(path) or not os.path.getsize(path)):
        _remove(path)
        event["trace_path"] = None
    event.setdefault("counters", None)
    event["notes"] = [*event.get("notes", []), "hardware counters: not read for DDP ranks"]
    return event


def _remove(path: str | None) -> None:
    if not path:
        return
    with contextlib.suppress(OSError):
        os.unlink(path)


def _launcher(plan: dict[str, Any]) -> Callable[..., list[dict[str, Any]]]:
    """run_ranks(plan, progress, on_message) of the placement: local processes, or Ray actors (ray_launch)."""
    if plan["placement"] == "ray":
        from engines.ddp.ray_launch import run_ranks as on_ray

        return on_ray
    from engines.ddp.launch import run_ranks

    return run_ranks


def _worker_cores() -> list[int] | None:
    from engines import cores

    try:
        return cores.allowed(0)
    except cores.AffinityUnavailable:
        return None
