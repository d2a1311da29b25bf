"""Model catalog: models built in code with deterministic random weights (nothing is downloaded).

This module is torch-free so the console can list models without importing torch; each entry names
the module that builds it, imported only inside a worker. Adding a model = one module + one entry here.

A family module (`engines.catalog.<module>`) defines:
- `build(params) -> nn.Module` in eval mode, weights from `torch.manual_seed`, so every run of the same
  parameters computes the same numbers;
- `example_inputs(batch, params, spec_generation=None) -> tuple[Tensor, ...]`, from a seeded generator;
- `input_specs(params, spec_generation=None) -> list[dict]` (delegating to `input_specs` below);
- `training_loss(params, inputs) -> callable(output) -> loss` with deterministic targets, and `OPTIMIZER`.

Input specs are declared here, as data, so `describe()` and the ONNX exporter read them without torch:
a dimension is `"batch"` (symbolic, dynamic), a parameter name (resolved from the model's parameters), the
word `"prompt_tokens"` (the generation prompt length) or a whole number. `dynamic` names, per axis, the
dynamic dimension an exporter should declare (`"batch"`, `"sequence"`) or None for a static one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engines.generation import GenerationOptions


@dataclass(frozen=True)
class InputDef:
    name: str
    dtype: str
    dims: tuple[Any, ...]
    dynamic: tuple[str | None, ...]


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    module: str  # engines.catalog.<module>: build(params), example_inputs(batch, params, …), input_specs(params)
    description: str
    task: str
    params: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[InputDef, ...] = ()
    decoder: bool = False  # a decoder with a KV cache: the `generate` scenario can run it
    notes: str = ""


def _image(name: str = "pixels") -> InputDef:
    return InputDef(name, "float32", ("batch", "channels", "image_size", "image_size"), ("batch", None, None, None))


def _synthetic(name: str, module: str, what: str, params: dict[str, Any], notes: str) -> CatalogEntry:
    """An entry of the synthetic suite: its module in engines/catalog/synthetic/, its one [batch, rows, features]
    input and the SYNTHETIC task."""
    return CatalogEntry(name, f"engines.catalog.synthetic.{module}", f"Synthetic: {what}", SYNTHETIC, params,
                        (_SYNTH_INPUT,), notes=notes)


_RESNET_PARAMS = {"image_size": 224, "width": 64, "classes": 1000, "channels": 3}
_TOKENS = ("batch", "seq_len")
SYNTHETIC = "synthetic"  # the task of the synthetic suite's entries (tests and pickers can tell them apart)
_SYNTH_INPUT = InputDef("x", "float32", ("batch", "rows", "features"), ("batch", None, None))
_TOKENS_DYNAMIC = ("batch", "sequence")

ENTRIES: dict[str, CatalogEntry] = {
    e.name: e
    for e in (
        CatalogEntry("mlp", "engines.catalog.mlp", "Multi-layer perceptron (3 hidden layers, GELU)", "tabular",
                     {"in_features": 512, "hidden": 1024, "layers": 3, "out_features": 10},
                     (InputDef("features", "float32", ("batch", "in_features"), ("batch", None)),)),
        CatalogEntry("resnet18", "engines.catalog.resnet18", "ResNet-18 layout: basic blocks [2, 2, 2, 2]", "vision",
                     dict(_RESNET_PARAMS), (_image(),),
                     notes="stage widths width×(1, 2, 4, 8); image_size ≥ 32 keeps every stage's feature map ≥ 1×1"),
        CatalogEntry("resnet50", "engines.catalog.resnet50", "ResNet-50 layout: bottleneck blocks [3, 4, 6, 3]",
                     "vision", dict(_RESNET_PARAMS), (_image(),),
                     notes="bottleneck expansion 4: the last stage has width×32 channels"),
        CatalogEntry("bert", "engines.catalog.bert",
                     "BERT-style encoder (post-LN, GELU, intermediate = 4 × hidden) with a sequence-classifier head",
                     "text-classification",
                     {"layers": 4, "hidden": 256, "heads": 4, "seq_len": 128, "vocab": 8192, "classes": 2},
                     (InputDef("input_ids", "int64", _TOKENS, _TOKENS_DYNAMIC),
                      InputDef("attention_mask", "int64", _TOKENS, _TOKENS_DYNAMIC)),
                     notes="seq_len is also the size of the position table: a sequence may be at most seq_len long"),
        CatalogEntry("gpt", "engines.catalog.gpt",
                     "GPT-style decoder (pre-LN, GELU) with a KV cache: prefill, then one token per decode step",
                     "text-generation",
                     {"layers": 4, "hidden": 256, "heads": 4, "vocab": 8192, "max_seq": 512},
                     (InputDef("input_ids", "int64", ("batch", "prompt_tokens"), _TOKENS_DYNAMIC),),
                     decoder=True,
                     notes="forward(input_ids, past_key_values=None) -> (logits, present); the cache is one tensor "
                           "[layers, 2, batch, heads, tokens, hidden/heads]; prompt + output tokens ≤ max_seq"),
        CatalogEntry("ttt-mlp", "engines.catalog.ttt_task", "Time-to-train task: the MLP learning a fixed random "
                     "teacher's classes", "classification", {"in_features": 16, "hidden": 512, "layers": 2,
                     "out_features": 8, "teacher_hidden": 8, "teacher_seed": 0},
                     (InputDef("features", "float32", ("batch", "in_features"), ("batch", None)),),
                     notes="labels = argmax of a fixed random 2-layer teacher; `labconsole time-to-train` trains it "
                           "to a target eval accuracy (engines/catalog/ttt_task.py)"),
        # The synthetic suite (engines/catalog/synthetic/): each graph held back by one known thing.
        _synthetic("synth-gemm", "gemm", "a chain of large GEMMs", {"rows": 256, "features": 1024, "layers": 4},
                   "compute-bound: 2 × rows × features² FLOPs per layer and sample"),
        _synthetic("synth-stream", "elementwise", "elementwise passes streaming a 64 MiB tensor",
                   {"rows": 16384, "features": 1024, "passes": 4},
                   "memory-bandwidth-bound while rows × features × 4 bytes ≥ 4× the last-level cache"),
        _synthetic("synth-reduce", "reduction", "a sum over a 64 MiB tensor", {"rows": 16384, "features": 1024},
                   "memory-bandwidth-bound: one read of every byte"),
        _synthetic("synth-tiny-ops", "tiny_ops", "2000 elementwise ops on 16 numbers",
                   {"rows": 1, "features": 16, "ops": 2000},
                   "host-overhead-bound: time follows `ops`, not rows × features"),
        _synthetic("synth-cached", "elementwise", "the synth-stream graph on a 1 MiB tensor",
                   {"rows": 256, "features": 1024, "passes": 4},
                   "cache-resident while rows × features × 4 bytes fits the last-level cache"),
        _synthetic("synth-mixed", "mixed", "MLP block (GEMM up, GELU, GEMM down, residual, LayerNorm)",
                   {"rows": 512, "features": 512, "hidden": 2048},
                   "mostly compute, with memory-bound GELU, add and LayerNorm"),
    )
}


# ---- Public API
def names() -> list[str]:
    return list(ENTRIES)


def get(name: str) -> CatalogEntry:
    return ENTRIES[name]


def params_for(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The entry's default parameters with the run's overrides applied (unknown keys are an error)."""
    params = dict(ENTRIES[name].params)
    for key, value in (overrides or {}).items():
        if key not in params:
            raise KeyError(f"{name} has no parameter {key!r}; it has {', '.join(params)}")
        params[key] = value
    return params


def input_specs(name: str, params: dict[str, Any] | None = None, generation: Any = None,
                symbolic_batch: bool = True) -> list[dict[str, Any]]:
    """Name, dtype, shape and dynamic axes of each input, in the order `forward` takes them.

    `params` defaults to the entry's defaults; `generation` (a GenerationOptions or a dict) gives
    `prompt_tokens` (GenerationOptions' default when absent). The batch stays the word "batch" unless `symbolic_batch` is False
    (then it is 1).
    """
    params = params_for(name, params)
    prompt = _prompt_tokens(generation)
    specs = []
    for item in ENTRIES[name].inputs:
        shape: list[Any] = []
        for dim in item.dims:
            if dim == "batch":
                shape.append("batch" if symbolic_batch else 1)
            elif dim == "prompt_tokens":
                shape.append(prompt)
            elif isinstance(dim, str):
                shape.append(params[dim])
            else:
                shape.append(dim)
        specs.append({"name": item.name, "dtype": item.dtype, "shape": shape, "dynamic": list(item.dynamic)})
    return specs


def describe() -> list[dict[str, Any]]:
    """Plain data for `labconsole models` and the window's model picker."""
    out = []
    for e in ENTRIES.values():
        specs = input_specs(e.name)
        out.append({"name": e.name, "description": e.description, "task": e.task, "params": dict(e.params),
                    "inputs": specs, "input": ", ".join(_spec_text(s) for s in specs), "decoder": e.decoder,
                    "notes": e.notes})
    return out


# ---- Private API
def _prompt_tokens(generation: Any) -> int:
    if generation is None:
        return GenerationOptions().prompt_tokens
    if isinstance(generation, dict):
        return int(generation.get("prompt_tokens", GenerationOptions().prompt_tokens))
    return int(generation.prompt_tokens)


def _spec_text(spec: dict[str, Any]) -> str:
    return f"{spec['name']} {spec['dtype']} [{', '.join(str(d) for d in spec['shape'])}]"
