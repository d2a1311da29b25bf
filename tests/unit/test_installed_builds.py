"""`engines.installed_builds` (shown by `labconsole doctor`, stored by self-test) against faked installs: dist-info
folders in tmp_path, as pip writes them, and torch's own version.py — which torch build (CPU, which CUDA, ROCm),
which ONNX Runtime build, a warning with the fix when two ONNX Runtime builds shadow each other; and the packaging
facts the GPU lab install rests on (the ONNX Runtime build is an extra, the torch floor, the LICENSE)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main as cli_main
from engines import doctor, installed_builds

ROOT = Path(__file__).resolve().parents[2]
CPU_VERSION_PY = "from typing import Optional\n__version__ = '{v}'\ncuda: Optional[str] = None\nhip: Optional[str] = None\n"


def install(site: Path, name: str, version: str, requires: tuple[str, ...] = (),
            files: dict[str, str] | None = None) -> None:
    """A distribution as pip leaves it: <name>-<version>.dist-info/METADATA, and the package's files beside it."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    for relative, text in (files or {}).items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(text)


def checks(site: Path) -> dict[str, dict]:
    return {c["id"]: c for c in installed_builds.report([str(site)])["checks"]}


def test_a_cpu_machine_gets_both_checks_ok(tmp_path):
    install(tmp_path, "torch", "2.13.0+cpu", files={"torch/version.py": CPU_VERSION_PY.format(v="2.13.0+cpu")})
    install(tmp_path, "onnxruntime", "1.32.0")
    found = installed_builds.report([str(tmp_path)])
    by_id = {c["id"]: c for c in found["checks"]}
    assert found["worst"] == "ok"
    assert by_id["torch"]["reading"] == "2.13.0+cpu: CPU-only build, no CUDA (read from torch/version.py)"
    assert by_id["torch"]["data"]["build"] == "cpu" and by_id["torch"]["fix"] is None
    assert by_id["onnxruntime"]["reading"] == "onnxruntime 1.32.0, the CPU build"
    assert installed_builds.summary_line(found) == "torch 2.13.0+cpu (CPU-only build, no CUDA); onnxruntime 1.32.0"
    json.dumps(found)


def test_the_cuda_version_comes_from_torchs_version_py(tmp_path):
    text = "__version__ = '2.9.0+cu128'\ndebug = False\ncuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n"
    install(tmp_path, "torch", "2.9.0+cu128", files={"torch/version.py": text})
    install(tmp_path, "onnxruntime-gpu", "1.22.0")
    found = checks(tmp_path)
    assert found["torch"]["status"] == "ok" and "CUDA 12.8 build" in found["torch"]["reading"]
    assert found["torch"]["data"]["accelerator_version"] == "12.8"
    assert found["onnxruntime"]["reading"] == ("onnxruntime-gpu 1.22.0, the CUDA build (CUDA and TensorRT "
                                               "execution providers)")


def test_rocm_and_the_fallbacks_when_version_py_cannot_be_read(tmp_path):
    rocm = tmp_path / "rocm"
    install(rocm, "torch", "2.10.0+rocm6.4", files={"torch/version.py": "cuda = None\nhip = '6.4.43482'\n"})
    assert checks(rocm)["torch"]["data"]["label"] == "ROCm 6.4.43482 build"
    tagged = tmp_path / "tagged"  # a bundle keeps version.py in its archive: the version's tag answers
    install(tagged, "torch", "2.9.1+cu126")
    assert checks(tagged)["torch"]["reading"] == "2.9.1+cu126: CUDA 12.6 build (read from the version tag)"
    pypi = tmp_path / "pypi"  # PyPI's Linux torch: no tag, a CUDA build all the same
    install(pypi, "torch", "2.11.0", requires=("filelock", "nvidia-cuda-runtime-cu12==12.8.90; platform_system == "
                                               "'Linux'"))
    assert checks(pypi)["torch"]["data"]["build"] == "cuda"
    assert "its nvidia-* requirements" in checks(pypi)["torch"]["reading"]
    unknown = tmp_path / "unknown"
    install(unknown, "torch", "2.11.0")
    assert checks(unknown)["torch"]["data"]["build"] == "unknown"


def test_two_onnxruntime_builds_are_a_warning_with_the_fix(tmp_path):
    install(tmp_path, "torch", "2.13.0+cpu", files={"torch/version.py": CPU_VERSION_PY.format(v="2.13.0+cpu")})
    install(tmp_path, "onnxruntime", "1.32.0")
    install(tmp_path, "onnxruntime-gpu", "1.32.0")
    found = installed_builds.report([str(tmp_path)])
    ort = found["checks"][1]
    assert found["worst"] == ort["status"] == "warn"
    assert ort["reading"].startswith("onnxruntime 1.32.0 and onnxruntime-gpu 1.32.0 are all installed")
    assert "same `onnxruntime` folder" in ort["reading"]
    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in ort["fix"] and "lab-console[gpu]" in ort["fix"]
    assert [d["name"] for d in ort["data"]["distributions"]] == ["onnxruntime", "onnxruntime-gpu"]


def test_missing_engines_and_an_old_torch_name_the_fix(tmp_path):
    found = checks(tmp_path)
    assert found["torch"]["status"] == "bad" and "not installed" in found["torch"]["reading"]
    assert "download.pytorch.org/whl/cu128" in found["torch"]["fix"]
    assert found["onnxruntime"]["status"] == "warn" and "lab-console[cpu]" in found["onnxruntime"]["fix"]
    old = tmp_path / "old"
    install(old, "torch", "2.8.0+cpu", files={"torch/version.py": CPU_VERSION_PY.format(v="2.8.0+cpu")})
    torch = checks(old)["torch"]
    assert torch["status"] == "bad" and "older than 2.9" in torch["reading"] and "torch>=2.9" in torch["fix"]
    newer = tmp_path / "newer"
    install(newer, "torch", "2.10.0.dev20251101+cpu")
    assert checks(newer)["torch"]["status"] == "ok"


def test_this_machines_install_is_read_without_importing_either_engine():
    code = ("import sys, json; from engines import installed_builds; found = installed_builds.report(); "
            "print(json.dumps([found['checks'][0]['data'].get('installed'), "
            "[m for m in ('torch', 'onnxruntime') if m in sys.modules]]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, []]


def test_doctor_prints_the_builds_and_puts_them_in_its_json(monkeypatch, capsys, tmp_path):
    install(tmp_path, "torch", "2.13.0+cpu", files={"torch/version.py": CPU_VERSION_PY.format(v="2.13.0+cpu")})
    install(tmp_path, "onnxruntime", "1.32.0")
    install(tmp_path, "onnxruntime-gpu", "1.32.0")
    canned = {"schema": doctor.SCHEMA, "host": "box", "measured_at": "2026-12-04T07:00:00Z", "sample_s": 0.1,
              "worst": "ok", "counts": {"bad": 0, "warn": 0, "ok": 0, "not_available": 0}, "checks": []}
    monkeypatch.setattr(doctor, "diagnose", lambda sample_s: dict(canned))
    real_report = installed_builds.report
    monkeypatch.setattr(installed_builds, "report", lambda: real_report([str(tmp_path)]))
    assert cli_main(["doctor", "--json", "--sample", "0.1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["schema"] == "labconsole.doctor/1" and printed["install"]["worst"] == "warn"
    assert cli_main(["doctor", "--sample", "0.1"]) == 0
    text = capsys.readouterr().out
    assert "Installed builds (from package metadata; neither engine imported):" in text
    assert "  ok  PyTorch build: 2.13.0+cpu: CPU-only build, no CUDA" in text
    assert "WARN  ONNX Runtime build: onnxruntime 1.32.0 and onnxruntime-gpu 1.32.0 are all installed" in text
    assert "fix: keep one build: pip uninstall -y onnxruntime onnxruntime-gpu" in text


# ---- the packaging facts the install rests on
def _project() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


def test_the_onnxruntime_build_is_an_extra_and_dev_ci_take_the_cpu_one():
    """A core `onnxruntime` would come back beside onnxruntime-gpu on every upgrade; as extras it cannot."""
    project = _project()["project"]
    assert not _names(project["dependencies"]) & set(installed_builds.ORT_BUILDS)
    extras = project["optional-dependencies"]
    assert _names(extras["cpu"]) == {"onnxruntime"} and _names(extras["gpu"]) == {"onnxruntime-gpu"}
    assert "-e '.[dev,cpu]'" in (ROOT / "Makefile").read_text()


def test_the_torch_floor_is_one_number():
    torch = [r for r in _project()["project"]["dependencies"] if r.startswith("torch")]
    floor = ".".join(map(str, installed_builds.TORCH_FLOOR))
    assert torch == [f"torch>={floor}"]  # open above: a CUDA lab machine brings the build it needs


def test_the_license_is_the_apache_text_and_the_builds_carry_it():
    project = _project()["project"]
    text = (ROOT / "LICENSE").read_text()
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    build = (ROOT / "packaging" / "build.py").read_text()
    assert 'ROOT / "LICENSE", PARTIAL / "LICENSE"' in build and '(ROOT / "LICENSE").read_text' in build
