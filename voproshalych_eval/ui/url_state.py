"""A page's state in its URL (``st.query_params``): read a parameter, write one, and keep a widget bound to one.

Below :mod:`voproshalych_eval.ui.run_view` and :mod:`voproshalych_eval.ui.jobs`, which both keep their
filters, picks and tabs here, so a link opens the same view in a new session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import streamlit as st

from voproshalych_eval.ui.i18n import remember_choice


def url_value(param: str) -> str | None:
    value = st.query_params.get(param)
    return str(value) if value not in (None, "") else None


def url_int(param: str) -> int | None:
    value = url_value(param)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def url_ints(param: str) -> list[int] | None:
    """A comma-separated list of ids (``?cmp=3,5,8``); None when absent."""
    value = url_value(param)
    if value is None:
        return None
    return [int(x) for x in value.split(",") if x.strip().isdigit()]


def set_url(param: str, value: Any) -> None:
    """Write ``value`` to the URL (a list as ``a,b,c``); ``None`` or empty removes the parameter."""
    if isinstance(value, list | tuple | set):
        value = ",".join(str(v) for v in value)
    if value is None or value == "":
        if param in st.query_params:
            del st.query_params[param]
        return
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if st.query_params.get(param) != text:
        st.query_params[param] = text


def bind(key: str, param: str | None = None, *, parse: Callable[[str], Any] = str,
         valid: Iterable[Any] | None = None) -> None:
    """Keep widget ``key``'s value in the URL parameter ``param`` (default: ``key``). Call it **before** the
    widget is drawn: a session that opens the page with the parameter starts from it (when ``valid`` is
    given, only from one of those values); the value the widget holds is written back to the URL.

    Only for widgets drawn without an explicit default (``index=``/``value=``), as Streamlit wants."""
    param = param or key
    remember_choice(key)
    if key not in st.session_state and (raw := url_value(param)) is not None:
        try:
            value = parse(raw)
        except (TypeError, ValueError):
            value = None
        allowed = None if valid is None else list(valid)
        if value is not None and (allowed is None or value in allowed):
            st.session_state[key] = value
    if key in st.session_state:
        value = st.session_state[key]
        set_url(param, value if isinstance(value, str | int | float | bool | list | tuple) else None)


def parse_bool(raw: str) -> bool:
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ValueError(raw)


def parse_optional_int(raw: str) -> int | None:
    """``"none"`` → None (a radio whose options are ``[1, None]``), else the integer."""
    return None if raw.lower() == "none" else int(raw)
