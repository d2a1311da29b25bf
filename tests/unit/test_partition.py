"""The console's core partition: how cores are grouped and split, what is recorded, and the honest "not confined"."""

import os

import pytest

from console.run import partition
from engines import cores


def _topology(root, cpus):
    """A fake /sys: cpus is {cpu: (package, core)}."""
    for cpu, (package, core) in cpus.items():
        base = root / f"sys/devices/system/cpu/cpu{cpu}/topology"
        base.mkdir(parents=True)
        (base / "physical_package_id").write_text(f"{package}\n")
        (base / "core_id").write_text(f"{core}\n")
    (root / "sys/devices/system/cpu/online").write_text(f"0-{max(cpus)}\n")
    return root


# ---- engines.cores
@pytest.mark.parametrize("text, cpus", [("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]), ("5", [5]), ("0,2", [0, 2])])
def test_cpu_lists_read_and_write_the_kernel_format(text, cpus):
    assert cores.parse_cpus(text) == cpus
    assert cores.format_cpus(cpus) == text


@pytest.mark.parametrize("bad", ["a-3", "3-1", "1-"])
def test_a_bad_cpu_list_names_the_part(bad):
    with pytest.raises(ValueError, match="range|CPU number"):
        cores.parse_cpus(bad)


def test_smt_siblings_are_one_physical_core(tmp_path):
    root = _topology(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 0), 3: (0, 1)})
    assert cores.physical_cores([0, 1, 2, 3], str(root)) == [[0, 2], [1, 3]]


def test_a_cpu_without_topology_is_its_own_core(tmp_path):
    assert cores.physical_cores([3, 1], str(tmp_path)) == [[1], [3]]


def test_auto_threads_are_the_physical_cores_of_a_confined_process(tmp_path, monkeypatch):
    root = _topology(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 0), 3: (0, 1)})
    monkeypatch.setattr(cores, "allowed", lambda pid=0: [1, 3])
    threads, why = cores.auto_threads(environ={}, root=str(root))
    assert threads == 1 and "1 physical core" in why and "CPUs 1,3 of 4" in why


def test_auto_threads_leave_an_unconfined_process_and_an_explicit_variable_to_the_engine(tmp_path, monkeypatch):
    root = _topology(tmp_path, {0: (0, 0), 1: (0, 1)})
    monkeypatch.setattr(cores, "allowed", lambda pid=0: [0, 1])
    assert cores.auto_threads(environ={}, root=str(root))[0] is None
    monkeypatch.setattr(cores, "allowed", lambda pid=0: [1])
    threads, why = cores.auto_threads(environ={"OMP_NUM_THREADS": "4"}, root=str(root))
    assert threads is None and "OMP_NUM_THREADS=4" in why


def test_without_an_affinity_call_the_platform_says_why(monkeypatch):
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    monkeypatch.setattr("platform.system", lambda: "Darwin")
    assert "macOS" in cores.available()
    with pytest.raises(cores.AffinityUnavailable, match="macOS"):
        cores.move_process(1, [0])
    plan = partition.plan(1)
    assert not plan.confined and plan.describe().startswith("not confined (macOS")


# ---- console.run.partition.plan
def test_one_reserved_core_of_two_leaves_the_worker_one_and_says_what_it_costs(tmp_path):
    plan = partition.plan(1, allowed=[0, 1], root=str(_topology(tmp_path, {0: (0, 0), 1: (0, 1)})))
    assert plan.confined and plan.console == (0,) and plan.worker == (1,)
    assert "the worker gets 1 of 2 physical cores" in plan.cost and "runs on one core only" in plan.cost
    record = plan.record()
    assert record["worker_cpus"] == [1] and record["console_cpus"] == [0] and record["reason"] is None
    assert record["text"] == "worker CPUs 1, console CPUs 0 (reserved: 1 core)"


def test_a_reserved_core_takes_its_smt_sibling_along(tmp_path):
    root = _topology(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 2), 3: (0, 0), 4: (0, 1), 5: (0, 2)})
    plan = partition.plan(1, allowed=list(range(6)), root=str(root))
    assert plan.console == (0, 3) and plan.worker == (1, 4, 2, 5)
    assert set(plan.console).isdisjoint(plan.worker)
    assert "2 of 3 physical cores" in plan.cost and "2 threads" in plan.cost


def test_no_partition_and_too_few_cores_are_not_confined_with_the_reason(tmp_path):
    none = partition.plan(0)
    assert not none.confined and "no partition asked" in none.describe()
    one = partition.plan(1, allowed=[0], root=str(tmp_path))
    assert not one.confined and "would leave the worker none" in one.reason and "--console-cores 0" in one.reason
    two = partition.plan(2, allowed=[0, 1], root=str(tmp_path))
    assert not two.confined and "Fix: --console-cores 1" in two.reason


def test_a_platform_without_affinity_is_not_confined(tmp_path):
    plan = partition.plan(1, allowed=[0, 1], root=str(tmp_path), unavailable="Windows affinity is not exposed")
    assert not plan.confined and plan.record()["text"] == "not confined (Windows affinity is not exposed)"


@pytest.mark.parametrize("bad", ["-1", "one", "1.5", ""])
def test_a_bad_core_count_names_the_option_and_the_fix(bad):
    with pytest.raises(partition.PartitionError, match="--console-cores must be a whole number.*fix"):
        partition.parse_count(bad)


def test_the_window_reserves_one_core_unless_the_variable_says_otherwise():
    assert partition.window_count({}) == (1, None)
    assert partition.window_count({partition.ENV: "0"}) == (0, None)
    count, problem = partition.window_count({partition.ENV: "lots"})
    assert count == 1 and partition.ENV in problem and "using 1" in problem


# ---- applying it
class _Moves:
    """Fake affinity calls: every process starts on [0, 1]; records every move."""

    def __init__(self, monkeypatch, fail_for=()):
        self.masks: dict[int, list[int]] = {}
        self.fail_for = set(fail_for)
        monkeypatch.setattr(cores, "available", lambda: None)
        monkeypatch.setattr(cores, "allowed", lambda pid=0: list(self.masks.get(pid or os.getpid(), [0, 1])))
        monkeypatch.setattr(cores, "move_process", self.move)

    def move(self, pid, cpus, root="/"):
        if pid in self.fail_for:
            raise cores.AffinityUnavailable(f"cannot bind pid {pid}: Operation not permitted")
        self.masks[pid] = sorted(cpus)


def test_holds_nest_and_the_last_gives_the_console_and_sampler_their_cores_back(monkeypatch):
    moves = _Moves(monkeypatch)
    plan = partition.Partition(1, console=(0,), worker=(1,))
    first, second = partition.Hold(plan, sampler_pid=4242), partition.Hold(plan, sampler_pid=4242)
    assert first.acquire() == {"console": "applied", "sampler": "applied"}
    second.acquire()
    assert moves.masks[os.getpid()] == [0] and moves.masks[4242] == [0]
    first.release()
    assert moves.masks[os.getpid()] == [0]  # a hold remains
    second.release()
    assert moves.masks[os.getpid()] == [0, 1] and moves.masks[4242] == [0, 1]


def test_a_worker_that_cannot_be_moved_makes_the_run_not_confined_with_why(monkeypatch):
    _Moves(monkeypatch, fail_for={777})
    plan = partition.Partition(1, console=(0,), worker=(1,))
    hold = partition.Hold(plan)
    hold.acquire()
    try:
        placed = partition.place_worker(plan, 777)
        record = partition.environment(plan, hold, placed)
    finally:
        hold.release()
    assert placed["worker"].startswith("failed (") and record["confined"] is False
    assert "partition planned but not applied" in record["text"] and "Operation not permitted" in record["text"]
    assert partition.shared_cores(record)


def test_an_applied_partition_records_the_worker_cpus_read_back(monkeypatch):
    _Moves(monkeypatch)
    plan = partition.Partition(1, console=(0,), worker=(1,))
    hold = partition.Hold(plan)
    hold.acquire()
    try:
        record = partition.environment(plan, hold, partition.place_worker(plan, 555))
    finally:
        hold.release()
    assert record["confined"] and record["worker_actual"] == [1]
    assert record["applied"] == {"console": "applied", "worker": "applied"}
    assert not partition.shared_cores(record)


def test_an_unconfined_plan_moves_nothing(monkeypatch):
    moves = _Moves(monkeypatch)
    plan = partition.plan(0)
    assert partition.Hold(plan).acquire() == {} and partition.place_worker(plan, 555) is None
    assert moves.masks == {}


def test_a_partitioned_workers_hygiene_judges_the_load_average_against_the_whole_machine(tmp_path, monkeypatch):
    """The load average is machine-wide: a worker confined to 1 of 8 CPUs must not call a load of 2 'busy'."""
    from engines import hygiene

    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/loadavg").write_text("2.00 1.50 1.00 1/100 12345\n")
    monkeypatch.setattr(hygiene, "_usable_cpus", lambda: 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    record = hygiene.collect(root=str(tmp_path), processes=lambda s, e: [], environ={})
    assert record["cpus"] == 1 and not record["busy"]
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    busy = hygiene.collect(root=str(tmp_path), processes=lambda s, e: [], environ={})
    assert busy["busy"] and "load average 2.00 on 2 CPUs" in busy["warning"]


def test_a_sampler_that_has_ended_does_not_void_the_partition(monkeypatch):
    moves = _Moves(monkeypatch)

    def move(pid, cpus, root="/"):
        if pid == 4242:
            raise cores.AffinityUnavailable("pid 4242 has ended: nothing to bind")
        moves.masks[pid] = sorted(cpus)

    monkeypatch.setattr(cores, "move_process", move)
    plan = partition.Partition(1, console=(0,), worker=(1,))
    hold = partition.Hold(plan, sampler_pid=4242)
    hold.acquire()
    try:
        record = partition.environment(plan, hold, partition.place_worker(plan, 555))
    finally:
        hold.release()
    assert record["confined"] and record["applied"]["sampler"].startswith("failed (pid 4242 has ended")
