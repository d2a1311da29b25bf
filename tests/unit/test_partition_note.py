"""`compare` says when two runs differ in their core partition (console.analysis.partition_note)."""

from console.analysis.partition_note import partition_note

CONFINED = {"confined": True, "worker_cpus": [1], "console_cpus": [0],
            "text": "worker CPUs 1, console CPUs 0 (reserved: 1 core)"}
SHARED = {"confined": False, "worker_cpus": None, "console_cpus": None,
          "text": "not confined (no partition asked: console cores 0, so the console shares the worker's cores)"}


def _run(partition):
    return {"environment": {"partition": partition} if partition is not None else {}}


def test_the_same_partition_is_said_in_one_line():
    note = partition_note(_run(CONFINED), _run(dict(CONFINED)))
    assert note["same"] is True and note["text"] == "same core partition: worker CPUs 1, console CPUs 0 (reserved: 1 core)"


def test_a_window_run_and_an_unpartitioned_headless_run_differ_and_the_fix_is_given():
    note = partition_note(_run(CONFINED), _run(SHARED))
    assert note["same"] is False
    assert "A: worker CPUs 1, console CPUs 0" in note["text"] and "B: not confined" in note["text"]
    assert "1 CPU in A and every core (shared with the console) in B" in note["text"]
    assert "shared its cores in B" in note["text"] and "--console-cores N" in note["text"]


def test_a_run_from_before_partitions_is_unknown_not_equal():
    note = partition_note(_run(None), _run(CONFINED))
    assert note["same"] is None and "not recorded for A" in note["text"] and note["a"] == "not recorded"
    assert partition_note({"environment": None}, {})["same"] is None


def test_copy_as_markdown_carries_both_core_sets_and_the_consoles_cpu():
    from console.analysis.summary_markdown import run_markdown

    text = run_markdown({"spec": {"model": "mlp"}, "summary": {"partition": CONFINED,
                                                               "console_cpu": {"percent_of_core": 3.14}}})
    assert ("**Cores:** worker CPUs 1, console CPUs 0 (reserved: 1 core); the console used 3.1% of a core "
            "while measuring") in text
    assert "**Cores:**" not in run_markdown({"spec": {"model": "mlp"}, "summary": {}})  # an older run: no line


def test_what_changed_around_the_measurement_names_the_partition():
    from console.analysis.fingerprint import differences

    spec = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1}
    a = {"spec": spec, "environment": {"partition": CONFINED}}
    b = {"spec": spec, "environment": {"partition": SHARED}}
    changed = [d for d in differences(a, b) if d["field"] == "host.core_partition"]
    assert changed == [{"field": "host.core_partition", "a": "worker CPUs 1, console CPUs 0",
                        "b": "not confined (the console shared the worker's cores)", "kind": "environment"}]
    assert not [d for d in differences(a, dict(a)) if d["field"] == "host.core_partition"]


def test_the_worker_cores_are_part_of_the_configuration_only_when_confined():
    from console.analysis.fingerprint import configuration, fingerprint

    spec = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "threads": None}
    window = {"partition": {"confined": True, "worker_cpus": [1], "console_cpus": [0]}}
    headless = {"partition": {"confined": False, "reason": "no partition given to this run"}}
    wide = {"partition": {"confined": True, "worker_cpus": [1, 2, 3], "console_cpus": [0]}}
    prints = {name: fingerprint(configuration(spec, env, "lab-a")) for name, env in
              (("window", window), ("headless", headless), ("old", None), ("wide", wide))}
    assert configuration(spec, window, "lab-a")["worker_cpus"] == 1
    assert prints["headless"] == prints["old"]  # unpartitioned runs keep the series they had
    assert len({prints["window"], prints["headless"], prints["wide"]}) == 3  # "auto" threads differ with the cores
