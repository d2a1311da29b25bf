"""An engine's profile as one op table: per-call records from its profiler → one row per op type.

Why a module of its own, torch-free: the two backends' profilers speak differently (torch.profiler's event tree,
ONNX Runtime's Chrome-trace JSON), but the op table, the share of time, FLOPs, bytes, arithmetic intensity and
achieved rates must mean the same on both engines, and be testable with canned events, without an engine.

A *call* is one execution of one op: {"op", "time_s", "flops" (or None), "bytes" (or None), "shapes"}.
- `torch_calls(events)` takes torch.profiler events turned into plain dicts (see its docstring) and keeps the
  outermost operator calls (names with "::", e.g. aten::linear; profiler steps and compiled-region wrappers are
  looked through), so op times never overlap and their sum is the time spent inside operators.
- `ort_calls(trace)` takes ONNX Runtime's profile (a Chrome trace) and keeps its node events.
`aggregate(calls)` then gives the OP rows of the profile event (engines.protocol "profile"). Calls that carry
"iteration" (which profiled call of the model they ran in) also give `iteration_table`: op time per iteration, which
console.analysis.verdict_stability resamples to say how stable the verdict is.

FLOPs count a multiply-add as two; bytes are what an op reads and writes once (inputs + outputs, from shapes ×
dtype sizes), not what the caches see, so intensity is the model's, as in the roofline model.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["aggregate", "profile_event", "torch_calls", "ort_calls", "ort_flops", "dtype_bytes", "SHAPE_SAMPLES",
           "iteration_table"]

SHAPE_SAMPLES = 3  # distinct input-shape lists kept per op row
# The per-iteration table's bound (stored with the run): at most ITERATION_ROWS rows (more profiled iterations are
# summed in consecutive blocks) × ITERATION_OPS op types (the longest; the rest are not resampled), 4 digits each.
ITERATION_ROWS, ITERATION_OPS = 64, 64

# Element sizes, by the names torch.profiler (input_dtypes) and ONNX Runtime (type shapes) use.
_DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "c10::half": 2, "half": 2, "float16": 2,
    "c10::bfloat16": 2, "bfloat16": 2, "long int": 8, "long": 8, "int64": 8, "int": 4, "int32": 4,
    "short int": 2, "short": 2, "int16": 2, "signed char": 1, "int8": 1, "unsigned char": 1, "uint8": 1,
    "bool": 1, "c10::qint8": 1, "c10::quint8": 1, "c10::qint32": 4, "uint16": 2, "uint32": 4, "uint64": 8,
    "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
}

TORCH_METHOD = {
    "flops": "torch.profiler with_flops (matmul family, convolution, add, mul), summed down the call tree to the "
             "first level that counts; scaled_dot_product_attention from shapes as 2·B·H·L·S·(E+Ev); None where "
             "neither counts (quantized and other ops)",
    "bytes": "inputs from recorded shapes × dtype sizes + the output, estimated: matmul family [..., M, N], "
             "convolution and pooling from kernel, stride, padding and dilation, embedding indices × dim, "
             "reductions over their dims, views 0 bytes, other ops the size of their largest input; packed "
             "weights (quantized linear layers) are not recorded by the profiler and not counted",
}
ORT_METHOD = {
    "flops": "from shapes: MatMul 2·(output elements)·K, Gemm 2·M·N·K (+ M·N with a bias), Conv 2·(output "
             "elements)·(Cin/group·kernel elements) (+ output elements with a bias), Add/Sub/Mul/Div one per "
             "output element; None for other ops",
    "bytes": "input and output type shapes × dtype sizes from ONNX Runtime's node events; a MatMul/Gemm weight "
             "that the CPU kernel pre-packed (and so left out of the event) counted as K·N elements",
}


# ---- Public API
def aggregate(calls: Iterable[Mapping[str, Any]], method: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One OP row per op type, totals over all calls, longest total time first.

    share is of the summed op time; flops/bytes are None when no call of that op could be counted (a partial
    count would understate them); intensity and achieved rates follow from those.
    """
    rows: dict[str, dict[str, Any]] = {}
    for call in calls:
        name = str(call["op"])
        row = rows.setdefault(name, {"op": name, "calls": 0, "time_s": 0.0, "flops": 0.0, "bytes": 0.0,
                                     "shapes": [], "_flops_known": True, "_bytes_known": True})
        row["calls"] += 1
        row["time_s"] += float(call["time_s"])
        for key in ("flops", "bytes"):
            value = call.get(key)
            if value is None:
                row[f"_{key}_known"] = False
            else:
                row[key] += float(value)
        shapes = [list(s) for s in call.get("shapes") or []]
        if shapes not in row["shapes"] and len(row["shapes"]) < SHAPE_SAMPLES:
            row["shapes"].append(shapes)
    total = sum(row["time_s"] for row in rows.values())
    result = []
    for row in sorted(rows.values(), key=lambda r: r["time_s"], reverse=True):
        flops = row["flops"] if row.pop("_flops_known") and row["flops"] > 0 else None
        moved = row["bytes"] if row.pop("_bytes_known") and row["bytes"] > 0 else None
        seconds = row["time_s"]
        result.append({
            "op": row["op"], "calls": row["calls"], "time_s": seconds,
            "share": seconds / total if total > 0 else 0.0,
            "flops": flops, "bytes": moved,
            "intensity": flops / moved if flops is not None and moved else None,
            "achieved_flops_s": flops / seconds if flops is not None and seconds > 0 else None,
            "achieved_bytes_s": moved / seconds if moved is not None and seconds > 0 else None,
            "shapes": row["shapes"], "method": dict(method or {}),
        })
    return result


def profile_event(engine: str, iterations: int, wall_s: float, ops: list[dict[str, Any]],
                  trace_path: str | None, notes: Sequence[str] = (), counters: dict[str, Any] | None = None,
                  per_iteration: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fields of the protocol's "profile" event (op_time_s is the sum of the op rows' times); `per_iteration`
    (iteration_table's, optional) is added when given."""
    event = {"engine": engine, "iterations": int(iterations), "wall_s": float(wall_s),
             "op_time_s": float(sum(op["time_s"] for op in ops)), "ops": ops, "trace_path": trace_path,
             "counters": counters, "notes": list(notes)}
    if per_iteration is not None:
        event["per_iteration"] = per_iteration
    return event


def iteration_table(calls: Iterable[Mapping[str, Any]], walls_s: Sequence[float] | None = None,
                    max_rows: int = ITERATION_ROWS, max_ops: int = ITERATION_OPS) -> dict[str, Any] | None:
    """Op time per profiled iteration, bounded: {"ops": names (longest total first), "times_s": one row per
    iteration (or block of `iterations_per_row` consecutive iterations) of op seconds in that order, "wall_s": the
    rows' wall seconds (from `walls_s`, one per iteration) or None, "iterations_per_row", "method"}.

    Calls without an "iteration" (0-based) are left out; None when no call has one. A last block shorter than the
    others is kept (it weighs less when resampled).
    """
    by_iteration: dict[int, dict[str, float]] = {}
    totals: dict[str, float] = {}
    for call in calls:
        index = call.get("iteration")
        if index is None:
            continue
        name, seconds = str(call["op"]), float(call["time_s"])
        row = by_iteration.setdefault(int(index), {})
        row[name] = row.get(name, 0.0) + seconds
        totals[name] = totals.get(name, 0.0) + seconds
    if not by_iteration:
        return None
    count = max(max(by_iteration) + 1, len(walls_s or ()))
    per_row = max(1, math.ceil(count / max(1, max_rows)))
    names = sorted(totals, key=lambda name: -totals[name])[:max(1, max_ops)]
    rows = []
    for start in range(0, count, per_row):
        block = [by_iteration.get(i, {}) for i in range(start, min(count, start + per_row))]
        rows.append([_digits(sum(row.get(name, 0.0) for row in block)) for name in names])
    walls = None
    if walls_s and len(walls_s) == count:
        walls = [_digits(sum(walls_s[start:start + per_row])) for start in range(0, count, per_row)]
    return {"ops": names, "times_s": rows, "wall_s": walls, "iterations_per_row": per_row,
            "method": "the op calls of each profiled iteration summed per op type (and wall time per iteration); "
                      f"at most {max_rows} rows (consecutive iterations summed) × the {max_ops} longest op types"}


def dtype_bytes(name: Any) -> int | None:
    """Bytes per element of a dtype named as torch.profiler or ONNX Runtime name it; None when unknown."""
    return _DTYPE_BYTES.get(str(name).lower().removeprefix("torch."))


# ---- torch.profiler
def torch_calls(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The outermost operator calls of a torch.profiler run.

    `events` are plain dicts, one per CPU-side profiler event: {"id", "parent" (the id of the enclosing event or
    None), "name", "time_s" (inclusive; on a GPU the device time of the op's kernels), "flops" (the profiler's
    count, 0 when it counts none), "shapes" (input shapes, [] for non-tensors), "dtypes" (input dtype names),
    "concrete" (scalar/list arguments, None for tensors)}.
    """
    by_id = {event["id"]: event for event in events}
    children: dict[Any, list[Mapping[str, Any]]] = {}
    for event in events:
        children.setdefault(event.get("parent"), []).append(event)

    def is_op(event: Mapping[str, Any]) -> bool:
        return "::" in str(event["name"])

    def inside_op(event: Mapping[str, Any]) -> bool:
        parent = by_id.get(event.get("parent"))
        while parent is not None:
            if is_op(parent):
                return True
            parent = by_id.get(parent.get("parent"))
        return False

    def counted_flops(event: Mapping[str, Any]) -> float:
        own = float(event.get("flops") or 0)
        if own > 0:
            return own
        return sum(counted_flops(child) for child in children.get(event["id"], []))

    calls = []
    for event in events:
        if not is_op(event) or inside_op(event):
            continue
        shapes = [list(s) for s in event.get("shapes") or []]
        flops = counted_flops(event) or _torch_formula_flops(event["name"], shapes)
        calls.append({"op": str(event["name"]), "time_s": float(event["time_s"]), "flops": flops or None,
                      "bytes": _torch_bytes(event), "shapes": [s for s in shapes if s],
                      "iteration": event.get("iteration")})
    return calls


# ---- ONNX Runtime
def ort_calls(trace: Iterable[Mapping[str, Any]], skip_runs: int = 0) -> list[dict[str, Any]]:
    """One call per node event ("cat": "Node", names ending in _kernel_time) of an ONNX Runtime profile.

    `skip_runs`: leave out the nodes of the first runs (each run is a "model_run" session event), e.g. the one
    that allocated and pre-packed.
    """
    trace = list(trace)
    runs = sorted((e for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"),
                  key=lambda e: e.get("ts", 0))
    after = 0.0
    if skip_runs and runs:
        skipped = runs[min(skip_runs, len(runs)) - 1]
        after = float(skipped.get("ts", 0)) + float(skipped.get("dur", 0))
    kept = [run for run in runs if float(run.get("ts", 0)) >= after]  # each node's iteration: the run it lies in
    starts = [float(run.get("ts", 0)) for run in kept]
    calls = []
    for event in trace:
        if event.get("cat") != "Node" or not str(event.get("name", "")).endswith("_kernel_time"):
            continue
        if float(event.get("ts", 0)) < after:
            continue
        args = event.get("args") or {}
        inputs = _type_shapes(args.get("input_type_shape"))
        outputs = _type_shapes(args.get("output_type_shape"))
        op = str(args.get("op_name") or event["name"])
        calls.append({"op": op, "time_s": float(event.get("dur", 0)) / 1e6, "flops": ort_flops(op, inputs, outputs),
                      "bytes": _ort_bytes(op, inputs, outputs), "shapes": [shape for _, shape in inputs],
                      "iteration": _run_of(float(event.get("ts", 0)), starts, kept)})
    return calls


def ort_flops(op: str, inputs: Sequence[tuple[str, list[int]]], outputs: Sequence[tuple[str, list[int]]]
              ) -> float | None:
    """FLOPs of one ONNX node from its input/output shapes (formulas in ORT_METHOD); None when not counted."""
    if not outputs or not inputs:
        return None
    out = outputs[0][1]
    out_elements = _elements(out)
    a = inputs[0][1]
    if op in _ORT_MATMUL:
        k = a[-1] if a else 1
        return 2.0 * out_elements * k
    if op in _ORT_GEMM:
        m, n = (out[0], out[-1]) if len(out) >= 2 else (1, out_elements)
        k = _elements(a) // m if m else 0
        weight = _gemm_weight_index(inputs, k, n)
        bias = any(i != weight for i in range(1, len(inputs)))
        return 2.0 * m * n * k + (m * n if bias else 0)
    if op in _ORT_CONV:
        if len(inputs) < 2 or len(inputs[1][1]) < 3:
            return None
        per_output = _elements(inputs[1][1][1:])  # Cin/group × kernel elements
        return 2.0 * out_elements * per_output + (out_elements if len(inputs) > 2 else 0)
    if op in _ORT_ELEMENTWISE:
        return float(out_elements)
    return None


# ---- Private API
def _run_of(ts: float, starts: list[float], runs: list[Mapping[str, Any]]) -> int | None:
    """The index of the model_run a node event at `ts` lies in; None when it lies in none."""
    index = bisect.bisect_right(starts, ts) - 1
    if index < 0 or ts > starts[index] + float(runs[index].get("dur", 0)):
        return None
    return index


def _digits(x: float) -> float:
    """Four significant digits: the stored table stays small, and resampling needs no more."""
    return float(f"{x:.4g}")


_ORT_MATMUL = {"MatMul", "FusedMatMul", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
               "QLinearMatMul", "MatMulNBits"}
_ORT_GEMM = {"Gemm", "FusedGemm", "QGemm"}
_ORT_CONV = {"Conv", "FusedConv", "NchwcConv", "ConvInteger", "QLinearConv"}
_ORT_ELEMENTWISE = {"Add", "Sub", "Mul", "Div"}

_TORCH_VIEWS = {"view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "expand_as", "as_strided",
                "squeeze", "unsqueeze", "flatten", "unflatten", "select", "slice", "narrow", "detach", "alias",
                "split", "chunk", "unbind", "view_as", "numpy_T", "lift_fresh", "resolve_conj", "resolve_neg"}
_TORCH_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm", "var", "std", "prod",
                     "all", "any", "logsumexp"}


def _type_shapes(value: Any) -> list[tuple[str, list[int]]]:
    """ORT's [{"float": [4, 64]}, …] → [("float", [4, 64]), …] (dynamic or odd dims dropped as 0-sized)."""
    found = []
    for item in value or []:
        if isinstance(item, Mapping):
            for dtype, shape in item.items():
                found.append((str(dtype), [int(d) if isinstance(d, (int, float)) else 0 for d in shape or []]))
    return found


def _ort_bytes(op: str, inputs, outputs) -> float | None:
    if not inputs and not outputs:
        return None
    total = 0.0
    for dtype, shape in [*inputs, *outputs]:
        size = dtype_bytes(dtype)
        if size is None:
            return None
        total += _elements(shape) * size
    if (op in _ORT_MATMUL or op in _ORT_GEMM) and inputs and outputs:
        total += _prepacked_weight_bytes(op, inputs, outputs)
    return total


def _prepacked_weight_bytes(op: str, inputs, outputs) -> float:
    """A weight the CPU kernel pre-packed is absent from the node event; it is still read: K·N elements."""
    a, out = inputs[0][1], outputs[0][1]
    if not out:
        return 0.0
    n = out[-1]
    k = _elements(a) // out[0] if op in _ORT_GEMM and len(out) >= 2 and out[0] else (a[-1] if a else 0)
    if _gemm_weight_index(inputs, k, n) is not None:
        return 0.0
    return float(k * n * (dtype_bytes(outputs[0][0]) or 4))


def _gemm_weight_index(inputs, k: int, n: int) -> int | None:
    """Which input is the K×N weight (None when the kernel pre-packed it and the event leaves it out)."""
    return next((i for i, (_, shape) in enumerate(inputs) if i > 0 and len(shape) >= 2 and _elements(shape) == k * n),
                None)


def _torch_formula_flops(name: str, shapes: list[list[int]]) -> float | None:
    """FLOPs torch.profiler does not count but shapes give: attention's two matmuls."""
    base = name.split("::")[-1]
    if base.startswith("scaled_dot_product") and len(shapes) >= 3 and all(len(s) >= 2 for s in shapes[:3]):
        q, k, v = shapes[:3]
        return 2.0 * _elements(q[:-1]) * k[-2] * (q[-1] + v[-1])
    return None


def _torch_bytes(event: Mapping[str, Any]) -> float | None:
    base = str(event["name"]).split("::")[-1]
    if base in _TORCH_VIEWS:
        return 0.0
    shapes = [list(s) for s in event.get("shapes") or []]
    dtypes = list(event.get("dtypes") or [])
    concrete = list(event.get("concrete") or [])
    tensors = [(shape, dtypes[i] if i < len(dtypes) else "") for i, shape in enumerate(shapes)
               if shape and dtype_bytes(dtypes[i] if i < len(dtypes) else "") is not None]
    if not tensors:
        return None
    read = sum(_elements(shape) * dtype_bytes(dtype) for shape, dtype in tensors)
    out_dtype = next((d for _, d in tensors if str(d) in ("float", "double", "c10::Half", "c10::BFloat16")),
                     tensors[0][1])
    out_elements = _torch_output_elements(base, shapes, concrete)
    return float(read + out_elements * dtype_bytes(out_dtype))


def _arg(values: list[Any], index: int, default: Any = None) -> Any:
    return values[index] if index < len(values) and values[index] not in (None, []) else default


def _torch_output_elements(base: str, shapes: list[list[int]], concrete: list[Any]) -> int:
    s = shapes + [[]] * 4
    try:
        if base == "linear":
            return _elements(s[0][:-1]) * s[1][0]
        if base == "addmm":
            return s[1][0] * s[2][1]
        if base == "mm":
            return s[0][0] * s[1][1]
        if base == "bmm":
            return s[0][0] * s[0][1] * s[1][2]
        if base == "baddbmm":
            return s[1][0] * s[1][1] * s[2][2]
        if base == "matmul":
            return _elements(s[0][:-1]) * (s[1][-1] if len(s[1]) >= 2 else 1)
        if base in ("conv1d", "conv2d", "conv3d", "convolution", "_convolution"):
            return _conv_output(s[0], s[1], concrete)
        if base in ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d"):
            return _pool_output(s[0], concrete, dilated=base.startswith("max"))
        if base.startswith("adaptive_") and "pool" in base:
            size = _arg(concrete, 1, [1])
            size = size if isinstance(size, list) else [size]
            return _elements(s[0][:len(s[0]) - len(size)]) * _elements(size)
        if base == "embedding":
            return _elements(s[1]) * s[0][-1]
        if base.startswith("scaled_dot_product"):
            return _elements(s[0][:-1]) * s[2][-1]
        if base in _TORCH_REDUCTIONS:
            dims = _arg(concrete, 1)
            if dims is None:
                return 1  # a full reduction
            rank = len(s[0])
            reduced = {d % rank for d in (dims if isinstance(dims, list) else [dims])}
            return _elements([d for i, d in enumerate(s[0]) if i not in reduced])
    except (IndexError, TypeError, ZeroDivisionError):
        pass
    return max((_elements(shape) for shape in shapes if shape), default=0)


def _conv_output(x: list[int], w: list[int], concrete: list[Any]) -> int:
    spatial = len(x) - 2
    stride = _expand(_arg(concrete, 3, 1), spatial)
    padding = _arg(concrete, 4, 0)
    padding = [0] * spatial if isinstance(padding, str) else _expand(padding, spatial)  # "same"/"valid" → estimate
    dilation = _expand(_arg(concrete, 5, 1), spatial)
    sizes = [(x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(spatial)]
    return x[0] * w[0] * _elements(sizes)


def _pool_output(x: list[int], concrete: list[Any], dilated: bool) -> int:
    spatial = 2 if len(x) >= 4 else len(x) - 2
    kernel = _expand(_arg(concrete, 1, 1), spatial)
    stride = _expand(_arg(concrete, 2, kernel), spatial)
    padding = _expand(_arg(concrete, 3, 0), spatial)
    dilation = _expand(_arg(concrete, 4, 1), spatial) if dilated else [1] * spatial  # avg_pool: ceil_mode there
    head = x[:len(x) - spatial]
    sizes = [(x[len(head) + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
             for i in range(spatial)]
    return _elements(head) * _elements(sizes)


def _expand(value: Any, n: int) -> list[int]:
    """A kernel/stride/padding argument as one int per spatial dimension (an int or a 1-list applies to all)."""
    if isinstance(value, list):
        return [int(v) for v in value] * (n if len(value) == 1 else 1) if value else [1] * n
    return [int(value)] * n


def _elements(shape: Iterable[Any]) -> int:
    """Elements of a shape ([] is a scalar: one)."""
    return math.prod(int(d) for d in shape)
