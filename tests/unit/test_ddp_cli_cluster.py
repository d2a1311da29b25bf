"""--cluster beside --ranks (run, analyze, sweep): Ray places the ranks and the worker stays here, so the address
goes into the spec (engine_options.torch.ranks_cluster), never to the whole-run dispatch; --on and --send-model,
which name one node, are refused (exit 2) before anything runs; the cluster is checked (Ray, token, listener)
before a worker is spawned."""

from __future__ import annotations

import argparse

import pytest

from console.cli import main, ranks_cluster, run_cmd, sweep_cmd
from console.cluster import auth
from console.sweep import SweepGrid
from engines.spec import RunSpec

TRAINING = ["--mode", "training", "--model", "mlp", "--batch", "2"]


@pytest.fixture
def joinable(monkeypatch):
    """check_joinable that accepts any address, recording it (no Ray, no network)."""
    seen = []
    monkeypatch.setattr("console.cluster.connect.check_joinable", seen.append)
    return seen


def ddp_spec():
    return RunSpec(model="mlp", mode="training", batch=2, engine_options={"torch": {"ranks": 2}}).validate()


def test_run_puts_the_cluster_address_in_the_spec_and_dispatches_nothing(joinable):
    spec = ddp_spec()
    args = argparse.Namespace(cluster="10.0.0.5:6379", on=None, send_model=False)
    assert run_cmd._ranks_cluster(args, spec) == "10.0.0.5:6379"
    assert joinable == ["10.0.0.5:6379"]
    assert spec.options_for("torch").ranks_cluster == "10.0.0.5:6379"
    assert spec.options_for("torch").ranks == 2  # the other options are kept
    assert RunSpec.from_dict(spec.to_dict()).validate().options_for("torch").ranks_cluster == "10.0.0.5:6379"


def test_run_without_ranks_leaves_cluster_to_the_whole_run_dispatch(joinable):
    spec = RunSpec(model="mlp", mode="training").validate()
    args = argparse.Namespace(cluster="10.0.0.5:6379", on=None, send_model=False)
    assert run_cmd._ranks_cluster(args, spec) is None and joinable == []
    assert spec.options_for("torch").ranks_cluster is None
    assert run_cmd._ranks_cluster(argparse.Namespace(cluster=None, on=None, send_model=False), ddp_spec()) is None


@pytest.mark.parametrize(("extra", "said"), [
    (["--on", "accel=cpu"], ranks_cluster.ON_WITH_RANKS),
    (["--cluster", "10.0.0.5:6379", "--on", "accel=cpu"], ranks_cluster.ON_WITH_RANKS),
    (["--cluster", "10.0.0.5:6379", "--send-model"], "drop --send-model"),
])
def test_run_refuses_one_node_options_beside_ranks(tmp_path, capsys, joinable, extra, said):
    db = tmp_path / "h.db"
    assert main(["run", *TRAINING, "--ranks", "2", "--db", str(db), *extra]) == 2
    assert said in capsys.readouterr().err
    assert joinable == [] and not db.exists()  # refused before the cluster, the history or a worker


def test_a_cluster_nothing_answers_at_fails_before_a_worker(tmp_path, capsys, monkeypatch):
    pytest.importorskip("ray", reason="the cluster extra is not installed")
    monkeypatch.setenv(auth.TOKEN_ENV, "t" * 32)
    monkeypatch.setenv(auth.MODE_ENV, "token")
    db = tmp_path / "h.db"
    assert main(["run", *TRAINING, "--ranks", "2", "--db", str(db), "--cluster", "127.0.0.1:1"]) == 1
    assert "nothing answers at 127.0.0.1:1" in capsys.readouterr().err and not db.exists()
    assert main(["run", *TRAINING, "--ranks", "2", "--db", str(db), "--cluster", "no-port"]) == 2
    assert "is not a cluster address" in capsys.readouterr().err


def test_analyze_takes_cluster_only_with_ranks(tmp_path, capsys, joinable):
    assert main(["analyze", *TRAINING, "--db", str(tmp_path / "h.db"), "--cluster", "10.0.0.5:6379"]) == 2
    assert "give --ranks N" in capsys.readouterr().err and joinable == []
    from console.cli.analyze_cmd import _ranks_on_cluster

    spec = _ranks_on_cluster(ddp_spec(), "10.0.0.5:6379")
    assert spec.options_for("torch").ranks_cluster == "10.0.0.5:6379" and joinable == ["10.0.0.5:6379"]


def test_sweep_places_every_points_ranks_on_the_cluster(joinable):
    args = argparse.Namespace(cluster="10.0.0.5:6379", send_model=False)
    base = {"model": "mlp", "mode": "training", "engine_options": {"torch": {"bucket_mb": 10}}}
    assert sweep_cmd._ranks_cluster(args, SweepGrid.parse(ranks="1,2"), base) == "10.0.0.5:6379"
    assert base["engine_options"]["torch"] == {"bucket_mb": 10, "ranks_cluster": "10.0.0.5:6379"}
    plain = {"model": "mlp"}
    assert sweep_cmd._ranks_cluster(args, SweepGrid.parse(batch="1,2"), plain) is None and plain == {"model": "mlp"}
    based = {"engine_options": {"torch": {"ranks": 2}}}  # --ranks 2 in the base, another axis swept
    assert sweep_cmd._ranks_cluster(args, SweepGrid.parse(bucket_mb="1,25"), based) == "10.0.0.5:6379"


def test_sweep_refuses_the_lab_nodes_axis_beside_ranks(tmp_path, capsys, joinable):
    db = tmp_path / "h.db"
    code = main(["sweep", "--mode", "training", "--batch", "4", "--ranks", "1,2", "--on", "accel=cpu,accel=gpu",
                 "--cluster", "10.0.0.5:6379", "--db", str(db)])
    assert code == 2 and ranks_cluster.ON_WITH_RANKS in capsys.readouterr().err and not db.exists()


def test_the_sweep_axes_replace_their_spec_flags_once():
    paths = {fld.path for fld in sweep_cmd._base_fields()}
    assert not paths & {"torch.ranks", "torch.bucket_mb", "torch.grad_accum", "scenario_options.loader_workers"}
    assert {"torch.scaling", "torch.inject_straggler_ms", "mode"} <= paths
    parser = argparse.ArgumentParser()
    sweep_cmd.add_arguments(parser)  # argparse refuses a flag added twice
    args = parser.parse_args(["--ranks", "1,2,4", "--bucket-mb", "1,25", "--grad-accum", "1,2",
                              "--loader-workers", "0,2", "--scaling", "weak"])
    assert getattr(args, "axis.ranks") == "1,2,4" and getattr(args, "axis.loader_workers") == "0,2"
    assert getattr(args, "torch.scaling") == "weak"
