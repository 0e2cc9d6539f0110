"""Widgets every page uses: header with "how to read this", metric cards, downloads, badges, empty states."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.plans import colors
from voproshalych_eval.ui.i18n import metric_label, tr

#: plan key -> chart colour (from the plan registry)
TIER_COLORS = colors()


def page_header(title: str, purpose: str, how_to_read: str | None = None) -> None:
    """Title, a one-line purpose and a collapsible "how to read this" (formula, scale, direction)."""
    st.title(title)
    st.caption(purpose)
    if how_to_read:
        with st.expander(tr("Как читать эту страницу", "How to read this page")):
            st.markdown(how_to_read)


def offline_badge(what_ru: str = "офлайн-эвристика", what_en: str = "offline heuristic") -> None:
    """A visible badge for numbers produced by an offline substitute (heuristic judge, extractive generator)."""
    st.warning(
        "⚠️ " + tr(
            f"Оценки получены {what_ru} (не LLM). Подключите LLM в настройках для настоящих оценок.",
            f"Scores produced by an {what_en} (not an LLM). Configure an LLM in Settings for real judgements.",
        )
    )


def empty_state(message_ru: str, message_en: str) -> None:
    st.info(tr(message_ru, message_en))


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def metric_cards(aggregates: Mapping[str, Mapping[str, Any] | Any], *, columns: int = 4, digits: int = 3) -> None:
    """One ``st.metric`` per metric: value, and under it n, failures and the 95% CI when known.

    ``aggregates`` maps metric keys to either a number or a dict with ``value, n, n_failed, ci_low, ci_high``
    (``voproshalych_eval.metrics.statistics.Aggregate.to_dict()``).
    """
    items = list(aggregates.items())
    for start in range(0, len(items), columns):
        cols = st.columns(columns)
        for col, (key, agg) in zip(cols, items[start : start + columns], strict=False):
            with col:
                if isinstance(agg, Mapping):
                    help_parts = []
                    if agg.get("n") is not None:
                        help_parts.append(f"n = {agg['n']}")
                    if agg.get("n_failed"):
                        kinds = ", ".join(f"{k} {n}" for k, n in (agg.get("failure_kinds") or {}).items()
                                          if n and k not in ("not_applicable", "empty_answer"))
                        help_parts.append(tr("сбоев", "failures") + f" = {agg['n_failed']}" + (f" ({kinds})" if kinds else ""))
                    if agg.get("n_partial"):
                        help_parts.append(tr("частичных", "partial") + f" = {agg['n_partial']}")
                    if agg.get("n_not_applicable"):
                        help_parts.append(tr("неприменимо", "not applicable") + f" = {agg['n_not_applicable']}")
                    if (agg.get("failure_kinds") or {}).get("empty_answer"):
                        help_parts.append(tr("пустых ответов", "empty answers") + f" = {agg['failure_kinds']['empty_answer']}")
                    if agg.get("ci_low") is not None and agg.get("ci_high") is not None:
                        help_parts.append(f"95% CI [{_fmt(agg['ci_low'], digits)}; {_fmt(agg['ci_high'], digits)}]")
                    st.metric(metric_label(key), _fmt(agg.get("value"), digits), help=None)
                    if help_parts:
                        st.caption(" · ".join(help_parts))
                else:
                    st.metric(metric_label(key), _fmt(agg, digits))


def download_buttons(df: pd.DataFrame, name: str, *, key: str | None = None, formats: Sequence[str] = ("csv", "json")) -> None:
    """Download buttons (CSV and JSON by default) for a table."""
    cols = st.columns(len(formats) + 4)
    for col, fmt in zip(cols, formats, strict=False):
        with col:
            if fmt == "csv":
                data = df.to_csv(index=False).encode("utf-8")
                mime = "text/csv"
            else:
                data = df.to_json(orient="records", force_ascii=False, date_format="iso", indent=1).encode("utf-8")
                mime = "application/json"
            st.download_button(
                f"⬇ {fmt.upper()}",
                data=data,
                file_name=f"{name}.{fmt}",
                mime=mime,
                key=f"dl_{key or name}_{fmt}",
            )


def json_download(obj: Any, name: str, *, label: str = "⬇ JSON", key: str | None = None) -> None:
    st.download_button(
        label,
        data=json.dumps(obj, ensure_ascii=False, indent=1, default=str).encode("utf-8"),
        file_name=f"{name}.json",
        mime="application/json",
        key=f"dl_{key or name}_json",
    )


def table_with_download(df: pd.DataFrame, name: str, *, key: str | None = None, height: int | None = None) -> None:
    """A dataframe followed by its download buttons."""
    st.dataframe(df, hide_index=True, height=height or "auto")
    download_buttons(df, name, key=key)
