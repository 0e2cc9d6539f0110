"""One item's trace as a collapsible tree of its steps (retrieve → prompt → LLM → judge), rendered, never a
JSON dump: each nested step is an expander titled with its name in words and, when the step recorded them, its
latency, tokens and cost; its plain fields are a definition list (headers and values in words, numbers by the
catalog), lists of records a table, long texts as text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.field_words import column_header, value_word
from voproshalych_eval.ui import tables, untrusted
from voproshalych_eval.ui.i18n import fmt, fmt_count, fmt_seconds, lang, tr

#: the order steps appear in (others follow in their stored order)
STEP_ORDER = ("retrieval", "retrieved", "retrieved_chunk_ids", "contexts", "prompt", "generation", "answer",
              "judge", "judges", "judge_calls")
_LONG = 160


def _stats(step: Mapping[str, Any]) -> str:
    parts = []
    if isinstance(step.get("latency_s"), int | float):
        parts.append(fmt_seconds(step["latency_s"]))
    tokens = step.get("tokens")
    if isinstance(tokens, Mapping):
        tokens = sum(int(v or 0) for v in tokens.values() if isinstance(v, int | float))
    if isinstance(tokens, int | float) and tokens:
        parts.append(tr(f"{fmt_count(tokens)} токенов", f"{fmt_count(tokens)} tokens"))
    if isinstance(step.get("cost_usd"), int | float):
        parts.append(f"${step['cost_usd']:.4f}")
    return " · ".join(parts)


def _value(name: str, value: Any) -> Any:
    if isinstance(value, bool):
        return tr("да", "yes") if value else tr("нет", "no")
    if isinstance(value, float):
        return fmt(name, value)
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return untrusted.md(", ".join(str(value_word(name, v, lang())) for v in value)) or "—"
    shown = value_word(name, value, lang())
    return untrusted.md(shown) if isinstance(shown, str) else shown  # data is shown as text, never as Markdown


def _ordered(result: Mapping[str, Any]) -> list[str]:
    keys = list(result)
    return [k for k in STEP_ORDER if k in result] + [k for k in keys if k not in STEP_ORDER]


def render(result: Mapping[str, Any], *, key: str, depth: int = 0) -> None:
    """The tree of ``result`` (one item's stored result)."""
    plain: list[tuple[str, Any]] = []
    for name in _ordered(result):
        value = result[name]
        if isinstance(value, Mapping) and value:
            title = column_header(name, lang())
            stats = _stats(value)
            with st.expander(f"{title}" + (f" · {stats}" if stats else ""), expanded=depth == 0 and name in STEP_ORDER):
                render(value, key=f"{key}_{name}", depth=depth + 1)
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            with st.expander(f"{column_header(name, lang())} ({len(value)})"):
                tables.show(pd.DataFrame(value), f"{key}_{name}", key=f"{key}_{name}", download=False)
        elif (isinstance(value, list) and value and all(isinstance(v, str) for v in value)
              and sum(len(v) for v in value) > _LONG):  # texts (the contexts given to a model): each as text
            st.markdown(f"**{column_header(name, lang())}** ({fmt_count(len(value))})")
            for v in value:
                untrusted.text(v)
        elif isinstance(value, str) and len(value) > _LONG:
            st.markdown(f"**{column_header(name, lang())}**")
            untrusted.text(value)
        else:
            plain.append((column_header(name, lang()), _value(name, value)))
    if plain:
        tables.definition_list(plain)
