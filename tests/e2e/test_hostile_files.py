"""Hostile TorchScript files through the real worker process (console.run.runner.WorkerRun → engines.worker).

A scripted module can write files: `torch.from_file(path, shared=True, size=N)` creates `path` — in `forward`
(when it runs) or in `__setstate__` (when it loads). Each file is first shown to be hostile here, in the test
process: loading a copy aimed at another path creates that marker. Then, in a worker: without --trust-code the
file is refused before it is loaded; with it, the sandbox refuses the write and the run fails saying so. Either
way the marker is never created. Benign files then run confined, profiled (torch) and quantized (ONNX Runtime
int8 writes only into its cache, quantizing a staged copy), with the sandbox recorded in the history.
"""

from pathlib import Path
from typing import Tuple  # noqa: UP035 — TorchScript reads the annotation

import pytest
import torch

from console.history import HistoryWriter
from console.run.runner import WorkerRun
from console.run.session import RunSession
from engines import sandbox
from engines.spec import RunSpec

ABI, WHY = sandbox.available()
pytestmark = pytest.mark.skipif(ABI is None, reason=f"Landlock not available: {WHY}")
WAIT_S = 240


class WritesWhenRun(torch.nn.Module):
    def __init__(self, target: str):
        super().__init__()
        self.target = target

    def forward(self, x):
        mapped = torch.from_file(self.target, shared=True, size=1024)  # used: TorchScript drops unused values
        return x * 2 + mapped.sum() * 0


class WritesWhenLoaded(torch.nn.Module):
    def __init__(self, target: str):
        super().__init__()
        self.target = target
        self.mapped = torch.zeros(1)

    def forward(self, x):
        return x * 2

    @torch.jit.export
    def __getstate__(self) -> Tuple[str, bool, torch.Tensor]:  # noqa: UP006
        return self.target, self.training, self.mapped

    @torch.jit.export
    def __setstate__(self, state: Tuple[str, bool, torch.Tensor]) -> None:  # noqa: UP006
        self.target = state[0]
        self.training = state[1]
        self.mapped = torch.from_file(self.target, shared=True, size=1024)


KINDS = {"forward": WritesWhenRun, "__setstate__": WritesWhenLoaded}


def hostile(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """(the file, the marker it would create): proven hostile by a copy aimed at a control marker."""
    control = tmp_path / "control_marker"
    torch.jit.script(KINDS[kind](str(control))).save(str(tmp_path / "control.pt"))
    torch.jit.load(str(tmp_path / "control.pt"))(torch.ones(1, 4))
    assert control.exists(), "the hostile module does not write when unconfined: the test would prove nothing"
    marker = tmp_path / "PWNED"
    path = tmp_path / f"hostile_{kind.strip('_')}.pt"
    torch.jit.script(KINDS[kind](str(marker))).save(str(path))
    return path, marker


def spec(path: Path, **kwargs) -> RunSpec:
    return RunSpec(model=str(path), engine="torch", inputs={"x": [1, 4]}, duration_s=0.3, warmup_s=0.05,
                   **kwargs).validate()


def in_worker(run_spec: RunSpec):
    events: list[dict] = []
    run = WorkerRun(run_spec, events.append, lambda outcome: None)
    run.start()
    outcome = run.wait(WAIT_S)
    assert outcome is not None, "the worker did not finish"
    return outcome, events


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_trusted_hostile_file_is_stopped_by_the_sandbox(tmp_path, kind):
    path, marker = hostile(tmp_path, kind)
    outcome, events = in_worker(spec(path, trust_code=True))
    assert outcome.status == "failed"
    assert "stopped by the sandbox: it tried to write outside the worker's own folder" in outcome.message
    assert "Permission denied" in outcome.message and "Traceback" not in outcome.message
    assert "The following operation failed" not in outcome.message  # TorchScript's pages stay in the traceback
    assert not marker.exists()
    confined = events[0]["sandbox"]
    assert events[0]["type"] == "hello" and confined["active"] is True
    assert confined["summary"].startswith(f"landlock ABI {ABI}: writes only under {confined['dir']}")
    assert not Path(confined["dir"]).exists()  # the runner removed the worker's folder


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_untrusted_hostile_file_is_refused_and_never_loaded(tmp_path, kind):
    path, marker = hostile(tmp_path, kind)
    outcome, events = in_worker(spec(path))
    assert outcome.status == "failed" and events[-1]["kind"] == "load"
    assert f"{path} is TorchScript, and TorchScript is code" in outcome.message
    assert "--trust-code" in outcome.message
    assert not marker.exists()


def test_a_trusted_benign_file_runs_profiled_in_the_sandbox_and_the_history_says_so(tmp_path):
    path = tmp_path / "benign.pt"
    torch.jit.script(torch.nn.Linear(4, 3)).save(str(path))
    path = path.rename(tmp_path / "benign.jit")  # the sandboxed worker reads files anywhere
    writer = HistoryWriter.open(tmp_path / "history.db")
    try:
        session = RunSession(RunSpec(model=str(path), engine="torch", inputs={"input": [2, 4]}, duration_s=0.3,
                                     warmup_s=0.05, profile_iterations=3, trust_code=True), writer,
                             telemetry_hz=None)
        session.start()
        record = session.wait(WAIT_S)
    finally:
        writer.close()
    assert record is not None and record["status"] == "completed", record and record["message"]
    confined = record["environment"]["sandbox"]
    assert confined["active"] is True and confined["summary"].startswith(f"landlock ABI {ABI}")
    trace = record["profile"]["trace_path"]
    assert trace and Path(trace).is_file() and Path(trace).parent == tmp_path / "traces"  # written inside, kept
    assert not Path(confined["dir"]).exists()
    from console.history import HistoryStore

    with HistoryStore(tmp_path / "history.db") as store:
        assert store.get_run(record["run_id"])["environment"]["sandbox"]["summary"] == confined["summary"]


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_onnx_runtime_runs_confined_profiled_or_quantized(tmp_path, monkeypatch, precision):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path / "cache"))  # the worker inherits it
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    weight = helper.make_tensor("w", TensorProto.FLOAT, [16, 8], np.ones(128, dtype=np.float32))
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul", [x], [y], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "matmul.onnx"
    onnx.save(model, str(path))
    run = RunSpec(model=str(path), engine="onnxruntime", inputs={"x": [1, 16]}, precision=precision, duration_s=0.3,
                  warmup_s=0.05, profile_iterations=3 if precision == "fp32" else None).validate()
    outcome, events = in_worker(run)
    assert outcome.status == "completed", outcome.message
    assert events[0]["sandbox"]["active"] is True
    if precision == "int8":
        assert list((tmp_path / "cache" / "onnx" / "int8").glob("matmul-*.onnx"))
    else:
        (profile,) = [e for e in events if e["type"] == "profile"]
        assert profile["trace_path"].startswith(events[0]["sandbox"]["dir"])  # written inside its folder
    assert {p.name for p in tmp_path.iterdir()} <= {"cache", "matmul.onnx"}  # nothing left beside it
