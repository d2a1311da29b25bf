"""What is running on the cluster: one entry per dispatched run in Ray's key-value store (the GCS).

Ray's state API (`ray list tasks`) needs the dashboard, which the light `ray` install lacks; the GCS key-value
store is always there. The console that dispatches a run writes its entry when the run is sent and deletes it
when the run ends; an entry whose node is gone is shown as such by the listing, never as running.
(`ray.experimental.internal_kv` is Ray's own store API; its functions carry a leading underscore.)
"""

from __future__ import annotations

import json
from typing import Any

_NAMESPACE = "labconsole-runs"


def put(ray: Any, run_id: str, entry: dict[str, Any]) -> None:
    from ray.experimental import internal_kv

    internal_kv._internal_kv_put(run_id, json.dumps(entry), overwrite=True, namespace=_NAMESPACE)


def delete(ray: Any, run_id: str) -> None:
    from ray.experimental import internal_kv

    try:
        internal_kv._internal_kv_del(run_id, namespace=_NAMESPACE)
    except Exception:  # noqa: BLE001 — the cluster may be gone already; the listing ignores dead nodes' runs
        pass


def entries(ray: Any) -> list[dict[str, Any]]:
    from ray.experimental import internal_kv

    out = []
    for key in internal_kv._internal_kv_list("", namespace=_NAMESPACE):
        raw = internal_kv._internal_kv_get(key, namespace=_NAMESPACE)
        if raw:
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
    return out
