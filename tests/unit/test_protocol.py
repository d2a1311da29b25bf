import pytest

from engines import protocol


def test_every_event_type_round_trips_through_json():
    events = [
        protocol.make("hello", pid=12, versions={"python": "3.11"}),
        protocol.make("phase", phase="warmup", t_ns=5),
        protocol.make("loaded", load_s=0.5, params=10, model_bytes=40),
        protocol.make("latencies", t_ns=[1, 2, 3], latency_ns=[10, 20, 30]),
        protocol.make("progress", phase="measuring", fraction=0.5, iterations=3, elapsed_s=0.1),
        protocol.make("result", iterations=3, measured_s=0.1, warmup_iterations=1, first_inference_ms=2.0, batch=1),
        protocol.make("error", kind="load", message="boom", traceback="tb"),
    ]
    for event in events:
        assert protocol.loads(protocol.dumps(event)) == event


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ([1, 2], "must be a dict"),
        ({"v": 99, "type": "hello", "pid": 1, "versions": {}}, "protocol version 99"),
        ({"v": protocol.PROTOCOL_VERSION, "type": "telepathy"}, "unknown event type"),
        ({"v": protocol.PROTOCOL_VERSION, "type": "loaded", "load_s": 1}, "lacks params, model_bytes"),
        ({"v": protocol.PROTOCOL_VERSION, "type": "phase", "phase": "dreaming", "t_ns": 1}, "unknown phase"),
        ({"v": protocol.PROTOCOL_VERSION, "type": "latencies", "t_ns": [1], "latency_ns": []}, "different lengths"),
    ],
)
def test_malformed_events_are_rejected_with_the_reason(event, words):
    with pytest.raises(protocol.ProtocolError, match=words):
        protocol.check(event)


def test_library_objects_are_refused_so_the_console_never_unpickles_them():
    class TorchVersion(str):  # what torch.__version__ really is
        pass

    with pytest.raises(protocol.ProtocolError, match=r"loaded.versions.torch: .*TorchVersion is not a plain"):
        protocol.make("loaded", load_s=0.1, params=1, model_bytes=4, versions={"torch": TorchVersion("2.13")})
    with pytest.raises(protocol.ProtocolError, match="not a plain"):
        protocol.make("hello", pid=1, versions={}, extra=object())


def test_the_protocol_speaks_the_phases_of_the_phase_table():
    from engines import phases

    assert protocol.PHASES == tuple(phase.name for phase in phases.PHASES)
    for phase in phases.PHASES:
        assert protocol.make("phase", phase=phase.name, t_ns=1)["phase"] == phase.name
        assert phase.color.startswith("#") and len(phase.color) == 7
    assert phases.get("warmup").label == "warm-up" and phases.get("warmup").during == "warm-up"
    assert phases.get(None).during == "start-up"  # before the worker's first phase event
    assert phases.get("compiling").title == "Compiling"  # a phase the table does not know keeps its own name


def test_plain_turns_library_values_into_what_an_event_may_carry():
    """One conversion for every engine (the torch backend's and the DDP rank's copies had drifted: a numpy
    int32 became the string "3" and a numpy float64 the string "0.5" there, numbers in the ONNX Runtime one)."""
    import enum
    from pathlib import Path

    import numpy as np

    class Level(enum.IntEnum):
        HIGH = 2

    value = {1: (np.int32(3), np.float64(0.5), np.bool_(True), Level.HIGH), "path": Path("/tmp/x"),
             "array": np.arange(3), "nested": [None, "s", 1.5]}
    out = protocol.plain(value)
    assert out == {"1": [3, 0.5, True, 2], "path": "/tmp/x", "array": "[0 1 2]", "nested": [None, "s", 1.5]}
    assert [type(v) for v in out["1"]] == [int, float, bool, int]
    protocol._check_plain(out, "details")  # what the protocol accepts
