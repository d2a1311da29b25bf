"""RunSpec: the one description of a run that the window, the CLI and a worker all agree on.

Plain, JSON-serialisable data, validated before anything is spawned, so that a typo fails in
milliseconds with the field name and the allowed values rather than seconds later in a worker.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from engines import backends, catalog, scenarios

SPEC_VERSION = 1
TARGETS_PREFIXES = ("cpu", "cuda", "mps")


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
class RunSpec:
    model: str = "mlp"
    engine: str = "torch"
    target: str = "cpu"
    batch: int = 1
    duration_s: float = 5.0
    iterations: int | None = None
    warmup_s: float = 1.0
    threads: int | None = None
    precision: str = "fp32"
    scenario: str = "single-stream"
    name: str = ""
    limits: RunLimits = field(default_factory=RunLimits)
    version: int = SPEC_VERSION

    # ---- Public API
    def validate(self) -> RunSpec:
        """Raise SpecError naming the first bad field; return self so calls chain."""
        _choice("model", self.model, catalog.names())
        _choice("engine", self.engine, backends.names())
        _choice("scenario", self.scenario, scenarios.names())
        _choice("precision", self.precision, ["fp32"])
        if not isinstance(self.target, str) or not (
            self.target == "cpu" or self.target == "mps" or _is_indexed(self.target, "cuda")
        ):
            raise SpecError("target", f"unknown target {self.target!r}; use cpu, cuda:N or mps "
                                      "(`labconsole targets` lists what this machine has)")
        _positive_int("batch", self.batch, upper=65536)
        _positive_number("duration_s", self.duration_s, upper=24 * 3600)
        if self.iterations is not None:
            _positive_int("iterations", self.iterations, upper=10**9)
        if not _is_number(self.warmup_s) or self.warmup_s < 0:
            raise SpecError("warmup_s", f"must be a number ≥ 0 seconds, got {self.warmup_s!r}")
        if self.threads is not None:
            _positive_int("threads", self.threads, upper=4096)
        _positive_number("limits.load_timeout_s", self.limits.load_timeout_s, upper=86400)
        _positive_number("limits.stall_timeout_s", self.limits.stall_timeout_s, upper=86400)
        if self.version != SPEC_VERSION:
            raise SpecError("version", f"spec version {self.version} is not supported (this build reads {SPEC_VERSION})")
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        """Build from plain data; unknown keys are an error (a misspelt option must not be ignored)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(unknown[0], f"unknown field; known fields are {', '.join(sorted(known))}")
        values = dict(data)
        limits = values.pop("limits", None) or {}
        if isinstance(limits, RunLimits):
            limits = dataclasses.asdict(limits)
        limit_fields = {f.name for f in dataclasses.fields(RunLimits)}
        bad = sorted(set(limits) - limit_fields)
        if bad:
            raise SpecError(f"limits.{bad[0]}", f"unknown field; known: {', '.join(sorted(limit_fields))}")
        return cls(limits=RunLimits(**limits), **values)

    def label(self) -> str:
        """Short human label, e.g. 'mlp · torch · cpu · b1'."""
        return f"{self.model} · {self.engine} · {self.target} · b{self.batch}"


# ---- Private API
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _is_indexed(target: str, prefix: str) -> bool:
    head, _, index = target.partition(":")
    return head == prefix and (index == "" or index.isdigit())


def _choice(name: str, value: Any, allowed: list[str]) -> None:
    if value not in allowed:
        raise SpecError(name, f"unknown value {value!r}; allowed: {', '.join(allowed)}")


def _positive_int(name: str, value: Any, upper: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= upper:
        raise SpecError(name, f"must be a whole number from 1 to {upper}, got {value!r}")


def _positive_number(name: str, value: Any, upper: float) -> None:
    if not _is_number(value) or not 0 < value <= upper:
        raise SpecError(name, f"must be a number > 0 and ≤ {upper:g}, got {value!r}")
