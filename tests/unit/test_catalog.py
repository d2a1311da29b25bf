"""The model catalog: a torch-free registry, real layouts, deterministic weights and inputs, a correct KV cache."""

import importlib
import inspect
import json
import subprocess
import sys

import pytest

from engines import catalog

# Small sizes that keep every family's real structure (depth, block types, attention, cache).
SMALL = {
    "mlp": {"in_features": 16, "hidden": 32},
    "resnet18": {"image_size": 32, "width": 8, "classes": 10},
    "resnet50": {"image_size": 32, "width": 8, "classes": 10},
    "bert": {"layers": 2, "hidden": 32, "heads": 2, "seq_len": 16, "vocab": 128},
    "gpt": {"layers": 2, "hidden": 32, "heads": 2, "vocab": 128, "max_seq": 64},
    "ttt-mlp": {"in_features": 8, "hidden": 16, "teacher_hidden": 4},
    # the synthetic suite (engines/catalog/synthetic/), tiny
    "synth-gemm": {"rows": 4, "features": 16, "layers": 2},
    "synth-stream": {"rows": 8, "features": 16, "passes": 4},
    "synth-reduce": {"rows": 8, "features": 16},
    "synth-tiny-ops": {"rows": 1, "features": 4, "ops": 12},
    "synth-cached": {"rows": 4, "features": 16, "passes": 3},
    "synth-mixed": {"rows": 4, "features": 16, "hidden": 32},
}


def family(name):
    return importlib.import_module(catalog.get(name).module)


def small(name):
    return catalog.params_for(name, SMALL[name])


def test_catalog_lists_the_issue_models_and_dropped_cnn():
    assert [n for n in catalog.names() if catalog.get(n).task != catalog.SYNTHETIC] == \
        ["mlp", "resnet18", "resnet50", "bert", "gpt", "ttt-mlp"]
    assert "cnn" not in catalog.names()
    assert set(SMALL) == set(catalog.names())


def test_registry_and_describe_stay_torch_free():
    code = ("import sys, json; from engines import catalog; d = catalog.describe(); "
            "catalog.input_specs('gpt', {'layers': 1}); json.dumps(d); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_describe_lists_params_and_default_inputs_with_a_symbolic_batch():
    models = {m["name"]: m for m in catalog.describe()}
    json.dumps(models)  # plain data
    bert = models["bert"]
    assert bert["params"] == {"layers": 4, "hidden": 256, "heads": 4, "seq_len": 128, "vocab": 8192, "classes": 2}
    assert bert["inputs"] == [
        {"name": "input_ids", "dtype": "int64", "shape": ["batch", 128], "dynamic": ["batch", "sequence"]},
        {"name": "attention_mask", "dtype": "int64", "shape": ["batch", 128], "dynamic": ["batch", "sequence"]},
    ]
    assert models["resnet50"]["inputs"] == [{"name": "pixels", "dtype": "float32", "shape": ["batch", 3, 224, 224],
                                             "dynamic": ["batch", None, None, None]}]
    assert models["resnet18"]["params"] == {"image_size": 224, "width": 64, "classes": 1000, "channels": 3}
    assert models["gpt"]["params"] == {"layers": 4, "hidden": 256, "heads": 4, "vocab": 8192, "max_seq": 512}
    assert models["gpt"]["inputs"][0]["shape"] == ["batch", 32] and models["gpt"]["decoder"] is True
    assert models["mlp"]["input"] == "features float32 [batch, 512]"  # the one-line text the console shows


def test_params_and_input_specs_follow_overrides_and_generation():
    assert catalog.params_for("bert", {"seq_len": 16})["seq_len"] == 16
    with pytest.raises(KeyError, match="bert has no parameter 'width'"):
        catalog.params_for("bert", {"width": 3})
    specs = catalog.input_specs("gpt", {"max_seq": 64}, {"prompt_tokens": 12}, symbolic_batch=False)
    assert specs[0]["shape"] == [1, 12]
    assert catalog.input_specs("resnet18", {"image_size": 32})[0]["shape"] == ["batch", 3, 32, 32]


@pytest.mark.parametrize("name", list(SMALL))
def test_family_contract_names_inputs_as_forward_does_and_is_deterministic(name):
    import torch

    fam, params = family(name), small(name)
    specs = fam.input_specs(params)
    assert specs == catalog.input_specs(name, params)
    model = fam.build(params)
    assert not model.training
    forward_args = list(inspect.signature(model.forward).parameters)
    assert forward_args[:len(specs)] == [s["name"] for s in specs]  # exporters bind inputs by these names
    inputs = fam.example_inputs(3, params)
    assert len(inputs) == len(specs)
    for spec, tensor in zip(specs, inputs, strict=True):
        assert str(tensor.dtype) == f"torch.{spec['dtype']}"
        assert list(tensor.shape) == [3 if d == "batch" else d for d in spec["shape"]]
    again = fam.example_inputs(3, params)
    assert all(torch.equal(a, b) for a, b in zip(inputs, again, strict=True))
    with torch.no_grad():
        out = model(*inputs)
        out_again = fam.build(params)(*again)
    first = out[0] if isinstance(out, tuple) else out
    second = out_again[0] if isinstance(out_again, tuple) else out_again
    assert torch.equal(first, second)  # same weights on every build
    assert torch.isfinite(first).all()
    assert fam.OPTIMIZER in ("sgd", "adamw")
    loss = fam.training_loss(params, inputs)(out)
    assert loss.dim() == 0 and torch.isfinite(loss)


def test_resnets_have_the_real_stage_layouts_and_parameter_counts():
    import torch

    r18 = family("resnet18").build(catalog.params_for("resnet18"))
    r50 = family("resnet50").build(catalog.params_for("resnet50"))
    assert [len(getattr(r18, f"layer{i}")) for i in range(1, 5)] == [2, 2, 2, 2]
    assert [len(getattr(r50, f"layer{i}")) for i in range(1, 5)] == [3, 4, 6, 3]
    assert type(r18.layer1[0]).__name__ == "BasicBlock" and type(r50.layer1[0]).__name__ == "Bottleneck"
    # torchvision's resnet18 / resnet50 have exactly these many parameters.
    assert sum(p.numel() for p in r18.parameters()) == 11_689_512
    assert sum(p.numel() for p in r50.parameters()) == 25_557_032
    tiny = family("resnet50").build(small("resnet50"))
    with torch.no_grad():
        assert tiny(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    assert tiny.fc.in_features == 8 * 8 * 4  # last stage width × 8, bottleneck expansion 4


def test_gpt_cache_gives_the_same_logits_as_the_full_sequence():
    import torch

    fam, params = family("gpt"), small("gpt")
    model = fam.build(params)
    ids = fam.example_inputs(2, params, {"prompt_tokens": 10})[0]
    assert ids.shape == (2, 10)
    with torch.no_grad():
        full, present = model(ids)
        assert present.shape == (2, 2, 2, 2, 10, 16)  # layers, k/v, batch, heads, tokens, head_dim
        prefix, past = model(ids[:, :6])
        step, past = model(ids[:, 6:7], past)  # one token with the cache
        rest, past = model(ids[:, 7:], past)  # several tokens with the cache (offset causal mask)
    assert past.shape[-2] == 10
    torch.testing.assert_close(prefix, full[:, :6], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(step, full[:, 6:7], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(rest, full[:, 7:], rtol=1e-4, atol=1e-5)
    assert fam.greedy(full).shape == (2, 1)


def test_gpt_is_causal_and_checks_its_length():
    import torch

    fam, params = family("gpt"), small("gpt")
    model = fam.build(params)
    ids = fam.example_inputs(1, params, {"prompt_tokens": 8})[0]
    changed = ids.clone()
    changed[0, -1] = (changed[0, -1] + 1) % params["vocab"]
    with torch.no_grad():
        a, _ = model(ids)
        b, _ = model(changed)
    torch.testing.assert_close(a[:, :-1], b[:, :-1])  # a later token never changes earlier logits
    with pytest.raises(ValueError, match=r"prompt_tokens \(60\) \+ output_tokens \(8\) = 68 exceeds max_seq \(64\)"):
        fam.check_length(params, 60, 8)
    with pytest.raises(ValueError, match="exceeds max_seq"):
        fam.example_inputs(1, params, {"prompt_tokens": 65})


def test_bert_ignores_padded_positions_and_checks_heads():
    import torch

    fam, params = family("bert"), small("bert")
    model = fam.build(params)
    ids, mask = fam.example_inputs(2, params)
    assert mask[0].all() and not mask[1].all()  # odd rows carry padding
    changed = ids.clone()
    changed[1, -1] = (changed[1, -1] + 1) % params["vocab"]  # a padded position of row 1
    with torch.no_grad():
        torch.testing.assert_close(model(ids, mask), model(changed, mask))
    with pytest.raises(ValueError, match=r"hidden \(30\) must be a multiple of heads \(4\)"):
        fam.build(catalog.params_for("bert", {"hidden": 30, "heads": 4}))
