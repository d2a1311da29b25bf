"""`labconsole gpu-check`: the step logic (pass / fail / skip), the JSON document, exit codes, the budget, and the
NVML probe, with a fake step runner that answers each command with the document the real command prints (shapes
from `targets`, `telemetry`, `run`, `machine`, `topology` and `collectives` --json). One real run on this machine
checks that it skips cleanly where there is no NVIDIA GPU.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from console.cli import main
from console.gpucheck import check, probe
from console.gpucheck.steps import Completed

NO_GPU = {"driver": False, "reason": "no NVIDIA driver: NVML did not start (NVML Shared Library Not Found)",
          "driver_version": None, "cuda_driver_version": None, "gpus": [], "nvlink_active": 0}
CPU_ONLY = "this PyTorch (2.13.0+cpu) is a CPU-only build; install a CUDA build of PyTorch to use NVIDIA GPUs"


def _nvidia(gpus: int = 2, nvlinks: int = 18) -> dict:
    return {"driver": True, "reason": "", "driver_version": "570.86", "cuda_driver_version": "12.8",
            "gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3", "bdf": f"0000:{0x18 + i:02x}:00.0",
                      "memory_total_bytes": 80 << 30, "nvlink_active": nvlinks} for i in range(gpus)],
            "nvlink_active": nvlinks * gpus}


def _targets(gpus: int, engines=("torch", "onnxruntime"), reason: str = "") -> dict:
    cuda = [{"id": f"cuda:{i}", "name": "NVIDIA H100 80GB HBM3", "kind": "gpu", "available": True, "reason": "",
             "engines": list(engines), "engine_details": {
                 "onnxruntime": {"available": "onnxruntime" in engines,
                                 "reason": "" if "onnxruntime" in engines else
                                 "this onnxruntime has no CUDAExecutionProvider: install onnxruntime-gpu"}}}
            for i in range(gpus)]
    if not gpus:
        cuda = [{"id": "cuda:0", "name": "CUDA GPU", "kind": "gpu", "available": False, "reason": reason,
                 "engines": [], "engine_details": {}}]
    return {"schema": "labconsole.targets/1",
            "targets": [{"id": "cpu", "kind": "cpu", "available": True, "engines": ["torch", "onnxruntime"]}, *cuda]}


def _telemetry(gpus: int) -> dict:
    metrics = [{"name": f"gpu{i}.{m}", "unit": u, "method": "measured", "samples": 10, "last": v, "mean": v}
               for i in range(gpus) for m, u, v in (("power.avg", "W", 120.0), ("util", "%", 3.0),
                                                     ("mem.used", "GiB", 0.5))]
    return {"schema": "labconsole.telemetry/1", "sources": [{"name": "nvml", "available": True, "reason": "",
                                                            "metrics": metrics, "unavailable_metrics": {}}]}


def _run(engine: str, valid: bool = True) -> dict:
    return {"schema": "labconsole.run/1", "run_id": f"run-{engine}", "status": "completed", "message": "",
            "engine": engine, "target": "cuda:0", "throughput_per_s": 4000.0, "latency_ms": {"p50": 1.9},
            "load_s": 2.0, "first_inference_ms": 300.0, "cv": 0.02, "valid": valid,
            "invalid_reasons": [] if valid else [{"rule": "stability", "detail": "windows differ by 31%",
                                                  "fix": "raise --duration"}],
            "energy": {"method": "counter"}}


def _card(links: bool = True) -> dict:
    card = {"schema": "labconsole.machine/1", "device_name": "NVIDIA H100 80GB HBM3", "quick": False,
            "peak_flops": {"fp32": 5.1e13, "fp16": 7.0e14}, "device_memory_bandwidth_gbs": 2900.0,
            "h2d_gbs": {"pinned": 52.0, "pageable": 20.0}, "not_available": {}}
    if links:
        card["links"] = {"schema": 1, "entries": [
            {"id": "h2d:pci:0000:18:00.0:pinned", "kind": "h2d", "median_gbs": 52.0, "not_available": None},
            {"id": "d2d:gpu0->gpu1", "kind": "d2d", "median_gbs": None, "not_available": "peer access refused"}],
            "not_available": {}}
    return card


def _topology(gpus: int, nvlink: bool = True) -> dict:
    nodes = [{"id": "machine", "kind": "machine", "parent": None, "attrs": {}}]
    links = []
    for i in range(gpus):
        bdf = f"0000:{0x18 + i:02x}:00.0"
        nodes.append({"id": f"pci:{bdf}", "kind": "gpu", "parent": "machine", "attrs": {"bdf": bdf, "index": i}})
        links.append({"id": f"pcie:{bdf}", "kind": "pcie", "a": "machine", "b": f"pci:{bdf}", "state": "at-max",
                      "current": {"speed_gts": 32.0, "width": 16}, "max": {"speed_gts": 32.0, "width": 16}})
    if nvlink and gpus > 1:
        links.append({"id": "nvlink:0-1", "kind": "nvlink", "a": "pci:0000:18:00.0", "b": "pci:0000:19:00.0",
                      "state": "unknown"})
    return {"schema": "labconsole.topology/1", "nodes": nodes, "links": links,
            "gpu_matrix": {"gpus": ["GPU0", "GPU1"], "rows": [["X", "NV18"], ["NV18", "X"]]}, "not_available": {}}


def _collectives(ranks: int) -> dict:
    return {"schema": "labconsole.collectives/1", "run_id": "coll-1", "status": "completed", "result": {
        "kind": "collectives", "backend": "nccl", "ranks": ranks,
        "ops": {"all-reduce": [{"size_bytes": 8, "busbw_gbs": 0.001}, {"size_bytes": 1 << 30, "busbw_gbs": 360.0}]},
        "figures": {"all_reduce_peak_busbw_gbs": 360.0}}}


class FakeCli:
    """Answers `labconsole ARGS` with the documents above, keyed by the command's name (the first argument after
    --db); `override` replaces an answer (a Completed, or a callable raising)."""

    def __init__(self, gpus: int = 2, **override):
        self.gpus, self.override, self.calls = gpus, override, []
        self.answers = {"targets": _targets(gpus), "telemetry": _telemetry(gpus), "machine": _card(),
                        "topology": _topology(gpus), "collectives": _collectives(gpus)}

    def __call__(self, argv: list[str], timeout_s: float) -> Completed:
        self.calls.append((argv, timeout_s))
        args = argv[2:] if argv[0] == "--db" else argv
        name = args[0] if args[0] != "run" else f"run-{args[args.index('--engine') + 1]}"
        answer = self.override.get(name)
        if callable(answer):
            answer = answer()
        if isinstance(answer, Completed):
            return answer
        document = answer if answer is not None else (self.answers.get(name) or _run(name[4:]))
        return Completed(0, json.dumps(document), "", 1.5)


def _check(fake, nvidia, tmp_path, **kw) -> dict:
    return check.run_check(fake, nvidia, db=str(tmp_path / "h.db"), workdir=str(tmp_path), **kw)


def _steps(document: dict) -> dict:
    return {s["step"]: s for s in document["steps"]}


def test_a_machine_without_an_nvidia_gpu_skips_every_step_with_the_reason_and_exits_0(tmp_path):
    fake = FakeCli(0, targets=_targets(0, reason=CPU_ONLY))
    document = _check(fake, NO_GPU, tmp_path)
    assert [s["status"] for s in document["steps"]] == ["skipped"] * 7
    steps = _steps(document)
    assert CPU_ONLY in steps["targets"]["reason"] and CPU_ONLY in steps["run-torch"]["reason"]
    assert "no NVIDIA driver" in steps["nvml-telemetry"]["reason"] and "no NVIDIA driver" in steps["topology"]["reason"]
    assert "at least 2 GPUs" in steps["nccl-collectives"]["reason"]
    assert [argv for argv, _ in fake.calls] == [["targets", "--refresh", "--json"]]  # nothing else was started
    assert document["summary"] == {"pass": 0, "fail": 0, "skipped": 7, "result": "skipped", "exit_code": 0,
                                   "seconds": document["summary"]["seconds"], "within_budget": True}
    for step in document["steps"]:  # the contract's record shape
        assert {"step", "status", "reason", "figures", "seconds"} <= set(step)
    assert {"machine", "versions", "budget_s", "steps", "summary"} <= set(document)
    assert document["machine"]["nvidia"] is NO_GPU and "torch" in document["versions"]


def test_a_two_gpu_nvlink_machine_passes_every_step_with_its_figures(tmp_path):
    fake = FakeCli(2)
    document = _check(fake, _nvidia(2), tmp_path)
    steps = _steps(document)
    assert {name: s["status"] for name, s in steps.items()} == dict.fromkeys(steps, "pass"), steps
    assert document["summary"]["exit_code"] == 0 and document["summary"]["result"] == "pass"
    assert steps["targets"]["figures"]["cuda_targets"] == ["cuda:0", "cuda:1"]
    assert steps["nvml-telemetry"]["figures"]["gpu1.power.avg"]["last"] == 120.0
    assert steps["run-onnxruntime"]["figures"]["energy_method"] == "counter"
    assert steps["machine-card"]["figures"]["h2d_gbs"]["pinned"] == 52.0
    assert steps["machine-card"]["figures"]["links"]["not_available"] == {"d2d:gpu0->gpu1": "peer access refused"}
    assert steps["topology"]["figures"]["nvlink_links"] == 1
    assert "peak busbw 360.0 GB/s" in steps["nccl-collectives"]["reason"]
    argv = {a[2] if a[0] == "--db" else a[0]: a for a, _ in fake.calls}
    db = str(tmp_path / "h.db")
    assert argv["run"][:2] == ["--db", db] and "--until-stable" in argv["run"]  # the fresh history, every writer
    assert argv["machine"][:2] == ["--db", db] and "--quick" not in argv["machine"]
    assert argv["collectives"][2:7] == ["collectives", "--backend", "nccl", "--ranks", "2"]
    assert steps["run-torch"]["commands"][0]["argv"][0] == "labconsole"


def test_each_failure_names_its_cause_and_the_exit_code_is_1(tmp_path):
    fake = FakeCli(2, targets=_targets(2, engines=("torch",)), **{"run-torch": _run("torch", valid=False)},
                   topology=_topology(2, nvlink=False), machine={**_card(links=False), "h2d_gbs": None,
                                                                 "not_available": {"h2d_gbs": "copy failed"}})
    document = _check(fake, _nvidia(2), tmp_path)
    steps = _steps(document)
    assert steps["run-onnxruntime"]["status"] == "fail" and "install onnxruntime-gpu" in steps["run-onnxruntime"][
        "reason"]
    assert steps["run-torch"]["status"] == "fail" and "windows differ by 31% (fix: raise --duration)" in steps[
        "run-torch"]["reason"]
    assert steps["topology"]["status"] == "fail" and "36 active NVLink" in steps["topology"]["reason"]
    assert steps["machine-card"]["status"] == "fail" and "h2d_gbs.pinned (copy failed)" in steps["machine-card"][
        "reason"]
    assert steps["nccl-collectives"]["status"] == "pass"  # one failure does not stop the others
    assert document["summary"]["exit_code"] == 1 and document["summary"]["fail"] == 4


def test_gpus_the_driver_sees_but_the_product_cannot_use_fail_the_targets_step(tmp_path):
    fake = FakeCli(1, targets=_targets(0, reason=CPU_ONLY))
    steps = _steps(_check(fake, _nvidia(1, nvlinks=0), tmp_path))
    assert steps["targets"]["status"] == "fail" and steps["targets"]["reason"].startswith("NVML lists 1 GPU(s)")
    assert steps["run-torch"]["status"] == "skipped" and steps["machine-card"]["status"] == "skipped"
    assert steps["nvml-telemetry"]["status"] == "pass" and steps["topology"]["status"] == "pass"  # NVML/sysfs only
    assert "(NVML lists 1, 0 usable" in steps["nccl-collectives"]["reason"]


def test_a_topology_missing_a_gpu_by_pci_address_fails(tmp_path):
    graph = _topology(2)
    graph["nodes"][2]["attrs"]["bdf"] = "0000:99:00.0"
    steps = _steps(_check(FakeCli(2, topology=graph), _nvidia(2), tmp_path))
    assert steps["topology"]["status"] == "fail" and "not found by PCI address: 0000:19:00.0" in steps["topology"][
        "reason"]


def test_a_command_that_hangs_crashes_or_is_missing_fails_its_step_only(tmp_path):
    fake = FakeCli(2, telemetry=Completed(None, "", "", 60.0, timed_out=True),
                   machine=Completed(1, "", "Traceback …\nRuntimeError: CUDA error: out of memory\n", 3.0),
                   topology=Completed(2, "", "labconsole: error: argument command: invalid choice: 'topology'", 0.4),
                   collectives=lambda: 1 / 0, **{"run-torch": Completed(1, json.dumps(
                       {"status": "failed", "message": "CUDA error: no kernel image is available"}), "", 9.0)})
    steps = _steps(_check(fake, _nvidia(2), tmp_path))
    assert steps["nvml-telemetry"]["reason"] == "`labconsole telemetry --source nvml --json` did not finish within " \
                                                "60 s and was stopped"
    assert steps["machine-card"]["reason"].endswith("exited 1: RuntimeError: CUDA error: out of memory")
    assert steps["topology"]["reason"] == "this build has no `labconsole topology` command"
    assert steps["nccl-collectives"]["reason"].startswith("gpu-check error in this step: ZeroDivisionError")
    assert steps["run-torch"]["reason"] == "the run ended failed: CUDA error: no kernel image is available"
    assert steps["run-onnxruntime"]["status"] == "pass"


def test_a_collectives_run_that_did_not_complete_fails_with_its_cause_and_fix(tmp_path):
    failed = {"run_id": "c", "status": "failed", "result": None, "cause": "NCCL WARN Cuda failure 'out of memory'",
              "fix": "free GPU memory"}
    steps = _steps(_check(FakeCli(2, collectives=Completed(1, json.dumps(failed), "", 20.0)), _nvidia(2), tmp_path))
    assert steps["nccl-collectives"]["reason"] == ("the collectives run ended failed: NCCL WARN Cuda failure 'out of "
                                                   "memory' (fix: free GPU memory)")


def test_the_budget_caps_each_command_and_steps_after_it_fail_unstarted(tmp_path):
    now = [0.0]
    fake = FakeCli(2)

    def slow(argv, timeout_s):
        now[0] += 50.0  # every command takes 50 s of the fake clock
        return fake(argv, timeout_s)

    document = _check(slow, _nvidia(2), tmp_path, budget_s=130.0, clock=lambda: now[0])
    steps = _steps(document)
    assert [s["status"] for s in document["steps"][:3]] == ["pass"] * 3
    assert fake.calls[2][1] == pytest.approx(30.0)  # the third command got only what was left of the budget
    assert steps["run-onnxruntime"]["reason"].startswith("not run: the check's time budget was spent")
    assert steps["nccl-collectives"]["status"] == "fail" and len(fake.calls) == 3
    assert document["summary"]["within_budget"] is False and document["summary"]["exit_code"] == 1


def test_quick_asks_the_card_for_small_sizes(tmp_path):
    fake = FakeCli(1, machine={**_card(), "quick": True})
    steps = _steps(_check(fake, _nvidia(1, nvlinks=0), tmp_path, quick=True))
    assert "--quick" in steps["machine-card"]["commands"][0]["argv"]
    assert "quick sizes: not ceilings" in steps["machine-card"]["reason"]


class _FakeNvml(SimpleNamespace):
    pass


def _fake_nvml(library: bool = True, links: int = 4) -> _FakeNvml:
    def init():
        if not library:
            raise RuntimeError("NVML Shared Library Not Found")

    def link_state(handle, link):
        if link >= links:
            raise RuntimeError("Not Supported")
        return link % 2 == 0  # half of them up

    return _FakeNvml(nvmlInit=init, nvmlShutdown=lambda: None, nvmlSystemGetDriverVersion=lambda: b"570.86.15",
                     nvmlSystemGetCudaDriverVersion=lambda: 12080, nvmlDeviceGetCount=lambda: 2,
                     nvmlDeviceGetHandleByIndex=lambda i: i, nvmlDeviceGetName=lambda h: "NVIDIA H200",
                     nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=f"00000000:{0x18 + h:02X}:00.0"),
                     nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=141 << 30),
                     nvmlDeviceGetNvLinkState=link_state)


def test_the_probe_reads_driver_gpus_pci_addresses_and_active_nvlinks():
    found = probe.nvidia(_fake_nvml())
    assert found["driver"] is True and found["reason"] == ""
    assert (found["driver_version"], found["cuda_driver_version"]) == ("570.86.15", "12.8")
    assert [g["bdf"] for g in found["gpus"]] == ["0000:18:00.0", "0000:19:00.0"]  # as sysfs names them
    assert [g["nvlink_active"] for g in found["gpus"]] == [2, 2] and found["nvlink_active"] == 4
    missing = probe.nvidia(_fake_nvml(library=False))
    assert missing["driver"] is False and "NVML Shared Library Not Found" in missing["reason"]
    old = _fake_nvml()
    del old.nvmlDeviceGetNvLinkState  # an old binding: NVLink unknown, so not expected
    assert probe.nvidia(old)["gpus"][0]["nvlink_active"] is None


def test_the_command_here_writes_the_document_and_skips_cleanly(tmp_path, capsys):
    if probe.nvidia()["driver"]:
        pytest.skip("this machine has an NVIDIA driver: the real check takes minutes (run make gpu-check)")
    out = tmp_path / "gpu-check.json"
    assert main(["gpu-check", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["schema"] == "labconsole.gpu-check/1"
    assert {s["status"] for s in document["steps"]} == {"skipped"}
    assert document["steps"][0]["commands"][0]["rc"] == 0  # the real `labconsole targets` ran
    assert "no NVIDIA driver" in document["steps"][1]["reason"]
    printed = capsys.readouterr().out
    assert "nccl-collectives  skipped" in printed and f"written to {out}" in printed


def test_the_real_runner_stops_a_command_at_its_time_out_with_its_process_group():
    started = time.monotonic()
    done = check.cli_runner()(["telemetry", "--seconds", "60", "--json"], 4.0)
    assert done.timed_out and done.rc is None and time.monotonic() - started < 20
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline")  # the command is gone, not left running
                if b"telemetry\0--seconds\x0060" in _read(p)]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # a process that ended while we looked
        return b""


def test_the_command_exits_1_on_a_failed_step_and_refuses_a_directory_as_out(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(probe, "nvidia", lambda: _nvidia(2))
    monkeypatch.setattr(check, "cli_runner", lambda: FakeCli(2, topology=_topology(2, nvlink=False)))
    assert main(["gpu-check", "--json"]) == 1
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["schema"] == "labconsole.gpu-check/1" and document["summary"]["fail"] == 1
    assert "topology          fail" in captured.err  # the table goes to stderr when stdout carries the JSON
    assert main(["gpu-check", "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
