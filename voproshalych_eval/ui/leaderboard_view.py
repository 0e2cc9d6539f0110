"""The Runs page's leaderboard view: pick a plan, a dataset and a metric; the configurations run on that
dataset ranked by it, with cost, tokens and latency p50/p95 beside the value (``voproshalych_eval.engine.leaderboard``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.engine import leaderboard, runs
from voproshalych_eval.plans import SPECS
from voproshalych_eval.ui import item_diff_view, state, tables
from voproshalych_eval.ui.i18n import lang, metric_label, tr, tr_pair
from voproshalych_eval.ui.widgets import empty_state

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
    event = tables.show(shown, f"leaderboard_{tier}_{dataset}", key="runs_lb_table", labels=LABELS,
                        metrics={"value": metric, "latency_p50": "latency_p50", "latency_p95": "latency_p95"},
                        on_select="rerun", selection_mode="multi-row")
    if len(board) >= 2:
        picked = list(getattr(getattr(event, "selection", None), "rows", None) or [])
        diff_two(engine, board, metric, picked=[int(board.iloc[i]["run_id"]) for i in sorted(picked)[:2]])


def diff_two(engine: Any, board: pd.DataFrame, metric: str, *, picked: Sequence[int] = ()) -> None:
    """The per-item diff of two configurations of the leaderboard (``board``): two rows picked in the table
    (``picked``: their run ids) show it at once; otherwise A and B are chosen below it (the two best by default)
    and "Diff per item" shows it. The comparison is :func:`runs.compare_runs`, drawn by ``ui.item_diff_view``."""
    st.markdown(tr("**Две конфигурации по элементам** — отметьте две строки таблицы или выберите их здесь.",
                   "**Two configurations, item by item** — tick two rows of the table or choose them here."))
    names = {int(r["run_id"]): f"#{int(r['rank'])} · {r['config_words']}" for _, r in board.iterrows()}
    ids = list(names)
    go = False
    if len(picked) == 2 and st.session_state.get("runs_lb_rows") != tuple(picked):  # a new pair ticked in the table
        st.session_state["runs_lb_rows"] = tuple(picked)
        st.session_state["runs_lb_a"], st.session_state["runs_lb_b"] = picked
        go = True
    if st.session_state.get("runs_lb_a") not in ids:
        st.session_state.pop("runs_lb_a", None)
    c1, c2, c3 = st.columns([3, 3, 2])
    a = c1.selectbox(tr("A — эталон", "A — reference"), ids, index=0, key="runs_lb_a", format_func=names.get)
    others = [i for i in ids if i != a]
    if st.session_state.get("runs_lb_b") not in others:
        st.session_state.pop("runs_lb_b", None)
    b = c2.selectbox(tr("B — кандидат", "B — candidate"), others, index=0, key="runs_lb_b", format_func=names.get)
    go = c3.button(tr("Разница по элементам", "Diff per item"), key="runs_lb_diff", type="primary") or go
    if go:
        with state.user_errors("Не удалось сравнить", "Could not compare"), st.spinner(tr("Сравниваю…", "Comparing…")):
            st.session_state["runs_lb_cmp"] = ((a, b), runs.compare_runs(engine, a, b))
    held = st.session_state.get("runs_lb_cmp")
    if not held or held[0] != (a, b):
        return
    try:
        item_diff_view.render(held[1], metric, key="runs_lb_item_diff", name=f"leaderboard_diff_{a}_{b}",
                              labels={"a": (f"A: {names[a]}",) * 2, "b": (f"B: {names[b]}",) * 2})
    except ValueError:  # an aggregate without per-item values in both runs
        st.info(tr(f"У метрики «{metric_label(metric)}» нет значений по элементам в обоих запусках — выберите другую.",
                   f"The metric '{metric_label(metric)}' has no per-item values in both runs — pick another."))
