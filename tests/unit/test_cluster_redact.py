"""A failing node's error never shows credentials: the cluster listing (`labconsole cluster`, the window's remote
targets) and the cluster topology both strip them with console.cluster.auth.redact."""

from __future__ import annotations

import pytest

from console.cluster import auth, listing, topology
from console.cluster.dispatch import alive_nodes

TOKEN = "f00dfeedcafe0123456789abcdef0123"
FAILURE = (f"ConnectionError: redis://admin:hunter2@10.0.0.5:6379 refused (token={TOKEN}); "
           "Authorization: Bearer abc.def.ghi; password: p4ss")


class _Task:
    def options(self, **_):
        return self

    def remote(self, *_):
        return object()


class _FailingRay:
    """Just enough of ray for one alive node whose task raises FAILURE."""

    def nodes(self):
        return [{"NodeID": "ab" * 28, "Alive": True, "Labels": {"labconsole/host": "lab-a"}, "NodeManagerAddress":
                 "10.0.0.5", "Resources": {"CPU": 4.0, "labconsole_run": 1.0}}]

    def remote(self, **_):
        return lambda _fn: _Task()

    def wait(self, refs, num_returns, timeout):
        return list(refs), []

    def get(self, _ref):
        raise RuntimeError(FAILURE)

    def cancel(self, *_, **__):
        pass


def _no_secret(text: str) -> None:
    for secret in (TOKEN, "hunter2", "admin:", "abc.def.ghi", "p4ss"):
        assert secret not in text, (secret, text)


@pytest.fixture
def token(monkeypatch):
    monkeypatch.setenv(auth.TOKEN_ENV, TOKEN)


def test_redact_strips_the_token_an_address_password_and_secret_fields(token):
    text = auth.redact(f"{FAILURE} and again {TOKEN}")
    _no_secret(text)
    assert "redis://***@10.0.0.5:6379" in text and "Bearer ***" in text and "password: ***" in text
    # what is no secret stays: where it failed, and words that merely contain "token"
    assert auth.redact("http://lab-a:8265 down: 3 tokens, tokenizer ok") == "http://lab-a:8265 down: 3 tokens, tokenizer ok"


@pytest.mark.parametrize("field", ["redis_password=s3cr3t", "RAY_REDIS_PASSWORD=s3cr3t", "client_secret: s3cr3t",
                                   "AWS_SECRET_ACCESS_KEY=s3cr3t", "Authorization: Basic s3cr3t", "api-key=s3cr3t"])
def test_redact_strips_secret_fields_whose_names_are_joined_with_underscores(field):
    text = auth.redact(f"node lab-a failed: {field} refused")
    assert "s3cr3t" not in text and text.startswith("node lab-a failed: ") and text.endswith(" refused")


def test_the_cluster_listing_strips_credentials_from_a_failing_node(token, monkeypatch):
    monkeypatch.setattr(listing.registry, "entries", lambda _ray: [])
    [node] = listing.describe(_FailingRay(), with_targets=True, timeout_s=1.0)["nodes"]
    assert node["targets"] is None and "ConnectionError" in node["targets_error"]
    _no_secret(node["targets_error"])
    [entry] = listing.window_targets({"nodes": [node]})
    _no_secret(entry["reason"])


def test_the_cluster_topology_strips_credentials_from_a_failing_node(token, monkeypatch):
    monkeypatch.setattr(topology, "_task", None)
    ray = _FailingRay()
    nodes = alive_nodes(ray)
    graph = topology.fleet_graph("10.0.0.5:6379", nodes, topology._ask_nodes(ray, nodes, 1.0, None))
    [why] = graph["not_available"].values()
    assert "RuntimeError" in why
    _no_secret(why)
