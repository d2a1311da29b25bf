"""The KV-offload bounds and judgement (engines.kvcache.judge), its options' refusals, and how the console says it."""

import numpy as np
import pytest

from console.analysis import kv_offload
from console.analysis.summary_markdown import run_markdown
from engines.kvcache import judge
from engines.options import SpecError
from engines.spec import RunSpec


def test_the_default_bounds_are_mlperf_storage_kv_cache_ones_and_say_so():
    directory = judge.bounds("directory")
    assert (directory["write_p95_ms"], directory["read_p95_ms"], directory["min_hit_rate"]) == (500.0, 200.0, 0.3)
    assert all("MLPerf Storage KV-cache" in source for source in directory["sources"].values())
    ram = judge.bounds("ram", read_p95_ms=20)
    assert (ram["write_p95_ms"], ram["read_p95_ms"]) == (150.0, 20.0)
    assert ram["sources"]["read_p95_ms"] == "the run's setting" and "MLPerf" in ram["sources"]["write_p95_ms"]


def test_percentiles_are_numpys_in_milliseconds():
    samples = [1_000_000 * v for v in range(1, 101)]
    figures = judge.latency_ms(samples)
    expected = np.percentile(np.arange(1, 101), [50, 95, 99])
    assert [figures["p50"], figures["p95"], figures["p99"]] == pytest.approx(list(expected)) and figures["n"] == 100
    assert judge.latency_ms([]) == {"p50": None, "p95": None, "p99": None, "n": 0}


def test_each_rule_fails_on_its_own_strictly_as_mlperf_compares():
    bound = judge.bounds("directory")
    ok = judge.judge({"p95": 10.0}, {"p95": 5.0}, 0.5, bound)
    assert ok["passed"] is True and ok["failed_rules"] == [] and ok["bounds"] is bound
    slow = judge.judge({"p95": 10.0}, {"p95": 200.0}, 0.5, bound)  # equal to the bound: not below it
    assert slow["passed"] is False and [r["rule"] for r in slow["failed_rules"]] == ["read_p95_ms"]
    assert slow["failed_rules"][0]["text"] == "read p95 200 ms is not below 200 ms"
    cold = judge.judge({"p95": 600.0}, {"p95": 5.0}, 0.3, bound)
    assert [r["rule"] for r in cold["failed_rules"]] == ["write_p95_ms", "min_hit_rate"]
    assert cold["failed_rules"][1]["text"] == "hit rate 30.0% is not above 30%"


def test_a_rule_without_samples_is_not_judged_and_says_why():
    bound = judge.bounds("ram")
    only_hits = judge.judge({"p95": None}, {"p95": None}, 0.9, bound)
    assert only_hits["passed"] is True
    assert [r["rule"] for r in only_hits["unjudged_rules"]] == ["write_p95_ms", "read_p95_ms"]
    assert "--kv-budget-mb" in only_hits["unjudged_rules"][1]["reason"]
    assert judge.judge({}, {}, None, bound)["passed"] is None


@pytest.mark.parametrize(("values", "field", "words"), [
    ({"scenario_options": {"kv_budget_mb": 8}}, "scenario_options.kv_budget_mb", "add --kv-offload"),
    ({"engine": "onnxruntime", "scenario_options": {"kv_offload": "ram"}}, "scenario_options.kv_offload",
     "--engine torch"),
    ({"batch": 2, "scenario_options": {"kv_offload": "ram"}}, "scenario_options.kv_offload", "--batch 1"),
    ({"generation": {"prompt_tokens": 16, "output_tokens": 4}, "scenario_options": {"kv_offload": "ram"}},
     "scenario_options.kv_block_tokens", "raise --prompt-tokens above 16"),
    ({"scenario_options": {"kv_offload": "ram", "kv_repeat_rate": 1.5}}, "scenario_options.kv_repeat_rate", "≤ 1"),
    ({"scenario_options": {"kv_offload": " "}}, "scenario_options.kv_offload", "a directory"),
])
def test_options_that_cannot_work_are_refused_naming_the_fix(values, field, words):
    spec = {"model": "gpt", "scenario": "generate", **values}
    with pytest.raises(SpecError) as info:
        RunSpec.from_dict(spec).validate()
    assert info.value.field == field and words in str(info.value)


def test_kv_offload_is_not_taken_by_other_scenarios():
    with pytest.raises(SpecError, match="generate"):
        RunSpec.from_dict({"model": "gpt", "scenario": "single-stream",
                           "scenario_options": {"kv_offload": "ram"}}).validate()
    assert RunSpec.from_dict({"model": "gpt", "scenario": "generate",
                              "scenario_options": {"kv_offload": "/tmp/x"}}).validate().scenario_options.kv_offload


BLOCK = {
    "target": "directory", "path": "/mnt/nvme", "filesystem": "ext4", "read_cache_state": "cold",
    "read_cache_reason": "all 4 block reads found their pages out of the page cache", "budget_mb": 0.0,
    "block_tokens": 16, "block_bytes": 131072, "repeat_rate": 0.5, "seed": 42, "blocks_looked_up": 8,
    "blocks_hit_memory": 0, "blocks_hit_target": 4, "hit_rate": 0.5, "ttft_hit_ms": 2.0, "ttft_recompute_ms": 5.0,
    "ttft_speedup": 2.5, "requests_served_from_target": 2, "first_token_agrees": 2, "first_token_compared": 2,
    "write_ms": {"p50": 1.0, "p95": 3.0, "p99": 4.0, "n": 4}, "read_ms": {"p50": 0.5, "p95": None, "p99": None, "n": 0},
    "bytes_written": 524416, "bytes_read": 0, "method": "how",
    "judgement": judge.judge({"p95": 3.0}, {"p95": None}, 0.5, judge.bounds("directory")),
}


def test_the_console_says_the_block_in_words_with_units_and_dashes():
    text = kv_offload.lines(BLOCK)
    assert text[0].startswith("offload to /mnt/nvme (ext4), memory budget 0 MB, 16-token blocks of 131 kB")
    assert "hit rate 50% of 8 blocks looked up (0 from memory, 4 from the target)" in text[1]
    assert "served from the target 2 ms, recomputed 5 ms" in text[2] and "serving is 2.50× faster" in text[2]
    assert "read latency p50 0.5 ms, p95 —, p99 — over 0 blocks" in text
    assert text[-1].startswith("PASSED — bounds write p95 < 500 ms, read p95 < 200 ms, hit rate > 30% (default: "
                               "MLPerf Storage KV-cache") and "read_p95_ms not judged" in text[-1]
    failed = {**BLOCK, "ttft_hit_ms": None, "ttft_hit_reason": "not available: no request was served",
              "judgement": judge.judge({"p95": 900.0}, {"p95": None}, 0.5, judge.bounds("directory", 100))}
    text = kv_offload.lines(failed)
    assert "served from the target: not available: no request was served" in text[2]
    assert text[-1].startswith("FAILED: write p95 900 ms is not below 100 ms — bounds write p95 < 100 ms")
    assert "the run's setting" in text[-1]


def test_copy_as_markdown_and_the_report_carry_the_block():
    run = {"run_id": "r1", "status": "completed", "spec": {"model": "gpt", "scenario": "generate"},
           "summary": {"scenario": {"kv_offload": BLOCK}}}
    text = run_markdown(run)
    assert "**KV cache on storage:**" in text and "- hit rate 50% of 8 blocks" in text
    assert kv_offload.block_of({"scenario": {"ttft_ms_p50": 1.0}}) is None
    rows = dict(kv_offload.table_rows(BLOCK))
    assert rows["Hit rate"] == "50%" and rows["Read latency p50 / p95 / p99"] == "0.5 ms / — / — (n = 0)"
    assert rows["Judgement"].startswith("PASSED")


def test_the_report_has_a_kv_section_whose_verdict_row_is_coloured():
    from console.report import document
    from console.report.content import RunView

    run = {"run_id": "r1", "status": "completed", "spec": {"model": "gpt", "scenario": "generate"},
           "summary": {"scenario": {"kv_offload": BLOCK}}}
    view = RunView(run=run, letter="A", label="gpt", t_s=np.zeros(0), latency_ms=np.zeros(0), telemetry={}, ops=[],
                   reproduce={})
    blocks = document._kv_offload([view])
    assert [b.kind for b in blocks] == ["heading", "table", "note"]
    assert blocks[0].text == "KV cache on storage — run A" and blocks[1].emphasis[-1] == "good"
    assert blocks[1].rows[-1][0] == "Judgement" and blocks[2].text == "how"
    plain = {**run, "summary": {"scenario": {}}}
    assert document._kv_offload([RunView(**{**view.__dict__, "run": plain})]) == []


def test_the_summary_card_lists_the_flat_kv_figures_with_captions_and_units():
    from engines import scenarios
    from widgets.summary_card import scenario_rows

    rows = {key: (caption, text) for key, caption, text, _ in scenario_rows({
        "kv_hit_rate": 0.5, "kv_ttft_hit_ms": 2.0, "kv_ttft_recompute_ms": None, "kv_judgement": "passed",
        "kv_offload": BLOCK}, scenarios.figures_of("generate"))}
    assert rows["kv_ttft_hit_ms"] == ("TTFT, prefix from storage", "2.00 ms")
    assert rows["kv_ttft_recompute_ms"][1] == "—" and rows["kv_judgement"] == ("KV storage bounds", "passed")
    assert "kv_offload" not in rows  # the whole block is for the JSON, the report and Copy as Markdown


def test_a_generate_run_without_offload_keeps_the_fingerprint_it_had_before_the_kv_options():
    from console.analysis.fingerprint import configuration, fingerprint

    plain = RunSpec.from_dict({"model": "gpt", "scenario": "generate"}).validate().to_dict()
    before = {**plain, "scenario_options": {}}  # what a generate run stored before the kv options existed
    assert fingerprint(configuration(plain, hostname="h")) == fingerprint(configuration(before, hostname="h"))
    offloaded = RunSpec.from_dict({"model": "gpt", "scenario": "generate",
                                   "scenario_options": {"kv_offload": "ram"}}).validate().to_dict()
    assert fingerprint(configuration(offloaded, hostname="h")) != fingerprint(configuration(plain, hostname="h"))
