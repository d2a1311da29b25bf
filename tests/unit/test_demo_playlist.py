"""Demo playlists: a bad file is refused naming the item, the field and the fix; a bad item is kept and fails in
its turn; specs come from the one spec builder; race sides are told apart in words. And `labconsole demo` checks
a playlist before any window opens."""

import json
import os
import stat

import pytest

from console.cli import main as cli_main
from console.demo.playlist import (
    DEFAULT_HOLD_S,
    DEFAULT_ROUNDS,
    MAX_BYTES,
    MAX_DEPTH,
    ItemProblem,
    PlaylistError,
    check_specs,
    load,
    parse,
    side_labels,
)
from engines.spec import RunSpec

GOOD = {
    "title": "Lab demo", "loop": False, "hold_s": 2,
    "defaults": {"model": "mlp", "duration_s": 0.5, "warmup_s": 0.1},
    "items": [
        {"name": "MLP, batch 8", "run": {"batch": 8}},
        {"name": "PyTorch vs ONNX Runtime", "race": {"a": {"engine": "torch"}, "b": {"engine": "onnxruntime"},
                                                     "rounds": 2}},
        {"race": {"both": {"precision": "fp32"}, "a": {"batch": 1}, "b": {"batch": 8}}},
        {"run": {"spec": {"model": "mlp", "engine": "onnxruntime", "batch": 4, "duration_s": 0.5}}},
    ],
}


def write(tmp_path, data, name="playlist.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_good_playlist_parses_with_its_settings(tmp_path):
    playlist = load(write(tmp_path, GOOD))
    assert [item.kind for item in playlist.items] == ["run", "race", "race", "run"]
    assert playlist.loop is False and playlist.hold_s == 2 and playlist.title == "Lab demo"
    assert playlist.items[1].rounds == 2 and playlist.items[2].rounds == DEFAULT_ROUNDS
    assert check_specs(playlist) == []
    defaults = parse({"items": [{"run": {}}]})
    assert defaults.loop is True and defaults.hold_s == DEFAULT_HOLD_S
    assert defaults.with_loop(False).loop is False


def test_specs_come_from_the_option_paths_with_defaults_under_them(tmp_path):
    playlist = load(write(tmp_path, GOOD))
    title, spec = playlist.build_run(playlist.items[0])
    assert title == "MLP, batch 8"
    assert (spec.model, spec.batch, spec.duration_s, spec.warmup_s) == ("mlp", 8, 0.5, 0.1)
    assert spec.name == "MLP, batch 8"  # the item's name names the run in the history
    title, spec = playlist.build_run(playlist.items[3])  # a RunSpec dict is run as it is: no defaults under it
    assert (spec.engine, spec.batch, spec.warmup_s) == ("onnxruntime", 4, RunSpec().warmup_s)
    assert title == spec.label()


def test_race_sides_are_named_by_what_differs(tmp_path):
    playlist = load(write(tmp_path, GOOD))
    title, (label_a, spec_a), (label_b, spec_b) = playlist.build_race(playlist.items[1])
    assert (label_a, label_b) == ("PyTorch", "ONNX Runtime")
    assert title == "PyTorch vs ONNX Runtime"
    assert spec_a.name == "PyTorch vs ONNX Runtime · A: PyTorch" and spec_b.name.endswith("B: ONNX Runtime")
    assert (spec_a.duration_s, spec_b.model) == (0.5, "mlp")  # playlist defaults reach both sides
    title, (label_a, _), (label_b, _) = playlist.build_race(playlist.items[2])
    assert (label_a, label_b) == ("batch 1", "batch 8") and title == "batch 1 vs batch 8"
    same = RunSpec()
    assert side_labels(same, RunSpec()) == (f"{same.label()} (A)", f"{same.label()} (B)")
    assert side_labels(RunSpec(precision="int8"), RunSpec()) == ("int8", "fp32")
    assert side_labels(RunSpec(name="eager"), RunSpec(threads=1)) == ("eager", "1 thread")


@pytest.mark.parametrize(("data", "where", "words", "fix"), [
    ([1, 2], "playlist.json", "must be a JSON object", "smallest playlist"),
    ({"itmes": []}, "playlist.json, itmes", "unknown key 'itmes' (did you mean 'items'?)", "use only title"),
    ({"items": []}, "playlist.json, items", "missing or empty", 'add "items"'),
    ({"loop": "yes", "items": [{"run": {}}]}, "loop", "must be true or false", '"loop": true'),
    ({"hold_s": -1, "items": [{"run": {}}]}, "hold_s", "from 0 to 3600", '"hold_s"'),
    ({"items": [{"name": "x", "run": {}, "race": {}}]}, 'item 1 ("x")', "has both run and race", "exactly one"),
    ({"items": [{"run": {}}, {"name": "r", "race": {"a": {}}}]}, 'item 2 ("r"), race', "has no 'b' side",
     '"b"'),
    ({"items": [{"race": {"a": {}, "b": {}, "rounds": 0}}]}, "item 1, race.rounds", "from 1 to 20",
     '"rounds": 3'),
    ({"items": [{"run": {"--batch": 8}}]}, "item 1, run.--batch", "keyed by option path", "write 'batch'"),
    ({"items": [{"run": {"spec": {}, "batch": 2}}]}, "item 1, run", "a RunSpec", "either"),
    ({"items": [{"race": {"both": {"batch": 2}, "a": {"spec": {}}, "b": {}}}]}, "item 1, race.a",
     '"both" cannot apply', "move"),
])
def test_a_bad_file_names_the_place_the_problem_and_the_fix(tmp_path, data, where, words, fix):
    with pytest.raises(PlaylistError) as caught:
        load(write(tmp_path, data))
    message = str(caught.value)
    assert where in caught.value.where
    assert words in message and "Fix: " in message and fix in caught.value.fix


def test_unreadable_files_are_refused_with_the_fix(tmp_path):
    with pytest.raises(PlaylistError, match="no such file. Fix: give the path"):
        load(tmp_path / "missing.json")
    with pytest.raises(PlaylistError) as caught:
        load(write(tmp_path, '{"items": [\n  {"run": {}},\n]}'))
    assert "line 3 column 1" in caught.value.where and "not valid JSON" in str(caught.value)
    assert "no trailing commas" in caught.value.fix


def test_a_bad_item_is_kept_and_fails_in_its_turn_with_field_and_fix(tmp_path):
    playlist = parse({"defaults": {"model": "mlp"}, "items": [
        {"name": "typo", "run": {"bach": 8}},
        {"name": "zero", "run": {"batch": 0}},
        {"name": "gone", "run": {"model": str(tmp_path / "gone.onnx"), "engine": "onnxruntime"}},
        {"name": "ok", "run": {"batch": 2}},
        {"race": {"a": {}, "b": {"engine": "tensorrt"}}},
    ]})
    problems = check_specs(playlist)
    assert [p.where for p in problems] == ['item 1 ("typo"), run.bach', 'item 2 ("zero"), run.batch',
                                           'item 3 ("gone"), run.model', "item 5, race.b.engine"]
    assert "unknown option 'bach' (did you mean 'batch'?)" in problems[0].problem
    assert "--batch" in problems[1].fix
    assert "model file not found" in problems[2].problem and "existing .onnx" in problems[2].fix
    assert "tensorrt" in problems[3].problem and "allowed: " in problems[3].problem
    with pytest.raises(ItemProblem):
        playlist.build_run(playlist.items[0])
    assert playlist.build_run(playlist.items[3])[1].batch == 2


def test_the_demo_command_refuses_a_bad_file_before_any_window(tmp_path, capsys):
    path = write(tmp_path, {"items": [{"race": {"a": {}}}]})
    assert cli_main(["demo", str(path)]) == 2
    err = capsys.readouterr().err
    assert "item 1, race: has no 'b' side. Fix: add \"b\"" in err


def test_demo_check_lists_the_items_that_would_fail(tmp_path, capsys):
    path = write(tmp_path, {"items": [{"run": {"model": "mlp"}}, {"name": "bad", "run": {"batch": 0}}]})
    assert cli_main(["demo", str(path), "--check"]) == 2
    out = capsys.readouterr().out
    assert "2 items (0 races), loops" in out and 'will fail: item 2 ("bad"), run.batch' in out
    assert cli_main(["demo", str(path), "--check", "--json", "--once"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["loop"] is False and report["problems"][0]["where"].endswith("batch")
    good = write(tmp_path, GOOD, "good.json")
    assert cli_main(["demo", str(good), "--check"]) == 0


# ---- A playlist is a small regular file (issue 19, case 3)
def _refused(path, *words):
    with pytest.raises(PlaylistError) as caught:
        load(path)
    for word in words:
        assert word in str(caught.value)
    return caught.value


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path, capsys):
    fifo = tmp_path / "playlist.json"
    os.mkfifo(fifo)  # no writer ever comes: reading it would wait forever
    _refused(fifo, "is a FIFO (named pipe), not a regular file", "Fix: give the path of a playlist JSON file")
    for argv in (["--check"], ["--once"]):
        assert cli_main(["demo", str(fifo), *argv]) == 2
        err = capsys.readouterr().err
        assert "FIFO" in err and len(err.strip().splitlines()) == 1


@pytest.mark.timeout(20)
def test_a_character_device_is_refused_without_reading_it(tmp_path, capsys):
    node = tmp_path / "zero"
    try:
        os.mknod(node, 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers: endless bytes
    except PermissionError:
        pytest.skip("making a device node needs root")
    _refused(node, "is a character device")
    link = tmp_path / "playlist.json"
    link.symlink_to(node)  # the path's target decides, and the message names it
    _refused(link, f"is a character device ({node})")
    assert cli_main(["demo", str(link), "--check"]) == 2
    assert "character device" in capsys.readouterr().err


def test_a_file_larger_than_the_cap_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(4 * MAX_BYTES)  # sparse: takes no disk, would take 4 MiB of memory to read
    _refused(big, "is 4.0 MiB, larger than the 1.0 MiB such a file may be", "at most 1,024 KiB")
    just = write(tmp_path, {**GOOD, "title": "x" * (MAX_BYTES - len(json.dumps(GOOD)) - 10)}, "just.json")
    assert load(just).title.startswith("xxx")  # up to the cap is a playlist like any other


def test_a_directory_is_refused_naming_it(tmp_path):
    _refused(tmp_path, "is a directory, not a regular file")


@pytest.mark.parametrize("argv", [["--check"], ["--once"]])
def test_deep_nesting_is_refused_with_the_limit_not_a_recursion_error(tmp_path, capsys, argv):
    deep = write(tmp_path, "[" * 100_000)  # was RecursionError from json.loads
    error = _refused(deep, f"nested more than {MAX_DEPTH} deep")
    assert error.where.endswith(f"line 1 column {MAX_DEPTH + 1}")
    assert cli_main(["demo", str(deep), *argv]) == 2
    err = capsys.readouterr().err
    assert f"at most {MAX_DEPTH} levels" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    nested = {"items": [{"run": {"model_params": json.loads("[" * (MAX_DEPTH - 4) + "]" * (MAX_DEPTH - 4))}}]}
    assert load(write(tmp_path, nested, "ok.json"))  # exactly the limit: parses (the item's spec fails later)
    nested["items"][0]["run"]["model_params"] = [nested["items"][0]["run"]["model_params"]]
    _refused(write(tmp_path, nested, "over.json"), "nested more than")


def test_brackets_and_escaped_quotes_inside_strings_do_not_count(tmp_path):
    title = '[{\\"' * 200 + "\\\\"  # brackets, escaped quotes and a final escaped backslash, all text
    text = '{"title": "' + title + '", "items": [{"run": {"model": "mlp"}}]}'
    assert load(write(tmp_path, text)).title == json.loads(text)["title"]


def test_numbers_no_float_holds_are_refused_with_the_field(tmp_path):
    _refused(write(tmp_path, '{"hold_s": ' + "9" * 400 + ', "items": [{"run": {}}]}'), "hold_s", "must be a number")
    _refused(write(tmp_path, '{"items": [{"run": {"batch": ' + "9" * 5000 + "}}]}", "digits.json"),
             "not a usable JSON document", "a few digits")
