"""Result views that keep their place across reruns.

Plain ``st.tabs`` keep the selected tab only in the browser: when the elements above them change (a run
finished, a progress panel went away) the frontend rebuilds them and the first tab is selected again —
the first click inside a result tab right after a run "jumps back". :func:`tabs` uses Streamlit's stateful
tabs (``key`` + ``on_change="rerun"``): the open tab lives in the session state, survives every rerun and
a language switch, and only the open tab's body needs to run (``view.open``). The open tab is also in the URL
(``?<key>=<view name>``): a link opens the same tab.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from voproshalych_eval.ui.i18n import tr


def _logical_key(key: str) -> str:
    return f"{key}__view"


def _remember(key: str, labels: dict[str, str]) -> None:
    """on_change: store the opened view's language-independent name."""
    label = st.session_state.get(key)
    for name, shown in labels.items():
        if shown == label:
            st.session_state[_logical_key(key)] = name
            return


def current(key: str, default: str) -> str:
    """The name of the view open in the tabs ``key`` (``default`` before any click)."""
    return str(st.session_state.get(_logical_key(key), default))


def open_view(key: str, name: str) -> None:
    """Open view ``name`` of the tabs ``key`` on the next rerun (call before the tabs are drawn)."""
    st.session_state[_logical_key(key)] = name
    st.session_state.pop(key, None)


def tabs(key: str, options: Mapping[str, tuple[str, str]]) -> dict[str, st.delta_generator.DeltaGenerator]:
    """Stateful tabs: ``options`` maps a view name to its ``(ru, en)`` label; returns name -> container.

    Each container has ``.open`` (True for the open view): pages draw only the open one."""
    labels = {name: tr(*pair) for name, pair in options.items()}
    names = list(labels)
    if _logical_key(key) not in st.session_state and st.query_params.get(key) in labels:
        st.session_state[_logical_key(key)] = st.query_params[key]  # a link opens its tab (``?t1_view=compare``)
    wanted = current(key, names[0])
    if wanted not in labels:
        wanted = names[0]
    if st.query_params.get(key) != wanted:
        st.query_params[key] = wanted  # the open tab lives in the URL
    # the stored label is the widget's value; after a language switch (or open_view) set it to the wanted view
    if st.session_state.get(key) not in labels.values():
        st.session_state[key] = labels[wanted]
    containers = st.tabs(list(labels.values()), key=key, on_change=_remember, args=(key, labels))
    return dict(zip(names, containers, strict=True))
