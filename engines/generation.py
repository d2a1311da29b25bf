"""Decoder generation options (prompt and output tokens): a RunSpec part that engines.catalog reads too.

Its own module because engines.spec imports the catalog: the catalog importing engines.spec back was a circle.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.options import option


@dataclass
class GenerationOptions:
    """For decoder models: prompt length and how many tokens to generate (TTFT and TPOT)."""

    prompt_tokens: int = option(32, flag="--prompt-tokens", maximum=1_000_000, label="Prompt tokens",
                                help="generate: prompt length")
    output_tokens: int = option(32, flag="--output-tokens", maximum=1_000_000, label="Output tokens",
                                help="generate: tokens to generate")
