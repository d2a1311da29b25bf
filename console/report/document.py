"""A report as a list of blocks — heading, paragraph, table, figure, code — in reading order.

Why blocks: the HTML writer (console.report.html) and the PDF writer (console.ui.report_pdf, Qt) lay out the same
content, so what a report says is decided once, here, and the two files cannot drift apart. Text in blocks is
plain (never markup): each writer escapes it for its own format.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Any

from console.analysis import kv_offload
from console.report.charts import charts
from console.report.collectives_section import collectives_blocks, collectives_commands
from console.report.content import Report, RunView
from console.report.finding import finding
from console.report.scaling_section import scaling_blocks
from console.report.scenario_section import scenario_blocks
from console.report.storage_section import storage_blocks, storage_commands

TOP_OPS = 12
KIND_TITLES = {"run": "Run report", "comparison": "Comparison report", "sweep": "Sweep report"}


@dataclass
class Block:
    kind: str  # title | heading | finding | paragraph | note | table | figure | code
    text: str = ""
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    svg: str = ""
    emphasis: list[str] = field(default_factory=list)  # per table row: "" | "good" | "bad" (a verdict's colour)

    def emphasised_rows(self) -> list[tuple[list[str], str]]:
        """Each table row with its emphasis: "" for a row past the end of `emphasis` (it may be shorter)."""
        return [(row, self.emphasis[index] if index < len(self.emphasis) else "") for index, row in enumerate(self.rows)]


# ---- Public API
def build(report: Report) -> list[Block]:
    title = KIND_TITLES[report.kind] + (" with bottleneck analysis" if report.analysed else "")
    blocks = [Block("title", title),
              Block("note", f"Lab Console {report.version} · generated {report.generated_at} · "
                            f"{len(report.runs)} run{'s' if len(report.runs) != 1 else ''} from the history"),
              Block("finding", finding(report)),
              Block("heading", "Key figures"),
              _figures(report.runs),
              Block("note", "Latency percentiles with their 95% intervals (order statistics); a percentile is "
                            "given only when enough iterations back it (LoadGen's early-stopping rule: p90 ≥ 64, "
                            "p99 ≥ 662). CV: coefficient of variation of the iterations.")]
    if report.deltas:
        blocks += [Block("heading", "Each run against A"), _deltas(report),
                   Block("note", "Ratio of medians (B ÷ A: below 1 is faster) with a block-bootstrap 95% interval; "
                                 "a difference is claimed only when the interval leaves the ±2% noise band AND "
                                 "the block test agrees (Mann-Whitney U on the same blocks' medians, p < 0.01); "
                                 "equally fast only when the whole interval lies inside the band; otherwise "
                                 "undecided, with the smallest difference the runs could resolve.")]
        changed = _differences(report)
        if changed is not None:
            blocks += [Block("heading", "What differs from A"), changed]
    blocks += storage_blocks(report, Block)
    blocks += collectives_blocks(report, Block)
    blocks += scaling_blocks(report, Block)
    blocks += scenario_blocks(report, Block)
    blocks += _validity(report.runs)
    blocks += _kv_offload(report.runs)
    if report.sweep is not None:
        blocks += [Block("heading", "Sweep points"), _sweep_points(report.runs)]
    figures = charts(report)
    if figures:
        blocks.append(Block("heading", "Charts"))
        blocks += [Block("figure", svg=text, text=caption) for caption, text in figures]
    for view in report.runs:
        if view.ops:
            blocks += _analysis(view, report)
    blocks += [Block("heading", "Machine and software"), _environment(report.runs)]
    warnings = [f"{view.letter}: {warning}" for view in report.runs for warning in view.summary.get("warnings") or []]
    if warnings:
        blocks += [Block("paragraph", "Warnings recorded with the runs:")] + [Block("note", w) for w in warnings]
    blocks.append(Block("heading", "Reproduce"))
    for view in report.runs:
        blocks.append(Block("paragraph", f"{view.letter} — run {view.run['run_id']} ({view.label})"))
        blocks.append(Block("code", _commands(view)))
    return blocks


# ---- Private API
def _figures(views: list[RunView]) -> Block:
    headers = ["Run", "Configuration", "Status", "Valid", "p50 (ms)", "p99 (ms)", "Throughput (samples/s)", "CV",
               "Iterations", "Energy (J/inference)"]
    rows = []
    for view in views:
        summary, latency = view.summary, view.summary.get("latency_ms") or {}
        ci = latency.get("ci95") or {}
        rows.append([view.letter, view.label, str(view.run.get("status")),
                     "VALID" if summary.get("valid") else ("INVALID" if summary else "—"),
                     _with_interval(latency.get("p50"), ci.get("p50")),
                     _with_interval(latency.get("p99"), ci.get("p99"), missing="not enough samples"),
                     _number(summary.get("throughput_per_s"), "{:,.0f}"),
                     _number(summary.get("cv"), "{:.1%}"),
                     _number(summary.get("iterations"), "{:,}"),
                     _energy(summary)])
    return Block("table", headers=headers, rows=rows,
                 emphasis=["" if view.summary.get("valid") else "bad" for view in views])


def _kv_offload(views: list[RunView]) -> list[Block]:
    """generate --kv-offload runs: the KV cache on storage, figure by figure, and how it was measured."""
    blocks = []
    for view in views:
        block = kv_offload.block_of(view.summary)
        if block:
            rows = [list(row) for row in kv_offload.table_rows(block)]
            blocks += [Block("heading", f"KV cache on storage — run {view.letter}"),
                       Block("table", headers=["Figure", "Value"], rows=rows,
                             emphasis=[""] * (len(rows) - 1) + [{True: "good", False: "bad"}.get(
                                 (block.get("judgement") or {}).get("passed"), "")]),
                       Block("note", str(block.get("method") or ""))]
    return blocks


def _deltas(report: Report) -> Block:
    rows, emphasis = [], []
    for delta in report.deltas:
        ratio, ci = delta.get("ratio"), delta.get("ci95")
        rows.append([f"{delta['b']} vs {delta['a']}", _number(ratio, "{:.3f}×"),
                     f"{ci[0]:.3f}–{ci[1]:.3f}" if ci else "—", _number(delta.get("p_value"), "{:.2g}"),
                     str(delta.get("verdict") or "—"), str(delta.get("explanation") or "")])
        emphasis.append({"faster": "good", "slower": "bad"}.get(delta.get("verdict"), ""))
    return Block("table", headers=["Runs", "Median ratio", "95% interval", "p (block test)", "Verdict", "Why"],
                 rows=rows, emphasis=emphasis)


def _differences(report: Report) -> Block | None:
    rows = []
    for view, changes in zip(report.runs[1:], report.differences, strict=True):
        for change in changes:
            if change["field"] == "engine_options":
                continue  # each engine has its own options: the engine row says it
            rows.append([view.letter, change["field"], _short(change["a"]), _short(change["b"]), change["kind"]])
    if not rows:
        return None
    return Block("table", headers=["Run", "Field", "A", "This run", "Kind"], rows=rows)


def _validity(views: list[RunView]) -> list[Block]:
    blocks = []
    for view in views:
        reasons = view.summary.get("invalid_reasons") or []
        if view.run.get("status") != "completed":
            blocks.append(Block("paragraph", f"Run {view.letter} is {view.run.get('status')}: "
                                             f"{view.run.get('error') or view.summary.get('message') or 'no cause stored'}"))
        if reasons:
            blocks.append(Block("paragraph", f"Run {view.letter} is INVALID, and what to change:"))
            blocks.append(Block("table", headers=["Rule", "What happened", "Fix"],
                                rows=[[r.get("rule", ""), r.get("detail", ""), r.get("fix", "")] for r in reasons]))
    rules = _rules_table(views)
    if rules is not None:
        blocks += [Block("paragraph", "The rules each run was judged by, as it stored them (a lab sets its own in "
                                      "rules.toml in the data folder or with --rules FILE):"), rules]
    return ([Block("heading", "Validity")] + blocks) if blocks else []


def _rules_table(views: list[RunView]) -> Block | None:
    """Per run: where its validity rules came from, the ones that decide most verdicts, and how long it measured
    (until stable: the windows it took and its final spread). None when no run stored its rules."""
    from console.analysis.rules_file import describe

    rows = []
    for view in views:
        stored = (view.run.get("environment") or {}).get("validity_rules")
        rules = (stored or {}).get("rules") or (view.summary.get("validity") or {}).get("rules")
        if not isinstance(rules, dict):
            continue
        settings = (f"≥ {rules.get('min_duration_s')} s and ≥ {rules.get('min_count')} iterations; the last "
                    f"{rules.get('stable_windows')} of {rules.get('windows')} windows within "
                    f"{_number(rules.get('stability_tolerance'), '{:.0%}')}")
        stabilised = view.summary.get("until_stable") or {}
        measured = stabilised.get("text") or "a fixed duration"
        rows.append([view.letter, describe(stored) if stored else "as its summary stored them", settings, measured])
    if not rows:
        return None
    return Block("table", headers=["Run", "Judged by", "Rules", "Measured"], rows=rows)


def _sweep_points(views: list[RunView]) -> Block:
    rows = []
    for view in views:
        latency = view.summary.get("latency_ms") or {}
        point = view.run.get("sweep_point") or {}
        rows.append([view.letter, ", ".join(f"{k} {v}" for k, v in point.items()) or view.label,
                     str(view.run.get("status")), _number(view.summary.get("throughput_per_s"), "{:,.0f}"),
                     _number(latency.get("p50"), "{:.3g}"), _number(latency.get("p99"), "{:.3g}")])
    return Block("table", headers=["Point", "Setting", "Status", "Throughput (samples/s)", "p50 (ms)", "p99 (ms)"],
                 rows=rows)


def _confirmation(block: Any) -> list[Block]:
    """`analyze --confirm`'s answer beside the verdict: its sentence and the experiments that decided it."""
    if not isinstance(block, dict) or not block.get("sentence"):
        return []
    from console.analysis.confirm.outcome import table

    out = [Block("paragraph", f"Confirmation: {block['sentence']}")]
    headers, rows = table(block)
    if rows:
        out.append(Block("table", headers=headers, rows=rows))
    return out


def _stability(block: dict[str, Any] | None) -> str:
    """The verdict's resampled stability (console.analysis.verdict_stability) as one cell."""
    if not block:
        return "not available (judged before verdicts were resampled)"
    if not block.get("available"):
        return f"not available ({block.get('reason')})"
    split = ", ".join(f"{name} {share:.0%}" for name, share in (block.get("classes") or {}).items())
    return f"{split} of {block.get('resamples')} resamples of the profiled iterations"


def _analysis(view: RunView, report: Report) -> list[Block]:
    blocks = [Block("heading", f"Bottleneck of run {view.letter}")]
    verdict = view.summary.get("bottleneck")
    if verdict:
        blocks.append(Block("paragraph", verdict.get("sentence") or str(verdict.get("class"))))
        evidence = verdict.get("evidence") or {}
        rows = [[str(key).replace("_", " "), _short(value)] for key, value in evidence.items()]
        rows += [["confidence", f"{verdict.get('confidence', 0):.0%}"],
                 ["stability", _stability(verdict.get("stability"))],
                 ["recommendation", str(verdict.get("recommendation") or "")],
                 ["runner-up", str(verdict.get("secondary") or "none")]]
        blocks.append(Block("table", headers=["Evidence", "Value"], rows=rows))
        blocks += _confirmation(verdict.get("confirmation"))
    else:
        blocks.append(Block("note", "no verdict was stored with this run (it was profiled without a machine card)"))
    if not report.card:
        blocks.append(Block("note", "no machine card of this host in the history: the ops are shown without "
                                    "roofs (measure one with `labconsole machine --refresh`)"))
    ops = sorted(view.ops, key=lambda op: op.get("time_s") or 0, reverse=True)[:TOP_OPS]
    total = sum(op.get("time_s") or 0 for op in view.ops) or 1.0
    rows = [[str(op.get("op")), _number(op.get("calls"), "{:,}"), f"{(op.get('time_s') or 0) / total:.1%}",
             _number(op.get("flops"), "{:.3g}"), _number(op.get("bytes"), "{:.3g}"),
             _number(op.get("intensity"), "{:.3g}"), _number(op.get("achieved_flops_s"), "{:.3g}"),
             _number(op.get("efficiency"), "{:.0%}"), str(op.get("bound") or "—")] for op in ops]
    blocks.append(Block("table", headers=["Op", "Calls", "Share of op time", "FLOP", "Bytes", "FLOP/byte",
                                          "Achieved FLOP/s", "Of roof", "Bound by"], rows=rows))
    if len(view.ops) > TOP_OPS:
        blocks.append(Block("note", f"the {TOP_OPS} ops taking the most time of {len(view.ops)}; "
                                    "`labconsole export` gives them all"))
    return blocks


def _environment(views: list[RunView]) -> Block:
    rows = []
    for view in views:
        env = view.run.get("environment") or {}
        engine, worker = env.get("engine") or {}, env.get("worker") or {}
        versions = ", ".join(f"{k} {v}" for k, v in sorted((engine.get("versions") or {}).items()))
        rows.append([view.letter, str(view.run.get("hostname") or "—"), str(view.run.get("started_at") or "—"),
                     str(engine.get("device_name") or view.run.get("target") or "—"),
                     str(worker.get("platform") or platform.system()), str(worker.get("python") or "—"),
                     versions or "—"])
    return Block("table", headers=["Run", "Host", "Started (UTC)", "Device", "OS", "Python", "Engine"], rows=rows)


def _commands(view: RunView) -> str:
    storage = storage_commands(view.run) or collectives_commands(view.run)
    if storage is not None:
        return storage
    reproduce = view.reproduce
    lines = []
    if reproduce.get("flags_command"):
        lines.append(reproduce["flags_command"] + ("" if reproduce.get("exact") else
                                                   "    # not exact: use the spec file below"))
    lines += [reproduce["export_command"], reproduce["spec_command"]]
    return "\n".join(lines)


def _with_interval(value: Any, interval: Any, missing: str = "—") -> str:
    if value is None:
        return missing
    text = f"{value:.3g}"
    if interval and len(interval) == 2 and None not in interval:
        text += f" [{interval[0]:.3g}–{interval[1]:.3g}]"
    return text


def _energy(summary: dict[str, Any]) -> str:
    energy = summary.get("energy") or {}
    per = energy.get("joules_per_inference")
    if per is None:
        return "not available (no power sensor)" if summary else "—"
    method = energy.get("method") or "method not stated"
    return f"{per:.3g} ({'ESTIMATED' if method == 'estimated' else method})"


def _number(value: Any, form: str) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return form.format(value)


def _short(value: Any, length: int = 80) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= length else text[:length - 1] + "…"
