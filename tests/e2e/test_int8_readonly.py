"""An ONNX Runtime int8 run never writes beside the user's file: it completes from a read-only folder (its
quantizer's `<stem>-inferred.onnx` goes to a staged view in the worker's temp dir), nothing appears there, and the
sandbox no longer opens the model's folder for writing — for a file with its weights inline or in external data."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 240
RUN_IN_WORKER = """
import json, sys
from console.run.runner import WorkerRun
from engines.spec import RunSpec

events = []
run = WorkerRun(RunSpec(model=sys.argv[1], engine="onnxruntime", inputs={"x": [1, 16]}, precision="int8",
                        duration_s=0.3, warmup_s=0.05).validate(), events.append, lambda outcome: None)
run.start()
outcome = run.wait(float(sys.argv[2]))
print(json.dumps({"status": outcome and outcome.status, "message": outcome and outcome.message,
                  "sandbox": events[0].get("sandbox") if events else None}))
"""


def _matmul(folder: Path, external: bool) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    weight = numpy_helper.from_array(np.ones((16, 8), dtype=np.float32), "w")  # raw bytes: can go external
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul", [x], [y], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "matmul.onnx"
    if external:
        onnx.save(model, str(path), save_as_external_data=True, location="matmul.onnx.data", size_threshold=0)
        assert (folder / "matmul.onnx.data").is_file()
    else:
        onnx.save(model, str(path))
    return path


def _without_root_file_powers():
    """In the child, before exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so root
    meets file permissions like anyone (PR_CAPBSET_DROP = 24); the worker it spawns inherits that."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) refused")


def _int8_run(path: Path, env: dict[str, str]) -> dict:
    """The run's outcome, from a console process bound by file permissions (root's powers dropped)."""
    try:
        done = subprocess.run([sys.executable, "-c", RUN_IN_WORKER, str(path), str(WAIT_S)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=WAIT_S + 60,
                              preexec_fn=_without_root_file_powers if os.geteuid() == 0 else None)
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot drop root's file permissions here ({exc})")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX permissions; root drops its powers with prctl")
@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-data"])
def test_an_int8_run_of_a_file_in_a_read_only_folder_completes_and_writes_nothing_there(tmp_path, external):
    folder = tmp_path / "models"
    folder.mkdir()
    path = _matmul(folder, external)
    cache = tmp_path / "cache"
    names = sorted(os.listdir(folder))
    for item in folder.iterdir():
        os.chmod(item, 0o444)
    os.chmod(folder, 0o555)
    try:
        result = _int8_run(path, {**os.environ, "LABCONSOLE_CACHE": str(cache)})
        assert sorted(os.listdir(folder)) == names  # no <stem>-inferred.onnx, nothing else
    finally:
        os.chmod(folder, stat.S_IRWXU)
    assert result["status"] == "completed", result["message"]
    assert list((cache / "onnx" / "int8").glob("matmul-*.onnx"))  # the quantized file went to its cache
    confined = result["sandbox"]
    if confined["active"]:
        assert str(folder) not in confined["summary"]  # the model's folder is not writable for the worker
        assert str(cache / "onnx" / "int8") in confined["summary"]
