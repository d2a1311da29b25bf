"""A run's summary as Markdown, to paste into a chat, an issue or a review document. Qt-free.

What it says is what the summary card says, in the same honesty: a figure that was not measured is "—" or "not
available (why)", never 0; each figure carries its unit and, for percentiles, its 95% interval; the verdict is
VALID or INVALID with each failed rule and its fix; what the load scenario reported, each figure with the caption,
unit and format the scenario declares on its registration (engines.figures), as the card shows them; energy names its method, and an estimate says "estimated" in
so many words; the verdict against the configuration's baseline when there is one; and the command that runs it
again (``console.spec.reproduce``).

Every string that came from a person or a file (a run name, a model path, a note) is escaped: a ``|`` cannot
split the table, a ``*`` or ``_`` cannot start emphasis, and ``<script>`` stays text in renderers that allow HTML.

Input: a stored run as ``HistoryStore.get_run`` returns it, or the Run page's ``finished`` record — a mapping with
``run_id``, ``status``, ``spec``, ``summary`` and optionally ``name``, ``error``/``message``, ``started_at``,
``hostname``.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

from console.analysis import kv_offload
from console.analysis.stability_text import noise_text, stability_line
from console.analysis.validity_text import rules_judged
from console.spec import reproduce
from engines import scenarios
from engines.figures import NOTES

__all__ = ["MISSING", "escape", "run_markdown", "title_line"]

MISSING = "—"

# (caption, path in the summary, unit, the percentile whose interval and backing apply)
_FIGURES: tuple[tuple[str, tuple[str, ...], str, str | None], ...] = (
    ("p50 latency", ("latency_ms", "p50"), "ms", "p50"),
    ("p90 latency", ("latency_ms", "p90"), "ms", "p90"),
    ("p99 latency", ("latency_ms", "p99"), "ms", "p99"),
    ("Mean latency", ("latency_ms", "mean"), "ms", None),
    ("Throughput", ("throughput_per_s",), "samples/s", None),
    ("Iterations", ("iterations",), "", None),
    ("Measured for", ("duration_s",), "s", None),
    ("Model load", ("load_s",), "s", None),
)
# How each energy method obtains its joules, in words a reader outside the lab follows.
ENERGY_METHODS = {
    "counter": "measured: hardware energy counter",
    "integrated": "measured: power samples integrated over time",
    "estimated": "estimated from a TDP model, not measured",
}
# Markdown's inline punctuation: what could start emphasis, code, a link, a strike-through or a table column.
# (Block markers such as "#" or "-" only act at the start of a line, and escaped text never starts one.)
_SPECIALS = re.compile(r"([\\`*_\[\]|~])")


# ---- Public API
def run_markdown(run: Mapping[str, Any]) -> str:
    """The whole Markdown block for one run (ends with a newline)."""
    spec = run.get("spec") if isinstance(run.get("spec"), Mapping) else {}
    summary = run.get("summary") if isinstance(run.get("summary"), Mapping) else {}
    lines = [f"### {title_line(run)}", ""]
    about = _about(run)
    if about:
        lines += [about, ""]
    problem = run.get("error") or (run.get("message") if run.get("status") in ("failed", "interrupted") else None)
    if problem:
        lines += [f"**{escape(str(run.get('status') or 'failed')).capitalize()}:** {escape(str(problem))}", ""]
    scenario = spec.get("scenario") if isinstance(spec.get("scenario"), str) else None
    lines += _table(summary)
    lines += _scenario_figures(scenario or run.get("scenario"), summary.get("scenario"))
    lines += [""] + _validity(summary, scenario)
    kv = kv_offload.block_of(summary)  # generate --kv-offload: the KV cache on storage and its judgement
    if kv:
        lines += ["", "**KV cache on storage:**"] + [f"- {escape(line)}" for line in kv_offload.lines(kv)]
    stability = stability_line(summary)  # stable / jittery machine (noise 15%), no drift / drift: … (and the noise)
    if stability:
        noise = noise_text(summary)
        beside = f" Read every interval above with the {noise}." if noise else ""
        lines += ["", f"**Stability:** {escape(stability)}.{beside}"]
    stabilised = summary.get("until_stable")
    if isinstance(stabilised, Mapping) and stabilised.get("text"):  # --until-stable: windows taken, final spread
        lines += ["", f"**Measured until stable:** {escape(str(stabilised['text']))}"]
    cores = _cores(summary)
    if cores:
        lines += ["", cores]
    baseline = _baseline(summary.get("baseline"))
    if baseline:
        lines += ["", baseline]
    finding = summary.get("bottleneck")
    if isinstance(finding, Mapping) and finding.get("sentence"):
        lines += ["", f"**Finding:** {escape(str(finding['sentence']))}"]
        lines += _confirmation(finding.get("confirmation"))
    lines += [""] + _reproduce(run, spec)
    return "\n".join(lines).rstrip() + "\n"


def _confirmation(block: Any) -> list[str]:
    """`analyze --confirm`'s answer under the finding: its sentence, then one line per experiment."""
    if not isinstance(block, Mapping) or not block.get("sentence"):
        return []
    experiments = [e for e in block.get("experiments") or [] if isinstance(e, Mapping) and e.get("sentence")]
    return ["", f"**Confirmation:** {escape(str(block['sentence']))}"] + \
        [f"- {escape(str(e['sentence']))}" for e in experiments]


def title_line(run: Mapping[str, Any]) -> str:
    """model · engine · target · precision · batch N · scenario, after the run's name when it has one (escaped)."""
    spec = run.get("spec") if isinstance(run.get("spec"), Mapping) else {}
    parts = [spec.get("model") or run.get("model"), spec.get("engine") or run.get("engine"),
             spec.get("target") or run.get("target"), spec.get("precision") or run.get("precision")]
    batch = spec.get("batch", run.get("batch"))
    parts.append(f"batch {batch}" if batch is not None else None)
    parts.append(spec.get("scenario") or run.get("scenario"))
    what = " · ".join(escape(str(part)) for part in parts if part not in (None, ""))
    name = run.get("name") or spec.get("name")
    if name:
        return f"{escape(str(name))} — {what}" if what else escape(str(name))
    return what or "Run"


def escape(text: str) -> str:
    """Plain text that Markdown (and the HTML some renderers allow) shows as is, on one line.

    ``&``, ``<`` and ``>`` become entities, so no tag or entity survives; Markdown's punctuation gets a
    backslash, so nothing turns into emphasis, a link, a heading or a table column; line breaks become spaces.
    """
    flat = " ".join(str(text).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIALS.sub(r"\\\1", flat)


# ---- Private API
def _about(run: Mapping[str, Any]) -> str:
    parts = []
    if run.get("run_id"):
        parts.append(f"run `{_code(str(run['run_id'])[:8])}`")
    if run.get("status"):
        parts.append(escape(str(run["status"])))
    if run.get("started_at"):
        parts.append(f"started {escape(str(run['started_at']))}")
    if run.get("hostname"):
        parts.append(f"on {escape(str(run['hostname']))}")
    return "Lab Console " + ", ".join(parts) if parts else ""


def _table(summary: Mapping[str, Any]) -> list[str]:
    latency = summary.get("latency_ms") if isinstance(summary.get("latency_ms"), Mapping) else {}
    ci95 = latency.get("ci95") if isinstance(latency.get("ci95"), Mapping) else {}
    rows = ["| Figure | Value | 95% interval |", "| :-- | --: | :-- |"]
    for caption, path, unit, percentile in _FIGURES:
        value = _lookup(summary, path)
        if _is_number(value):
            text = _quantity(value, unit)
        elif percentile and summary:
            text = _withheld(summary, percentile)
        else:
            text = MISSING
        interval = MISSING
        bounds = ci95.get(percentile) if percentile else None
        if _is_number(value) and isinstance(bounds, Sequence) and len(bounds) == 2 and all(map(_is_number, bounds)):
            interval = f"{_number(bounds[0])} – {_number(bounds[1])} {unit}"
        rows.append(f"| {caption} | {text} | {interval} |")
    for caption, text in _energy_rows(summary):
        rows.append(f"| {caption} | {text} | {MISSING} |")
    return rows


def _scenario_figures(name: Any, reported: Any) -> list[str]:
    """The figures the load scenario reported, as its registration declares them (engines.scenarios.figures_of),
    and its notes; nothing when it reported none."""
    if not isinstance(reported, Mapping):
        return []
    rows = scenarios.figures_of(name if isinstance(name, str) else None).rows(reported)
    notes = [str(reported[key]) for key in NOTES if reported.get(key)]
    if not rows and not notes:
        return []
    lines = ["", f"**{escape(str(name)) + ' scenario' if isinstance(name, str) and name else 'Scenario'}:**"]
    if rows:
        lines += ["", "| Figure | Value |", "| :-- | --: |"]
        lines += [f"| {escape(figure.caption)} | {escape(figure.text(value, _number))} |" for figure, value in rows]
    return lines + ([""] + [f"- {escape(note)}" for note in notes] if notes else [])


def _withheld(summary: Mapping[str, Any], percentile: str) -> str:
    """Why a percentile has no value: too few samples back it (LoadGen's early-stopping bound), or no data."""
    backing = ((summary.get("validity") or {}).get("percentiles") or {}).get(percentile)
    if isinstance(backing, Mapping) and not backing.get("sufficient", True):
        return (f"not available (withheld: {_number(backing.get('have'))} samples, "
                f"{_number(backing.get('required'))} needed)")
    if not summary.get("iterations"):
        return "not available (no iteration was measured)"
    return MISSING


def _energy_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    energy = summary.get("energy")
    if not isinstance(energy, Mapping):
        return [("Energy per inference", "not available (no power or energy telemetry in this run)")]
    per = escape(str(energy.get("per") or "inference"))
    method = _energy_method(energy)
    scope = f", {escape(str(energy['scope']))}" if energy.get("scope") else ""
    joules, per_inference = energy.get("joules"), energy.get("joules_per_inference")
    if not _is_number(joules):
        reason = energy.get("reason") or energy.get("total_reason") or "no usable samples in the measuring window"
        return [(f"Energy per {per}", f"not available ({escape(str(reason))})")]
    if _is_number(per_inference):
        first = f"{_number(per_inference)} J ({method}{scope})"
    elif energy.get("inferences"):
        first = "not available (the samples do not cover the whole measuring window)"
    else:
        first = "not available (no count of inferences)"
    rows = [(f"Energy per {per}", first), ("Energy in the window", f"{_number(joules)} J ({method}{scope})")]
    if not energy.get("headline_is_total", True) and energy.get("total_reason"):
        rows.append(("Energy total", f"not available ({escape(str(energy['total_reason']))})"))
    return rows


def _energy_method(energy: Mapping[str, Any]) -> str:
    method = str(energy.get("method") or "")
    words = ENERGY_METHODS.get(method)
    if words:
        return words
    return escape(method) if method else "method not recorded"


def _validity(summary: Mapping[str, Any], scenario: str | None = None) -> list[str]:
    if "valid" not in summary:
        return ["Validity: not assessed (this run has no summary)."]
    if summary.get("valid"):
        return [f"**VALID** — every measurement rule was met ({rules_judged(summary, scenario)})."]
    reasons = [r for r in summary.get("invalid_reasons") or [] if isinstance(r, Mapping)]
    count = len(reasons)
    lines = [f"**INVALID** — {count} rule{'s' * (count != 1)} not met:" if count else "**INVALID**"]
    for reason in reasons:
        rule = f"`{_code(str(reason['rule']))}`: " if reason.get("rule") else ""
        fix = f" — {escape(str(reason['fix']))}" if reason.get("fix") else ""
        lines.append(f"- {rule}{escape(str(reason.get('detail') or 'failed'))}{fix}")
    return lines


def _cores(summary: Mapping[str, Any]) -> str:
    """**Cores:** both sets (or not confined, why) and the console's own CPU while measuring (console.run.partition)."""
    partition = summary.get("partition") if isinstance(summary.get("partition"), Mapping) else {}
    figure = summary.get("console_cpu") if isinstance(summary.get("console_cpu"), Mapping) else {}
    parts = [str(partition["text"])] if partition.get("text") else []
    if _is_number(figure.get("percent_of_core")):
        parts.append(f"the console used {figure['percent_of_core']:.1f}% of a core while measuring")
    return f"**Cores:** {escape('; '.join(parts))}" if parts else ""


def _baseline(block: Any) -> str:
    """As the summary card says it: faster / slower / equally fast / not told apart, the ratio with its interval,
    the block test's p."""
    if not isinstance(block, Mapping) or not block.get("run_id"):
        return ""
    short = f"`{_code(str(block['run_id'])[:8])}`"
    verdict, ratio = block.get("verdict"), block.get("ratio")
    ci95 = block.get("ci95") or [None, None]
    if verdict and _is_number(ratio) and len(ci95) == 2 and all(map(_is_number, ci95)):
        relation = {"equivalent": "equally fast as", "undecided": "not told apart from",
                    "no difference": "not told apart from"}.get(verdict, f"{escape(str(verdict))} than")
        text = (f"**vs baseline:** {relation} {short} — ×{ratio:.3f} (95% CI {ci95[0]:.3f}–{ci95[1]:.3f})")
        if _is_number(block.get("p_value")):
            text += f", block test p = {block['p_value']:.2g}"
    else:
        why = f" ({escape(str(block['explanation']))})" if block.get("explanation") else ""
        text = f"**vs baseline {short}:** not compared{why}"
    changed = [f"{escape(str(c.get('field')))}: {escape(str(c.get('a')))} → {escape(str(c.get('b')))}"
               for c in block.get("changed") or [] if isinstance(c, Mapping)]
    if changed:
        text += f". Changed since the baseline: {'; '.join(changed)}"
    return text


def _reproduce(run: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    if not spec:
        return ["**Reproduce:** not available (no stored spec)."]
    found = reproduce.reproduce_command(run)
    lines = ["**Reproduce:**"]
    if found.get("flags_command"):
        lines += _fenced(found["flags_command"])
    if not found.get("exact"):
        missing = ", ".join(f"`{_code(str(m))}`" for m in found.get("not_expressible") or [])
        lines.append(("The flags cannot set " + missing if missing else "The flags may not rebuild the exact spec")
                     + "; run the stored spec instead:")
        lines += _fenced(f"{found['export_command']}\n{found['spec_command']}")
    return lines


def _fenced(text: str) -> list[str]:
    """A code block whose fence is longer than any run of backticks inside it, so nothing can close it early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}sh", text, fence]


def _code(text: str) -> str:
    """Text for an inline code span: backticks would end it, line breaks would split the line."""
    return " ".join(text.split()).replace("`", "'")


def _lookup(summary: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = summary
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _quantity(value: Any, unit: str) -> str:
    text = _number(value)
    return f"{text} {unit}" if unit and text != MISSING else text


def _number(value: Any, sig: int = 3) -> str:
    """Three significant digits, whole numbers with separators — as the window's figures read."""
    if not _is_number(value):
        return MISSING
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    x = float(value)
    if x == 0:
        return "0"
    rounded = float(f"{x:.{sig - 1}e}")
    decimals = sig - 1 - math.floor(math.log10(abs(rounded)))
    return f"{round(x):,}" if decimals <= 0 else f"{rounded:,.{decimals}f}"
