"""The report's first sentence: what was found, in plain words, with the interval that makes it defensible.

Why a sentence of its own: the director who forwards a report reads only this. So it states the comparison the
runs were made for (what differs between them, named as a person would), the factor with its 95% interval, and the
energy per inference where it was measured; it claims a difference only when the console's compare does (ratio
beyond the noise AND the block test agree), claims "equally fast" only when the whole interval lies inside the
noise band, and otherwise says what the runs did resolve ("could not tell apart: … is between 32% faster and 1%
slower") with the smallest difference they could have resolved. It prints no figure the verdict does not rest
on (no p-value from a test the interval disagrees with), and it never calls a run that lost data or failed its
validity rules a clean measurement.
"""

from __future__ import annotations

from typing import Any

from console.report.content import Report, RunView

SPOKEN_FIELDS = ("engine", "precision", "batch", "target", "threads", "mode", "scenario", "model")


# ---- Public API
def finding(report: Report) -> str:
    from console.report.storage_section import storage_finding

    storage = storage_finding(report)  # storage runs: their figures, not "per call at the median"
    if storage is not None:
        return storage
    from console.report.collectives_section import collectives_finding

    collectives = collectives_finding(report)  # collectives runs: busbw and small-size latency
    if collectives is not None:
        return collectives
    if report.kind == "sweep":
        return _sweep_sentence(report)
    if report.kind == "comparison":
        return _comparison_sentence(report)
    return _run_sentence(report.runs[0])


def factor_text(ratio: float) -> tuple[str, float]:
    """("faster"|"slower", factor ≥ 1) for a latency ratio B/A, as people say it: 0.5 → ("faster", 2.0)."""
    return ("faster", 1 / ratio) if ratio < 1 else ("slower", ratio)


def value_label(field: str, value: Any) -> str:
    """A configuration value as people name it: torch → PyTorch, batch 8, 2 threads."""
    if field == "engine":
        from engines import backends

        try:
            return backends.info(str(value)).label
        except KeyError:
            return str(value)
    if field == "batch":
        return f"batch {value}"
    if field == "threads":
        return "default threads" if value in (None, 0) else f"{value} thread{'s' if value != 1 else ''}"
    return str(value)


# ---- Private API
def _run_sentence(view: RunView) -> str:
    summary, run = view.summary, view.run
    if run.get("status") != "completed":
        why = run.get("error") or summary.get("message") or "see its status"
        return (f"This run did not complete ({run.get('status')}): {_first_line(why)}. Its figures, if any, cover "
                "only what was stored before it stopped.")
    latency = summary.get("latency_ms") or {}
    p50, ci = latency.get("p50"), (latency.get("ci95") or {}).get("p50")
    if p50 is None:
        return f"{view.label} stored no latency figures."
    interval = f" (95% CI {_ms(ci[0])}–{_ms(ci[1])} ms)" if ci else ""
    text = f"On this machine, {view.label} takes {_ms(p50)} ms per call at the median{interval}"
    throughput = summary.get("throughput_per_s")
    if throughput:
        text += f" and sustains {throughput:,.0f} samples/s"
    text += _energy_clause(summary) + "."
    return text + " " + _validity_clause(summary)


def _comparison_sentence(report: Report) -> str:
    a = report.runs[0]
    if len(report.runs) == 2:
        delta, b = report.deltas[0], report.runs[1]
        if delta.get("ratio") is None:
            return f"Run {a.letter} and run {b.letter} cannot be compared: {delta['explanation']}."
        name_b, name_a, subject = _contrast(report.differences[0], a, b)
        low, high = delta["ci95"]
        if delta["verdict"] == "equivalent":
            text = (f"{name_b} and {name_a} serve {subject} equally fast on this machine, within "
                    f"±{delta['noise']:.0%} (ratio {delta['ratio']:.3g}, 95% CI {low:.3g}–{high:.3g}, all of it "
                    "inside that band)")
        elif delta["verdict"] not in ("faster", "slower"):  # undecided: what was resolved, never "equally fast"
            resolved = str(delta.get("resolved") or "")
            resolved = resolved[2:] if resolved.startswith("B ") else f"takes {delta['ratio']:.3g}× the time"
            who = f"run {b.letter}" if name_b.startswith("Run ") else name_b
            figures = f"(ratio {delta['ratio']:.3g}, 95% CI {low:.3g}–{high:.3g})"
            word = "slower" if delta["ratio"] > 1 else "faster"
            if delta.get("unresolved") == "test":  # the interval is clear of the band, the test is not convinced
                text = (f"{name_b} is not shown {word} than {name_a} serving {subject} on this machine: by the "
                        f"interval {who} {resolved} {figures}, but the {delta.get('p_label') or 'test p'} = "
                        f"{delta['p_value']:.2g} does not reach {delta.get('alpha', 0.01):g}")
            elif delta.get("unresolved") == "noise":
                text = (f"{name_b} is not shown {word} than {name_a} serving {subject} on this machine beyond the "
                        f"±{delta['noise']:.0%} noise: {who} {resolved} {figures}")
            else:
                text = (f"{name_b} and {name_a} could not be told apart serving {subject} on this machine: {who} "
                        f"{resolved} {figures}")
            if delta.get("mde_text"):
                text += f"; {delta['mde_text']}"
        else:
            # said of the quicker run, whichever is A: "X serves this model 1.9× faster than Y (95% CI …)"
            word, factor = factor_text(delta["ratio"])
            quick, slow, (lo, hi) = ((name_b, name_a, (1 / high, 1 / low)) if word == "faster"
                                     else (name_a, name_b, (low, high)))
            text = (f"{quick} serves {subject} {factor:.2g}× faster than {slow} on this machine "
                    f"(95% CI {lo:.2g}–{hi:.2g}×)")
        if delta["verdict"] in ("faster", "slower"):  # only a shown difference has a quicker run
            quicker = b if delta["ratio"] < 1 else a
            text += _energy_clause(quicker.summary)
        text += "."
        problems = [view.letter for view in report.runs if not _clean(view)]
        if problems:
            text += (f" Caution: run {problems[0]} is not a valid measurement (see its rules below)." if len(problems) == 1
                     else f" Caution: runs {' and '.join(problems)} are not valid measurements (see their rules below).")
        return text
    timed = [(view, (view.summary.get("latency_ms") or {}).get("p50")) for view in report.runs]
    timed = [(view, p50) for view, p50 in timed if p50]
    if len(timed) < 2:
        return f"{len(report.runs)} runs, of which fewer than two stored latencies: nothing to compare."
    best, worst = min(timed, key=lambda item: item[1]), max(timed, key=lambda item: item[1])
    return (f"Of {len(report.runs)} runs, {best[0].letter} ({best[0].label}) is the quickest at {_ms(best[1])} ms "
            f"per call at the median, {worst[1] / best[1]:.2g}× quicker than the slowest, {worst[0].letter} "
            f"({worst[0].label}); each run against A, with its interval, is in the table below.")


def _sweep_sentence(report: Report) -> str:
    sweep = report.sweep or {}
    points = [view for view in report.runs if view.run.get("status") == "completed" and view.summary]
    name = sweep.get("name") or str(sweep.get("sweep_id", ""))[:8]
    if not points:
        return f"Sweep {name}: no point completed, so there is nothing to report but the failures below."
    best = max(points, key=lambda view: view.summary.get("throughput_per_s") or 0)
    knee = (sweep.get("summary") or {}).get("knee")
    text = (f"Sweep {name}: of {len(report.runs)} points, {best.label} sustains the most, "
            f"{(best.summary.get('throughput_per_s') or 0):,.0f} samples/s at {_ms(_p50(best))} ms median latency")
    if isinstance(knee, dict) and knee.get("label"):
        text += f"; the knee (90% of the best throughput for the least) is {knee['label']}"
    failed = len(report.runs) - len(points)
    if failed:
        text += f"; {failed} point{'s' if failed > 1 else ''} did not complete"
    return text + "."


def _contrast(changes: list[dict[str, Any]], a: RunView, b: RunView) -> tuple[str, str, str]:
    """(what B is, what A is, what they both run) from the configuration differences, as people name them."""
    config = [change for change in changes if change["kind"] == "configuration"]
    spoken = [change for change in config if change["field"] in SPOKEN_FIELDS]
    if spoken and len({c["field"] for c in spoken}) == len(spoken) and len(spoken) <= 2:
        name_b = " with ".join(value_label(c["field"], c["b"]) for c in spoken)
        name_a = " with ".join(value_label(c["field"], c["a"]) for c in spoken)
        model_same = all(c["field"] != "model" for c in spoken)
        return name_b, name_a, ("this model" if model_same else "its model")
    if not config:
        return f"Run {b.letter}", f"run {a.letter} of the same configuration", "this model"
    return f"Run {b.letter} ({b.label})", f"run {a.letter} ({a.label})", "its model"


def _energy_clause(summary: dict[str, Any]) -> str:
    energy = summary.get("energy") or {}
    per = energy.get("joules_per_inference")
    if not per:
        return ""
    method = energy.get("method")
    how = {"counter": "read from the energy counter", "integrated": "integrated from power samples",
           "estimated": "ESTIMATED from a TDP model, not measured"}.get(method, method or "method not stated")
    return f", at {per:.3g} J per inference ({how})"


def _validity_clause(summary: dict[str, Any]) -> str:
    if summary.get("valid"):
        return "The measurement is VALID (every LoadGen-style rule held)."
    rules = [reason.get("rule") or reason.get("detail") or "?" for reason in summary.get("invalid_reasons") or []]
    return (f"The measurement is INVALID ({', '.join(rules) or 'rules not met'}): treat the figures as "
            "indicative; the fixes are listed below.")


def _clean(view: RunView) -> bool:
    return view.run.get("status") == "completed" and bool(view.summary.get("valid"))


def _p50(view: RunView) -> float | None:
    return (view.summary.get("latency_ms") or {}).get("p50")


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def _first_line(text: str) -> str:
    return str(text).strip().splitlines()[0][:200] if str(text).strip() else "no reason stored"
