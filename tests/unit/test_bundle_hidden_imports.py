"""The bundle's hidden imports hold every module the app imports by name: PyInstaller's import graph cannot see
them, and one missing is a ModuleNotFoundError only on a lab machine that installed the package."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bundle_config():
    spec = importlib.util.spec_from_file_location("bundle_config", ROOT / "packaging" / "bundle_config.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bundle_config", module)
    spec.loader.exec_module(module)
    return module


def test_every_storage_kind_is_in_the_bundle():
    from console.cli.storage_cmd import KIND_MODULES
    from engines.storage import KINDS

    hidden = set(_bundle_config().hidden_imports())
    assert set(KIND_MODULES.values()) <= hidden  # the CLI flags of each kind (loaded by name)
    assert {target.partition(":")[0] for target in KINDS.values()} <= hidden  # the worker side of each kind
    assert "console.telemetry.diskstats" in hidden  # the storage telemetry source, registered by name
