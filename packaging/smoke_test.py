"""Frozen smoke test: the bundle, and the installed .deb, must pass `labconsole self-test` away from the checkout.

    python packaging/smoke_test.py --bundle dist/labconsole [--deb dist/lab-console_<v>_<arch>.deb] [--require-deb]
    python packaging/smoke_test.py --tarball dist/lab-console-<v>-linux-<arch>.tar.gz --deb …   # what `make smoke` runs

For the bundle: a copy (or the unpacked .tar.gz) in a fresh temporary folder, run with PYTHONPATH, PYTHONHOME, QT_PLUGIN_PATH,
LD_LIBRARY_PATH and the virtual environment cleared, HOME a temporary folder, QT_QPA_PLATFORM=offscreen:
  - the Apache-2.0 LICENSE lies beside the executable (and, for the .deb, in /usr/share/doc/lab-console/copyright);
  - `labconsole --version` names the bundle's build date and the engine versions;
  - `labconsole targets --json --refresh` gets its answer from a spawned (ProcessPoolExecutor) worker;
  - `labconsole self-test --out DIR` passes: ok and frozen true, one completed run on every engine the bundle
    carries (as recorded in its build info), no torch/onnxruntime in the GUI process, history intact;
  - every child process seen meanwhile (run worker, telemetry sampler, discovery pool) is the bundle's own
    executable, the run worker loaded the bundle's libtorch, and the history shows the worker's executable and
    telemetry samples from the sampler process;
  - with Xvfb present, the window also paints on the xcb platform (the X11 plugin's libraries are all there).
For the .deb (root only; skipped otherwise unless --require-deb): `apt-get install ./…deb`, the same checks on
/usr/bin/labconsole, `apt-get remove`, and nothing left in /opt/labconsole nor /usr/bin/labconsole.

Stdlib only; prints one line per check and a JSON summary; exit 0 when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

APP = "labconsole"
BUILD_INFO = "labconsole-build.json"
DEB_PACKAGE = "lab-console"
INSTALL_DIR = Path("/opt/labconsole")
LAUNCHER = Path("/usr/bin/labconsole")
CLEARED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONNOUSERSITE", "QT_PLUGIN_PATH",
           "QT_QPA_PLATFORM_PLUGIN_PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "LABCONSOLE_DB", "XDG_CONFIG_HOME",
           "XDG_DATA_HOME", "XDG_CACHE_HOME", "LABCONSOLE_EXIT_AFTER_PAINT")
SELF_TEST_TIMEOUT_S = 900


class Checks:
    def __init__(self) -> None:
        self.results: list[dict] = []

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        self.results.append({"check": name, "ok": bool(passed), "detail": detail})
        print(f"[{'PASS' if passed else 'FAIL'}] {name}" + (f" — {detail}" if detail else ""), flush=True)
        return bool(passed)

    def skip(self, name: str, why: str) -> None:
        self.results.append({"check": name, "ok": None, "detail": why})
        print(f"[SKIP] {name} — {why}", flush=True)

    @property
    def ok(self) -> bool:
        return all(r["ok"] is not False for r in self.results)


# ---- Public API
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", type=Path, help="the onedir bundle (dist/labconsole), copied and tested")
    parser.add_argument("--tarball", type=Path, help="the bundle's .tar.gz, unpacked and tested (instead of --bundle)")
    parser.add_argument("--deb", type=Path, help="the .deb to install, test and remove (needs root)")
    parser.add_argument("--require-deb", action="store_true", help="fail, not skip, when the .deb cannot be tested")
    parser.add_argument("--summary", type=Path, help="also write the JSON summary here")
    args = parser.parse_args(argv)
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="labconsole-smoke-") as tmp:
        tmp = Path(tmp)
        if args.tarball:
            smoke_tarball(checks, args.tarball.resolve(), tmp / "tarball")
        elif args.bundle:
            smoke_bundle(checks, args.bundle.resolve(), tmp / "bundle")
        if args.deb:
            if os.geteuid() != 0 or shutil.which("apt-get") is None:
                why = "needs root and apt-get"
                checks.check("deb: can be tested", False, why) if args.require_deb else checks.skip("deb", why)
            else:
                smoke_deb(checks, args.deb.resolve(), tmp / "deb")
        elif args.require_deb:
            checks.check("deb: given", False, "--require-deb without --deb")
    summary = {"ok": checks.ok, "checks": checks.results}
    if args.summary:
        args.summary.write_text(json.dumps(summary, indent=2))
    print(json.dumps({"ok": checks.ok, "failed": [r["check"] for r in checks.results if r["ok"] is False]}))
    return 0 if checks.ok else 1


def smoke_bundle(checks: Checks, bundle: Path, work: Path) -> None:
    info = _build_info(bundle)
    if not checks.check("bundle: complete (build info written last by the build)", info.get("complete") is True,
                        str(bundle)):
        return
    work.mkdir(parents=True)
    copy = work / "app" / APP
    started = time.monotonic()
    shutil.copytree(bundle, copy, symlinks=True)
    checks.check("bundle: copied outside the checkout", (copy / APP).is_file(),
                 f"{copy} in {time.monotonic() - started:.1f} s")
    run_app_checks(checks, "bundle", copy / APP, copy, info, work)


def smoke_tarball(checks: Checks, tarball: Path, work: Path) -> None:
    unpacked = work / "app"
    unpacked.mkdir(parents=True)
    started = time.monotonic()
    done = subprocess.run(["tar", "-xzf", str(tarball), "-C", str(unpacked)], capture_output=True, text=True)
    copy = unpacked / APP
    if not checks.check("tarball: unpacks to labconsole/ outside the checkout",
                        done.returncode == 0 and (copy / APP).is_file(),
                        f"{copy} in {time.monotonic() - started:.1f} s" if done.returncode == 0 else done.stderr):
        return
    info = _build_info(copy)
    if checks.check("tarball: bundle complete (build info written last by the build)", info.get("complete") is True):
        run_app_checks(checks, "tarball", copy / APP, copy, info, work)


def smoke_deb(checks: Checks, deb: Path, work: Path) -> None:
    work.mkdir(parents=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if _installed():  # a left-over install would turn `apt-get install` into a no-op
        subprocess.run(["apt-get", "remove", "-y", DEB_PACKAGE], env=env, capture_output=True)
    done = subprocess.run(["apt-get", "install", "-y", str(deb)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:  # a fresh machine may lack the Depends (libgl1 …) and have stale package lists
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        done = subprocess.run(["apt-get", "install", "-y", str(deb)], env=env, capture_output=True, text=True)
    if not checks.check("deb: apt-get install ./…deb", done.returncode == 0 and _installed(),
                        deb.name if done.returncode == 0 else _tail(done.stdout + done.stderr)):
        return
    try:
        checks.check("deb: /usr/bin/labconsole → /opt/labconsole/labconsole",
                     LAUNCHER.exists() and LAUNCHER.resolve() == (INSTALL_DIR / APP).resolve(),
                     str(LAUNCHER.resolve()) if LAUNCHER.exists() else "missing")
        desktop = Path("/usr/share/applications/labconsole.desktop")
        icon = Path("/usr/share/icons/hicolor/scalable/apps/labconsole.svg")
        checks.check("deb: desktop entry and icon", desktop.is_file() and icon.is_file()
                     and "Exec=labconsole" in desktop.read_text())
        copyright_file = Path(f"/usr/share/doc/{DEB_PACKAGE}/copyright")
        checks.check("deb: copyright file carries the Apache-2.0 text", _is_license(copyright_file),
                     str(copyright_file))
        run_app_checks(checks, "deb", LAUNCHER, INSTALL_DIR, _build_info(INSTALL_DIR), work)
    finally:
        done = subprocess.run(["apt-get", "remove", "-y", DEB_PACKAGE], env=env, capture_output=True, text=True)
        checks.check("deb: apt-get remove", done.returncode == 0 and not _installed(),
                     "" if done.returncode == 0 else _tail(done.stdout + done.stderr))
        left = [str(p) for p in (INSTALL_DIR, LAUNCHER, Path("/usr/share/applications/labconsole.desktop"))
                if p.exists() or p.is_symlink()]
        checks.check("deb: removed cleanly (no /opt/labconsole, no /usr/bin/labconsole)", not left,
                     f"left behind: {left}" if left else "")
        # `remove` keeps dpkg's record of the package (state rc: its postrm stays for a purge); drop it too.
        subprocess.run(["dpkg", "--purge", DEB_PACKAGE], capture_output=True)


def run_app_checks(checks: Checks, label: str, exe: Path, bundle_dir: Path, info: dict, work: Path) -> None:
    """--version, targets, self-test (watching the children) and, with Xvfb, an xcb paint."""
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = clean_env(home)
    real_exe = (bundle_dir / APP).resolve()
    checks.check(f"{label}: LICENSE (the Apache-2.0 text) beside the executable", _is_license(bundle_dir / "LICENSE"),
                 str(bundle_dir / "LICENSE"))

    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, env=env, cwd=work, timeout=120)
    versions = info.get("versions", {})
    wanted = [f"Lab Console {info.get('version')}", f"bundle built {info.get('build_date')}",
              f"PyTorch {versions.get('torch')}", f"ONNX Runtime {versions.get('onnxruntime')}",
              f"Qt {versions.get('qt')}", f"Python {versions.get('python')}"]
    missing = [w for w in wanted if w not in done.stdout]
    checks.check(f"{label}: --version names build date, torch, onnxruntime, Qt, Python",
                 done.returncode == 0 and not missing,
                 " | ".join(done.stdout.strip().splitlines()) if not missing else f"missing {missing}: {done.stdout}")

    watcher = ChildWatcher()
    proc = subprocess.Popen([str(exe), "targets", "--json", "--refresh"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=work)
    watcher.watch(proc.pid)
    out, err = proc.communicate(timeout=300)
    watcher.stop()
    try:
        targets = json.loads(out)["targets"]  # {"schema": "labconsole.targets/1", "targets": [...]}
    except (ValueError, KeyError, TypeError):
        targets = []
    notes = [t.get("note") for t in targets if t.get("note")]
    cpu = next((t for t in targets if t.get("id") == "cpu"), {})
    children = watcher.children()
    checks.check(f"{label}: targets discovered in a frozen spawn worker (ProcessPoolExecutor)",
                 proc.returncode == 0 and bool(cpu) and not notes and bool(children)
                 and all(c["exe"] == str(real_exe) for c in children if c["python_child"]),
                 f"{[t.get('id') for t in targets]}; children {_describe(children)}" if not notes
                 else f"{notes} {_tail(err)}")

    out_dir = work / "selftest"
    watcher = ChildWatcher()
    started = time.monotonic()
    proc = subprocess.Popen([str(exe), "self-test", "--out", str(out_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=work)
    watcher.watch(proc.pid)
    try:
        log, _ = proc.communicate(timeout=SELF_TEST_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        log, _ = proc.communicate()
    watcher.stop()
    elapsed = time.monotonic() - started
    try:
        result = json.loads((out_dir / "result.json").read_text())
    except (OSError, ValueError):
        checks.check(f"{label}: self-test wrote result.json", False, _tail(log))
        return
    expected = info.get("engines") or []
    engines = result.get("engines", {})
    failed = {e: engines.get(e, {}).get("message") or engines.get(e, {}).get("status", "no run")
              for e in expected if not engines.get(e, {}).get("ok")}
    checks.check(f"{label}: self-test ok, frozen, every engine ran ({', '.join(expected)})",
                 proc.returncode == 0 and result.get("ok") is True and result.get("frozen") is True
                 and bool(expected) and not failed and result.get("gui_heavy_imports") == []
                 and result.get("db_integrity") == "ok",
                 f"exit {proc.returncode} in {elapsed:.0f} s; "
                 + (f"failed engines {failed}; errors {result.get('errors')}" if failed or result.get("errors")
                    else ", ".join(f"{e}: {v.get('iterations')} it, p50 {v.get('p50_ms'):.3g} ms"
                                   for e, v in engines.items() if v.get("p50_ms") is not None)))

    children = watcher.children()
    python_children = [c for c in children if c["python_child"]]
    foreign = [c for c in python_children if c["exe"] != str(real_exe)]
    torch_workers = [c for c in python_children if c["torch_from"] and c["torch_from"].startswith(str(bundle_dir))]
    others = [c for c in python_children if not c["torch_from"] and not _is_tracker(c)]
    checks.check(f"{label}: spawned children are the frozen executable (worker with the bundle's torch, sampler)",
                 bool(python_children) and not foreign and bool(torch_workers) and bool(others),
                 _describe(children) + (f"; NOT the bundle: {foreign}" if foreign else ""))

    env_ok, samples = _history_evidence(Path(result.get("db", "")), str(real_exe))
    checks.check(f"{label}: history shows the frozen worker and the sampler's telemetry",
                 env_ok and samples > 0, f"worker executable recorded: {env_ok}; telemetry samples: {samples}")

    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        checks.skip(f"{label}: window paints on X11 (xcb)", "xvfb-run not installed")
        return
    xenv = dict(env, QT_QPA_PLATFORM="xcb", LABCONSOLE_EXIT_AFTER_PAINT="1", LABCONSOLE_DB=str(work / "xcb.db"))
    try:
        done = subprocess.run([xvfb, "-a", str(exe)], capture_output=True, text=True, env=xenv, cwd=work,
                              timeout=120)
        painted = [line for line in done.stderr.splitlines() if line.startswith("painted ")]
        checks.check(f"{label}: window paints on X11 (xcb, under Xvfb)", done.returncode == 0 and bool(painted),
                     painted[0] if painted else _tail(done.stderr))
    except subprocess.TimeoutExpired:
        checks.check(f"{label}: window paints on X11 (xcb, under Xvfb)", False, "no paint within 120 s")


def clean_env(home: Path) -> dict[str, str]:
    """What a lab machine's shell would give: no Python or Qt paths of the build machine, a fresh HOME."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(HOME=str(home), PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", QT_QPA_PLATFORM="offscreen")
    return env


class ChildWatcher:
    """Polls /proc for the descendants of a process: executable, command line, and where torch came from."""

    def __init__(self, interval_s: float = 0.02) -> None:
        self._seen: dict[int, dict] = {}
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, pid: int) -> None:
        self._thread = threading.Thread(target=self._loop, args=(pid,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def children(self) -> list[dict]:
        return list(self._seen.values())

    def _loop(self, root: int) -> None:
        while not self._stop.is_set():
            for pid in _descendants(root):
                entry = self._seen.get(pid)
                if entry is None:
                    entry = self._seen[pid] = {"pid": pid, "exe": "", "argv": [], "python_child": False,
                                               "torch_from": None}
                try:
                    if not entry["python_child"]:
                        # Re-read until it is ours: between fork and exec a child still shows its parent's
                        # executable and command line.
                        entry["exe"] = os.path.realpath(f"/proc/{pid}/exe")
                        entry["argv"] = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
                        # multiprocessing children: spawn workers and the resource tracker
                        entry["python_child"] = any(a.startswith("--multiprocessing-fork") or a == "-c"
                                                    for a in entry["argv"])
                    if entry["torch_from"] is None:
                        maps = Path(f"/proc/{pid}/maps").read_text(errors="replace")
                        for line in maps.splitlines():
                            if line.endswith("libtorch_cpu.so"):
                                entry["torch_from"] = line.split(maxsplit=5)[-1]
                                break
                except OSError:
                    pass  # it ended between listing and reading
            time.sleep(self._interval)


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        found += frontier
    return found


def _is_tracker(child: dict) -> bool:
    """multiprocessing's resource tracker: a helper, not one of ours."""
    return any("resource_tracker" in arg for arg in child["argv"])


def _describe(children: list[dict]) -> str:
    parts = []
    for c in children:
        role = "other"
        if c["python_child"]:
            role = "worker+torch" if c["torch_from"] else "tracker" if _is_tracker(c) else "spawned"
        parts.append(f"{c['pid']} {role} {Path(c['exe']).name}")
    return f"{len(children)} seen: " + ", ".join(parts)


def _history_evidence(db: Path, exe: str) -> tuple[bool, int]:
    """(every run's worker ran as the bundle's executable, number of telemetry samples)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            environments = [json.loads(row[0] or "{}") for row in conn.execute("SELECT environment FROM runs")]
            samples = conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    except (sqlite3.Error, ValueError):
        return False, 0
    executables = [(e.get("worker") or {}).get("executable") for e in environments]
    return bool(executables) and all(x and os.path.realpath(x) == exe for x in executables), samples


def _build_info(bundle: Path) -> dict:
    try:
        return json.loads((bundle / "_internal" / BUILD_INFO).read_text())
    except (OSError, ValueError):
        return {}


def _is_license(path: Path) -> bool:
    """The whole Apache-2.0 text is there (its title and its last line), not a one-line mention."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def _installed() -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", DEB_PACKAGE], capture_output=True, text=True)
    return done.returncode == 0 and "installed" in done.stdout.split()


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


if __name__ == "__main__":
    sys.exit(main())
