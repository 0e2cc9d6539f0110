"""A plan's run form built from its parameter table (``PlanSpec.params``).

:func:`render` draws one widget per parameter of the table that is on the form (``Param.on_form``): a number
input with the parameter's bounds for a number, a select box with the choices (in words, ``describe``) for a
choice, a checkbox for a yes/no, a text input for text and lists (comma-separated, checked by the
parameter's own coercion). The label and the help come from the table in the page's language; the widget key
is ``<prefix>_<the CLI flag's name>`` (``t1_k``, ``t1_hnsw``), so the CLI and the page name a parameter
alike. Parameters marked ``advanced`` go into a "More settings" expander.

Escape hatches: a parameter whose ``widget`` names a custom renderer (``"dataset"`` — the dataset picker,
``"bot_profile"`` — the saved-bot form, ``"embedder"`` …) is drawn by ``custom[widget](param, key)`` from the
page; a page may also ``skip`` parameters it sets itself, ``disable`` some, and place widgets in its own
columns. Values are returned as ``{name: value}``; a value that fails its parameter's check is reported
under the widget and left out (``errors`` lists them), so the plan never starts on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from voproshalych_eval.engine import describe
from voproshalych_eval.parameters import Param
from voproshalych_eval.plans import spec as plan_spec
from voproshalych_eval.ui.i18n import lang, tr

__all__ = ["FormValues", "form_params", "render", "widget_key"]

Renderer = Callable[[Param, str], Any]


@dataclass
class FormValues:
    """What a rendered form gives: the values by parameter name and the parameters whose input was refused."""

    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def __ior__(self, other: FormValues) -> FormValues:
        self.values.update(other.values)
        self.errors.update(other.errors)
        return self


def widget_key(prefix: str, p: Param) -> str:
    """``<prefix>_<the CLI flag's name>`` (``t1_hnsw`` for ``use_index``), else ``<prefix>_<name>``."""
    return f"{prefix}_{p.dest or p.name}"


def form_params(key: str, *, skip: Iterable[str] = ()) -> list[Param]:
    """The parameters of plan ``key`` its form shows (its table's ``on_form`` ones, minus ``skip``)."""
    skipped = set(skip)
    return [p for p in plan_spec(key).params if p.on_form and p.name not in skipped]


def _label(p: Param) -> str:
    text = p.label(lang())
    return text[:1].upper() + text[1:]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)


def _widget(p: Param, key: str, disabled: bool) -> Any:
    """The widget of ``p``'s type; returns the raw value (checked by the caller)."""
    label, help_ = _label(p), p.help(lang()) or None
    if p.kind in ("int", "float"):
        integer = p.kind == "int"
        cast = int if integer else float
        default = None if p.default is None else cast(p.default)
        return st.number_input(label, min_value=None if p.low is None else cast(p.low),
                               max_value=None if p.high is None else cast(p.high), value=default,
                               step=1 if integer else None, key=key, help=help_, disabled=disabled)
    if p.kind == "bool":
        return st.checkbox(label, value=bool(p.default), key=key, help=help_, disabled=disabled)
    if p.kind in ("choice", "quorum"):
        options = list(p.choices) if p.kind == "choice" and p.default is not None else [None, *p.choices]
        words = {c: describe.value_text(p.name, c, lang()) if c is not None else tr("по умолчанию", "default")
                 for c in options}
        index = options.index(p.default) if p.default in options else 0
        return st.selectbox(label, options, index=index, format_func=words.get, key=key, help=help_,
                            disabled=disabled)
    return st.text_input(label, value=_text(p.default), key=key, help=help_, disabled=disabled) or None


def render(key: str, prefix: str, *, skip: Iterable[str] = (), only: Sequence[str] | None = None,
           custom: Mapping[str, Renderer] | None = None, disabled: Mapping[str, bool] | None = None,
           containers: Sequence[Any] | None = None, columns: int = 3, advanced: bool = True) -> FormValues:
    """Widgets for plan ``key``'s parameters (``only`` these, in this order, or every form parameter but
    ``skip``), each in the next of ``containers`` (default: rows of ``columns`` columns); the ``advanced``
    ones in a "More settings" expander (``advanced=False``: in the rows like the others)."""
    custom, disabled = dict(custom or {}), dict(disabled or {})
    params = form_params(key, skip=skip)
    if only is not None:
        by_name = {p.name: p for p in params}
        params = [by_name[n] for n in only if n in by_name]
    main = [p for p in params if not (advanced and p.advanced and only is None)]
    extra = [p for p in params if p not in main]
    out = FormValues()
    out |= _draw(key, prefix, main, custom, disabled, containers, columns)
    if extra:
        with st.expander(tr("Ещё настройки", "More settings")):
            out |= _draw(key, prefix, extra, custom, disabled, None, columns)
    return out


def _draw(key: str, prefix: str, params: list[Param], custom: Mapping[str, Renderer], disabled: Mapping[str, bool],
          containers: Sequence[Any] | None, columns: int) -> FormValues:
    out = FormValues()
    slots: list[Any] = list(containers) if containers else []
    for i, p in enumerate(params):
        if not containers and i % columns == 0:
            slots += list(st.columns(columns))
        with slots[i % len(slots)] if containers else slots[i]:
            wkey = widget_key(prefix, p)
            renderer = custom.get(p.widget or "")
            if renderer is not None:
                out.values[p.name] = renderer(p, wkey)
                continue
            raw = _widget(p, wkey, bool(disabled.get(p.name)))
            try:
                out.values[p.name] = p.coerce(raw, key)
            except ValueError as exc:
                out.errors[p.name] = str(exc)
                st.error(tr(f"«{_label(p)}»: значение не принято ({raw!r}).", f"'{_label(p)}': value refused ({exc})."))
    return out
