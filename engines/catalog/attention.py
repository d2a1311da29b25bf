"""The projections bert's and gpt's self-attention share (imports torch).

One Linear makes q, k and v for every head at once (`qkv`), one brings the heads back to the hidden size
(`out`); the attention between them (masked, causal, cached) is each family's own.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class HeadsProjection(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[batch, length, hidden] → q, k, v stacked: [3, batch, heads, length, hidden / heads]."""
        batch, length, hidden = x.shape
        return self.qkv(x).view(batch, length, 3, self.heads, hidden // self.heads).permute(2, 0, 3, 1, 4)

    def merge_heads(self, y: torch.Tensor, batch: int, length: int, hidden: int) -> torch.Tensor:
        """[batch, heads, length, hidden / heads] → the output projection of [batch, length, hidden]."""
        return self.out(y.transpose(1, 2).reshape(batch, length, hidden))


def check_heads(family: str, params: dict[str, Any]) -> None:
    """Refuse a hidden size the heads cannot split evenly (ValueError naming `family`), before any weight is made."""
    if params["hidden"] % params["heads"]:
        raise ValueError(f"{family}: hidden ({params['hidden']}) must be a multiple of heads ({params['heads']})")
