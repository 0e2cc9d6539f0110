"""Real questions — pick questions from the question log and label their relevant chunks (or "not in the knowledge
base") into a golden set that Tiers 1–3 can use."""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from voproshalych_eval import annotations as A
from voproshalych_eval.analytics.question_log import list_sources
from voproshalych_eval.generation import realq
from voproshalych_eval.generation.picker import search_chunks
from voproshalych_eval.ui import state
from voproshalych_eval.ui.common import empty_state, page_header, table_with_download
from voproshalych_eval.ui.i18n import tr

STRATEGY_LABELS = {
    "random_stratified": ("случайная выборка по слоям", "random stratified sample"),
    "unanswered": ("без ответа бота", "unanswered by the bot"),
    "thumbs_down": ("с оценкой «палец вниз»", "thumbs down"),
    "topic": ("по теме", "by topic"),
    "coverage_gap": ("из пробелов покрытия", "from coverage gaps"),
}
STATE_LABELS = {"pending": ("ждёт разметки", "to label"), "labelled": ("размечен", "labelled"), "skipped": ("пропущен", "skipped")}

page_header(
    tr("Реальные вопросы", "Real questions"),
    tr("Разметка вопросов из журнала: какие чанки на них отвечают — или ответа в базе знаний нет.",
       "Label questions from the log: which chunks answer them — or the knowledge base has no answer."),
    tr(
        "Вопросы выбираются из журнала (только вопросы, без приветствий и офтопика; повторы схлопнуты). Лучшие "
        "чанки ретривера показаны **только как подсказки** — релевантными становятся лишь те, что отметил человек "
        "(иначе метрики поиска проверяли бы ретривер им же самим). Вопросы с отметкой «нет в базе знаний» попадают в "
        "отчёт о пробелах покрытия как подтверждённые пробелы. Каждая разметка — новая версия набора "
        "(`question_source = real`), его можно выбрать в Tier 1–3.",
        "Questions come from the log (questions only, no greetings or off-topic; repeats merged). The retriever's top "
        "chunks are shown **only as suggestions** — only the chunks a person checks become relevant (otherwise the "
        "retrieval metrics would grade the retriever by itself). Questions marked 'not in the knowledge base' appear in "
        "the coverage-gap report as confirmed gaps. Every label is a new version of the set (`question_source = real`), "
        "selectable in Tiers 1–3.",
    ),
)

eng = state.engine()
sources = list_sources(eng)
if not sources:
    empty_state("Журнала вопросов нет: загрузите демо или импортируйте журнал.", "No question log: load the demo or import a log.", demo=True)
    st.stop()

with st.sidebar:
    name = st.text_input(tr("Имя набора реальных вопросов", "Real-questions dataset name"), value="realq", key="rq_name").strip() or "realq"
    source = st.selectbox(tr("Журнал", "Log"), sources, key="rq_source")

with st.expander(tr("Выбрать вопросы для разметки", "Pick questions to label"), expanded=False):
    with st.form("rq_pick"):
        c1, c2, c3 = st.columns(3)
        strategy = c1.selectbox(tr("Как выбирать", "How to pick"), list(realq.STRATEGIES), format_func={k: tr(*v) for k, v in STRATEGY_LABELS.items()}.get)
        n = c2.number_input(tr("Сколько", "How many"), 1, 500, 10)
        seed = c3.number_input(tr("Зерно", "Seed"), 0, 10_000, 0)
        topic = st.number_input(tr("Номер темы (для «по теме»)", "Topic id (for 'by topic')"), -1, 1000, -1)
        go = st.form_submit_button(tr("Добавить в очередь", "Add to the queue"), type="primary")
    if go:
        with state.user_errors("Не удалось выбрать вопросы", "Could not pick questions"):
            topics = None
            if strategy in ("topic", "coverage_gap"):
                with st.spinner(tr("Считаю темы журнала…", "Computing the log's topics…")):
                    topics = realq.topic_assignments(eng, source=source)
                st.session_state["rq_topics"] = topics
            pooled = realq.pool(eng, name)
            cands = realq.candidates(eng, strategy=strategy, n=int(n), source=source, seed=int(seed), topics=topics,
                                     topic=int(topic) if topic >= 0 else None,
                                     exclude=pooled["question"].tolist() if len(pooled) else ())
            added = realq.add_to_pool(eng, name, cands)
            st.success(tr(f"Добавлено вопросов: {len(added)}.", f"Questions added: {len(added)}."))
    if isinstance(st.session_state.get("rq_topics"), pd.DataFrame):
        t = st.session_state["rq_topics"]
        st.dataframe(t.groupby(["topic", "topic_name"], dropna=False).agg(n=("log_id", "size"), gap_rank=("gap_rank", "first"))
                     .reset_index(), hide_index=True)

pool = realq.pool(eng, name)
if pool.empty:
    empty_state("Очередь пуста — выберите вопросы для разметки выше.", "The queue is empty — pick questions to label above.")
    st.stop()
c = st.columns(3)
for col, s in zip(c, ("pending", "labelled", "skipped"), strict=True):
    col.metric(tr(*STATE_LABELS[s]), int((pool["state"] == s).sum()))

tab_one, tab_all = st.tabs([tr("Разметка", "Label"), tr("Все вопросы", "All questions")])
with tab_all:
    table_with_download(pool, f"{name}_pool", key="rq_pool")

with tab_one:
    pending = pool[pool["state"] == "pending"]["item_key"].tolist()
    others = pool[pool["state"] != "pending"]["item_key"].tolist()
    choices = pending + others
    state_of = dict(zip(pool["item_key"], pool["state"], strict=True))
    labels = {k: f"{k} · {tr(*STATE_LABELS[state_of[k]])}" for k in choices}
    key = st.selectbox(tr("Вопрос", "Question"), choices, key="rq_key", format_func=labels.get)
    rev = A.reviews(eng, name).get(key)
    item = rev.item if rev and rev.item else {}
    log = item.get("log") or {}
    st.html(f"<h3>{html.escape(str(item.get('question') or ''))}</h3>")  # data: escaped, never Markdown
    st.caption(tr(f"Задан раз: {log.get('n_asked', 1)} · оценка: {log.get('score') or '—'} · {log.get('created_at') or ''}",
                  f"Asked {log.get('n_asked', 1)} time(s) · score: {log.get('score') or '—'} · {log.get('created_at') or ''}"))
    with st.expander(tr("Что ответил бот (выбор ретривера, не эталон)", "What the bot answered (the retriever's choice, not a label)")):
        st.text(log.get("answer") or tr("— бот не ответил —", "— no answer —"))
        st.caption(str(log.get("url") or ""))
    query = st.text_input(tr("Поиск чанков", "Search chunks"), value=str(item.get("question") or ""), key=f"rq_q_{key}")
    hits = search_chunks(eng, query, k=10) if query.strip() else pd.DataFrame(columns=["chunk_id", "url", "text"])
    sugg_ids = [int(s["chunk_id"]) for s in (rev.suggestions or [])] if rev else []
    ids = list(dict.fromkeys(sugg_ids + [int(i) for i in hits["chunk_id"]]))
    chosen: list[int] = []
    if ids:
        from voproshalych_eval.db.production import read_chunks

        kb = read_chunks(eng, ids=ids).set_index("id")
        table = pd.DataFrame([{
            "relevant": False,
            "chunk_id": i,
            "suggested": i in sugg_ids,
            "page": str(kb.loc[i, "url"]) if i in kb.index else "—",
            "text": (str(kb.loc[i, "text"])[:300] + "…") if i in kb.index else "—",
        } for i in ids])
        edited = st.data_editor(table, hide_index=True, key=f"rq_pick_{key}", disabled=["chunk_id", "suggested", "page", "text"],
                                column_config={"relevant": st.column_config.CheckboxColumn(tr("релевантен", "relevant")),
                                               "suggested": st.column_config.CheckboxColumn(tr("подсказка", "suggested"))})
        chosen = [int(r["chunk_id"]) for _, r in edited.iterrows() if r["relevant"]]
        st.caption(tr("Подсказки не отмечены: отметьте только то, что действительно отвечает на вопрос.",
                      "Suggestions are not checked: check only what really answers the question."))
    answer = st.text_area(tr("Эталонный ответ (необязательно)", "Reference answer (optional)"), key=f"rq_ans_{key}")
    b = st.columns(3)
    if b[0].button(tr("Сохранить разметку", "Save the label"), type="primary", key=f"rq_save_{key}", disabled=not chosen):
        with state.user_errors("Разметка не сохранена", "The label was not saved"):
            ds = realq.label(eng, name, key, relevant_chunk_ids=chosen, answer=answer)
            st.toast(tr(f"{ds.name} v{ds.version}", f"{ds.name} v{ds.version}"))
            st.rerun()
    if b[1].button(tr("Нет в базе знаний", "Not in the knowledge base"), key=f"rq_nokb_{key}"):
        with state.user_errors("Разметка не сохранена", "The label was not saved"):
            ds = realq.label(eng, name, key, not_in_kb=True, answer=answer)
            st.toast(tr(f"{ds.name} v{ds.version}: подтверждённый пробел", f"{ds.name} v{ds.version}: a confirmed gap"))
            st.rerun()
    with b[2].popover(tr("Пропустить", "Skip")):
        reason = st.text_input(tr("Причина", "Reason"), key=f"rq_reason_{key}")
        if st.button(tr("Пропустить вопрос", "Skip the question"), key=f"rq_skip_{key}", disabled=not reason.strip()):
            realq.skip(eng, name, key, reason)
            st.rerun()
