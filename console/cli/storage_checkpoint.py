"""`labconsole storage checkpoint`: the checkpoint card's flags, their validation, and its human summary (the
engine side is engines/storage/checkpoint.py). Qt-free and torch-free; console/cli/storage_cmd.py adds --json,
--db, --tag and runs the kind in a spawned worker.
"""

from __future__ import annotations

import argparse
from typing import Any

from engines.storage.errors import StorageError

_SIZES = ("1b", "8b", "70b")


# ---- Public API
def add_arguments(parser: argparse.ArgumentParser) -> None:
    state = parser.add_mutually_exclusive_group()
    state.add_argument("--model", default=None, metavar="NAME",
                       help="save a catalog model's state_dict (see labconsole models)")
    state.add_argument("--size", default=None, type=str.lower, choices=_SIZES,
                       help="save synthetic tensors sized like one shard of a 1B/8B/70B model's training checkpoint "
                            "(default 1b when no --model)")
    parser.add_argument("--shard-gb", type=float, default=None, metavar="GB",
                        help="with --size: cap one shard at this many GB (default 1); the result says what was "
                             "scaled and by how much")
    parser.add_argument("--ranks", type=int, default=2, metavar="N",
                        help="local processes the dcp format saves with, one shard each (default 2)")
    parser.add_argument("--rounds", type=int, default=1, metavar="N",
                        help="measure each format N times, alternating the order (default 1); the median round is "
                             "reported with every round's figures")
    parser.add_argument("--formats", default="torch,safetensors,dcp", metavar="LIST",
                        help="which of torch,safetensors,dcp to measure (default all three)")
    parser.add_argument("--dir", default=None, metavar="DIR",
                        help="folder on the storage to measure (default: the temp folder); the files are removed "
                             "afterwards")
    parser.add_argument("--mtbf-hours", type=float, default=None, metavar="H",
                        help="the job's mean time between failures for Young's interval (default 24, an assumption)")
    parser.add_argument("--bytes-per-param", type=float, default=None, metavar="B",
                        help="with --size: checkpoint bytes per parameter (default 14: bf16 weights + fp32 master "
                             "+ Adam's two moments)")
    parser.add_argument("--job-ranks", type=int, default=None, metavar="N",
                        help="with --size: ranks the job shards its checkpoint over (default 8 for 1B/8B, 64 for 70B)")


def options_from(args: argparse.Namespace) -> dict[str, Any]:
    """The checkpoint options from parsed flags, validated (engines.storage.checkpoint.validate)."""
    from engines.storage.checkpoint_options import validate

    if args.model and any(v is not None for v in (args.shard_gb, args.bytes_per_param, args.job_ranks)):
        raise StorageError("--shard-gb, --bytes-per-param and --job-ranks size a synthetic shard; a catalog "
                           "model's state is the size it is", "drop them, or use --size 1b|8b|70b instead of --model")
    options = {"model": args.model, "size": args.size, "shard_gb": args.shard_gb, "ranks": args.ranks,
               "rounds": args.rounds, "formats": args.formats, "directory": args.dir, "mtbf_hours": args.mtbf_hours,
               "bytes_per_param": args.bytes_per_param, "job_ranks": args.job_ranks}
    return validate({k: v for k, v in options.items() if v is not None})


def text_lines(result: dict[str, Any]) -> list[str]:
    """Per format: save and restore (duration of the slowest rank, GB/s of the lowest, spread), then Young's cost."""
    state = result.get("state") or {}
    lines = [result.get("label", "checkpoint"), f"state: {state.get('assumption', '')}"]
    if state.get("scaled"):
        lines.append(f"scaled: {state['scaled']['why']}")
    lines += ["", f"{'format':<12} {'ranks':>5} {'save s':>9} {'save GB/s':>10} {'load s':>9} {'load GB/s':>10} "
                  f"{'spread':>8}  cache"]
    for name, entry in (result.get("formats") or {}).items():
        spread = entry.get("spread_percent")
        lines.append(f"{name:<12} {entry['ranks']:>5} {_num(entry['save_s'])} {_num(entry['save_gb_s'], 10)} "
                     f"{_num(entry['load_s'])} {_num(entry['load_gb_s'], 10)} "
                     f"{'—' if spread is None else f'{spread:.0f}%':>8}  {entry['cache_state']}")
    for name, entry in (result.get("formats") or {}).items():
        if entry.get("rounds"):
            rates = " / ".join(_num(r["save_gb_s"], 0) for r in entry["rounds"])
            lines.append(f"  {name}: median of {len(entry['rounds'])} rounds (order alternated); save GB/s per "
                         f"round {rates}")
    young = result.get("young") or {}
    if young:
        first = next(iter(young.values()))
        lines += ["", f"training cost at MTBF {first['mtbf_h']:g} h (Young: checkpoint every √(2·δ·MTBF)):"]
        for name, cost in young.items():
            if cost["interval_s"] is None:
                lines.append(f"  {name:<12} {cost['note']}")
                continue
            restore = cost.get("restore_fraction")
            lines.append(f"  {name:<12} every {cost['interval_s'] / 60:,.1f} min, {100 * cost['lost_fraction']:.2f}% "
                         f"of training time lost" + (f" (+{100 * restore:.3f}% restoring)" if restore else "")
                         + f" — δ = {cost['save_s']:.3g} s, {cost['basis']}")
    if result.get("status_reason"):
        lines += ["", result["status_reason"]]
    lines += ["", f"method: {result.get('method', '')}"]
    return lines


# ---- Private API
def _num(value: float | None, width: int = 9) -> str:
    return f"{'—' if value is None else f'{value:,.3g}':>{width}}"
