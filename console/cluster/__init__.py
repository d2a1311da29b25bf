"""Lab machines as one fleet, through Ray (the optional `lab-console[cluster]` extra). Qt-free.

`ray` is imported only inside this package and only when a cluster feature is used (`require_ray`), so the
console starts as fast without the extra and every other command works. One module per job:
`auth` (the token, never logged), `facts` (a node's hardware facts as Ray labels), `node` (start/stop Ray on
this machine), `connect` (join a cluster as a driver), `task` (what runs on the node), `dispatch` (RemoteRun:
the console side of a run on another node), `registry` (what is running, in Ray's KV store), `listing`
(`labconsole cluster`).
"""

from __future__ import annotations

import importlib.util
from typing import Any

INSTALL_HINT = "install it with pip install 'lab-console[cluster]'"
LABEL_PREFIX = "labconsole/"  # our node labels; Ray reserves ray.io/
NODE_ID_LABEL = "ray.io/node-id"


class ClusterUnavailable(RuntimeError):
    """Ray (the `cluster` extra) is not installed here."""


class ClusterError(RuntimeError):
    """A cluster operation failed for a reason the user can act on; the message says which and how."""


def available() -> bool:
    """Whether Ray can be imported, without importing it."""
    return importlib.util.find_spec("ray") is not None


def require_ray() -> Any:
    """The `ray` module, imported now; ClusterUnavailable (with the install command) when it is missing."""
    if not available():
        raise ClusterUnavailable(f"the cluster features need Ray, which is not installed: {INSTALL_HINT}")
    import ray

    return ray


def label_key(key: str) -> str:
    """A label key as typed (`accel`, `node`, `ray.io/…`, `team/x`) → the key on the nodes: ours are prefixed."""
    if key == "node":
        return NODE_ID_LABEL
    return key if "/" in key else LABEL_PREFIX + key


def short_key(key: str) -> str:
    """The inverse of label_key for display: `labconsole/accel` → `accel`."""
    return key[len(LABEL_PREFIX):] if key.startswith(LABEL_PREFIX) else key


def parse_on(pairs: list[str]) -> dict[str, str]:
    """--on LABEL=VALUE pairs (each may hold several, comma-separated) → {label: value}; ValueError naming the bad
    pair."""
    out: dict[str, str] = {}
    for text in pairs:
        for pair in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = pair.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise ValueError(f"--on {pair!r}: expected LABEL=VALUE, e.g. --on accel=cpu")
            out[key.strip()] = value.strip()
    return out
