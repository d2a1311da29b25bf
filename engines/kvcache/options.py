"""The generate scenario's KV-offload options: one dataclass of described fields (engines.options).

Standard library only: the console builds the flags and the run form from it without importing an engine.
The directory is checked where the run happens (a Ray node writes its own disks), not when the spec is validated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engines.options import SpecError, option

if TYPE_CHECKING:
    from engines.spec import RunSpec

RAM = "ram"
DEFAULT_BLOCK_TOKENS = 16  # vLLM's default block size
DEFAULT_REPEAT_RATE = 0.5
DEFAULT_SEED = 42  # MLPerf Storage's KV-cache invocations use --seed 42


@dataclass
class KvOffloadOptions:
    kv_offload: str | None = option(
        None, flag="--kv-offload", metavar="DIR|ram", label="KV cache offload",
        help="generate: keep a prefix cache of KV blocks and spill the blocks beyond --kv-budget-mb to DIR (one "
             ".npy file per block, fsync'd, read back cold where the OS allows) or to host RAM (ram); prompts "
             "then share prefixes at --kv-repeat-rate, and time to first token is measured served vs recomputed")
    kv_budget_mb: float = option(
        0.0, flag="--kv-budget-mb", metavar="MB", minimum=0, maximum=10_000_000, unit="MB",
        label="KV memory budget (MB)",
        help="generate with --kv-offload: the KV blocks kept in the model's memory (MB = 10^6 bytes); the least "
             "recently used beyond it spill (default 0: every block goes to the offload target)")
    kv_block_tokens: int = option(
        DEFAULT_BLOCK_TOKENS, flag="--kv-block-tokens", metavar="N", maximum=4096, label="KV block (tokens)",
        help=f"generate with --kv-offload: tokens per KV block, the unit that is hashed, spilled and read "
             f"(default {DEFAULT_BLOCK_TOKENS}); the prompt must be longer than one block")
    kv_repeat_rate: float = option(
        DEFAULT_REPEAT_RATE, flag="--kv-repeat-rate", metavar="R", minimum=0, maximum=1, label="Prefix repeat rate",
        help=f"generate with --kv-offload: the share of requests whose prompt repeats an earlier prompt's prefix "
             f"(0..1, default {DEFAULT_REPEAT_RATE:g}); the rest start a new prefix")
    kv_seed: int = option(DEFAULT_SEED, flag="--kv-seed", metavar="N", minimum=0, label="Prompt seed",
                          help=f"generate with --kv-offload: seed of the prompt draw (default {DEFAULT_SEED}); "
                               "the same seed draws the same prompts")
    kv_write_p95_ms: float | None = option(
        None, flag="--kv-write-p95-ms", metavar="MS", maximum=3_600_000, unit="ms", label="Write p95 bound (ms)",
        help="generate with --kv-offload: the bound on the offload target's write p95 (default: MLPerf Storage's "
             "KV-cache bound, 500 ms for a directory, 150 ms for ram)")
    kv_read_p95_ms: float | None = option(
        None, flag="--kv-read-p95-ms", metavar="MS", maximum=3_600_000, unit="ms", label="Read p95 bound (ms)",
        help="generate with --kv-offload: the bound on the offload target's read p95 (default: MLPerf Storage's "
             "KV-cache bound, 200 ms for a directory, 150 ms for ram)")
    kv_min_hit_rate: float | None = option(
        None, flag="--kv-min-hit-rate", metavar="R", minimum=0, maximum=1, label="Minimum hit rate",
        help="generate with --kv-offload: the least prefix-cache hit rate that passes (0..1; default MLPerf "
             "Storage's KV-cache bound, 0.3)")

    def check(self, spec: RunSpec) -> None:
        if not self.kv_offload:
            given = [name for name, default in _TUNING.items() if getattr(self, name) != default]
            if given:
                raise SpecError(f"scenario_options.{given[0]}", "applies to a KV cache on storage: add "
                                "--kv-offload DIR (or --kv-offload ram), or drop it")
            return
        if not self.kv_offload.strip():
            raise SpecError("scenario_options.kv_offload", "give a directory to spill KV blocks to, or ram")
        if spec.engine != "torch":
            raise SpecError("scenario_options.kv_offload", f"the KV cache on storage runs on the PyTorch engine "
                            f"(it prefills with a cached prefix); use --engine torch, not {spec.engine}")
        if spec.batch != 1:
            raise SpecError("scenario_options.kv_offload", f"the KV cache serves one prompt at a time; use "
                            f"--batch 1 with --kv-offload, not {spec.batch}")
        prompt = spec.generation.prompt_tokens
        if prompt <= self.kv_block_tokens:
            raise SpecError("scenario_options.kv_block_tokens", f"a prompt of {prompt} tokens holds no whole "
                            f"{self.kv_block_tokens}-token block before its last token; raise --prompt-tokens "
                            f"above {self.kv_block_tokens} or lower --kv-block-tokens")


# the options that only mean something with --kv-offload, and their defaults
_TUNING = {"kv_budget_mb": 0.0, "kv_block_tokens": DEFAULT_BLOCK_TOKENS, "kv_repeat_rate": DEFAULT_REPEAT_RATE,
           "kv_seed": DEFAULT_SEED, "kv_write_p95_ms": None, "kv_read_p95_ms": None, "kv_min_hit_rate": None}
