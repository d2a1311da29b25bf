"""console.about: versions from package metadata (never by importing the engines), and a bundle's build info."""

import json
import subprocess
import sys
from importlib import metadata

from console import __version__, about

KEYS = {"lab_console", "torch", "onnxruntime", "pyside6", "qt", "python", "build", "build_date"}


def test_versions_in_a_source_checkout_come_from_package_metadata():
    v = about.versions()
    assert set(v) == KEYS
    assert v["lab_console"] == __version__
    assert v["torch"] == metadata.version("torch")
    assert v["onnxruntime"] == metadata.version("onnxruntime")
    assert v["pyside6"] == metadata.version("PySide6_Essentials")
    assert v["python"] == ".".join(map(str, sys.version_info[:3]))
    assert v["build"] == "source checkout" and v["build_date"] is None


def test_versions_import_neither_the_engines_nor_qt():
    code = ("import sys; from console.about import versions, version_text; version_text(versions()); "
            "print(sorted(m for m in ('torch', 'onnxruntime', 'PySide6') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_qt_version_is_the_running_qt_once_qt_is_loaded():
    from PySide6 import QtCore as qtcore

    assert about.versions()["qt"] == qtcore.qVersion()


def test_a_bundle_reports_its_build_date_and_falls_back_to_recorded_versions(tmp_path, monkeypatch):
    info = {"complete": True, "build_date": "2026-01-02T03:04:05+00:00",
            "versions": {"torch": "9.9.9+cpu", "onnxruntime": "8.8.8", "pyside6": "6.7.0", "qt": "6.7.1"}}
    (tmp_path / about.BUILD_INFO_NAME).write_text(json.dumps(info))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    monkeypatch.setattr(about, "_qt_version", lambda: None)  # as in a process that has not loaded Qt

    def no_metadata(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(about.metadata, "version", no_metadata)
    v = about.versions()
    assert v["build"] == "bundle" and v["build_date"] == info["build_date"]
    assert (v["torch"], v["onnxruntime"], v["pyside6"], v["qt"]) == ("9.9.9+cpu", "8.8.8", "6.7.0", "6.7.1")
    text = about.version_text(v)
    assert text.splitlines()[0] == f"Lab Console {__version__} (bundle built {info['build_date']})"


def test_a_bundle_without_build_info_still_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert about.build_info() == {}
    v = about.versions()
    assert v["build"] == "bundle" and v["build_date"] is None
    assert v["torch"] == metadata.version("torch")


def test_missing_engine_says_not_installed(monkeypatch):
    real = metadata.version

    def without_onnxruntime(name):
        if name.startswith("onnxruntime"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(about.metadata, "version", without_onnxruntime)
    assert about.versions()["onnxruntime"] == about.NOT_INSTALLED


def test_version_text_lists_every_component():
    v = {"lab_console": "1.2.3", "torch": "2.13.0+cpu", "onnxruntime": "1.32.0", "pyside6": "6.11.3",
         "qt": "6.11.3", "python": "3.11.7", "build": "source checkout", "build_date": None}
    assert about.version_text(v).splitlines() == [
        "Lab Console 1.2.3 (source checkout)", "PyTorch 2.13.0+cpu", "ONNX Runtime 1.32.0",
        "Qt 6.11.3 (PySide6 6.11.3)", "Python 3.11.7"]


def test_labconsole_version_prints_all_versions_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "console", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"Lab Console {__version__} (source checkout)"
    assert lines[1] == f"PyTorch {metadata.version('torch')}"
    assert lines[2] == f"ONNX Runtime {metadata.version('onnxruntime')}"
    assert lines[3].startswith("Qt ") and f"(PySide6 {metadata.version('PySide6_Essentials')})" in lines[3]
    assert lines[4] == f"Python {'.'.join(map(str, sys.version_info[:3]))}"


def test_labconsole_version_imports_no_engine():
    code = ("import sys\nfrom console.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit as e:\n"
            "    assert e.code in (0, None), e.code\n"
            "print('HEAVY', sorted(m for m in ('torch', 'onnxruntime') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout
