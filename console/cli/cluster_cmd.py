"""`labconsole cluster --address ADDR`: the nodes of a lab cluster, their labels and targets, what runs."""

from __future__ import annotations

import argparse
import sys

from console.cli.common import EXIT_FAILED, EXIT_OK, emit_json, fail

NAME = "cluster"
HELP = "list the nodes of a Ray lab cluster: labels, targets, running runs (needs lab-console[cluster])"
USES_HISTORY = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--address", metavar="HOST:PORT", required=True, help="the cluster's head")
    parser.add_argument("--no-targets", action="store_true",
                        help="do not ask each node for its targets (faster: labels and runs only)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def main(args: argparse.Namespace) -> int:
    from console.cluster import ClusterError, ClusterUnavailable

    try:
        from console.cluster.connect import connect
        from console.cluster.listing import describe

        ray = connect(args.address)
        listing = describe(ray, with_targets=not args.no_targets)
    except ClusterUnavailable as exc:
        return fail(str(exc))
    except ClusterError as exc:
        print(f"labconsole: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        emit_json(listing)
        return EXIT_OK
    for node in listing["nodes"]:
        role = "head" if node["head"] else "node"
        labels = node["labels"]
        print(f"{role} {node['node_id'][:8]}  {node['address']}  {labels.get('host', '?')}  "
              f"accel={labels.get('accel', '?')}  cpu={labels.get('cpu', '?')}"
              + ("" if node["runs_here"] else "  (takes no runs: not started by labconsole node start)"))
        if node["targets"] is not None:
            usable = [f"{t['id']}[{','.join(t.get('engines') or [])}]" for t in node["targets"] if t.get("available")]
            print(f"    targets: {' '.join(usable) or 'none usable'}")
        elif node["targets_error"]:
            print(f"    targets: unknown ({node['targets_error']})")
        for run in node["running"]:
            print(f"    running: {run['run_id'][:8]} {run.get('model')} · {run.get('engine')} · {run.get('target')}")
    for run in listing["waiting"]:
        print(f"waiting for a node: {run['run_id'][:8]} {run.get('model')} (on {run.get('selector')})")
    return EXIT_OK if listing["nodes"] else EXIT_FAILED
