"""The ONNX Runtime backend's token generator: prefill on the forward export, a decode-step export per token."""

from __future__ import annotations

import time
from typing import Any

from engines.backends import onnxruntime_int8 as int8
from engines.backends import onnxruntime_session as sessions
from engines.protocol import plain
from engines.spec import RunSpec


def wants_generator(spec: RunSpec) -> bool:
    if spec.is_file or spec.scenario != "generate" or spec.mode != "inference":
        return False
    from engines import catalog

    return catalog.get(spec.model).decoder


def generator(spec: RunSpec, ort, options, providers, prefill_session, feeds) -> tuple[Any, dict]:
    """Greedy decoding on ONNX Runtime: the forward export runs the prompt, the decode export each new token.

    Host arrays carry the KV cache between steps (copied to the device by a GPU provider each step); the
    PyTorch backend keeps it on the device, so on a GPU this backend's TPOT includes that copy.
    """
    import importlib

    import numpy as np

    from engines import catalog, onnx_export
    from engines.backends.base import TokenGenerator

    params = onnx_export._params(spec.model, spec.model_params)
    family = importlib.import_module(catalog.get(spec.model).module)
    (prompt_name, prompt), = list(feeds.items())[:1]
    if hasattr(family, "check_length"):
        family.check_length(params, int(prompt.shape[1]), spec.generation.output_tokens)
    path, check = onnx_export.export_catalog(spec, providers if spec.precision == "fp16" else None, part="decode")
    check.pop("prepare_s", None)
    details = {"path": str(path), "cached": check.pop("cached"), "check": plain(check)}
    if spec.precision == "int8":
        path, details["quantization"] = int8.quantized(path)
    started = time.perf_counter()
    decode_session = sessions.session(ort, path, options, providers, providers[0][0])
    details["session_s"] = time.perf_counter() - started
    names = [i.name for i in decode_session.get_inputs()]
    prefill_run, decode_run = prefill_session.run, decode_session.run

    def greedy(logits):
        return np.ascontiguousarray(logits[:, -1].argmax(axis=-1)[:, None].astype(np.int64))

    def prefill():
        logits, present = prefill_run(None, {prompt_name: prompt})[:2]
        token = greedy(logits)
        return token, present, [token]

    def decode_step(state):
        token, past, seen = state
        logits, present = decode_run(None, {names[0]: token, names[1]: past})[:2]
        token = greedy(logits)
        seen.append(token)
        return token, present, seen

    def tokens(state):
        return np.concatenate(state[2], axis=1).tolist()

    generator = TokenGenerator(prefill=prefill, decode_step=decode_step, prompt_tokens=int(prompt.shape[1]),
                               output_tokens=spec.generation.output_tokens, tokens=tokens)
    return generator, details
