"""A verdict that is wrong, confirmed for real: a GEMM-heavy graph (synth-gemm, whose time follows its FLOPs) is
handed the verdict "host-overhead" as if the analysis had called it that; the product's confirmation
(console.cli.analyze_confirm.confirm_run, real RunSession rounds, interleaved) runs the change that tells
host-overhead from compute, and the answer is "refuted", naming compute — the issue's detector case
(host-overhead predicted ≤ ×1.25 for 4× the data, the data took ×4)."""

import json

from test_analyze_cli import CARD, with_card
from test_analyze_confirm_cli import labconsole

from console.cli.analyze_confirm import confirm_run
from console.history import HistoryStore
from engines.spec import RunSpec

WRONG = {"class": "host-overhead", "secondary": "compute", "confidence": 0.9, "sentence": "Bound by host overhead.",
         "scores": {"host-overhead": 0.9, "compute": 0.4, "memory-bandwidth": 0.1, "cache-resident": 0.1},
         "evidence": {}}


def test_a_wrong_verdict_is_refuted_by_its_own_experiment_and_the_data_names_compute(tmp_path):
    db = with_card(tmp_path / "history.db")
    params = ["--param", "rows=256", "--param", "features=256", "--param", "layers=2"]
    # --console-cores 1: on a 2-core machine the worker has one core, so the data change alone is run (a second
    # thread's ×0.56 sits on compute's ×0.625 bound and could leave compute merely "not ruled out")
    done = labconsole("analyze", "--model", "synth-gemm", *params, "--duration", "0.25", "--warmup", "0.05",
                      "--profile-iterations", "4", "--threads", "1", "--console-cores", "1", "--no-telemetry",
                      "--json", db=db)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    with HistoryStore(db) as store:
        record = {**store.get_run(run_id), "ops": store.ops(run_id)}
    spec = RunSpec.from_dict(record["spec"]).validate()
    confirmation, problem = confirm_run(db, spec, record, WRONG, CARD, max_rounds=4)  # the card analyze used
    assert problem is None
    assert confirmation["tested"] == "host-overhead" and confirmation["rival"] == "compute"
    experiment = next(e for e in confirmation["experiments"] if e["intervention"].startswith("rows ×"))
    assert experiment["outcome"] == "not as predicted"  # (and threads ×2 where the worker has two cores)
    assert experiment["ci95"][0] > 1.25  # wholly above what host overhead allows for more data per op
    assert confirmation["outcome"] == "refuted" and confirmation["says"] == "compute"
    # "the data says compute instead" — or, where a thread change ran too and its interval straddled compute's
    # bound, "of the classes only compute … not ruled out": either way the experiments name compute
    assert confirmation["sentence"].startswith(("refuted — the data says compute instead",
                                                "refuted — of the classes only compute"))
    with HistoryStore(db) as store:  # kept beside the (wrong) verdict, which stays as it was stated
        stored = store.get_run(run_id)["summary"]["bottleneck"]
    assert stored["class"] == "host-overhead" and stored["confirmation"]["outcome"] == "refuted"
