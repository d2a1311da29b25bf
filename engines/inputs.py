"""A model's declared inputs (name, dtype, shape with symbolic dims) → concrete, deterministic arrays.

Torch-free (numpy only), so the ONNX Runtime backend, the PyTorch model-file loader and the CLI's argument
parsing share one set of rules and one set of error messages:

- a user shape (`--input NAME=1x3x224x224`) wins, but must keep the declared rank and fixed dims;
- a symbolic dim bound by one user shape (`seq` from `input_ids=1x128`) fills the same symbol elsewhere
  (`attention_mask`), so a BERT-style model needs one `--input`, not one per input;
- otherwise the first dynamic dim is the batch; any other dynamic dim is an error that says what to give;
- rank-0 inputs (a sample rate, a temperature) take `--input-value NAME=16000`, which must fit the input's dtype;
- an unknown dim as exporters write it — no dim_param, a dim_param of "?" or "" (Paddle2ONNX and others write
  "?"), a dim_value ≤ 0 (-1 is common) — is its own dim: two of them are never taken to be equal
  (`unknown_dim`, applied to every declared shape first);
- named dims that the user's shapes give different sizes are a warning, not an error (`symbol_warnings`): the
  name is the exporter's, and the engine's own check decides whether the model needs them equal;
- the samples one call processes are read from the resolved shapes (`samples_per_call`): `--input x=3x512`
  is 3 samples a call, whatever --batch says, and a --batch the shapes contradict is refused.

Values are deterministic per (seed, input name), independent of input order, so two runs of the same spec
feed the same numbers. Heuristics by name keep common integer inputs valid: `*mask*` → ones, `token_type*` →
zeros, `position*` → 0..n-1 along the last axis, other integers (ids) → small values in [0, 100).
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

Dim = int | str | None
INT_HIGH = 100  # integer inputs (token ids, indices) are drawn from [0, INT_HIGH)
MAX_DIM = 2**63 - 1  # what an int64 shape holds (every engine's shape type); a larger dim cannot be passed on
_EXAMPLE_DYNAMIC = 128  # the value an error message suggests for an unknown dynamic dim
_UNNAMED = ("", "?")  # dim_param values that exporters write for "unknown", not a name shared with other dims


class InputError(ValueError):
    """An input cannot be resolved; the message names the input, what the model declares and the fix."""


# ---- Public API
def parse_shape(text: str) -> list[int]:
    """'1x3x224x224' → [1, 3, 224, 224]. Also accepts ',' or '*' as separator, and spaces."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"empty shape {text!r}; write it like 1x3x224x224")
    parts = re.split(r"\s*[xX,*]\s*", text.strip().strip("[]()"))
    shape = []
    for part in parts:
        # ASCII digits only ("²".isdigit() is True), and few enough that int() takes them (it refuses 4300+)
        if not (part.isascii() and part.isdigit() and len(part) <= 19) or not 1 <= int(part) <= MAX_DIM:
            raise InputError(f"bad shape {text!r}: {part!r} is not a whole number ≥ 1 (and ≤ {MAX_DIM:,}); write it "
                             "like 1x3x224x224")
        shape.append(int(part))
    return shape


def resolve_shape(name: str, declared: Sequence[Dim], batch: int, user_shapes: Mapping[str, Sequence[int]],
                  known: Mapping[str, int] | None = None, defaults: Mapping[str, int] | None = None) -> list[int]:
    """The concrete shape of input `name` (see the module docstring for the rules).

    `declared` dims are ints (fixed), strs (symbolic, e.g. 'batch') or None (unnamed dynamic);
    `known` maps symbols already bound (by other inputs' user shapes) to their values; `defaults` maps
    symbols to a size the model file suggests (a .pt2's example inputs), used for dims after the batch.
    """
    declared = [unknown_dim(d) for d in declared]
    if name in user_shapes:
        given = [int(d) for d in user_shapes[name]]
        if len(given) != len(declared) or any(
                _is_fixed(d) and d != g for d, g in zip(declared, given, strict=True)):
            why = (f"rank {len(given)} instead of {len(declared)}" if len(given) != len(declared) else
                   "fixed dims differ: " + ", ".join(
                       f"dim {i} must be {d}, got {g}" for i, (d, g) in enumerate(zip(declared, given, strict=True))
                       if _is_fixed(d) and d != g))
            raise InputError(f"input {name!r}: shape {format_shape(given)} does not fit the model's declared shape "
                             f"{format_declared(declared)} ({why}); give --input {name}="
                             f"{format_shape(_suggest(declared, batch, known, defaults))}")
        if any(g < 1 for g in given):
            raise InputError(f"input {name!r}: every dim must be ≥ 1, got {format_shape(given)}")
        return given
    sizes = _fill(declared, batch, known, defaults)
    unresolved = [dim if isinstance(dim, str) else f"dim {index}"
                  for index, (dim, size) in enumerate(zip(declared, sizes, strict=True)) if size is None]
    if unresolved:
        raise InputError(f"input {name!r} has dynamic dims {unresolved} that the batch size cannot fill "
                         f"(declared {format_declared(declared)}); give --input {name}="
                         f"{format_shape(_suggest(declared, batch, known, defaults))} (your sizes)")
    return [size for size in sizes if size is not None]  # every size is known here


def unknown_dim(dim: Any) -> Dim:
    """A declared dim as these rules read it: None for an unknown one however the exporter wrote it (no
    dim_param, "?" or "" as dim_param, a dim_value ≤ 0), else the fixed int or the symbol's name.

    Each None is its own dim; only a real name ("batch", "seq") ties dims together.
    """
    if dim is None or isinstance(dim, bool):
        return None
    if isinstance(dim, str):
        return None if dim.strip() in _UNNAMED else dim
    if isinstance(dim, (int, np.integer)):
        return int(dim) if dim >= 1 else None
    return None


def symbol_warnings(declared: Iterable[Mapping[str, Any]], user_shapes: Mapping[str, Sequence[int]]) -> list[str]:
    """One warning per named dim that the user's shapes give different sizes (`seq` 128 in one input, 64 in
    another, or twice in one input). Not an error: an exporter may reuse a name for dims the model does not tie,
    and the engine refuses the run itself if the model needs them equal."""
    return _bind_symbols([dict(item) for item in declared], user_shapes)[1]


def make_array(name: str, shape: Sequence[int], dtype: str | np.dtype, seed: int = 0) -> np.ndarray:
    """Deterministic data for one input: floats ~ N(0, 1), ints small and valid (see module docstring), bools."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode())])
    lowered = name.lower()
    if dtype.kind == "f":
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    if dtype.kind == "b":
        if "mask" in lowered:
            return np.ones(shape, dtype=bool)
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        if "mask" in lowered:
            return np.ones(shape, dtype=dtype)
        if "token_type" in lowered or "segment" in lowered:
            return np.zeros(shape, dtype=dtype)
        if "position" in lowered and shape:
            return np.broadcast_to(np.arange(shape[-1], dtype=dtype), shape).copy()
        high = 256 if dtype == np.uint8 else INT_HIGH
        return rng.integers(0, high, size=shape, dtype=dtype)
    raise InputError(f"input {name!r}: cannot generate data of dtype {dtype} (supported: float, int, uint, bool)")


def resolve_inputs(declared: Iterable[Mapping[str, Any]], batch: int,
                   user_shapes: Mapping[str, Sequence[int]] | None = None,
                   user_values: Mapping[str, float] | None = None, seed: int = 0,
                   defaults: Mapping[str, int] | None = None,
                   ) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """All of a model's inputs → ({name: array}, [{name, dtype, shape, declared}]) for the run's details.

    `declared` items are {name, dtype (numpy name), shape (dims)}; `defaults` see resolve_shape. A user value
    for a tensor input fills it.
    Names in user_shapes/user_values that the model does not have are an error (a typo must not be ignored).
    A named dim the user's shapes give different sizes is not: the item of the input where it disagrees
    carries `warnings` (`symbol_warnings`; `input_warnings` gathers them for the run's notes).
    """
    declared = [dict(item) for item in declared]
    user_shapes = dict(user_shapes or {})
    user_values = dict(user_values or {})
    names = [item["name"] for item in declared]
    for option, given in (("--input", user_shapes), ("--input-value", user_values)):
        for name in given:
            if name not in names:
                raise InputError(f"{option} {name}: the model has no input {name!r}; its inputs are "
                                 f"{', '.join(names) or '(none)'}")
    for item in declared:
        if item.get("shape"):
            item["shape"] = [unknown_dim(d) for d in item["shape"]]
    known, warnings = _bind_symbols(declared, user_shapes)
    arrays: dict[str, np.ndarray] = {}
    resolved: list[dict[str, Any]] = []
    for item in declared:
        name, dtype, dims = item["name"], item["dtype"], list(item["shape"])
        if not dims:  # a scalar
            if name not in user_values:
                raise InputError(f"input {name!r} is a scalar ({dtype}), which no batch size or shape can fill; "
                                 f"give its value with --input-value {name}=VALUE (e.g. a sample rate: "
                                 f"--input-value {name}=16000)")
            array = np.asarray(_fitting(name, user_values[name], dtype), dtype=np.dtype(dtype))
            shape: list[int] = []
        else:
            shape = resolve_shape(name, dims, batch, user_shapes, known, defaults)
            if name in user_values:
                array = np.full(shape, _fitting(name, user_values[name], dtype), dtype=np.dtype(dtype))
            else:
                array = make_array(name, shape, dtype, seed)
        arrays[name] = array
        resolved.append({"name": name, "dtype": str(np.dtype(dtype)), "shape": shape,
                         "declared": [d if d is None or isinstance(d, str) else int(d) for d in dims]})
        mine = [text for text in warnings if text.startswith(f"--input {name}:")]
        if mine:
            resolved[-1]["warnings"] = mine
    check_batch(resolved, batch, user_shapes)
    return arrays, resolved


def input_warnings(resolved: Iterable[Mapping[str, Any]]) -> list[str]:
    """The warnings that resolve_inputs put on its resolved items, in input order (for the run's notes)."""
    return [text for item in resolved for text in (item.get("warnings") or [])]


def samples_per_call(resolved: Iterable[Mapping[str, Any]]) -> int | None:
    """How many samples one call processes, read from the resolved shapes; None when they do not say.

    The samples lie along dim 0 (what the batch fills when it is dynamic; what the user's --input or the file
    fixes otherwise). Inputs whose dim 0 is dynamic speak for the model when there are any (a fixed side input,
    a lookup table, does not); inputs that disagree, or scalars only, give None.
    """
    tensors = [item for item in resolved if item.get("shape")]
    dynamic = [item for item in tensors if not _is_fixed((list(item.get("declared") or []) or [1])[0])]
    counts = {int(item["shape"][0]) for item in (dynamic or tensors)}
    return counts.pop() if len(counts) == 1 else None


def check_batch(resolved: Sequence[Mapping[str, Any]], batch: int, user_shapes: Mapping[str, Any]) -> None:
    """A --batch other than 1 that the resolved shapes do not take is an error, not a throughput off by a factor."""
    if batch == 1:
        return  # the default: the shapes decide (samples_per_call)
    per_call = samples_per_call(resolved)
    shapes = ", ".join(f"{item['name']} {format_declared(item['declared'])}" for item in resolved if item["shape"])
    if not shapes:
        raise InputError(f"--batch {batch} does not apply: the model takes scalar inputs only. Fix: drop --batch")
    if per_call is not None and per_call != batch:
        given = " ".join(f"--input {name}={format_shape(shape)}" for name, shape in user_shapes.items())
        raise InputError(f"--batch {batch} does not fit the inputs: {given or 'the model declares ' + shapes}, "
                         f"which hold {per_call} sample{'s' if per_call != 1 else ''} a call. Fix: drop --batch "
                         f"(the batch is read from the shapes) or give shapes of batch {batch}")


def format_shape(shape: Sequence[int]) -> str:
    return "x".join(str(int(d)) for d in shape) if shape else "(scalar)"


def format_declared(declared: Sequence[Dim]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in declared) + "]"


# ---- Private API
def _fitting(name: str, value: Any, dtype: str | np.dtype) -> Any:
    """A --input-value as the input's dtype holds it, or an InputError naming the range (1e30 into an int64,
    1e300 into a float32 and 2 into a bool are refused, not wrapped, clipped or rounded)."""
    dtype = np.dtype(dtype)
    try:
        finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value))
    except OverflowError:  # an int too large for a float: finite, and too large for any dtype below
        finite = dtype.kind in "iu"
    if not finite:
        raise InputError(f"--input-value {name}={value}: not a finite number")
    if dtype.kind == "b":
        if value not in (0, 1):
            raise InputError(f"--input-value {name}={value}: input {name!r} is a bool; give 0 or 1")
        return bool(value)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if value != int(value) or not info.min <= int(value) <= info.max:
            raise InputError(f"--input-value {name}={value}: input {name!r} is {dtype}, which holds whole numbers "
                             f"from {info.min:,} to {info.max:,}")
        return int(value)
    if dtype.kind == "f":
        limit = float(np.finfo(dtype).max)
        if not abs(float(value)) <= limit:
            raise InputError(f"--input-value {name}={value}: input {name!r} is {dtype}, which holds numbers "
                             f"between -{limit:.4g} and {limit:.4g}")
    return value


def _is_fixed(dim: Dim) -> bool:
    return isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1


def _fill(declared: Sequence[Dim], batch: int, known: Mapping[str, int] | None,
          defaults: Mapping[str, int] | None) -> list[int | None]:
    """Each dim's size by the rules: fixed, a known symbol, the batch (the first dynamic dim), the model file's
    default; None where none applies."""
    known, defaults = known or {}, defaults or {}
    out: list[int | None] = []
    batch_used = False
    for dim in declared:
        if _is_fixed(dim):
            out.append(int(dim))
        elif isinstance(dim, str) and dim in known:
            out.append(int(known[dim]))
        elif not batch_used:
            out.append(int(batch))
            batch_used = True
        elif isinstance(dim, str) and dim in defaults:
            out.append(int(defaults[dim]))
        else:
            out.append(None)
    return out


def _suggest(declared: Sequence[Dim], batch: int, known: Mapping[str, int] | None,
             defaults: Mapping[str, int] | None) -> list[int]:
    """An example shape for an error message: what the rules fill (`_fill`), else 128."""
    return [_EXAMPLE_DYNAMIC if size is None else size for size in _fill(declared, batch, known, defaults)]


def _bind_symbols(declared: list[dict[str, Any]], user_shapes: Mapping[str, Sequence[int]],
                  ) -> tuple[dict[str, int], list[str]]:
    """(symbol → value from the user shapes, so other inputs sharing a symbol follow; warnings).

    The first size given to a name fills that name in inputs the user left out; a later, different size is a
    warning naming both places, and the user's shapes are passed on as given (the engine's check decides).
    Unknown dims (None after `unknown_dim`) never bind: two "?" are two dims.
    """
    known: dict[str, int] = {}
    where: dict[str, str] = {}
    warnings: list[str] = []
    for item in declared:
        name, dims = item["name"], [unknown_dim(d) for d in (item["shape"] or [])]
        if name not in user_shapes or len(user_shapes[name]) != len(dims):
            continue  # rank errors are reported by resolve_shape with the full message
        for dim, value in zip(dims, user_shapes[name], strict=True):
            if not isinstance(dim, str):
                continue
            if dim in known and known[dim] != int(value):
                other = "earlier in this shape" if where[dim] == name else f"in --input {where[dim]}"
                text = (f"--input {name}: dim {dim!r} is {int(value)} here but {known[dim]} {other}; the model "
                        f"names both {dim!r}, so it may need them equal — passed on as given, and the engine "
                        f"refuses the run if they must agree. Fix, if it does: give {dim!r} one size")
                if text not in warnings:
                    warnings.append(text)
                continue
            known.setdefault(dim, int(value))
            where.setdefault(dim, name)
    return known, warnings
