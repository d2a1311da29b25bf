"""Prompts that share prefixes, block keys, and the two-tier prefix cache with its hit/miss bookkeeping.

Blocks and keys: a prompt's first `cacheable` tokens are cut into blocks of `block_tokens`; block i's key is a hash
of block i-1's key and block i's tokens (vLLM's prefix-caching key), so a key names the whole prefix up to the end
of its block, and equal keys mean equal keys and values. Only whole blocks before the prompt's last token are
cached: the last token is always computed, since its logits pick the first output token.

The cache: a memory tier (the model's own memory, `budget_bytes`, least recently used first out) above an offload
target (engines.kvcache.block_store). A block evicted from memory is written to the target once (a block already
there is dropped clean); a block read back is promoted into memory. A lookup walks the prompt's keys in order and
stops at the first block held nowhere — later blocks cannot be used without the earlier ones — so
hit rate = blocks served (either tier) ÷ blocks looked up, the share of cacheable prefill the cache saved.

Pure Python over opaque block payloads (the session passes tensors, the unit tests numpy arrays): the conversions
to and from host arrays and the payload's size are the caller's callables.
"""

from __future__ import annotations

import hashlib
import random
import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ROOT_KEY = b"labconsole-kv-v1"


# ---- Public API
def block_keys(tokens: list[int], block_tokens: int) -> list[str]:
    """One key per whole block of `tokens` (a trailing part block has none): sha256 of the parent key and the
    block's token ids, hex; chained, so equal keys mean equal prefixes."""
    keys, parent = [], ROOT_KEY
    for start in range(0, len(tokens) - block_tokens + 1, block_tokens):
        block = tokens[start:start + block_tokens]
        digest = hashlib.sha256(parent + struct.pack(f"<{len(block)}q", *block)).digest()
        keys.append(digest.hex()[:40])
        parent = digest
    return keys


class PromptDraw:
    """Prompts of `prompt_tokens` tokens from a fixed seed: with probability `repeat_rate` a request reuses the
    first `shared_tokens` of an earlier prompt (drawn uniformly from those seen), else it starts a new prefix; the
    rest of every prompt is fresh. The same seed draws the same prompts, so runs are comparable."""

    def __init__(self, vocab: int, prompt_tokens: int, shared_tokens: int, repeat_rate: float, seed: int):
        if not 0 < shared_tokens < prompt_tokens:
            raise ValueError(f"shared_tokens ({shared_tokens}) must be between 1 and prompt_tokens - 1 "
                             f"({prompt_tokens - 1})")
        self.vocab, self.prompt_tokens, self.shared_tokens, self.repeat_rate = vocab, prompt_tokens, shared_tokens, \
            repeat_rate
        self._random = random.Random(seed)
        self._prefixes: list[list[int]] = []
        self.repeats = 0
        self.last_repeated = False

    def next(self) -> list[int]:
        draw = self._random
        self.last_repeated = bool(self._prefixes) and draw.random() < self.repeat_rate
        if self.last_repeated:
            prefix = self._prefixes[draw.randrange(len(self._prefixes))]
            self.repeats += 1
        else:
            prefix = [draw.randrange(self.vocab) for _ in range(self.shared_tokens)]
            self._prefixes.append(prefix)
        return prefix + [draw.randrange(self.vocab) for _ in range(self.prompt_tokens - self.shared_tokens)]


@dataclass
class Lookup:
    """What one prompt found: the payloads of its served prefix in order, where each came from, and the blocks read
    from the target (to promote into memory after the request)."""

    payloads: list[Any] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)  # "memory" | "storage" per served block
    loaded: list[tuple[str, Any]] = field(default_factory=list)
    looked_up: int = 0

    @property
    def served(self) -> int:
        return len(self.payloads)

    @property
    def from_storage(self) -> int:
        return self.tiers.count("storage")


class PrefixCache:
    """The memory tier (an LRU of payloads within `budget_bytes`) over a block store; counts every outcome."""

    def __init__(self, budget_bytes: int, store: Any, to_host: Callable[[Any], Any],
                 from_host: Callable[[Any], Any], size_of: Callable[[Any], int]):
        self.budget_bytes = budget_bytes
        self.store, self.to_host, self.from_host, self.size_of = store, to_host, from_host, size_of
        self.memory: OrderedDict[str, Any] = OrderedDict()
        self.memory_bytes = 0
        self.on_target: set[str] = set()
        self.counts = {"looked_up": 0, "memory_hits": 0, "storage_hits": 0, "misses": 0, "inserted": 0,
                       "spilled": 0, "dropped_clean": 0, "promoted": 0}

    def lookup(self, keys: list[str]) -> Lookup:
        """The longest served prefix of `keys`: memory hits refresh their recency; target hits are read (timed by
        the store) and converted back, to be promoted by `insert` after the request."""
        found = Lookup(looked_up=len(keys))
        for key in keys:
            if key in self.memory:
                self.memory.move_to_end(key)
                found.payloads.append(self.memory[key])
                found.tiers.append("memory")
            elif key in self.on_target:
                payload = self.from_host(self.store.get(key))
                found.payloads.append(payload)
                found.tiers.append("storage")
                found.loaded.append((key, payload))
            else:
                break
        self.counts["looked_up"] += len(keys)
        self.counts["memory_hits"] += found.served - found.from_storage
        self.counts["storage_hits"] += found.from_storage
        self.counts["misses"] += len(keys) - found.served
        return found

    def insert(self, key: str, payload: Any, promoted: bool = False) -> None:
        """Put a block in memory (a new one, or one read back), then spill what the budget cannot hold."""
        if key in self.memory:
            return
        self.memory[key] = payload
        self.memory_bytes += self.size_of(payload)
        self.counts["promoted" if promoted else "inserted"] += 1
        while self.memory_bytes > self.budget_bytes and self.memory:
            old_key, old = self.memory.popitem(last=False)
            self.memory_bytes -= self.size_of(old)
            if old_key in self.on_target:
                self.counts["dropped_clean"] += 1
            else:
                self.store.put(old_key, self.to_host(old))
                self.on_target.add(old_key)
                self.counts["spilled"] += 1

    def hit_rate(self) -> float | None:
        looked = self.counts["looked_up"]
        return (self.counts["memory_hits"] + self.counts["storage_hits"]) / looked if looked else None
