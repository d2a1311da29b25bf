"""RunSpec: the one description of a run that the window, the CLI and a worker all agree on.

Plain, JSON-serialisable data, validated before anything is spawned, so that a typo fails in
milliseconds with the field name and the allowed values rather than seconds later in a worker.
What only the device can answer (does this GPU do bf16?) is checked by the backend at load time.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from engines import backends, catalog, scenarios

SPEC_VERSION = 1
PRECISIONS = ("fp32", "fp16", "bf16", "int8")
MODES = ("inference", "training")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
GRAPH_OPTIMIZATION = ("disabled", "basic", "extended", "all")
EXECUTION_MODES = ("sequential", "parallel")
# Model files by extension → the engine that reads them.
MODEL_FILE_ENGINES = {".onnx": "onnxruntime", ".pt2": "torch", ".pt": "torch", ".jit": "torch"}
REFUSED_FILE_HINTS = {
    ".pth": "a .pth file is usually a pickle of Python objects, which Lab Console never loads (a pickle can run "
            "code). Export the model with torch.export.save (.pt2), torch.jit.save (.pt/.jit) or to ONNX (.onnx)",
    ".pkl": "pickles are never loaded (a pickle can run code). Export the model to .pt2, .pt (TorchScript) or .onnx",
    ".bin": "raw weight files carry no graph. Export the model to .pt2, .pt (TorchScript) or .onnx",
    ".safetensors": "safetensors files carry weights but no graph. Export the model to .pt2, .pt or .onnx",
}


class SpecError(ValueError):
    """A RunSpec field is invalid; the message names the field, the value and what is allowed."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


@dataclass
class RunLimits:
    """How long the runner waits before calling a worker hung (seconds without any event)."""

    load_timeout_s: float = 300.0
    stall_timeout_s: float = 60.0


@dataclass
class TorchOptions:
    channels_last: bool = False
    compile: str | None = None  # None = eager; else a torch.compile mode


@dataclass
class OrtOptions:
    provider: str | None = None  # None = the target's natural provider (cpu → CPUExecutionProvider …)
    provider_options: dict[str, Any] = field(default_factory=dict)
    graph_optimization: str = "all"
    inter_op_threads: int | None = None
    execution_mode: str = "sequential"
    allow_fallback: bool = False  # refuse a silent fall-back to CPU unless the user allowed it
    opset: int = 18


@dataclass
class GenerationOptions:
    """For decoder models: prompt length and how many tokens to generate (TTFT and TPOT)."""

    prompt_tokens: int = 32
    output_tokens: int = 32


@dataclass
class ScenarioOptions:
    """Options of the load scenarios (offline, server, multi-stream) and of warm-up; None = the scenario's default.

    qps: server — the Poisson arrival rate (required unless find_peak; with find_peak, where the search
        starts); multi-stream — queries per second at a fixed cadence (default 20, a 50 ms interval).
    latency_bound_ms: server — the p99 bound find_peak searches under (plain server runs report whether p99
        met it).
    find_peak: server — search for the highest rate whose p99 stays under latency_bound_ms.
    concurrency: offline — threads calling the model at once (default 1).
    streams: multi-stream — samples per query (default 8), served as streams / batch calls of `batch`.
    samples_per_query: offline — the one offline query's size: the run ends when that many samples are done.
    max_queries: offline, server, multi-stream — stop after this many queries even before duration_s.
    warmup_until_stable: warm up until the last three 100-ms windows agree within 10% (instead of warmup_s),
        at most warmup_cap_s (default 30 s).
    """

    qps: float | None = None
    latency_bound_ms: float | None = None
    find_peak: bool = False
    concurrency: int | None = None
    streams: int | None = None
    samples_per_query: int | None = None
    max_queries: int | None = None
    warmup_until_stable: bool = False
    warmup_cap_s: float | None = None


# Which scenarios take each option (given for another → a SpecError naming the ones that do).
_LOAD_SCENARIOS = ("offline", "server", "multi-stream")
SCENARIO_OPTION_USERS: dict[str, tuple[str, ...]] = {
    "qps": ("server", "multi-stream"),
    "latency_bound_ms": ("server",),
    "find_peak": ("server",),
    "concurrency": ("offline",),
    "streams": ("multi-stream",),
    "samples_per_query": ("offline",),
    "max_queries": _LOAD_SCENARIOS,
    "warmup_until_stable": ("single-stream", *_LOAD_SCENARIOS),
    "warmup_cap_s": ("single-stream", *_LOAD_SCENARIOS),
}
MAX_QPS = 1_000_000
DEFAULT_STREAMS = 8  # multi-stream samples per query (MLPerf's original multi-stream)
DEFAULT_MULTI_STREAM_QPS = 20.0  # a query every 50 ms


@dataclass
class RunSpec:
    model: str = "mlp"  # a catalog name, or a path to a model file (.onnx, .pt2, .pt, .jit)
    engine: str = "torch"
    target: str = "cpu"
    batch: int = 1
    duration_s: float = 5.0
    iterations: int | None = None
    warmup_s: float = 1.0
    threads: int | None = None
    precision: str = "fp32"
    scenario: str = "single-stream"
    mode: str = "inference"
    name: str = ""
    model_params: dict[str, Any] = field(default_factory=dict)  # catalog size overrides, e.g. {"layers": 2}
    inputs: dict[str, list[int]] = field(default_factory=dict)  # input shapes by name, e.g. {"x": [1, 3, 224, 224]}
    input_values: dict[str, float] = field(default_factory=dict)  # scalar inputs, e.g. {"sample_rate": 16000}
    torch: TorchOptions = field(default_factory=TorchOptions)
    ort: OrtOptions = field(default_factory=OrtOptions)
    generation: GenerationOptions = field(default_factory=GenerationOptions)
    scenario_options: ScenarioOptions = field(default_factory=ScenarioOptions)
    limits: RunLimits = field(default_factory=RunLimits)
    version: int = SPEC_VERSION

    # ---- Public API
    @property
    def is_file(self) -> bool:
        """True when `model` names a file rather than a catalog entry."""
        return is_model_path(self.model)

    def validate(self) -> RunSpec:
        """Raise SpecError naming the first bad field; return self so calls chain."""
        if self.version != SPEC_VERSION:
            raise SpecError("version", f"spec version {self.version} is not supported (this build reads {SPEC_VERSION})")
        _choice("engine", self.engine, backends.names())
        if self.is_file:
            self._validate_file()
        else:
            _choice("model", self.model, catalog.names(), hint="or give a path to a .onnx, .pt2, .pt or .jit file")
            self._validate_model_params()
        _choice("scenario", self.scenario, scenarios.names())
        _choice("precision", self.precision, list(PRECISIONS))
        _choice("mode", self.mode, list(MODES))
        if self.mode == "training" and (self.engine != "torch" or self.is_file):
            raise SpecError("mode", "training runs need --engine torch and a catalog model")
        if not isinstance(self.target, str) or not (
            self.target in ("cpu", "mps") or _is_indexed(self.target, "cuda")
        ):
            raise SpecError("target", f"unknown target {self.target!r}; use cpu, cuda:N or mps "
                                      "(`labconsole targets` lists what this machine has)")
        _positive_int("batch", self.batch, upper=65536)
        _positive_number("duration_s", self.duration_s, upper=24 * 3600)
        if self.iterations is not None:
            _positive_int("iterations", self.iterations, upper=10**9)
        if not _is_number(self.warmup_s) or not 0 <= self.warmup_s <= 3600:
            raise SpecError("warmup_s", f"must be a number from 0 to 3600 seconds, got {self.warmup_s!r}")
        if self.threads is not None:
            _positive_int("threads", self.threads, upper=4096)
        self._validate_inputs()
        self._validate_engine_options()
        _positive_int("generation.prompt_tokens", self.generation.prompt_tokens, upper=1_000_000)
        _positive_int("generation.output_tokens", self.generation.output_tokens, upper=1_000_000)
        self._validate_scenario_options()
        _positive_number("limits.load_timeout_s", self.limits.load_timeout_s, upper=86400)
        _positive_number("limits.stall_timeout_s", self.limits.stall_timeout_s, upper=86400)
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        """Build from plain data; unknown keys are an error (a misspelt option must not be ignored)."""
        return _from_dict(cls, data, "")

    def label(self) -> str:
        """Short human label, e.g. 'mlp · torch · cpu · b1' (plus precision and mode when not the defaults)."""
        model = os.path.basename(self.model) if self.is_file else self.model
        parts = [model, self.engine, self.target, f"b{self.batch}"]
        if self.precision != "fp32":
            parts.append(self.precision)
        if self.mode != "inference":
            parts.append(self.mode)
        return " · ".join(parts)

    # ---- Private API
    def _validate_file(self) -> None:
        path = self.model
        extension = os.path.splitext(path)[1].lower()
        if extension in REFUSED_FILE_HINTS:
            raise SpecError("model", f"{path}: {REFUSED_FILE_HINTS[extension]}")
        if extension not in MODEL_FILE_ENGINES:
            raise SpecError("model", f"{path}: unknown model file type {extension or '(none)'!r}; "
                                     f"use one of {', '.join(MODEL_FILE_ENGINES)}")
        if not os.path.isfile(path):
            raise SpecError("model", f"model file not found: {path}")
        wanted = MODEL_FILE_ENGINES[extension]
        if self.engine != wanted:
            raise SpecError("engine", f"{os.path.basename(path)} is a {extension} file, which runs on "
                                      f"--engine {wanted}, not {self.engine}")
        if self.model_params:
            raise SpecError("model_params", "size parameters apply to catalog models only, not to model files")

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
            if not _is_number(value):
                raise SpecError(f"input_values.{name}", f"must be a number, got {value!r}")

    def _validate_scenario_options(self) -> None:
        options, scenario = self.scenario_options, self.scenario
        defaults = ScenarioOptions()
        for name, users in SCENARIO_OPTION_USERS.items():
            if getattr(options, name) != getattr(defaults, name) and scenario not in users:
                takes = f"scenario {users[0]}" if len(users) == 1 else \
                    f"the {', '.join(users[:-1])} and {users[-1]} scenarios"
                raise SpecError(f"scenario_options.{name}", f"scenario {scenario} does not use it; it applies to "
                                                            f"{takes}")
        for name in ("find_peak", "warmup_until_stable"):
            if not isinstance(getattr(options, name), bool):
                raise SpecError(f"scenario_options.{name}", f"must be true or false, got {getattr(options, name)!r}")
        if options.qps is not None and (not _is_number(options.qps) or not 0 < options.qps <= MAX_QPS):
            raise SpecError("scenario_options.qps", f"a rate in queries per second, > 0 and ≤ {MAX_QPS:,}; "
                                                    f"got {options.qps!r}")
        if options.latency_bound_ms is not None:
            _positive_number("scenario_options.latency_bound_ms", options.latency_bound_ms, upper=3_600_000)
        if options.concurrency is not None:
            _positive_int("scenario_options.concurrency", options.concurrency, upper=256)
        if options.streams is not None:
            _positive_int("scenario_options.streams", options.streams, upper=65536)
        streams = options.streams or DEFAULT_STREAMS
        if scenario == "multi-stream" and streams % self.batch:
            divisors = [d for d in range(1, streams + 1) if streams % d == 0]
            raise SpecError("scenario_options.streams" if options.streams else "batch",
                            f"a multi-stream query of {streams} samples is served in calls of batch {self.batch}, "
                            f"which does not divide it; use a batch of {', '.join(map(str, divisors[-6:]))} "
                            f"(batch {streams}: one call a query) or another number of streams")
        if options.samples_per_query is not None:
            _positive_int("scenario_options.samples_per_query", options.samples_per_query, upper=10**9)
            if self.iterations is not None:
                raise SpecError("scenario_options.samples_per_query", "give either iterations or samples_per_query "
                                "(both say when an offline run ends)")
        if options.max_queries is not None:
            _positive_int("scenario_options.max_queries", options.max_queries, upper=10**9)
        if options.warmup_cap_s is not None:
            _positive_number("scenario_options.warmup_cap_s", options.warmup_cap_s, upper=3600)
            if not options.warmup_until_stable:
                raise SpecError("scenario_options.warmup_cap_s", "caps a warm-up until stable; turn on "
                                "warmup_until_stable too, or set warmup_s for a fixed warm-up")
        if scenario == "server":
            if options.find_peak and options.latency_bound_ms is None:
                raise SpecError("scenario_options.latency_bound_ms", "find_peak searches for the highest rate whose "
                                "p99 stays under a bound: give the bound in milliseconds")
            if not options.find_peak and options.qps is None:
                raise SpecError("scenario_options.qps", "scenario server needs a target rate (queries per second), "
                                "or find_peak with a latency bound")
        if scenario in _LOAD_SCENARIOS and self.mode != "inference" and (
                scenario != "offline" or (options.concurrency or 1) > 1):
            raise SpecError("mode", f"scenario {scenario} measures inference" +
                            (" when concurrency > 1 (training steps on one model cannot overlap)"
                             if scenario == "offline" else "") + "; use mode inference")

    def _validate_engine_options(self) -> None:
        if self.torch.compile is not None:
            _choice("torch.compile", self.torch.compile, list(COMPILE_MODES))
        _choice("ort.graph_optimization", self.ort.graph_optimization, list(GRAPH_OPTIMIZATION))
        _choice("ort.execution_mode", self.ort.execution_mode, list(EXECUTION_MODES))
        if self.ort.inter_op_threads is not None:
            _positive_int("ort.inter_op_threads", self.ort.inter_op_threads, upper=4096)
        if self.ort.provider is not None and not str(self.ort.provider).endswith("ExecutionProvider"):
            raise SpecError("ort.provider", f"{self.ort.provider!r} is not an execution provider name "
                                            "(e.g. CPUExecutionProvider, CUDAExecutionProvider)")
        _positive_int("ort.opset", self.ort.opset, upper=30)


def is_model_path(model: str) -> bool:
    """A model is a file when it has a path separator or a file extension; catalog names have neither."""
    return isinstance(model, str) and ("/" in model or os.sep in model or "." in os.path.basename(model))


def _from_dict(cls, data: Any, prefix: str):
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise SpecError(prefix.rstrip(".") or "spec", f"expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise SpecError(f"{prefix}{unknown[0]}", f"unknown field; known fields are {', '.join(sorted(fields))}")
    values = {}
    for name, value in data.items():
        nested = _NESTED.get((cls, name))
        values[name] = _from_dict(nested, value or {}, f"{prefix}{name}.") if nested else value
    return cls(**values)


_NESTED = {(RunSpec, "limits"): RunLimits, (RunSpec, "torch"): TorchOptions, (RunSpec, "ort"): OrtOptions,
           (RunSpec, "generation"): GenerationOptions, (RunSpec, "scenario_options"): ScenarioOptions}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _is_indexed(target: str, prefix: str) -> bool:
    head, _, index = target.partition(":")
    return head == prefix and (index == "" or index.isdigit())


def _choice(name: str, value: Any, allowed: list[str], hint: str = "") -> None:
    if value not in allowed:
        raise SpecError(name, f"unknown value {value!r}; allowed: {', '.join(allowed)}" + (f" ({hint})" if hint else ""))


def _positive_int(name: str, value: Any, upper: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= upper:
        raise SpecError(name, f"must be a whole number from 1 to {upper}, got {value!r}")


def _positive_number(name: str, value: Any, upper: float) -> None:
    if not _is_number(value) or not 0 < value <= upper:
        raise SpecError(name, f"must be a number > 0 and ≤ {upper:g}, got {value!r}")
