"""The confirmation's answer from its experiments: confirmed, refuted (and what the data says instead), undecided
at this machine's noise, or not testable here — with every experiment as evidence.

Why these words: a verdict a lab briefs an architect on must say whether the experiment that defines its class
came out as the class predicts. "Confirmed" needs every planned prediction to hold (the measured interval inside
the range); one that failed (the interval wholly outside) refutes it, and the data is then held against every
class's prediction for the same experiments: the class whose ranges hold every measured interval is what the data
says (ties broken by the verdict's own scores, the others named as fitting too), or "none of the classes". An
interval that neither held nor failed by the cap is "undecided at this machine's noise", never a guess.
All plain data (JSON-serialisable): stored with the run under summary["bottleneck"]["confirmation"].
"""

from __future__ import annotations

from typing import Any

from console.analysis.confirm.experiment import AS_PREDICTED, NOT_AS_PREDICTED, UNDECIDED, range_text
from console.analysis.confirm.plan import Plan
from console.analysis.confirm.predictions import PREDICTABLE

CONFIRMED, REFUTED, UNDECIDED_OUTCOME, UNTESTABLE, FAILED = "confirmed", "refuted", "undecided", "untestable", "failed"
NONE_OF_THE_CLASSES = "none of the classes"


# ---- Public API
def judge(plan: Plan, experiments: list[dict[str, Any]], failed: str | None = None) -> dict[str, Any]:
    """The confirmation block: outcome, sentence, tested, rival, verdict, says (the class the data matches when
    refuted), also_fits, experiments, untestable, and `failed` (why a round did not complete) when one did not."""
    block: dict[str, Any] = {"verdict": plan.verdict_class, "tested": plan.tested, "rival": plan.rival,
                             "experiments": experiments, "untestable": list(plan.untestable),
                             "notes": list(plan.notes)}
    outcomes = [e["outcome"] for e in experiments]
    if failed:
        block.update(outcome=FAILED, failed=failed,
                     sentence=f"not finished: {failed}" + (f" ({len(experiments)} experiment"
                                                         f"{'s' if len(experiments) != 1 else ''} done)"
                                                         if experiments else ""))
        return block
    if not plan.experiments:
        block.update(outcome=UNTESTABLE, sentence=f"not tested: {plan.reason}")
        return block
    if NOT_AS_PREDICTED in outcomes:
        says, also = what_the_data_says(experiments, plan.scores, exclude=plan.tested)
        shown = says == NONE_OF_THE_CLASSES or standing(experiments).get(says) == "in"
        words = (f"the data says {says} instead" + _also(also) if shown else
                 f"of the classes only {' and '.join([says, *also])} {'is' if not also else 'are'} not ruled out "
                 "(the data does not yet show it)")
        block.update(outcome=REFUTED, says=says, also_fits=also, shown=shown,
                     sentence=f"refuted — {words}: " + _failed(experiments))
        return block
    if all(o == AS_PREDICTED for o in outcomes):
        over = f" over {plan.rival}" if plan.rival else ""
        lead = "" if plan.verdict_class == plan.tested else f" (the verdict was {plan.verdict_class}; its lead)"
        stand = standing(experiments)
        out = [c for c, v in stand.items() if v == "out"]
        also = [c for c, v in stand.items() if v != "out" and c != plan.tested]
        tail = (f"; rules out {', '.join(out)}" if out else "") + \
            (f"; {' and '.join(also)} fit{'s' if len(also) == 1 else ''} these ratios too" if also else "")
        # a class the plan could not single out on paper may still be ruled out by what was measured
        block["untestable"] = [w for w in block["untestable"] if not any(w.startswith(f"{c}: no change") for c in out)]
        block.update(outcome=CONFIRMED, says=plan.tested, rules_out=out, also_fits=also,
                     sentence=f"confirmed: {plan.tested}{over}{lead} — "
                              + "; ".join(f"{e['intervention']} ×{e['ratio']:.3g} within "
                                          f"{range_text(e['predicted']['range'])}" for e in experiments) + tail)
        return block
    open_ones = [e for e in experiments if e["outcome"] == UNDECIDED]
    held = "".join(f"{e['intervention']} held (×{e['ratio']:.3g} within {range_text(e['predicted']['range'])}); "
                   for e in experiments if e["outcome"] == AS_PREDICTED)
    busy = [e for e in open_ones if e.get("interference")]
    parts = [f"{e['intervention']} reached [{e['ci95'][0]:.3g}, {e['ci95'][1]:.3g}] after {e['rounds']} rounds a "
             f"side, neither inside nor outside {plan.tested}'s {range_text(e['predicted']['range'])}"
             for e in open_ones if e not in busy]
    parts += [f"{e['intervention']} ×{e['ratio']:.3g} does not count: {e['interference']}" for e in busy]
    block.update(outcome=UNDECIDED_OUTCOME,
                 sentence="undecided at this machine's noise: " + held + "; ".join(parts)
                 + (" (run again when the machine is quiet: labconsole doctor names busy programs)" if busy else
                    " (more rounds: --confirm-max-rounds, or a quieter machine)"))
    return block


def what_the_data_says(experiments: list[dict[str, Any]], scores: dict[str, float] | None = None,
                       exclude: str | None = None) -> tuple[str, list[str]]:
    """(the class whose predictions every measured interval lies inside — else is not ruled out by — ranked by
    the verdict's scores; the other classes that fit as well), or (NONE_OF_THE_CLASSES, [])."""
    scores = scores or {}
    stand = {cls: v for cls, v in standing(experiments).items() if cls != exclude}
    # the data "says" a class only if it predicted the experiments that refuted the verdict: a class that could not
    # (an unknown cache size) is at most not ruled out, however well it fits the others
    decisive = [e for e in experiments if e.get("outcome") == NOT_AS_PREDICTED]
    stand = {cls: ("open" if v == "in" and any(_fits(e, cls) is None for e in decisive) else v)
             for cls, v in stand.items()}
    inside = [cls for cls, v in stand.items() if v == "in"]
    pool = inside or [cls for cls, v in stand.items() if v == "open"]
    if not pool:
        return NONE_OF_THE_CLASSES, []
    ranked = sorted(pool, key=lambda c: (-float(scores.get(c, 0.0)), PREDICTABLE.index(c)))
    return ranked[0], ranked[1:]


def standing(experiments: list[dict[str, Any]]) -> dict[str, str]:
    """Each predictable class against the measured intervals: "in" (inside every range it predicts), "out"
    (wholly outside one), "open" (neither); classes that predict none of these experiments are left out."""
    out: dict[str, str] = {}
    for cls in PREDICTABLE:
        fits = [v for v in (_fits(e, cls) for e in experiments) if v is not None]
        if fits:
            out[cls] = "out" if "out" in fits else "in" if all(v == "in" for v in fits) else "open"
    return out


def lines(confirmation: dict[str, Any]) -> list[str]:
    """The confirmation as text lines: the sentence, each experiment's, and what could not be tested."""
    out = [f"confirmation: {confirmation['sentence']}"]
    out += [f"  {e['sentence']}" for e in confirmation.get("experiments") or []]
    out += [f"  note: {note}" for note in confirmation.get("notes") or []]
    out += [f"  cannot test {why}" for why in confirmation.get("untestable") or []]
    return out


def table(confirmation: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the experiments, for a report: intervention, predicted, measured ratio [interval],
    rounds a side, outcome."""
    rows = [[str(e["intervention"]), f"{e['predicted']['class']} {range_text(e['predicted']['range'])}",
             f"×{e['ratio']:.3g} [{e['ci95'][0]:.3g}, {e['ci95'][1]:.3g}]", str(e["rounds"]), str(e["outcome"])]
            for e in confirmation.get("experiments") or []]
    return ["Intervention", "Predicted", "Measured (95% interval)", "Rounds a side", "Outcome"], rows


# ---- Private API
def _fits(experiment: dict[str, Any], cls: str) -> str | None:
    predicted = (experiment.get("predictions") or {}).get(cls)
    if not predicted:
        return None
    low, high = experiment["ci95"]
    a, b = predicted["range"]
    b = float("inf") if b is None else b
    if a <= low and high <= b:
        return "in"
    if high < a or low > b:
        return "out"
    return "open"


def _failed(experiments: list[dict[str, Any]]) -> str:
    return "; ".join(f"{e['intervention']} ×{e['ratio']:.3g} [{e['ci95'][0]:.3g}, {e['ci95'][1]:.3g}] where "
                     f"{e['predicted']['class']} predicted {range_text(e['predicted']['range'])}"
                     for e in experiments if e["outcome"] == NOT_AS_PREDICTED)


def _also(also: list[str]) -> str:
    if not also:
        return ""
    return f" ({' and '.join(also)} fit{'s' if len(also) == 1 else ''} as well: these experiments do not tell them apart)"
