"""The checkpoint card (engines.storage.checkpoint): sizes, scaling, save timed to fsync, cold restore checked bit
for bit, DCP with local ranks, Young's cost, the scratch folder removed whatever happens, and the CLI's flags."""

from __future__ import annotations

import argparse
import math
import os

import pytest

from console.cli import storage_checkpoint as cli
from engines.storage import checkpoint, checkpoint_state, coldfiles
from engines.storage.checkpoint_options import BYTES_PER_PARAM, SIZES, validate
from engines.storage.errors import StorageError
from engines.storage.young import young

MB = 1e6


def _quiet(_update):
    pass


# ---- Young's model
def test_young_interval_and_lost_fraction_follow_the_formula():
    cost = young(60.0, 24.0, load_s=30.0)
    mtbf = 24 * 3600
    assert cost["interval_s"] == pytest.approx(math.sqrt(2 * 60 * mtbf))
    assert cost["lost_fraction"] == pytest.approx(60 / cost["interval_s"] + cost["interval_s"] / (2 * mtbf))
    assert cost["lost_fraction"] == pytest.approx(math.sqrt(2 * 60 / mtbf))  # the closed form at the optimum
    assert cost["restore_fraction"] == pytest.approx(30 / mtbf)


def test_young_says_why_when_the_model_does_not_apply():
    assert young(None, 24.0)["interval_s"] is None and "not available" in young(None, 24.0)["note"]
    huge = young(20 * 3600.0, 24.0)
    assert huge["interval_s"] is None and huge["lost_fraction"] is None and "does not apply" in huge["note"]


# ---- sizing
def test_a_70b_shard_is_scaled_to_the_cap_and_says_by_how_much():
    plan = checkpoint_state.plan(validate({"size": "70b", "shard_gb": 0.01}))
    params, job_ranks, _ = SIZES["70b"]
    full = params * BYTES_PER_PARAM / job_ranks
    assert plan["full_shard_bytes"] == int(full)
    assert plan["bytes"] <= 0.01e9 and plan["scaled"]["factor"] == pytest.approx(plan["bytes"] / full)
    assert "--shard-gb 0.01" in plan["scaled"]["why"] and "14 bytes per parameter" in plan["assumption"]


def test_a_shard_under_the_cap_is_not_scaled_and_the_tensors_add_up():
    plan = checkpoint_state.plan(validate({"size": "1b", "job_ranks": 10000, "shard_gb": 100}))
    assert plan["scaled"] is None
    assert plan["bytes"] == int(SIZES["1b"][0] * BYTES_PER_PARAM / 10000) // 4096 * 4096
    state = checkpoint_state.synthetic(plan["bytes"], seed=3, prefix="rank3.")
    assert sum(t.numel() * t.element_size() for t in state.values()) == plan["bytes"]
    assert all(k.startswith("rank3.") for k in state) and len(state) == plan["tensors"]


def test_same_notices_one_flipped_byte():
    state = checkpoint_state.synthetic(1 << 20, seed=1)
    copy = {k: v.clone() for k, v in state.items()}
    assert checkpoint_state.same(state, copy)
    first = next(iter(copy))
    copy[first].view(-1).view(__import__("torch").uint8)[5] ^= 1
    assert not checkpoint_state.same(state, copy)


@pytest.mark.parametrize(("options", "needle"), [
    ({"model": "mlp", "size": "8b"}, "either --model"),
    ({"size": "9b"}, "unknown size"),
    ({"formats": "torch,zip"}, "unknown format"),
    ({"ranks": 0}, "--ranks"),
    ({"shard_gb": -1}, "--shard-gb"),
    ({"mtbf_hours": 0}, "--mtbf-hours"),
    ({"model": "mlp", "shard_gb": 1}, "--shard-gb sizes a synthetic shard"),
    ({"directory": "/no/such/folder"}, "does not exist"),
])
def test_bad_options_are_refused_with_a_fix(options, needle):
    with pytest.raises(StorageError) as err:
        validate(options)
    assert needle in str(err.value) and err.value.fix


# ---- running it
def test_torch_safetensors_and_dcp_save_restore_and_clean_up(tmp_path):
    result = checkpoint.run({"size": "8b", "shard_gb": 0.004, "ranks": 2, "directory": str(tmp_path)}, _quiet)
    assert set(result) >= {"kind", "label", "passed", "status_reason", "cache_state", "method", "figures",
                           "formats", "young", "state"}
    assert result["kind"] == "checkpoint" and result["passed"] is None
    assert list(result["formats"]) == ["torch", "safetensors", "dcp"]
    shard = result["state"]["bytes"]
    assert 0.003e9 < shard <= 0.004e9 and result["state"]["scaled"]["full_bytes"] > 1e9
    for name, entry in result["formats"].items():
        assert entry["save_s"] > 0 and entry["load_s"] > 0 and entry["bytes"] >= shard * entry["ranks"]
        assert entry["save_gb_s"] == pytest.approx(min(entry["rank_bytes"] / 1e9 / s for s in entry["per_rank_save_s"]))
        assert entry["save_s"] == max(entry["per_rank_save_s"])
        assert entry["cache_state"] in ("cold", "warm") and entry["cache_note"]
        assert result["figures"][f"{name}_save_gb_s"] == entry["save_gb_s"]
        cost = result["young"][name]
        assert cost["basis"].startswith("projected, not measured")  # scaled: the full shard is a projection
        assert cost["save_s"] == pytest.approx(result["state"]["scaled"]["full_bytes"] / 1e9 / entry["save_gb_s"])
    dcp = result["formats"]["dcp"]
    assert dcp["ranks"] == 2 and len(dcp["per_rank_save_s"]) == 2 and dcp["spread_percent"] is not None
    assert result["formats"]["torch"]["spread_percent"] is None
    if result["cache_state"] != "cold":
        assert result["status_reason"].startswith("warm")
    assert list(tmp_path.iterdir()) == []  # the scratch folder is gone


def test_a_catalog_model_is_measured_as_built(tmp_path):
    result = checkpoint.run({"model": "mlp", "formats": "torch", "directory": str(tmp_path)}, _quiet)
    assert result["state"]["source"] == "catalog model mlp" and result["state"]["scaled"] is None
    assert result["young"]["torch"]["basis"].startswith("the measured save duration")
    assert result["formats"]["torch"]["bytes"] >= result["state"]["bytes"]


def test_files_are_removed_when_a_format_fails(tmp_path, monkeypatch):
    from engines.storage import checkpoint_formats

    def broken(name, state, folder):
        (folder / "state.pt").write_bytes(b"half")
        raise OSError("disk gone")

    monkeypatch.setattr(checkpoint_formats, "measure", broken)
    with pytest.raises(OSError, match="disk gone"):
        checkpoint.run({"size": "1b", "shard_gb": 0.001, "formats": "torch", "directory": str(tmp_path)}, _quiet)
    assert list(tmp_path.iterdir()) == []


def test_a_memory_file_system_is_labelled_warm_with_why():
    shm = "/dev/shm"
    from engines.datafiles import filesystem_type

    if not os.path.isdir(shm) or filesystem_type(shm) != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm here")
    path = os.path.join(shm, f"labconsole-test-{os.getpid()}")
    with open(path, "wb") as out:
        out.write(b"x" * 8192)
    try:
        state, why = coldfiles.drop([path], shm)
    finally:
        os.remove(path)
    assert state == "warm" and "tmpfs" in why


# ---- the CLI module
def _parse(argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_flags_become_validated_options(tmp_path):
    options = cli.options_from(_parse(["--size", "70B", "--shard-gb", "0.5", "--ranks", "4", "--formats",
                                       "dcp,torch", "--dir", str(tmp_path), "--mtbf-hours", "12"]))
    assert options["size"] == "70b" and options["shard_gb"] == 0.5 and options["ranks"] == 4
    assert options["formats"] == ["dcp", "torch"] and options["mtbf_hours"] == 12.0
    with pytest.raises(StorageError, match="size a synthetic shard"):
        cli.options_from(_parse(["--model", "mlp", "--job-ranks", "8"]))
    with pytest.raises(SystemExit):
        _parse(["--model", "mlp", "--size", "8b"])


def test_cli_summary_names_each_format_and_the_training_cost(tmp_path):
    result = checkpoint.run({"size": "1b", "shard_gb": 0.002, "formats": "safetensors",
                             "directory": str(tmp_path)}, _quiet)
    text = "\n".join(cli.text_lines(result))
    assert "safetensors" in text and "of training time lost" in text and "projected, not measured" in text
    assert "scaled:" in text and "method:" in text


def test_a_failing_dcp_rank_stops_the_others_at_once(tmp_path):
    import subprocess
    import sys
    import time

    from engines.storage import checkpoint_dcp

    with open(tmp_path / "rank0.err", "wb") as err:
        failing = subprocess.Popen([sys.executable, "-c", "import sys; sys.stderr.write('no gloo here'); sys.exit(2)"],
                                   stderr=err)
    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    message = checkpoint_dcp._wait([failing, waiting], 60, tmp_path)
    assert "rank 0 exited with 2: no gloo here" in message
    assert waiting.poll() is not None and time.monotonic() - started < 30


def test_rounds_alternate_the_order_and_report_the_median(tmp_path, monkeypatch):
    from engines.storage import checkpoint_formats

    calls, real = [], checkpoint_formats.measure

    def recording(name, state, folder):
        calls.append(name)
        return real(name, state, folder)

    monkeypatch.setattr(checkpoint_formats, "measure", recording)
    result = checkpoint.run({"size": "1b", "shard_gb": 0.001, "formats": "torch,safetensors", "rounds": 3,
                             "directory": str(tmp_path)}, _quiet)
    assert calls == ["torch", "safetensors", "safetensors", "torch", "torch", "safetensors"]
    for entry in result["formats"].values():
        saves = sorted(r["save_s"] for r in entry["rounds"])
        assert len(saves) == 3 and entry["save_s"] == saves[1]
    assert "median of 3 rounds" in "\n".join(cli.text_lines(result))
    with pytest.raises(StorageError, match="--rounds"):
        validate({"rounds": 0})


def test_a_killed_runs_scratch_folder_is_removed_and_a_live_ones_kept(tmp_path):
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"{checkpoint.SCRATCH_PREFIX}{int(gone.stdout)}-abc"
    stale.mkdir()
    (stale / "state.pt").write_bytes(b"left behind")
    live = tmp_path / f"{checkpoint.SCRATCH_PREFIX}{os.getppid()}-def"
    live.mkdir()
    checkpoint.run({"size": "1b", "shard_gb": 0.001, "formats": "torch", "directory": str(tmp_path)}, _quiet)
    assert not stale.exists() and live.exists()


def test_a_disk_without_room_is_refused_before_writing(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**9, 10**9 - 10**6, 10**6))
    with pytest.raises(StorageError) as err:
        checkpoint.run({"size": "1b", "shard_gb": 0.01, "directory": str(tmp_path)}, _quiet)
    assert "GB free" in err.value.message and "--shard-gb" in err.value.fix
    assert list(tmp_path.iterdir()) == []
