"""The command line under an adversarial user (issue 19): subcommand × option × hostile value, and the exit-code
contract asserted for every command line Hypothesis builds.

Values: paths that are FIFOs, character devices (made with os.mknod in the example's own folder, never the
system's), directories, symlinks to a device, missing parents, a regular file as parent, 300-character names,
4,000-character paths, undecodable bytes (surrogate-escaped), model files that are FIFOs or junk; numbers
(negative, zero, nan, inf, huge, text); dates; run ids and prefixes (empty, 1 character, unknown, ambiguous, SQL
wildcards, 10,000 characters); texts with newlines or a right-to-left override.

The contract, for every command line:
- the exit status is 0, 1, 2 or 3 — nothing escapes main(), no "Traceback (most recent call last)" is printed;
- one line in three, standard output is a full disk or a pipe whose reader left: a command that wrote to it exits
  1 with "cannot write to standard output: No space left on device", or 141 and nothing more, whatever it did;
- a non-zero exit says why on stderr, in one line, the last (`labconsole: error: …`, `labconsole CMD: error: …`
  after argparse's usage, `labconsole: cannot judge: …`); compare --fail-on and regressions may answer 1 or 3 on
  stdout alone ("slower", "a step", "cannot tell");
- a refusal (non-zero) creates nothing and replaces nothing in the example's folder; device nodes and FIFOs stay
  what they were whatever the exit;
- the commands that only read leave the history's bytes as they were, and create no file but their --out;
- values that cannot be right are never a success: an unknown, too short or ambiguous run, a date that is not
  one, nan/inf/text for a number (exit 2), an --out that is a directory or cannot be named, a history path (--db,
  or LABCONSOLE_DB one line in ten) that is not a history file.

In process, as the other CLI tests call it (a subprocess per example would cost half a second each), with
standard output and error as the real ones are: UTF-8 text over bytes, strict on stdout and backslashreplace on
stderr, so printing an undecodable path to stdout fails here as it would in a terminal. Commands that start runs
(run, analyze, sweep) are cut where the run would begin: reaching the history writer (or a machine card
measurement, for analyze and machine; the first worker, for time-to-train) means every check passed, and that
counts as a success without running anything. Not here: demo without --check (the window), self-test, node and
cluster (Ray), targets --refresh.
Each example has 30 s (SIGALRM): a command that waits on a FIFO fails the example instead of hanging the suite.

Bounded and derandomized in `make test` (10 examples per command, 200 in all, 20–30 s on 2 cores);
`make fuzz` sets FUZZ_EXAMPLES (5000 by default there) for a longer probe that CI does not run. The number of
command lines tried, by command and exit status, is printed at the end of the module (`pytest -s`).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hashlib
import io
import os
import re
import shutil
import signal
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.cli import main

# ---- How many
COMMANDS = ("history", "models", "compare", "export", "report", "regressions", "whatif", "rules", "baseline",
            "import", "doctor", "make-data", "demo", "run", "analyze", "sweep", "targets", "machine", "telemetry",
            "time-to-train")
READERS = {"history", "models", "compare", "export", "report", "regressions", "whatif", "rules", "doctor", "demo"}
TOTAL = int(os.environ.get("FUZZ_EXAMPLES") or 0)
FUZZ_PER_COMMAND = max(1, TOTAL // len(COMMANDS)) if TOTAL else 10
FUZZ = settings(derandomize=True, max_examples=FUZZ_PER_COMMAND, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
EXAMPLE_TIMEOUT_S = 30
TRIED: collections.Counter = collections.Counter()
# FUZZ_SURVEY=FILE: write every broken command line to FILE (one line each) and carry on instead of failing at the
# first: a survey of what is still open, for whoever fixes it.
SURVEY = os.environ.get("FUZZ_SURVEY")

# ---- The history every example starts from: runs whose ids share prefixes, an analysed run, two machine cards
RUN_A = "abcd1111" + "0" * 24
RUN_B = "abcd2222" + "1" * 24
RUN_C = "fedc3333" + "2" * 24
RUNS = (RUN_A, RUN_B, RUN_C)


@dataclass(frozen=True)
class Arg:
    """One word of a command line before it is made concrete: `kind` says what sort of hostile value it is (the
    oracles below read it), `value` is the text, or the name of a path in the example's folder when `path`."""

    value: str
    kind: str = "plain"
    path: bool = False
    role: str = ""  # "ref", "date", "number", "out", "db", "env-db", "data-dir", "trace", "input", "make-dir"


def P(name: str, kind: str, role: str) -> Arg:
    return Arg(name, kind, path=True, role=role)


# ---- Hostile values
BAD_NUMBERS = ("nan", "NaN", "inf", "-inf", "1e400", "abc", "", "1..2")
NUMBERS = (*BAD_NUMBERS, "-1", "0", "0.0", "-0", "1", "2", "0.5", "0.05", "1.5", "5%", "1e308", "99999999999999999999",
           "0x10", " 1", "1_000", "+1", "1e-400", "\u0661")  # the last: an Arabic-Indic one, which int() reads
BAD_DATES = ("notadate", "2026-13-45", "2026-02-30", "yesterday", "", "0000-00-00", "1e9", "-1", "2026-11-01junk",
             "2026-11-01T25:00", "2026-W44")
DATES = (*BAD_DATES, "2026-11-01", "2026-11-01T12:00:00", "2026-11-01T12:00:00Z", "2026-11-01T12:00:00+02:00",
         "9999-12-31", "1970-01-01")
BAD_REFS = ("", "a", "abc", "abcd", "ffffffff", "f" * 32, "zzzz", "%", "abc%", "____", "%%%%", "abcd' OR '1'='1",
            os.fsdecode(b"\xff\xfe\xfd\xfc"), "abcd\n1111", "ABCD", "a" * 10_000)
GOOD_REFS = (RUN_A, RUN_B[:8], RUN_C[:4], RUN_C, RUN_A[:5])
TEXTS = ("mlp", "", "%", "_", "nope", "x" * 300, os.fsdecode(b"caf\xe9"), "torch", "cpu", "fp32",
         "'; DROP TABLE runs; --", "-", "a\nb", "\u202eevil")
# Paths in the example's folder: what each is, and whether it can serve as a file to write (a device, a FIFO
# or "-" may be written into or refused; never replaced).
PATH_KINDS = {
    "missing": "new.out", "missing-html": "new.html", "missing-pdf": "new.pdf", "missing-db": "new.db",
    "missing-parent": "no/such/dir/new.html", "parent-is-file": "regular.txt/new.html", "dir": "adir",
    "empty-dir": "empty", "fifo": "fifo", "chardev": "chardev", "link-to-chardev": "link-to-chardev",
    "regular": "existing.out", "text-as-db": "regular.txt", "too-long": "x" * 300 + ".html",
    "too-deep": "/".join(["d" * 200] * 22) + "/new.html", "undecodable": os.fsdecode(b"caf\xe9\xff.html"),
    "empty": "", "dash": "-", "datadir": "data", "playlist": "playlist.json", "spec": "spec.json",
    "fulldev": "fulldev",  # like /dev/full: every write fails. Only where a file is written (reading it never ends)
}
UNNAMEABLE = {"too-long", "too-deep", "empty"}
NOT_WRITABLE_FILES = {"dir", "empty-dir", "parent-is-file", *UNNAMEABLE}
NOT_HISTORIES = {"dir", "empty-dir", "parent-is-file", "fifo", "chardev", "link-to-chardev", "regular",
                 "text-as-db", "datadir", "playlist", *UNNAMEABLE}
NODES = ("fifo", "chardev", "fulldev")
MISSING = {"missing", "missing-html", "missing-pdf", "missing-db", "missing-parent", "undecodable"}


def paths(role: str, kinds=tuple(k for k in PATH_KINDS if k != "fulldev")):
    return st.sampled_from(sorted(kinds)).map(lambda kind: P(PATH_KINDS[kind], kind, role))


def words(values, kind_of, role=""):
    return st.sampled_from(values).map(lambda v: Arg(v, kind_of(v), role=role))


WRITABLE = ("missing-html", "missing-pdf", "missing", "regular", "dash", "chardev", "link-to-chardev", "undecodable",
            "fulldev")
out_paths = paths("out", WRITABLE) | paths("out")  # half of them a place a file can go


numbers = words(NUMBERS, lambda v: "bad-number" if v in BAD_NUMBERS else "number", "number")
dates = words(DATES, lambda v: "bad-date" if v in BAD_DATES else "date", "date")
refs = (st.sampled_from(BAD_REFS).map(lambda v: Arg(v, "bad-ref", role="ref"))
        | st.sampled_from(GOOD_REFS).map(lambda v: Arg(v, "ref", role="ref")))  # half of them name a run
texts = words(TEXTS, lambda v: "text")
flag = None  # an option without a value


def choice(*values):
    return words(values, lambda v: "choice")


# Per command: its fixed words (a strategy of lists of Arg) and its options (flag -> strategy or None).
# History readers also take --db; every command line gets the example's copy of the history unless --db is drawn.
COMMON = {"--json": flag}
MODEL_FILES = ("model-fifo.onnx", "model-dir.pt2", "model-junk.onnx", "model-junk.pt2", "model-missing.onnx")
SPEC_OPTIONS = {"--model": st.sampled_from(["mlp", "nope", ""]).map(Arg) | paths("input")
                | st.sampled_from(MODEL_FILES).map(lambda name: P(name, name, "input")),
                "--duration": numbers, "--batch": numbers, "--iterations": numbers, "--warmup": numbers,
                "--threads": numbers, "--data-dir": paths("data-dir"), "--rules": paths("input"),
                "--scenario": choice("single-stream", "input-pipeline", "server", "nope"), "--qps": numbers}
SHAPES = ("3x4", "2x2x2", "0", "-1x2", "x", "", "1e3", "100000x100000x100000", "3x224x224", "1x" * 40 + "1", "nan")
DTYPES = ("float32", "int8", "uint16", "float16", "object", "str", "V8", "complex64", "nope", "")


def _fixed(*parts):
    return st.tuples(*parts).map(list)


COMMAND_LINES = {
    "history": (_fixed(), {**COMMON, "--limit": numbers, "--model": texts, "--engine": texts, "--target": texts,
                           "--precision": texts, "--tag": texts, "--since": dates, "--until": dates, "--valid": flag,
                           "--invalid": flag}),
    "models": (_fixed(), COMMON),
    "compare": (_fixed(refs, refs), {**COMMON, "--noise": numbers, "--alpha": numbers,
                                     "--fail-on": choice("slower", "faster", "different", "worse")}),
    "export": (st.lists(refs, min_size=1, max_size=3),
               {**COMMON, "--format": choice("csv", "json", "trace", "xml"), "--summary": flag,
                "--out": out_paths}),
    "report": (st.tuples(st.lists(refs, max_size=3), out_paths).map(lambda t: [*t[0], Arg("--out"), t[1]]),
               {**COMMON, "--sweep": refs,
                                            "--page": choice("a4", "letter", "a3")}),
    "regressions": (_fixed(), {**COMMON, "--since": dates, "--threshold": numbers, "--alpha": numbers,
                               "--improvements": flag}),
    "whatif": (_fixed(refs), {**COMMON, "--onto": texts, "--peak-gflops": numbers, "--bandwidth-gbs": numbers,
                              "--call-floor-us": numbers, "--threads": numbers}),
    "rules": (_fixed(choice("show")), {"--json": flag, "--rules": paths("input")}),
    "baseline": (st.tuples(choice("set", "show", "clear"), st.lists(refs, max_size=1)).map(lambda t: [t[0], *t[1]]),
                 COMMON),
    "import": (_fixed(paths("input")), COMMON),
    "doctor": (_fixed(), {"--json": flag, "--sample": words(BAD_NUMBERS + ("-1", "0", "0.1", "61", "1e9"),
                                                            lambda v: "bad-number" if v in BAD_NUMBERS else "number",
                                                            "number")}),
    "make-data": (_fixed(), {"--dir": paths("make-dir"), "--shape": choice(*SHAPES), "--dtype": choice(*DTYPES),
                             "--count": words(BAD_NUMBERS + ("-1", "0", "1", "2", "10000001"),
                                              lambda v: "bad-number" if v in BAD_NUMBERS else "number", "number"),
                             "--format": choice("npy", "f32", "bin", "png"), "--seed": numbers,
                             "--model": choice("mlp", "nope"), "--json": flag}),
    "demo": (_fixed(paths("input")), {}),
    "run": (_fixed(), {**COMMON, **SPEC_OPTIONS, "--spec": paths("input")}),
    "analyze": (_fixed(), {**COMMON, **SPEC_OPTIONS, "--trace": paths("trace")}),
    "sweep": (_fixed(), {**COMMON, **{k: v for k, v in SPEC_OPTIONS.items() if k != "--batch"},
                         "--batch": choice("1,2", "1", "0,1", "nan", "", "1..4", "1,1")}),
    "targets": (_fixed(), COMMON),  # not --refresh: a discovery costs seconds
    "machine": (_fixed(), {**COMMON, "--target": choice("cpu", "cuda", "cuda:7", "tpu", ""), "--refresh": flag,
                           "--storage": paths("input"), "--repeats": numbers, "--quick": flag}),
    "telemetry": (_fixed(), {"--json": flag, "--seconds": words(BAD_NUMBERS + ("0.05", "-1", "0", "1e9"),
                                                                lambda v: "bad-number" if v in BAD_NUMBERS else "",
                                                                "number"),
                             "--rate": numbers, "--source": choice("psutil", "rapl", "nvml", "nope", "")}),
    "time-to-train": (_fixed(), {**COMMON, "--ranks": numbers, "--runs": numbers, "--target": numbers,
                                 "--batch": numbers, "--max-steps": numbers, "--eval-every": numbers,
                                 "--seed": numbers, "--timeout": numbers, "--threads": numbers,
                                 "--backend": choice("gloo", "nccl", "mpi"),
                                 "--cluster": texts, "--tag": texts}),
}
NO_DB = {"doctor", "make-data", "rules", "telemetry"}
DB_USERS = {"history", "compare", "export", "report", "regressions", "whatif", "baseline", "import", "run", "analyze",
            "sweep", "time-to-train"}  # models and demo --check take --db but never open it


@st.composite
def command_lines(draw, name: str) -> list[Arg]:
    fixed, options = COMMAND_LINES[name]
    argv = [Arg(name), *draw(fixed)]
    for option in draw(st.lists(st.sampled_from(sorted(options)), unique=True, max_size=4)) if options else ():
        value = options[option]
        argv += [Arg(option)] if value is None else [Arg(option), draw(value)]
    if name == "make-data" and not any(a.value == "--dir" for a in argv):
        argv += [Arg("--dir"), draw(paths("make-dir"))]
    if name == "make-data" and not any(a.value in ("--shape", "--model") for a in argv):
        argv += [Arg("--shape"), Arg("2x2", "choice")]
    if name == "make-data" and not any(a.value == "--count" for a in argv):
        argv += [Arg("--count"), Arg("2", "number", role="number")]
    if name == "demo":
        argv.append(Arg("--check"))  # without it a playable playlist opens the full-screen window
    if name not in NO_DB:
        which = draw(st.sampled_from(["the history"] * 8 + ["a hostile --db", "a hostile LABCONSOLE_DB"]))
        if which == "a hostile --db":
            argv += [Arg("--db"), draw(paths("db"))]
        elif which == "a hostile LABCONSOLE_DB":
            argv.append(draw(paths("env-db")))  # not a word of the command line: the environment's
        else:
            argv += [Arg("--db"), Arg("HISTORY", "history", role="db")]
    return argv


# ---- One example: its own folder with every kind of path, and the history's copy
@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The history every example copies: three runs (two share the prefix abcd), one of them analysed, with
    latencies compare can judge, and a card for this host and one for another."""
    import socket

    from console.history import HistoryStore

    path = tmp_path_factory.mktemp("fuzz-history") / "history.db"
    rng = np.random.default_rng(19)
    with HistoryStore(path) as store:
        for i, run_id in enumerate(RUNS):
            spec = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "precision": "fp32",
                    "scenario": "single-stream", "name": f"fuzz {i}"}
            store.create_run(spec, run_id=run_id)
            latency = (rng.lognormal(0, 0.05, 600) * (1_000_000 + 50_000 * i)).astype(np.int64)
            store.add_latencies(run_id, np.cumsum(latency), latency)
            summary = {"latency_ms": {"p50": float(np.median(latency)) / 1e6}, "iterations": 600,
                       "throughput_per_s": 900.0}
            if run_id == RUN_C:
                store.add_ops(run_id, [{"op": "aten::mm", "calls": 10, "time_s": 0.1, "flops": 5e9, "bytes": 4e7}])
                summary["profile"] = {"iterations": 10, "wall_s": 0.11, "op_time_s": 0.1}
            store.finish_run(run_id, "completed", summary)
        for host, gflops in ((socket.gethostname(), 50), ("faster-box", 200)):
            store.add_machine_card({"target": "cpu", "host": host, "measured_at": "2026-11-30T00:00:00Z",
                                    "peak_flops": {"fp32": gflops * 1e9}, "memory_bandwidth_gbs": 20,
                                    "call_floor_us": {"torch": 20.0}, "llc_bytes": 8 << 20, "threads": 2})
    return path


def _make_folder(root: Path, template: Path) -> Path:
    folder = Path(tempfile.mkdtemp(dir=root))
    (folder / "regular.txt").write_text("not a history, not a playlist\n")
    (folder / "existing.out").write_text("an earlier export the user keeps\n")
    (folder / "adir").mkdir()
    (folder / "adir" / "inside.txt").write_text("x\n")
    (folder / "empty").mkdir()
    (folder / "data").mkdir()
    for i in range(2):
        np.save(folder / "data" / f"s{i}.npy", np.zeros((4,), dtype=np.float32))
    (folder / "playlist.json").write_text('{"items": [{"name": "mlp", "run": {"model": "mlp", "duration_s": 1}}]}\n')
    (folder / "spec.json").write_text('{"model": "mlp", "duration_s": 1, "warmup_s": 0.2}\n')
    os.mkfifo(folder / "fifo")
    os.mkfifo(folder / "model-fifo.onnx")
    (folder / "model-dir.pt2").mkdir()
    (folder / "model-junk.onnx").write_text("not a model\n")
    (folder / "model-junk.pt2").write_bytes(b"PK\x03\x04 not really a zip")
    os.mknod(folder / "chardev", 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # reads nothing, swallows writes
    (folder / "link-to-chardev").symlink_to(folder / "chardev")
    os.mknod(folder / "fulldev", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    (folder / "db").mkdir()
    shutil.copyfile(template, folder / "db" / "history.db")
    return folder


def _resolve(arg: Arg, folder: Path) -> str:
    if arg.kind == "history":
        return str(folder / "db" / "history.db")
    if not arg.path or arg.kind in ("empty", "dash"):
        return arg.value
    return os.path.join(folder, arg.value)


def _snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under the folder (not the history's own folder): its type and inode, and for a file its size
    and mtime."""
    seen = {}
    for top, dirs, files in os.walk(folder):
        if Path(top) == folder / "db":
            dirs[:] = []
            continue
        for name in dirs + files:
            entry = os.path.join(top, name)
            info = os.lstat(entry)
            kind = stat.S_IFMT(info.st_mode)
            seen[os.path.relpath(entry, folder)] = (kind, info.st_ino) + (
                () if kind == stat.S_IFDIR else (info.st_size, info.st_mtime_ns))  # a folder's mtime means nothing
    return seen


def _short(text: str, folder: Path) -> str:
    """A failure message one can read: the example's folder as $TMP, a run of 12 or more equal characters as
    'x×300'."""
    text = text.replace(str(folder), "$TMP")
    return re.sub(r"(\w)\1{11,}", lambda m: f"{m.group(1)}×{len(m.group(0))}", text)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Hung(BaseException):
    """An example ran past EXAMPLE_TIMEOUT_S (a FIFO opened and waited on, say)."""


class _WouldRun(BaseException):
    """run, analyze or sweep passed every check and would now start the run."""


def _would_measure(*args, **kwargs):
    raise _WouldRun


@pytest.fixture(scope="module")
def no_runs():
    """run, analyze and sweep stop where the work would begin: once the history writer opened (a history that
    cannot be opened is still their refusal), before the run; analyze and machine measure no machine card."""
    import console.ttt
    from console.cli import analyze_cmd, common, run_cmd, sweep_cmd
    from console.machine import cards as machine

    def open_then_stop(args):
        writer = common.open_writer(args)
        if writer is None:
            return None
        writer.close()
        raise _WouldRun

    with pytest.MonkeyPatch.context() as patch:
        for module in (run_cmd, analyze_cmd, sweep_cmd):
            patch.setattr(module, "open_writer", open_then_stop)
        patch.setattr(analyze_cmd, "_machine_card", lambda target, args: (None, "not measured in the fuzz test"))
        patch.setattr(machine, "measure", _would_measure)
        patch.setattr(console.ttt, "run", _would_measure)  # time-to-train: every check passed, the history open
        yield


@dataclass
class Outcome:
    code: int | str
    out: str
    err: str
    stdout_failed: str = "kept"  # "full" or "pipe" when the command wrote to a standard output that failed


class _Sink(io.RawIOBase):
    """Standard output's bytes: kept, or refused as a full disk ("full") or a reader that left ("pipe") would.
    No fileno(): what main() does to a failed stream's descriptor stays away from the test process's own."""

    def __init__(self, fails: str) -> None:
        super().__init__()
        self.fails, self.data, self.attempted = fails, bytearray(), False

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.attempted = self.attempted or len(data) > 0
        if self.fails == "full":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.fails == "pipe":
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
        self.data += data
        return len(data)


def _call(argv: list[str], stdout_is: str = "kept") -> Outcome:
    """main(argv) with real-like standard streams, a deadline, and whatever escapes it named."""
    sink = _Sink(stdout_is)
    stdout = io.TextIOWrapper(io.BufferedWriter(sink), encoding="utf-8", errors="strict")
    stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)

    def on_alarm(*_):
        raise _Hung

    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, EXAMPLE_TIMEOUT_S)  # pytest-timeout's, when it runs one
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code: int | str = main(argv)
            except SystemExit as exc:
                code = f"SystemExit({exc.code!r}) escaped main()"
            except _WouldRun:
                code = 0
            except _Hung:
                code = f"hung for {EXAMPLE_TIMEOUT_S} s"
            except Exception as exc:  # noqa: BLE001 — named in the failure
                import traceback

                code = f"{type(exc).__name__} escaped main(): {exc}\n{traceback.format_exc()}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # pytest-timeout's alarm goes on with what was left of it
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))
        sink.fails = "no more"  # what is still buffered goes quietly
        with contextlib.suppress(OSError, ValueError):
            stdout.flush()
    return Outcome(code, sink.data.decode("utf-8", "replace"), stderr.buffer.getvalue().decode("utf-8", "replace"),
                   stdout_is if sink.attempted else "kept")


# ---- The contract
def _problems(name: str, args: list[Arg], outcome: Outcome, before: dict, after: dict, db_changed: bool) -> list[str]:
    code, problems = outcome.code, []
    if outcome.stdout_failed == "full":  # its output was lost: 1, and one line that says so
        line = "labconsole: error: cannot write to standard output: No space left on device"
        return [] if code == 1 and line in outcome.err else [f"exit {code!r} after a failed write to standard output"]
    if outcome.stdout_failed == "pipe":  # the reader left: 141 and nothing more said
        return [] if code == 141 and "standard output" not in outcome.err else [f"exit {code!r} after a broken pipe"]
    if not isinstance(code, int) or code not in (0, 1, 2, 3):
        return [f"exit {code!r}"]
    for stream, text in (("stderr", outcome.err), ("stdout", outcome.out)):
        if "Traceback (most recent call last)" in text or "Exception ignored" in text:
            problems.append(f"a traceback on {stream}")
    answers = name in ("compare", "regressions") and code in (1, 3)  # the answer (or why none) is the document
    if code and not (outcome.err.strip() or (answers and outcome.out.strip())):
        problems.append(f"exit {code} with nothing on stderr")
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("labconsole") and ("error" in line or "cannot judge" in line)]
    if code and lines and (len(said) != 1 or lines[-1] != said[0]):
        problems.append(f"exit {code} without its reason as one last line on stderr")
    for node in NODES:
        if after.get(node, (None, None))[:2] != before[node][:2]:
            problems.append(f"the {node} in the folder was replaced")
    if code:
        new = sorted(set(after) - set(before))
        changed = sorted(k for k in before if k in after and before[k] != after[k] and k not in NODES)
        gone = sorted(set(before) - set(after))
        if new or changed or gone:
            problems.append(f"refused (exit {code}) but the folder changed: new {new}, changed {changed}, "
                            f"gone {gone}")
    if name in READERS:
        if db_changed:
            problems.append("a reader changed the history's bytes")
        out_targets = {a.value.split("/")[0] for a in args if a.role == "out"}
        new = [k for k in set(after) - set(before) if k.split("/")[0] not in out_targets]
        if new:
            problems.append(f"a reader created {sorted(new)}")
    if code == 0:
        problems += [f"exit 0 although {why}" for why in _never_a_success(name, args)]
    return problems


def _never_a_success(name: str, args: list[Arg]) -> list[str]:
    """Why this command line cannot have succeeded, if a value in it can never be right."""
    why = []
    for arg in args:
        if arg.kind == "bad-ref" and name != "baseline":
            why.append(f"the run {arg.value!r} is unknown, too short or ambiguous")
        if arg.kind == "bad-ref" and name == "baseline" and args[1].value in ("set", "clear"):
            why.append(f"the run {arg.value!r} is unknown, too short or ambiguous")
        if arg.kind == "bad-date":
            why.append(f"{arg.value!r} is not a date")
        if arg.kind == "bad-number":
            why.append(f"{arg.value!r} is not a number")
        if arg.role == "out" and arg.kind in NOT_WRITABLE_FILES:
            why.append(f"--out is {arg.kind}")
        unset = arg.role == "env-db" and arg.kind == "empty"  # an empty variable is an unset one: the default
        if arg.role in ("db", "env-db") and arg.kind in NOT_HISTORIES and not unset and name in DB_USERS:
            why.append(f"--db is {arg.kind}")
        if arg.role in ("db", "env-db") and arg.kind in MISSING and name in ("regressions", "compare", "export", "report",
                                                                     "whatif"):
            why.append("--db names no history")
        if arg.role == "data-dir" and arg.kind != "datadir":
            why.append(f"--data-dir is {arg.kind}")
        if arg.role == "trace" and arg.kind in NOT_WRITABLE_FILES:
            why.append(f"--trace is {arg.kind}")
    return why


def _exit_2_expected(args: list[Arg], code) -> list[str]:
    bad = [a.value for a in args if a.kind == "bad-number"]
    return [f"exit {code}, not 2, for the number {bad[0]!r}"] if bad and code != 2 else []


@pytest.fixture(scope="module", autouse=True)
def _count():
    yield
    total = sum(TRIED.values())
    lines = [f"CLI fuzz: {total} command lines tried ({FUZZ_PER_COMMAND} per command)"]
    for command in COMMANDS:
        codes = {k[1]: v for k, v in TRIED.items() if k[0] == command}
        lines.append(f"  {command:12} " + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items(), key=str)))
    print("\n" + "\n".join(lines))


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_keeps_the_exit_code_contract(name, template, no_runs, tmp_path):
    cwd = os.getcwd()

    @FUZZ
    @given(args=command_lines(name), stdout_is=st.sampled_from(["kept"] * 4 + ["full", "pipe"]))
    def check(args: list[Arg], stdout_is: str) -> None:
        folder = _make_folder(tmp_path, template)
        os.chdir(folder)  # a relative default could only land here
        try:
            argv = [_resolve(a, folder) for a in args if a.role != "env-db"]
            env_db = [_resolve(a, folder) for a in args if a.role == "env-db"]
            db = folder / "db" / "history.db"
            digest, before = _digest(db), _snapshot(folder)
            with pytest.MonkeyPatch.context() as patch:
                if env_db:
                    patch.setenv("LABCONSOLE_DB", env_db[0])
                outcome = _call(argv, stdout_is)
            argv = argv + [f"(LABCONSOLE_DB={env_db[0]!r})"] if env_db else argv
            after = _snapshot(folder)
            problems = _problems(name, args, outcome, before, after, _digest(db) != digest)
            if isinstance(outcome.code, int) and outcome.stdout_failed == "kept":
                problems += _exit_2_expected(args, outcome.code)
            TRIED[name, outcome.code if isinstance(outcome.code, int) else "escaped"] += 1
            if problems and SURVEY:
                with open(SURVEY, "a", encoding="utf-8", errors="backslashreplace") as survey:
                    survey.write(_short(f"labconsole {' '.join(map(repr, argv))}: {'; '.join(problems)}"
                                        f" | {(outcome.err.strip().splitlines() or [''])[-1][:300]}\n", folder))
                return
            assert not problems, _short(f"labconsole {' '.join(map(repr, argv))}\n  " + "\n  ".join(problems)
                                        + f"\n--- stderr:\n{outcome.err[-3000:]}\n--- stdout:\n{outcome.out[-1500:]}",
                                        folder)
        finally:
            os.chdir(cwd)
            shutil.rmtree(folder, ignore_errors=True)

    check()
