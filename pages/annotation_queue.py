"""Annotation queue — label the judged items of a run one after another, by keyboard, for judge agreement."""

from __future__ import annotations

import getpass
import html
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.judges import agreement as ag
from voproshalych_eval.judges import labels as lb
from voproshalych_eval.judges import queue as jq
from voproshalych_eval.ui import annotation, auth, judge_picker, state
from voproshalych_eval.ui.i18n import tr
from voproshalych_eval.ui.widgets import empty_state, page_header

STRATEGY_LABELS = {"random": ("случайно", "random"), "uncertain": ("сначала неуверенные судьи", "judge-uncertain first"),
                   "disagreement": ("сначала расхождения моделей жюри", "jury disagreements first"),
                   "stratified": ("поровну по темам", "stratified by topic")}


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Очередь разметки", "Annotation queue"),
        tr("Разметка оценённых судьёй элементов запуска: ваша оценка на шкале метрики и почему.",
           "Label the judged items of a run: your value on the metric's scale, and why."),
        tr("Выберите запуск и порядок. Клавиши: цифры — оценка (для «показ/непоказ»: 1 — показать, 0 — нет), "
           "`Alt+J` — следующий, `Alt+K` — предыдущий, `Alt+S` — пропустить. Метки попадают в общее хранилище разметки: "
           "по ним считается согласие судьи с людьми, а когда один элемент разметили двое — согласие людей между собой.",
           "Pick a run and an order. Keys: digits — the value (for show/no-show: 1 show, 0 do not), `Alt+J` next, "
           "`Alt+K` previous, `Alt+S` skip. Labels go to the one label store: the judge's agreement with people is measured "
           "on them, and when two people label the same item, the agreement between people."),
    )


def _render_sidebar(eng: Any) -> tuple[str, Any, str, int]:
    """The annotator, the judged run, the order and the queue's size."""
    default_who = st.session_state.get("aq_annotator") or (getpass.getuser() if hasattr(getpass, "getuser") else "")
    who = st.text_input(tr("Разметчик", "Annotator"), value=default_who, key="aq_annotator").strip()
    picked = judge_picker.pick_judged_run(eng, metric_key="aq_metric", run_key="aq_run")
    strategy = st.selectbox(tr("Порядок", "Order"), list(jq.STRATEGIES), key="aq_strategy",
                            format_func={k: tr(*v) for k, v in STRATEGY_LABELS.items()}.get)
    size = st.number_input(tr("Размер очереди", "Queue size"), 1, 500, 20, key="aq_size")
    return who, picked, strategy, size


def _queue(eng: Any, run: Any, strategy: str, size: int) -> list[dict]:
    """The run's queue in the chosen order, rebuilt when the run, the order or the size change."""
    qkey = (run.id, strategy, int(size))
    if st.session_state.get("aq_qkey") != qkey:
        st.session_state["aq_queue"] = jq.order(annotation.queue_items(eng, run), strategy, limit=int(size))
        st.session_state["aq_qkey"] = qkey
        st.session_state["aq_pos"] = 0
        st.session_state["aq_skipped"] = []
    queue = st.session_state["aq_queue"]
    return queue


def _position(queue: list[dict], done: int) -> int:
    st.progress(done / len(queue), text=tr(f"Размечено {done} из {len(queue)}", f"Labelled {done} of {len(queue)}"))
    pos = min(max(0, int(st.session_state.get("aq_pos", 0))), len(queue) - 1)
    st.session_state["aq_pos"] = pos
    return pos


def _move(n: int, step: int) -> None:
    st.session_state["aq_pos"] = min(max(0, int(st.session_state["aq_pos"]) + step), n - 1)


def _skip(queue: list[dict]) -> None:
    st.session_state["aq_skipped"] = [*st.session_state.get("aq_skipped", []), queue[st.session_state["aq_pos"]]["key"]]
    _move(len(queue), 1)


def _label(queue: list[dict], metric: str, run_id: int, value: float) -> None:
    it = queue[st.session_state["aq_pos"]]
    if not auth.can("label"):  # a viewer's key press (team mode): refused and written to the audit log
        st.session_state["aq_error"] = "🔒 " + auth.refusal_text(auth.identity(), "label")
        return
    note = st.session_state.get(f"aq_note_{it['key']}") or None
    try:
        lb.save_label(state.engine(), it, metric, value, st.session_state.get("aq_annotator", "").strip(), note=note,
                      source=f"app:run{run_id}")
    except ValueError as exc:
        st.session_state["aq_error"] = str(exc)
        return
    auth.record("label", f"run {run_id} · {it['key']}", {"metric": metric, "value": value})
    st.session_state["aq_saved"] = (it["key"], value)
    _move(len(queue), 1)


def _render_item(item: dict, pos: int, queue: list[dict], mine: dict) -> None:
    st.subheader(tr(f"Элемент {pos + 1} из {len(queue)}", f"Item {pos + 1} of {len(queue)}")
                 + (" · " + tr("пропущен", "skipped") if item["key"] in st.session_state.get("aq_skipped", []) else ""))
    st.html(f"<p><b>{tr('Вопрос', 'Question')}:</b> {html.escape(str(item['question']))}</p>")
    for i, c in enumerate(item.get("contexts") or []):
        with st.expander(tr(f"Контекст {i + 1}", f"Context {i + 1}"), expanded=len(item["contexts"]) == 1):
            st.html(f"<div style='white-space:pre-wrap'>{html.escape(str(c))}</div>")
    if item.get("reference"):
        st.html(f"<p><b>{tr('Эталон', 'Reference')}:</b> {html.escape(str(item['reference']))}</p>")
    st.html(f"<p><b>{tr('Ответ', 'Answer')}:</b> {html.escape(str(item['answer']))}</p>")
    judged = item.get("judge")
    st.caption(tr("Судья: ", "Judge: ") + ("—" if judged is None else f"{judged:g}")
               + (" · " + ", ".join(f"{m}: {v}" for m, v in item["per_model"].items()) if len(item.get("per_model") or {}) > 1 else "")
               + (f" · {tr('тема', 'topic')}: {item['topic']}" if item.get("topic") else ""))
    if item["key"] in mine:
        st.success(tr(f"Ваша метка: {mine[item['key']]['value']:g}", f"Your label: {mine[item['key']]['value']:g}"))

    st.text_input(tr("Заметка (почему)", "Note (why)"), key=f"aq_note_{item['key']}",
                  value=(mine.get(item["key"]) or {}).get("note") or "")


def _render_keys(queue: list[dict], metric: str, scale: Any, run_id: int, pos: int) -> None:
    """A button (and a key) per value of the metric's scale, then previous / skip / next."""
    keys = jq.value_keys(scale.kind, scale.low if scale.low > float("-inf") else 0.0,
                         scale.high if scale.high < float("inf") else 1.0)
    names = {0.0: tr("не показывать", "do not show"), 1.0: tr("показать", "show")} if metric == "show_no_show" else {}
    vc = st.columns(len(keys))
    for col, (k, v) in zip(vc, keys, strict=True):
        col.button(f"{names.get(v, f'{v:g}')} [{k}]", key=f"aq_v_{k}", shortcut=k, on_click=_label,
                   args=(queue, metric, run_id, v))
    nav = st.columns(3)
    nav[0].button("← " + tr("Предыдущий", "Previous"), shortcut="Alt+K", key="aq_prev", on_click=_move,
                  args=(len(queue), -1), disabled=pos <= 0)
    nav[1].button(tr("Пропустить", "Skip"), shortcut="Alt+S", key="aq_skip", on_click=_skip, args=(queue,),
                  disabled=pos >= len(queue) - 1)
    nav[2].button(tr("Следующий", "Next") + " →", shortcut="Alt+J", key="aq_next", on_click=_move,
                  args=(len(queue), 1), disabled=pos >= len(queue) - 1)


def _render_pairs(eng: Any, metric: str, scale: Any, who: str) -> None:
    items = ag.labelled_items(eng, metric)
    pairs = ag.annotator_agreement(items, scale.kind, who, n_resamples=300)
    if pairs:
        st.subheader(tr("Согласие разметчиков", "Inter-annotator agreement"))
        st.dataframe(pd.DataFrame([{tr("С кем", "With"): p["annotator"], "n": p["n"],
                                    tr("Согласие", "Agreement"): None if p["value"] is None else round(p["value"], 2),
                                    tr("95% ДИ", "95% CI"): "—" if not p["ci"] else f"[{p['ci'][0]:.2f}; {p['ci'][1]:.2f}]"}
                                   for p in pairs]), hide_index=True, key="aq_pairs")


def _render_page() -> None:
    eng = state.engine()
    with st.sidebar:
        who, picked, strategy, size = _render_sidebar(eng)
    if picked is None:
        empty_state("Нет запусков с оценками судьи по элементам: запустите «Метрики судей» или «Судья · пайплайн».",
                    "No runs with per-item judge scores: run Judge metrics or Judge pipeline first.",
                    page="pages/judge_metrics.py", page_label=("Метрики судей", "Judge metrics"))
        st.stop()

    run = picked
    metric = annotation.run_metric(run)
    scale = lb.label_scale(metric)
    queue = _queue(eng, run, strategy, size)
    if not queue:
        st.info(tr("В запуске нет оценённых элементов с ответом.", "The run has no judged items with an answer."))
        st.stop()
    if not who:
        st.warning(tr("Укажите имя разметчика в боковой панели.", "Enter the annotator's name in the sidebar."))
        st.stop()

    mine = {lab["item_key"]: lab for lab in lb.stored_labels(eng, metric, annotator=who)}
    done = sum(1 for it in queue if it["key"] in mine)
    pos = _position(queue, done)
    if err := st.session_state.pop("aq_error", None):
        st.error(err)
    item = queue[pos]
    _render_item(item, pos, queue, mine)
    _render_keys(queue, metric, scale, run.id, pos)
    _render_pairs(eng, metric, scale, who)


init_page_state()
_render_page()
