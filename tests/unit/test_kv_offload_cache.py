"""The prefix cache's keys, prompts and tiers (engines.kvcache.prefix_cache), on numpy payloads and host RAM."""

import numpy as np
import pytest

from engines.kvcache.block_store import RamStore
from engines.kvcache.prefix_cache import PrefixCache, PromptDraw, block_keys


def test_block_keys_are_chained_so_a_key_names_the_whole_prefix():
    tokens = list(range(40))
    keys = block_keys(tokens, 8)
    assert len(keys) == 5 and len(set(keys)) == 5
    assert block_keys(tokens[:20], 8) == keys[:2]  # the part block (4 tokens) has no key
    changed = block_keys([99] + tokens[1:], 8)
    assert all(a != b for a, b in zip(keys, changed, strict=True))  # block 0 differs: every later key differs
    later = block_keys(tokens[:16] + [99] + tokens[17:], 8)
    assert later[:2] == keys[:2] and all(a != b for a, b in zip(keys[2:], later[2:], strict=True))
    assert block_keys(list(range(8, 16)), 8) != [keys[1]]  # the same tokens at another place are another block


def test_prompt_draw_is_seeded_and_repeats_at_its_rate():
    def prompts(rate, seed=7, count=400):
        draw = PromptDraw(vocab=1000, prompt_tokens=24, shared_tokens=16, repeat_rate=rate, seed=seed)
        return [draw.next() for _ in range(count)], draw

    first, draw = prompts(0.5)
    assert prompts(0.5)[0] == first and prompts(0.5, seed=8)[0] != first
    assert all(len(p) == 24 for p in first)
    prefixes = [tuple(p[:16]) for p in first]
    repeated = sum(prefix in prefixes[:index] for index, prefix in enumerate(prefixes))
    assert repeated == draw.repeats and 0.4 < draw.repeats / 400 < 0.6
    assert len({tuple(p[16:]) for p in first}) == 400  # the rest of every prompt is fresh
    none, _ = prompts(0.0, count=50)
    assert len({tuple(p[:16]) for p in none}) == 50
    every, draw = prompts(1.0, count=50)
    assert {tuple(p[:16]) for p in every} == {tuple(every[0][:16])} and draw.repeats == 49 and draw.last_repeated
    with pytest.raises(ValueError, match="shared_tokens"):
        PromptDraw(vocab=10, prompt_tokens=8, shared_tokens=8, repeat_rate=0.5, seed=0)


def _cache(budget_blocks: float, store=None) -> tuple[PrefixCache, RamStore]:
    store = store or RamStore()
    block = np.zeros(4, np.float32)  # 16 bytes a block
    cache = PrefixCache(int(budget_blocks * block.nbytes), store, to_host=lambda a: a, from_host=lambda a: a,
                        size_of=lambda a: a.nbytes)
    return cache, store


def _block(value: float) -> np.ndarray:
    return np.full(4, value, np.float32)


def test_a_zero_budget_spills_every_block_once_and_serves_it_back_from_the_target():
    cache, store = _cache(0)
    cache.insert("a", _block(1))
    cache.insert("b", _block(2))
    assert len(store.write_ns) == 2 and not cache.memory and cache.memory_bytes == 0
    found = cache.lookup(["a", "b", "c"])
    assert found.tiers == ["storage", "storage"] and found.served == 2 and len(store.read_ns) == 2
    assert [float(p[0]) for p in found.payloads] == [1.0, 2.0]
    for key, payload in found.loaded:  # promoted, then evicted again: already on the target, so dropped clean
        cache.insert(key, payload, promoted=True)
    assert len(store.write_ns) == 2 and cache.counts["dropped_clean"] == 2 and cache.counts["promoted"] == 2
    assert {k: cache.counts[k] for k in ("looked_up", "storage_hits", "misses", "memory_hits")} == {
        "looked_up": 3, "storage_hits": 2, "misses": 1, "memory_hits": 0}
    assert cache.hit_rate() == pytest.approx(2 / 3)
    assert store.bytes_written == 32 and store.bytes_read == 32


def test_the_least_recently_used_block_spills_first_and_memory_hits_write_nothing():
    cache, store = _cache(2)
    cache.insert("a", _block(1))
    cache.insert("b", _block(2))
    assert not store.write_ns
    assert cache.lookup(["a"]).tiers == ["memory"]  # a is now the most recent
    cache.insert("c", _block(3))  # over budget: b, the least recent, goes
    assert cache.on_target == {"b"} and list(cache.memory) == ["a", "c"]
    found = cache.lookup(["a", "b", "c"])
    assert found.tiers == ["memory", "storage", "memory"]


def test_a_lookup_stops_at_the_first_block_held_nowhere():
    cache, _ = _cache(10)
    cache.insert("a", _block(1))
    cache.insert("c", _block(3))
    found = cache.lookup(["a", "b", "c"])  # c is useless without b
    assert found.served == 1 and cache.counts["misses"] == 2
    assert PrefixCache(0, RamStore(), None, None, None).hit_rate() is None
