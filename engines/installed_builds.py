"""Which builds of PyTorch and ONNX Runtime this Python has installed, read from package metadata (`labconsole doctor`).

Why: on a GPU lab machine the wrong build is the usual fault, and it is silent. A CPU-only torch runs every CUDA
spec on nothing; onnxruntime and onnxruntime-gpu installed side by side unpack into the same `onnxruntime` folder,
so whichever pip wrote last answers and removing either breaks the other. Nothing here imports torch or
onnxruntime: the metadata (and torch's own `torch/version.py`, read as text, never run) says enough, in
milliseconds, in the GUI process too (DESIGN §2). `path` points the lookup at a folder of dist-info directories
instead of sys.path (tests fake an install that way).

Each check has the doctor's shape ({"id", "label", "status", "reading", "fix", "data"}); the report is
{"checks": [...], "worst": status}.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path
from typing import Any

from engines.doctor import BAD, OK, RANK, WARN

TORCH_FLOOR = (2, 9)  # pyproject.toml's torch>=2.9 (tests/unit/test_installed_builds.py keeps the two equal)
TORCH_INDEX = "https://download.pytorch.org/whl"
CUDA_INDEX = f"{TORCH_INDEX}/cu128"  # the example the fixes and the README give; pick the CUDA your driver runs
# Every ONNX Runtime build installs the same `onnxruntime` import package: at most one may be present.
ORT_BUILDS = {
    "onnxruntime": "CPU build",
    "onnxruntime-gpu": "CUDA build (CUDA and TensorRT execution providers)",
    "onnxruntime-directml": "DirectML build",
    "onnxruntime-openvino": "OpenVINO build",
    "onnxruntime-qnn": "Qualcomm QNN build",
    "onnxruntime-rocm": "ROCm build",
    "onnxruntime-training": "training build",
}
ORT_EXTRAS = "pip install 'lab-console[gpu]' on a CUDA machine, 'lab-console[cpu]' elsewhere (from a checkout: " \
             "pip install -e '.[gpu]' or '.[cpu]')"


# ---- Public API
def report(path: list[str] | None = None) -> dict[str, Any]:
    """The torch and ONNX Runtime checks, and the worse of their two statuses."""
    checks = [torch_check(path), onnxruntime_check(path)]
    return {"checks": checks, "worst": max((c["status"] for c in checks), key=RANK.__getitem__)}


def torch_check(path: list[str] | None = None) -> dict[str, Any]:
    dist = _distribution("torch", path)
    if dist is None:
        return _check("torch", BAD, "not installed: the torch engine and every CUDA target are unavailable",
                      f"pip install torch --index-url {CUDA_INDEX} on a CUDA machine, or --index-url "
                      f"{TORCH_INDEX}/cpu elsewhere", {"installed": False})
    version = dist.version
    build = torch_build(dist)
    data = {"installed": True, "version": version, **build}
    reading = f"{version}: {build['label']} (read from {build['source']})"
    if _release(version) < TORCH_FLOOR:
        floor = ".".join(map(str, TORCH_FLOOR))
        return _check("torch", BAD, f"{reading}; older than {floor}, the oldest this console works with",
                      f"pip install -U 'torch>={floor}' --index-url {TORCH_INDEX}/<your build: "
                      f"cu128, cu126 … or cpu>", data)
    return _check("torch", OK, reading, None, data)


def onnxruntime_check(path: list[str] | None = None) -> dict[str, Any]:
    found = [(name, dist.version) for name in ORT_BUILDS if (dist := _distribution(name, path)) is not None]
    data = {"distributions": [{"name": n, "version": v, "build": ORT_BUILDS[n]} for n, v in found]}
    if not found:
        return _check("onnxruntime", WARN, "not installed: the onnxruntime engine is unavailable", ORT_EXTRAS, data)
    if len(found) == 1:
        name, version = found[0]
        return _check("onnxruntime", OK, f"{name} {version}, the {ORT_BUILDS[name]}", None, data)
    names = [n for n, _ in found]
    listed = " and ".join(f"{n} {v}" for n, v in found)
    return _check("onnxruntime", WARN,
                  f"{listed} are all installed: they unpack into the same `onnxruntime` folder, so the one pip "
                  f"wrote last answers, and uninstalling either breaks the other",
                  f"keep one build: pip uninstall -y {' '.join(names)}, then {ORT_EXTRAS}; with the extra, "
                  f"upgrades never bring the other build back", data)


def torch_build(dist: metadata.Distribution) -> dict[str, Any]:
    """{"build": "cuda" | "rocm" | "xpu" | "cpu" | "unknown", "accelerator_version", "label", "source"}.

    torch/version.py (written by torch's build: `cuda = '12.8'` or None) is read as text; a bundle keeps it inside
    its archive, so then the version's local tag (+cpu, +cu128, +rocm6.4) answers, then the nvidia-* wheels torch
    requires (PyPI's Linux torch is a CUDA build with no tag)."""
    text = _read(dist, "torch/version.py")
    if text is not None:
        for build, name, label in (("cuda", "cuda", "CUDA"), ("rocm", "hip", "ROCm"), ("xpu", "xpu", "Intel XPU")):
            value = _assigned(text, name)
            if value:
                return _build(build, value, f"{label} {value} build", "torch/version.py")
        return _build("cpu", None, "CPU-only build, no CUDA", "torch/version.py")
    tag = dist.version.partition("+")[2].lower()
    if tag == "cpu":
        return _build("cpu", None, "CPU-only build, no CUDA", "the version tag")
    if cuda := re.fullmatch(r"cu(\d+)(\d)", tag):
        value = f"{cuda.group(1)}.{cuda.group(2)}"
        return _build("cuda", value, f"CUDA {value} build", "the version tag")
    if tag.startswith("rocm"):
        return _build("rocm", tag[4:], f"ROCm {tag[4:]} build", "the version tag")
    if any(r.lower().startswith("nvidia-cuda-runtime") for r in dist.requires or []):
        return _build("cuda", None, "CUDA build (CUDA version not recorded)", "its nvidia-* requirements")
    return _build("unknown", None, "build not recorded (no torch/version.py, no version tag)", "the metadata")


def summary_line(found: dict[str, Any]) -> str:
    """"torch 2.9.0+cu128 (CUDA 12.8 build); onnxruntime-gpu 1.22.0" — the report in one line."""
    torch, ort = (found.get("checks") or [{}, {}])[:2]
    t = torch.get("data") or {}
    torch_part = f"torch {t['version']} ({t['label']})" if t.get("installed") else "torch not installed"
    dists = (ort.get("data") or {}).get("distributions") or []
    ort_part = " + ".join(f"{d['name']} {d['version']}" for d in dists) or "no ONNX Runtime"
    return f"{torch_part}; {ort_part}"


# ---- Private API
def _distribution(name: str, path: list[str] | None) -> metadata.Distribution | None:
    """The first installed distribution of `name` (the one import would find first), or None."""
    if path is None:
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
    return next(iter(metadata.distributions(name=name, path=path)), None)


def _read(dist: metadata.Distribution, relative: str) -> str | None:
    try:
        located = Path(str(dist.locate_file(relative)))
        return located.read_text(encoding="utf-8") if located.is_file() else None
    except (OSError, NotImplementedError, ValueError):
        return None


def _assigned(text: str, name: str) -> str | None:
    """The string a module-level `name = '…'` (or `name: Optional[str] = '…'`) assigns; None for None or absent."""
    found = re.search(rf"^{name}\s*(?::[^=\n]*)?=\s*(?:'([^'\n]*)'|\"([^\"\n]*)\")", text, re.MULTILINE)
    return (found.group(1) or found.group(2) or None) if found else None


def _release(version: str) -> tuple[int, ...]:
    """(2, 9) from "2.9.0+cu128", "2.10.0.dev20250101": the numeric release, enough to compare with a floor."""
    parts = re.match(r"(\d+)(?:\.(\d+))?", version)
    return (int(parts.group(1)), int(parts.group(2) or 0)) if parts else (0, 0)


def _build(build: str, version: str | None, label: str, source: str) -> dict[str, Any]:
    return {"build": build, "accelerator_version": version, "label": label, "source": source}


def _check(key: str, status: str, reading: str, fix: str | None, data: dict[str, Any]) -> dict[str, Any]:
    label = {"torch": "PyTorch build", "onnxruntime": "ONNX Runtime build"}[key]
    return {"id": key, "label": label, "status": status, "reading": reading, "fix": fix, "data": data}

