"""`labconsole machine`: this host's measured ceilings for a target (its machine card), from the history unless
--refresh; --json prints the card."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from console.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    emit_json,
    error,
    fail,
    on_cluster,
    wants_json,
)

NAME = "machine"
HELP = "measured ceilings of a target: peak FLOP/s, memory and storage bandwidth, per-call floors"
DESCRIPTION = ("The machine card of a target: peak FLOP/s per precision (large GEMMs), memory bandwidth (a streaming "
               "kernel over ≥ 4× the last-level cache), each engine's per-call floor, cache sizes, storage sequential "
               "read of a directory (cold page cache where the OS allows), and on GPUs host↔device bandwidth. Each "
               "ceiling is the median of at least --repeats measurements, repeated until its 95% interval is within "
               "±5% or for at most 10 s; a wider interval is shown with the machine's noise (cv) as the reason. The "
               "newest stored card of this host is shown unless --refresh; measuring takes one to two minutes.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="cpu", metavar="T", help="cpu, cuda or cuda:N (default cpu)")
    parser.add_argument("--refresh", action="store_true", help="measure now instead of showing the stored card")
    parser.add_argument("--storage", default=None, metavar="DIR",
                        help="directory whose sequential read to measure (default: the console's data directory)")
    from console.cli.numbers import whole

    parser.add_argument("--repeats", type=whole(1, 1000), default=5, metavar="N",
                        help="at least this many measurements per ceiling, 1 to 1000 (default 5; more until "
                             "its interval is within ±5%%, up to 10 s)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes: checks the machinery in seconds, but the figures are not ceilings")
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help="measure the card on every node of this lab cluster (or those --on picks), each on its "
                             "own machine, and keep them in this history (for `whatif --onto HOST`)")
    parser.add_argument("--on", action="append", metavar="LABEL=VALUE",
                        help="with --cluster: only the nodes with this label (repeatable)")


def main(args: argparse.Namespace) -> int:
    from console.history import HistoryError
    from console.machine.cards import MachineError, card_for

    if args.cluster is not None or args.on:
        return _fleet(args)
    progress = _progress if sys.stderr.isatty() else None
    try:
        card = card_for(args.target, refresh=args.refresh, storage_dir=args.storage, db=getattr(args, "db", None),
                        repeats=args.repeats, quick=args.quick, on_progress=progress)
    except MachineError as exc:
        return fail(str(exc))
    except HistoryError as exc:
        return error(exc)
    except Exception as exc:  # noqa: BLE001 — the worker died or timed out: say so, exit 1
        return error(f"measuring the machine card failed: {type(exc).__name__}: {exc}")
    finally:
        if progress is not None:
            print(file=sys.stderr)
    if wants_json(args):
        emit_json(card)
    else:
        print("\n".join(card_lines(card)))
    return EXIT_OK


def card_lines(card: dict[str, Any]) -> list[str]:
    """The card as a table: ceiling, value, spread; the method on the line below; then what is missing."""
    from console.machine.table import ceiling_rows, link_lines, repeats_text

    quick = "  [quick sizes: not ceilings]" if card.get("quick") else ""
    ends = "median's 95% interval" if card.get("precision") else "min – max"
    lines = [f"{card.get('target')} — {card.get('device_name')} on {card.get('host')}, measured "
             f"{card.get('measured_at')}, {repeats_text(card)} repeats{quick}", "",
             f"{'ceiling':30} {'value':22} spread ({ends}, cv, n)"]
    missing = []
    for row in ceiling_rows(card):
        if row["value"] is None:
            if row["reason"]:  # a row this target has no business measuring (fp16 on a CPU) is left out
                missing.append(f"  {row['label']}: {row['reason']}")
            continue
        lines.append(f"{row['label']:30} {row['text']:22} {row['spread']}")
        if row["method"]:
            lines.append(f"{'':31}{row['method']}")
        if row["reason"]:
            lines.append(f"{'':31}note: {row['reason']}")
        if row.get("noise"):
            lines.append(f"{'':31}noise: {row['noise']}")
    if missing:
        lines += ["", "not available:", *missing]
    return lines + link_lines(card)


def _fleet(args: argparse.Namespace) -> int:
    """--cluster: each chosen node measures its own card (always measured now); each is kept under the node's
    host. Exit 1 when any node failed, after keeping the others'."""
    from console.cluster import ClusterError
    from console.cluster.cards import measure_on_nodes
    from console.history import HistoryError
    from console.machine.cards import store_card

    if args.storage is not None:
        return fail("--storage names a directory of this machine; with --cluster each node measures its own "
                    "data directory")
    on = on_cluster(args, "--on measures the cards of a cluster's nodes")
    if isinstance(on, int):
        return on
    print(f"measuring the {args.target} card on the cluster's nodes (about a minute each, all at once)…",
          file=sys.stderr)
    try:
        results = measure_on_nodes(args.cluster, on, args.target, repeats=args.repeats, quick=args.quick)
        for result in results:
            if "card" in result:
                result["card"]["card_id"] = store_card(result["card"], getattr(args, "db", None), result["host"])
    except ClusterError as exc:
        return error(exc)
    except HistoryError as exc:
        return error(exc)
    if wants_json(args):
        emit_json({"nodes": results}, schema="machine.nodes")
    else:
        for result in results:
            if "card" in result:
                print("\n".join(card_lines(result["card"])) + "\n")
            else:
                print(f"node {str(result['node_id'])[:8]}: no card: {result['error']}\n", file=sys.stderr)
    return EXIT_FAILED if any("error" in r for r in results) else EXIT_OK


def _progress(text: str) -> None:
    print(f"\r\033[Kmeasuring: {text}", end="", file=sys.stderr, flush=True)
