"""The symbolic-shape expressions of a .pt2 checked against a strict grammar before torch reads the file.

Why: torch.export.load hands every `expr_str` of `models/*.json` to `sympy.sympify`, which evaluates Python — a
file could carry `__import__('os').system(...)` in a shape. What torch writes is sympy's srepr of shape arithmetic
(`Symbol('s77', positive=True, integer=True)`, `Mul(Integer(2), Symbol(...))`, `FloorDiv(...)`), so an expression
is accepted only when every token is a number, a symbol name (quoted, or bare as `s77`), an operator or bracket, or
one of the names below; anything else (attribute access, dunder names, other strings, a name we do not know) refuses the file.
Powers are refused too: `Pow(Integer(10), Integer(10**12))` would make sympy build a number of a trillion digits.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engines.model_files.common import UnsafeModelFile

# sympy constructors srepr writes for shape arithmetic and comparisons, their assumption keywords, torch's own
# shape functions (torch/_export/serde/serialize.py: sympy_functions) — no power functions (see above).
SYMPY_NAMES = {"Symbol", "Dummy", "Integer", "Rational", "Float", "Add", "Mul", "Max", "Min", "Abs", "floor",
               "ceiling", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "StrictLessThan", "LessThan", "StrictGreaterThan",
               "GreaterThan", "Equality", "Unequality", "And", "Or", "Not", "Piecewise", "ExprCondPair", "true",
               "false", "BooleanTrue", "BooleanFalse", "oo", "Infinity", "NegativeInfinity", "Half", "One", "Zero",
               "NegativeOne", "True", "False"}
ASSUMPTIONS = {"positive", "negative", "nonnegative", "nonpositive", "integer", "real", "finite", "nonzero",
               "zero", "even", "odd", "rational", "commutative", "extended_real", "prime", "infinite"}
TORCH_FUNCTIONS = {"FloorDiv", "ModularIndexing", "Where", "PythonMod", "Mod", "CleanDiv", "CeilToInt",
                   "FloorToInt", "CeilDiv", "LShift", "RShift", "FloatTrueDiv", "IntTrueDiv",
                   "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt", "RoundToInt", "RoundDecimal",
                   "ToFloat", "Identity"}
ALLOWED_NAMES = SYMPY_NAMES | ASSUMPTIONS | TORCH_FUNCTIONS
MAX_EXPRESSION = 4096  # characters: shape arithmetic is short
MAX_DIGITS = 19  # an int64 has 19 digits
MAX_MODEL_JSON = 256 * 1024 ** 2  # bytes of one models/*.json, read to check it
_SYMBOL_NAME = re.compile(r"[a-z]{1,4}\d+")  # a bare symbol as str() writes it: s77, u0, zuf1
_TOKEN = re.compile(r"\s+|(?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<string>'[A-Za-z_][A-Za-z0-9_]*'|"
                    r"\"[A-Za-z_][A-Za-z0-9_]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>//|[-+*/%(),=<>])")


# ---- Public API
def check_archive_expressions(path: Path, archive: zipfile.ZipFile, members: dict[str, str]) -> None:
    """Refuse the archive when any expression of its models/*.json is not plain shape arithmetic."""
    for member, name in members.items():
        if not (member.startswith("models/") and member.endswith(".json")):
            continue
        size = archive.getinfo(name).file_size
        if size > MAX_MODEL_JSON:
            raise UnsafeModelFile(f"{path}: {member} would expand to {size / 1024 ** 2:.0f} MiB, more than a model "
                                  f"graph needs ({MAX_MODEL_JSON // 1024 ** 2} MiB); refused. Fix: re-save it with "
                                  "torch.export.save")
        try:
            graph = json.loads(archive.read(name) or b"{}")
        except (ValueError, UnicodeDecodeError):
            continue  # torch reports an unreadable graph itself; nothing of it reaches sympy
        for where, expression in _expressions(graph, member):
            problem = problem_in(expression)
            if problem:
                raise UnsafeModelFile(f"{path}: a symbolic shape in {where} is not shape arithmetic ({problem}); "
                                      "refused, because torch would evaluate it as Python. Fix: export the model "
                                      "again with torch.export from a trusted source")


def problem_in(expression: str) -> str:
    """"" when `expression` is plain shape arithmetic; otherwise what is wrong (never quoting the text itself)."""
    if not isinstance(expression, str):
        return "not a string"
    if len(expression) > MAX_EXPRESSION:
        return f"{len(expression)} characters long"
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:
            return f"a character that shape arithmetic does not use, at offset {position}"
        name = match.group("name")
        if name and name not in ALLOWED_NAMES and not _SYMBOL_NAME.fullmatch(name):
            return f"the name at offset {position} is not a sympy or torch shape function"
        if match.group("number") and len(match.group("number")) > MAX_DIGITS:
            return f"a number of {len(match.group('number'))} digits at offset {position}"
        position = match.end()
    return ""


# ---- Private API
def _expressions(node: Any, where: str) -> Iterator[tuple[str, Any]]:
    """Every value of a key named expr_str, anywhere in the graph JSON."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "expr_str":
                    yield where, value
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(value for value in item if isinstance(value, (dict, list)))
