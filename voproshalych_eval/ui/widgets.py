"""Widgets every page uses: header with "how to read this", metric cards, downloads, badges, empty states."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets.files import dataframe_csv
from voproshalych_eval.demo import load_demo
from voproshalych_eval.jsonable import dumps
from voproshalych_eval.metrics import catalog
from voproshalych_eval.plans import colors
from voproshalych_eval.ui import state, tables
from voproshalych_eval.ui.auth import export_bytes, masks_personal_data
from voproshalych_eval.ui.i18n import fmt, fmt_count, lang, metric_label, show, tr
from voproshalych_eval.ui.sidebar import llm_status

#: plan key -> chart colour (from the plan registry)
TIER_COLORS = colors()


def page_header(title: str, purpose: str, how_to_read: str | None = None) -> None:
    """Title, a one-line purpose and a collapsible "how to read this" (formula, scale, direction)."""
    st.title(title)
    st.caption(purpose)
    if how_to_read:
        with st.expander(tr("Как читать эту страницу", "How to read this page")):
            st.markdown(how_to_read)


def offline_badge(what_ru: str = "офлайн-эвристикой", what_en: str = "offline heuristic") -> None:
    """A visible badge for numbers produced by an offline substitute (heuristic judge, extractive generator)."""
    st.warning(
        tr(
            f"**📴 Офлайн — не сравнивается.** Оценки получены {what_ru} (не LLM) и с базовыми уровнями не "
            "сравниваются. Подключите LLM в настройках для настоящих оценок.",
            f"**📴 Offline — not compared.** Scores produced by an {what_en} (not an LLM); they are never compared "
            "to the baselines. Configure an LLM in Settings for real judgements.",
        ),
    )


def settings_link() -> None:
    st.page_link("pages/settings.py", label=tr("Открыть настройки", "Open Settings"), icon=":material/settings:")


def llm_notice() -> bool:
    """Above an LLM run form: whether an LLM is configured; when none is, say so before the run and offer
    the Settings page. Returns ``True`` when an LLM is configured."""
    ok, _desc = llm_status()
    if not ok:
        with st.container(border=True):
            st.warning(tr(
                "**LLM не настроен.** Запуск возможен только офлайн: эвристический судья и извлекающий генератор — "
                "их числа помечены «офлайн» и не сравниваются с базовыми уровнями. Для настоящих оценок подключите "
                "LLM в настройках.",
                "**No LLM is configured.** Runs can only go offline: a heuristic judge and an extractive generator — "
                "their numbers are marked offline and never compared to the baselines. Configure an LLM in Settings "
                "for real judgements.",
            ))
            settings_link()
    return ok


def offline_choice(submitted_offline: bool, llm_ok: bool) -> bool | None:
    """The ``offline`` parameter of an LLM run from the form's checkbox: ``True`` when checked; ``False``
    (never silently offline) when unchecked — and ``None`` with an error and the Settings link when unchecked
    without a configured LLM (the run is not started)."""
    if submitted_offline:
        return True
    if not llm_ok:
        st.error(tr(
            "Запуск не начат: «Офлайн (без LLM)» снят, а LLM не настроен. Отметьте «Офлайн» или настройте LLM.",
            "Not started: \"Offline (no LLM)\" is unchecked and no LLM is configured. Tick \"Offline\" or configure an LLM.",
        ))
        settings_link()
        return None
    return False


def empty_state(message_ru: str, message_en: str, *, page: str | None = None, page_label: tuple[str, str] | None = None,
                demo: bool = False, action: tuple[str, tuple[str, str]] | None = None,
                on_action: Callable[[], None] | None = None) -> bool:
    """An empty state that says what to do, with the control that does it: a page link (``page``), a
    "load the demo" button (``demo``) or an action button (``action = (key, (ru, en))``).

    Returns ``True`` when the action button was pressed (the caller then does the action); or give the
    action as ``on_action``, run before the page reruns (what resetting widgets needs)."""
    with st.container(border=True):
        st.info(tr(message_ru, message_en))
        pressed = False
        if action is not None:
            pressed = st.button(tr(*action[1]), key=action[0], type="primary", on_click=on_action)
        if demo:
            load_demo_button()
        if page is not None:
            st.page_link(page, label=tr(*(page_label or ("Открыть", "Open"))), icon=":material/arrow_forward:")
    return pressed


def load_demo_button(key: str = "load_demo") -> None:
    """Load the shipped demo (knowledge base, question log, datasets) into the source and the store."""
    if st.button(tr("Загрузить демо-данные", "Load the demo data"), key=key, icon=":material/download:"):
        with state.user_errors("Демо не загружено", "The demo was not loaded"):
            bar = st.progress(0.0, text=tr("Загрузка демо…", "Loading the demo…"))
            steps = [0]

            def say(message: object) -> None:
                steps[0] += 1
                bar.progress(min(0.95, steps[0] / 12), text=show(message))

            load_demo(state.engine(), embedder_name=state.current_embedder_name(), progress=say)
            bar.progress(1.0, text=tr("Демо загружено", "Demo loaded"))
            st.rerun()


def _failure_kinds(agg: Mapping[str, Any]) -> str:
    return ", ".join(f"{catalog.label(f'failure_kinds.{k}', lang()).lower()} {n}"
                     for k, n in (agg.get("failure_kinds") or {}).items() if n and k not in ("not_applicable", "empty_answer"))


def metric_cards(aggregates: Mapping[str, Mapping[str, Any] | Any], *, columns: int = 4, digits: int | None = None) -> None:
    """One ``st.metric`` per metric: its catalog label, the value written by kind (counts as integers, shares
    0.000, 1–5 scores to two decimals, seconds with units), and under it n, failures by kind and the 95% CI.

    ``aggregates`` maps metric keys to either a number or a dict with ``value, n, n_failed, ci_low, ci_high``
    (``voproshalych_eval.metrics.statistics.Aggregate.to_dict()``). Other blocks (``failure_kinds``,
    ``judge_calls``: dicts without a ``value``) are not metrics and get no card.
    """
    items = [(k, a) for k, a in aggregates.items() if not (isinstance(a, Mapping) and "value" not in a)]
    for start in range(0, len(items), columns):
        cols = st.columns(columns)
        for col, (key, agg) in zip(cols, items[start : start + columns], strict=False):
            with col:
                if isinstance(agg, Mapping):
                    help_parts = []
                    if agg.get("n") is not None:
                        help_parts.append(f"n = {fmt_count(agg['n'])}")
                    if agg.get("n_failed"):
                        kinds = _failure_kinds(agg)
                        help_parts.append(tr("сбоев", "failures") + f" = {fmt_count(agg['n_failed'])}" + (f" ({kinds})" if kinds else ""))
                    if agg.get("n_partial"):
                        help_parts.append(tr("частичных", "partial") + f" = {fmt_count(agg['n_partial'])}")
                    if agg.get("n_not_applicable"):
                        help_parts.append(tr("неприменимо", "not applicable") + f" = {fmt_count(agg['n_not_applicable'])}")
                    if (agg.get("failure_kinds") or {}).get("empty_answer"):
                        help_parts.append(tr("пустых ответов", "empty answers") + f" = {agg['failure_kinds']['empty_answer']}")
                    if agg.get("ci_low") is not None and agg.get("ci_high") is not None:
                        help_parts.append(tr("95% ДИ", "95% CI") + f" [{fmt(key, agg['ci_low'])}; {fmt(key, agg['ci_high'])}]")
                    st.metric(metric_label(key), fmt(key, agg.get("value")), help=_how(key))
                    if help_parts:
                        st.caption(" · ".join(help_parts))
                else:
                    st.metric(metric_label(key), fmt(key, agg), help=_how(key))


def _how(key: str) -> str | None:
    """The catalog's formula line, scale and direction of ``key`` (the card's help tooltip)."""
    spec = catalog.get(key)
    if spec is None:
        return None
    better = {"higher": tr("больше — лучше", "higher is better"), "lower": tr("меньше — лучше", "lower is better")}
    parts = [spec.how(lang()), tr("шкала ", "scale ") + spec.scale.label(lang())]
    if spec.direction in better:
        parts.append(better[spec.direction])
    return " · ".join(parts)


def download_buttons(df: pd.DataFrame, name: str, *, key: str | None = None, formats: Sequence[str] = ("csv", "json")) -> None:
    """Download buttons (CSV and JSON by default) for a table (personal data masked for a session that masks
    it: ``ui.auth.export_text``). The files are written when a button is pressed, not on every rerun."""
    masked = masks_personal_data()  # decided now: the file is written later, outside the script run
    frame = df.copy(deep=False)  # the table as shown, whatever the page does to ``df`` afterwards
    cols = st.columns(len(formats) + 4)
    for col, kind in zip(cols, formats, strict=False):
        with col:
            st.download_button(
                f"⬇ {kind.upper()}",
                data=csv_download(frame, masked=masked) if kind == "csv" else _json_records_later(frame, masked),
                file_name=f"{name}.{kind}",
                mime="text/csv" if kind == "csv" else "application/json",
                key=f"dl_{key or name}_{kind}",
                on_click="ignore",  # no rerun: it would replace the file being fetched (see csv_download)
            )


def _json_records_later(df: pd.DataFrame, masked: bool) -> Callable[[], bytes]:
    return lambda: export_bytes(df.to_json(orient="records", force_ascii=False, date_format="iso", indent=1),
                                masked=masked)


def csv_download(df: pd.DataFrame, *, masked: bool | None = None) -> Callable[[], bytes]:
    """The ``data`` of a CSV download button, written when the button is pressed (Streamlit calls it then):
    :func:`datasets.files.dataframe_csv` (formula cells neutralised), personal data masked for a session that
    masks it (``ui.auth.export_text``; ``masked`` decided at render time, since the call runs outside the
    script). Writing every table's CSV on every rerun was a large share of a page's drawing time. Its button
    takes ``on_click="ignore"``: a rerun on the click registers the button's file anew and can revoke the one
    the browser is fetching (a download that never arrives)."""
    masked = masks_personal_data() if masked is None else masked
    return lambda: export_bytes(dataframe_csv(df), masked=masked)


def json_file(obj: Any) -> bytes:
    """The bytes of a JSON download: cleaned by the one JSON cleaner (numpy and pandas values as plain
    numbers, ``NaN``/``NaT`` as ``null`` — never invalid JSON, never numbers as strings)."""
    return export_bytes(dumps(obj, indent=1))


def json_download(obj: Any, name: str, *, label: str = "⬇ JSON", key: str | None = None) -> None:
    st.download_button(
        label,
        data=json_file(obj),
        file_name=f"{name}.json",
        mime="application/json",
        key=f"dl_{key or name}_json",
    )


def table_with_download(df: pd.DataFrame, name: str, *, key: str | None = None, height: int | None = None,
                        labels: Mapping[str, tuple[str, str]] | None = None) -> None:
    """A dataframe (translated headers, numbers by kind: :func:`voproshalych_eval.ui.tables.show`) followed
    by its download buttons."""
    tables.show(df, name, key=key, height=height, labels=labels)
