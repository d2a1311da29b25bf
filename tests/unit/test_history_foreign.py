"""Foreign files are left untouched: another tool's SQLite database (even one with a `schema_version` table) and
files that are not regular files are refused with a message naming the fix, and nothing is written to them."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from console.cli import main
from console.history import HistoryError, HistoryStore, HistoryWriter, open_reader
from console.history.merge import merge_history

FOREIGN = {
    "text version": ["CREATE TABLE schema_version (version TEXT)", "INSERT INTO schema_version VALUES ('1.2')",
                     "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"],
    "integer column, other columns": ["CREATE TABLE schema_version (id INTEGER PRIMARY KEY, version INTEGER)",
                                      "INSERT INTO schema_version (version) VALUES (2)",
                                      "CREATE TABLE migrations (name TEXT)"],
    "our columns, none of our tables": ["CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT "
                                        "NOT NULL)", "INSERT INTO schema_version VALUES (3, '2020-01-01')",
                                        "CREATE TABLE orders (id INTEGER)"],
    "a float version": ["CREATE TABLE schema_version (version REAL, applied_at TEXT)",
                        "INSERT INTO schema_version VALUES (1.5, '2020-01-01')"],
}


def _foreign_file(path: Path, statements: list[str]) -> Path:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def _journal_mode(path: Path) -> str:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_another_tools_schema_version_is_refused_and_the_file_untouched(tmp_path, kind):
    path = _foreign_file(tmp_path / "other.db", FOREIGN[kind])
    before = path.read_bytes()
    assert _journal_mode(path) == "delete"
    for opening in (HistoryStore, HistoryWriter.open, open_reader):
        with pytest.raises(HistoryError) as info:
            opening(path)
        assert "not a Lab Console history" in info.value.problem and "untouched" in info.value.problem
        assert "schema_version" in info.value.problem or "table" in info.value.problem
        assert "--db" in info.value.fix
    assert path.read_bytes() == before
    assert _journal_mode(path) == "delete"  # not switched to WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]  # no -wal, -shm or -lock beside it


def test_importing_another_tools_database_is_refused_untouched(tmp_path):
    source = _foreign_file(tmp_path / "other.db", FOREIGN["text version"])
    before = source.read_bytes()
    with HistoryStore(tmp_path / "mine.db") as store, pytest.raises(HistoryError, match="not a Lab Console"):
        merge_history(store, source)
    assert source.read_bytes() == before


def test_the_cli_says_so_and_exits_1(tmp_path, capsys):
    path = _foreign_file(tmp_path / "other.db", FOREIGN["text version"])
    before = path.read_bytes()
    assert main(["history", "--db", str(path)]) == 1
    assert main(["run", "--model", "mlp", "--iterations", "1", "--db", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("not a Lab Console history") == 2 and "Traceback" not in err
    assert path.read_bytes() == before


@pytest.mark.skipif(not os.path.exists("/dev/null") or os.name != "posix", reason="needs /dev/null")
def test_dev_null_is_not_a_history_and_gets_no_journal(capsys):
    leftovers = [Path(f"/dev/null{suffix}") for suffix in ("-journal", "-wal", "-shm", "-lock")]
    assert not any(p.exists() for p in leftovers)
    for opening in (HistoryStore, HistoryWriter.open, open_reader):
        with pytest.raises(HistoryError, match="not a regular file") as info:
            opening("/dev/null")
        assert "--db" in info.value.fix
    assert main(["run", "--model", "mlp", "--iterations", "1", "--db", "/dev/null"]) == 1
    assert main(["history", "--db", "/dev/null"]) == 1
    assert capsys.readouterr().err.count("not a regular file") == 2
    assert not any(p.exists() for p in leftovers)
