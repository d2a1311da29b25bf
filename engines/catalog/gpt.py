"""GPT-style decoder with a KV cache and deterministic random weights: prefill, then one token per step.

Pre-LN blocks (causal attention, GELU feed-forward of 4 × hidden), learned positions up to `max_seq`.
`forward(input_ids, past_key_values=None) -> (logits, present)`: without a cache it runs the whole
sequence causally (prefill, and what single-stream/offline runs measure); with one it appends the new
tokens' keys and values to it. The cache is one tensor [layers, 2, batch, heads, tokens, head_dim], so an
exporter sees one input and two outputs. Positions come from the cache's length — a shape, never a value —
so nothing in the graph depends on data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from engines import catalog
from engines.catalog import _common, gpt_sizes
from engines.catalog.attention import HeadsProjection, check_heads

OPTIMIZER = "adamw"


class CausalSelfAttention(HeadsProjection):
    def forward(self, x: torch.Tensor, past: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        batch, length, hidden = x.shape
        q, k, v = self.split_heads(x)
        if past is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            k = torch.cat((past[0], k), dim=2)
            v = torch.cat((past[1], v), dim=2)
            if length == 1:  # one new token sees the whole cache: no mask needed
                y = F.scaled_dot_product_attention(q, k, v)
            else:  # several new tokens: causal, offset by the cached length
                cached = past.shape[-2]
                allowed = torch.ones(length, cached + length, dtype=torch.bool, device=x.device).tril(cached)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        present = torch.stack((k, v))
        return self.merge_heads(y, batch, length, hidden), present


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden)
        self.attention = CausalSelfAttention(hidden, heads)
        self.norm2 = nn.LayerNorm(hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor, past: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        attended, present = self.attention(self.norm1(x), past)
        x = x + attended
        return x + self.ff(self.norm2(x)), present


class Gpt(nn.Module):
    def __init__(self, params: dict[str, Any]):
        super().__init__()
        hidden = params["hidden"]
        self.max_seq = params["max_seq"]
        self.tokens = nn.Embedding(params["vocab"], hidden)
        self.positions = nn.Embedding(params["max_seq"], hidden)
        self.blocks = nn.ModuleList(Block(hidden, params["heads"]) for _ in range(params["layers"]))
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, params["vocab"], bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)  # GPT-2's initializer range

    def forward(self, input_ids: torch.Tensor,
                past_key_values: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        cached = 0 if past_key_values is None else past_key_values.shape[-2]
        positions = torch.arange(cached, cached + input_ids.shape[1], device=input_ids.device)
        x = self.tokens(input_ids) + self.positions(positions)
        presents = []
        for index, block in enumerate(self.blocks):
            x, present = block(x, None if past_key_values is None else past_key_values[index])
            presents.append(present)
        return self.lm_head(self.norm(x)), torch.stack(presents)


def build(params: dict[str, Any]) -> nn.Module:
    check_heads("gpt", params)
    torch.manual_seed(0)
    return Gpt(params).eval()


def example_inputs(batch: int, params: dict[str, Any], spec_generation: Any = None) -> tuple[torch.Tensor, ...]:
    """The prompt: `generation.prompt_tokens` token ids per row (no cache)."""
    length = catalog.input_specs("gpt", params, spec_generation, symbolic_batch=False)[0]["shape"][1]
    check_length(params, length, 0)
    return (_common.token_ids(batch, length, params["vocab"]),)


def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
    return catalog.input_specs("gpt", params, spec_generation)


def check_length(params: dict[str, Any], prompt_tokens: int, output_tokens: int) -> None:
    """Prompt and generated tokens must fit in the position table; say which knob to turn if not."""
    if prompt_tokens + output_tokens > params["max_seq"]:
        what = (f"prompt_tokens ({prompt_tokens}) + output_tokens ({output_tokens}) = {prompt_tokens + output_tokens}"
                if output_tokens else f"prompt_tokens ({prompt_tokens})")
        raise ValueError(f"gpt: {what} exceeds max_seq ({params['max_seq']}); raise model_params.max_seq or "
                         "shorten the generation")


def training_loss(params: dict[str, Any], inputs: tuple[torch.Tensor, ...]) -> Callable[[Any], torch.Tensor]:
    """Next-token loss: the logits at position t predict the input token at t + 1."""
    ids = inputs[0]
    if ids.shape[1] < 2:
        raise ValueError("gpt: training needs a prompt of at least 2 tokens (next-token loss)")
    targets = ids[:, 1:].reshape(-1)

    def loss(output: Any) -> torch.Tensor:
        logits = output[0][:, :-1]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets)

    return loss


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """The next token of each row: argmax of the last position's logits, shape [batch, 1]."""
    return logits[:, -1].argmax(dim=-1, keepdim=True)


# The generate scenario's byte counts (torch-free arithmetic, shared with the console's decoder analysis).
decode_bytes = gpt_sizes.decode_bytes
