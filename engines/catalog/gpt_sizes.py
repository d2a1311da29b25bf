"""The byte counts of a gpt decode step and of its KV cache, from the catalog parameters alone (no torch).

Why a module of its own: the generate scenario (in the worker) reports these counts and the console's decoder
analysis (in the GUI process, which never imports torch) tabulates the KV-cache footprint from them, so the
arithmetic must live where both can import it. It follows engines/catalog/gpt.py's layout exactly:

- per block: LayerNorm (2h) · qkv Linear (3h² + 3h) · out Linear (h² + h) · LayerNorm (2h) ·
  feed-forward Linear (4h² + 4h) and Linear (4h² + h) → 12h² Linear weights and 13h vectors (biases, norms);
- after the blocks: a LayerNorm (2h) and the lm_head (V·h, no bias);
- the token (V·h) and position (max_seq·h) embeddings.

A decode step streams every weight once (shared by the whole batch) except the two embedding tables, from
which it gathers one row per token (a few KB, left out). Attention reads the K and V of every position it
attends to, per sequence. These are the bytes the step cannot avoid moving (the ideal traffic the decode's
memory-bandwidth utilization is measured against); a real step moves more (copies of the cache, activations).

Element sizes by precision: fp32 4, bf16/fp16 2. int8 is dynamic quantization of the Linear layers on both
engines: their weights are 1 byte (per-tensor scales left out), biases, norms and activations stay fp32, so the
KV cache is fp32.
"""

from __future__ import annotations

from typing import Any

WEIGHT_ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}  # Linear weights
VALUE_ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 4}  # biases, norms, activations, KV cache

METHOD = ("computed from the model's parameters, not measured: weights = every Linear and LayerNorm "
          "parameter once per step (embedding tables are gathered, not streamed); KV read = batch × attended "
          "positions × 2 (K and V) × layers × hidden × element size, attended positions averaged over the "
          "request's decode steps; element sizes fp32 4, bf16/fp16 2, int8 Linear weights 1 with fp32 "
          "biases, norms and cache")


# ---- Public API
def parameter_counts(params: dict[str, Any]) -> dict[str, int]:
    """Parameters by role: Linear weights, vectors (biases and norms), embeddings — and the total."""
    layers, hidden, vocab, max_seq = (int(params[k]) for k in ("layers", "hidden", "vocab", "max_seq"))
    linear = layers * 12 * hidden * hidden + vocab * hidden  # the blocks' Linear layers and the lm_head
    vectors = layers * 13 * hidden + 2 * hidden  # biases and norms of the blocks, then the final norm
    embeddings = (vocab + max_seq) * hidden
    return {"linear": linear, "vectors": vectors, "embeddings": embeddings, "total": linear + vectors + embeddings}


def weight_bytes_per_step(params: dict[str, Any], precision: str) -> int:
    """Weight bytes one decode step streams (once for the whole batch): all but the embedding tables."""
    counts = parameter_counts(params)
    return counts["linear"] * _size(WEIGHT_ELEMENT_BYTES, precision) + \
        counts["vectors"] * _size(VALUE_ELEMENT_BYTES, precision)


def kv_bytes_per_position(params: dict[str, Any], precision: str) -> int:
    """K and V of one position of one sequence, all layers: 2 × layers × hidden × element size."""
    return 2 * int(params["layers"]) * int(params["hidden"]) * _size(VALUE_ELEMENT_BYTES, precision)


def kv_cache_bytes(params: dict[str, Any], precision: str, batch: int, sequence_tokens: int) -> int:
    """The KV cache's footprint holding `sequence_tokens` positions for each of `batch` sequences."""
    return batch * sequence_tokens * kv_bytes_per_position(params, precision)


def decode_bytes(params: dict[str, Any], precision: str, batch: int, prompt_tokens: int,
                 output_tokens: int) -> dict[str, Any]:
    """What one decode step of this request shape moves, on average over the request's decode steps.

    Decode step i (1 … output_tokens − 1) feeds token prompt + i − 1 and attends to prompt + i positions,
    so the mean is prompt + output_tokens / 2. The footprint is the cache at the request's full length.
    """
    steps = output_tokens - 1
    mean_attended = prompt_tokens + (steps + 1) / 2 if steps > 0 else float(prompt_tokens)
    per_position = kv_bytes_per_position(params, precision)
    weights = weight_bytes_per_step(params, precision)
    kv_read = batch * mean_attended * per_position
    sequence = prompt_tokens + output_tokens
    return {
        "weight_bytes_per_token": weights,
        "kv_read_bytes_per_token": kv_read,
        "decode_bytes_per_token": weights + kv_read,
        "kv_bytes_per_position": per_position,
        "kv_cache_bytes": kv_cache_bytes(params, precision, batch, sequence),
        "sequence_tokens": sequence,
        "mean_attended_positions": mean_attended,
        "max_sequence_tokens": int(params["max_seq"]),
        "method": METHOD,
    }


# ---- Private API
def _size(table: dict[str, int], precision: str) -> int:
    if precision not in table:
        raise ValueError(f"gpt byte counts: unknown precision {precision!r}; known: {', '.join(table)}")
    return table[precision]
