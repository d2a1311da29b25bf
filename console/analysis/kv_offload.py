"""A generate run's KV cache on storage in words: the lines the CLI, the Markdown summary and the report show.

Why one place: the block (engines/kvcache, the result's `kv_offload`, kept in the summary's scenario block) is
judged in the worker; the console only says it — the same sentences on every surface, each figure with its unit,
"—" or "not available (why)" for what was not measured, the bounds with where they came from. Qt-free, pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MISSING = "—"


# ---- Public API
def block_of(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `kv_offload` block of a run's summary (its scenario block), None for a run without one."""
    scenario = summary.get("scenario") if isinstance(summary, Mapping) else None
    block = scenario.get("kv_offload") if isinstance(scenario, Mapping) else None
    return block if isinstance(block, Mapping) else None


def lines(block: Mapping[str, Any]) -> list[str]:
    """Plain-text lines: where and how much, hit rate, TTFT served vs recomputed, latencies, bytes, the verdict."""
    where = "host RAM" if block.get("target") == "ram" else \
        f"{block.get('path')} ({block.get('filesystem') or 'file system unknown'})"
    out = [f"offload to {where}, memory budget {_num(block.get('budget_mb'))} MB, "
           f"{block.get('block_tokens')}-token blocks of {_bytes(block.get('block_bytes'))}, "
           f"prefix repeat rate {_num(block.get('repeat_rate'))} (seed {block.get('seed')})"]
    out.append(f"hit rate {_pct(block.get('hit_rate'))} of {block.get('blocks_looked_up')} blocks looked up "
               f"({block.get('blocks_hit_memory')} from memory, {block.get('blocks_hit_target')} from the target)")
    hit, recompute = block.get("ttft_hit_ms"), block.get("ttft_recompute_ms")
    if hit is None:
        out.append(f"time to first token served from the target: {block.get('ttft_hit_reason') or 'not available'}")
    else:
        speed = block.get("ttft_speedup")
        verdict = "" if not speed else (f" — serving is {speed:.2f}× faster" if speed >= 1 else
                                        f" — recomputing is {1 / speed:.2f}× faster")
        out.append(f"time to first token p50: served from the target {_ms(hit)}, recomputed {_ms(recompute)} "
                   f"({block.get('requests_served_from_target')} requests, the same prompts){verdict}")
    compared = block.get("first_token_compared") or 0
    if compared:
        out.append(f"first token served = recomputed in {block.get('first_token_agrees')} of {compared} requests")
    for name in ("write", "read"):
        figures = block.get(f"{name}_ms") or {}
        out.append(f"{name} latency p50 {_ms(figures.get('p50'))}, p95 {_ms(figures.get('p95'))}, "
                   f"p99 {_ms(figures.get('p99'))} over {figures.get('n', 0)} blocks")
    out.append(f"moved {_bytes(block.get('bytes_written'))} written, {_bytes(block.get('bytes_read'))} read; "
               f"reads {block.get('read_cache_state')}: {block.get('read_cache_reason')}")
    out.append(judgement_line(block.get("judgement") or {}))
    return out


def judgement_line(verdict: Mapping[str, Any]) -> str:
    """PASSED / FAILED (each failed rule) / NOT JUDGED (why), then the bounds and whose they are."""
    bounds = verdict.get("bounds") or {}
    sources = set((bounds.get("sources") or {}).values())
    whose = "; ".join(sorted(sources)) if sources else "unknown"
    limits = (f"write p95 < {_num(bounds.get('write_p95_ms'))} ms, read p95 < {_num(bounds.get('read_p95_ms'))} ms, "
              f"hit rate > {_pct(bounds.get('min_hit_rate'))}")
    if verdict.get("passed") is None:
        head = "NOT JUDGED"
    else:
        head = "PASSED" if verdict["passed"] else "FAILED: " + "; ".join(
            str(rule.get("text")) for rule in verdict.get("failed_rules") or [])
    unjudged = "; ".join(f"{rule.get('rule')} not judged ({rule.get('reason')})"
                         for rule in verdict.get("unjudged_rules") or [])
    return f"{head} — bounds {limits} ({whose})" + (f"; {unjudged}" if unjudged else "")


def table_rows(block: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) rows for a report table."""
    rows = [("Target", "host RAM" if block.get("target") == "ram" else
             f"{block.get('path')} ({block.get('filesystem') or '?'}), reads {block.get('read_cache_state')}"),
            ("Memory budget", f"{_num(block.get('budget_mb'))} MB"),
            ("Block", f"{block.get('block_tokens')} tokens, {_bytes(block.get('block_bytes'))}"),
            ("Hit rate", _pct(block.get("hit_rate"))),
            ("TTFT served from the target (p50)", _ms(block.get("ttft_hit_ms"))),
            ("TTFT recomputed, same prompts (p50)", _ms(block.get("ttft_recompute_ms")))]
    for name in ("write", "read"):
        figures = block.get(f"{name}_ms") or {}
        rows.append((f"{name.capitalize()} latency p50 / p95 / p99",
                     f"{_ms(figures.get('p50'))} / {_ms(figures.get('p95'))} / {_ms(figures.get('p99'))} "
                     f"(n = {figures.get('n', 0)})"))
    rows += [("Bytes written / read", f"{_bytes(block.get('bytes_written'))} / {_bytes(block.get('bytes_read'))}"),
             ("Judgement", judgement_line(block.get("judgement") or {}))]
    return rows


# ---- Private API
def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else MISSING


def _ms(value: Any) -> str:
    return f"{value:.3g} ms" if isinstance(value, (int, float)) else MISSING


def _pct(value: Any) -> str:
    return f"{value:.0%}" if isinstance(value, (int, float)) else MISSING


def _bytes(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return MISSING
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{int(value)} bytes"
