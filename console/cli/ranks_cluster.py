"""`--cluster` beside `--ranks` (run, analyze, sweep): Ray places the data-parallel ranks; the worker stays here.

Why not the usual cluster dispatch: `--cluster` alone sends a whole run to one node (console.cluster.dispatch). A
data-parallel run is one run over many machines, so its worker runs on this machine and starts its ranks as Ray
actors in a placement group (engines.ddp.ray_launch); the spec carries the address as
engine_options.torch.ranks_cluster. The token, the listener and Ray itself are checked here first, so a typo in
the address costs no worker; --on and --send-model name one node, which a run over many has not, and are refused.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from console.cli.common import error, fail

ON_WITH_RANKS = "--on runs a whole run on one node; with --ranks Ray places the ranks: drop --on"
SEND_WITH_RANKS = ("--send-model sends the model file to the one node a whole run goes to; with --ranks Ray places "
                   "the ranks on several: drop --send-model (ranks run catalog models, built on each node)")

__all__ = ["ON_WITH_RANKS", "SEND_WITH_RANKS", "refused_with_ranks", "check_address", "place_ranks",
           "place_ranks_in"]


def refused_with_ranks(on: Any, send_model: bool) -> int | None:
    """EXIT_USAGE after saying why, when --on or --send-model come with --ranks; None when neither does."""
    if on:
        return fail(ON_WITH_RANKS)
    if send_model:
        return fail(SEND_WITH_RANKS)
    return None


def check_address(address: str) -> int | None:
    """None when a worker here can join the cluster at `address` (Ray installed, a token, a listener); else the
    exit code after saying what is wrong and how to fix it (2: Ray missing or a malformed address; 1: no token,
    nothing listening)."""
    from console.cluster import ClusterError, ClusterUnavailable
    from console.cluster.connect import check_joinable

    try:
        check_joinable(address)
    except ClusterUnavailable as exc:
        return fail(str(exc))
    except ClusterError as exc:
        return fail(str(exc)) if "is not a cluster address" in str(exc) else error(exc)
    return None


def place_ranks(spec: Any, address: str) -> Any:
    """`spec` (a RunSpec) with its ranks placed by Ray on the cluster at `address`; an exit code when the cluster
    cannot be joined from here (said on stderr)."""
    problem = check_address(address)
    if problem is not None:
        return problem
    spec.engine_options["torch"] = dataclasses.replace(spec.options_for("torch"), ranks_cluster=address)
    return spec


def place_ranks_in(base: dict[str, Any], address: str) -> int | None:
    """The sweep's base spec dict gets the address (every point's ranks are placed by Ray); an exit code when
    the cluster cannot be joined from here."""
    problem = check_address(address)
    if problem is not None:
        return problem
    engine_options = base.setdefault("engine_options", {})
    engine_options["torch"] = {**(engine_options.get("torch") or {}), "ranks_cluster": address}
    return None

