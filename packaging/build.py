"""Build the Lab Console bundle and its Linux installers. `make package` runs `build.py bundle tarball deb`.

    python packaging/build.py check            # is this machine able to build? (names the packages to install)
    python packaging/build.py bundle           # dist/labconsole/  (PyInstaller onedir)
    python packaging/build.py tarball deb      # dist/lab-console-<version>-linux-<arch>.tar.gz, dist/lab-console_<version>_<arch>.deb

A bundle is never half there: PyInstaller builds into dist/.labconsole.partial, the build-info file (the
completion marker `make` and the smoke test look for) is written last, and the finished folder is renamed into
place. An interrupted build leaves only the .partial folder, which the next build wipes. PyInstaller's work
folder (build/pyinstaller) is kept, so a second build reuses its analysis when nothing changed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bundle_config as cfg  # noqa: E402

sys.path.insert(0, str(cfg.ROOT))
from console import __version__  # noqa: E402
from console.about import BUILD_INFO_NAME  # noqa: E402

ROOT = cfg.ROOT
DIST = ROOT / "dist"
BUNDLE = DIST / cfg.APP_NAME
PARTIAL = DIST / f".{cfg.APP_NAME}.partial"
WORK = ROOT / "build" / "pyinstaller"
DEB_ROOT = ROOT / "build" / "deb-root"
SPEC = HERE / "labconsole.spec"
DEB_NAME = "lab-console"
INSTALL_DIR = Path("/opt/labconsole")

# Debian packages for the tools and libraries a build needs, by what a missing one is called.
TOOL_PACKAGES = {"objdump": "binutils", "ldd": "libc-bin", "dpkg-deb": "dpkg", "tar": "tar", "gzip": "gzip"}
LIBRARY_PACKAGES = {
    "libGL.so.1": "libgl1", "libEGL.so.1": "libegl1", "libOpenGL.so.0": "libopengl0", "libGLX.so.0": "libglx0",
    "libGLdispatch.so.0": "libglvnd0", "libxcb.so.1": "libxcb1", "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1", "libfontconfig.so.1": "libfontconfig1", "libfreetype.so.6": "libfreetype6",
    "libxkbcommon.so.0": "libxkbcommon0", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-icccm.so.4": "libxcb-icccm4", "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0", "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0", "libxcb-shm.so.0": "libxcb-shm0", "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0", "libxcb-xkb.so.1": "libxcb-xkb1", "libxcb-util.so.1": "libxcb-util1",
    "libxcb-glx.so.0": "libxcb-glx0", "libglib-2.0.so.0": "libglib2.0-0", "libgthread-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3", "libpng16.so.16": "libpng16-16", "libz.so.1": "zlib1g",
    "libzstd.so.1": "libzstd1", "libstdc++.so.6": "libstdc++6", "libgcc_s.so.1": "libgcc-s1",
    "libsqlite3.so.0": "libsqlite3-0", "libffi.so.8": "libffi8",
}


class BuildError(Exception):
    """A build that cannot go on; the message says what to do."""


# ---- Public API
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("steps", nargs="+", choices=["check", "bundle", "tarball", "deb"])
    args = parser.parse_args(argv)
    try:
        for step in args.steps:
            {"check": check, "bundle": bundle, "tarball": tarball, "deb": deb}[step]()
    except BuildError as exc:
        print(f"\npackaging: error: {exc}", file=sys.stderr)
        return 1
    return 0


def check(deb_tools: bool = True) -> None:
    """Stop early, naming the Debian package, when this machine lacks something the build needs."""
    if sys.platform != "linux":
        raise BuildError("build.py makes the Linux bundle; see packaging/README.md for Windows and macOS")
    missing = [tool for tool in ("objdump", "ldd", "tar", "gzip") + (("dpkg-deb",) if deb_tools else ())
               if shutil.which(tool) is None]
    if missing:
        packages = sorted({TOOL_PACKAGES[t] for t in missing})
        raise BuildError(f"missing {', '.join(missing)} (PyInstaller reads shared libraries with objdump and ldd; "
                         f"the .deb is made by dpkg-deb): run `apt-get install {' '.join(packages)}`")
    _require_pyinstaller()
    sources = _site_binaries()
    _require_libraries(sources, "the Qt, torch and onnxruntime libraries this bundle carries")
    print(f"packaging: build machine ok ({len(sources)} libraries checked)")


def bundle() -> None:
    check(deb_tools=False)
    started = time.monotonic()
    shutil.rmtree(PARTIAL, ignore_errors=True)
    DIST.mkdir(exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    # PyInstaller writes <distpath>/<name>; build it under a staging distpath, then move the folder to PARTIAL.
    staging = DIST / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    _run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN", "--distpath", str(staging),
          "--workpath", str(WORK), str(SPEC)], cwd=ROOT)
    os.replace(staging / cfg.APP_NAME, PARTIAL)
    staging.rmdir()
    shutil.copy2(ROOT / "LICENSE", PARTIAL / "LICENSE")  # beside the executable: the tarball and /opt/labconsole
    internal = PARTIAL / "_internal"
    _require_libraries([p for p in internal.rglob("*") if _is_elf(p)], "the bundle", bundle_dir=PARTIAL)
    done = subprocess.run([str(PARTIAL / cfg.APP_NAME), "--version"], capture_output=True, text=True, timeout=120,
                          env=_clean_env())
    if done.returncode != 0 or "Lab Console" not in done.stdout:
        raise BuildError(f"the new bundle does not start (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    info = _build_info(time.monotonic() - started)
    (internal / BUILD_INFO_NAME).write_text(json.dumps(info, indent=2) + "\n")  # last: the completion marker
    _promote()
    print(f"packaging: bundle {BUNDLE.relative_to(ROOT)} — {_mib(_tree_size(BUNDLE))} MiB, "
          f"built in {info['build_seconds']:.0f} s")


def tarball() -> Path:
    _require_complete_bundle()
    target = DIST / f"{DEB_NAME}-{__version__}-linux-{platform.machine()}.tar.gz"
    partial = target.with_name(target.name + ".partial")
    started = time.monotonic()
    # tar + gzip -6: several times faster than tarfile's default level 9 for a few percent of size.
    _run(["tar", "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-I", "gzip -6", "-cf", str(partial),
          "-C", str(DIST), cfg.APP_NAME])
    os.replace(partial, target)
    print(f"packaging: {target.relative_to(ROOT)} — {_mib(target.stat().st_size)} MiB in "
          f"{time.monotonic() - started:.0f} s")
    return target


def deb() -> Path:
    _require_complete_bundle()
    check(deb_tools=True)
    started = time.monotonic()
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=True).stdout.strip()
    target = DIST / f"{DEB_NAME}_{__version__}_{arch}.deb"
    shutil.rmtree(DEB_ROOT, ignore_errors=True)
    opt = DEB_ROOT / INSTALL_DIR.relative_to("/")
    opt.parent.mkdir(parents=True)
    # A real copy, not hard links: linking changes the files' ctime, and the tarball, made at the same time
    # (make -j2), would fail with "file changed as we read it".
    shutil.copytree(BUNDLE, opt, symlinks=True)
    (DEB_ROOT / "usr/bin").mkdir(parents=True)
    (DEB_ROOT / "usr/bin/labconsole").symlink_to(INSTALL_DIR / cfg.APP_NAME)
    apps = DEB_ROOT / "usr/share/applications"
    apps.mkdir(parents=True)
    (apps / "labconsole.desktop").write_text(_desktop_entry())
    icons = DEB_ROOT / "usr/share/icons/hicolor/scalable/apps"
    icons.mkdir(parents=True)
    shutil.copy2(ROOT / "assets" / "labconsole.svg", icons / "labconsole.svg")
    docs = DEB_ROOT / f"usr/share/doc/{DEB_NAME}"
    docs.mkdir(parents=True)
    (docs / "copyright").write_text("Lab Console\nLicense: Apache-2.0\n"
                                    "The bundled third-party components keep their own licenses (see /opt/labconsole).\n\n"
                                    + (ROOT / "LICENSE").read_text(encoding="utf-8"))
    control = DEB_ROOT / "DEBIAN"
    control.mkdir()
    depends = _deb_depends(BUNDLE)
    installed_kib = _tree_size(DEB_ROOT) // 1024
    (control / "control").write_text(
        f"Package: {DEB_NAME}\nVersion: {__version__}\nArchitecture: {arch}\n"
        f"Maintainer: Lab Console maintainers <lab-console@localhost>\nSection: science\nPriority: optional\n"
        f"Installed-Size: {installed_kib}\nDepends: {', '.join(depends)}\n"
        "Homepage: https://localhost/lab-console\n"
        "Description: desktop console for AI systems and performance labs\n"
        " Run a model on PyTorch or ONNX Runtime in an isolated worker, watch latency and telemetry live,\n"
        " and keep every run in a local SQLite history. Self-contained bundle under /opt/labconsole;\n"
        " `labconsole self-test --out DIR` proves an install works.\n")
    postrm = control / "postrm"
    postrm.write_text("#!/bin/sh\nset -e\n# Whatever the app wrote beside itself (caches) goes with it.\n"
                      f'if [ "$1" = remove ] || [ "$1" = purge ]; then rm -rf {INSTALL_DIR}; fi\nexit 0\n')
    postrm.chmod(0o755)
    partial = target.with_name(target.name + ".partial")
    _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-z6", "--build", str(DEB_ROOT), str(partial)])
    os.replace(partial, target)
    shutil.rmtree(DEB_ROOT, ignore_errors=True)
    print(f"packaging: {target.relative_to(ROOT)} — {_mib(target.stat().st_size)} MiB in "
          f"{time.monotonic() - started:.0f} s; Depends: {', '.join(depends)}")
    return target


def is_complete(bundle_dir: Path = BUNDLE) -> bool:
    """A bundle is complete when its build-info file says so (it is written last)."""
    try:
        info = json.loads((bundle_dir / "_internal" / BUILD_INFO_NAME).read_text())
    except (OSError, ValueError):
        return False
    return info.get("complete") is True


# ---- Private API
def _run(cmd: list[str], **kwargs) -> None:
    print("packaging: $ " + " ".join(cmd), flush=True)
    try:
        subprocess.run(cmd, check=True, **kwargs)
    except subprocess.CalledProcessError as exc:
        raise BuildError(f"{Path(cmd[0]).name} failed with exit status {exc.returncode} (see above)") from exc


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "QT_PLUGIN_PATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return env


def _site_binaries() -> list[Path]:
    """The libraries from the virtual environment that end up in the bundle and need system libraries."""
    from importlib.util import find_spec

    def package_dir(name: str) -> Path:  # found, not imported
        spec = find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise BuildError(f"{name} is not installed in this Python: run `make setup`")
        return Path(next(iter(spec.submodule_search_locations)))

    qt = package_dir("PySide6") / "Qt"
    wanted = [qt / "lib" / f"libQt6{m}.so.6" for m in ("Core", "Gui", "Widgets", "Svg", "OpenGL", "XcbQpa", "DBus")]
    wanted += [qt / "plugins" / "platforms" / f"libq{p}.so" for p in ("xcb", "offscreen", "minimal")]
    wanted += sorted((qt / "plugins" / "xcbglintegrations").glob("*.so"))
    wanted += sorted((qt / "plugins" / "imageformats").glob("libqsvg*.so"))
    wanted += sorted((package_dir("torch") / "lib").glob("libtorch*.so"))
    wanted += sorted((package_dir("onnxruntime") / "capi").glob("*.so"))
    return [p for p in wanted if p.exists() and not cfg.is_trimmed(p.name)]


def _ldd(path: Path, search: list[Path]) -> dict[str, str | None]:
    """soname → resolved path (None: not found) for one ELF file, with `search` first on the library path."""
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(str(p) for p in search))
    done = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=env)
    found: dict[str, str | None] = {}
    for line in done.stdout.splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(not found|\S+)", line)
        if match:
            found[match.group(1)] = None if match.group(2) == "not found" else match.group(2)
    return found


def _library_dirs(bundle_dir: Path) -> list[Path]:
    return sorted({p.parent for p in (bundle_dir / "_internal").rglob("*.so*") if p.is_file()})


def _resolve_all(files: list[Path], bundle_dir: Path | None) -> tuple[set[str], dict[str, set[str]]]:
    """(system libraries `files` link to directly, {missing soname: {needed by}}) — missing counts indirect ones."""
    search = _library_dirs(bundle_dir) if bundle_dir else []
    used: set[str] = set()
    missing: dict[str, set[str]] = {}
    for path in files:
        resolved_all = _ldd(path, search)
        direct = cfg.needed(str(path))
        for soname, resolved in resolved_all.items():
            if resolved is None:
                missing.setdefault(soname, set()).add(path.name)
            elif soname in direct and (bundle_dir is None
                                       or not Path(resolved).resolve().is_relative_to(bundle_dir.resolve())):
                used.add(resolved)
    return used, missing


def _require_pyinstaller() -> None:
    """PyInstaller (the `package` extra, not a dependency of the app) and the shared libpython it bundles."""
    try:
        from PyInstaller.depend.bindepend import get_python_library_path

        get_python_library_path()
    except ImportError as exc:
        raise BuildError(f"PyInstaller is not installed in this Python ({exc}); it is in the `package` extra: run "
                         "`make package` (it installs the extra) or `.venv/bin/pip install -e '.[package]'`") from exc
    except Exception as exc:  # noqa: BLE001 — PythonLibraryNotFoundError and friends
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        raise BuildError(f"this Python has no shared libpython ({exc}): run `apt-get install libpython{version}` "
                         f"(or use a Python built with --enable-shared)") from exc


def _require_libraries(files: list[Path], what: str, bundle_dir: Path | None = None) -> None:
    _, missing = _resolve_all(files, bundle_dir)
    if missing:
        packages = sorted({LIBRARY_PACKAGES.get(s, f"<the package providing {s}>") for s in missing})
        detail = "; ".join(f"{s} (needed by {', '.join(sorted(by)[:3])})" for s, by in sorted(missing.items()))
        raise BuildError(f"system libraries missing for {what}: {detail}. Run `apt-get install {' '.join(packages)}`"
                         " (look a name up with `apt-file search SONAME` when no package is given)")


def _deb_depends(bundle_dir: Path) -> list[str]:
    """The Debian packages owning the system libraries the bundle links to (ldd over every ELF file in it)."""
    used, missing = _resolve_all([p for p in (bundle_dir / "_internal").rglob("*") if _is_elf(p)]
                                 + [bundle_dir / cfg.APP_NAME], bundle_dir)
    if missing:
        raise BuildError(f"the bundle needs libraries this machine lacks: {sorted(missing)}")
    packages: set[str] = set()
    unowned = []
    for path in sorted(used):
        owner = _dpkg_owner(path)
        if owner:
            packages.add(owner)
        else:
            unowned.append(path)
    if unowned:
        print(f"packaging: warning: no Debian package owns {unowned}; not in Depends", file=sys.stderr)
    packages.discard("libc6")
    return [f"libc6 (>= {_glibc_floor(bundle_dir)})"] + sorted(packages)


def _glibc_floor(bundle_dir: Path) -> str:
    """The newest GLIBC_x.y symbol version any file in the bundle asks for (what dpkg-shlibdeps would find)."""
    newest = (2, 17)
    for path in [p for p in bundle_dir.rglob("*") if _is_elf(p)]:
        out = subprocess.run(["objdump", "-T", str(path)], capture_output=True, text=True).stdout
        for found in set(re.findall(r"GLIBC_(\d+)\.(\d+)", out)):
            newest = max(newest, tuple(int(x) for x in found))
    return ".".join(str(x) for x in newest)


def _dpkg_owner(path: str) -> str | None:
    real = os.path.realpath(path)
    candidates = {path, real}
    for p in list(candidates):  # merged /usr: dpkg may have registered either spelling
        if p.startswith("/usr/lib/"):
            candidates.add(p[4:])
        elif p.startswith("/lib/"):
            candidates.add("/usr" + p)
    for p in sorted(candidates):
        done = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.split(":", 1)[0].strip()
    return None


def _is_elf(path: Path) -> bool:
    if not path.is_file() or path.is_symlink():
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def _build_info(seconds: float) -> dict:
    def dist(*names: str) -> str | None:
        for name in names:
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        return None

    import PySide6.QtCore

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True)
    return {
        "name": "Lab Console", "version": __version__, "complete": True,
        "build_date": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "build_seconds": round(seconds, 1),
        "git_commit": (commit.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")) or None,
        "platform": f"{platform.system()}-{platform.machine()}",
        "engines": _registered_engines(),
        "versions": {"torch": dist("torch"), "onnxruntime": dist("onnxruntime", "onnxruntime-gpu"),
                     "pyside6": dist("PySide6_Essentials", "PySide6"), "qt": PySide6.QtCore.qVersion(),
                     "python": platform.python_version(), "pyinstaller": dist("pyinstaller")},
    }


def _registered_engines() -> list[str]:
    """The engines the bundle carries: `labconsole self-test` must run each (packaging/smoke_test.py checks)."""
    from engines import backends

    return backends.names()


def _promote() -> None:
    """Swap the finished bundle in with renames: dist/labconsole is always the old complete one or the new one."""
    old = DIST / f".{cfg.APP_NAME}.old"
    shutil.rmtree(old, ignore_errors=True)
    if BUNDLE.exists():
        os.replace(BUNDLE, old)
    os.replace(PARTIAL, BUNDLE)
    shutil.rmtree(old, ignore_errors=True)


def _require_complete_bundle() -> None:
    if not is_complete(BUNDLE):
        raise BuildError(f"{BUNDLE.relative_to(ROOT)} is missing or incomplete: run `make package` "
                         "(or `python packaging/build.py bundle`) first")


def _desktop_entry() -> str:
    return ("[Desktop Entry]\nType=Application\nName=Lab Console\n"
            "Comment=Run, measure and keep AI workloads\nExec=labconsole\nIcon=labconsole\nTerminal=false\n"
            "Categories=Science;Development;\nStartupWMClass=labconsole\n")


def _tree_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink() and p.is_file())


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f}"


if __name__ == "__main__":
    sys.exit(main())
