"""Drawing a figure on a page: every chart goes through :func:`plotly_chart`, so every chart has the same
toolbar (:data:`voproshalych_eval.plots.layout.CHART_CONFIG`: no logo, no buttons that only confuse)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from voproshalych_eval.plots.layout import CHART_CONFIG


def plotly_chart(fig: Any, **kwargs: Any) -> Any:
    """``st.plotly_chart`` with the app's chart config; ``kwargs`` as for ``st.plotly_chart`` (``key``,
    ``on_select``, ``selection_mode``…; a ``config`` is laid over the app's). Returns the selection event when
    ``on_select`` is set."""
    config = {**CHART_CONFIG, **(kwargs.pop("config", None) or {})}
    return st.plotly_chart(fig, config=config, **kwargs)
