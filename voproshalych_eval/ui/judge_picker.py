"""The judge metric (and the judged run) a labelling page works on: one picker for the Annotation queue and the
Judge agreement page, metrics named in the interface language (never their keys)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st
from sqlalchemy import Engine

from voproshalych_eval.engine import runs
from voproshalych_eval.judges.judge_metrics import JUDGE_METRICS
from voproshalych_eval.ui import annotation
from voproshalych_eval.ui.i18n import tr

#: label metrics that are not judge metrics
OTHER_METRICS = {"dataset_review": ("решения проверки наборов", "dataset review decisions")}


def metric_title(metric: str) -> str:
    """A label metric's name in the interface language (the key itself only for an unknown metric)."""
    if metric in JUDGE_METRICS:
        return tr(JUDGE_METRICS[metric].ru, JUDGE_METRICS[metric].en)
    if metric in OTHER_METRICS:
        return tr(*OTHER_METRICS[metric])
    return metric


def pick_metric(metrics: Sequence[str], *, key: str, where: Any = st) -> str:
    """A selectbox of judge ``metrics`` (in their order) under ``key``; the chosen metric's key."""
    names = {m: metric_title(m) for m in metrics}  # formatted now: a format_func may run outside the script run
    return str(where.selectbox(tr("Метрика судьи", "Judge metric"), list(metrics), key=key, format_func=names.get))


def run_title(run: runs.Run) -> str:
    return f"#{run.id} · {metric_title(annotation.run_metric(run))} · {run.dataset_name or ''}"


def pick_judged_run(engine: Engine, *, metric_key: str, run_key: str, where: Any = st) -> runs.Run | None:
    """A judge metric, then one of the finished runs that judged items one by one with it (newest first); None when
    no run did. A run preset under ``run_key`` (a link, a test) chooses its metric when none is chosen yet."""
    judged = annotation.judged_runs(engine)
    if not judged:
        return None
    metrics = list(dict.fromkeys(annotation.run_metric(r) for r in judged))
    preset = next((r for r in judged if r.id == st.session_state.get(run_key)), None)
    if preset is not None and metric_key not in st.session_state:
        st.session_state[metric_key] = annotation.run_metric(preset)
    metric = pick_metric(metrics, key=metric_key, where=where)
    of_metric = {r.id: r for r in judged if annotation.run_metric(r) == metric}
    if st.session_state.get(run_key) not in of_metric:
        st.session_state.pop(run_key, None)  # a run of another metric: the newest run of this one
    titles = {i: run_title(r) for i, r in of_metric.items()}
    run_id = where.selectbox(tr("Запуск", "Run"), list(of_metric), key=run_key, format_func=titles.get)
    return of_metric[int(run_id)]
