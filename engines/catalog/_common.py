"""Helpers the catalog's family modules share: seeded inputs and training targets (imports torch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn import functional as F

INPUT_SEED = 1
TARGET_SEED = 2


def generator(seed: int = INPUT_SEED) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def token_ids(batch: int, length: int, vocab: int, seed: int = INPUT_SEED) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=generator(seed), dtype=torch.int64)


def classification_loss(batch: int, classes: int) -> Callable[[Any], torch.Tensor]:
    """Cross-entropy of [batch, classes] logits against fixed random labels (the same on every run)."""
    return cross_entropy_against(torch.randint(0, classes, (batch,), generator=generator(TARGET_SEED),
                                               dtype=torch.int64))


def cross_entropy_against(labels: torch.Tensor) -> Callable[[Any], torch.Tensor]:
    """Cross-entropy of [batch, classes] logits against `labels`, copied once to each device the logits are on."""
    moved: dict[torch.device, torch.Tensor] = {}

    def loss(logits: torch.Tensor) -> torch.Tensor:
        target = moved.get(logits.device)
        if target is None:
            target = moved[logits.device] = labels.to(logits.device)
        return F.cross_entropy(logits.float(), target)

    return loss
