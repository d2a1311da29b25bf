"""What one call of a catalog model costs, from its size parameters: FLOPs, bytes moved, op calls and the bytes of
its largest op (the working set the verdict compares with the last-level cache).

Why a model of the cost rather than a second profile: a confirmation predicts how time responds to an
intervention *before* it runs it, and the prediction needs how much the intervention scales the work. Doubling
an MLP's batch doubles its FLOPs but hardly its bytes (the weights dominate at batch 1): a compute-bound MLP then
takes twice as long, a cache-resident one about as long. Profiling the changed configuration would cost a run per
intervention; these counts are exact for the synthetic suite and the MLP (they are what the graphs do) and fp32.
Models without a cost model here (ResNet, BERT, GPT, model files) get None: the axes then assume that FLOPs and
bytes both follow the data, and say so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WORD = 4  # fp32 bytes; the ratios the predictions use do not depend on it


@dataclass(frozen=True)
class Footprint:
    """Per call (one inference of `batch` samples)."""

    flops: float
    bytes: float
    ops: float
    working_set: float  # bytes of the largest op: weights plus its input and output
    # bytes every call touches again — all the layers' weights and the largest activation — when a graph has
    # several weight matrices: what must stay in the last-level cache from one call to the next (None: the largest
    # op's working set is all of it, as for the one-buffer synthetic graphs)
    resident: float | None = None

    @property
    def resident_bytes(self) -> float:
        return self.working_set if self.resident is None else self.resident

    def ratios(self, other: Footprint) -> dict[str, float]:
        """other ÷ self for each count: what an intervention from self to other scales."""
        return {"flops": _ratio(other.flops, self.flops), "bytes": _ratio(other.bytes, self.bytes),
                "ops": _ratio(other.ops, self.ops), "working_set": _ratio(other.working_set, self.working_set),
                "resident": _ratio(other.resident_bytes, self.resident_bytes)}


# ---- Public API
def footprint(model: str, params: dict[str, Any], batch: int) -> Footprint | None:
    """The cost of one call of catalog `model` with these (complete) parameters, None when not modelled."""
    build = _MODELS.get(model)
    return build(params, max(1, int(batch))) if build else None


def modelled(model: str) -> bool:
    return model in _MODELS


# ---- Private API
def _linear(rows: float, n_in: int, n_out: int) -> tuple[float, float]:
    """(FLOPs, bytes) of rows × [n_in] @ [n_in, n_out]: weights read once, input read, output written."""
    return 2.0 * rows * n_in * n_out, WORD * (n_in * n_out + rows * (n_in + n_out))


def _mlp(p: dict[str, Any], b: int) -> Footprint:
    width, layers = int(p["hidden"]), int(p["layers"])
    shapes = [(int(p["in_features"]), width)] + [(width, width)] * (layers - 1) + [(width, int(p["out_features"]))]
    linears = [_linear(b, n_in, n_out) for n_in, n_out in shapes]
    gelu_bytes = 2.0 * WORD * b * width  # read and write the hidden activations
    weights = WORD * sum(n_in * n_out for n_in, n_out in shapes)
    return Footprint(flops=sum(f for f, _ in linears) + 8.0 * b * width * layers,
                     bytes=sum(m for _, m in linears) + gelu_bytes * layers, ops=len(linears) + layers,
                     working_set=max(m for _, m in linears), resident=weights + gelu_bytes)


def _gemm(p: dict[str, Any], b: int) -> Footprint:
    rows, features, layers = b * int(p["rows"]), int(p["features"]), int(p["layers"])
    flops, moved = _linear(rows, features, features)
    return Footprint(flops * layers, moved * layers, layers, moved,
                     resident=WORD * (layers * features * features + 2 * rows * features))


def _elementwise(p: dict[str, Any], b: int) -> Footprint:
    elements = float(b * int(p["rows"]) * int(p["features"]))
    passes = int(p["passes"])
    per_pass = 2.0 * WORD * elements
    return Footprint(elements * passes, per_pass * passes, passes, per_pass)


def _reduce(p: dict[str, Any], b: int) -> Footprint:
    elements = float(b * int(p["rows"]) * int(p["features"]))
    return Footprint(elements, WORD * elements, 2, WORD * elements)


def _tiny(p: dict[str, Any], b: int) -> Footprint:
    elements = float(b * int(p["rows"]) * int(p["features"]))
    ops = int(p["ops"])
    return Footprint(elements * ops, 2.0 * WORD * elements * ops, ops, 2.0 * WORD * elements)


def _mixed(p: dict[str, Any], b: int) -> Footprint:
    rows, features, hidden = b * int(p["rows"]), int(p["features"]), int(p["hidden"])
    up, down = _linear(rows, features, hidden), _linear(rows, hidden, features)
    elementwise = 2.0 * WORD * rows * (hidden + 2 * features)  # GELU, the residual add, LayerNorm
    return Footprint(up[0] + down[0] + 10.0 * rows * (hidden + features), up[1] + down[1] + elementwise, 5,
                     max(up[1], down[1]))


def _ratio(after: float, before: float) -> float:
    return after / before if before > 0 else 1.0


_MODELS: dict[str, Callable[[dict[str, Any], int], Footprint]] = {
    "mlp": _mlp, "synth-gemm": _gemm, "synth-stream": _elementwise, "synth-cached": _elementwise,
    "synth-reduce": _reduce, "synth-tiny-ops": _tiny, "synth-mixed": _mixed,
}
