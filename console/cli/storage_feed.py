"""`labconsole storage feed`: how many emulated accelerators a storage path keeps busy (engines.storage.feed).

The kind's flags, their check (options_from raises StorageError with the fix) and the human summary; the
`storage` command (console/cli/storage_cmd.py) adds --json/--db/--tag, runs the kind in a worker and stores it.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.numbers import number, whole
from engines.storage.errors import StorageError
from engines.storage.workloads import GPUS, NAMES

FORMATS = ("any", "npy", "raw")


# ---- Public API
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", required=True, metavar="DIR",
                        help="directory of sample files to read (labconsole make-data --workload W writes one)")
    parser.add_argument("--workload", default="unet3d", choices=NAMES,
                        help="MLPerf Storage workload to emulate, or custom (default unet3d)")
    parser.add_argument("--gpu", default="h100", choices=GPUS,
                        help="accelerator whose published step time is emulated (default h100)")
    parser.add_argument("--sample-bytes", type=whole(1, 2**40), default=None, metavar="B",
                        help="custom: one sample's size in bytes (each file is read in pieces of this size)")
    parser.add_argument("--batch", type=whole(1, 1_000_000), default=None, metavar="N",
                        help="custom: samples per step")
    parser.add_argument("--compute-ms", type=number(0, 3_600_000, low_open=True), default=None, metavar="T",
                        help="custom: one step's compute time in ms (the emulation sleeps it)")
    parser.add_argument("--au-threshold", type=number(0, 100, low_open=True), default=None, metavar="PERCENT",
                        help="custom: AU needed to pass, percent (default 90)")
    count = parser.add_mutually_exclusive_group()
    count.add_argument("--accelerators", type=whole(1, 4096), default=None, metavar="N",
                       help="emulated accelerators (default 1)")
    count.add_argument("--find-max", action="store_true",
                       help="search the largest N whose AU meets the workload's threshold (doubling, then bisection)")
    parser.add_argument("--max-accelerators", type=whole(1, 4096), default=256, metavar="N",
                        help="--find-max stops here (default 256)")
    parser.add_argument("--readers", type=whole(1, 512), default=4, metavar="R",
                        help="reader processes (default 4)")
    parser.add_argument("--format", default="any", choices=FORMATS,
                        help="which files to read: npy (.npy, magic checked), raw (.bin/.f32/.raw) or any (default)")
    parser.add_argument("--warm", action="store_true",
                        help="do not drop the page cache before each file (the result is then warm and cannot pass)")
    parser.add_argument("--model", default=None, metavar="NAME",
                        help="a catalog model whose real forward pass replaces the emulated step (fixed "
                             "--accelerators only); the same trial is then run emulated, to check the emulation")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="with --model: where the model runs (default cpu)")
    parser.add_argument("--duration", type=number(0, 3600, low_open=True), default=5.0, metavar="S",
                        help="seconds per trial (default 5)")
    parser.add_argument("--steps", type=whole(2, 1_000_000), default=3, metavar="N",
                        help="at least this many steps per accelerator per trial, the first not counted (default 3)")


def options_from(args: argparse.Namespace) -> dict[str, Any]:
    """The engine's options from the parsed flags; StorageError (with the fix) for combinations that make no sense."""
    custom_flags = {"sample_bytes": args.sample_bytes, "batch": args.batch, "compute_ms": args.compute_ms,
                    "au_threshold_percent": args.au_threshold}
    if args.workload == "custom":
        needed = ("sample_bytes", "batch") if args.model else ("sample_bytes", "batch", "compute_ms")
        missing = [k for k in needed if custom_flags[k] is None]
        if missing:
            raise StorageError("--workload custom needs " + ", ".join(_flag(k) for k in missing),
                               "give the sample size in bytes, the batch and the step's compute time in ms")
    else:
        given = [k for k, v in custom_flags.items() if v is not None]
        if given:
            raise StorageError(f"{', '.join(_flag(k) for k in given)} would change the published {args.workload} "
                               "workload", "use --workload custom for your own numbers, or drop those flags")
    if args.model and args.find_max:
        raise StorageError("--model runs a fixed number of accelerators", "give --accelerators N instead of "
                           "--find-max")
    if args.device != "cpu" and not args.model:
        raise StorageError("--device only places --model", "add --model NAME, or drop --device")
    if args.max_accelerators != 256 and not args.find_max:
        raise StorageError("--max-accelerators only bounds --find-max", "add --find-max, or drop it")
    options: dict[str, Any] = {
        "data_dir": args.data_dir, "workload": args.workload, "gpu": args.gpu,
        "accelerators": args.accelerators or (None if args.find_max else 1), "find_max": bool(args.find_max),
        "max_accelerators": args.max_accelerators, "readers": args.readers, "format": args.format,
        "cold": not args.warm, "duration_s": float(args.duration), "min_steps": int(args.steps),
    }
    if args.model:
        options.update({"model": args.model, "device": args.device})
    options.update({k: v for k, v in custom_flags.items() if v is not None})
    return options


def text_lines(result: dict[str, Any]) -> list[str]:
    """The human summary the CLI prints."""
    fig = result.get("figures", {})
    verdict = {True: "PASS", False: "FAIL", None: "no verdict"}[result.get("passed")]
    lines = [f"{result.get('label', 'feed')}", f"  verdict: {verdict}" + (
        f" — {result['status_reason']}" if result.get("status_reason") else "")]
    wl = result.get("workload") or {}
    lines.append(f"  workload: {wl.get('name')} — {_bytes(wl.get('sample_bytes'))} samples, "
                 f"{wl.get('samples_per_file')} per file, batch {wl.get('batch')}, "
                 f"{(wl.get('compute_s') or 0) * 1e3:.4g} ms compute per step, AU ≥ {fig.get('au_threshold_percent'):g}%")
    data = result.get("data_set") or {}
    if data.get("scaled"):
        lines.append(f"    data: {_bytes(data.get('mean_sample_bytes'))} samples (a scaled data set: AU is for these)")
    lines.append(f"    source: {wl.get('source')}")
    search = result.get("find_max")
    if search:
        series = ", ".join(f"{n}→{_pct(au)}" for n, au in sorted(search["series"]))
        lines.append(f"  find-max: {search['max_passing']} accelerator(s) pass; AU by N: {series}")
    per = ", ".join(_pct(a) for a in result.get("au_per_accelerator") or [])
    lines.append(f"  AU {_pct(fig.get('au_percent'))} with {result.get('accelerators')} accelerator(s) "
                 f"(per accelerator: {per}; first step excluded)")
    lines.append(f"  {_num(fig.get('samples_per_s'))} samples/s, {_num(fig.get('read_mb_s'))} MB/s read by "
                 f"{result.get('readers')} reader(s), readers runnable {_pct(fig.get('reader_busy_percent'))} of the time")
    lat = result.get("read_latency_ms") or {}
    lines.append("  read latency per sample: " + ", ".join(
        f"{k} {'not available' if lat.get(k) is None else _ms(lat[k])}" for k in ("p50", "p90", "p99"))
        + (f" ({lat['note']})" if lat.get("note") else ""))
    check = result.get("model_check")
    if check:
        lines.append(f"  real model: {check['model']} on {check['device']}, step {check['step_ms_alone']:.2f} ms "
                     f"alone, {_num(check.get('step_ms_in_trial'))} ms in the trial; AU real "
                     f"{_pct(check.get('au_real_percent'))} vs emulated {_pct(check.get('au_emulated_percent'))}")
    lines.append(f"  limited by: {result.get('limited_by')} — {result.get('lever')}")
    lines.append(f"  cache: {result.get('cache_state')} — {(result.get('data_set') or {}).get('cold_reason', '')}")
    lines.append(f"  method: {result.get('method')}")
    return lines


# ---- Private API
def _flag(key: str) -> str:
    return "--" + key.replace("_percent", "").replace("_", "-")


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value >= 1 else f"{value * 1e3:.3g} µs"


def _num(value: Any) -> str:
    return "not available" if value is None else f"{value:,.1f}"


def _bytes(value: Any) -> str:
    if value is None:
        return "?"
    return f"{value / 1e6:,.3f} MB" if value >= 1e5 else f"{value:,.0f} B"
