"""The noise floor for a run (console.machine.noise): recent draws (quick ones and the card's) pooled, the card's own floor
(any age, stated) when there is no recent draw; its row in the machine table; the stability line the CLI and
Markdown print."""

import socket
import time

import pytest

from console.analysis.stability_text import noise_text, stability_line, verdict_text
from console.machine import noise
from console.machine.cards import store_card
from console.machine.table import ceiling_rows

NOW = 1_800_000_000.0


def floor(spread, at, **extra):
    return {"spread": spread, "max_spread": spread * 2, "k": 3, "window_s": 0.25, "windows": 10,
            "medians_us": None, "measured_epoch_s": at, "kernel_version": noise.KERNEL_VERSION, **extra}


def draw(medians, at, **extra):
    """A quick draw as engines.machine.noise.measure_noise returns it."""
    from engines.machine.noise import halves_change, spread_of

    return {"spread": spread_of(medians), "k": 3, "window_s": 0.4, "windows": len(medians), "medians_us": medians,
            "halves_change": halves_change(medians), "measured_epoch_s": at, "kernel_version": noise.KERNEL_VERSION,
            **extra}


@pytest.fixture
def db(tmp_path):
    return tmp_path / "history.db"


def test_no_history_and_no_kept_floor_is_none(db):
    assert noise.recent("cpu", db, now=NOW) is None
    assert noise.noise_floor_for("cpu", db, measure=False, now=NOW) is None


def test_a_kept_quick_floor_serves_while_recent(db):
    assert noise.keep(floor(0.07, NOW - 60), db) == db.parent / noise.CACHE_NAME
    found = noise.recent("cpu", db, now=NOW)
    assert found["spread"] == 0.07 and found["age_s"] == pytest.approx(60)
    assert found["source"] == "quick measurement"
    assert noise.recent("cpu", db, now=NOW + noise.MAX_AGE_S) is None  # too old: measure again
    assert noise.noise_floor_for("cpu", db, measure=False, now=NOW + noise.MAX_AGE_S) is None
    assert noise.kept_floor(db)["spread"] == 0.07  # still kept, just not recent


def test_kept_floors_are_per_host_and_survive_a_broken_file(db):
    db.parent.mkdir(parents=True, exist_ok=True)
    (db.parent / noise.CACHE_NAME).write_text("{not json")
    assert noise.kept_floor(db) is None
    noise.keep(floor(0.05, NOW), db)
    assert set(__import__("json").loads((db.parent / noise.CACHE_NAME).read_text())) == {socket.gethostname()}


def test_recent_draws_are_pooled_with_the_cards(db):
    card = {"target": "cpu", "host": socket.gethostname(), "device_name": "test cpu", "quick": False,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 1200)),
            "noise_floor": draw([100.0, 102, 101, 103, 100, 101, 102, 100, 101, 102], NOW - 1200, window_s=1.0)}
    card_id = store_card(card, db)
    alone = noise.recent("cpu", db, now=NOW)  # 20 min old: no recent draw, so the card's own floor stands
    assert alone["source"] == f"machine card {card_id[:8]}" and alone["age_s"] == pytest.approx(1200)
    # a burst: a quick draw a minute ago jittered 50% between windows and its halves moved +40%
    noise.keep(draw([100.0, 150, 100, 150, 100, 140, 210, 140, 210, 140], NOW - 60), db)
    found = noise.recent("cpu", db, now=NOW)
    assert found["draws"] == 2 and found["age_s"] == pytest.approx(60)
    assert found["source"] == f"2 draws over the last 20 min (machine card {card_id[:8]}, quick measurement)"
    # the median over all 16 three-window groups: 8 near 3% (card) and 8 at 50% → between them, not either draw's
    assert 0.03 <= found["spread"] <= 0.5 and found["wander"] == pytest.approx(0.4)
    assert len(found["pooled_medians_us"]) == 2
    assert noise.recent("cpu", db, now=NOW + noise.POOL_AGE_S)["source"].startswith("machine card")  # pool aged


def test_the_pool_keeps_the_newest_draws_of_this_kernel_only(db):
    for i in range(noise.POOL_DRAWS + 2):
        noise.keep(draw([100.0 + i] * 10, NOW - 500 + i), db)
    assert len(noise.kept_draws(db)) == noise.POOL_DRAWS
    assert noise.kept_floor(db)["medians_us"][0] == 100.0 + noise.POOL_DRAWS + 1  # the newest
    noise.keep({**draw([100.0, 300] * 5, NOW - 10), "kernel_version": 1}, db)  # the kernel before the 4 MiB pass
    assert noise.recent("cpu", db, now=NOW)["draws"] == noise.POOL_DRAWS - 1 and \
        noise.recent("cpu", db, now=NOW)["spread"] == 0.0


def test_a_file_from_before_pooling_still_reads(db):
    import json

    db.parent.mkdir(parents=True, exist_ok=True)
    (db.parent / noise.CACHE_NAME).write_text(json.dumps({socket.gethostname(): floor(0.07, NOW - 60)}))
    assert noise.recent("cpu", db, now=NOW)["spread"] == 0.07
    noise.keep(floor(0.09, NOW - 30), db)
    assert len(noise.kept_draws(db)) == 2


def test_noise_floor_for_measures_when_the_newest_draw_is_old(db, monkeypatch):
    measured = []
    monkeypatch.setattr(noise, "measure_quick", lambda: measured.append(1) or draw([100.0, 110] * 5, time.time()))
    noise.keep(draw([100.0] * 10, time.time() - 3 * noise.MAX_AGE_S), db)  # in the pool, but not recent
    found = noise.noise_floor_for("cpu", db)
    assert measured == [1] and found["draws"] == 2 and found["wander"] == pytest.approx(0.1)
    assert noise.noise_floor_for("cpu", db)["draws"] == 2 and measured == [1]  # recent now: nothing measured
    later = time.time() + noise.POOL_MIN_GAP_S + 1  # a minute on, a pool under POOL_MIN draws takes another
    assert noise.noise_floor_for("cpu", db, now=later)["draws"] == 3 and measured == [1, 1]
    assert noise.noise_floor_for("cpu", db, now=later + noise.POOL_MIN_GAP_S)["draws"] == 3 and len(measured) == 2
    monkeypatch.setattr(noise, "measure_quick", lambda: (_ for _ in ()).throw(RuntimeError("no worker")))
    assert noise.noise_floor_for("cpu", db, now=time.time() + 2 * noise.MAX_AGE_S)["draws"] == 3  # failed: the old



def test_a_machine_cards_floor_stands_whatever_its_age(db):
    # the card's floor is the machine's noise: the window and sweeps use it days later, with its age stated
    card = {"target": "cpu", "host": socket.gethostname(), "device_name": "test cpu", "quick": False,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 3 * 86400)),
            "noise_floor": floor(0.06, NOW - 3 * 86400, window_s=1.0)}
    store_card(card, db)
    found = noise.recent("cpu", db, now=NOW)
    assert found["spread"] == 0.06 and found["age_s"] == pytest.approx(3 * 86400)
    assert noise.noise_floor_for("cpu", db, measure=False, now=NOW)["spread"] == 0.06  # nothing to measure
    assert "3 days ago" in noise.describe(found)
    noise.keep(floor(0.09, NOW - 2 * noise.MAX_AGE_S), db)  # an expired quick floor: the card's still stands
    assert noise.recent("cpu", db, now=NOW)["spread"] == 0.06


def test_usable_never_raises(tmp_path):
    (tmp_path / "history.db").write_text("not a database")
    assert noise.usable("cpu", tmp_path / "history.db") is None


def test_describe():
    assert "not measured" in noise.describe(None)
    text = noise.describe({**floor(0.15, NOW), "source": "quick measurement before the run", "age_s": 150})
    assert text == "noise floor 15% between 0.25-s windows (quick measurement before the run, 2 min ago)"
    pooled = noise.describe({**floor(0.15, NOW), "wander": 0.12, "source": "3 draws over the last 40 min", "age_s": 30})
    assert pooled == ("noise floor 15% between 0.25-s windows, halves moved up to 12% (3 draws over the last 40 min, "
                      "30 s ago)")


def test_machine_table_row():
    row = next(r for r in ceiling_rows({"noise_floor": floor(0.071, NOW, window_s=1.0),
                                        "method": {"noise_floor": "reference kernel"}})
               if r["key"] == "noise_floor.spread")
    assert row["text"] == "7.1% over 3 × 1-s windows, worst 14%" and row["method"] == "reference kernel"
    old = next(r for r in ceiling_rows({}) if r["key"] == "noise_floor.spread")
    assert old["value"] is None and "labconsole machine --refresh" in old["reason"]


def summary_with(stability):
    return {"valid": True, "validity": {"stability": stability}}


def test_stability_line_states_verdict_spread_and_noise():
    jittery = summary_with({"verdict": "jittery", "text": "jittery machine (noise 15%), no drift", "spread": 0.22,
                            "allowance": 0.30, "windows_compared": 3, "noise": 0.15,
                            "noise_floor": {"window_s": 0.25, "quick": True,
                                            "source": "quick measurement before the run"}})
    assert verdict_text(jittery) == "jittery machine (noise 15%), no drift"
    assert noise_text(jittery) == "machine noise 15% between windows"
    # a run stored before the typical spread was: the last windows against the allowance
    assert stability_line(jittery) == ("jittery machine (noise 15%), no drift · last 3 windows 22% apart (allowed 30%) "
                                       "· noise floor from 0.25-s windows of a reference kernel (quick measurement "
                                       "before the run)")
    # a VALID jittery run whose last 3 windows happened to be 50% apart: the line states what was judged (the
    # typical spread against the allowance) and keeps the last 3 as secondary, never "50% (allowed 20%)" alone
    judged = summary_with({"verdict": "jittery", "text": "jittery machine (noise 10%), no drift", "spread": 0.50,
                           "typical_spread": 0.14, "allowance": 0.20, "tolerance": 0.10, "windows_compared": 3,
                           "noise": 0.10, "noise_floor": {"window_s": 1.0, "source": "machine card ab12cd34",
                                                          "age_s": 3 * 86400}})
    line = stability_line(judged)
    assert "3 windows in a row typically 14% apart (allowed 20%), last 3 50%" in line
    assert "(machine card ab12cd34, 3 days old)" in line
    assert "50% apart (allowed" not in line
    unmeasured = summary_with({"verdict": "stable", "text": "stable", "spread": 0.04, "allowance": 0.10,
                               "windows_compared": 3, "noise": None, "noise_floor": None})
    assert stability_line(unmeasured).endswith("noise floor not measured (labconsole machine measures it)")
    assert noise_text(unmeasured) is None
    assert stability_line({"valid": True}) is None and stability_line(None) is None  # an older run


def test_a_session_aims_for_the_stored_floor_when_it_starts(db):
    # the window's and a sweep's runs get the stored floor at the start, not only when judging at the end
    from types import SimpleNamespace

    from console.run.session import RunSession
    from engines.spec import RunSpec

    noise.keep({**floor(0.15, time.time() - 60), "medians_us": None}, db)  # judged by its stored spread
    spec = RunSpec.from_dict({"model": "mlp", "scenario_options": {"until_stable": True}})
    session = RunSession(spec, SimpleNamespace(path=db), telemetry_hz=None)
    assert session.noise_floor["spread"] == 0.15
    assert session.spec.scenario_options.stability_allowance == pytest.approx(0.30)
    bare = RunSession(RunSpec.from_dict({"model": "mlp", "scenario_options": {"until_stable": True}}),
                      SimpleNamespace(path=db.parent / "elsewhere" / "history.db"), telemetry_hz=None)
    assert bare.noise_floor is None and bare.spec.scenario_options.stability_allowance is None
    bare.use_noise_floor({**floor(0.05, time.time()), "medians_us": None})  # the window's quick floor, measured after the session was made
    assert bare.spec.scenario_options.stability_allowance == pytest.approx(0.10)


def test_a_run_the_floor_made_invalid_is_judged_again_by_a_draw_taken_right_after(db, monkeypatch):
    from types import SimpleNamespace

    from console.run.session import RunSession
    from engines.spec import RunSpec

    calm = draw([100.0, 101] * 5, time.time() - 120, halves_change=0.01)
    noise.keep(calm, db)
    noisy_now = draw([100.0, 140, 100, 140, 100, 140, 100, 140, 100, 140], time.time())
    monkeypatch.setattr(noise, "measure_quick", lambda: noisy_now)
    events = []
    session = RunSession(RunSpec.from_dict({"model": "mlp"}), SimpleNamespace(path=db), telemetry_hz=None,
                         listener=events.append)

    def judged(*rules):
        return {"valid": not rules, "invalid_reasons": [{"rule": rule} for rule in rules]}

    assert not session._noise_floor_now(judged())  # valid: nothing to measure
    assert not session._noise_floor_now(judged("throughput"))  # invalid for a reason the floor does not decide
    assert session._noise_floor_now(judged("stability"))
    assert session.noise_floor["draws"] == 2 and session.noise_floor["source"].endswith(
        "the newest taken right after the run (the earlier floor called it invalid)")
    assert session.noise_floor["wander"] == pytest.approx(0.4)  # the larger of the pool's 1% and the draw's 40%
    from console.analysis import drift

    assert drift.worst_of(session.noise_floor, 3) == pytest.approx(0.4)  # the noisiest draw: the one just taken
    # 16 groups, half at 1% and half at 40%: twice their median (20.5%) just beats the noisiest draw
    assert drift.allowance_for(session.noise_floor, 3, 0.10) == pytest.approx(0.41)
    assert [e["phase"] for e in events if e["type"] == "phase"] == ["noise floor"]
    assert len(noise.kept_draws(db)) == 2  # kept in the pool for the runs after it
    monkeypatch.setattr(noise, "measure_quick", lambda: (_ for _ in ()).throw(RuntimeError("no worker")))
    assert not session._noise_floor_now(judged("drift"))  # not measured: the run keeps its verdict
