"""What every backend hands the scenario: a ready-to-call model and facts about its loading."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TokenGenerator:
    """Greedy decoding for a decoder model, for the `generate` scenario.

    `prefill()` runs the prompt and picks the first token, `decode_step(state)` feeds the last token with
    the KV cache and picks the next one; both return an opaque state and, like `infer`, block until the
    work is done, so one perf_counter pair around each call is the time to first token / per output token.
    """

    prefill: Callable[[], Any]
    decode_step: Callable[[Any], Any]
    prompt_tokens: int
    output_tokens: int
    tokens: Callable[[Any], list[list[int]]] = lambda state: []  # the tokens so far (for checks, not timed)
    # prefill_cached(token_ids, past) -> (state, present): prefill one prompt (a list of ids) after the KV cache
    # `past` of its prefix (None: the whole prompt); the state feeds decode_step, `present` is the prompt's whole
    # cache. None: this engine cannot (the generate scenario's --kv-offload needs it; engines.kvcache).
    prefill_cached: Callable[[list[int], Any], tuple[Any, Any]] | None = None


@dataclass
class LoadedModel:
    """A model ready to run: `infer()` runs one inference on the prepared input and waits for it to finish.

    `infer` must block until the result is really computed (synchronise the device), so that a
    perf_counter pair around it measures the work and not just the launch.
    """

    infer: Callable[[], Any]
    load_s: float
    params: int
    model_bytes: int
    versions: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] = lambda: None
    generator: TokenGenerator | None = None  # set for decoder models (see the generate scenario)
    # Copies host arrays (numpy, by input name, full batch shape) into the buffers `infer` reads, casting and
    # moving them to the device; inputs not named keep their values. None: this engine cannot take fed data
    # (the input-pipeline scenario needs it).
    feed: Callable[[Mapping[str, Any]], None] | None = None
    # The engine's own profiler over `iterations` more calls of `infer`, writing a Chrome trace at `trace_path`:
    # returns the profile event's fields (engines.profiling.profile_event). None: this engine cannot profile.
    profile: Callable[[int, str | None], dict[str, Any]] | None = None
