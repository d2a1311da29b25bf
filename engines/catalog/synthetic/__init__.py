"""The synthetic suite: small graphs built in code, each made to be held back by one known thing.

Why: a verdict can only be trusted once it has been right where the answer is known. Each model here stresses
one roof and nothing else, and its size parameters move it along that roof, so an intervention (more rows, more
ops, more threads) changes time the way its label predicts:

- `gemm` — a chain of large GEMMs: compute (time follows FLOPs);
- `elementwise` — multiply/add passes over one tensor: memory bandwidth when the tensor is ≥ 4× the last-level
  cache (`synth-stream`), cache-resident when it fits (`synth-cached`, the same graph);
- `reduction` — a sum over such a tensor: memory bandwidth;
- `tiny_ops` — thousands of elementwise ops on 16 numbers: host overhead (time follows op count, not size);
- `mixed` — a transformer-style MLP block (GEMMs, GELU, residual, LayerNorm): mostly compute, some memory.

Every model takes one input, `x` float32 [batch, rows, features]; weights come from `torch.manual_seed(0)`, so
every build computes the same numbers, and every graph exports to ONNX so both engines run it.
"""

# The package itself imports nothing heavy: the packager walks it without loading torch. Shared code: common.py.
