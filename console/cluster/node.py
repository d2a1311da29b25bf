"""Start and stop Ray on this lab machine, with its hardware facts as node labels and the token on.

`ray start` does the work (so `ray status` and Ray's own tools see the same node); we add the labels
(console.cluster.facts), one run slot (RUN_RESOURCE: measured runs never share a node), token authentication,
no dashboard (fewer open ports), and loopback binding unless the user names an address to expose.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from console.cluster import ClusterError, auth, facts

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 6379
EXPOSURE_WARNING = (
    "Ray is reachable at {host} on port {port} and on the ports Ray opens for its node manager, object "
    "manager and workers. Anyone who can reach them AND holds the cluster token can run any code on this "
    "machine as this user. Keep it on the lab network, behind a firewall, and share the token only with the "
    "lab's machines.")


def ray_command() -> list[str]:
    """Ray's own CLI in this interpreter (no reliance on PATH)."""
    return [sys.executable, "-m", "ray.scripts.scripts"]


def start_command(*, head: bool, port: int = DEFAULT_PORT, address: str | None = None, host: str | None = None,
                  labels: dict[str, str], num_cpus: int | None = None) -> list[str]:
    """The `ray start` command line for this machine (pure: the tests check it without starting Ray)."""
    from console.cluster.dispatch import RUN_RESOURCE

    cmd = [*ray_command(), "start", "--disable-usage-stats", "--include-dashboard=false",
           "--node-ip-address", host or LOOPBACK,
           "--labels", ",".join(f"{key}={value}" for key, value in sorted(labels.items())),
           "--resources", json.dumps({RUN_RESOURCE: 1})]
    if head:
        cmd += ["--head", "--port", str(port)]
    else:
        cmd += ["--address", str(address)]
    if num_cpus is not None:
        cmd += ["--num-cpus", str(num_cpus)]
    return cmd


def start(*, head: bool, port: int = DEFAULT_PORT, address: str | None = None, host: str | None = None,
          num_cpus: int | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Start Ray here; returns what to tell the user (address to join, token file, labels, warnings)."""
    if not head and not address:
        raise ClusterError("`node start` needs --head (start a cluster here) or --address HOST:PORT (join one)")
    if not head and host is None and not _is_loopback(address.rsplit(":", 1)[0]):
        raise ClusterError(f"joining the head at {address} needs --host ADDRESS: this machine's address on the lab "
                           "network, which the other nodes reach it on (it is bound to 127.0.0.1 otherwise)")
    created = None
    if head and auth.token_source() is None:
        created = auth.create_token()
    source = auth.require_token()
    labels = dict(labels) if labels is not None else facts.local_labels()
    cmd = start_command(head=head, port=port, address=address, host=host, labels=labels, num_cpus=num_cpus)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = auth.redact((done.stderr or done.stdout).strip()[-1500:])
        raise ClusterError(f"`ray start` failed (exit {done.returncode}): {tail}")
    bound = host or LOOPBACK
    info: dict[str, Any] = {"role": "head" if head else "worker", "address": f"{bound}:{port}" if head else address,
                            "bound_to": bound, "token": source, "token_created": str(created) if created else None,
                            "labels": labels, "warnings": []}
    if not _is_loopback(bound):
        info["warnings"].append(EXPOSURE_WARNING.format(host=bound, port=port if head else "(see ray status)"))
    return info


def stop() -> dict[str, Any]:
    """Stop every Ray process of this machine (what `ray stop` does: Ray has no per-node stop)."""
    done = subprocess.run([*ray_command(), "stop", "--force"], capture_output=True, text=True)
    if done.returncode != 0:
        raise ClusterError(f"`ray stop` failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}")
    return {"stopped": True, "output": done.stdout.strip().splitlines()[-1:] }


def _is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")
