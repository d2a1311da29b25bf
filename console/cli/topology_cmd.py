"""`labconsole topology`: the machine as a graph of links — packages, NUMA nodes, the PCIe tree, GPUs, drives, NICs.

Reads sysfs (and NVML when pynvml and a driver are present) through `engines.topology.discover`; prints an indented
tree like `lstopo-no-graphics`, or the graph as JSON (--json) or Graphviz DOT (--dot). A link below its maximum at
idle is not a finding (idle links train down); --check-links re-reads those links while a load drives them and flags
the ones that stay low. --cluster ADDR adds the Ray fleet as one more level (console.cluster.topology).
Exit status: 0 when read (whatever it shows), 1 when links are flagged under --check-links or the fleet cannot be
gathered, 2 for a bad option.
"""

from __future__ import annotations

import argparse
import os
import sys

from console.cli.common import EXIT_FAILED, EXIT_OK, emit_json, fail
from console.cli.numbers import number

NAME = "topology"
HELP = "the machine as a graph: sockets, NUMA nodes, caches, PCIe tree with link speeds, GPUs, NVMe, NICs, NVLink"
DESCRIPTION = ("Read from sysfs (never written) and NVML when present. Links below their maximum at idle are shown "
               "'below-max-idle' and not flagged (idle links train down to save power); --check-links drives them "
               "(O_DIRECT reads for NVMe) and flags the ones that stay low. lstopo is not needed.")
USES_HISTORY = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the graph as one JSON document")
    out.add_argument("--dot", action="store_true", help="print the graph as Graphviz DOT (pipe into `dot -Tsvg`)")
    parser.add_argument("--check-links", action="store_true",
                        help="re-read links below their max while a load runs (NVMe: ~1 s of O_DIRECT reads, "
                             "read-only); flag those that stay low")
    parser.add_argument("--cluster", metavar="HOST:PORT", default=None,
                        help="gather every Ray node's topology (needs lab-console[cluster])")
    parser.add_argument("--timeout", type=number(1.0, 3600.0, unit="s"), default=60.0, metavar="S",
                        help="with --cluster: seconds to wait for the nodes (default 60)")
    parser.add_argument("--root", default="/", metavar="DIR",
                        help="read a captured tree holding sys/ and proc/ instead of this machine (default /)")


def main(args: argparse.Namespace) -> int:
    from engines.topology import check_links_under_load, default_load, discover
    from engines.topology.dot import to_dot
    from engines.topology.text import render_tree

    if args.cluster:
        try:
            from console.cluster.topology import gather
        except ImportError as exc:
            print(f"labconsole: error: the fleet topology is not available ({exc})", file=sys.stderr)
            return EXIT_FAILED
        try:
            graph = gather(args.cluster, args.timeout)
        except Exception as exc:  # noqa: BLE001 - ClusterUnavailable/ClusterError/ValueError: say which, exit 1
            print(f"labconsole: error: cannot gather the fleet at {args.cluster}: {exc}", file=sys.stderr)
            return EXIT_FAILED
    else:
        if not os.path.isdir(os.path.join(args.root, "sys")):
            return fail(f"--root {args.root!r} holds no sys/ folder: pass / or a captured tree (sys/ and proc/)")
        graph = discover(args.root)
        if args.check_links:
            check_links_under_load(graph, default_load(graph, root=args.root), root=args.root)
    if args.json:
        # The CLI document names itself like every --json document; the graph's own version is graph_schema.
        emit_json({"schema": "labconsole.topology/1", "graph_schema": graph.get("schema"),
                   **{k: v for k, v in graph.items() if k != "schema"}})
    elif args.dot:
        sys.stdout.write(to_dot(graph))
    else:
        print("\n".join(render_tree(graph)))
    flagged = [link for link in graph.get("links", []) if link.get("state") == "low-under-load"]
    return EXIT_FAILED if flagged else EXIT_OK
