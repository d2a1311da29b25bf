"""BERT-style encoder with deterministic random weights: an attention + GEMM text workload.

Post-LN blocks as in BERT (attention, add & norm, GELU feed-forward of 4 × hidden, add & norm), learned
positions, and a sequence-classification head on the first token (pooler + classifier). Attention is
written out with `scaled_dot_product_attention` rather than `nn.TransformerEncoderLayer`, whose eval-mode
fast path branches on the data; here nothing depends on values, so torch.export / ONNX see one graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from engines import catalog
from engines.catalog import _common
from engines.catalog.attention import HeadsProjection, check_heads

OPTIMIZER = "adamw"


class SelfAttention(HeadsProjection):
    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        q, k, v = self.split_heads(x)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return self.merge_heads(y, *x.shape)


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.norm1 = nn.LayerNorm(hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attention(x, bias))
        return self.norm2(x + self.ff(x))


class Bert(nn.Module):
    def __init__(self, params: dict[str, Any]):
        super().__init__()
        hidden = params["hidden"]
        self.words = nn.Embedding(params["vocab"], hidden)
        self.positions = nn.Embedding(params["seq_len"], hidden)
        self.norm = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(EncoderLayer(hidden, params["heads"]) for _ in range(params["layers"]))
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, params["classes"])
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)  # BERT's initializer range

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device)
        x = self.norm(self.words(input_ids) + self.positions(positions))
        # Additive mask: 0 where attended, the dtype's minimum where padded; [batch, 1, 1, length] broadcasts.
        keep = attention_mask[:, None, None, :].to(x.dtype)
        bias = (1.0 - keep) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(pooled)


def build(params: dict[str, Any]) -> nn.Module:
    check_heads("bert", params)
    torch.manual_seed(0)
    return Bert(params).eval()


def example_inputs(batch: int, params: dict[str, Any], spec_generation: Any = None) -> tuple[torch.Tensor, ...]:
    """Token ids, and a mask that attends everywhere except a deterministic tail of padding on odd rows."""
    length = params["seq_len"]
    ids = _common.token_ids(batch, length, params["vocab"])
    mask = torch.ones(batch, length, dtype=torch.int64)
    mask[1::2, length - length // 4:] = 0  # odd rows padded by a quarter: real, unequal lengths, never empty
    return ids, mask


def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
    return catalog.input_specs("bert", params, spec_generation)


def training_loss(params: dict[str, Any], inputs: tuple[torch.Tensor, ...]) -> Callable[[Any], torch.Tensor]:
    return _common.classification_loss(inputs[0].shape[0], params["classes"])
