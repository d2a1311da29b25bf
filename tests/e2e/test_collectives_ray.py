"""Collectives across Ray nodes (`--cluster`): two fake nodes on this machine (tests/lab_cluster.py: a head that
takes no work, lab-a and lab-b with one CPU each). The console runs the benchmark in its worker, which joins the
cluster; Ray places one bundle per rank (SPREAD), so each rank lands on its own node, and the ranks meet at rank 0's
node. A run asking for more ranks than the cluster can place fails with the resources it has and the fix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab_cluster import lab_cluster  # noqa: E402 — before Ray: it reads the token once

pytest.importorskip("ray", reason="the cluster extra is not installed (pip install 'lab-console[cluster]')")

from console.collectives import run  # noqa: E402

SMALL = {"ops": "all-reduce,broadcast", "sizes": "1KiB,16KiB", "iters": 3, "warmup": 1, "trials": 2}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with lab_cluster(str(tmp_path_factory.mktemp("ray"))) as made:
        yield made


def test_ranks_placed_by_ray_on_two_nodes_time_the_collectives(lab):
    seen = []
    outcome = run({**SMALL, "cluster": lab["address"]}, on_progress=seen.append, timeout_s=240)
    assert outcome.status == "completed", outcome.message
    result = outcome.result
    assert result["placement"] == "ray" and result["label"].endswith("· ray") and all(result["checked"].values())
    assert [r["size_bytes"] for r in result["ops"]["all-reduce"]] == [1024, 16384]
    assert all(r["busbw_gbs"] > 0 for rows in result["ops"].values() for r in rows)
    assert "Ray actors in a SPREAD placement group" in result["method"]
    assert sorted(result["rank_hosts"]) == ["lab-a", "lab-b"]  # one rank per node (the head takes no work)
    assert any("placed 2 ranks" in u.get("text", "") for u in seen)
    assert any("rendezvous" in u.get("text", "") for u in seen)


def test_more_ranks_than_the_cluster_can_place_fail_with_the_fix(lab):
    outcome = run({**SMALL, "ranks": 3, "cluster": lab["address"], "place_timeout_s": 3}, timeout_s=120)
    assert outcome.status == "failed" and outcome.error_kind == "bad-input"
    assert "could not place 3 ranks" in outcome.cause and "fewer --ranks" in outcome.fix
