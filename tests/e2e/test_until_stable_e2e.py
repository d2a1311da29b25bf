"""`labconsole run --until-stable` for real: a worker measures the catalog mlp past its duration until the last
windows agree (or the cap), and the run stores the windows it took, the spread it ended with and the rules it was
judged by. Asserts structure and bounds only: how many windows a busy machine needs is not a test's business."""

import json
import os
import subprocess
import sys

import pytest

from console.history import open_reader


def labconsole(*args, env_extra=None, timeout=240):
    env = dict(os.environ)
    env.pop("LABCONSOLE_DB", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    home = tmp_path_factory.mktemp("until-stable")
    rules = home / "strict.toml"
    rules.write_text("stability_tolerance = 0.25\nmin_count = 50\n")
    db = home / "history.db"
    done = labconsole("run", "--model", "mlp", "--threads", "1", "--duration", "0.5", "--warmup", "0.1",
                      "--until-stable", "--max-duration", "1.5", "--rules", str(rules), "--json", "--db", str(db),
                      env_extra={"XDG_DATA_HOME": str(home / "data")})
    assert done.returncode in (0, 1), done.stderr  # 1: completed but, on a busy machine, maybe not valid
    return json.loads(done.stdout), db, rules


def test_the_run_stores_the_windows_it_took_and_its_final_spread(run):
    report, db, _ = run
    assert report["status"] == "completed", report["message"]
    block = report["until_stable"]
    assert 10 <= block["windows"] <= 30 and block["window_s"] == pytest.approx(0.05)
    assert block["ended"] in ("stable", "cap") and block["tolerance"] == 0.25  # aimed for the rules in force
    assert block["stable"] == (block["ended"] == "stable")
    if block["stable"] and block["judged"] == "last":  # the last 3 windows agreed within the tolerance
        assert block["spread"] <= 0.25
    elif block["stable"]:  # the noise floor was known: 3 windows in a row typically agreed within its allowance
        assert block["judged"] == "typical" and block["typical_spread"] <= block["allowance"]
        assert block["allowance"] >= 0.25
    # measured whole windows: from the duration up to the cap
    assert 0.5 <= report["duration_s"] <= 1.5 + 0.1
    with open_reader(db) as store:
        stored = store.get_run(report["run_id"])
    assert stored["summary"]["until_stable"]["windows"] == block["windows"]
    # judged on those windows (fewer only when a window would hold under min_window_count iterations)
    expected = min(block["windows"], stored["summary"]["iterations"] // 20)
    assert len(stored["summary"]["validity"]["windows"]) == expected
    assert stored["spec"]["scenario_options"]["until_stable"] is True
    # where the engine stopped with a clear margin, the verdict's jitter rule passes too (a drift is its own test);
    # at the very limit the console's windows (cut from the stored iterations) may fall either side of it
    margin = (block["spread"] <= 0.8 * block["tolerance"] if block.get("judged") == "last" else
              block.get("typical_spread") is not None and block["typical_spread"] <= 0.8 * block["allowance"])
    if block["stable"] and margin:
        assert stored["summary"]["validity"]["stability"]["verdict"] in ("stable", "jittery", "drift")


def test_the_run_stores_the_rules_it_was_judged_by_and_where_they_came_from(run):
    report, db, rules = run
    assert report["rules"]["rules"]["stability_tolerance"] == 0.25
    assert report["rules"]["sources"]["min_count"] == "--rules"
    assert report["rules"]["sources"]["windows"] == "default"
    assert report["rules"]["files"] == [str(rules)]
    with open_reader(db) as store:
        stored = store.get_run(report["run_id"])
    assert stored["summary"]["validity"]["rules"]["min_count"] == 50
    assert stored["environment"]["validity_rules"]["rules"]["stability_tolerance"] == 0.25


def test_until_stable_is_refused_for_the_server_scenario(tmp_path):
    done = labconsole("run", "--scenario", "server", "--qps", "50", "--until-stable", "--db", str(tmp_path / "h.db"))
    assert done.returncode == 2
    assert "--until-stable" in done.stderr and "scenario server does not use it" in done.stderr
    assert not (tmp_path / "h.db").exists()


def test_offline_measures_until_stable_too(tmp_path):
    done = labconsole("run", "--model", "mlp", "--scenario", "offline", "--batch", "8", "--threads", "1",
                      "--duration", "0.5", "--warmup", "0.1", "--until-stable", "--max-duration", "1.5", "--json",
                      "--db", str(tmp_path / "h.db"), env_extra={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "completed", report["message"]
    block = report["until_stable"]
    assert 10 <= block["windows"] <= 30 and block["ended"] in ("stable", "cap")
    assert 0.5 <= report["duration_s"] <= 1.5 + 0.2  # whole windows, give or take the calls in flight at the end
    assert report["rules"]["sources"]["stability_tolerance"] == "default"


def test_a_sweep_measures_each_point_until_stable(tmp_path):
    done = labconsole("sweep", "--model", "mlp", "--batch", "1,2", "--threads", "1", "--duration", "0.3",
                      "--warmup", "0.1", "--until-stable", "--max-duration", "0.9", "--json",
                      "--db", str(tmp_path / "h.db"), env_extra={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert done.returncode == 0, done.stderr
    points = json.loads(done.stdout)["points"]
    assert len(points) == 2
    for point in points:
        assert point["until_stable"].startswith(("stable after", "not stable after")), point
        assert f"({point['until_stable']})" in done.stderr  # the point's progress line says it too
