"""A Ray test cluster on this one machine, shared by the cluster test modules: a head that takes no runs and fake
nodes with their own labels and host names (ray.cluster_utils.Cluster), with token authentication on.

Import this module before Ray: Ray reads its token settings once per process, so the token (one per process) is
put in the environment here, at import. Nodes bind to 127.0.0.1 (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

TOKEN = os.environ.get("RAY_AUTH_TOKEN") or secrets.token_hex(16)
_SAVED_ENV = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "LABCONSOLE_TEST_NODE_HOME",
                                             "RAY_TMPDIR")}
os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN)
MB = 1 << 20


def node_args(accel: str, hostname: str, data_home: str | None = None) -> dict[str, Any]:
    """A fake lab node: one CPU, its accel label, its own host name (LABCONSOLE_HOSTNAME), both engines and its
    own data directory (XDG_DATA_HOME: received model files, cards' storage probe), never the user's."""
    from console.cluster.dispatch import RUN_RESOURCE

    data_home = data_home or os.path.join(os.environ.get("LABCONSOLE_TEST_NODE_HOME", "/tmp"),
                                          f"labconsole-node-{hostname}-{os.getpid()}")
    return {"num_cpus": 1, "object_store_memory": 80 * MB, "resources": {RUN_RESOURCE: 1},
            "labels": {"labconsole/accel": accel, "labconsole/host": hostname, "labconsole/target.cpu": "yes",
                       "labconsole/engine.torch": "yes", "labconsole/engine.onnxruntime": "yes"},
            "env_vars": {"LABCONSOLE_HOSTNAME": hostname, "XDG_DATA_HOME": data_home}}


def own_ray_temp(temp_dir: str) -> None:
    """Point Ray's default temp root (RAY_TMPDIR) at `temp_dir` and make the `ray` folder it expects there.

    `ray.cluster_utils.Cluster` writes the head's address to `<root>/ray/ray_current_cluster`, and that folder
    exists by default only on a machine where Ray ran before: a fresh machine (or CI with an empty TMPDIR) failed
    every cluster test at set-up with FileNotFoundError. The caller restores RAY_TMPDIR (lab_cluster does)."""
    os.environ["RAY_TMPDIR"] = temp_dir
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)


@contextlib.contextmanager
def lab_cluster(temp_dir: str) -> Iterator[dict[str, Any]]:
    """{cluster, address, nodes: {accel: node}}: nodes fake-a (host lab-a) and fake-b (lab-b); a lost node is
    noticed in about 2 s, not 30 (the tests remove one mid-run). Shut down, and the environment restored, after."""
    from ray.cluster_utils import Cluster

    from console.cluster import connect

    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN)
    # Ray's own root is short and under /tmp whatever TMPDIR is: its Unix sockets live there, and a socket path is
    # limited to 107 bytes (a fresh machine with TMPDIR=/tmp/tmp.XXXXXXXXXX failed every cluster test at set-up)
    ray_root = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    own_ray_temp(ray_root)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "object_store_memory": 80 * MB, "include_dashboard": False, "temp_dir": ray_root,
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4,
                           "health_check_timeout_ms": 500}})
    os.environ["LABCONSOLE_TEST_NODE_HOME"] = temp_dir  # nodes added later by a test live here too
    nodes = {"fake-a": cluster.add_node(**node_args("fake-a", "lab-a")),
             "fake-b": cluster.add_node(**node_args("fake-b", "lab-b"))}
    cluster.wait_for_nodes()
    try:
        yield {"cluster": cluster, "address": cluster.address, "nodes": nodes}
    finally:
        connect.disconnect()
        cluster.shutdown()
        shutil.rmtree(ray_root, ignore_errors=True)
        for key, value in _SAVED_ENV.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
