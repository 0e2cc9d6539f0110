"""The start of a run page, the part every run page repeats above :func:`ui.run_view.run_section`.

A run page is: its form → the submitted parameters (with the offline choice of an LLM run,
:func:`submitted_params`) → a paid run's estimate confirmed → the plan started as a background job
(:func:`start_confirmed`) → the run view (``run_view.run_section``: job panel, run picker, empty state,
caption) → the page's cards and tables (:func:`run_results` for a page that stops without items). Pages are written as ``init_page_state()`` plus small ``_render_*``
functions and call these two helpers instead of repeating the start-a-run lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.engine import executor, runs
from voproshalych_eval.ui import jobs, paid_run, run_view, state
from voproshalych_eval.ui.widgets import offline_choice

#: the empty state of a run page whose form sits at the top
NO_RUNS = ("Запусков ещё нет — задайте параметры вверху и нажмите «Запустить».",
           "No runs yet — set the parameters above and press Run.")


def submitted_params(submitted: bool, offline: bool, llm_ok: bool, params: Callable[[bool], dict[str, Any] | None],
                     estimate: Callable[[dict[str, Any]], Any] | None = None) -> tuple[dict[str, Any] | None, Any]:
    """The parameters of a submitted LLM run form and, for a paid (online) run, its estimate.

    ``params(use_offline)`` builds the run's parameters from the form (None: nothing to start, e.g. a bad form);
    ``estimate(params)`` the calls a paid run makes (``paid_run.estimate``; None: free). Nothing is returned when
    the form was not submitted or the offline choice is refused (unchecked without a configured LLM:
    ``offline_choice`` shows why)."""
    if not submitted or (use_offline := offline_choice(offline, llm_ok)) is None:
        return None, None
    built = params(use_offline)
    if built is None or use_offline or estimate is None:
        return built, None
    return built, estimate(built)


def start_confirmed(key: str, params: dict[str, Any] | None, estimate: Any | None,
                    build: Callable[[Any, dict[str, Any]], executor.Plan]) -> str | None:
    """Start ``build(engine, params)`` as a background job under ``key`` (``jobs.start``) once the run is
    confirmed: a free run (``estimate`` None) at once, a paid one after "Start the paid run"
    (``paid_run.confirm``, which also shows a pending confirmation on later reruns). Returns the job's key."""
    confirmed = paid_run.confirm(key, params, estimate)
    if confirmed is None:
        return None
    return jobs.start(lambda: build(state.engine(), confirmed), key)


def run_results(tier: str, key: str, render_metrics: Callable[[runs.Run, dict[str, Any]], None], *,
                scope: tuple[str, ...] = (), empty: tuple[str, str] = NO_RUNS) -> tuple[runs.Run, pd.DataFrame]:
    """The results part of a run page: the run view (``run_view.run_section``; ``empty`` when the plan has no
    run yet, the page stops) with the selections of ``scope`` (widget keys; their URL parameter ``item``)
    kept to the run shown → ``render_metrics(run, metrics)`` when the run has aggregates → the run's items
    (the page stops when there are none)."""
    run = run_view.run_section(tier, key, empty=empty)
    if scope:
        run_view.scope_to_run(tier, run.id, scope, params=("item",))
    if run.metrics:
        render_metrics(run, run.metrics)
    df = jobs.items_frame(run.id)
    if df.empty:
        st.stop()
    return run, df
