"""Which interventions to run: those whose predicted outcomes tell the verdict from its runner-up.

Why only those: an experiment both classes predict alike (twice the FLOPs for compute and for memory work that
doubles its bytes too) costs rounds and proves nothing. A planned experiment's two ranges do not overlap and lie
at least MIN_SEPARATION apart, so a measured interval of ordinary width lands in one or in neither. Per kind of
axis (data, ops, threads) the smallest decisive change is taken (the cheapest to run), up to `max_experiments`.
For an inconclusive verdict the two leading classes are tested against each other (the first is the one tested);
for a decided one, the verdict against its runner-up (or, when it names none, the predictable class scored next).
When no change this model allows tells the two apart, the next class by score that one does is the rival
instead, and the plan says so: a verdict is still tested on its own prediction, against what can be excluded.
What cannot be planned says why: the model has no such axis, a class makes no prediction for it, or the two
predictions overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.analysis.bottleneck import CLASSES, INCONCLUSIVE
from console.analysis.confirm.axes import Axes, Axis
from console.analysis.confirm.predictions import PREDICTABLE, Context, Prediction, predict, separation

MIN_SEPARATION = 1.1  # the ranges lie at least 10% apart (ratio of one's low to the other's high)
MAX_EXPERIMENTS = 2
KINDS = ("data", "ops", "threads")


@dataclass(frozen=True)
class Planned:
    """One experiment: the axis, the tested class's prediction, the rival's, and every predictable class's (to
    name what the data says when the tested one fails)."""

    axis: Axis
    tested: Prediction
    rival: Prediction
    predictions: dict[str, Prediction]

    def to_dict(self) -> dict[str, Any]:
        return {"intervention": self.axis.name, "axis": self.axis.to_dict(), "predicted": self.tested.to_dict(),
                "rival": self.rival.to_dict(),
                "predictions": {name: p.to_dict() for name, p in self.predictions.items()}}


@dataclass
class Plan:
    verdict_class: str
    tested: str | None
    rival: str | None
    experiments: list[Planned] = field(default_factory=list)
    untestable: list[str] = field(default_factory=list)
    reason: str = ""  # why nothing is planned, when nothing is
    scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict_class, "tested": self.tested, "rival": self.rival,
                "experiments": [e.to_dict() for e in self.experiments], "untestable": list(self.untestable),
                "reason": self.reason}


# ---- Public API
def plan(verdict: dict[str, Any], axes: Axes, context: Context | None = None,
         max_experiments: int = MAX_EXPERIMENTS) -> Plan:
    """The experiments that tell the verdict (or, inconclusive, its leading class) from the rival."""
    context = context or Context()
    scores = {k: float(v) for k, v in (verdict.get("scores") or {}).items() if isinstance(v, (int, float))}
    tested, rival = leading_pair(verdict)
    out = Plan(str(verdict.get("class")), tested, rival, untestable=list(axes.untestable), scores=scores)
    if tested is None or tested not in PREDICTABLE:
        why = predict(tested or "?", axes.axes[0], context) if axes.axes and tested else None
        out.reason = (f"no intervention here tests {tested or 'this verdict'}"
                      + (f" ({why.split(': ', 1)[-1]})" if isinstance(why, str) else ""))
        return out
    if rival is None:
        out.reason = f"no other class to tell {tested} from"
        return out
    said: set[str] = set()
    chosen = _decisive(tested, rival, axes, context, out, said)
    named = verdict.get("secondary") == rival
    if not any(chosen.values()) or not named:
        # No runner-up named, or one no change can tell apart: the class the cheapest decisive change excludes
        # (ties: the higher score), so a verdict is still tested on its own prediction.
        options = []
        for other in [rival, *_rivals(verdict, tested, exclude=rival)]:
            found = chosen if other == rival else _decisive(tested, other, axes, context,
                                                            Plan(out.verdict_class, tested, other), set())
            cost = min((_cost(axis) for kind in KINDS for axis, _, _ in found[kind]), default=None)
            if cost is not None:
                options.append((cost, -scores.get(other, 0.0), _rivals(verdict, tested, "").index(other), other,
                                found))
        if options:
            _, _, _, other, found = min(options, key=lambda o: o[:3])
            if other != rival:
                out.untestable.append(f"no runner-up named: tested against {other}, which the cheapest change "
                                      "can exclude" if not named else
                                      f"no change tells {tested} from {rival}: tested against {other} instead")
            out.rival, chosen = other, found
    for kind in KINDS:
        candidates = chosen[kind]
        if not candidates:
            if any(axis.kind == kind for axis in axes.axes):
                out.untestable.append(f"{kind}: no change of this kind tells {tested} from {out.rival} (their "
                                      "predicted ranges overlap)")
            continue
        axis, mine, theirs = min(candidates, key=lambda c: (c[0].factor, c[0].name))
        if len(out.experiments) < max_experiments:
            everyone = {name: p for name in PREDICTABLE if isinstance(p := predict(name, axis, context), Prediction)}
            out.experiments.append(Planned(axis, mine, theirs, everyone))
    if not out.experiments:
        out.reason = f"no intervention this model allows tells {tested} from {rival} or any other class"

    return out


def _decisive(tested: str, rival: str, axes: Axes, context: Context, out: Plan,
              said: set[str]) -> dict[str, list[tuple[Axis, Prediction, Prediction]]]:
    """Per kind, the axes whose two predictions lie MIN_SEPARATION apart; why a class predicts nothing goes to
    `out.untestable` (once)."""
    by_kind: dict[str, list[tuple[Axis, Prediction, Prediction]]] = {kind: [] for kind in KINDS}
    for axis in axes.axes:
        mine, theirs = predict(tested, axis, context), predict(rival, axis, context)
        for answer in (mine, theirs):
            if isinstance(answer, str) and answer not in said:
                said.add(answer)
                out.untestable.append(f"{axis.name}: {answer}")
        if isinstance(mine, Prediction) and isinstance(theirs, Prediction) \
                and separation(mine, theirs) >= MIN_SEPARATION:
            by_kind[axis.kind].append((axis, mine, theirs))
    return by_kind


def _cost(axis: Axis) -> float:
    """How much longer a call of the changed configuration takes, roughly: the data or op factor (threads: 1)."""
    return 1.0 if axis.kind == "threads" else float(axis.factor)


def _rivals(verdict: dict[str, Any], tested: str, exclude: str) -> list[str]:
    scores = {k: float(v) for k, v in (verdict.get("scores") or {}).items() if isinstance(v, (int, float))}
    return sorted((k for k in PREDICTABLE if k not in (tested, exclude)),
                  key=lambda k: (-scores.get(k, 0.0), PREDICTABLE.index(k)))


def leading_pair(verdict: dict[str, Any]) -> tuple[str | None, str | None]:
    """(the class tested, its rival): the verdict and its runner-up; inconclusive: the two leading classes. A
    rival that makes no prediction is passed over for the next predictable class by score."""
    scores = {k: float(v) for k, v in (verdict.get("scores") or {}).items() if isinstance(v, (int, float))}
    ranked = sorted(scores, key=lambda k: (-scores[k], CLASSES.index(k) if k in CLASSES else len(CLASSES)))
    cls = verdict.get("class")
    tested = (ranked[0] if ranked else None) if cls == INCONCLUSIVE else cls
    secondary = verdict.get("secondary")
    if secondary in PREDICTABLE and secondary != tested:
        return tested, secondary
    rival = next((k for k in ranked if k != tested and k in PREDICTABLE), None)
    if rival is None:
        rival = next((k for k in PREDICTABLE if k != tested), None)
    return tested, rival
