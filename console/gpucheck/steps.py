"""Each step of `gpu-check`: the command line it runs and how its output is judged.

A step returns (status, reason, figures): "pass", "fail" or "skipped" with the reason in words, and the figures
it read (each from the product's own JSON output, so a figure here is what a user's command printed). A step
raises Failed for a command that did not give a usable answer (exit status, time-out, unreadable JSON).
The judges (`judge_*`) are pure: tests feed them documents of the shapes the commands print.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PASS, FAIL, SKIPPED = "pass", "fail", "skipped"
ENGINES = ("torch", "onnxruntime")
RUN_MODEL, RUN_BATCH = "resnet18", 8  # small, but convolutions: cuDNN (ORT's CUDA provider too), not only GEMMs
TIMEOUTS = {"targets": 120.0, "telemetry": 60.0, "run": 150.0, "card": 300.0, "topology": 60.0,
            "collectives": 240.0}
MIN_STEP_S = 5.0  # less budget than this left: the step is not started
TELEMETRY_METRICS = ("power.avg", "util", "mem.used")  # per GPU: what the brief asks NVML to give
MIN_SAMPLES = 3


@dataclass
class Completed:
    """One finished command: exit status (None when it was killed at its time-out), its output, its seconds."""

    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


Runner = Callable[[list[str], float], Completed]  # labconsole arguments, time-out → Completed


class Failed(Exception):
    """The step failed for the reason in the message."""


@dataclass
class Context:
    """What the steps share: the runner, the fresh history, the probe, what earlier steps found, the budget."""

    runner: Runner
    db: str
    workdir: str
    nvidia: dict[str, Any]
    quick: bool = False
    deadline: float = math.inf  # clock() by which every step must be done
    clock: Callable[[], float] = time.monotonic
    cuda: list[dict[str, Any]] = field(default_factory=list)  # the usable CUDA targets (step targets)
    no_cuda_reason: str = ""
    commands: list[dict[str, Any]] = field(default_factory=list)  # of the current step

    def cli(self, argv: list[str], timeout_s: float, *, history: bool = True) -> Completed:
        """Run `labconsole [--db DB] argv` within what is left of the budget; recorded in `commands`."""
        left = self.deadline - self.clock()
        if left < MIN_STEP_S:
            raise Failed(f"not run: the check's time budget was spent ({max(left, 0):.0f} s left)")
        full = (["--db", self.db] if history else []) + argv
        done = self.runner(full, min(timeout_s, left))
        self.commands.append({"argv": ["labconsole", *full], "rc": done.rc, "seconds": round(done.seconds, 2),
                              "timed_out": done.timed_out})
        return done

    def document(self, done: Completed, what: str, ok_codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
        """The command's JSON document, or Failed saying why there is none."""
        if done.timed_out:
            raise Failed(f"`{what}` did not finish within {done.seconds:.0f} s and was stopped")
        try:
            document = json.loads(done.stdout) if done.stdout.strip() else None
        except ValueError:
            document = None
        if done.rc not in ok_codes or not isinstance(document, dict):
            raise Failed(f"`{what}` exited {done.rc}: {_last_line(done.stderr) or 'no JSON document printed'}")
        return document


# ---- Public API: steps
def targets(ctx: Context) -> tuple[str, str, dict[str, Any]]:
    found = ctx.document(ctx.cli(["targets", "--refresh", "--json"], TIMEOUTS["targets"], history=False),
                         "labconsole targets --json")
    status, reason, figures = judge_targets(found, ctx.nvidia)
    ctx.cuda = [t for t in found.get("targets") or [] if _is_cuda(t) and t.get("available")]
    ctx.no_cuda_reason = "" if ctx.cuda else reason
    return status, reason, figures


def telemetry(ctx: Context) -> tuple[str, str, dict[str, Any]]:
    if not ctx.nvidia.get("gpus"):
        return SKIPPED, _no_gpu(ctx), {}
    done = ctx.cli(["telemetry", "--source", "nvml", "--seconds", "2", "--rate", "5", "--json"],
                   TIMEOUTS["telemetry"], history=False)
    return judge_telemetry(ctx.document(done, "labconsole telemetry --source nvml --json"), ctx.nvidia)


def engine_run(ctx: Context, engine: str) -> tuple[str, str, dict[str, Any]]:
    if not ctx.cuda:
        return SKIPPED, _no_cuda(ctx), {}
    target = ctx.cuda[0]
    if engine not in (target.get("engines") or []):
        why = ((target.get("engine_details") or {}).get(engine) or {}).get("reason") or "not listed as usable"
        return FAIL, f"{engine} cannot run on {target['id']}: {why}", {}
    argv = ["run", "--engine", engine, "--target", target["id"], "--model", RUN_MODEL, "--batch", str(RUN_BATCH),
            "--duration", "3", "--warmup", "1", "--until-stable", "--max-duration", "9", "--json"]
    done = ctx.cli(argv, TIMEOUTS["run"])
    return judge_run(ctx.document(done, f"labconsole run --engine {engine}", ok_codes=(0, 1)), target["id"])


def card(ctx: Context) -> tuple[str, str, dict[str, Any]]:
    if not ctx.cuda:
        return SKIPPED, _no_cuda(ctx), {}
    # Full sizes by default: a 256 MiB host→device copy reaches the link's plateau, a quick card's 8 MiB does not;
    # with --repeats 3 a full card takes one to two minutes, inside the budget. --quick checks the plumbing only.
    argv = ["machine", "--target", ctx.cuda[0]["id"], "--refresh", "--repeats", "3", "--storage", ctx.workdir,
            "--json"] + (["--quick"] if ctx.quick else [])
    return judge_card(ctx.document(ctx.cli(argv, TIMEOUTS["card"]), "labconsole machine --refresh"))


def topology(ctx: Context) -> tuple[str, str, dict[str, Any]]:
    if not ctx.nvidia.get("gpus"):
        return SKIPPED, _no_gpu(ctx), {}
    done = ctx.cli(["topology", "--json"], TIMEOUTS["topology"], history=False)
    if done.rc == 2 and "invalid choice" in done.stderr:
        return FAIL, "this build has no `labconsole topology` command", {}
    return judge_topology(ctx.document(done, "labconsole topology --json"), ctx.nvidia)


def collectives(ctx: Context) -> tuple[str, str, dict[str, Any]]:
    gpus = len(ctx.nvidia.get("gpus") or [])
    if gpus < 2 or len(ctx.cuda) < 2:
        have = f"NVML lists {gpus}, {len(ctx.cuda)} usable as CUDA targets" if gpus else _no_gpu(ctx)
        return SKIPPED, f"NCCL collectives need at least 2 GPUs ({have})", {}
    # two ops (the ring-heavy all-reduce and all-gather) up to 256 MiB, where NVLink's bus bandwidth levels off;
    # the command's own --timeout stops it cleanly before ours kills it
    limit = TIMEOUTS["collectives"]
    done = ctx.cli(["collectives", "--backend", "nccl", "--ranks", str(len(ctx.cuda)), "--ops",
                    "all-reduce,all-gather", "--sizes", "8B..256MiB", "--trials", "3", "--timeout",
                    f"{limit - 30:g}", "--json"], limit)
    if done.rc == 2 and "invalid choice" in done.stderr:
        return FAIL, "this build has no `labconsole collectives` command", {}
    return judge_collectives(ctx.document(done, "labconsole collectives --backend nccl", ok_codes=(0, 1)),
                             len(ctx.cuda))


# ---- Public API: judges
def judge_targets(found: dict[str, Any], nvidia: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    listed = [t for t in found.get("targets") or [] if _is_cuda(t)]
    usable = [t for t in listed if t.get("available")]
    seen = len(nvidia.get("gpus") or [])
    figures = {"cuda_targets": [t["id"] for t in usable], "names": [t.get("name") for t in usable],
               "engines": {t["id"]: t.get("engines") or [] for t in usable}, "nvml_gpus": seen}
    if not usable:
        why = next((t.get("reason") for t in listed if t.get("reason")), "") or "no CUDA target is listed"
        if seen:  # the driver sees GPUs the product cannot use: that is a finding, not an absence
            return FAIL, f"NVML lists {seen} GPU(s) but no CUDA target is usable: {why}", figures
        return SKIPPED, f"no usable NVIDIA GPU here: {why}", figures
    if seen and len(usable) < seen:
        return FAIL, f"NVML lists {seen} GPUs but only {len(usable)} are usable CUDA targets", figures
    return PASS, f"{len(usable)} CUDA target(s): {', '.join(sorted(set(map(str, figures['names']))))}", figures


def judge_telemetry(report: dict[str, Any], nvidia: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    source = next((s for s in report.get("sources") or [] if s.get("name") == "nvml"), None)
    if source is None or not source.get("available"):
        return FAIL, f"the NVML telemetry source is not available: {(source or {}).get('reason') or 'not listed'}", {}
    metrics = {m["name"]: m for m in source.get("metrics") or []}
    figures: dict[str, Any] = {}
    missing = []
    for gpu in nvidia.get("gpus") or [{"index": 0}]:
        name = f"gpu{gpu['index']}"
        for metric in TELEMETRY_METRICS:
            found = metrics.get(f"{name}.{metric}")
            if not found or (found.get("samples") or 0) < MIN_SAMPLES or found.get("last") is None:
                why = (source.get("unavailable_metrics") or {}).get(f"{name}.{metric}")
                missing.append(f"{name}.{metric}" + (f" ({why})" if why else ""))
                continue
            figures[f"{name}.{metric}"] = {"last": found["last"], "mean": found.get("mean"),
                                           "unit": found.get("unit"), "samples": found["samples"]}
    if missing:
        return FAIL, f"NVML gave no readings (at least {MIN_SAMPLES} samples) for {', '.join(missing)}", figures
    return PASS, f"power, utilisation and memory read for {len(nvidia.get('gpus') or [1])} GPU(s)", figures


def judge_run(run: dict[str, Any], target: str) -> tuple[str, str, dict[str, Any]]:
    latency = run.get("latency_ms") or {}
    figures = {"run_id": run.get("run_id"), "target": run.get("target"), "throughput_per_s": run.get("throughput_per_s"),
               "latency_p50_ms": latency.get("p50"), "load_s": run.get("load_s"),
               "first_inference_ms": run.get("first_inference_ms"), "cv": run.get("cv"),
               "energy_method": (run.get("energy") or {}).get("method")}
    if run.get("status") != "completed":
        return FAIL, f"the run ended {run.get('status')}: {run.get('message') or 'no message'}", figures
    if run.get("target") != target:
        return FAIL, f"the run reports target {run.get('target')!r}, not {target}", figures
    if not run.get("valid"):
        reasons = "; ".join(f"{r.get('detail')} (fix: {r.get('fix')})" for r in run.get("invalid_reasons") or [])
        return FAIL, f"completed but not valid: {reasons or 'no reason given'}", figures
    return PASS, f"completed and valid on {target}", figures


def judge_card(found: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    flops = {k: v for k, v in (found.get("peak_flops") or {}).items() if v is not None}
    h2d = found.get("h2d_gbs") or {}
    links = found.get("links")
    figures = {"device_name": found.get("device_name"), "quick": found.get("quick"), "peak_flops": flops,
               "device_memory_bandwidth_gbs": found.get("device_memory_bandwidth_gbs"), "h2d_gbs": h2d,
               "links": _links_figures(links)}
    absent = found.get("not_available") or {}
    missing = [f"{key} ({absent.get(key) or absent.get(key.partition('.')[0]) or 'no value'})" for key, value in
               (("peak_flops", flops or None), ("device_memory_bandwidth_gbs",
                                                 found.get("device_memory_bandwidth_gbs")),
                ("h2d_gbs.pinned", h2d.get("pinned"))) if value is None]
    if isinstance(links, dict) and not figures["links"]["h2d_measured"]:
        missing.append("links: no host→device entry was measured")
    if missing:
        return FAIL, f"the card lacks {'; '.join(missing)}", figures
    note = "" if isinstance(links, dict) else "; the card has no links section (bandwidth matrix not measured)"
    kind = "quick sizes: not ceilings" if found.get("quick") else "ceilings"
    return PASS, f"device and transfer figures measured ({kind}){note}", figures


def judge_topology(graph: dict[str, Any], nvidia: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    gpus = [n for n in graph.get("nodes") or [] if n.get("kind") == "gpu"]
    links = graph.get("links") or []
    nvlinks = [link for link in links if link.get("kind") == "nvlink"]
    by_bdf = {str((n.get("attrs") or {}).get("bdf") or "").lower() for n in gpus}
    missing = [g["bdf"] for g in nvidia.get("gpus") or [] if g.get("bdf") and g["bdf"] not in by_bdf]
    gpu_ids = {n["id"] for n in gpus}
    figures = {"gpus": len(gpus), "nvml_gpus": len(nvidia.get("gpus") or []), "nvlink_links": len(nvlinks),
               "nvml_active_nvlinks": nvidia.get("nvlink_active", 0),
               "gpu_matrix": bool(graph.get("gpu_matrix")),
               "gpu_pcie": {link["b"]: {"current": link.get("current"), "max": link.get("max"),
                                        "state": link.get("state")} for link in links
                            if link.get("kind") == "pcie" and link.get("b") in gpu_ids},
               "flagged_links": [link["id"] for link in links if link.get("state") == "low-under-load"]}
    if len(gpus) < figures["nvml_gpus"] or missing:
        return FAIL, (f"the topology holds {len(gpus)} GPU(s), NVML lists {figures['nvml_gpus']}"
                      + (f"; not found by PCI address: {', '.join(missing)}" if missing else "")), figures
    if nvidia.get("nvlink_active") and not nvlinks:
        return FAIL, f"NVML reports {nvidia['nvlink_active']} active NVLink links; the topology has none", figures
    return PASS, f"{len(gpus)} GPU(s) at their PCIe place, {len(nvlinks)} NVLink link(s)", figures


def judge_collectives(found: dict[str, Any], ranks: int) -> tuple[str, str, dict[str, Any]]:
    result = found.get("result") if isinstance(found.get("result"), dict) else found  # the run's, or bare
    rows = (result.get("ops") or {}).get("all-reduce") or []
    figures = {"run_id": found.get("run_id"), "backend": result.get("backend"), "ranks": result.get("ranks"),
               "figures": result.get("figures"), "sizes": len(rows)}
    if found.get("status") not in (None, "completed"):
        fix = f" (fix: {found['fix']})" if found.get("fix") else ""
        return FAIL, f"the collectives run ended {found['status']}: {found.get('cause') or 'no cause given'}{fix}", \
            figures
    if result.get("backend") != "nccl" or result.get("ranks") != ranks:
        return FAIL, f"ran {result.get('backend')} with {result.get('ranks')} ranks, not nccl with {ranks}", figures
    bad = [r.get("size_bytes") for r in rows if not _positive(r.get("busbw_gbs"))]
    if not rows or bad:
        return FAIL, ("no all-reduce sizes measured" if not rows
                      else f"all-reduce without a bus bandwidth at sizes {bad}"), figures
    peak = max(r["busbw_gbs"] for r in rows)
    return PASS, f"all-reduce over {ranks} GPUs: peak busbw {peak:.1f} GB/s", figures


# ---- Private API
def _is_cuda(target: dict[str, Any]) -> bool:
    return str(target.get("id", "")).startswith("cuda")


def _no_gpu(ctx: Context) -> str:
    return f"no NVIDIA GPU: {ctx.nvidia.get('reason') or 'NVML lists none'}"


def _no_cuda(ctx: Context) -> str:
    return f"no usable CUDA target ({ctx.no_cuda_reason or 'the targets step did not list one'})"


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _links_figures(links: Any) -> dict[str, Any] | None:
    if not isinstance(links, dict):
        return None
    entries = links.get("entries") or []
    measured = {e.get("id"): e.get("median_gbs") for e in entries if e.get("median_gbs") is not None}
    return {"entries": len(entries), "measured": measured,
            "h2d_measured": any(e.get("kind") == "h2d" and e.get("median_gbs") is not None for e in entries),
            "not_available": {e.get("id"): e.get("not_available") for e in entries if e.get("not_available")}}


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
