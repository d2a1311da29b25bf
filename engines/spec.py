"""RunSpec: the one description of a run that the window, the CLI and a worker all agree on.

Plain, JSON-serialisable data, validated before anything is spawned, so that a typo fails in
milliseconds with the field name and the allowed values rather than seconds later in a worker.
What only the device can answer (does this GPU do bf16?) is checked by the backend at load time.

The fields describe themselves (engines.options): each carries its flag, help and bounds, and each backend and
scenario plug-in brings its own options class (engine_options[backend], scenario_options), so the command line,
the run form and validation are all derived from here and from the registries (`spec_fields`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from engines import backends, catalog
from engines.generation import GenerationOptions
from engines.options import OptionField, SpecError, check_fields, check_value, fields_of, is_number, option

__all__ = ["SpecError", "RunSpec", "RunLimits", "GenerationOptions", "spec_fields", "is_model_path"]

SPEC_VERSION = 2  # 2: engine options keyed by backend (engine_options), scenario options per scenario
MODES = ("inference", "training")
REFUSED_FILE_HINTS = {
    ".pth": "a .pth file is usually a pickle of Python objects, which Lab Console never loads (a pickle can run "
            "code). Export the model with torch.export.save (.pt2), torch.jit.save (.pt/.jit) or to ONNX (.onnx)",
    ".pkl": "pickles are never loaded (a pickle can run code). Export the model to .pt2, .pt (TorchScript) or .onnx",
    ".bin": "raw weight files carry no graph. Export the model to .pt2, .pt (TorchScript) or .onnx",
    ".safetensors": "safetensors files carry weights but no graph. Export the model to .pt2, .pt or .onnx",
}
_LEGACY_ENGINE_KEYS = {"torch": "torch", "ort": "onnxruntime"}  # version-1 specs kept these at the top level


@dataclass
class RunLimits:
    """How long the runner waits before calling a worker hung (seconds without any event)."""

    load_timeout_s: float = option(300.0, flag="--load-timeout", metavar="S", maximum=86400, unit="s",
                                   label="Load timeout (s)", help="seconds a worker may load without a word")
    stall_timeout_s: float = option(60.0, flag="--stall-timeout", metavar="S", maximum=86400, unit="s",
                                    label="Stall timeout (s)", help="seconds a running worker may stay silent")


def _default_engine_options() -> dict[str, Any]:
    return {info.name: info.default_options() for info in backends.infos()}


def _default_scenario_options() -> Any:
    from engines import scenarios

    return scenarios.info("single-stream").options()


@dataclass
class RunSpec:
    model: str = option("mlp", flag="--model", kind="str", label="Model",
                        help="catalog name (`labconsole models`) or a model file path (.onnx, .pt2, .pt/.jit)")
    engine: str = option("torch", flag="--engine", kind="str", label="Engine", help="the engine")
    target: str = option("cpu", flag="--target", label="Target", help="cpu | cuda:N | mps (`labconsole targets`)")
    batch: int = option(1, flag="--batch", maximum=65536, label="Batch", help="samples per inference")
    duration_s: float = option(5.0, flag="--duration", metavar="S", maximum=24 * 3600, unit="s",
                               label="Duration (s)", help="measurement seconds (default 5)")
    iterations: int | None = option(None, flag="--iterations", metavar="N", label="Iterations",
                                    help="measure exactly N iterations instead")
    warmup_s: float = option(1.0, flag="--warmup", metavar="S", minimum=0, maximum=3600, unit="s",
                             label="Warm-up (s)", help="warm-up seconds (default 1)")
    profile_iterations: int | None = option(None, flag="--profile-iterations", metavar="N", maximum=100_000,
                                            label="Profile iterations",
                                            help="after the timed measurement, profile N more iterations with the "
                                                 "engine's profiler, apart (what `labconsole analyze` does)")
    threads: int | None = option(None, flag="--threads", maximum=4096, label="Threads",
                                 help="intra-op threads (default: one per physical core the worker may use)")
    precision: str = option("fp32", flag="--precision", kind="str", label="Precision", help="numeric precision")
    scenario: str = option("single-stream", flag="--scenario", kind="str", label="Scenario", help="load scenario")
    mode: str = option("inference", flag="--mode", choices=MODES, label="Mode",
                       help="inference | training (forward, backward, optimizer step)")
    name: str = option("", flag="--name", label="Run name", help="a name for the run")
    model_params: dict[str, Any] = option(flag="--param", metavar="KEY=N", kind="pairs", pair_value="int",
                                          default_factory=dict, label="Model size",
                                          help="catalog model size, e.g. --param layers=2 (repeatable)")
    inputs: dict[str, list[int]] = option(flag="--input", metavar="NAME=SHAPE", kind="pairs", pair_value="shape",
                                          default_factory=dict, label="Input shapes",
                                          help="input shape, e.g. --input pixel_values=1x3x224x224 (repeatable)")
    input_values: dict[str, float] = option(flag="--input-value", metavar="NAME=NUMBER", kind="pairs",
                                            pair_value="number", default_factory=dict, label="Scalar inputs",
                                            help="value of a scalar input, e.g. --input-value sample_rate=16000 "
                                                 "(repeatable)")
    trust_code: bool = option(False, flag="--trust-code", label="Trust code",
                              help="run a model file that is code (TorchScript runs its author's Python-like code "
                                   "and can write files): only for files you trust; the worker is sandboxed where "
                                   "the OS allows (writes only in its temporary folder, no TCP)")
    engine_options: dict[str, Any] = field(default_factory=_default_engine_options)  # backend name → its options
    generation: GenerationOptions = field(default_factory=GenerationOptions)
    scenario_options: Any = field(default_factory=_default_scenario_options)  # the scenario's options class
    limits: RunLimits = field(default_factory=RunLimits)
    version: int = SPEC_VERSION

    def __post_init__(self) -> None:
        """Bring nested options to their classes (dicts from JSON, another scenario's class after a change)."""
        self.engine_options = _engine_options(self.engine_options)
        self.scenario_options = _scenario_options(self.scenario, self.scenario_options)
        self.generation = _from_dict(GenerationOptions, self.generation, "generation.")
        self.limits = _from_dict(RunLimits, self.limits, "limits.")

    # ---- Public API
    @property
    def is_file(self) -> bool:
        """True when `model` names a file rather than a catalog entry."""
        return is_model_path(self.model)

    def options_for(self, backend: str) -> Any:
        """The options of one backend (its defaults when the spec carries none)."""
        return self.engine_options.get(backend) or backends.info(backend).default_options()

    def validate(self) -> RunSpec:
        """Raise SpecError naming the first bad field; return self so calls chain."""
        from engines import scenarios

        if self.version != SPEC_VERSION:
            raise SpecError("version", f"spec version {self.version} is not supported (this build reads {SPEC_VERSION})")
        for fld in fields_of(RunSpec):  # NAME=VALUE mappings first: the model and input checks iterate them
            if fld.kind == "pairs":
                check_value(fld, getattr(self, fld.name))
        _choice("engine", self.engine, backends.names())
        if self.is_file:
            self._validate_file()
        else:
            _choice("model", self.model, catalog.names(), hint="or give a path to a .onnx, .pt2, .pt or .jit file")
            self._validate_model_params()
        _choice("scenario", self.scenario, scenarios.names())
        _choice("precision", self.precision, list(backends.precisions()))
        _choice("mode", self.mode, list(MODES))
        if self.mode == "training" and (not backends.info(self.engine).trains or self.is_file):
            trainers = " or ".join(f"--engine {i.name}" for i in backends.infos() if i.trains)
            raise SpecError("mode", f"training runs need {trainers} and a catalog model")
        if not isinstance(self.target, str) or not (
            self.target in ("cpu", "mps") or _is_indexed(self.target, "cuda")
        ):
            raise SpecError("target", f"unknown target {self.target!r}; use cpu, cuda:N or mps "
                                      "(`labconsole targets` lists what this machine has)")
        for fld in fields_of(RunSpec):
            if fld.kind in ("int", "float", "bool"):
                check_value(fld, getattr(self, fld.name))
        self._validate_inputs()
        for name, options in self.engine_options.items():
            _check_options(options, f"{name}.")
        self._validate_ranks()
        check_fields(self.generation, "generation.")
        check_fields(self.scenario_options, "scenario_options.")
        self.scenario_options.check(self)
        check_fields(self.limits, "limits.")
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        """Build from plain data; unknown keys are an error (a misspelt option must not be ignored).

        A version-1 spec (engine options under "torch"/"ort", one flat scenario_options) is read too, so runs
        stored before version 2 can be reproduced.
        """
        if isinstance(data, dict) and data.get("version", SPEC_VERSION) == 1:
            data = _upgrade_v1(data)
        return _from_dict(cls, data, "")

    def label(self) -> str:
        """Short human label, e.g. 'mlp · torch · cpu · b1' (plus precision and mode when not the defaults, and DDP ranks)."""
        model = os.path.basename(self.model) if self.is_file else self.model
        parts = [model, self.engine, self.target, f"b{self.batch}"]
        if self.precision != "fp32":
            parts.append(self.precision)
        if self.mode != "inference":
            parts.append(self.mode)
        ranks = getattr(self.engine_options.get("torch"), "ranks", None) if self.engine == "torch" else None
        if ranks is not None:  # a DDP run: its rank count tells it from the single-process run of the same spec
            parts.append(f"{ranks} rank{'s' if ranks != 1 else ''}")
        return " · ".join(parts)

    # ---- Private API
    def _validate_file(self) -> None:
        path = self.model
        if os.path.isdir(path):
            raise SpecError("model", directory_problem(path))
        extension = os.path.splitext(path)[1].lower()
        file_engines = backends.file_engines()
        if extension in REFUSED_FILE_HINTS:
            raise SpecError("model", f"{path}: {REFUSED_FILE_HINTS[extension]}")
        if extension not in file_engines:
            raise SpecError("model", f"{path}: unknown model file type {extension or '(none)'!r}; "
                                     f"use one of {', '.join(file_engines)}")
        if not os.path.isfile(path):
            if os.path.exists(path):  # a FIFO or a device named model.onnx: there, but not "not found"
                raise SpecError("model", f"{path} is not a regular file (a device, a pipe or a socket), so not a "
                                         "model file; give the path of the saved model file")
            raise SpecError("model", f"model file not found: {path}")
        wanted = file_engines[extension]
        if self.engine != wanted:
            raise SpecError("engine", f"{os.path.basename(path)} is a {extension} file, which runs on "
                                      f"--engine {wanted}, not {self.engine}")
        if self.model_params:
            raise SpecError("model_params", "size parameters apply to catalog models only, not to model files")

    def _validate_ranks(self) -> None:
        """`--ranks N` (engines.ddp) runs catalog-model training as DDP ranks: refuse what it cannot run, with
        the fix, before any rank process starts."""
        torch_options = self.options_for("torch") if "torch" in backends.names() else None
        ranks = getattr(torch_options, "ranks", None)
        if ranks is None:
            return
        if self.engine != "torch" or self.mode != "training":
            raise SpecError("torch.ranks", f"--ranks {ranks} runs data-parallel training: add --mode training "
                                           "--engine torch (or drop --ranks)")
        if self.scenario not in ("single-stream", "input-pipeline"):
            raise SpecError("torch.ranks", f"--ranks runs the single-stream or input-pipeline scenario, not "
                                           f"{self.scenario}: use --scenario single-stream (in memory) or "
                                           "input-pipeline (--data-dir)")
        if self.target != "cpu" and not _is_indexed(self.target, "cuda"):
            raise SpecError("torch.ranks", f"--ranks runs on cpu (gloo) or cuda:K (nccl, rank r on cuda:K+r), not "
                                           f"{self.target}: use --target cpu or cuda:0")
        if torch_options.compile:
            raise SpecError("torch.ranks", "--ranks runs eager DDP: drop --compile")
        if getattr(self.scenario_options, "warmup_until_stable", False) or \
                getattr(self.scenario_options, "until_stable", False):
            raise SpecError("torch.ranks", "--ranks agrees its step counts up front: drop --warmup-until-stable/"
                                           "--until-stable and give --warmup/--duration or --iterations")
        micro = torch_options.grad_accum
        if torch_options.scaling == "strong" and self.batch % (ranks * micro):
            raise SpecError("torch.ranks", f"--batch {self.batch} does not split over {ranks} ranks × {micro} "
                                           f"micro-batch{'es' if micro != 1 else ''}: give a multiple of "
                                           f"{ranks * micro}, or --scaling weak")
        if torch_options.scaling == "weak" and self.batch % micro:
            raise SpecError("torch.ranks", f"--batch {self.batch} (each rank's batch, --scaling weak) does not split "
                                           f"into {micro} micro-batches: give a multiple of {micro}")

    def _validate_model_params(self) -> None:
        known = catalog.get(self.model).params
        for key, value in self.model_params.items():
            if key not in known:
                raise SpecError(f"model_params.{key}", f"{self.model} has no parameter {key!r}; it has "
                                                      f"{', '.join(known)}")
            _positive_int(f"model_params.{key}", value, upper=1_000_000)

    def _validate_inputs(self) -> None:
        for name, shape in self.inputs.items():
            if (not isinstance(shape, (list, tuple)) or not shape
                    or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in shape)):
                raise SpecError(f"inputs.{name}", f"a shape is a list of whole numbers ≥ 1 (e.g. 1x3x224x224), "
                                                  f"got {shape!r}")
        for name, value in self.input_values.items():
            if not is_number(value):
                raise SpecError(f"input_values.{name}", f"must be a number (not nan or ±inf), got {value!r}")
        if not self.is_file:
            for name, given in (("inputs", self.inputs), ("input_values", self.input_values)):
                if given:
                    raise SpecError(f"{name}.{next(iter(given))}", "input shapes and values apply to model files "
                                                                  f"only; catalog model {self.model} makes its own "
                                                                  "inputs (size them with --batch and --param)")


def spec_fields() -> list[OptionField]:
    """Every option a run takes, as the command line and the run form see it, from the spec and the registries.

    Paths: RunSpec fields by name, "generation.x", "limits.x", "<backend>.x" for a backend's options and
    "scenario_options.x" for scenario options (one entry per option name, listing the scenarios that take it).
    """
    from engines import scenarios

    dynamic = {"engine": tuple(backends.names()), "scenario": tuple(scenarios.names()),
               "precision": backends.precisions()}
    found = []
    for fld in fields_of(RunSpec):
        if fld.name in dynamic:
            fld = dataclasses.replace(fld, kind="choice", choices=dynamic[fld.name],
                                      help=f"{fld.help}: {' | '.join(dynamic[fld.name])}")
        found.append(fld)
    found += fields_of(GenerationOptions, "generation.") + fields_of(RunLimits, "limits.")
    for info in backends.infos():
        found += fields_of(info.options, f"{info.name}.")
    merged: dict[str, OptionField] = {}
    helps: dict[str, list[str]] = {}
    for info in scenarios.infos():
        for fld in fields_of(info.options, "scenario_options."):
            known = merged.get(fld.path)
            merged[fld.path] = dataclasses.replace(known or fld, scenarios=(*(known.scenarios if known else ()),
                                                                            info.name))
            if fld.help not in helps.setdefault(fld.path, []):
                helps[fld.path].append(fld.help)
    found += [dataclasses.replace(fld, help="; ".join(helps[path])) for path, fld in merged.items()]
    return found


def directory_problem(path: str) -> str:
    """What to say when a model "file" is a folder: that, and the model files inside it (an export folder)."""
    try:
        names = os.listdir(path)
    except OSError:
        names = []
    found = sorted(name for name in names if os.path.splitext(name)[1].lower() in backends.file_engines())
    inside = f"; it holds {', '.join(found[:3])}{' …' if len(found) > 3 else ''}" if found else ""
    example = os.path.join(path, found[0]) if found else os.path.join(path, "model.onnx")
    return f"{path} is a directory, not a model file{inside}. Fix: give the file itself, e.g. --model {example}"


def is_model_path(model: str) -> bool:
    """A model is a file when it has a path separator or a file extension; catalog names have neither."""
    return isinstance(model, str) and ("/" in model or os.sep in model or "." in os.path.basename(model))


def _from_dict(cls, data: Any, prefix: str):
    if isinstance(data, cls):
        return data
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise SpecError(prefix.rstrip(".") or "spec", f"expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise SpecError(f"{prefix}{unknown[0]}", f"unknown field; known fields are {', '.join(sorted(fields))}")
    return cls(**data)


def _engine_options(given: Any) -> dict[str, Any]:
    if not isinstance(given, dict):
        raise SpecError("engine_options", f"expected a mapping of engine to options, got {type(given).__name__}")
    unknown = sorted(set(given) - set(backends.names()))
    if unknown:
        raise SpecError(f"engine_options.{unknown[0]}", f"unknown engine; known engines are "
                                                        f"{', '.join(backends.names())}")
    return {info.name: _from_dict(info.options, given.get(info.name), f"{info.name}.") for info in backends.infos()}


def _scenario_options(scenario: str, given: Any) -> Any:
    """The options as the scenario's own class. An option of another scenario left at its default is dropped
    (a flat form or an older spec carries them all); one that was set is an error naming where it applies."""
    from engines import scenarios

    if scenario not in scenarios.names():
        return given  # validate() names the unknown scenario
    cls = scenarios.info(scenario).options
    if isinstance(given, cls):
        return given
    if given is None:
        return cls()
    data = dataclasses.asdict(given) if dataclasses.is_dataclass(given) else given
    if not isinstance(data, dict):
        raise SpecError("scenario_options", f"expected a mapping, got {type(data).__name__}")
    own = {f.name for f in dataclasses.fields(cls)}
    kept = {}
    for name, value in data.items():
        if name in own:
            kept[name] = value
            continue
        takers = scenarios.takers(name)
        if not takers:
            known = sorted({f.name for i in scenarios.infos() for f in dataclasses.fields(i.options)})
            raise SpecError(f"scenario_options.{name}", f"unknown field; known fields are {', '.join(known)}")
        if value not in (None, False, {}, []):
            where = f"scenario {takers[0]}" if len(takers) == 1 else \
                f"the {', '.join(takers[:-1])} and {takers[-1]} scenarios"
            raise SpecError(f"scenario_options.{name}", f"scenario {scenario} does not use it; it applies to {where}")
    return cls(**kept)


def _check_options(options: Any, prefix: str) -> None:
    check_fields(options, prefix)
    if hasattr(options, "check"):
        options.check(prefix)


def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    data = {**data, "version": SPEC_VERSION}
    given = data.get("engine_options") or {}
    if not isinstance(given, dict):
        raise SpecError("engine_options", f"expected a mapping of engine to options, got {type(given).__name__}")
    engine_options = dict(given)
    for key, backend in _LEGACY_ENGINE_KEYS.items():
        if key in data:
            engine_options[backend] = data.pop(key)
    data["engine_options"] = engine_options
    return data


def _is_indexed(target: str, prefix: str) -> bool:
    head, _, index = target.partition(":")
    return head == prefix and (index == "" or index.isdigit())


def _choice(name: str, value: Any, allowed: list[str], hint: str = "") -> None:
    if value not in allowed:
        raise SpecError(name, f"unknown value {value!r}; allowed: {', '.join(allowed)}" + (f" ({hint})" if hint else ""))


def _positive_int(name: str, value: Any, upper: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= upper:
        raise SpecError(name, f"must be a whole number from 1 to {upper}, got {value!r}")
