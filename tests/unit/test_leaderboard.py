"""The per-dataset leaderboard (issue 29 item 8): one row per configuration (its latest run), ranked by the
chosen metric in the catalog's direction, with cost, tokens and latency p50/p95 beside it."""

from __future__ import annotations

import pandas as pd

from voproshalych_eval.engine.leaderboard import leaderboard
from voproshalych_eval.engine.runs import Run


def _run(rid: int, k: int, mrr: float | None, *, cost: float | None = None, p50: float | None = None) -> Run:
    metrics: dict = {"chunk": {"mrr": {"value": mrr, "ci_low": None, "ci_high": None, "n": 30}}}
    if cost is not None:
        metrics["cost_usd"] = {"total": {"value": cost, "prompt_tokens": 1000, "completion_tokens": 200}}
    if p50 is not None:
        metrics["latency_p50"] = {"value": p50}
        metrics["latency_p95"] = {"value": p50 * 3}
    return Run(rid, "tier1", "done", dataset_name="demo_golden", params={"retriever": "fts", "k": k},
               models={"embedder": "e5"}, metrics=metrics)


def test_ranked_by_the_metric_one_row_per_configuration_with_cost_and_latency() -> None:
    runs = [_run(4, 10, 0.70, cost=0.02, p50=0.5), _run(3, 5, 0.90), _run(2, 10, 0.10), _run(1, 20, None)]  # newest first
    board = leaderboard(runs, "chunk.mrr")
    assert board["run_id"].tolist() == [3, 4, 1]  # run 2 is an older run of run 4's configuration
    assert board["rank"].tolist() == [1, 2, 3] and board["value"].tolist()[:2] == [0.90, 0.70]
    row = board[board["run_id"] == 4].iloc[0]
    assert row["cost_usd"] == 0.02 and row["tokens"] == 1200
    assert row["latency_p50"] == 0.5 and row["latency_p95"] == 1.5
    assert pd.isna(board[board["run_id"] == 3].iloc[0]["cost_usd"])  # unknown, never 0


def test_a_lower_is_better_metric_ranks_ascending() -> None:
    runs = [Run(i, "tier3", "done", params={"threshold": i}, metrics={"avg_euclidean_distance": {"value": v, "n": 9}})
            for i, v in ((1, 0.9), (2, 0.3), (3, 0.6))]
    assert leaderboard(runs, "avg_euclidean_distance")["run_id"].tolist() == [2, 3, 1]
    assert leaderboard([], "mrr").empty
