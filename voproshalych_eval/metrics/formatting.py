"""How a metric's value is written: the number format follows the metric's catalog entry.

One rule for the app, the reports and the CLI (:func:`format_value`):

* a count (``kind == "count"`` or ``"setting"`` on the count scale) — an integer with a thousands separator
  (``3 795`` in Russian, ``3,795`` in English), never ``224.000``;
* seconds — with a unit (``0.84 s`` / ``0,84 с`` style: ``1.2 с``; a minute and more as ``2 мин 05 с``);
* a share (0–1), a signed cosine (−1–1) or a distance — three decimals (``0.581``); with ``percent=True``
  a share is written as a percentage (``58.1%``);
* a 1–5 score — two decimals (``4.25``); a 0–100 score (BLEU, chrF) — one decimal (``37.4``);
* a mean of counts (``avg_session_length``) — two decimals; an uncatalogued float — three significant decimals.

:func:`d3_format` gives the same rule as a plotly/d3 format string for chart ticks and hover labels.
Nothing here reads a database or knows the UI: pass the language (``"ru"``/``"en"``).
"""

from __future__ import annotations

import math
from typing import Any

from voproshalych_eval.metrics import catalog

__all__ = ["d3_format", "decimals", "format_count", "format_number", "format_seconds", "format_value", "is_count"]

_THOUSANDS = {"ru": "\u00a0", "en": ","}
_UNITS = {"s": ("с", "s"), "min": ("мин", "min"), "h": ("ч", "h")}


def _unit(name: str, lang: str) -> str:
    ru, en = _UNITS[name]
    return en if lang == "en" else ru


def is_count(spec: catalog.MetricSpec | None) -> bool:
    """Whether values of ``spec`` are whole numbers (a count, or a setting counted in items)."""
    return spec is not None and spec.kind in ("count", "setting") and spec.scale.key in ("count", "level")


def decimals(spec: catalog.MetricSpec | None) -> int:
    """Decimals a value of ``spec`` is written with (0 for counts; see the module doc)."""
    if spec is None:
        return 3
    if is_count(spec):
        return 0
    return {"1–5": 2, "0–100": 1, "count": 2, "level": 2, "1/distance": 2, "seconds": 2, "rank": 0}.get(spec.scale.key, 3)


def format_count(value: float | int, lang: str = "ru") -> str:
    """An integer with the language's thousands separator."""
    return f"{round(float(value)):,}".replace(",", _THOUSANDS.get(lang, ","))


def format_seconds(value: float, lang: str = "ru") -> str:
    """Seconds with a unit: ``0.84 с``, ``12.3 с``, ``2 мин 05 с``, ``1 ч 02 мин``."""
    v = float(value)
    if v < 10:
        return f"{v:.2f} {_unit('s', lang)}"
    if v < 60:
        return f"{v:.1f} {_unit('s', lang)}"
    if v < 3600:
        m, s = divmod(round(v), 60)
        return f"{m} {_unit('min', lang)} {s:02d} {_unit('s', lang)}"
    h, rest = divmod(round(v), 3600)
    return f"{h} {_unit('h', lang)} {rest // 60:02d} {_unit('min', lang)}"


def format_number(value: float, digits: int = 3, lang: str = "ru") -> str:
    """A float with ``digits`` decimals (a whole number with ``digits == 0`` and thousands separators)."""
    if digits == 0:
        return format_count(value, lang)
    return f"{float(value):.{digits}f}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_value(key: str | None, value: Any, lang: str = "ru", *, percent: bool = False,
                 missing: str = "—") -> str:
    """``value`` of metric ``key`` written by the catalog's kind and scale (see the module doc).

    A mapping with ``"value"`` (a stored aggregate) is unwrapped; booleans and strings are returned as text;
    ``None``/NaN give ``missing``."""
    if isinstance(value, dict):
        value = value.get("value")
    if _missing(value):
        return missing
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    spec = catalog.get(key) if key else None
    if spec is not None and spec.scale.key == "seconds":
        return format_seconds(value, lang)
    if spec is not None and percent and spec.scale.key == "0–1":
        return f"{100 * float(value):.1f}%"
    if spec is None and isinstance(value, int):
        return format_count(value, lang)
    return format_number(value, decimals(spec), lang)


def d3_format(key: str | None, *, percent: bool = False) -> str:
    """The same rule as a d3 format string (plotly ``tickformat`` / ``hovertemplate`` ``%{y:…}``)."""
    spec = catalog.get(key) if key else None
    if spec is not None and percent and spec.scale.key == "0–1":
        return ".1%"
    d = decimals(spec)
    return ",d" if d == 0 else f".{d}f"
