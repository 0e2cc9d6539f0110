"""The common sidebar: data source (never credentials), embedder, LLM status."""

from __future__ import annotations

import streamlit as st

from voproshalych_eval.ui import state
from voproshalych_eval.ui.i18n import tr


def llm_status() -> tuple[bool, str]:
    """Whether an LLM endpoint is configured, and a short description (provider names only)."""
    try:
        # heavy: keeps llm out of app start (+23 ms)
        from voproshalych_eval.llm.providers import configured_providers
    except ImportError:
        return False, tr("LLM-слой не установлен", "LLM layer not installed")
    try:
        providers = configured_providers(state.settings())
    except Exception as exc:  # noqa: BLE001
        return False, str(exc)
    if not providers:
        return False, tr("не настроен — офлайн-эвристики", "not configured — offline heuristics")
    return True, ", ".join(p.name for p in providers)


def render_sidebar() -> None:
    s = state.settings()
    with st.sidebar:
        st.divider()
        source = tr("демо (встроенная PostgreSQL)", "demo (embedded PostgreSQL)") if s.embedded else s.database_label
        st.markdown(f"**{tr('База данных', 'Database')}:** {source}")
        st.markdown(f"**{tr('Эмбеддер', 'Embedder')}:** `{state.current_embedder_name()}`")
        ok, desc = llm_status()
        st.markdown(f"**LLM:** {'🟢' if ok else '⚪'} {desc}")
