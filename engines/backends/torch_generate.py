"""The PyTorch backend's token generator: greedy prefill and decode with the KV cache, for the generate scenario."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engines.backends.base import TokenGenerator
from engines.spec import RunSpec


def generator(torch, spec: RunSpec, prepared: Any, synchronize: Callable[[], None]) -> TokenGenerator | None:
    """Greedy prefill + decode for decoder models in inference mode; None for everything else.

    `prepared`: the backend's prepared model (its call, inputs, catalog family and whether it is a decoder)."""
    if not prepared.decoder or spec.mode != "inference":
        return None
    greedy = prepared.family.greedy
    prompt = prepared.inputs[0]

    def prefill():
        with torch.inference_mode():
            logits, past = prepared.call(prompt)
            token = greedy(logits)
        synchronize()
        return token, past, [token]

    def decode_step(state):
        token, past, seen = state
        with torch.inference_mode():
            logits, past = prepared.call(token, past)
            token = greedy(logits)
        synchronize()
        seen.append(token)
        return token, past, seen

    def tokens(state) -> list[list[int]]:
        return torch.cat(state[2], dim=1).tolist()

    def prefill_cached(ids: list[int], past):
        """One prompt's prefill after its cached prefix `past` (engines.kvcache): the ids become a [1, n] tensor."""
        with torch.inference_mode():
            logits, present = prepared.call(torch.tensor([ids], dtype=torch.long, device=prompt.device), past)
            token = greedy(logits)
        synchronize()
        return (token, present, [token]), present

    return TokenGenerator(prefill=prefill, decode_step=decode_step, prompt_tokens=int(prompt.shape[1]),
                          output_tokens=spec.generation.output_tokens, tokens=tokens, prefill_cached=prefill_cached)
