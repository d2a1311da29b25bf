"""KV cache on storage: the generate scenario's prefix cache whose blocks spill beyond a memory budget.

Why: long prompts that share a prefix (a system prompt, a document, a conversation so far) need not be prefilled
again if the prefix's keys and values are kept — and when device memory cannot keep them, inference servers
(vLLM's prefix cache with LMCache, FlexGen) spill them to host RAM or an SSD and read them back. Whether that is
faster than recomputing, and whether the storage path is fast enough, is what `--kv-offload` measures.

Modules, one job each:
- options.py      the scenario options (`--kv-offload DIR|ram`, `--kv-budget-mb`, …); standard library only, so
                  the console reads them without an engine;
- prefix_cache.py the prompts (shared prefixes at a repeat rate, fixed seed), the block keys (a chained hash of
                  the token prefix, as vLLM keys its blocks) and the two-tier cache with its hit/miss counts;
- block_store.py  where spilled blocks go: one .npy file per block in a directory (fsync'd, timed, dropped from
                  the page cache so a read is cold where the OS allows) or host RAM; never pickled;
- judge.py        the bounds (MLPerf Storage's KV-cache workload's, as the lab's defaults) and the judgement;
- session.py      ties them to a loaded model's generator (PyTorch tensors; imported only in the worker).
"""
