"""Process-wide resources for the app (cached with ``st.cache_resource``) and user-facing error handling."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import streamlit as st
from sqlalchemy import Engine

from voproshalych_eval.config import Settings, get_settings
from voproshalych_eval.ui.i18n import tr

log = logging.getLogger("voproshalych_eval.app")
T = TypeVar("T")


@st.cache_resource(show_spinner=False)
def _engine_for(url_key: str) -> Engine:
    from voproshalych_eval.db import get_engine  # heavy: keeps db out of app start (+2 ms)

    return get_engine(get_settings())


def settings() -> Settings:
    return get_settings()


def engine() -> Engine:
    """The app's store engine (embedded server or ``VOPROSHALYCH_EVAL_STORE_URL``), migrated; its source is
    ``DATABASE_URL`` or the demo database."""
    s = get_settings()
    return _engine_for(f"{s.store_url or s.pgdata}|{s.database_url or 'demo'}")


@st.cache_resource(show_spinner=False)
def embedder(name: str) -> Any:
    """A cached embedder (model loaded once per process), behind the database cache."""
    from voproshalych_eval.embeddings import cached_embedder  # heavy: defers pandas (via embeddings)

    return cached_embedder(name, engine())


def current_embedder_name() -> str:
    return st.session_state.get("embedder_name") or get_settings().embedder


@contextmanager
def user_errors(action_ru: str, action_en: str) -> Iterator[None]:
    """Show an exception as a sentence the user can act on; the traceback goes to the log."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - every error becomes a message, never a traceback
        log.exception("%s failed", action_en)
        st.error(f"{tr(action_ru, action_en)}: {exc}")


def safe_call(fn: Callable[..., T], *args: Any, default: T | None = None, **kwargs: Any) -> T | None:
    """Call ``fn``; on error log it and show a short message, returning ``default``."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        log.exception("call failed: %s", getattr(fn, "__name__", fn))
        st.error(str(exc))
        return default
