"""`labconsole node start|stop`: make this lab machine a node of a Ray cluster (the `cluster` extra)."""

from __future__ import annotations

import argparse
import sys

from console.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, emit_json, fail
from console.cli.numbers import whole

NAME = "node"
HELP = "start or stop Ray on this machine, with its hardware facts as node labels (needs lab-console[cluster])"
DESCRIPTION = ("Start Ray on this machine as the head of a lab cluster (--head) or join one (--address), with token "
               "authentication on and this machine's CPU, ISA, accelerators, memory, engines and targets as node "
               "labels; bound to 127.0.0.1 unless --host names the address to expose. `node stop` stops every Ray "
               "process of this machine.")
USES_HISTORY = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("--head", action="store_true", help="start a new cluster with this machine as its head")
    parser.add_argument("--address", metavar="HOST:PORT", default=None, help="join the cluster whose head is here")
    parser.add_argument("--port", type=whole(1, 65535), default=None, metavar="P", help="the head's port (default 6379)")
    parser.add_argument("--host", metavar="ADDRESS", default=None,
                        help="the address other lab machines reach this one on (default 127.0.0.1: this machine "
                             "only). Exposing it lets anyone who reaches it and has the token run code here")
    parser.add_argument("--num-cpus", type=whole(0, 65536), default=None, metavar="N", help="CPUs Ray may schedule here")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def main(args: argparse.Namespace) -> int:
    from console.cluster import ClusterError, ClusterUnavailable, require_ray

    try:
        require_ray()
        from console.cluster import node

        if args.action == "stop":
            info = node.stop()
        else:
            if args.head and args.address:
                return fail("--head starts a cluster and --address joins one: give one of them")
            if args.port is not None and not args.head:
                return fail("--port is the head's port: use it with --head (a joining node takes --address)")
            info = node.start(head=args.head, port=args.port or node.DEFAULT_PORT, address=args.address,
                              host=args.host, num_cpus=args.num_cpus)
    except ClusterUnavailable as exc:
        return fail(str(exc))
    except ClusterError as exc:
        print(f"labconsole: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if "needs" in str(exc) else EXIT_FAILED
    if args.json:
        emit_json(info)
        return EXIT_OK
    if args.action == "stop":
        print("Ray stopped on this machine")
        return EXIT_OK
    for warning in info["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{info['role']} node started; cluster address {info['address']} (bound to {info['bound_to']})")
    print(f"  token: {info['token']}" + (" (created now: copy this file, mode 600, to the other lab machines)"
                                         if info["token_created"] else ""))
    if info["role"] == "head":
        print(f"  join from another machine:  labconsole node start --address {info['address']} --host THAT_IP")
    print("  labels: " + ", ".join(f"{k.split('/', 1)[-1]}={v}" for k, v in sorted(info["labels"].items())))
    return EXIT_OK
