"""A per-dataset leaderboard: the configurations run on one dataset, ranked by a chosen metric, with what they
cost beside the quality — USD, tokens and latency p50/p95 (issue 29 item 8).

One row per configuration (:func:`voproshalych_eval.engine.runs.config_label`: dataset, models, the configuring
parameters, offline), from its latest finished run of the plan on that dataset (version by content hash). The
metric's value carries its 95% CI and n; cost and tokens come from the run's metered LLM calls (``cost_usd``:
``None`` = unknown, never 0); latency from the run's own latency percentiles (``latency_p50`` /
``generation_latency_p50`` …) when the plan measures them. Ranked best first by the catalog's direction
(higher or lower is better); rows without the metric last. Offline runs are marked: their numbers are not
comparable to an LLM's.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.engine.describe import config_words
from voproshalych_eval.engine.runs import (
    Run,
    config_label,
    flatten_metrics,
    list_runs,
    models_label,
    run_cost,
    run_latency,
)
from voproshalych_eval.metrics import catalog

__all__ = ["COLUMNS", "dataset_leaderboard", "leaderboard"]

COLUMNS = ["rank", "config_words", "config", "models", "offline", "run_id", "value", "ci_low", "ci_high", "n", "cost_usd", "tokens",
           "latency_p50", "latency_p95", "started_at"]


def leaderboard(runs: Sequence[Run], metric: str, *, lang: str = "ru") -> pd.DataFrame:
    """The leaderboard of ``runs`` (one dataset, one plan; newest first as :func:`list_runs` gives them) by
    ``metric`` (see the module doc); ``config_words`` names each configuration in ``lang``."""
    direction = catalog.spec(metric).direction if catalog.is_catalogued(metric) else "higher"
    seen: set[str] = set()
    rows = []
    for run in runs:
        config = config_label(run)
        if config in seen:  # the latest run of each configuration
            continue
        seen.add(config)
        metrics = run.metrics or {}
        flat = flatten_metrics(metrics)
        agg = flat.get(metric) or {}
        cost, tokens = run_cost(metrics)
        rows.append({
            "config_words": config_words(run, lang), "config": config, "models": models_label(run), "offline": bool(run.offline), "run_id": run.id,
            "value": agg.get("value"), "ci_low": agg.get("ci_low"), "ci_high": agg.get("ci_high"), "n": agg.get("n"),
            "cost_usd": cost, "tokens": tokens, "latency_p50": run_latency(flat, 50), "latency_p95": run_latency(flat, 95),
            "started_at": run.started_at,
        })
    df = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "rank"])
    if df.empty:
        return pd.DataFrame(columns=COLUMNS)
    df["_missing"] = df["value"].isna()
    df = df.sort_values(["_missing", "value"], ascending=[True, direction == "lower"], kind="stable")
    df = df.drop(columns="_missing").reset_index(drop=True)
    df.insert(0, "rank", range(1, len(df) + 1))
    return df


def dataset_leaderboard(engine: Engine, tier: str, metric: str, *, dataset_hash: str | None = None,
                        dataset_name: str | None = None, limit: int = 500, lang: str = "ru") -> pd.DataFrame:
    """:func:`leaderboard` of the finished runs of plan ``tier`` on one dataset (by content hash or name)."""
    runs = list_runs(engine, tier=tier, status=("done", "done_with_failures"), dataset_hash=dataset_hash,
                     dataset_name=dataset_name, limit=limit)
    return leaderboard(runs, metric, lang=lang)
