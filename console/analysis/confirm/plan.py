"""Which interventions to run: those whose predicted outcomes tell the verdict from its runner-up.

Why only those: an experiment both classes predict alike (twice the FLOPs for compute and for memory work that
doubles its bytes too) costs rounds and proves nothing. A planned experiment's two ranges do not overlap and lie
at least MIN_SEPARATION apart, so a measured interval of ordinary width lands in one or in neither. Per kind of
axis (data, ops, threads) the smallest decisive change is taken (the cheapest to run), up to `max_experiments`.
For an inconclusive verdict the two leading classes are tested against each other (the first is the one tested);
for a decided one, the verdict against its runner-up (or, when it names none, the predictable class scored next).
When the verdict names no runner-up (or no change tells it apart), the plan takes the changes that exclude the
most other classes (one per kind, the cheapest on a tie, data no more than ×8) and says so: a verdict is still
tested on its own prediction, against everything a change can exclude.
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
COVER_MAX_FACTOR = 8  # without a named runner-up, no data change that makes a call more than ~8× as long
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
    notes: list[str] = field(default_factory=list)  # how the rival was chosen, when the verdict named none
    scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict_class, "tested": self.tested, "rival": self.rival,
                "experiments": [e.to_dict() for e in self.experiments], "untestable": list(self.untestable),
                "reason": self.reason, "notes": list(self.notes)}


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
    named = verdict.get("secondary") == rival or verdict.get("class") == INCONCLUSIVE  # the two leading classes
    if named and any(chosen.values()):
        for kind in KINDS:
            candidates = chosen[kind]
            if not candidates:
                if any(axis.kind == kind for axis in axes.axes):
                    out.untestable.append(f"{kind}: no change of this kind tells {tested} from {rival} (their "
                                          "predicted ranges overlap)")
                continue
            axis, mine, theirs = min(candidates, key=lambda c: (c[0].factor, c[0].name))
            if len(out.experiments) < max_experiments:
                out.experiments.append(Planned(axis, mine, theirs, _everyone(axis, context)))
    else:
        _cover(tested, rival if named else None, axes, context, out, scores, max_experiments)
    if not out.experiments:
        out.reason = f"no intervention this model allows tells {tested} from {rival} or any other class"

    return out


def _cover(tested: str, named: str | None, axes: Axes, context: Context, out: Plan, scores: dict[str, float],
           max_experiments: int) -> None:
    """No runner-up named, or one no change separates: the changes (one per kind, data ≤ ×COVER_MAX_FACTOR) that
    exclude the most other classes, greedily, cheapest first on a tie; each names as its rival the best-scored
    class it excludes that no earlier one did."""
    others = [c for c in PREDICTABLE if c != tested]
    options = []
    for axis in axes.axes:
        mine = predict(tested, axis, context)
        if axis.kind == "data" and axis.factor > COVER_MAX_FACTOR or not isinstance(mine, Prediction):
            continue
        apart = {c: p for c in others if isinstance(p := predict(c, axis, context), Prediction)
                 and separation(mine, p) >= MIN_SEPARATION}
        if apart:
            options.append((axis, mine, apart))
    uncovered, kinds = set(others), set()
    while len(out.experiments) < max_experiments:
        pool = [o for o in options if o[0].kind not in kinds]
        if not pool:
            break
        axis, mine, apart = min(pool, key=lambda o: (-len(set(o[2]) & uncovered), _cost(o[0]), o[0].name))
        fresh = [c for c in apart if c in uncovered] or list(apart)
        rival = min(fresh, key=lambda c: (-scores.get(c, 0.0), PREDICTABLE.index(c)))
        out.experiments.append(Planned(axis, mine, apart[rival], _everyone(axis, context)))
        uncovered -= set(apart)
        kinds.add(axis.kind)
    if not out.experiments:
        return
    out.rival = out.experiments[0].rival.cls
    excluded = [c for c in others if c not in uncovered]
    lead = f"no change tells {tested} from {named}" if named else "no runner-up named"
    out.notes.append(f"{lead}: tested against the classes a change can exclude ({', '.join(excluded)})")
    for cls in others:
        if cls in uncovered and cls != named:
            out.untestable.append(f"{cls}: no change this model allows (data ×{COVER_MAX_FACTOR} at most) tells it "
                                  f"from {tested}")


def _everyone(axis: Axis, context: Context) -> dict[str, Prediction]:
    return {name: p for name in PREDICTABLE if isinstance(p := predict(name, axis, context), Prediction)}


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
