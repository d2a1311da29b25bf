"""The name and version of every `--json` document, so a script can check what it reads before it reads it.

Each document is one JSON object whose first key is `"schema": "labconsole.<document>/<version>"`. The version
goes up when a key is removed or changes meaning (adding keys does not); a consumer checks the name and the
major version and ignores keys it does not know. A command that lists things prints an object with the list
under a named key (`history` → `{"schema": "labconsole.history/1", "runs": [...]}`), never a bare list: a bare
list cannot say what it is.

SCHEMAS is the table README.md documents ("JSON documents"); tests/unit/test_cli_schema.py runs every command
that prints one and checks its `schema`.
"""

from __future__ import annotations

from typing import Any

# command NAME (or a variant's own name) → the schema of the document it prints with --json
SCHEMAS: dict[str, str] = {
    "run": "labconsole.run/1",  # the stored run: summary, validity, environment, baseline verdict
    "analyze": "labconsole.analyze/1",  # the run plus its profile, roofs and bottleneck verdict
    "sweep": "labconsole.sweep/1",  # the sweep and its points
    "history": "labconsole.history/1",  # {"runs": [...]}
    "history.delete": "labconsole.history.delete/1",  # `history rm|prune`: action, dry_run, runs, deleted_rows …
    "compare": "labconsole.compare/1",  # ratio, interval, verdict, answer to --fail-on, differences
    "regressions": "labconsole.regressions/1",  # {"findings": [...], threshold, alpha}
    "baseline": "labconsole.baseline/1",  # one configuration's baseline (run_id null when none)
    "baselines": "labconsole.baselines/1",  # `baseline show` without RUN: {"baselines": [...]}
    "targets": "labconsole.targets/1",  # {"targets": [...]}
    "models": "labconsole.models/1",  # {"models": [...]}
    "machine": "labconsole.machine/1",  # this machine's card
    "machine.nodes": "labconsole.machine.nodes/1",  # `machine --cluster`: {"nodes": [...]}, a card or error each
    "whatif": "labconsole.whatif/1",
    "telemetry": "labconsole.telemetry/1",
    "make-data": "labconsole.make-data/1",
    "import": "labconsole.import/1",
    "report": "labconsole.report/1",
    "demo": "labconsole.demo-check/1",  # `demo --check --json`
    "node": "labconsole.node/1",
    "cluster": "labconsole.cluster/1",
    "doctor": "labconsole.doctor/1",
    "rules": "labconsole.rules/1",
    "storage": "labconsole.storage/1",  # the stored storage run: run_id, status, options, the kind's result
    "collectives": "labconsole.collectives/1",  # the stored collectives run: run_id, status, options, result
    "gpu-check": "labconsole.gpu-check/1",  # machine, versions, steps (status, reason, figures), summary
    "time-to-train": "labconsole.time-to-train/1",  # the runs (id, status, seed, result, cause) and MLPerf's score
    "topology": "labconsole.topology/1",  # the machine graph (nodes, links, gpu_matrix); graph_schema = the graph's own
}
# Commands that take --json (from the shared options) but print no JSON document: export writes files (its
# `--format json` file carries its own "format" and "version"), self-test writes result.json into --out.
NO_DOCUMENT = ("export", "self-test")


def stamp(document: Any, name: str) -> dict[str, Any]:
    """`document` with `"schema"` first. A dict keeps its keys (and a schema it already names); anything else —
    a command that has not been given a key for its list — is kept whole under "data" rather than lost."""
    schema = SCHEMAS.get(name) or f"labconsole.{name or 'document'}/1"  # a command not in the table yet
    if isinstance(document, dict):
        return {"schema": document.get("schema") or schema, **{k: v for k, v in document.items() if k != "schema"}}
    return {"schema": schema, "data": document}
