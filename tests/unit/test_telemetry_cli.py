"""`labconsole telemetry`: what each source sees, as text and as one JSON document."""

from __future__ import annotations

import json

from console.cli import main


def test_telemetry_json(capsys):
    assert main(["telemetry", "--seconds", "0.6", "--rate", "20", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rate_hz"] == 20.0 and report["seconds"] >= 0.6
    sources = {s["name"]: s for s in report["sources"]}
    assert set(sources) >= {"psutil", "nvml", "rapl", "amdsmi", "estimated"}
    for s in sources.values():
        assert s["available"] or s["reason"]  # an absent sensor says why; it is never a 0
        if not s["available"]:
            assert s["metrics"] == []
    cpu = {m["name"]: m for m in sources["psutil"]["metrics"]}["cpu.util"]
    assert cpu["unit"] == "%" and cpu["method"] == "measured"
    assert cpu["samples"] >= 8 and 0 <= cpu["mean"] <= 100 and cpu["last"] is not None
    worker = {m["name"]: m for m in sources["psutil"]["metrics"]}["worker.rss"]
    assert worker["samples"] == 0 and worker["last"] is None  # nothing watched: no value, not 0


def test_telemetry_text_and_source_filter(capsys):
    assert main(["telemetry", "--seconds", "0.3", "--source", "psutil", "--source", "rapl"]) == 0
    out = capsys.readouterr().out
    assert "psutil: available" in out and "cpu.util" in out
    assert "rapl: " in out and "nvml" not in out


def test_telemetry_bad_options(capsys):
    for argv in (["--rate", "100"], ["--seconds", "0"]):  # numbers are refused by argparse, as its usual error
        assert main(["telemetry", *argv]) == 2
    err = capsys.readouterr().err
    assert "argument --rate: must be a number ≥ 0.5 and ≤ 50 Hz, got '100'" in err
    assert "argument --seconds: must be a number > 0" in err
    assert main(["telemetry", "--source", "nope"]) == 2
    assert "known" in capsys.readouterr().err
