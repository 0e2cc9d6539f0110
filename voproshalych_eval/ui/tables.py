"""Tables as a person reads them: translated headers, numbers by kind, a download button under each.

:func:`column_config` gives every column of a frame its header in the UI language and its number format:
a metric column (a catalogued key or a per-item field such as ``faithfulness``) gets the catalog's label and
decimals (counts as integers, shares 0.000, 1–5 scores to two decimals); other known columns
(:data:`COLUMN_LABELS`) their translated header. The data and the downloads keep the original column names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

# the header tables live with the words of stored values (reports use them too); re-exported here
from voproshalych_eval.field_words import COLUMN_LABELS, TOPIC_COLUMN_LABELS, words_of  # noqa: F401
from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.formatting import decimals
from voproshalych_eval.ui.i18n import lang, tr


def _metric_spec(column: str) -> Any:
    return catalog.get(column) or catalog.for_item_field(column)


def header(column: str, labels: Mapping[str, tuple[str, str]] | None = None) -> str:
    """The header of ``column`` in the UI language (``labels`` first, then :data:`COLUMN_LABELS`, then the catalog)."""
    if labels and column in labels:
        return tr(*labels[column])
    if column in COLUMN_LABELS:
        return tr(*COLUMN_LABELS[column])
    spec = _metric_spec(column)
    if spec is not None:
        return spec.label(lang())
    return column


def column_config(df: pd.DataFrame, labels: Mapping[str, tuple[str, str]] | None = None,
                  metrics: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``st.dataframe`` column configuration: translated headers, number formats by the metric catalog.

    ``metrics`` maps a column to the metric key whose number format it takes (when the column name is not
    itself a catalogued key or per-item field)."""
    config: dict[str, Any] = {}
    for col in df.columns:
        name = str(col)
        head = header(name, labels)
        spec = catalog.get(metrics[name]) if metrics and name in metrics else (
            None if name in COLUMN_LABELS else _metric_spec(name))
        numeric = pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(df[col])
        if numeric:  # every number by the catalog's rule (an uncatalogued float: three decimals, whole numbers: none)
            d = decimals(spec) if spec is not None else (0 if _whole_numbers(df[col]) else 3)
            config[name] = st.column_config.NumberColumn(head, format="%d" if d == 0 else f"%.{d}f")
        elif pd.api.types.is_datetime64_any_dtype(df[col]):
            config[name] = st.column_config.DatetimeColumn(head, format="YYYY-MM-DD HH:mm")
        elif name in ("text", "question", "answer", "reference", "examples"):
            config[name] = st.column_config.TextColumn(head, width="large")
        else:
            config[name] = st.column_config.Column(head)
    return config


def _whole_numbers(col: pd.Series) -> bool:
    """Integers, or floats that are all whole numbers once the missing values are left out (counts, ranks)."""
    if pd.api.types.is_integer_dtype(col):
        return True
    vals = col.dropna()
    return len(vals) > 0 and bool((vals == vals.round()).all())


def show(df: pd.DataFrame, name: str, *, key: str | None = None, labels: Mapping[str, tuple[str, str]] | None = None,
         metrics: Mapping[str, str] | None = None, height: int | str | None = None, download: bool = True,
         **kwargs: Any) -> Any:
    """A table with translated headers and numbers by kind, then its download buttons (original column names)."""
    from voproshalych_eval.ui.widgets import download_buttons  # cycle: ui.widgets imports ui.tables

    shown = df.copy()
    for col in shown.columns:  # stored identifiers (``factual``, ``not_found``) read as words
        shown[col] = words_of(str(col), shown[col], lang())
    for col in shown.columns:  # nested values read as text, never as a JSON tree
        if any(isinstance(v, dict | list | tuple) for v in shown[col]):  # (an empty str column maps to str)
            shown[col] = shown[col].map(_flat)
    for col in shown.columns:  # a missing text value is a dash, never "nan" (object or pandas' str columns)
        if shown[col].dtype == object or isinstance(shown[col].dtype, pd.StringDtype):
            shown[col] = shown[col].map(_dash_if_missing)
    event = st.dataframe(shown, hide_index=True, height=height or "auto", column_config=column_config(shown, labels, metrics),
                         key=key and f"tbl_{key}", **kwargs)
    if download:
        download_buttons(df, name, key=key)
    return event


def nested_columns(df: pd.DataFrame) -> list[str]:
    """Columns whose every non-empty value is a dict or a list (whole results, not readable as a cell)."""
    out = []
    for col in df.columns:
        vals = [v for v in df[col] if v is not None and not (isinstance(v, float) and v != v)]
        if vals and all(isinstance(v, dict | list | tuple) for v in vals):
            out.append(col)
    return out


def _flat(v: Any) -> Any:
    if isinstance(v, Mapping):
        return "; ".join(f"{k}: {_flat(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        return ", ".join(str(_flat(x)) for x in v)
    return v


def _dash_if_missing(v: Any) -> Any:
    """``—`` for a missing value in a text column (None, a float NaN, or the text a NaN was turned into)."""
    if v is None or (isinstance(v, float) and v != v):
        return "—"
    if isinstance(v, str) and v.strip() in ("nan", "NaN", "None"):
        return "—"
    return v


def definition_list(rows: Mapping[str, Any] | list[tuple[str, Any]]) -> None:
    """A readable two-column list (term — value) instead of a JSON tree."""
    pairs = list(rows.items()) if isinstance(rows, Mapping) else list(rows)
    if not pairs:
        return
    st.markdown("\n".join(f"- **{term}:** {_dl_value(value)}" for term, value in pairs))


def _dl_value(value: Any) -> str:
    """A definition's value: ``("code", text)`` as a code span (technical text), nested values flattened."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "code":
        return "`" + str(value[1]).replace("`", "'") + "`"
    if isinstance(value, Mapping):
        return "`" + str(_flat(value)).replace("`", "'") + "`"
    return "—" if value in (None, "") else str(_flat(value))
