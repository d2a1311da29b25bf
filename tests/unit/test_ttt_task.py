"""The time-to-train task (engines.catalog.ttt_task): deterministic data with a learnable target, a fixed held-out
set, the catalog MLP as the student, and an accuracy that means something."""

import pytest

torch = pytest.importorskip("torch")

from engines import catalog  # noqa: E402
from engines.catalog import mlp, ttt_task  # noqa: E402

PARAMS = catalog.params_for("ttt-mlp")


def test_same_seed_same_data_and_same_first_loss():
    a, b = ttt_task.dataset(3, 512, 256), ttt_task.dataset(3, 512, 256)
    for part in ("train", "eval"):
        assert torch.equal(a[part][0], b[part][0]) and torch.equal(a[part][1], b[part][1])
    x, y = a["train"]
    losses = []
    for _ in range(2):
        model = ttt_task.build(PARAMS, seed=3).train()
        losses.append(float(torch.nn.functional.cross_entropy(model(x[:64]), y[:64]).detach()))
    assert losses[0] == losses[1]


def test_another_seed_changes_training_data_and_weights_but_not_the_held_out_set():
    a, b = ttt_task.dataset(1, 256, 128), ttt_task.dataset(2, 256, 128)
    assert not torch.equal(a["train"][0], b["train"][0])
    assert torch.equal(a["eval"][0], b["eval"][0]) and torch.equal(a["eval"][1], b["eval"][1])
    first, second = ttt_task.build(PARAMS, seed=1), ttt_task.build(PARAMS, seed=2)
    assert not torch.equal(first[0].weight, second[0].weight)


def test_the_student_is_the_catalog_mlp_and_seed_0_is_its_own_weights():
    student = ttt_task.build(PARAMS)
    reference = mlp.build({k: PARAMS[k] for k in ttt_task.STUDENT_KEYS})
    assert type(student) is mlp.Mlp
    assert all(torch.equal(p, q) for p, q in zip(student.parameters(), reference.parameters(), strict=True))
    assert student(torch.zeros(2, PARAMS["in_features"])).shape == (2, PARAMS["out_features"])


def test_labels_come_from_the_teacher_are_near_balanced_and_the_teacher_scores_1():
    data = ttt_task.dataset(0, 64, 4096)
    x, y = data["eval"]
    assert torch.equal(y, ttt_task.teacher_labels(PARAMS, x))
    counts = torch.bincount(y, minlength=PARAMS["out_features"])
    assert (counts > 0).all()  # every class occurs
    assert data["majority_share"] == pytest.approx(float(counts.max()) / len(y))
    assert data["majority_share"] < 0.5  # a target of 0.9 is far above always answering one class

    class Teacher(torch.nn.Module):
        def forward(self, inputs):
            first, second = ttt_task._teacher(PARAMS)
            return torch.tanh(inputs @ first) @ second

    class Constant(torch.nn.Module):
        def forward(self, inputs):
            return torch.nn.functional.one_hot(torch.zeros(len(inputs), dtype=torch.int64), PARAMS["out_features"]
                                               ).float()

    assert ttt_task.quality(Teacher(), data["eval"]) == 1.0
    assert ttt_task.quality(Constant(), data["eval"]) == pytest.approx(float(counts[0]) / len(y))


def test_quality_restores_the_training_mode_and_the_catalog_loss_uses_the_teacher():
    model = ttt_task.build(PARAMS).train()
    ttt_task.quality(model, ttt_task.dataset(0, 8, 32)["eval"])
    assert model.training
    inputs = ttt_task.example_inputs(16, PARAMS)
    labels = ttt_task.teacher_labels(PARAMS, inputs[0])
    logits = torch.nn.functional.one_hot(labels, PARAMS["out_features"]).float() * 50
    assert float(ttt_task.training_loss(PARAMS, inputs)(logits)) < 1e-6  # right answers: no loss
    with pytest.raises(ValueError, match="at least one"):
        ttt_task.dataset(0, 0, 8)

