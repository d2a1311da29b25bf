"""The I/O sweep (issue 21 item 4): option validation, the fio adapter's command line and its parse of captured
fio JSON, the heat map / knee / agreement logic, and tiny real sweeps with the built-in reader in a temporary
directory (behaviour, not speed: every point is a few milliseconds)."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.cli import storage_sweep
from engines.storage import fio, ioreader, iosweep, knee
from engines.storage.errors import StorageError

FIXTURES = Path(__file__).parent / "fixtures"
MIB = 1024 ** 2
TINY = {"block_sizes": [4096, 65536], "queue_depths": [1, 2], "readers": [1], "point_seconds": 0.02,
        "file_size": 4 * MIB, "engine": "built-in"}


def point(rw="read", pattern="seq", block=4096, qd=1, readers=1, mb_s=100.0, engine="built-in", direct=True):
    return {"rw": rw, "pattern": pattern, "block_bytes": block, "queue_depth": qd, "readers": readers,
            "mb_s": mb_s, "iops": mb_s * 1e6 / block, "p50_us": 10.0, "p99_us": 20.0, "direct": direct,
            "engine": engine, "cache": "cold", "cache_note": "", "seconds": 0.1, "ops": 1}


# ---- fio: parse captured output
def test_fio_parse_reads_bandwidth_iops_and_total_latency_percentiles():
    text = (FIXTURES / "fio_randread_libaio_direct.json").read_text()
    side = json.loads(text)["jobs"][0]["read"]
    parsed = fio.parse(text, "read")
    assert parsed["mb_s"] == pytest.approx(side["bw_bytes"] / 1e6)
    assert parsed["iops"] == pytest.approx(side["iops"])
    assert parsed["bytes"] == side["io_bytes"] and parsed["ops"] == side["total_ios"]
    assert parsed["latency_source"] == "lat_ns"  # submission → completion, as the built-in times it
    assert parsed["p50_us"] == pytest.approx(side["lat_ns"]["percentile"]["50.000000"] / 1000)
    assert parsed["p99_us"] == pytest.approx(side["lat_ns"]["percentile"]["99.000000"] / 1000)
    assert parsed["p50_us"] <= parsed["p99_us"]


def test_fio_parse_takes_the_write_side_and_tolerates_a_note_before_the_json():
    text = (FIXTURES / "fio_write_psync_buffered.json").read_text()
    side = json.loads(text)["jobs"][0]["write"]
    parsed = fio.parse("fio: note: both iodepth >= 1 and synchronous I/O engine are selected\n" + text, "write")
    assert parsed["mb_s"] == pytest.approx(side["bw_bytes"] / 1e6) and parsed["mb_s"] > 0
    assert parsed["ops"] == side["total_ios"]


def test_fio_parse_falls_back_to_completion_latency():
    document = json.loads((FIXTURES / "fio_randread_libaio_direct.json").read_text())
    side = document["jobs"][0]["read"]
    del side["lat_ns"]["percentile"]
    parsed = fio.parse(json.dumps(document), "read")
    assert parsed["latency_source"] == "clat_ns"
    assert parsed["p99_us"] == pytest.approx(side["clat_ns"]["percentile"]["99.000000"] / 1000)


@pytest.mark.parametrize("text, match", [("not json at all", "no job"), ("{broken", "not JSON"),
                                         ('{"jobs": [{"error": 5}]}', "error 5")])
def test_fio_parse_rejects_bad_output_with_a_fix(text, match):
    with pytest.raises(StorageError, match=match) as info:
        fio.parse(text, "read")
    assert info.value.fix


def test_fio_command_maps_the_point_like_the_built_in_reader():
    direct = fio.command("fio", "/d/f", 64 * MIB, "read", "rand", 4096, 8, 2, 0.5, True)
    assert {"--rw=randread", "--bs=4096", "--numjobs=2", "--iodepth=8", "--ioengine=libaio", "--direct=1",
            f"--size={32 * MIB}", f"--offset_increment={32 * MIB}", "--runtime=500ms",
            "--output-format=json", "--lat_percentiles=1"} <= set(direct)
    buffered = fio.command("fio", "/d/f", 64 * MIB, "write", "seq", MIB, 4, 2, 1.0, False)
    # psync has one request in flight per job: QD outstanding requests per reader need QD jobs per reader
    assert {"--rw=write", "--numjobs=8", "--iodepth=1", "--ioengine=psync", "--direct=0", "--end_fsync=1",
            f"--size={8 * MIB}"} <= set(buffered)
    with pytest.raises(StorageError, match="too small"):
        fio.command("fio", "/d/f", MIB, "read", "seq", MIB, 4, 2, 1.0, False)


# ---- knee, heat map, agreement
def test_the_knee_is_the_smallest_configuration_within_90_percent_of_the_best():
    points = [point(block=4096, qd=1, mb_s=50), point(block=4096, qd=4, mb_s=300),
              point(block=65536, qd=1, mb_s=400), point(block=65536, qd=4, mb_s=920),
              point(block=MIB, qd=4, mb_s=1000), point(block=MIB, qd=16, mb_s=980),
              point(block=MIB, qd=4, readers=2, mb_s=990)]
    found = knee.knees(points)["read/seq"]
    assert found["point"]["block_bytes"] == 65536 and found["point"]["queue_depth"] == 4
    assert found["share"] == pytest.approx(0.92)
    assert found["text"] == "64 KiB at QD 4 gives 92% of the best (1 GB/s at 1 MiB at QD 4)"


def test_a_best_that_nothing_smaller_approaches_is_its_own_knee():
    found = knee.knees([point(qd=1, mb_s=10), point(qd=4, readers=2, mb_s=100)])["read/seq"]
    assert found["point"] is found["best"] and "× 2 readers gives the best" in found["text"]


def test_the_heat_map_keeps_the_best_reader_count_per_cell():
    points = [point(block=4096, qd=1, readers=1, mb_s=10), point(block=4096, qd=1, readers=2, mb_s=15),
              point(block=4096, qd=4, mb_s=30), point(block=MIB, qd=1, mb_s=200),
              point(rw="write", pattern="rand", mb_s=5)]
    maps = knee.heatmaps(points)
    assert set(maps) == {"read/seq", "write/rand"}
    read = maps["read/seq"]
    assert read["x"] == [1, 4] and read["y"] == [4096, MIB]
    assert read["mb_s"] == [[15, 30], [200, None]] and read["readers"] == [[2, 1], [1, None]]


def test_agreement_pairs_the_same_points_and_leaves_buffered_writes_unjudged():
    points = [point(mb_s=95), point(mb_s=100, engine="fio"), point(block=MIB, mb_s=105),
              point(block=MIB, mb_s=100, engine="fio"), point(rw="write", direct=False, mb_s=50),
              point(rw="write", direct=False, mb_s=500, engine="fio")]
    found = knee.agreement(points)
    assert [r["ratio"] for r in found["ratios"]] == [0.95, 1.05, 0.1]
    assert found["ratios"][2]["comparable"] is False and "fsync" in found["ratios"][2]["why_not"]
    assert found["within_10_percent"] is True and found["median"] == pytest.approx(1.0)
    assert knee.agreement([point()])["ratios"] == []


# ---- options
@pytest.mark.parametrize("change, match", [
    ({"rw": "sideways"}, "--rw 'sideways' is not one of"),
    ({"queue_depths": []}, "--queue-depths must be a non-empty list"),
    ({"queue_depths": [0, 4]}, r"--queue-depths \[0\] outside 1–256"),
    ({"readers": [1.5]}, "--readers must be a non-empty list of whole numbers"),
    ({"direct": "on", "block_sizes": [512, 4096]}, "multiples of 4096"),
    ({"file_size": 1024}, "--file-size 1024 is too small"),
    ({"point_seconds": 0}, "--point-seconds 0 outside"),
    ({"engine": "dd"}, "--engine 'dd' is not one of"),
])
def test_bad_options_name_the_flag_and_the_fix(tmp_path, change, match):
    with pytest.raises(StorageError, match=match) as info:
        iosweep.validate({"dir": str(tmp_path), **change})
    assert info.value.fix


def test_a_missing_directory_or_fio_is_refused_before_anything_runs(tmp_path, monkeypatch):
    with pytest.raises(StorageError, match="not an existing directory"):
        iosweep.validate({"dir": str(tmp_path / "nope")})
    monkeypatch.setattr(fio, "available", lambda: None)
    with pytest.raises(StorageError, match="needs fio, which is not installed") as info:
        iosweep.validate({"dir": str(tmp_path), "engine": "both"})
    assert "--engine auto|built-in" in info.value.fix
    assert iosweep._engines("auto") == ["built-in"]  # absent fio: the built-in reader alone


def test_the_cli_parses_sizes_and_lists_into_validated_options(tmp_path):
    parser = argparse.ArgumentParser()
    storage_sweep.add_arguments(parser)
    args = parser.parse_args(["--dir", str(tmp_path), "--block-sizes", "64k,4k,1m", "--queue-depths", "16,1",
                              "--readers", "2", "--rw", "read", "--pattern", "rand", "--file-size", "64m",
                              "--point-seconds", "0.5", "--engine", "built-in"])
    options = storage_sweep.options_from(args)
    assert options["block_sizes"] == [4096, 65536, MIB] and options["queue_depths"] == [1, 16]
    assert options["readers"] == [2] and options["file_size"] == 64 * MIB and options["point_seconds"] == 0.5
    assert options["rw"] == "read" and options["pattern"] == "rand" and options["dir"] == str(tmp_path)
    for bad, flag in (("4q", "--block-sizes"), ("", "--block-sizes")):
        with pytest.raises(StorageError, match=flag):
            storage_sweep.parse_list(bad, flag, sizes=True)
    with pytest.raises(StorageError, match="not a list of whole numbers"):
        storage_sweep.parse_list("1,x", "--readers")
    assert storage_sweep.parse_size("2G", "--file-size") == 2 * 1024 ** 3


# ---- real (tiny) sweeps with the built-in reader
def test_a_built_in_sweep_measures_every_point_and_removes_its_file(tmp_path):
    progress = []
    result = iosweep.run({"dir": str(tmp_path), **TINY}, progress.append)
    assert list(tmp_path.iterdir()) == []  # the test file is gone
    assert json.loads(json.dumps(result)) == result
    assert result["kind"] == "sweep" and result["passed"] is None and result["engine"] == "built-in"
    assert len(result["points"]) == 2 * 2 * 2 * 2  # rw × pattern × blocks × queue depths
    for p in result["points"]:
        assert p["mb_s"] > 0 and p["iops"] > 0 and 0 < p["p50_us"] <= p["p99_us"] and p["ops"] > 0
        assert p["mb_s"] == pytest.approx(p["iops"] * p["block_bytes"] / 1e6, rel=1e-3)
        assert p["cache"] == ("n/a" if p["rw"] == "write" else p["cache"]) and p["engine"] == "built-in"
    assert set(result["heatmap"]) == {"read/seq", "read/rand", "write/seq", "write/rand"}
    assert all(len(m["mb_s"]) == 2 and len(m["mb_s"][0]) == 2 for m in result["heatmap"].values())
    assert "gives" in result["knee"]["read/seq"]["text"]
    assert {"seq_read_best_mb_s", "rand_write_best_iops", "seq_read_knee_p99_us"} <= set(result["figures"])
    assert result["latency_ns"] and all(len(pair) == 2 and pair[1] > 0 for pair in result["latency_ns"])
    assert progress[0]["fraction"] == 0.0 and progress[-1] == {"text": "done", "fraction": 1.0}
    assert any("QD 2" in step["text"] for step in progress)
    lines = storage_sweep.text_lines(result)
    assert any("knee:" in line for line in lines) and any(line.startswith("method:") for line in lines)


def test_several_readers_run_as_processes_over_their_own_regions(tmp_path):
    result = iosweep.run({"dir": str(tmp_path), **TINY, "readers": [1, 2], "rw": "read", "pattern": "seq",
                          "block_sizes": [65536], "queue_depths": [2]}, lambda _p: None)
    assert [(p["readers"], p["queue_depth"]) for p in result["points"]] == [(1, 2), (2, 2)]
    assert all(p["mb_s"] > 0 for p in result["points"])
    assert list(tmp_path.iterdir()) == []


def test_without_o_direct_reads_are_buffered_dropped_from_the_cache_and_say_so(tmp_path, monkeypatch):
    monkeypatch.setattr(iosweep, "direct_supported", lambda _path: (False, "the file system refuses O_DIRECT"))
    result = iosweep.run({"dir": str(tmp_path), **TINY, "rw": "read", "pattern": "rand", "block_sizes": [4096],
                          "queue_depths": [1]}, lambda _p: None)
    (only,) = result["points"]
    assert only["direct"] is False and "buffered: the file system refuses O_DIRECT" in only["cache_note"]
    assert only["cache"] in ("cold", "warm", "mixed")
    assert result["direct"] == {"used": False, "why": "the file system refuses O_DIRECT"}
    with pytest.raises(StorageError, match="O_DIRECT was asked for"):
        iosweep.run({"dir": str(tmp_path), **TINY, "direct": "on"}, lambda _p: None)
    assert list(tmp_path.iterdir()) == []


def test_the_test_file_is_removed_when_a_point_fails(tmp_path, monkeypatch):
    def broken(*_args, **_kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(ioreader.ReaderPool, "measure", broken)
    with pytest.raises(OSError, match="Input/output error"):
        iosweep.run({"dir": str(tmp_path), **TINY}, lambda _p: None)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(fio.available() is None, reason="fio is not installed")
def test_both_engines_run_the_same_points_and_report_their_agreement(tmp_path):
    result = iosweep.run({"dir": str(tmp_path), **TINY, "engine": "both", "rw": "read", "pattern": "seq",
                          "block_sizes": [65536], "queue_depths": [1]}, lambda _p: None)
    assert [p["engine"] for p in result["points"]] == ["built-in", "fio"]
    assert result["engine"] == "both" and result["fio_version"].startswith("fio-")
    (ratio,) = result["agreement"]["ratios"]
    assert ratio["ratio"] > 0 and ratio["comparable"] is True
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_stopped_with_sigterm_still_removes_its_file(tmp_path):
    """The console stops a storage worker with SIGTERM (console/storage/launch.py): the file must not stay behind."""
    code = ("from engines.storage import iosweep\n"
            f"iosweep.run({{'dir': {str(tmp_path)!r}, 'block_sizes': [65536], 'queue_depths': [1], 'readers': [1], "
            "'point_seconds': 30.0, 'file_size': 4 * 2 ** 20, 'engine': 'built-in'}, lambda _p: None)\n")
    process = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[2])
    try:
        deadline = time.monotonic() + 30
        while not list(tmp_path.iterdir()) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert list(tmp_path.iterdir()), "the sweep never created its test file"
        time.sleep(0.3)  # into the point
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
    assert list(tmp_path.iterdir()) == []


def test_a_buffered_read_that_wraps_past_the_file_is_labelled_mixed(tmp_path, monkeypatch):
    from array import array

    def measured(_pool, path, file_size, *_args):
        return {"bytes": 3 * file_size, "ops": 3, "seconds": 0.02, "mb_s": 3 * file_size / 0.02e6, "iops": 150.0,
                "start_ns": array("q", [1, 2, 3]), "latency_ns": array("q", [10, 20, 30])}

    monkeypatch.setattr(ioreader.ReaderPool, "measure", measured)
    monkeypatch.setattr(iosweep, "prepare_cache", lambda *_args: ("cold", "dropped from the page cache"))
    result = iosweep.run({"dir": str(tmp_path), **TINY, "direct": "off", "rw": "read", "pattern": "seq",
                          "block_sizes": [65536], "queue_depths": [1]}, lambda _p: None)
    (only,) = result["points"]
    assert only["cache"] == "mixed" and "read past its region's end" in only["cache_note"]
    assert result["cache_state"] == "mixed" and "page cache" in result["status_reason"]
