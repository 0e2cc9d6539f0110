"""Aggregation over recorded items: per-item values at a path (failed items as failures), ``summarize``
as a dict, latency percentiles over all calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from voproshalych_eval.metrics.statistics import percentiles, summarize


def agg(values: Sequence[float | None]) -> dict[str, Any]:
    """``summarize`` as a dict: value, n, n_failed, 95% CI."""
    return summarize(list(values)).to_dict()


def latency_percentiles(latencies: Sequence[float | None], prefix: str = "latency") -> dict[str, float | None]:
    """p50/p95/p99 over ALL calls (seconds)."""
    vals = [v for v in latencies if v is not None]
    if not vals:
        return {f"{prefix}_p50": None, f"{prefix}_p95": None, f"{prefix}_p99": None}
    p = percentiles(vals)
    return {f"{prefix}_{k}": v for k, v in p.items()}


def done_results(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r["result"]) for r in records if r["status"] == "done"]


def n_failed_items(records: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for r in records if r["status"] != "done")


def column(results: Sequence[Mapping[str, Any]], path: str, n_failed_items: int = 0) -> list[float | None]:
    """Values at a dotted path in each result (None when missing), plus one None per failed item."""
    out: list[float | None] = []
    for r in results:
        v: Any = r
        for part in path.split("."):
            v = v.get(part) if isinstance(v, Mapping) else None
        out.append(float(v) if isinstance(v, int | float) and not isinstance(v, bool) else (float(v) if isinstance(v, bool) else None))
    return out + [None] * n_failed_items
