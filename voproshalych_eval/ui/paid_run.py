"""A paid LLM run starts only after the user has seen what it will cost.

:func:`confirm` turns a form's submit into two steps: the submit stores the run's parameters and shows the
estimate (calls, tokens, cost — :func:`voproshalych_eval.llm.estimate.estimate_run`); only the "Start" button
returns the parameters to start. An offline run (no estimate) starts at once. Nothing is started by Enter:
forms that start runs are created with ``enter_to_submit=False``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from voproshalych_eval.datasets.store import list_datasets
from voproshalych_eval.llm.estimate import estimate_run
from voproshalych_eval.llm.prices import price_table
from voproshalych_eval.llm.providers import configured_providers
from voproshalych_eval.ui import state
from voproshalych_eval.ui.i18n import fmt_count, tr


def _pending_key(key: str) -> str:
    return f"{key}__pending_paid_run"


def estimate(calls_per_model: int, models: Sequence[str] | None = None) -> Any:
    """The :class:`~voproshalych_eval.llm.estimate.RunEstimate` of a run making ``calls_per_model`` LLM calls on
    each of ``models`` (none named: the first configured model), priced by the price table (Settings)."""
    names = [m for m in (models or []) if m] or [
        next((m for p in configured_providers(state.settings()) for m in p.models), None)
        or tr("модель по умолчанию", "the default model")]
    return estimate_run(dict.fromkeys(names, int(calls_per_model)), prices=price_table(state.engine(), state.settings()))


def items_to_run(kind: str, name: str | int, limit: int | None) -> int:
    """How many items of the stored dataset ``name`` (by name: its newest version; or its id) a run with
    ``limit`` (0 or None: all) takes — the basis of its estimate; 0 for a dataset not stored."""
    size = next((int(d["n_items"] or 0) for d in list_datasets(state.engine(), kind)
                 if d["name"] == name or d["id"] == name), 0)
    return min(size, int(limit)) if limit else size


def estimate_text(est: Any) -> str:
    """``~N calls · ~T tokens · ~$C`` in the UI language (the assumed tokens per call said aside)."""
    cost = (tr("стоимость неизвестна (нет цены у ", "cost unknown (no price for ") + ", ".join(est.unpriced) + ")"
            if est.cost_usd is None else f"≈ ${est.cost_usd:.2f}")
    return tr(f"≈ {fmt_count(est.calls)} вызовов LLM · ≈ {fmt_count(est.tokens)} токенов · {cost}",
              f"≈ {fmt_count(est.calls)} LLM calls · ≈ {fmt_count(est.tokens)} tokens · {cost}")


def confirm(key: str, params: dict[str, Any] | None, estimate: Any | None) -> dict[str, Any] | None:
    """The parameters to start now, or None. ``params``: what the form just submitted (None when it was not);
    ``estimate``: its :class:`~voproshalych_eval.llm.estimate.RunEstimate` (None for an offline run)."""
    pending = _pending_key(key)
    if params is not None:
        if estimate is None:
            st.session_state.pop(pending, None)
            return params
        st.session_state[pending] = (params, estimate)
    held = st.session_state.get(pending)
    if held is None:
        return None
    params, estimate = held
    if st.session_state.get(f"{key}__confirm"):  # "Start" was pressed: the run starts and the notice goes away
        st.session_state.pop(pending, None)
        return params
    with st.container(border=True):
        st.warning(tr("**Платный запуск LLM.** ", "**A paid LLM run.** ") + estimate_text(estimate) + "  \n"
                   + tr(f"Оценка: около {fmt_count(estimate.prompt_tokens // max(estimate.calls, 1))} токенов запроса и "
                        f"{fmt_count(estimate.completion_tokens // max(estimate.calls, 1))} токенов ответа на вызов; "
                        "фактические токены и стоимость — в итогах запуска.",
                        f"Assumed about {fmt_count(estimate.prompt_tokens // max(estimate.calls, 1))} prompt and "
                        f"{fmt_count(estimate.completion_tokens // max(estimate.calls, 1))} reply tokens per call; "
                        "the actual tokens and cost are in the run's results."), icon="💳")
        c = st.columns(2)
        start = c[0].button(tr("Начать платный запуск", "Start the paid run"), type="primary", key=f"{key}__confirm")
        cancel = c[1].button(tr("Отмена", "Cancel"), key=f"{key}__cancel")
    if start:
        st.session_state.pop(pending, None)
        return params
    if cancel:
        st.session_state.pop(pending, None)
        st.rerun()
    return None
