"""`labconsole report` end to end: real runs in worker processes, the HTML and the PDF, refusals and exit codes."""

import json
import os
import subprocess
import sys

import pytest


def labconsole(*args, db=None, timeout=180):
    env = {k: v for k, v in os.environ.items() if k not in ("LABCONSOLE_DB", "DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)  # the command must pick offscreen itself when there is no display
    command = [sys.executable, "-m", "console", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    db = tmp_path_factory.mktemp("report") / "history.db"
    ids = []
    for engine in ("torch", "onnxruntime"):
        done = labconsole("run", "--model", "mlp", "--engine", engine, "--duration", "0.6", "--warmup", "0.2",
                          "--name", "<b>release</b> & co", "--json", db=db)
        assert done.returncode == 0, done.stderr
        ids.append(json.loads(done.stdout)["run_id"])
    return db, ids


def test_html_and_pdf_of_a_comparison(runs, tmp_path):
    db, ids = runs
    done = labconsole("report", ids[0][:8], ids[1][:8], "--out", str(tmp_path / "cmp.html"), "--json", db=db)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["kind"] == "comparison" and facts["runs"] == ids
    # the finding names both engines and says which is faster, or that they are alike within the noise (this
    # machine's load decides which: either is the honest answer)
    assert "ONNX Runtime" in facts["finding"] and "PyTorch" in facts["finding"]
    assert any(words in facts["finding"] for words in ("faster than", "equally fast on this machine, within",
                                                        "could not be told apart")), facts["finding"]
    page = (tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert "&lt;b&gt;release&lt;/b&gt; &amp; co" in page and "<b>release" not in page
    done = labconsole("report", ids[1], "--out", str(tmp_path / "one.pdf"), "--page", "letter", db=db)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "one.pdf").read_bytes().startswith(b"%PDF")
    assert "report written to" in done.stdout and "ms per call at the median" in done.stdout


@pytest.mark.parametrize("args, problem", [
    (["nope1234", "--out", "{tmp}/r.html"], "there is no run 'nope1234'"),
    (["--out", "{tmp}/r.html"], "name the runs to report"),
    (["{run}", "--out", "{tmp}/r.txt"], "neither .html nor .pdf"),
    (["--sweep", "feedbeef", "--out", "{tmp}/r.html"], "there is no sweep"),
])
def test_bad_requests_are_refused_and_write_nothing(runs, tmp_path, args, problem):
    db, ids = runs
    done = labconsole("report", *[a.format(tmp=tmp_path, run=ids[0]) for a in args], db=db)
    assert done.returncode == 2 and problem in done.stderr
    assert not list(tmp_path.iterdir())


def test_an_unwritable_place_fails_with_the_fix(runs, tmp_path):
    """A missing folder is known before the report is gathered: a usage error (2), and nothing is created."""
    db, ids = runs
    done = labconsole("report", ids[0], "--out", str(tmp_path / "missing" / "r.html"), db=db)
    assert done.returncode == 2 and "cannot write" in done.stderr and "choose a directory" in done.stderr
    assert "mkdir -p" in done.stderr and not list(tmp_path.iterdir())
