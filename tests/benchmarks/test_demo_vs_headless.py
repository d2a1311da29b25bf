"""Demo mode does not disturb its run either (issue 18, part 2 of test_window_vs_headless.py): a one-item playlist of
the same spec through `labconsole demo PLAYLIST --once --windowed` against `labconsole run`, in the same interleaved
pairs, with the same goals and figures. In `make bench-long`: it takes about five minutes on a 2-core machine, and
`make bench` (which CI runs within its 30 minutes) keeps the Run page's own comparison.
"""

from __future__ import annotations

import json

from test_window_vs_headless import SPEC, _pairs, _record_console_cpu, _record_pairs, _window_side


def test_a_run_in_demo_mode_measures_like_a_headless_run(tmp_path, bench):
    playlist = tmp_path / "one.json"
    playlist.write_text(json.dumps({"title": "window vs headless", "loop": False, "hold_s": 0,
                                    "items": [{"name": "mlp", "run": SPEC}]}))
    rounds = _pairs(tmp_path, "demo", lambda db: _window_side("demo", str(playlist), db))
    _record_pairs(bench, "demo", rounds)
    _record_console_cpu(bench, "demo", rounds)
