"""The Runs page's leaderboard view: pick a plan, a dataset and a metric; the configurations run on that
dataset ranked by it, with cost, tokens and latency p50/p95 beside the value (``voproshalych_eval.leaderboard``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from voproshalych_eval import leaderboard, runs
from voproshalych_eval.plans import SPECS
from voproshalych_eval.ui import tables
from voproshalych_eval.ui.common import empty_state
from voproshalych_eval.ui.i18n import lang, metric_label, tr, tr_pair

#: headers of the leaderboard's own columns
LABELS = {"rank": ("Место", "Rank"), "config_words": ("Конфигурация", "Configuration"), "cost_usd": ("Стоимость, $", "Cost, $"), "tokens": ("Токены", "Tokens"),
          "latency_p50": ("Задержка p50, с", "Latency p50, s"), "latency_p95": ("Задержка p95, с", "Latency p95, s"),
          "value": ("Значение", "Value")}


def render(engine: Any, filtered: Sequence[runs.Run]) -> None:
    """The leaderboard of the filtered runs' plans and datasets."""
    finished = [r for r in filtered if r.status in runs.FINISHED and r.dataset_name]
    if not finished:
        empty_state("Нет завершённых запусков на наборах данных.", "No finished runs on datasets.")
        return
    c1, c2, c3 = st.columns(3)
    tiers = sorted({r.tier for r in finished})
    tier_names = {t: tr_pair(SPECS[t].title) if t in SPECS else t for t in tiers}  # resolved now, not at format time
    tier = c1.selectbox(tr("Уровень", "Tier"), tiers, key="runs_lb_tier", format_func=tier_names.get)
    names = sorted({r.dataset_name for r in finished if r.tier == tier})
    dataset = c2.selectbox(tr("Набор данных", "Dataset"), names, key="runs_lb_dataset")
    keys: list[str] = []
    for r in finished:
        if r.tier == tier and r.dataset_name == dataset:
            keys += [k for k in runs.flatten_metrics(r.metrics or {}) if k not in keys and not k.startswith("cost_usd")]
    if not keys:
        empty_state("У этих запусков нет метрик.", "These runs have no metrics.")
        return
    wanted = [c for km in (SPECS[tier].key_metrics if tier in SPECS else ()) for c in (km, f"chunk.{km}") if c in keys]
    labels = {k: metric_label(k) for k in keys}
    metric = c3.selectbox(tr("Рейтинг по метрике", "Rank by metric"), keys,
                          index=keys.index(wanted[0]) if wanted else 0, key="runs_lb_metric", format_func=labels.get)
    board = leaderboard.dataset_leaderboard(engine, tier, metric, dataset_name=dataset, lang=lang())
    st.caption(tr("Одна строка на конфигурацию (её последний завершённый запуск); стоимость — по учтённым вызовам LLM "
                  "(«—» — неизвестна), задержка — перцентили вызовов запуска, если уровень их измеряет.",
                  "One row per configuration (its latest finished run); cost from the metered LLM calls (“—”: unknown), "
                  "latency from the run's call percentiles when the plan measures them."))
    shown = board.drop(columns=["ci_low", "ci_high", "started_at", "config", "models"])
    tables.show(shown, f"leaderboard_{tier}_{dataset}", key="runs_lb_table", labels=LABELS,
                metrics={"value": metric, "latency_p50": "latency_p50", "latency_p95": "latency_p95"})
