"""What goes into the bundle and what stays out: read by labconsole.spec (PyInstaller) and build.py.

Engines, models, scenarios and telemetry sources are imported by name at run time (importlib), so PyInstaller's
static analysis cannot see them: `hidden_imports()` reads the registries themselves, and a new plug-in registered
with its one line is bundled without touching this file. The registries are torch-free and Qt-free to import.
"""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP_NAME = "labconsole"

# Imported by name, never statically: keep them in. Every module of `engines` is added as well, since the
# console calls engine code by "module:function" name in spawned workers (console.workers).
ALWAYS_HIDDEN = ["onnxruntime", "psutil"]

# Modules that must not be pulled in through optional imports.
EXCLUDED_MODULES = [
    # Other Qt bindings (pyqtgraph and others probe for them): one binding, PySide6, is enough.
    "PyQt5", "PyQt6", "PySide2", "qtpy",
    # The cluster extra (Ray) is for pip installs: the bundle's `labconsole node|cluster` say how to get it.
    "ray",
    # Qt modules the window does not use (the PySide6 hooks would otherwise collect their libraries and plugins).
    "PySide6.QtWebEngineCore", "PySide6.QtWebEngineWidgets", "PySide6.QtWebEngineQuick", "PySide6.QtWebChannel",
    "PySide6.QtWebSockets", "PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtQuickWidgets", "PySide6.QtQuick3D",
    "PySide6.QtQuickControls2", "PySide6.Qt3DCore", "PySide6.Qt3DRender", "PySide6.Qt3DExtras",
    "PySide6.Qt3DInput", "PySide6.Qt3DLogic", "PySide6.Qt3DAnimation", "PySide6.QtMultimedia",
    "PySide6.QtMultimediaWidgets", "PySide6.QtNetwork", "PySide6.QtNetworkAuth", "PySide6.QtSql",
    "PySide6.QtDesigner", "PySide6.QtHelp", "PySide6.QtUiTools", "PySide6.QtXml", "PySide6.QtConcurrent",
    "PySide6.QtPrintSupport", "PySide6.QtCharts", "PySide6.QtDataVisualization", "PySide6.QtGraphs",
    "PySide6.QtGraphsWidgets", "PySide6.QtPdf", "PySide6.QtPdfWidgets", "PySide6.QtPositioning",
    "PySide6.QtLocation", "PySide6.QtBluetooth", "PySide6.QtNfc", "PySide6.QtSensors", "PySide6.QtSerialPort",
    "PySide6.QtSerialBus", "PySide6.QtRemoteObjects", "PySide6.QtScxml", "PySide6.QtStateMachine",
    "PySide6.QtTextToSpeech", "PySide6.QtSpatialAudio", "PySide6.QtHttpServer", "PySide6.QtAxContainer",
    "PySide6.QtDBus",
    # Development and notebook tooling that optional imports reach.
    "tkinter", "_tkinter", "IPython", "jupyter_client", "ipykernel", "matplotlib", "pytest", "_pytest",
    "pyqtgraph.examples", "pyqtgraph.opengl", "pyqtgraph.jupyter", "PyInstaller", "setuptools", "pip",
    "importlinter", "grimp", "ruff",
    # Test-only libraries of the dev extra (property tests and statistics oracles): never imported by the app.
    "hypothesis", "scipy",
    # torch extras the workers never use.
    "torch.utils.tensorboard", "tensorboard",
]

# Files dropped from the bundle, matched against their destination path inside the bundle's data directory.
# Headers, static libraries, C++ test binaries and build-system files are never loaded at run time.
TRIMMED = [
    "torch/include/*", "torch/share/*", "torch/test/*", "torch/bin/test_*", "torch/bin/*Test",
    "torch/bin/protoc*", "torch/lib/libjitbackend_test.so", "torch/lib/libtorchbind_test.so",
    "torch/lib/libbackend_with_compiler.so", "torch/lib/libaoti_custom_ops.so", "torch/_inductor/codegen/*.cpp",
    "*/tests/*", "*/test/*", "*.pyi", "*.h", "*.hpp", "*.cuh", "*.a", "*.lib",
    "PySide6/include/*", "PySide6/typesystems/*", "PySide6/glue/*", "PySide6/scripts/*", "PySide6/Qt/translations/*",
    # Qt platform plugins for displays a lab console does not use (keep xcb for X11, offscreen, minimal).
    "PySide6/Qt/plugins/platforms/libqwayland*", "PySide6/Qt/plugins/platforms/libqeglfs*",
    "PySide6/Qt/plugins/platforms/libqlinuxfb*", "PySide6/Qt/plugins/platforms/libqvnc*",
    "PySide6/Qt/plugins/platforms/libqvkkhrdisplay*", "PySide6/Qt/plugins/platforms/libqminimalegl*",
    "PySide6/Qt/plugins/wayland-*", "PySide6/Qt/plugins/egldeviceintegrations/*",
    "PySide6/Qt/plugins/platforminputcontexts/*", "PySide6/Qt/plugins/tls/*",
    "PySide6/Qt/plugins/networkinformation/*", "PySide6/Qt/plugins/generic/*",
    # Image formats: the window reads one SVG icon and writes PNG (built into QtGui).
    "PySide6/Qt/plugins/imageformats/libq[!s]*",
    # The GTK theme plugin would load the system's GTK 3 against bundled cairo/pango/glib: a mix that breaks.
    "PySide6/Qt/plugins/platformthemes/libqgtk3*",
    "libQt6Wayland*", "libQt6EglFS*", "libQt6Quick*", "libQt6Qml*", "libQt6Network*", "libQt6Pdf*",
    "libwayland-*",
]

# Packages that read their own source at run time (inspect.getsource): they go in as .py files beside the
# compiled archive. onnxscript compiles its @script functions from source when torch exports to ONNX.
# (torch's own PyInstaller hook already does this for torch.)
SOURCE_NEEDED = {"onnxscript": "pyz+py", "onnx_ir": "pyz+py"}

# Package metadata copied into the bundle, so importlib.metadata (console.about) finds the versions there too.
METADATA = ["torch", "onnxruntime", "PySide6_Essentials", "shiboken6", "numpy", "pyqtgraph"]


def _registry_modules() -> list[str]:
    """Every module named in the engine, model, scenario, telemetry, page and storage-kind registries (imported by name, so
    PyInstaller's import graph cannot see them: a page missing here is a ModuleNotFoundError in the bundle)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    backends = importlib.import_module("engines.backends")
    catalog = importlib.import_module("engines.catalog")
    scenarios = importlib.import_module("engines.scenarios")
    telemetry = importlib.import_module("console.telemetry.registry")
    found = [i.module for i in backends.infos()] + [e.module for e in catalog.ENTRIES.values()]
    found += [i.probe.partition(":")[0] for i in backends.infos() if i.probe]  # each backend's probe, by name
    found += [i.module for i in scenarios.infos()]
    found += [target.partition(":")[0] for target in telemetry.SOURCES.values() if isinstance(target, str)]
    pages = importlib.import_module("console.ui.pages")  # the standard library only, by design
    found += [info.factory.partition(":")[0] for info in pages.PAGES if isinstance(info.factory, str)]
    storage_cli = importlib.import_module("console.cli.storage_cmd")  # each storage kind's flags, by name
    found += list(storage_cli.KIND_MODULES.values())
    return found


def _package_modules(package: str) -> list[str]:
    """Every module of a package, found on disk (subpackages are imported to walk them; leaf modules are not)."""
    root = importlib.import_module(package)
    return [package] + [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")]


def hidden_imports() -> list[str]:
    return sorted(set(_registry_modules() + _package_modules("engines") + ALWAYS_HIDDEN))


def is_trimmed(dest: str) -> bool:
    dest = dest.replace("\\", "/")
    name = dest.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(dest, pattern) or fnmatch.fnmatch(name, pattern) for pattern in TRIMMED)


def prune_orphans(binaries: list[tuple[str, str, str]]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Drop the shared libraries that only trimmed files needed (the GTK plugin's cairo and pango, the Wayland
    plugin's Qt libraries …): PyInstaller has already added every dependency of what it collected.

    A candidate is a library PyInstaller placed at the top of the bundle or among Qt's libraries; it stays when a
    kept binary or extension lists it as NEEDED (directly or through a kept library). libpython, loaded by the
    bootloader itself, always stays. Returns (kept entries, dropped destinations).
    """
    def candidate(dest: str, typecode: str) -> bool:
        return (typecode in ("BINARY", "SYMLINK") and ("/" not in dest or dest.startswith("PySide6/Qt/lib/"))
                and not dest.startswith("libpython"))

    links = {dest: target for dest, target, typecode in binaries if typecode == "SYMLINK"}
    elves = {dest: src for dest, src, typecode in binaries if typecode in ("BINARY", "EXTENSION", "EXECUTABLE")}
    names_of: dict[str, set[str]] = {dest: {dest.rsplit("/", 1)[-1]} for dest in elves}
    for link, target in links.items():
        if target in names_of:
            names_of[target].add(link.rsplit("/", 1)[-1])
    kept = {dest for dest, src, typecode in binaries if typecode != "SYMLINK" and not candidate(dest, typecode)}
    wanted: set[str] = set()
    frontier = [dest for dest in kept if dest in elves]
    while frontier:
        for dest in frontier:
            wanted |= needed(elves[dest])
        frontier = [dest for dest in elves if dest not in kept and names_of[dest] & wanted]
        kept |= set(frontier)
    kept |= {link for link, target in links.items() if target in kept}
    result = [entry for entry in binaries if entry[0] in kept or entry[2] not in ("BINARY", "SYMLINK")]
    return result, sorted(dest for dest, _, _ in binaries if dest not in {e[0] for e in result})


def needed(path: str) -> set[str]:
    """The sonames an ELF file lists as NEEDED (objdump, from binutils, which PyInstaller needs anyway)."""
    try:
        out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    return set(re.findall(r"^\s*NEEDED\s+(\S+)", out, flags=re.MULTILINE))
