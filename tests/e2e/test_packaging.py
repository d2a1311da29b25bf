"""Packaging logic that can be checked without building the bundle (`make package` + packaging/smoke_test.py
build and test the real one; they take minutes and run in CI after `make test`)."""

import ast
import importlib.util
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"labconsole_packaging_{name}", PACKAGING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cfg():
    return _load("bundle_config")


@pytest.fixture(scope="module")
def build():
    return _load("build")


# ---- what goes into the bundle
def test_every_plugin_named_in_a_registry_is_a_hidden_import(cfg):
    from console.telemetry import registry
    from engines import backends, catalog, scenarios

    hidden = set(cfg.hidden_imports())
    named = {i.module for i in backends.infos()} | {e.module for e in catalog.ENTRIES.values()}
    named |= {i.probe.partition(":")[0] for i in backends.infos() if i.probe}
    named |= {i.module for i in scenarios.infos()}
    named |= {t.partition(":")[0] for t in registry.SOURCES.values() if isinstance(t, str)}
    assert named <= hidden, named - hidden
    assert {"engines.worker", "engines.targets", "onnxruntime"} <= hidden
    # pages named "module:attribute" are imported by name too (the frozen self-test failed on the Machine page)
    from console.ui.pages import PAGES

    assert {i.factory.partition(":")[0] for i in PAGES if isinstance(i.factory, str)} <= hidden
    assert {"console.ui.machine_page", "console.ui.compare_page"} <= hidden


def test_computing_hidden_imports_loads_no_engine_and_no_qt():
    code = ("import sys; sys.path.insert(0, 'packaging'); import bundle_config as c; c.hidden_imports(); "
            "print(sorted(m for m in ('torch', 'onnxruntime', 'PySide6') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_other_qt_bindings_and_webengine_are_excluded(cfg):
    for name in ("PyQt5", "PyQt6", "PySide2", "PySide6.QtWebEngineCore", "PySide6.QtWebEngineWidgets"):
        assert name in cfg.EXCLUDED_MODULES


@pytest.mark.parametrize("dest", [
    "torch/include/ATen/ATen.h", "torch/test/Dict_test", "torch/bin/test_api", "torch/share/cmake/Torch.cmake",
    "numpy/_core/tests/test_api.py", "PySide6/Qt/plugins/platforms/libqwayland-egl.so",
    "PySide6/Qt/plugins/platformthemes/libqgtk3.so", "PySide6/Qt/plugins/imageformats/libqjpeg.so",
    "PySide6/include/pyside6/pyside.h", "PySide6/Qt/translations/qt_de.qm"])
def test_headers_tests_and_unused_plugins_are_trimmed(cfg, dest):
    assert cfg.is_trimmed(dest)


@pytest.mark.parametrize("dest", [
    "torch/lib/libtorch_cpu.so", "torch/lib/libgomp.so.1", "torch/_C.cpython-311-x86_64-linux-gnu.so",
    "torch/testing/_internal/common_utils.py", "PySide6/Qt/plugins/platforms/libqxcb.so",
    "PySide6/Qt/plugins/platforms/libqoffscreen.so", "PySide6/Qt/plugins/imageformats/libqsvg.so",
    "PySide6/Qt/plugins/iconengines/libqsvgicon.so", "PySide6/Qt/plugins/xcbglintegrations/libqxcb-glx-integration.so",
    "onnxruntime/capi/onnxruntime_pybind11_state.so", "assets/labconsole.svg"])
def test_what_runs_is_kept(cfg, dest):
    assert not cfg.is_trimmed(dest)


def test_libraries_only_trimmed_files_needed_are_pruned(cfg, monkeypatch):
    links = {"/s/ext.so": {"libkept.so.1"}, "/s/libkept.so.1": {"libdeep.so.2"}, "/s/libdeep.so.2": set(),
             "/s/libcairo.so.2": {"libpixman.so.0"}, "/s/libpixman.so.0": set(), "/s/libQt6Gui.so.6": set(),
             "/s/libpython3.11.so.1.0": set()}
    monkeypatch.setattr(cfg, "needed", lambda path: links[path])
    toc = [("pkg/ext.so", "/s/ext.so", "EXTENSION"), ("libkept.so.1", "/s/libkept.so.1", "BINARY"),
           ("libdeep.so.2", "/s/libdeep.so.2", "BINARY"), ("libcairo.so.2", "/s/libcairo.so.2", "BINARY"),
           ("libpixman.so.0", "/s/libpixman.so.0", "BINARY"),
           ("PySide6/Qt/lib/libQt6Gui.so.6", "/s/libQt6Gui.so.6", "BINARY"),
           ("libQt6Gui.so.6", "PySide6/Qt/lib/libQt6Gui.so.6", "SYMLINK"),
           ("libpython3.11.so.1.0", "/s/libpython3.11.so.1.0", "BINARY")]
    kept, dropped = cfg.prune_orphans(toc)
    assert {e[0] for e in kept} == {"pkg/ext.so", "libkept.so.1", "libdeep.so.2", "libpython3.11.so.1.0"}
    assert dropped == sorted(["libcairo.so.2", "libpixman.so.0", "PySide6/Qt/lib/libQt6Gui.so.6", "libQt6Gui.so.6"])


# ---- the frozen entry point
def test_entry_point_calls_freeze_support_before_anything_of_ours():
    tree = ast.parse((PACKAGING / "entry.py").read_text())
    main_block = next(node for node in tree.body if isinstance(node, ast.If))
    order = [ast.unparse(stmt) for stmt in main_block.body]
    assert order[0] == "_repair_streams()"
    assert order[1] == "multiprocessing.freeze_support()"
    assert order[2].startswith("from console.__main__ import main")


def test_entry_point_survives_stdout_and_stderr_being_none():
    code = ("import runpy, sys\nsys.stdout = sys.stderr = None\nsys.argv = ['labconsole', '--version']\n"
            f"runpy.run_path({str(PACKAGING / 'entry.py')!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# ---- the build's guards
def test_a_missing_tool_names_the_debian_package(build, monkeypatch):
    real = build.shutil.which
    monkeypatch.setattr(build.shutil, "which", lambda tool: None if tool == "objdump" else real(tool))
    with pytest.raises(build.BuildError, match=r"apt-get install binutils"):
        build.check(deb_tools=False)


def test_a_missing_dpkg_deb_names_its_package(build, monkeypatch):
    real = build.shutil.which
    monkeypatch.setattr(build.shutil, "which", lambda tool: None if tool == "dpkg-deb" else real(tool))
    with pytest.raises(build.BuildError, match=r"apt-get install dpkg"):
        build.check(deb_tools=True)


def test_a_missing_pyinstaller_names_the_package_extra(build, monkeypatch):
    monkeypatch.setitem(sys.modules, "PyInstaller", None)  # what `import PyInstaller` meets where it is absent
    with pytest.raises(build.BuildError, match=r"PyInstaller is not installed.*`package` extra.*make package"):
        build.check(deb_tools=False)


def test_a_missing_system_library_names_the_debian_package(build, monkeypatch):
    monkeypatch.setattr(build, "_require_pyinstaller", lambda: None)  # this test is about libraries, not tools
    monkeypatch.setattr(build, "_ldd", lambda path, search: {"libxkbcommon.so.0": None, "libc.so.6": "/lib/libc.so.6"})
    with pytest.raises(build.BuildError, match=r"libxkbcommon\.so\.0.*apt-get install libxkbcommon0"):
        build.check(deb_tools=False)


def test_an_unknown_missing_library_says_how_to_find_its_package(build, monkeypatch):
    monkeypatch.setattr(build, "_require_pyinstaller", lambda: None)
    monkeypatch.setattr(build, "_ldd", lambda path, search: {"libweird.so.7": None})
    with pytest.raises(build.BuildError, match=r"the package providing libweird\.so\.7.*apt-file search"):
        build.check(deb_tools=False)


def test_a_bundle_is_complete_only_with_its_build_info(build, tmp_path):
    bundle = tmp_path / "labconsole"
    (bundle / "_internal").mkdir(parents=True)
    assert not build.is_complete(bundle)
    (bundle / "_internal" / "labconsole-build.json").write_text('{"complete": false}')
    assert not build.is_complete(bundle)
    (bundle / "_internal" / "labconsole-build.json").write_text('{"complete": true}')
    assert build.is_complete(bundle)


def test_the_archives_refuse_an_incomplete_bundle(build, tmp_path, monkeypatch):
    monkeypatch.setattr(build, "BUNDLE", tmp_path / "labconsole")
    monkeypatch.setattr(build, "ROOT", tmp_path)
    with pytest.raises(build.BuildError, match="incomplete"):
        build.tarball()


def test_promotion_replaces_the_bundle_in_one_rename(build, tmp_path, monkeypatch):
    for name, value in (("DIST", tmp_path), ("BUNDLE", tmp_path / "labconsole"),
                        ("PARTIAL", tmp_path / ".labconsole.partial")):
        monkeypatch.setattr(build, name, value)
    (tmp_path / "labconsole").mkdir()
    (tmp_path / "labconsole" / "old").write_text("old")
    (tmp_path / ".labconsole.partial").mkdir()
    (tmp_path / ".labconsole.partial" / "new").write_text("new")
    build._promote()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labconsole"]
    assert [p.name for p in (tmp_path / "labconsole").iterdir()] == ["new"]


# ---- the smoke test's environment and the asset lookup
def test_smoke_test_runs_the_bundle_without_the_build_machines_paths(tmp_path, monkeypatch):
    smoke = _load("smoke_test")
    for name in ("PYTHONPATH", "QT_PLUGIN_PATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "PYTHONHOME"):
        monkeypatch.setenv(name, "/somewhere")
    env = smoke.clean_env(tmp_path)
    assert not {"PYTHONPATH", "QT_PLUGIN_PATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "PYTHONHOME"} & set(env)
    assert env["HOME"] == str(tmp_path) and env["QT_QPA_PLATFORM"] == "offscreen"
    assert ".venv" not in env["PATH"]


def test_assets_are_found_in_the_checkout_and_in_a_bundle(tmp_path, monkeypatch):
    from console import paths

    assert paths.asset_path("labconsole.svg").is_file()
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert paths.asset_path("labconsole.svg") == tmp_path / "assets" / "labconsole.svg"


# ---- what users install and what only the bundle's build needs
def _project() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()


def test_build_tools_are_an_extra_not_a_dependency():
    """`pip install lab-console` must not pull PyInstaller; `make package` installs the `package` extra."""
    project = _project()
    assert "pyinstaller" not in {_name(dep) for dep in project["dependencies"]}
    assert "pyinstaller" in {_name(dep) for dep in project["optional-dependencies"]["package"]}
    makefile = (ROOT / "Makefile").read_text()
    assert ".[package]" in makefile


def test_sqlite_utils_is_required_at_the_version_that_has_atomic():
    """console.history uses Database.atomic(), new in sqlite-utils 4.0."""
    assert "sqlite-utils>=4" in _project()["dependencies"]
    assert int(metadata.version("sqlite-utils").split(".")[0]) >= 4
    from sqlite_utils import Database

    assert hasattr(Database, "atomic")
