"""The console's own CPU while measuring: the figure, what it counts, and the notes it gives the summary."""

import os

from console.run import console_cpu


class _Clock:
    def __init__(self):
        self.ns = 0

    def __call__(self):
        return self.ns


def _meter(times):
    """A meter over fake CPU seconds: times[pid] is a list consumed one read at a time."""
    clock = _Clock()
    meter = console_cpu.ConsoleCpu(sampler_pid=99, clock=clock,
                                   reader=lambda pid: times[pid].pop(0) if times[pid] else None)
    return meter, clock


def test_the_console_and_sampler_cpu_over_the_measuring_phase_as_a_share_of_one_core():
    meter, clock = _meter({os.getpid(): [1.0, 1.08], 99: [5.0, 5.02]})
    meter.start()
    clock.ns = 2_000_000_000
    meter.stop()
    meter.stop()  # a later phase: the first end counts
    figure = meter.result()
    assert figure["percent_of_core"] == 5.0 and figure["wall_s"] == 2.0
    assert figure["by_process"] == {"console": 4.0, "telemetry sampler": 1.0}
    assert console_cpu.sentence(figure) == "the console used 5.0% of a core while measuring"


def test_a_run_that_never_measured_has_no_figure_and_says_why():
    meter, _ = _meter({os.getpid(): [], 99: []})
    figure = meter.result()
    assert figure["percent_of_core"] is None and "never reached its measuring phase" in figure["reason"]
    assert console_cpu.sentence(figure) is None


def test_a_sampler_gone_at_the_end_is_left_out_and_said():
    meter, clock = _meter({os.getpid(): [1.0, 1.01], 99: [5.0]})
    meter.start()
    clock.ns = 1_000_000_000
    figure = meter.result()  # the worker ended inside measuring: counted up to now
    assert figure["percent_of_core"] == 1.0 and figure["by_process"]["telemetry sampler"] is None
    assert any("telemetry sampler's CPU time could not be read at the end" in n for n in figure["notes"])


def test_own_cpu_time_reads_this_process_not_its_children():
    assert console_cpu.cpu_seconds(os.getpid()) >= 0
    assert console_cpu.cpu_seconds(2**22 + 12345) is None  # no such process


CONFINED = {"confined": True, "console": "0", "worker": "1", "reason": None}
SHARED = {"confined": False, "reason": "no partition asked: console cores 0, so the console shares the worker's "
                                      "cores"}


def test_over_budget_on_the_workers_cores_is_a_warning_with_the_fix():
    warnings, notes = console_cpu.validity_notes(SHARED, {"percent_of_core": 14.2})
    assert len(warnings) == 1 and "the console used 14.2% of a core while measuring" in warnings[0]
    assert "more than its 10% budget" in warnings[0] and "--console-cores 1" in warnings[0]
    assert "close the System page" in warnings[0]
    assert any("shared the worker's cores" in n for n in notes)


def test_sharing_the_workers_cores_is_a_note_even_under_budget():
    warnings, notes = console_cpu.validity_notes(SHARED, {"percent_of_core": 0.8})
    assert warnings == []
    assert notes == ["the console shared the worker's cores while measuring (the console used 0.8% of a core while "
                     "measuring): not confined (no partition asked: console cores 0, so the console shares the "
                     "worker's cores). Fix: reserve a core for the console: --console-cores 1 (the window reserves "
                     "one unless LABCONSOLE_CONSOLE_CORES=0)"]


def test_a_platform_that_cannot_confine_gets_a_fix_it_can_use():
    warnings, notes = console_cpu.validity_notes({"confined": False, "reason": "macOS has no call"},
                                                 {"percent_of_core": 1.0})
    assert "run headless" in notes[0] and "--console-cores" not in notes[0]


def test_confined_and_under_budget_is_a_plain_statement():
    warnings, notes = console_cpu.validity_notes(CONFINED, {"percent_of_core": 3.1})
    assert warnings == [] and notes == ["the console used 3.1% of a core while measuring, on its own cores (0); "
                                        "the worker had CPUs 1"]
    over, _ = console_cpu.validity_notes(CONFINED, {"percent_of_core": 25.0})
    assert "on its own cores, so the worker's were not shared" in over[0]


def test_a_cluster_run_gets_no_note_about_this_console():
    assert console_cpu.validity_notes(SHARED, {"percent_of_core": 50.0}, local=False) == ([], [])
