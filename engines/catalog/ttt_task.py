"""The time-to-train task: a small real learning problem built in code, so a "time to reach quality Q" is a time
to *learn* something, not to run a fixed number of steps.

Why this task: MLPerf Training times a model from its first step to the evaluation that reaches a target quality.
That needs data whose labels can be learnt and a held-out set to score on, with nothing downloaded. Here the
labels come from a fixed random "teacher" (a 2-layer MLP with tanh, `teacher_hidden` units, weights from
`teacher_seed`, no biases): label = argmax of its logits for an input x ~ N(0, 1). The teacher is far smaller than
the student, so the mapping is learnable, yet nonlinear, so reaching 0.9 takes a few hundred steps of SGD.

The student is the catalog's MLP (engines.catalog.mlp's layout and class, GELU between layers), re-initialised
from the run's seed. `dataset(seed, n_train, n_eval)`: the training inputs come from `seed` (MLPerf wants a
different seed per run), the evaluation inputs from a fixed stream (`EVAL_SEED`), so every run is scored on the
same held-out set and its quality means the same thing. `quality(model, eval_set)` is top-1 accuracy on it.

Classes are near balanced (tanh keeps the logits odd in x); `dataset` reports the share of the largest class in the
evaluation set (`majority_share`, 0.272 for the defaults): the accuracy of always answering that class, which a
target must lie well above to mean anything.

Sizes measured on the 2-core VM (torch 2.13 CPU, 1 rank, 1 thread; defaults: 16 features, student 16→512→512→8,
teacher 8 hidden units, 65,536 training and 2,048 evaluation samples, global batch 128, SGD lr 0.1 momentum 0.9,
evaluation every 25 steps): eval accuracy 0.9 is reached in 375–450 steps, 4.2–5.1 s (seeds 1–4 and 11), of which
0.65–0.8 s is evaluation; accuracy keeps climbing slowly past it (0.92–0.93 by 1,000 steps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from engines import catalog
from engines.catalog import _common, mlp

OPTIMIZER = "sgd"
EVAL_SEED = 7919  # the held-out set's own stream: the same for every run, whatever its seed
STUDENT_KEYS = ("in_features", "hidden", "layers", "out_features")

__all__ = ["build", "example_inputs", "input_specs", "training_loss", "dataset", "quality", "teacher_labels",
           "OPTIMIZER"]


# ---- Public API (the catalog family contract)
def build(params: dict[str, Any], seed: int = 0) -> torch.nn.Module:
    """The student: the catalog MLP's layout, weights from `seed` (seed 0: exactly mlp.build's weights)."""
    model = mlp.build({key: params[key] for key in STUDENT_KEYS})
    if seed:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            for module in model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.reset_parameters()
    return model


def example_inputs(batch: int, params: dict[str, Any], spec_generation: Any = None) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, params["in_features"], generator=_common.generator()),)


def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
    return catalog.input_specs("ttt-mlp", params, spec_generation)


def training_loss(params: dict[str, Any], inputs: tuple[torch.Tensor, ...]) -> Callable[[Any], torch.Tensor]:
    """Cross-entropy against the teacher's labels of these inputs: a run of this model learns the real task."""
    return _common.cross_entropy_against(teacher_labels(params, inputs[0]))


# ---- Public API (the task)
def teacher_labels(params: dict[str, Any], x: torch.Tensor) -> torch.Tensor:
    """argmax of the fixed teacher's logits for each row of `x` (int64)."""
    first, second = _teacher(params)
    with torch.no_grad():
        return (torch.tanh(x.float().cpu() @ first) @ second).argmax(dim=1)


def dataset(seed: int, n_train: int, n_eval: int, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """{"train": (x, y), "eval": (x, y), "seed", "majority_share"}: training inputs from `seed`, evaluation inputs
    from EVAL_SEED (the same held-out set for every run), labels from the teacher."""
    params = catalog.params_for("ttt-mlp", params)
    if n_train < 1 or n_eval < 1:
        raise ValueError(f"a data set needs at least one training and one evaluation sample ({n_train}, {n_eval})")
    width = params["in_features"]
    x_train = torch.randn(n_train, width, generator=torch.Generator().manual_seed(10_000 + int(seed)))
    x_eval = torch.randn(n_eval, width, generator=torch.Generator().manual_seed(EVAL_SEED))
    y_train, y_eval = teacher_labels(params, x_train), teacher_labels(params, x_eval)
    counts = torch.bincount(y_eval, minlength=params["out_features"])
    return {"train": (x_train, y_train), "eval": (x_eval, y_eval), "seed": int(seed),
            "majority_share": float(counts.max()) / n_eval}


def quality(model: torch.nn.Module, eval_set: tuple[torch.Tensor, torch.Tensor]) -> float:
    """Top-1 accuracy of `model` on `eval_set` (x, y), in eval mode; the model's mode is restored."""
    x, y = eval_set
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            predicted = model(x).argmax(dim=1)
    finally:
        model.train(was_training)
    return float((predicted == y.to(predicted.device)).float().mean())


# ---- Private API
def _teacher(params: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """The teacher's two weight matrices (no biases, tanh between them: logits odd in x, so classes stay near
    balanced), from teacher_seed."""
    generator = torch.Generator().manual_seed(int(params["teacher_seed"]))
    width, hidden, classes = params["in_features"], params["teacher_hidden"], params["out_features"]
    first = torch.randn(width, hidden, generator=generator) / width ** 0.5
    second = torch.randn(hidden, classes, generator=generator) / hidden ** 0.5
    return first, second
