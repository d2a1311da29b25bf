"""The bookkeeping of the confirmed-verdicts benchmark (test_confirmed_verdicts.py): which label each case's
confirmation established, the confusion matrix of verdicts against those labels, the badly wrong verdicts and the
agreement between repeats, and the confidence's calibration against what the experiments found.

Why labels from the confirmation: on the synthetic suite the expected class is known by construction, but on a
catalog model at some size and thread count nobody knows it; the experiment that defines a class (more data, twice
the ops, twice the threads, interleaved with the original) does. A confirmed verdict's label is its class; a
refuted one's is what the data says instead (or "none" of the classes, or "open" when the data only fails to rule
some out); an undecided, untestable or failed confirmation establishes nothing and is counted as such.

Badly wrong: a prediction of the verdict's class that failed by a wide margin — the measured interval lies
WIDE_MARGIN times or more beyond the predicted range (the issue's detector called host-overhead, predicted
≤ ×1.25 for 4× the pixels, measured ×4.4–6.8). A near miss (a compute verdict whose data ×2 came out ×1.1
against ×1.2–3.0) is refuted, not badly wrong.

Pure logic (no numpy, no torch): unit-tested in tests/unit/test_bench_confusion.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

WIDE_MARGIN = 2.0  # the interval lies at least ×2 beyond the nearest bound of the predicted range
OUTCOMES = ("confirmed", "refuted", "undecided", "untestable", "failed")
NONE, OPEN = "none", "open"  # refuted: no class fits; refuted: some classes merely not ruled out
NOT_ESTABLISHED = ("undecided", "untestable", "failed")


# ---- Public API
def established(block: dict[str, Any]) -> str:
    """The label a confirmation block establishes: a class, "none", "open", or its outcome when it decided
    nothing (undecided | untestable | failed)."""
    outcome = block.get("outcome")
    if outcome == "confirmed":
        return str(block.get("says") or block.get("tested"))
    if outcome == "refuted":
        says = block.get("says")
        if says in (None, "none of the classes"):
            return NONE
        return str(says) if block.get("shown", True) else OPEN
    return str(outcome) if outcome in NOT_ESTABLISHED else "failed"


def margin(experiment: dict[str, Any]) -> float:
    """How far the measured interval lies beyond the tested class's predicted range, as a factor (1.0 when it
    is not wholly outside): interval above the range → its low ÷ the range's high; below → the range's low ÷ its
    high."""
    if experiment.get("outcome") != "not as predicted":
        return 1.0
    low, high = (float(x) for x in experiment["ci95"])
    a, b = experiment["predicted"]["range"]
    if b is not None and low > float(b) > 0:
        return low / float(b)
    if high < float(a):
        return float(a) / high if high > 0 else float("inf")
    return 1.0


def badly_wrong(block: dict[str, Any], wide: float = WIDE_MARGIN) -> list[str]:
    """The experiments of a confirmation whose prediction failed by `wide` or more, as "<intervention> ×<ratio>
    where <class> predicted <range> (×<margin> beyond)" — empty when none did."""
    out = []
    for e in block.get("experiments") or []:
        factor = margin(e)
        if factor >= wide:
            a, b = e["predicted"]["range"]
            shown = f"≥ ×{a:.3g}" if b is None else f"×{a:.3g}–{b:.3g}"
            out.append(f"{e['intervention']} ×{e['ratio']:.3g} [{e['ci95'][0]:.3g}, {e['ci95'][1]:.3g}] where "
                       f"{e['predicted']['class']} predicted {shown} (×{factor:.2g} beyond)")
    return out


def agreement(repeats: Iterable[Sequence[str]]) -> tuple[int, int]:
    """(cases whose repeated verdicts all name the same class, cases with at least two repeats that gave a verdict;
    "none", a run without an op table, gave none)."""
    same = total = 0
    for classes in repeats:
        if len(classes) < 2 or NONE in classes:
            continue
        total += 1
        same += len(set(classes)) == 1
    return same, total


def matrix_lines(pairs: Iterable[tuple[str, str]], rows_title: str = "verdict") -> list[str]:
    """A confusion matrix as text: one row per first value (a verdict), one column per label, counts in the cells;
    labels that decided nothing come last. Empty cells print "·" so the counts stand out."""
    pairs = list(pairs)
    counts = Counter(pairs)
    rows = sorted({r for r, _ in pairs})
    labels = {c for _, c in pairs}
    tail = [c for c in (OPEN, NONE, *NOT_ESTABLISHED) if c in labels]
    columns = sorted(labels - set(tail)) + tail
    width = max([len(rows_title) + 9, *(len(r) for r in rows)]) + 1
    cells = [max(len(c), 3) for c in columns]
    corner = rows_title + " \\ established"
    width = max(width, len(corner) + 1)
    out = [f"{corner:<{width}}" + " ".join(f"{c:>{w}}" for c, w in zip(columns, cells, strict=True))]
    for r in rows:
        out.append(f"{r:<{width}}" + " ".join(f"{counts[(r, c)] or '·':>{w}}" for c, w in zip(columns, cells,
                                                                                          strict=True)))
    return out


def outcome_lines(rows: Iterable[tuple[str, str]], title: str) -> list[str]:
    """Per class (the first value), how many confirmations came out confirmed, refuted, undecided, untestable,
    failed: the matrix the brief of `make bench` asks for, by verdict or by expected class."""
    rows = list(rows)
    counts = Counter(rows)
    classes = sorted({c for c, _ in rows})
    width = max([len(title), *(len(c) for c in classes)]) + 1
    out = [f"{title:<{width}}" + " ".join(f"{o:>10}" for o in OUTCOMES)]
    for c in classes:
        out.append(f"{c:<{width}}" + " ".join(f"{counts[(c, o)] or '·':>10}" for o in OUTCOMES))
    return out


CALIBRATION_BINS = (0.0, 0.8, 0.95, 1.0)  # the confidence shown: below 0.8 is "inconclusive" territory


def calibration(rows: Iterable[tuple[float | None, str]], bins: Sequence[float] = CALIBRATION_BINS
                ) -> list[dict[str, Any]]:
    """What the confidence shown meant: per bin of confidence (the last bin closed), of the cases whose
    confirmation decided (confirmed or refuted), how many, their mean confidence and the share confirmed. A
    calibrated confidence has its confirmed share near its mean confidence in every bin."""
    decided = [(float(c), o) for c, o in rows if c is not None and o in ("confirmed", "refuted")]
    out = []
    for low, high in zip(bins, bins[1:], strict=False):
        inside = [(c, o) for c, o in decided if low <= c < high or (high == bins[-1] and c == high)]
        if inside:
            out.append({"bin": (low, high), "cases": len(inside),
                        "mean_confidence": sum(c for c, _ in inside) / len(inside),
                        "confirmed": sum(o == "confirmed" for _, o in inside)})
    return out


def calibration_lines(bins: list[dict[str, Any]]) -> list[str]:
    """The calibration table as text: bin, decided cases, mean confidence shown, confirmed share."""
    out = [f"{'confidence':<12}{'decided':>8}{'mean shown':>12}{'confirmed':>11}"]
    for row in bins:
        low, high = row["bin"]
        out.append(f"{f'{low:.2f}–{high:.2f}':<12}{row['cases']:>8}{row['mean_confidence']:>12.2f}"
                   f"{row['confirmed'] / row['cases']:>11.2f}")
    return out
