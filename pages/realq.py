"""Real questions — pick questions from the question log and label their relevant chunks (or "not in the knowledge
base") into a golden set that Tiers 1–3 can use."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.analytics.question_log import list_sources
from voproshalych_eval.datasets import annotations as A
from voproshalych_eval.db.production import read_chunks
from voproshalych_eval.engine import executor, runs
from voproshalych_eval.generation import realq
from voproshalych_eval.generation.picker import search_chunks
from voproshalych_eval.ui import auth, jobs, state, tables, views
from voproshalych_eval.ui.i18n import tr
from voproshalych_eval.ui.widgets import empty_state, page_header, table_with_download

STRATEGY_LABELS = {
    "random_stratified": ("случайная выборка по слоям", "random stratified sample"),
    "unanswered": ("без ответа бота", "unanswered by the bot"),
    "thumbs_down": ("с оценкой «палец вниз»", "thumbs down"),
    "topic": ("по теме", "by topic"),
    "coverage_gap": ("из пробелов покрытия", "from coverage gaps"),
}
STATE_LABELS = {"pending": ("ждёт разметки", "to label"), "labelled": ("размечен", "labelled"), "skipped": ("пропущен", "skipped")}
TOPICS_RUN = "rq_topics_run"  # the topic analysis started here (a recorded real_users run)


def init_page_state() -> None:
    """The page header."""
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


def _render_page() -> None:
    eng = state.engine()
    sources = list_sources(eng)
    if not sources:
        empty_state("Журнала вопросов нет: загрузите демо или импортируйте журнал.", "No question log: load the demo or import a log.", demo=True)
        st.stop()
    with st.sidebar:
        name = st.text_input(tr("Имя набора реальных вопросов", "Real-questions dataset name"), value="realq", key="rq_name").strip() or "realq"
        source = st.selectbox(tr("Журнал", "Log"), sources, key="rq_source")
    with st.expander(tr("Выбрать вопросы для разметки", "Pick questions to label"), expanded=False):
        _render_picker(eng, name, source)
    pool = realq.pool(eng, name)
    if pool.empty:
        empty_state("Очередь пуста — выберите вопросы для разметки выше.", "The queue is empty — pick questions to label above.")
        st.stop()
    c = st.columns(3)
    for col, s in zip(c, ("pending", "labelled", "skipped"), strict=True):
        col.metric(tr(*STATE_LABELS[s]), int((pool["state"] == s).sum()))

    view = views.tabs("rq_view", {"label": ("Разметка", "Label"), "all": ("Все вопросы", "All questions")})
    with view["all"]:
        table_with_download(pool, f"{name}_pool", key="rq_pool")
    with view["label"]:
        _render_label(eng, name, pool)


def _topics_run(source: str) -> runs.Run | None:
    """The run whose topics the picker uses: the one started here, else the newest finished topic analysis of the log."""
    eng = state.engine()
    mine = runs.get_run(eng, int(st.session_state[TOPICS_RUN])) if st.session_state.get(TOPICS_RUN) else None
    if mine is not None and mine.params.get("source") == source:
        return mine
    return next((r for r in runs.list_runs(eng, tier="real_users", status=("done", "done_with_failures"), limit=20)
                 if r.params.get("source") == source and "topics" in (r.params.get("analyses") or ())), None)


def _topics(run: runs.Run) -> pd.DataFrame | None:
    """The topic of every log question, read once from the run's stored ``topics`` step."""
    cached = st.session_state.get("rq_topics")
    eng = state.engine()
    if isinstance(cached, tuple) and cached[0] == run.id:
        return cached[1]
    try:
        topics = realq.topic_assignments(runs.item_records(eng, run.id))
    except LookupError as exc:
        st.caption(tr(f"Темы запуска #{run.id} недоступны: ", f"Topics of run #{run.id} unavailable: ") + str(exc))
        return None
    st.session_state["rq_topics"] = (run.id, topics)
    return topics


def _start_topics(source: str) -> None:
    eng = state.engine()
    if jobs.start(lambda: realq.topics_plan(eng, source=source), TOPICS_RUN) is not None:
        st.info(tr("Темы журнала считаются в фоне (запуск записан, его можно отменить и продолжить). Когда он "
                   "закончится, нажмите «Добавить в очередь» ещё раз.",
                   "The log's topics are being computed in the background (a recorded run: cancel or resume it). "
                   "When it finishes, press 'Add to the queue' again."))


def _render_pick_form() -> dict:
    with st.form("rq_pick", enter_to_submit=False):
        c1, c2, c3 = st.columns(3)
        strategy = c1.selectbox(tr("Как выбирать", "How to pick"), list(realq.STRATEGIES), format_func={k: tr(*v) for k, v in STRATEGY_LABELS.items()}.get)
        n = c2.number_input(tr("Сколько", "How many"), 1, 500, 10)
        seed = c3.number_input(tr("Зерно случайности", "Random state"), 0, 10_000, 0)
        topic = st.number_input(tr("Номер темы (для «по теме»)", "Topic id (for 'by topic')"), -1, 1000, -1)
        go = auth.submit("run", st, tr("Добавить в очередь", "Add to the queue"), type="primary")
    return {"strategy": strategy, "n": n, "seed": seed, "topic": topic, "go": go}


def _render_picker(eng: Any, name: str, source: str) -> None:
    f = _render_pick_form()
    topics_run = _topics_run(source)
    topics_state = executor.run_state(eng, topics_run.id) if topics_run is not None else None
    topics = _topics(topics_run) if topics_run is not None and topics_state in ("done", "done_with_failures") else None
    if f["go"]:
        _pick(eng, name, source, f, topics, topics_state)
    jobs.job_panel(TOPICS_RUN)
    if topics_run is not None and topics_state in ("interrupted", "cancelled", "failed"):
        st.warning(tr(f"Расчёт тем (запуск #{topics_run.id}) {jobs.state_label(topics_state)}.",
                      f"The topic analysis (run #{topics_run.id}) is {jobs.state_label(topics_state)}."))
        jobs.resume_button(topics_run.id, TOPICS_RUN)
    if topics is not None and topics_run is not None:
        _render_topics(topics, topics_run, source)


def _pick(eng: Any, name: str, source: str, f: dict, topics: pd.DataFrame | None, topics_state: str | None) -> None:
    strategy, n, seed, topic = f["strategy"], f["n"], f["seed"], f["topic"]
    with state.user_errors("Не удалось выбрать вопросы", "Could not pick questions"):
        if strategy in realq.TOPIC_STRATEGIES and topics is None:
            if topics_state != "running":
                _start_topics(source)
        else:
            pooled = realq.pool(eng, name)
            cands = realq.candidates(eng, strategy=strategy, n=int(n), source=source, seed=int(seed), topics=topics,
                                     topic=int(topic) if topic >= 0 else None,
                                     exclude=pooled["question"].tolist() if len(pooled) else ())
            added = realq.add_to_pool(eng, name, cands)
            st.success(tr(f"Добавлено вопросов: {len(added)}.", f"Questions added: {len(added)}."))


def _render_topics(topics: pd.DataFrame, topics_run: runs.Run, source: str) -> None:
    st.caption(tr(f"Темы журнала из запуска #{topics_run.id}", f"The log's topics from run #{topics_run.id}"))
    tables.show(topics.groupby(["topic", "topic_name"], dropna=False)
                .agg(n=("log_id", "size"), gap_rank=("gap_rank", "first")).reset_index(),
                f"realq_topics_run{topics_run.id}", key="rq_topics_table",
                labels=tables.TOPIC_COLUMN_LABELS)
    if st.button(tr("Пересчитать темы", "Recompute the topics"), key="rq_topics_again"):
        with state.user_errors("Не удалось запустить", "Could not start the run"):
            _start_topics(source)


def _pick_question(pool: pd.DataFrame) -> str:
    pending = pool[pool["state"] == "pending"]["item_key"].tolist()
    others = pool[pool["state"] != "pending"]["item_key"].tolist()
    choices = pending + others
    state_of = dict(zip(pool["item_key"], pool["state"], strict=True))
    labels = {k: f"{k} · {tr(*STATE_LABELS[state_of[k]])}" for k in choices}
    key = st.selectbox(tr("Вопрос", "Question"), choices, key="rq_key", format_func=labels.get)
    return key


def _render_question(item: dict, log: dict) -> None:
    st.html(f"<h3>{html.escape(str(item.get('question') or ''))}</h3>")  # data: escaped, never Markdown
    st.caption(tr(f"Задан раз: {log.get('n_asked', 1)} · оценка: {log.get('score') or '—'} · {log.get('created_at') or ''}",
                  f"Asked {log.get('n_asked', 1)} time(s) · score: {log.get('score') or '—'} · {log.get('created_at') or ''}"))
    with st.expander(tr("Что ответил бот (выбор ретривера, не эталон)", "What the bot answered (the retriever's choice, not a label)")):
        st.text(log.get("answer") or tr("— бот не ответил —", "— no answer —"))
        st.caption(str(log.get("url") or ""))


def _render_chunk_choice(eng: Any, key: str, item: dict, rev: Any) -> list[int]:
    """Chunks found by search, the retriever's suggestions unchecked; returns the checked ones."""
    query = st.text_input(tr("Поиск чанков", "Search chunks"), value=str(item.get("question") or ""), key=f"rq_q_{key}")
    hits = search_chunks(eng, query, k=10) if query.strip() else pd.DataFrame(columns=["chunk_id", "url", "text"])
    sugg_ids = [int(s["chunk_id"]) for s in (rev.suggestions or [])] if rev else []
    ids = list(dict.fromkeys(sugg_ids + [int(i) for i in hits["chunk_id"]]))
    chosen: list[int] = []
    if not ids:
        return chosen
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
    return chosen


def _render_label(eng: Any, name: str, pool: pd.DataFrame) -> None:
    key = _pick_question(pool)
    rev = A.reviews(eng, name).get(key)
    item = rev.item if rev and rev.item else {}
    log = item.get("log") or {}
    _render_question(item, log)
    chosen = _render_chunk_choice(eng, key, item, rev)
    answer = st.text_area(tr("Эталонный ответ (необязательно)", "Reference answer (optional)"), key=f"rq_ans_{key}")
    b = st.columns(3)
    if auth.button("label", b[0], tr("Сохранить разметку", "Save the label"), type="primary", key=f"rq_save_{key}",
                   disabled=not chosen):
        with state.user_errors("Разметка не сохранена", "The label was not saved"), \
                auth.audited("label", f"{name}/{key}", {"op": "relevant_chunks"}):
            ds = realq.label(eng, name, key, relevant_chunk_ids=chosen, answer=answer)
            st.toast(tr(f"{ds.name} v{ds.version}", f"{ds.name} v{ds.version}"))
            st.rerun()
    if auth.button("label", b[1], tr("Нет в базе знаний", "Not in the knowledge base"), key=f"rq_nokb_{key}"):
        with state.user_errors("Разметка не сохранена", "The label was not saved"), \
                auth.audited("label", f"{name}/{key}", {"op": "not_in_kb"}):
            ds = realq.label(eng, name, key, not_in_kb=True, answer=answer)
            st.toast(tr(f"{ds.name} v{ds.version}: подтверждённый пробел", f"{ds.name} v{ds.version}: a confirmed gap"))
            st.rerun()
    with b[2].popover(tr("Пропустить", "Skip")):
        reason = st.text_input(tr("Причина", "Reason"), key=f"rq_reason_{key}")
        if auth.button("label", st, tr("Пропустить вопрос", "Skip the question"), key=f"rq_skip_{key}",
                       disabled=not reason.strip()):
            with auth.audited("label", f"{name}/{key}", {"op": "skip"}):
                realq.skip(eng, name, key, reason)
            st.rerun()


init_page_state()
_render_page()
