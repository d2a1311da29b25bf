"""The interventions that can be made on one run's configuration: scale the data, double the ops, double the
threads — and, for every one the model lacks, why it cannot be made.

Why these three: each moves one of the quantities the bottleneck classes disagree about. More data per call
moves FLOPs and bytes but not the op count (host overhead barely notices; compute and memory work follow it);
twice the ops moves the op count (host overhead follows it); twice the threads moves neither (compute scales,
memory bandwidth saturates, tiny ops do not parallelise). An axis says how much it scales each quantity
(`scales`: flops, bytes, ops, working_set, threads), from the catalog's cost model where there is one
(console.analysis.confirm.footprint), else assuming FLOPs and bytes follow the data and saying so (`note`).

Where the knobs come from: the batch (`--batch`), a catalog size parameter (rows, image_size, seq_len for data;
layers, passes, ops for the op count), a model file's dynamic dimensions (from the inputs the worker resolved
and stored with the run: fixed dims never change, and every dynamic dim is scaled alike so dims that share a
name stay equal), and the threads (only when the worker has the physical cores for twice as many).
Qt-free and engine-free: specs are engines.spec.RunSpec, changed with dataclasses.replace.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from console.analysis.confirm.footprint import Footprint, footprint

DATA_FACTORS = (2, 4, 8, 16, 32)  # the plan takes the smallest that tells the classes apart
UNMODELLED_DATA_FACTORS = (2, 4)  # without a cost model, no memory check: stay small
MAX_WORKING_SET = 1 << 30  # a changed configuration whose largest op would move more than this is not run
DATA_PARAMS = {  # catalog size parameters that scale the data per call (how much: the dim's own factor)
    "rows": 1, "image_size": 2, "seq_len": 1,  # image_size ×2 → pixels ×4
}
OPS_PARAMS = ("layers", "passes", "ops")
# catalog width parameters that grow the weights (hidden ×2: each square layer ×4): they move what a call keeps in
# the cache, the change that tells cache-resident work from compute (time per byte jumps once it leaves the cache).
# Only for models with a cost model: without one the FLOPs and bytes of a wider model cannot be said.
WIDTH_PARAMS = ("hidden",)
WIDTH_FACTORS = (2, 4)
SYNTHETIC_PREFIX = "synth-"
BUSY_FOR_THREADS = 50.0  # % of a core other processes used at the start: a second thread would share its core


@dataclass(frozen=True)
class Axis:
    """One intervention: `name` as people say it ("batch ×4"), its kind (data | ops | threads), the knob's
    factor, how much it scales each quantity, and the spec fields it changes."""

    name: str
    kind: str
    factor: float
    scales: dict[str, float]
    change: dict[str, Any]
    note: str = ""

    def apply(self, spec: Any) -> Any:
        """The changed spec (validated: a change the spec rules refuse raises engines.spec.SpecError)."""
        changes = dict(self.change)
        if "model_params" in changes:
            changes["model_params"] = {**spec.model_params, **changes["model_params"]}
        if "inputs" in changes:
            changes["inputs"] = {**spec.inputs, **changes["inputs"]}
        return dataclasses.replace(spec, **changes).validate()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "factor": self.factor, "scales": dict(self.scales),
                "change": dict(self.change), "note": self.note}


@dataclass
class Axes:
    """What can be changed (`axes`) and what cannot, each with why (`untestable`: "ops ×2: …")."""

    axes: list[Axis] = field(default_factory=list)
    untestable: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Axis]:
        return [axis for axis in self.axes if axis.kind == kind]


# ---- Public API
def axes_for(spec: Any, record: dict[str, Any] | None = None, worker_cores: int | None = None) -> Axes:
    """Every intervention this spec allows. `record`: the analysed run (its environment says which inputs a model
    file resolved and how many threads the engine used; its summary which cores the worker had).
    `worker_cores`: the physical cores the worker may use (default: read from the record's partition, else this
    process's affinity)."""
    found = Axes()
    record = record or {}
    if spec.is_file:
        _file_data_axes(spec, record, found)
        found.untestable.append("ops ×2: a model file's graph is fixed (only catalog models have a layers, passes "
                                "or ops parameter)")
    else:
        _catalog_axes(spec, found)
    _threads_axis(spec, record, worker_cores, found)
    return found


def current_threads(spec: Any, record: dict[str, Any] | None) -> int | None:
    """The intra-op threads the analysed run used: what the engine reported, else the spec's, else None."""
    engine = ((record or {}).get("environment") or {}).get("engine") or {}
    for key in ("threads", "intra_op_threads"):
        value = engine.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return spec.threads or None


def physical_worker_cores(record: dict[str, Any] | None) -> int | None:
    """The physical cores the worker could use: its partition's CPUs when it was confined, else this process's."""
    from engines import cores

    partition = ((record or {}).get("summary") or {}).get("partition") or {}
    cpus = partition.get("worker_cpus") if partition.get("confined") else None
    try:
        cpus = list(cpus) if cpus else cores.allowed(0)
        return len(cores.physical_cores(cpus))
    except (cores.AffinityUnavailable, OSError, ValueError):
        count = os.cpu_count()
        return count if count else None


# ---- Private API
def _catalog_axes(spec: Any, found: Axes) -> None:
    from engines import catalog

    params = catalog.params_for(spec.model, spec.model_params)
    base = footprint(spec.model, params, spec.batch)
    data_param = next((name for name in DATA_PARAMS if name in params), None)
    synthetic = spec.model.startswith(SYNTHETIC_PREFIX)
    if synthetic and data_param:  # rows, as the synthetic suite's own interventions do
        _data_axes(spec, found, base, params, data_param)
    else:
        _data_axes(spec, found, base, params, None)
        if data_param:
            _data_axes(spec, found, base, params, data_param)
    width_param = next((name for name in WIDTH_PARAMS if name in params), None)
    if width_param and base is not None:
        _width_axes(spec, found, base, params, width_param)
    ops_param = next((name for name in OPS_PARAMS if name in params), None)
    if ops_param is None:
        found.untestable.append(f"ops ×2: {spec.model} has no parameter that repeats its ops (it has "
                                f"{', '.join(params) or 'none'}; layers, passes or ops would)")
        return
    changed = {**params, ops_param: 2 * int(params[ops_param])}
    after = footprint(spec.model, changed, spec.batch)
    scales, note = _scales(base, after, {"flops": 2.0, "bytes": 2.0, "ops": 2.0, "working_set": 1.0},
                           f"no cost model for {spec.model}: FLOPs, bytes and op count assumed to double")
    found.axes.append(Axis(f"{ops_param} ×2", "ops", 2.0, scales, {"model_params": {ops_param: changed[ops_param]}},
                           note))


def _data_axes(spec: Any, found: Axes, base: Footprint | None, params: dict[str, Any], param: str | None) -> None:
    """Data ×k through the batch (param None) or a catalog size parameter."""
    knob = param or "batch"
    power = DATA_PARAMS.get(param or "", 1)
    factors = DATA_FACTORS if base is not None else UNMODELLED_DATA_FACTORS
    if power > 1:  # image_size ×2 is already pixels ×4
        factors = tuple(f for f in (2, 4) if f ** power <= max(factors))
    for factor in factors:
        data = float(factor ** power)
        if param is None:
            change: dict[str, Any] = {"batch": spec.batch * factor}
            after = footprint(spec.model, params, spec.batch * factor)
        else:
            change = {"model_params": {param: int(params[param]) * factor}}
            after = footprint(spec.model, {**params, param: int(params[param]) * factor}, spec.batch)
        name = f"{knob} ×{factor}" + (f" (data ×{data:g})" if power > 1 else "")
        if after is not None and after.working_set > MAX_WORKING_SET:
            found.untestable.append(f"{name}: its largest op would move {after.working_set / 2**30:.1f} GiB "
                                    f"per call (over {MAX_WORKING_SET / 2**30:g} GiB)")
            break
        scales, note = _scales(base, after, {"flops": data, "bytes": data, "ops": 1.0, "working_set": data},
                               f"no cost model for {spec.model}: FLOPs and bytes assumed to follow the data")
        if not _added(Axis(name, "data", data, scales, change, note), spec, found):
            break


def _width_axes(spec: Any, found: Axes, base: Footprint, params: dict[str, Any], param: str) -> None:
    """`param` ×2 and ×4 (a data kind: the work per call grows with the weights), scaled by the cost model."""
    for factor in WIDTH_FACTORS:
        changed = {**params, param: int(params[param]) * factor}
        after = footprint(spec.model, changed, spec.batch)
        if after is None or after.working_set > MAX_WORKING_SET:
            break
        scales, _ = _scales(base, after, {}, "")
        axis = Axis(f"{param} ×{factor}", "data", scales["flops"], scales,
                    {"model_params": {param: changed[param]}},
                    f"weights ×{scales['resident']:.3g}: what a call keeps in the cache grows")
        if not _added(axis, spec, found):
            break


def _added(axis: Axis, spec: Any, found: Axes) -> bool:
    """Add `axis` when the spec takes the change; else say why it cannot be made (False: larger ones cannot either)."""
    from engines.spec import SpecError

    try:
        axis.apply(spec)
    except (SpecError, ValueError) as exc:
        found.untestable.append(f"{axis.name}: the spec refuses it ({exc})")
        return False
    found.axes.append(axis)
    return True


def _file_data_axes(spec: Any, record: dict[str, Any], found: Axes) -> None:
    """A model file: its batch when every input's first dim is dynamic; with --input shapes, the batch (dim 0) and,
    apart, the other dynamic dims ×2 (a detector's H and W: pixels ×4) — within what the file declares: fixed
    dims never change, and dims that share a name are scaled alike."""
    engine = (record.get("environment") or {}).get("engine") or {}
    resolved = [item for item in (engine.get("inputs") or (engine.get("file") or {}).get("inputs") or [])
                if isinstance(item, dict) and item.get("shape")]
    if not resolved or not all("declared" in item for item in resolved):
        found.untestable.append("data ×k: the run did not record which of the file's dims are dynamic (analyse it "
                                "again with this version)")
        return
    dynamic_first = all(_dynamic(item["declared"][0]) for item in resolved)
    if not spec.inputs:
        if not dynamic_first:
            fixed = ", ".join(f"{item['name']} {item['declared']}" for item in resolved)
            found.untestable.append(f"data ×k: the file fixes every dim of its inputs ({fixed}); nothing to scale")
            return
        for factor in UNMODELLED_DATA_FACTORS:
            found.axes.append(Axis(f"batch ×{factor}", "data", float(factor), _assumed(factor),
                                   {"batch": spec.batch * factor},
                                   "a model file: FLOPs and bytes assumed to follow the batch"))
        return
    if dynamic_first:  # the batch: dim 0 of every input, scaled alike
        for factor in UNMODELLED_DATA_FACTORS:
            shapes = {item["name"]: [int(g) * factor if i == 0 else int(g) for i, g in enumerate(_given(spec, item))]
                      for item in resolved}
            found.axes.append(Axis(f"batch ×{factor}", "data", float(factor), _assumed(factor),
                                   {"inputs": shapes, "batch": 1},
                                   f"a model file: {_shapes_text(shapes)}; FLOPs and bytes assumed to follow the "
                                   "batch"))
    else:
        found.untestable.append("batch ×k: the file fixes dim 0 of its inputs")
    # the other dynamic dims (spatial, sequence): each ×2, all alike, so dims that share a name stay equal
    scaled_dims: list[str] = []
    shapes, data = {}, 1
    for item in resolved:
        given = _given(spec, item)
        scaled = [int(g) * 2 if i > 0 and _dynamic(d) else int(g)
                  for i, (d, g) in enumerate(zip(item["declared"], given, strict=False))]
        for i, d in enumerate(item["declared"]):
            if i > 0 and _dynamic(d):
                label = d if isinstance(d, str) and d.strip() not in ("", "?") else f"{item['name']} dim {i}"
                if label not in scaled_dims:
                    scaled_dims.append(label)
        shapes[item["name"]] = scaled
        data = max(data, _product(scaled) // max(1, _product(given)))
    if data <= 1:
        found.untestable.append("dims ×2: the file fixes every dim of its inputs but the batch")
        return
    found.axes.append(Axis(f"{', '.join(scaled_dims)} ×2 (data ×{data})", "data", float(data), _assumed(data),
                           {"inputs": shapes, "batch": 1},
                           f"a model file: {_shapes_text(shapes)}; FLOPs and bytes assumed to follow the data"))


def _given(spec: Any, item: dict[str, Any]) -> list[int]:
    return [int(g) for g in (spec.inputs.get(item["name"]) or item["shape"])]


def _shapes_text(shapes: dict[str, list[int]]) -> str:
    return ", ".join(f"--input {name}={'x'.join(map(str, shape))}" for name, shape in shapes.items())


def _threads_axis(spec: Any, record: dict[str, Any], worker_cores: int | None, found: Axes) -> None:
    if not str(spec.target).startswith("cpu"):
        found.untestable.append(f"threads ×2: on {spec.target} the kernels run on the device, not on intra-op threads")
        return
    cores = worker_cores if worker_cores is not None else physical_worker_cores(record)
    threads = current_threads(spec, record) or cores
    if not threads or not cores:
        found.untestable.append("threads ×2: how many threads the run used, or cores the worker had, is unknown")
        return
    if 2 * threads > cores:
        fix = f"analyse with --threads {cores // 2}, or give" if cores >= 2 else "give"
        found.untestable.append(f"threads ×2: the run used {threads} thread{'s' if threads != 1 else ''} and the "
                                f"worker has {cores} physical core{'s' if cores != 1 else ''}; twice the threads "
                                f"would share cores (fix: {fix} the worker more cores: fewer --console-cores, or a "
                                "larger machine)")
        return
    other = ((record.get("environment") or {}).get("hygiene") or {}).get("other_cpu_percent")
    if isinstance(other, (int, float)) and other >= BUSY_FOR_THREADS:
        found.untestable.append(f"threads ×2: other processes used {other:.0f}% of a core when the run started; a "
                                "second thread would wait for them and measure them, not the workload (fix: a quiet "
                                "machine)")
        return
    found.axes.append(Axis("threads ×2", "threads", 2.0,
                           {"flops": 1.0, "bytes": 1.0, "ops": 1.0, "working_set": 1.0, "threads": 2.0},
                           {"threads": 2 * threads}))


def _scales(base: Footprint | None, after: Footprint | None, assumed: dict[str, float],
            note: str) -> tuple[dict[str, float], str]:
    if base is None or after is None:
        return {"resident": assumed.get("working_set", 1.0), **assumed, "threads": 1.0}, note
    return {**{k: round(v, 4) for k, v in base.ratios(after).items()}, "threads": 1.0}, ""


def _assumed(data: float) -> dict[str, float]:
    return {"flops": float(data), "bytes": float(data), "ops": 1.0, "working_set": float(data),
            "resident": float(data), "threads": 1.0}


def _dynamic(dim: Any) -> bool:
    return not (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1)


def _product(shape: list[int]) -> int:
    out = 1
    for dim in shape:
        out *= int(dim)
    return out
