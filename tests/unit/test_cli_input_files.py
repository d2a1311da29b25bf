"""Files the user names as input (a rules file, a --spec file, a history to import) and --db: a FIFO is refused, not
waited on; a character device is refused by its type, not read without end; a name the system cannot take is an
error line, not an OSError traceback; a refused import creates no target history; an empty --db is a usage error
(it silently meant the default history). Found by the CLI fuzz test (issue 19); each test fails without its fix.
"""

from __future__ import annotations

import io
import os
import stat
import sys

import pytest

from console.cli import main
from console.files.small_file import SmallFileError, read_small_file
from console.history import HistoryStore


def _zero_device(path):
    """A node like /dev/zero (endless bytes), made here: never the system's."""
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    return path


def _run(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


# ---- console.files.small_file
def test_small_file_reads_a_regular_file_and_refuses_the_rest_by_type(tmp_path):
    (tmp_path / "ok.toml").write_bytes(b"a = 1\n")
    assert read_small_file(tmp_path / "ok.toml", 100) == b"a = 1\n"
    os.mkfifo(tmp_path / "fifo")
    cases = {tmp_path / "fifo": "is a FIFO (named pipe), not a regular file",
             _zero_device(tmp_path / "zero"): "is a character device, not a regular file",
             tmp_path: "is a directory, not a regular file",
             tmp_path / ("x" * 300): "cannot be read (File name too long)"}
    for path, reason in cases.items():
        with pytest.raises(SmallFileError) as caught:
            read_small_file(path, 100)
        assert caught.value.reason == reason and not caught.value.missing
    with pytest.raises(SmallFileError) as caught:
        read_small_file(tmp_path / "nope", 100)
    assert caught.value.missing


def test_small_file_refuses_more_than_its_limit(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 2048)
    with pytest.raises(SmallFileError, match=r"is 2 KiB, larger than the 1 KiB such a file may be"):
        read_small_file(tmp_path / "big", 1024)


# ---- rules files and --spec files
def test_a_rules_file_that_is_a_fifo_or_a_device_is_refused_not_waited_on(tmp_path, capsys):
    os.mkfifo(tmp_path / "rules.fifo")
    code, err = _run(capsys, "rules", "show", "--rules", str(tmp_path / "rules.fifo"))
    assert code == 2 and "is a FIFO (named pipe), not a regular file" in err
    code, err = _run(capsys, "rules", "show", "--rules", str(_zero_device(tmp_path / "zero")))
    assert code == 2 and "is a character device" in err
    code, err = _run(capsys, "rules", "show", "--rules", str(tmp_path / ("r" * 300)))
    assert code == 2 and "File name too long" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "zero", "deep"])
def test_a_spec_file_that_is_a_fifo_a_device_or_nested_without_end_is_refused_before_anything(tmp_path, capsys,
                                                                                               kind):
    path = tmp_path / "spec.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        _zero_device(path)
    else:
        path.write_text("[" * 100_000)
    code, err = _run(capsys, "run", "--spec", str(path), "--db", str(tmp_path / "h.db"))
    why = {"fifo": "is a FIFO", "zero": "is a character device", "deep": "nested too deeply"}[kind]
    assert code == 2 and why in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.json"]  # no history created


# ---- import
@pytest.mark.parametrize("kind", ["fifo", "zero", "too-long", "missing", "dir"])
def test_a_refused_import_source_creates_no_target_history(tmp_path, capsys, kind):
    source = {"fifo": tmp_path / "other.db", "zero": tmp_path / "other.db", "too-long": tmp_path / ("o" * 300),
              "missing": tmp_path / "missing.db", "dir": tmp_path / "adir"}[kind]
    if kind == "fifo":
        os.mkfifo(source)
    elif kind == "zero":
        _zero_device(source)
    elif kind == "dir":
        source.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    code, err = _run(capsys, "import", str(source), "--db", str(tmp_path / "new.db"))
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no new.db, no new.db-lock


def test_an_undecodable_file_name_is_printed_as_its_bytes(tmp_path, monkeypatch, capsys):
    """stdout is strict UTF-8 in a UTF-8 locale: printing 'caf\\udce9' raised UnicodeEncodeError (a traceback)."""
    with HistoryStore(tmp_path / "mine.db"):
        pass
    other = os.path.join(tmp_path, os.fsdecode(b"caf\xe9.db"))
    with HistoryStore(other) as store:
        store.finish_run(store.create_run({"model": "mlp"}), "completed", {"iterations": 1})
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["import", other, "--db", str(tmp_path / "mine.db")]) == 0
    assert b"caf\xe9.db" in stdout.buffer.getvalue() and stdout.errors == "strict"  # given back as it was


def test_an_empty_db_path_is_a_usage_error_not_the_default_history(capsys):
    code, err = _run(capsys, "history", "--db", "")
    assert code == 2 and "argument --db: an empty path" in err


@pytest.mark.parametrize("command", [["history"], ["whatif", "abcd"], ["run", "--model", "mlp"]])
def test_a_db_path_the_system_cannot_name_is_a_usage_error(tmp_path, capsys, command):
    """A 300-character --db name was an OSError traceback (ENAMETOOLONG from the history's path checks)."""
    code, err = _run(capsys, *command, "--db", str(tmp_path / ("h" * 300)))
    assert code == 2 and "argument --db: File name too long" in err
    assert list(tmp_path.iterdir()) == []


def test_a_model_file_that_is_a_fifo_is_named_for_what_it_is(tmp_path, capsys):
    """It was 'model file not found' although the path is there."""
    os.mkfifo(tmp_path / "model.onnx")
    code, err = _run(capsys, "run", "--model", str(tmp_path / "model.onnx"), "--db", str(tmp_path / "h.db"))
    assert code == 2 and "is not a regular file (a device, a pipe or a socket)" in err and "not found" not in err
    code, err = _run(capsys, "run", "--model", str(tmp_path / "missing.onnx"), "--db", str(tmp_path / "h.db"))
    assert code == 2 and "model file not found" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


@pytest.mark.parametrize("command", [["history"], ["baseline", "show"], ["regressions"]])
def test_a_labconsole_db_the_system_cannot_name_is_a_usage_error(tmp_path, capsys, monkeypatch, command):
    """LABCONSOLE_DB with a 300-character name was an OSError traceback (db_path(args).exists() in the commands)."""
    monkeypatch.setenv("LABCONSOLE_DB", str(tmp_path / ("h" * 300)))
    code, err = _run(capsys, *command)
    assert code == 2 and "the LABCONSOLE_DB environment variable: File name too long" in err
    assert _run(capsys, "rules", "show")[0] == 0  # a command that never opens the history does not care


def test_the_history_store_names_a_path_too_long_instead_of_raising_oserror(tmp_path):
    from console.history import HistoryError, open_reader

    for opening in (HistoryStore, open_reader):
        with pytest.raises(HistoryError, match="File name too long"):
            opening(tmp_path / ("h" * 300))
