"""Real users: chunk utilization, topics and coverage gaps, domain analysis of the question log."""

from __future__ import annotations

from datetime import date

import pandas as pd
import streamlit as st

from voproshalych_eval import executor, runs
from voproshalych_eval.analytics import (
    LogFilters,
    QuestionLogImportError,
    build_plan,
    import_file,
    list_sources,
)
from voproshalych_eval.analytics.report import coverage_gap_html, coverage_gap_markdown
from voproshalych_eval.analytics.text_ru import CLASSIFIER_RULES
from voproshalych_eval.analytics.topics import GAP_FORMULA
from voproshalych_eval.plots import real_users as charts
from voproshalych_eval.ui import jobs, state
from voproshalych_eval.ui.common import empty_state, metric_cards, page_header, table_with_download
from voproshalych_eval.ui.i18n import lang, tr

RESULT_KEY, RUN_KEY = "ru_result", "ru_run_id"

page_header(
    tr("Реальные пользователи", "Real users"),
    tr(
        "Как студенты пользуются ботом: какие чанки базы знаний реально работают, о чём спрашивают и что "
        "дописать в базу.",
        "How students use the bot: which knowledge-base chunks actually work, what they ask, and what to add.",
    ),
    tr(
        "Журнал реальных вопросов — **аналитика, а не эталон**: страница, которую выбрал сам бот, не считается "
        "правильным ответом. Анализ идёт по **всему** журналу после фильтров: вопросы без сохранённого вектора "
        "досчитываются (с кэшем), n указано на каждой вкладке.\n\n"
        "- **Использование**: для каждого вопроса — текущий top-k поиска (pgvector). Покрытие = доля чанков, "
        "хоть раз попавших в top-k (0–1, больше — больше базы используется); @1 — то, что production отдаёт LLM.\n"
        f"- **Темы**: KMeans по эмбеддингам, k по силуэту; названия — c-TF-IDF по нормализованным словам. "
        f"Оценка пробела: `{GAP_FORMULA}` — больше значит «писать в первую очередь».\n"
        "- **Домен**: объём, пользователи, длины, оценки, слова и сленг, повторы, категории (правила), сессии.",
        "The real-user log is **analytics, not ground truth**: the page the bot chose is not a correct answer. "
        "Analyses use the **whole** filtered log: questions without a stored vector are embedded (cached); every "
        "tab states its n.\n\n"
        "- **Utilization**: the retriever's current top-k (pgvector) for every question. Coverage = share of "
        "chunks retrieved at least once (0–1, higher = more of the KB used); @1 is what production feeds the LLM.\n"
        f"- **Topics**: KMeans over embeddings, k by silhouette; names by c-TF-IDF over normalised words. "
        f"Gap score: `{GAP_FORMULA}` — higher means write it first.\n"
        "- **Domain**: volume, users, lengths, scores, terms and slang, repeats, categories (rules), sessions.",
    ),
)

engine = state.engine()


def choice(label: str, options: dict[str, str], key: str, *, index: int = 0) -> str:
    """A horizontal radio over translated labels; returns the option's value."""
    labels = list(options.values())
    picked = st.radio(label, labels, index=index, horizontal=True, key=f"{key}_{lang()}")
    return list(options)[labels.index(picked)]


def chart(fig: object, df: pd.DataFrame, name: str) -> None:
    """A plotly chart followed by the CSV of its data."""
    st.plotly_chart(fig, key=f"fig_{name}")
    st.download_button("⬇ CSV", df.to_csv(index=False).encode("utf-8"), file_name=f"{name}.csv", mime="text/csv",
                       key=f"dl_{name}")


def n_caption(res: object, what_ru: str = "вопросов", what_en: str = "questions") -> None:
    emb = res.embeddings  # type: ignore[attr-defined]
    extra = (
        tr(f" · сохранённых векторов {emb.n_stored}, досчитано {emb.n_embedded} ({emb.model})",
           f" · {emb.n_stored} stored vectors, {emb.n_embedded} embedded ({emb.model})") if emb else ""
    )
    n_empty = getattr(res, "n_empty_questions", 0)
    if n_empty:
        extra += tr(f" · без текста вопроса {n_empty} (в сессиях и пользователях, не в текстовом анализе)",
                    f" · {n_empty} without question text (in sessions and users, not in text analyses)")
    st.caption(f"n = {res.n_used} {tr(what_ru, what_en)}" + extra)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- sidebar: source, filters, import
with st.sidebar:
    st.subheader(tr("Журнал вопросов", "Question log"))
    sources: list[str] = []
    with state.user_errors("Не удалось прочитать список источников", "Could not list log sources"):
        sources = list_sources(engine)
    source = st.selectbox(tr("Источник", "Source"), sources, key="ru_source") if sources else None
    period = st.date_input(tr("Период", "Period"), value=(), key="ru_period")
    answered_opt = choice(tr("Ответ", "Answer"), {"all": tr("все", "all"), "yes": tr("есть", "answered"),
                                                 "no": tr("нет", "unanswered")}, "ru_answered")
    score_labels = {"5": "👍 5", "1": "👎 1", "unrated": tr("без оценки", "unrated")}
    picked_scores = st.multiselect(tr("Оценка", "Score"), list(score_labels.values()), key=f"ru_scores_{lang()}")
    score_opts = [k for k, v in score_labels.items() if v in picked_scores]
    with st.expander(tr("Параметры", "Parameters")):
        top_k = st.number_input("top-k", 1, 50, 5, key="ru_topk")
        k_topics = st.number_input(tr("Число тем (0 = по силуэту)", "Topics (0 = by silhouette)"), 0, 100, 0,
                                   key="ru_ktopics")
        pause = st.number_input(tr("Пауза сессии, мин", "Session pause, min"), 1, 1440, 30, key="ru_pause")
    run_clicked = st.button(tr("Запустить анализ", "Run analysis"), type="primary", key="ru_run")

    with st.expander(tr("Импорт журнала (CSV/JSONL/JSON)", "Import a log (CSV/JSONL/JSON)")):
        upload = st.file_uploader(tr("Файл выгрузки question_answer", "question_answer export file"),
                                  type=["csv", "jsonl", "json"], key="ru_upload")
        imp_source = st.text_input(tr("Имя источника", "Source name"), key="ru_imp_source")
        skip_bad = st.checkbox(tr("Пропускать ошибочные строки", "Skip bad rows"), key="ru_skip")
        if st.button(tr("Импортировать", "Import"), key="ru_import") and upload is not None:
            try:
                rep = import_file(engine, upload.name, source=imp_source or None, skip_bad_rows=skip_bad,
                                  data=upload.getvalue())
                st.success(tr(f"Импортировано {rep.n_imported} из {rep.n_rows} строк в «{rep.source}»",
                              f"Imported {rep.n_imported} of {rep.n_rows} rows into '{rep.source}'"))
                if rep.n_empty_questions:
                    st.info(tr(f"Строк без текста вопроса: {rep.n_empty_questions} — учтены как события (сессии, "
                               "пользователи), в текстовый анализ не входят.",
                               f"Rows without question text: {rep.n_empty_questions} — counted as events (sessions, "
                               "users), left out of text analyses."))
                if rep.errors:
                    st.warning(tr(f"Пропущено строк: {rep.n_skipped}", f"Rows skipped: {rep.n_skipped}"))
                    st.dataframe(pd.DataFrame(rep.errors), hide_index=True)
            except QuestionLogImportError as exc:
                st.error(tr(f"Файл не импортирован, ничего не записано: {exc}",
                            f"Nothing imported, nothing written: {exc}"))

if not sources:
    empty_state("Журнала вопросов нет — загрузите демо-данные или импортируйте файл (слева).",
                "No question log yet — load the demo data or import a file (sidebar).")
    st.stop()

if run_clicked:
    start, end = (period[0], period[1]) if isinstance(period, (tuple, list)) and len(period) == 2 else (None, None)
    scores = tuple(None if s == "unrated" else int(s) for s in score_opts) or None
    filters = LogFilters(start=start if isinstance(start, date) else None, end=end if isinstance(end, date) else None,
                         answered={"all": None, "yes": True, "no": False}[answered_opt], scores=scores)
    params = {"source": source, "filters": filters.describe(), "top_k": int(top_k), "k_topics": int(k_topics) or None,
              "pause_minutes": float(pause), "lang": lang()}
    if jobs.start(lambda: build_plan(engine, params), RUN_KEY) is not None:
        st.session_state.pop(RESULT_KEY, None)

# the analyses run as a background job of the engine (each step an item of the run); show it when done
jobs.job_panel(RUN_KEY)
job = executor.get_job(st.session_state.get(RUN_KEY))
if job is not None and not job.alive and RESULT_KEY not in st.session_state:
    finished = runs.get_run(engine, job.run_id)
    if job.plan.outputs.get("result") is not None and finished is not None and finished.status == "done":
        st.session_state[RESULT_KEY] = job.plan.outputs["result"]
    elif finished is not None:
        st.error(tr("Анализ не выполнен: ", "Analysis failed: ") + str(finished.error or job.error or finished.status))

res = st.session_state.get(RESULT_KEY)
if res is None:
    empty_state("Выберите фильтры слева и нажмите «Запустить анализ».",
                "Choose the filters in the sidebar and press “Run analysis”.")
    st.stop()

st.caption(tr(f"Запуск #{res.run_id} · источник {res.source}", f"Run #{res.run_id} · source {res.source}"))
tab_u, tab_t, tab_d = st.tabs([tr("Использование чанков", "Chunk utilization"),
                               tr("Темы и пробелы", "Topics & coverage gaps"), tr("Домен", "Domain")])

# ---------------------------------------------------------------- utilization
with tab_u:
    u = res.utilization
    n_caption(res)
    if u is None:
        empty_state("Нет результата.", "No result.")
    else:
        metric_cards({k: u.metrics[k] for k in ("chunk_coverage", "chunk_coverage@1", "page_coverage",
                                                 "page_coverage@1", "n_never_retrieved", "top10pct_chunk_share",
                                                 "mean_top1_similarity", "n_chunks")})
        chart(charts.long_tail(u.per_chunk, title=tr("Сколько раз чанк попадал в выдачу (длинный хвост)",
                                                     "How often each chunk is retrieved (long tail)"),
                               x_title=tr("чанки по убыванию", "chunks, descending"), y_title=tr("вопросов", "questions")),
              u.per_chunk, "chunk_retrievals")
        chart(charts.pages_bar(u.per_page, title=tr("Страницы", "Pages")), u.per_page, "page_retrievals")
        st.subheader(tr(f"Ни разу не найденные чанки ({len(u.never_retrieved)})",
                        f"Never-retrieved chunks ({len(u.never_retrieved)})"))
        st.caption(tr("Кандидаты на удаление или переписывание.", "Candidates for removal or rewriting."))
        table_with_download(u.never_retrieved, "never_retrieved_chunks")
        st.subheader(tr("Чанки, собирающие 👎 (top-1)", "Chunks attracting 👎 (top-1)"))
        table_with_download(u.thumbs_down_chunks, "thumbs_down_chunks")

# ---------------------------------------------------------------- topics
with tab_t:
    t = res.topics
    n_caption(res)
    if t is None:
        empty_state("Нет результата.", "No result.")
    else:
        metric_cards({"n_topics": t.metrics["n_topics"], "best_silhouette": t.metrics["best_silhouette"],
                      "n_clustered": t.metrics["n_clustered"], "answered_rate": t.metrics["answered_rate"]})
        st.subheader(tr("Пробелы в покрытии — что дописать", "Coverage gaps — what to write next"))
        st.caption(f"`{GAP_FORMULA}`")
        c1, c2 = st.columns(2)
        c1.download_button(tr("⬇ Отчёт (Markdown)", "⬇ Report (Markdown)"), coverage_gap_markdown(res).encode("utf-8"),
                           file_name="coverage_gaps.md", mime="text/markdown", key="ru_rep_md")
        c2.download_button(tr("⬇ Отчёт (HTML)", "⬇ Report (HTML)"), coverage_gap_html(res).encode("utf-8"),
                           file_name="coverage_gaps.html", mime="text/html", key="ru_rep_html")
        gaps = t.gaps.copy()
        gaps["examples"] = gaps["examples"].map(lambda xs: " | ".join(xs))
        chart(charts.gaps_bar(t.gaps, title=tr("Оценка пробела", "Gap score"), x_title="gap"), gaps, "coverage_gaps")
        table_with_download(gaps, "coverage_gaps_table")
        topics = t.topics.copy()
        topics["examples"] = topics["examples"].map(lambda xs: " | ".join(xs))
        topics["terms"] = topics["terms"].map(lambda xs: ", ".join(xs))
        chart(charts.topics_scatter(t.topics, title=tr("Темы: отвеченность и удалённость от базы",
                                                       "Topics: answered share vs distance to the KB"),
                                    x_title=tr("доля отвеченных", "answered share"),
                                    y_title=tr("расстояние до ближайшего чанка", "distance to nearest chunk")),
              topics, "topics")
        names = dict(zip(t.topics["topic"], t.topics["name"], strict=True))
        chart(charts.topic_trend(t.trend, names, title=tr("Темы по месяцам", "Topics by month")), t.trend, "topic_trend")
        st.subheader(tr("Все темы", "All topics"))
        table_with_download(topics, "topics_table")
        if len(t.k_scores):
            chart(charts.bar(t.k_scores, "k", "silhouette", title=tr("Выбор k: силуэт", "Choosing k: silhouette")),
                  t.k_scores, "k_silhouette")
        st.subheader(tr("Карта тем", "Topic map"))
        if st.button(tr("Построить карту (UMAP)", "Build the map (UMAP)"), key="ru_map"):
            with state.user_errors("Карта не построена", "Map failed"):
                from voproshalych_eval.tiers.projection import project

                ids = [f"{res.source}:{i}" for i in res.log["id"]]
                proj = project(engine, res.embeddings.vectors, ids, model=res.embeddings.model, limit=5000)
                rows = proj.rows
                labels = [names.get(int(x), str(x))[:40] for x in t.labels[rows]]
                hover = res.log["question"].iloc[rows].tolist()
                coords_df = pd.DataFrame({"x": proj.coords[:, 0], "y": proj.coords[:, 1], "topic": labels,
                                          "question": hover})
                chart(charts.topic_map(proj.coords, labels, hover, title=tr("Вопросы, цвет — тема",
                                                                             "Questions coloured by topic")),
                      coords_df, "topic_map")
        st.page_link("pages/tier0_embeddings.py", label=tr("Открыть пространство эмбеддингов (Tier 0)",
                                                           "Open the embedding-space explorer (Tier 0)"))

# ---------------------------------------------------------------- domain
with tab_d:
    d = res.domain
    n_caption(res)
    if d is None:
        empty_state("Нет результата.", "No result.")
    else:
        m = d.metrics
        metric_cards({k: m[k] for k in ("n_questions_used", "unique_users", "questions_per_user_mean", "answered_rate",
                                        "n_sessions", "turns_per_session_mean", "slang_share", "exact_repeat_share")})
        if m.get("n_without_time"):
            st.caption(tr(f"Без времени: {m['n_without_time']} строк (в графиках по времени не показаны)",
                          f"No timestamp: {m['n_without_time']} rows (left out of time charts)"))
        freq = choice(tr("Шаг", "Step"), {"volume_day": tr("день", "day"), "volume_week": tr("неделя", "week"),
                                          "volume_month": tr("месяц", "month")}, "ru_freq", index=2)
        T = d.tables
        chart(charts.volume(T[freq], title=tr("Вопросы и доля отвеченных", "Questions and answered rate"),
                            rate_name=tr("доля отвеченных", "answered rate"), n_name=tr("вопросов", "questions")),
              T[freq], freq)
        c1, c2 = st.columns(2)
        with c1:
            chart(charts.bar(T["by_hour"], "hour", "questions", title=tr("По часам", "By hour")), T["by_hour"], "by_hour")
            chart(charts.bar(T["questions_per_user"], "questions", "users",
                             title=tr("Вопросов на пользователя", "Questions per user")),
                  T["questions_per_user"], "questions_per_user")
            chart(charts.bar(T["score_distribution"], "score", "questions", title=tr("Оценки", "Scores")),
                  T["score_distribution"], "score_distribution")
        with c2:
            chart(charts.bar(T["by_weekday"], "name", "questions", title=tr("По дням недели", "By weekday")),
                  T["by_weekday"], "by_weekday")
            chart(charts.length_hist(T["lengths"], title=tr("Длина вопроса", "Question length"),
                                     x_title=tr("символов", "characters")), T["lengths"], "question_lengths")
            chart(charts.bar(T["turns_per_session"], "turns", "sessions", title=tr("Реплик за сессию", "Turns per session")),
                  T["turns_per_session"], "turns_per_session")
        st.subheader(tr("Категории сообщений (правила)", "Message categories (rule-based)"))
        st.caption(tr("Прозрачный классификатор на правилах, не LLM.", "A transparent rule-based classifier, not an LLM."))
        chart(charts.bar(T["categories"], "category", "questions", title=""), T["categories"], "categories")
        with st.expander(tr("Правила классификатора", "Classifier rules")):
            st.dataframe(pd.DataFrame([{"category": r["category"], "rule": r["rule_ru" if lang() == "ru" else "rule_en"]}
                                       for r in CLASSIFIER_RULES]), hide_index=True)
        subset = choice(tr("Слова", "Terms"), {"all": tr("все", "all"), "answered": tr("отвеченные", "answered"),
                                               "unanswered": tr("без ответа", "unanswered")}, "ru_terms")
        c1, c2 = st.columns(2)
        with c1:
            tt = T["top_terms"][T["top_terms"]["subset"] == subset].head(25)
            chart(charts.bar(tt, "term", "questions", title=tr("Частые слова", "Top terms"), horizontal=True), tt,
                  f"top_terms_{subset}")
        with c2:
            tb = T["top_bigrams"][T["top_bigrams"]["subset"] == subset].head(25)
            chart(charts.bar(tb, "term", "questions", title=tr("Частые биграммы", "Top bigrams"), horizontal=True), tb,
                  f"top_bigrams_{subset}")
        st.subheader(tr("Сленг и сокращения", "Slang and abbreviations"))
        chart(charts.bar(T["slang_usage"].head(25), "slang", "questions", title="", horizontal=True),
              T["slang_usage"], "slang_usage")
        st.subheader(tr("Повторяющиеся вопросы", "Repeated questions"))
        c1, c2 = st.columns(2)
        with c1:
            st.caption(tr("Точные повторы (нормализованный текст)", "Exact repeats (normalised text)"))
            table_with_download(T["exact_repeats"].head(200), "exact_repeats")
        with c2:
            st.caption(tr(f"Кластеры почти-дубликатов (косинус ≥ {d.params['near_threshold']})",
                          f"Near-duplicate clusters (cosine ≥ {d.params['near_threshold']})"))
            table_with_download(T["near_duplicate_clusters"], "near_duplicate_clusters")
