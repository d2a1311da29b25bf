"""A KV cache on storage around a loaded decoder's generator, for the generate scenario's measured requests.

Per request (`prefill`, what the scenario times as time to first token): draw the next prompt, look its prefix
blocks up (memory tier, then the offload target — reads happen here, on the critical path, as they would in a
server), join the served blocks into the past cache and prefill only the rest of the prompt. After the request
(`after_request`, outside every timed span, its time handed back so the scenario leaves it out of measured time):
the prompt's new blocks and the blocks read back go into the memory tier — what the budget cannot hold is written
to the target then (a server writes behind, off the critical path) — and, when part of the prefix was served, the
same prompt is prefilled again with the cache disabled, timed: its recompute time, beside the served one, and its
first token, which must equal the served one (a check that the cached keys and values are the right ones).

Imported only in the worker (it handles PyTorch tensors; torch is imported where a function needs it).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from engines.kvcache import block_store, judge
from engines.kvcache.prefix_cache import PrefixCache, PromptDraw, block_keys

MB = 1_000_000
METHOD = ("Prompts share prefixes at the repeat rate (fixed seed); each prompt's whole blocks before its last token "
          "are keyed by a chained hash of their tokens and looked up in a memory tier (the budget, LRU) over the "
          "offload target. Served blocks are joined into the past cache and only the rest of the prompt is "
          "prefilled: that time to first token (ttft_hit_ms: requests with at least one block read from the "
          "target) is measured, and the same prompt is prefilled again without the cache right after the request "
          "(ttft_recompute_ms, the same requests). Blocks beyond the budget are written after the request (one .npy "
          "file per block, fsync'd, then dropped from the page cache; or a copy in host RAM); write_ms and read_ms "
          "time the storage operation only (open to fsync/close, open to parsed array), not the copy to the "
          "device. Medians and numpy percentiles; the bounds' sources are in judgement.bounds.sources.")


class KvSession:
    def __init__(self, generator: Any, options: Any, vocab: int):
        if generator.prefill_cached is None:
            raise RuntimeError("this engine cannot prefill after a cached prefix; run --kv-offload on --engine torch")
        self.generator, self.options = generator, options
        self.block_tokens = options.kv_block_tokens
        prompt = generator.prompt_tokens
        self.cacheable = (prompt - 1) // self.block_tokens * self.block_tokens
        self.draw = PromptDraw(vocab, prompt, self.cacheable, options.kv_repeat_rate, options.kv_seed)
        self.store = block_store.open_store(options.kv_offload)
        self.cache = PrefixCache(int(options.kv_budget_mb * MB), self.store, self._to_host, self._from_host,
                                 _size_of)
        self._template: Any = None  # a block of this run's device and dtype (set by the first prefill)
        self._pending: tuple | None = None
        self.requests: list[dict[str, Any]] = []
        self.side_ns = 0
        self.repeats = 0  # prompts used that repeat a prefix (one more is always drawn ahead)
        self._warm(vocab, prompt)
        self._next = self.draw.next()  # drawn ahead, outside the timed prefill: the prompt arrives, it is not made

    # ---- the scenario's hooks
    def prefill(self) -> Any:
        """One measured request's prefill: look up, read, join, prefill the rest. Returns the decode state."""
        import torch

        ids, repeated = self._next, self.draw.last_repeated
        start = time.perf_counter_ns()
        keys = block_keys(ids[:self.cacheable], self.block_tokens)  # hashing the arriving prompt is serving work
        found = self.cache.lookup(keys)
        with torch.inference_mode():
            past = torch.cat(found.payloads, dim=-2) if found.payloads else None
        state, present = self.generator.prefill_cached(ids[found.served * self.block_tokens:], past)
        ttft_ns = time.perf_counter_ns() - start
        self._pending = (ids, keys, found, present, state[0], ttft_ns)
        self.repeats += repeated
        return state

    def after_request(self) -> int:
        """File the request's blocks (spilling beyond the budget) and time its recompute; returns the ns it took."""
        import torch

        if self._pending is None:
            return 0
        began = time.perf_counter_ns()
        ids, keys, found, present, token, ttft_ns = self._pending
        self._pending = None
        with torch.inference_mode():
            for key, payload in found.loaded:
                self.cache.insert(key, payload, promoted=True)
            for index in range(found.served, len(keys)):
                start = index * self.block_tokens
                self.cache.insert(keys[index], present[..., start:start + self.block_tokens, :].clone())
        record = {"served_blocks": found.served, "storage_blocks": found.from_storage, "ttft_ns": ttft_ns}
        if found.served:
            start = time.perf_counter_ns()
            (again, _, _), _ = self.generator.prefill_cached(ids, None)
            record["recompute_ns"] = time.perf_counter_ns() - start
            record["same_token"] = bool(torch.equal(again, token))
        self.requests.append(record)
        self._next = self.draw.next()
        spent = time.perf_counter_ns() - began
        self.side_ns += spent
        return spent

    def finish(self) -> dict[str, Any]:
        """The result's `kv_offload` block (and the store removed)."""
        try:
            return self._figures()
        finally:
            self.close()

    def close(self) -> None:
        self.store.close()

    # ---- Private API
    def _figures(self) -> dict[str, Any]:
        options, counts, store = self.options, self.cache.counts, self.store
        from_storage = [r for r in self.requests if r["storage_blocks"]]
        memory_only = [r for r in self.requests if r["served_blocks"] and not r["storage_blocks"]]
        misses = [r for r in self.requests if not r["served_blocks"]]
        compared = [r for r in self.requests if "same_token" in r]
        hit_ms = _median_ms(from_storage, "ttft_ns")
        recompute_ms = _median_ms(from_storage, "recompute_ns")
        write_ms, read_ms = judge.latency_ms(store.write_ns), judge.latency_ms(store.read_ns)
        hit_rate = self.cache.hit_rate()
        bound = judge.bounds(store.target, options.kv_write_p95_ms, options.kv_read_p95_ms, options.kv_min_hit_rate)
        block = {
            **store.describe(),
            "budget_mb": options.kv_budget_mb, "block_tokens": self.block_tokens,
            "block_bytes": self._block_bytes(), "cacheable_tokens": self.cacheable,
            "repeat_rate": options.kv_repeat_rate, "seed": options.kv_seed,
            "requests": len(self.requests), "requests_repeating": self.repeats,
            "requests_served_from_target": len(from_storage), "requests_served_from_memory": len(memory_only),
            "blocks_looked_up": counts["looked_up"], "blocks_hit_memory": counts["memory_hits"],
            "blocks_hit_target": counts["storage_hits"], "blocks_missed": counts["misses"],
            "blocks_written": len(store.write_ns), "blocks_read": len(store.read_ns),
            "hit_rate": hit_rate,
            "ttft_hit_ms": hit_ms, "ttft_recompute_ms": recompute_ms,
            "ttft_speedup": recompute_ms / hit_ms if hit_ms and recompute_ms else None,
            "ttft_hit_memory_ms": _median_ms(memory_only, "ttft_ns"), "ttft_miss_ms": _median_ms(misses, "ttft_ns"),
            "first_token_agrees": sum(r["same_token"] for r in compared), "first_token_compared": len(compared),
            "write_ms": write_ms, "read_ms": read_ms,
            "bytes_written": store.bytes_written, "bytes_read": store.bytes_read,
            "side_work_s": self.side_ns / 1e9,
            "method": METHOD,
        }
        if hit_ms is None:
            block["ttft_hit_reason"] = ("not available: no request was served a block from the target (raise "
                                        "--kv-repeat-rate, lower --kv-budget-mb, or run more requests)")
        block["judgement"] = judge.judge(write_ms, read_ms, hit_rate, bound)
        return block

    def _warm(self, vocab: int, prompt: int) -> None:
        """Run the cached-prefix path once before measuring (its first call is slower), keep nothing."""
        ids = [index % vocab for index in range(prompt)]
        _, present = self.generator.prefill_cached(ids[:self.block_tokens], None)
        self.generator.prefill_cached(ids[self.block_tokens:], present)
        self._template = present[..., :self.block_tokens, :]

    def _block_bytes(self) -> int | None:
        return _size_of(self._template) if self._template is not None else None

    def _to_host(self, payload: Any) -> Any:
        import torch

        tensor = payload.detach().to("cpu")
        if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16: the same 16 bits as int16, viewed back on read
            tensor = tensor.view(torch.int16)
        return tensor.contiguous().numpy()

    def _from_host(self, array: Any) -> Any:
        import torch

        tensor = torch.from_numpy(array)
        if self._template.dtype == torch.bfloat16:
            tensor = tensor.view(torch.bfloat16)
        return tensor.to(device=self._template.device, dtype=self._template.dtype)


def start(generator: Any, options: Any, vocab: int) -> KvSession:
    return KvSession(generator, options, vocab)


def _size_of(payload: Any) -> int:
    return payload.numel() * payload.element_size()


def _median_ms(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if key in r]
    return statistics.median(values) / 1e6 if values else None
