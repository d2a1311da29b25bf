"""Hardware counters (engines.counters) on a fake kernel and a fake /proc + /sys tree: parsing, ratios, top-down
fractions, partial and unavailable machines — plus the real syscall plumbing on software events, and the real
machine's answer (counted, or "not available" with why)."""

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from engines import counters
from engines.counters import kernel as k
from engines.counters import sysfs
from engines.counters.session import Group, Session

FORMATS = {"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "any": "config:21",
           "inv": "config:23", "cmask": "config:24-31"}
ICE_LAKE = {"slots": "event=0x00,umask=0x4", "topdown-retiring": "event=0x00,umask=0x80",
            "topdown-bad-spec": "event=0x00,umask=0x81", "topdown-fe-bound": "event=0x00,umask=0x82",
            "topdown-be-bound": "event=0x00,umask=0x83", "topdown-mem-bound": "event=0x00,umask=0x87",
            "cache-misses": "event=0x2e,umask=0x41"}
SKYLAKE = {"topdown-total-slots": "event=0x3c,umask=0x00,any=1", "topdown-total-slots.scale": "2",
           "topdown-slots-issued": "event=0xe,umask=0x1", "topdown-slots-retired": "event=0xc2,umask=0x2",
           "topdown-fetch-bubbles": "event=0x9c,umask=0x1",
           "topdown-recovery-bubbles": "event=0xd,umask=0x3,cmask=1,any=1", "topdown-recovery-bubbles.scale": "2"}
CPU_TYPE = 4
HARDWARE = {(0, 0): "cycles", (0, 1): "instructions", (0, 2): "cache-references", (0, 3): "cache-misses"}
TOPDOWN_CONFIGS = {0x400: "slots", 0x8000: "topdown-retiring", 0x8100: "topdown-bad-spec",
                   0x8200: "topdown-fe-bound", 0x8300: "topdown-be-bound", 0x8700: "topdown-mem-bound",
                   0x3C | 1 << 21: "topdown-total-slots", 0x10E: "topdown-slots-issued",
                   0x2C2: "topdown-slots-retired", 0x19C: "topdown-fetch-bubbles",
                   0xD | 0x300 | 1 << 24 | 1 << 21: "topdown-recovery-bubbles"}
PER_THREAD = {"cycles": 1000, "instructions": 2500, "cache-references": 400, "cache-misses": 100,
              "slots": 1000, "topdown-retiring": 400, "topdown-bad-spec": 100, "topdown-fe-bound": 200,
              "topdown-be-bound": 300, "topdown-mem-bound": 150,
              "topdown-total-slots": 500, "topdown-slots-issued": 600, "topdown-slots-retired": 400,
              "topdown-fetch-bubbles": 150, "topdown-recovery-bubbles": 25}


def tree(root: Path, paranoid=2, cap_eff="0000000000000000", tids=(101, 102), cpu_events=None, smt=False,
         pmus=("breakpoint", "software", "tracepoint")) -> Path:
    """A fake /proc and /sys: the paranoia setting, this process's threads and capabilities, the PMUs."""
    if paranoid is not None:
        (root / "proc/sys/kernel").mkdir(parents=True)
        (root / "proc/sys/kernel/perf_event_paranoid").write_text(f"{paranoid}\n")
    (root / "proc/self/task").mkdir(parents=True)
    for tid in tids:
        (root / "proc/self/task" / str(tid)).mkdir()
    (root / "proc/self/status").write_text(f"Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\n")
    devices = root / sysfs.DEVICES
    for name in pmus:
        (devices / name).mkdir(parents=True)
    if cpu_events is not None:
        cpu = devices / "cpu"
        (cpu / "events").mkdir(parents=True)
        (cpu / "format").mkdir()
        (cpu / "type").write_text(f"{CPU_TYPE}\n")
        for name, text in FORMATS.items():
            (cpu / "format" / name).write_text(text + "\n")
        for name, text in cpu_events.items():
            (cpu / "events" / name).write_text(text + "\n")
    (root / "sys/devices/system/cpu/smt").mkdir(parents=True)
    (root / "sys/devices/system/cpu/smt/active").write_text("1\n" if smt else "0\n")
    return root


class FakeKernel:
    """Answers perf_event_open with canned per-thread counts: `errors` maps an event name (or (tid, name)) to
    an errno; `times` maps a group leader's name to (enabled ns, running ns)."""

    def __init__(self, values=None, errors=None, times=None):
        self.values = {**PER_THREAD, **(values or {})}
        self.errors, self.times = errors or {}, times or {}
        self.groups: dict[int, tuple[int, list[str]]] = {}  # leader fd → (tid, member names)
        self.attrs: dict[str, dict] = {}
        self.open_fds: set[int] = set()
        self.ioctls: list[tuple[int, int, int]] = []
        self._next = 10

    def open(self, attr, pid, cpu, group_fd):
        fields = k.parse_attr(attr)
        name = HARDWARE.get((fields["type"], fields["config"])) if fields["type"] == 0 else \
            TOPDOWN_CONFIGS[fields["config"]] if fields["type"] == CPU_TYPE else None
        assert name, fields
        assert cpu == -1 and fields["read_format"] == k.READ_FORMAT and fields["inherit"]
        for key in ((pid, name), name):
            if key in self.errors:
                raise OSError(self.errors[key], os.strerror(self.errors[key]))
        fd, self._next = self._next, self._next + 1
        self.open_fds.add(fd)
        self.attrs[name] = fields
        if group_fd == -1:
            assert fields["disabled"], "a group leader starts disabled"
            self.groups[fd] = (pid, [name])
        else:
            assert not fields["disabled"], "members follow their leader"
            self.groups[group_fd][1].append(name)
        return fd

    def ioctl(self, fd, request, arg):
        assert fd in self.groups and arg == k.IOC_FLAG_GROUP
        self.ioctls.append((fd, request, arg))

    def read(self, fd, size):
        tid, names = self.groups[fd]
        enabled, running = self.times.get(names[0], (1_000_000, 1_000_000))
        data = k.pack_group(k.GroupRead(enabled, running, tuple(self.values[n] for n in names)))
        assert size == len(data)
        return data

    def close(self, fd):
        self.open_fds.remove(fd)


def measured(root, kernel):
    with counters.measure(kernel=kernel, root=root) as reading:
        pass
    return reading.result()


# ---- a machine that has everything: Ice Lake-style top-down with memory-bound
def test_counts_are_summed_over_threads_and_turned_into_ratios(tmp_path):
    fake = FakeKernel()
    out = measured(tree(tmp_path, cpu_events=ICE_LAKE), fake)
    assert out["available"] is True and out["reason"] == ""
    assert out["cycles"] == 2000 and out["instructions"] == 5000 and out["ipc"] == pytest.approx(2.5)
    assert out["cache_references"] == 800 and out["cache_misses"] == 200
    assert out["llc_miss_rate"] == pytest.approx(0.25)
    assert out["topdown"] == pytest.approx({"retiring": 0.4, "bad_speculation": 0.1, "frontend_bound": 0.2,
                                            "backend_bound": 0.3, "memory_bound": 0.15})
    assert out["topdown_reason"] is None and out["threads"] == 2
    assert "user space only (kernel.perf_event_paranoid=2" in out["method"]
    assert "sysfs events of the cpu PMU (slots)" in out["method"]
    assert "L2 on AMD Zen" in out["notes"][0] and len(out["notes"]) == 1  # not multiplexed
    assert not fake.open_fds, "every counter is closed after the block"
    # three groups on two threads: reset, enable, disable on each leader
    assert len(fake.ioctls) == 3 * 2 * 3
    assert [r for _, r, _ in fake.ioctls[:2]] == [k.IOC_RESET, k.IOC_ENABLE]
    assert fake.attrs["cycles"]["exclude_kernel"] and fake.attrs["topdown-retiring"]["config"] == 0x8000


def test_skylake_top_down_uses_the_scale_files_and_perf_formulas(tmp_path):
    out = measured(tree(tmp_path, cpu_events=SKYLAKE, smt=True), FakeKernel())
    # total slots 500 × scale 2 = 1000 per thread; recovery bubbles 25 × 2 = 50
    # frontend 150/1000, bad speculation (600 − 400 + 50)/1000, retiring 400/1000, backend the rest
    assert out["topdown"] == pytest.approx({"retiring": 0.4, "bad_speculation": 0.25, "frontend_bound": 0.15,
                                            "backend_bound": 0.2, "memory_bound": None})
    assert "(legacy)" in out["method"] and "with SMT on a thread's breakdown is approximate" in out["method"]


def test_privileged_or_permissive_kernels_count_the_kernel_too(tmp_path):
    perfmon = f"{1 << sysfs.CAP_PERFMON:016x}"
    fake = FakeKernel()
    out = measured(tree(tmp_path / "a", paranoid=3, cap_eff=perfmon), fake)
    assert out["available"] and "user space and kernel" in out["method"]
    assert fake.attrs["cycles"]["exclude_kernel"] is False
    permissive = FakeKernel()
    assert measured(tree(tmp_path / "b", paranoid=1), permissive)["available"]
    assert permissive.attrs["cycles"]["exclude_kernel"] is False


# ---- partial machines
def test_a_pmu_without_cache_events_still_gives_cycles_and_instructions(tmp_path):
    fake = FakeKernel(errors={"cache-references": errno.ENOENT})
    out = measured(tree(tmp_path), fake)
    assert out["available"] is True and out["ipc"] == pytest.approx(2.5)
    assert out["reason"] == "partial: cache references and misses not counted (ENOENT: No such file or directory)"
    assert out["cache_references"] is None and out["cache_misses"] is None and out["llc_miss_rate"] is None
    assert out["topdown"] is None
    assert out["topdown_reason"] == "no CPU PMU in sysfs (breakpoint, software, tracepoint)"
    assert not fake.open_fds


def test_a_cpu_pmu_without_top_down_events_says_so(tmp_path):
    out = measured(tree(tmp_path, cpu_events={"cache-misses": "event=0x2e,umask=0x41"}), FakeKernel())
    assert out["available"] and out["topdown"] is None
    assert "lists no top-down events in sysfs (AMD, Arm" in out["topdown_reason"]


def test_multiplexed_groups_are_scaled_and_said_to_be(tmp_path):
    fake = FakeKernel(times={"cache-references": (1_000_000, 250_000)})
    out = measured(tree(tmp_path), fake)
    assert out["cache_references"] == 4 * 800 and out["cache_misses"] == 4 * 200
    assert out["llc_miss_rate"] == pytest.approx(0.25)  # a group's ratio is unchanged by its scaling
    assert out["counted_fraction"] == {"core": 1.0, "cache": 0.25}
    assert "cache counted 25% of the time" in out["notes"][1]


def test_a_group_that_never_got_the_pmu_is_missing_not_zero(tmp_path):
    out = measured(tree(tmp_path, cpu_events=ICE_LAKE), FakeKernel(times={"slots": (1_000_000, 0)}))
    assert out["topdown"] is None and out["cycles"] == 2000
    assert "never counted: the PMU had no room for this group" in out["topdown_reason"]


def test_a_thread_that_ended_before_opening_is_skipped(tmp_path):
    fake = FakeKernel(errors={(102, "cycles"): errno.ESRCH, (102, "cache-references"): errno.ESRCH})
    out = measured(tree(tmp_path), fake)
    assert out["cycles"] == 1000 and out["cache_references"] == 400 and not fake.open_fds


# ---- nothing to count: every reason names the cause and the fix
def test_a_paranoid_kernel(tmp_path):
    fake = FakeKernel()
    out = measured(tree(tmp_path, paranoid=3), fake)
    assert out["available"] is False and out["cycles"] is None and out["topdown"] is None
    assert out["reason"].startswith("not available (kernel.perf_event_paranoid is 3")
    assert "sudo sysctl kernel.perf_event_paranoid=1" in out["reason"] and "CAP_PERFMON" in out["reason"]
    assert not fake.attrs, "nothing is opened when the setting forbids it"


def test_no_pmu_in_a_vm(tmp_path):
    fake = FakeKernel(errors={"cycles": errno.ENOENT})
    out = measured(tree(tmp_path, pmus=("breakpoint", "msr", "software")), fake)
    assert out["available"] is False and set(out) >= {"cycles", "ipc", "llc_miss_rate", "topdown", "method"}
    assert "no CPU PMU is exposed to this system: the kernel lists the PMUs breakpoint, msr, software" in \
        out["reason"]
    assert "enable the virtual PMU" in out["reason"] and not fake.open_fds


def test_a_cpu_pmu_without_the_cycles_event(tmp_path):
    out = measured(tree(tmp_path, cpu_events={}), FakeKernel(errors={"cycles": errno.ENOENT}))
    assert "the CPU PMU does not count the generic cycles event" in out["reason"]


@pytest.mark.parametrize(("code", "words"), [
    (errno.EPERM, ["a container's seccomp profile", "--cap-add PERFMON", "sysctl kernel.perf_event_paranoid=1"]),
    (errno.EACCES, ["although kernel.perf_event_paranoid is 2"]),
    (errno.ENOSYS, ["not implemented here (ENOSYS", "CONFIG_PERF_EVENTS"]),
    (errno.EMFILE, ["raise ulimit -n"]),
    (errno.EBUSY, ["exclusive use by another tool"]),
    (errno.EINVAL, ["perf_event_open failed: EINVAL"]),
])
def test_refused_calls_in_containers_and_odd_kernels(tmp_path, code, words):
    fake = FakeKernel(errors={"cycles": code})
    out = measured(tree(tmp_path), fake)
    assert out["available"] is False and out["reason"].startswith("not available (")
    for word in words:
        assert word in out["reason"]


def test_a_kernel_without_perf_events(tmp_path):
    out = measured(tree(tmp_path, paranoid=None), FakeKernel())
    assert "built without CONFIG_PERF_EVENTS" in out["reason"]


# ---- the API
def test_the_call_form_returns_the_work_and_its_counters(tmp_path):
    value, out = counters.measure(lambda: 42, kernel=FakeKernel(), root=tree(tmp_path))
    assert value == 42 and out["ipc"] == pytest.approx(2.5)


def test_the_work_s_exception_passes_through_and_the_counters_close(tmp_path):
    fake = FakeKernel()
    with pytest.raises(ZeroDivisionError), counters.measure(kernel=fake, root=tree(tmp_path)) as reading:
        1 / 0  # noqa: B018
    assert not fake.open_fds and reading.result()["available"]


def test_result_is_read_after_the_block(tmp_path):
    with counters.measure(kernel=FakeKernel(), root=tree(tmp_path)) as reading, \
            pytest.raises(RuntimeError, match="after the `with counters.measure\\(\\)` block ends"):
        reading.result()


# ---- encodings and layouts
def test_event_strings_are_encoded_through_the_format_files():
    formats = {**FORMATS, "event": "config:0-7,32-35"}  # AMD's 12-bit event select
    assert sysfs.encode("event=0x1c2,umask=0x3,edge", formats) == (0xC2 | 0x1 << 32 | 0x300 | 1 << 18, 0, 0)
    assert sysfs.encode("event=0x0d,umask=0x3,cmask=1,any=1", FORMATS)[0] == 0xD | 0x300 | 1 << 24 | 1 << 21
    assert sysfs.encode("ldlat=3", {"ldlat": "config1:0-15"}) == (0, 3, 0)
    with pytest.raises(sysfs.EncodingError, match="term 'period' has no format in sysfs"):
        sysfs.encode("event=0x1,period=100", FORMATS)


def test_attr_and_group_layouts_round_trip():
    event = k.Event("x", 4, 0x8000, config1=7, config2=9)
    fields = k.parse_attr(k.attr(event, leader=True, exclude_kernel=True))
    assert fields == {"type": 4, "size": k.ATTR_SIZE, "config": 0x8000, "config1": 7, "config2": 9,
                      "read_format": k.READ_FORMAT, "disabled": True, "inherit": True, "exclude_kernel": True}
    read = k.GroupRead(10, 5, (1, 2, 3))
    assert k.parse_group(k.pack_group(read), 3) == read
    with pytest.raises(OSError, match="short read"):
        k.parse_group(k.pack_group(read)[:-8], 3)
    with pytest.raises(OSError, match="read 3 values, 2 were opened"):
        k.parse_group(k.pack_group(read), 2)


# ---- the real kernel
def real_kernel_or_skip():
    try:
        real = k.LinuxKernel.for_this_machine()
        real.close(real.open(k.attr(k.Event("task-clock", k.TYPE_SOFTWARE, 1), True, True), 0, -1, -1))
    except (OSError, AttributeError) as exc:
        pytest.skip(f"perf_event_open is not usable here ({exc})")
    return real


def busy_thread(start: threading.Event, cpu_ns: list[int]) -> threading.Thread:
    """A thread that, once `start` is set, spins for a while and records the CPU time it took."""
    def busy():
        start.wait()
        begin = time.thread_time_ns()
        total = 0
        for i in range(300_000):
            total += i
        cpu_ns.append(time.thread_time_ns() - begin)

    thread = threading.Thread(target=busy)
    thread.start()
    return thread


def counted_task_clock(real, work) -> tuple[float, int]:
    group = Group("software", (k.Event("task-clock", k.TYPE_SOFTWARE, 1),
                               k.Event("context-switches", k.TYPE_SOFTWARE, 3)))
    session = Session(real, [group], sysfs.threads(Path("/")), exclude_kernel=True)
    session.open()
    session.start()
    work()
    counts = session.stop()
    assert not counts.missing
    return counts.values["task-clock"], counts.threads


@pytest.mark.parametrize("when", ["before the block", "inside the block"])
def test_the_real_syscall_counts_the_worker_threads(when):
    """The same session code on the real kernel, with the task-clock software event every Linux has: struct
    layout, group read, ioctls and per-thread opening hold for a thread that existed before the counters opened,
    and inheritance for one started inside the block (the count is that thread's CPU time, in ns)."""
    real = real_kernel_or_skip()
    start, cpu_ns = threading.Event(), []
    if when == "before the block":
        thread = busy_thread(start, cpu_ns)

        def work():
            start.set()
            thread.join()
    else:
        def work():
            thread = busy_thread(start, cpu_ns)
            start.set()
            thread.join()
    task_clock, threads = counted_task_clock(real, work)
    assert threads >= (2 if when == "before the block" else 1)
    assert task_clock >= 0.8 * cpu_ns[0], (task_clock, cpu_ns)


def test_this_machine_counts_or_says_why_not():
    out = measured(Path("/"), None)
    if out["available"]:
        assert out["cycles"] > 0 and out["instructions"] > 0
    else:
        assert out["reason"].startswith("not available (")
