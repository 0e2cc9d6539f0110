"""Real users: chunk utilization, topics and coverage gaps, domain analysis of the question log."""

from __future__ import annotations

import json
from datetime import date

import numpy as np
import pandas as pd
import streamlit as st

from voproshalych_eval.analytics import (
    PRODUCTION_SOURCE,
    LogFilters,
    QuestionLogImportError,
    build_plan,
    import_file,
    list_sources,
)
from voproshalych_eval.analytics.answer_classifier import ClassifierSettings
from voproshalych_eval.analytics.answer_labels import (
    confirmed_labels,
    import_labels,
    labels_frame,
    load_labels,
    save_labels,
)
from voproshalych_eval.analytics.answers import CLASS_NAMES, OVERRIDE_CLASSES, AnswerRules, classify_answers
from voproshalych_eval.analytics.pipeline import RealUsersResult, load_result, rebuild_result, save_result
from voproshalych_eval.analytics.report import coverage_gap_html, coverage_gap_markdown
from voproshalych_eval.analytics.text_ru import CLASSIFIER_RULES
from voproshalych_eval.analytics.topic_trends import (
    MONTHS_EN,
    MONTHS_RU,
    STATUS_NAMES,
    summary_lines,
    trends_of_period,
)
from voproshalych_eval.analytics.topics import GAP_FORMULA, format_example, month_of, silhouette_verdict
from voproshalych_eval.engine import executor, runs
from voproshalych_eval.plots import real_users as charts
from voproshalych_eval.ui import auth, jobs, map_view, run_view, state, tables, uploads, views
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt_count, lang, tr
from voproshalych_eval.ui.widgets import (
    csv_download,
    empty_state,
    metric_cards,
    page_header,
    table_with_download,
)

RESULT_KEY, RUN_KEY = "ru_result", "ru_run_id"
RULES_KEY = "ru_answer_rules"
COLUMNS = tables.TOPIC_COLUMN_LABELS

def init_page_state() -> None:
    """The page's header and its "how to read this"."""
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
            "хоть раз попавших в top-k (0–1, больше — больше базы используется); @1 — то, что бот отдаёт LLM.\n"
            "- **Ответы бота**: непустой ответ — ещё не ответ. `Ответ не найден.`, `Что-то в вашем вопросе меня "
            "смущает…`, `Извините, но в предоставленном фрагменте…` и шаблоны приветствий считаются отказами; "
            "**фактическая доля отвеченных** = только настоящие ответы. Классы решает модель, обученная на вашей "
            "разметке частых ответов (вкладка «Ответы бота»), с точностью и интервалом по кросс-валидации.\n"
            f"- **Темы**: KMeans по эмбеддингам, k по силуэту; названия — ключевые слова по c-TF-IDF + MMR (по "
            f"леммам pymorphy3 без стоп-слов и слов-паразитов); примеры — ближайшие к центру темы без почти-дубликатов "
            f"(×N — сколько вопросов темы их повторяют). Оценка пробела: `{GAP_FORMULA}` — больше значит «писать в "
            f"первую очередь».\n"
            "- **Домен**: объём, пользователи, длины, оценки, слова и сленг, повторы, категории (правила), сессии.",
            "The real-user log is **analytics, not ground truth**: the page the bot chose is not a correct answer. "
            "Analyses use the **whole** filtered log: questions without a stored vector are embedded (cached); every "
            "tab states its n.\n\n"
            "- **Utilization**: the retriever's current top-k (pgvector) for every question. Coverage = share of "
            "chunks retrieved at least once (0–1, higher = more of the KB used); @1 is what production feeds the LLM.\n"
            "- **Bot answers**: a non-empty answer is not yet an answer. `Ответ не найден.`, `Что-то в вашем вопросе "
            "меня смущает…`, `Извините, но в предоставленном фрагменте…` and greeting templates count as declines; "
            "the **effective answered rate** counts real answers only. A model trained on your labels of the frequent "
            "answers (the Bot answers tab) decides the classes, with its cross-validated accuracy and interval.\n"
            f"- **Topics**: KMeans over embeddings, k by silhouette; names are BERTopic keywords (c-TF-IDF + MMR over "
            f"pymorphy3 lemmas without stop words and filler); examples are the questions closest to the topic centre "
            f"with near-duplicates folded (×N = how many questions of the topic repeat them). Gap score: "
            f"`{GAP_FORMULA}` — higher means write it first.\n"
            "- **Domain**: volume, users, lengths, scores, terms and slang, repeats, categories (rules), sessions.",
        ),
    )

engine = state.engine()


def show_table(df: pd.DataFrame, name: str, *, key: str | None = None) -> None:
    """A table of the page with its columns' headers in the UI language (:data:`COLUMNS`) and its downloads."""
    table_with_download(df, name, key=key, labels=COLUMNS)


def choice(label: str, options: dict[str, str], key: str, *, index: int = 0) -> str:
    """A horizontal radio over translated labels; returns the option's value."""
    labels = list(options.values())
    picked = st.radio(label, labels, index=index, horizontal=True, key=f"{key}_{lang()}")
    return list(options)[labels.index(picked)]


def chart(fig: object, df: pd.DataFrame, name: str) -> None:
    """A plotly chart followed by the CSV of its data."""
    plotly_chart(fig, key=f"fig_{name}")
    st.download_button("⬇ CSV", csv_download(df), file_name=f"{name}.csv", mime="text/csv",
                       key=f"dl_{name}", on_click="ignore")


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


# ---------------------------------------------------------------- run form: source, filters, import
# the run form sits at the top of the main area: Run is visible without scrolling
def _render_form() -> list[str]:
    """The run form (source, filters, parameters, Run) and the log import; starts an analysis when Run is
    pressed. Returns the log sources."""
    with st.container(border=True):
        st.markdown(f"**{tr('Новый анализ журнала вопросов', 'New analysis of the question log')}**")
        sources: list[str] = []
        with state.user_errors("Не удалось прочитать список источников", "Could not list log sources"):
            sources = list_sources(engine)
        f1, f2, f3, f4 = st.columns([2, 2, 3, 2])
        source = f1.selectbox(tr("Источник", "Source"), sources, key="ru_source") if sources else None
        period = f2.date_input(tr("Период", "Period"), value=(), key="ru_period")
        with f3:
            answered_opt = choice(tr("Ответ", "Answer"), {"all": tr("все", "all"), "yes": tr("есть", "answered"),
                                                         "no": tr("нет", "unanswered")}, "ru_answered")
        score_labels = {"5": "👍 5", "1": "👎 1", "unrated": tr("без оценки", "unrated")}
        picked_scores = f4.multiselect(tr("Оценка", "Score"), list(score_labels.values()), key=f"ru_scores_{lang()}",
                                       placeholder=tr("Все", "All"))
        score_opts = [k for k, v in score_labels.items() if v in picked_scores]
        g1, g2 = st.columns([3, 2])
        with g1.expander(tr("Параметры", "Parameters")):
            p1, p2, p3 = st.columns(3)
            top_k = p1.number_input("top-k", 1, 50, 5, key="ru_topk")
            k_topics = p2.number_input(tr("Число тем (0 = по силуэту)", "Topics (0 = by silhouette)"), 0, 100, 0,
                                       key="ru_ktopics")
            pause = p3.number_input(tr("Пауза сессии, мин", "Session pause, min"), 1, 1440, 30, key="ru_pause")
        run_clicked = auth.button("run", g2, tr("Запустить анализ", "Run analysis"), type="primary", key="ru_run",
                                icon=":material/play_arrow:", width="stretch", disabled=not sources)
        link_kb = False
        if source is not None and source != PRODUCTION_SOURCE:
            link_kb = st.checkbox(
                tr("Журнал относится к загруженной базе знаний (связать со снимком базы)",
                   "This log belongs to the loaded knowledge base (link it to the KB's snapshot)"), key="ru_link_kb",
                help=tr("Без связи импортированный журнал анализируется сам по себе: домен и темы работают, использование "
                        "чанков и расстояния до базы — нет.",
                        "Unlinked, an imported log is analysed on its own: domain and topics work; chunk utilization and "
                        "distances to the KB need the link."))

        with st.expander(tr("Импорт журнала (CSV/JSONL/JSON)", "Import a log (CSV/JSONL/JSON)"), expanded=not sources):
            upload = st.file_uploader(tr("Файл выгрузки question_answer", "question_answer export file"),
                                      type=["csv", "jsonl", "json"], key="ru_upload")
            imp_source = st.text_input(tr("Имя источника", "Source name"), key="ru_imp_source")
            skip_bad = st.checkbox(tr("Пропускать ошибочные строки", "Skip bad rows"), key="ru_skip")
            if auth.button("dataset", st, tr("Импортировать", "Import"), key="ru_import") and upload is not None:
                auth.require("dataset", "uploaded log")
                try:
                    up_name, up_data = uploads.read(upload)
                    rep = import_file(engine, up_name, source=imp_source or None, skip_bad_rows=skip_bad, data=up_data)
                    auth.record("dataset", rep.source, {"op": "import_log", "rows": rep.n_imported})
                    st.success(tr(f"Импортировано {rep.n_imported} из {rep.n_rows} строк в «{rep.source}»",
                                  f"Imported {rep.n_imported} of {rep.n_rows} rows into '{rep.source}'"))
                    if rep.n_empty_questions:
                        st.info(tr(f"Строк без текста вопроса: {rep.n_empty_questions} — учтены как события (сессии, "
                                   "пользователи), в текстовый анализ не входят.",
                                   f"Rows without question text: {rep.n_empty_questions} — counted as events (sessions, "
                                   "users), left out of text analyses."))
                    if rep.errors:
                        st.warning(tr(f"Пропущено строк: {rep.n_skipped}", f"Rows skipped: {rep.n_skipped}"))
                        tables.show(pd.DataFrame(rep.errors), "import_errors", key="ru_imp_errors", download=False)
                except QuestionLogImportError as exc:
                    st.error(tr(f"Файл не импортирован, ничего не записано: {exc}",
                                f"Nothing imported, nothing written: {exc}"))
    if run_clicked:
        start, end = (period[0], period[1]) if isinstance(period, (tuple, list)) and len(period) == 2 else (None, None)
        scores = tuple(None if s == "unrated" else int(s) for s in score_opts) or None
        filters = LogFilters(start=start if isinstance(start, date) else None, end=end if isinstance(end, date) else None,
                             answered={"all": None, "yes": True, "no": False}[answered_opt], scores=scores)
        params = {"source": source, "filters": filters.describe(), "top_k": int(top_k), "k_topics": int(k_topics) or None,
                  "pause_minutes": float(pause), "lang": lang(), "link_kb": bool(link_kb)}
        if st.session_state.get(RULES_KEY) is not None:  # the rules edited on the "Bot answers" tab
            params["answer_rules"] = st.session_state[RULES_KEY].to_dict()
        jobs.start(lambda: build_plan(engine, params), RUN_KEY)
    return sources


def result_of(run: runs.Run) -> RealUsersResult | None:
    """The result of ``run``: the one on screen, else the one its job of this process left, else the one stored
    beside the run (an earlier session, another process, before a restart) — never recomputed to be seen again."""
    res = st.session_state.get(RESULT_KEY)
    if res is not None and res.run_id == run.id:
        return res
    job = executor.get_job(run.id)
    res = job.plan.outputs.get("result") if job is not None else None
    if res is None:
        res = load_result(engine, run)
    if res is not None:
        st.session_state[RESULT_KEY] = res
    return res


STEP_NAMES = {"log": ("журнал вопросов и классы ответов", "question log and answer classes"),
              "embeddings": ("эмбеддинги вопросов", "question embeddings"),
              "retrieval": ("поиск top-k", "top-k retrieval"), "utilization": ("использование чанков", "chunk utilization"),
              "topics": ("темы и пробелы", "topics and gaps"), "domain": ("домен", "domain")}


def _render_run() -> tuple[runs.Run, RealUsersResult]:
    """The run picker (the run just made, the URL's, else the latest) and its result, read from the store."""
    # the analyses run as a background job of the engine (each step an item of the run); the picker shows the run
    # just made (or any earlier one, newest first), with its verdict against the baselines first
    run = run_view.run_section("real_users", RUN_KEY, label=tr("Анализ", "Analysis"), empty=(
        "Анализов ещё не было: выберите фильтры в форме вверху и нажмите «Запустить анализ».",
        "No analysis yet: choose the filters in the form at the top and press “Run analysis”."))
    # selections belong to one analysis: a topic or points picked in another run's tables or map are forgotten
    run_view.scope_to_run("real_users", run.id, ("ru_map_topic", "ru_map_topic_picked", "ru_map_points", "ru_gaps",
                                                 "ru_topics"), params=("topic",))
    run_view.bind("ru_map_topic", "topic", parse=run_view.parse_optional_int)  # the highlighted topic and the search
    run_view.bind("ru_map_search", "search")  # on the map live in the URL
    if run.status not in ("done", "done_with_failures"):
        st.error(tr("Анализ не выполнен: ", "Analysis failed: ") + str(run.error or run.status))
        st.stop()
    res = result_of(run)
    if res is None:
        st.info(tr(f"Таблицы и графики анализа #{run.id} не сохранены (анализ сделан прежней версией или продолжен "
                   "после остановки). Их можно пересчитать по замороженным параметрам запуска на его снимке базы — "
                   "новый запуск не создаётся, а результат сохранится.",
                   f"The tables and charts of analysis #{run.id} are not stored (it was made by an earlier version or "
                   "resumed after a stop). They can be recomputed from the run's frozen parameters on its snapshot — no "
                   "new run is made, and the result is stored."))
        if not st.button(tr("Пересчитать таблицы и графики", "Recompute the tables and charts"), key="ru_rebuild",
                         type="primary"):
            st.stop()
        with state.user_errors("Не удалось пересчитать анализ", "Could not recompute the analysis"):
            bar = jobs.StepBar(tr("Пересчёт…", "Recomputing…"))
            res = rebuild_result(engine, run, progress=lambda i, n, key: bar(i, n, tr(*STEP_NAMES.get(key, (key, key)))))
            bar.finish(tr(f"Анализ #{run.id} пересчитан", f"Analysis #{run.id} recomputed"))
            st.session_state[RESULT_KEY] = res
            save_result(engine, res)  # the next opening reads it from the store
        if res is None:
            st.stop()
    return run, res


def with_examples(df: pd.DataFrame, n: int | None = None) -> pd.DataFrame:
    """Examples as one readable cell: "question ×14 | question ×3" (the first ``n`` when given)."""
    out = df.copy()
    out["examples"] = [" | ".join(format_example(e, int(c)) for e, c in list(zip(ex, cnt, strict=True))[:n])
                       for ex, cnt in zip(df["examples"], df["example_counts"], strict=True)]
    return out.drop(columns=["example_counts"])


def render_llm_labels(res: object) -> dict[int, str]:
    """Optional LLM-written topic labels (cached by the LLM client); shown beside the keyword names, marked."""
    from voproshalych_eval.llm import default_client

    key = f"ru_llm_labels_{res.run_id}"  # type: ignore[attr-defined]
    client = default_client(engine=engine, lang=lang())
    if client is None:
        st.caption(tr("LLM не настроена (Настройки) — подписи тем только по ключевым словам.",
                      "No LLM configured (Settings) — topic names come from keywords only."))
        return {}
    # by default once per analysis when an LLM is configured (one short call per topic, cached by the LLM client:
    # reopening the analysis costs nothing); the button asks again
    auto = key not in st.session_state and auth.can("run")
    if auth.button("run", st, tr("Подписать темы с помощью LLM заново", "Label the topics with the LLM again"),
                   key="ru_llm_labels") or auto:
        auth.require("run", "topic labels")
        from voproshalych_eval.analytics.topic_names import llm_labels

        bar = jobs.StepBar(tr("LLM подписывает темы…", "The LLM is labelling the topics…"))
        st.session_state[key] = llm_labels(res.topics.topics, client, lang=lang(),  # type: ignore[attr-defined]
                                           progress=lambda done, total: bar(1, 1, tr("подписи тем", "topic labels"),
                                                                            done, total))
        bar.finish(tr(f"Подписано тем: {len(st.session_state[key])}", f"Topics labelled: {len(st.session_state[key])}"))
    labels = st.session_state.get(key) or {}
    if labels:
        st.caption(tr(f"Столбец «Подпись LLM» написан моделью {client.models[0]} по ключевым словам и примерам — "
                      "это подсказка, не результат анализа.",
                      f"The “LLM label” column is written by the model {client.models[0]} from keywords and examples — "
                      "a hint, not an analysis result."))
    return labels


def render_trust(res: object) -> None:
    """Stability of the topics across seeds (ARI per seed) and, on demand, of k across samples."""
    t = res.topics  # type: ignore[attr-defined]
    seeds = t.stability.get("seeds") or {}
    if seeds.get("ari"):
        st.caption(tr(f"ARI с другими начальными центрами (зёрна {seeds['seeds']}): " + ", ".join(f"{a:.2f}" for a in seeds["ari"])
                      + f" (выборка {seeds['n']} вопросов).",
                      f"ARI with other starting centres (random states {seeds['seeds']}): " + ", ".join(f"{a:.2f}" for a in seeds["ari"])
                      + f" (sample of {seeds['n']} questions)."))
    if t.params.get("k_chosen_by") == "silhouette" and st.button(
            tr("Проверить устойчивость k (3 другие выборки)", "Check the stability of k (3 other samples)"),
            key="ru_k_stab"):
        from voproshalych_eval.analytics.topics import k_stability, unit_rows

        X = unit_rows(res.embeddings.vectors)[t.labels < t.metrics["n_topics"]]  # type: ignore[attr-defined]
        bar = jobs.StepBar(tr("Подбираю k на других выборках…", "Choosing k on other samples…"))
        st.session_state["ru_k_stability"] = k_stability(
            X, k_range=tuple(t.params["k_range"]), runs=3,
            progress=lambda r, n: bar(r, n, tr(f"k по силуэту на выборке {r}", f"k by silhouette on sample {r}")))
        bar.finish(tr("Устойчивость k проверена", "The stability of k is checked"))
    ks = st.session_state.get("ru_k_stability")
    if ks is not None:
        st.caption(tr(f"k по силуэту на других выборках: {', '.join(map(str, ks['k']))} (в этом запуске "
                      f"{t.metrics['n_topics']}). Сильный разброс — число тем выбрано неустойчиво.",
                      f"k by silhouette on other samples: {', '.join(map(str, ks['k']))} (this run: "
                      f"{t.metrics['n_topics']}). A wide spread means the number of topics is not stable."))
        show_table(ks, "k_stability", key="ru_k_stab_tbl")


def render_naming(res: object) -> None:
    """Rename / merge topics; the names are stored with the topics' centroids and applied on later runs."""
    from voproshalych_eval.analytics import topic_memory as tm

    t = res.topics  # type: ignore[attr-defined]
    model = res.embeddings.model  # type: ignore[attr-defined]
    with st.expander(tr("Переименовать или объединить темы", "Rename or merge topics")):
        st.caption(tr("Имена хранятся вместе с центроидом темы и применяются при следующих запусках к теме с "
                      f"центроидом не дальше косинуса {tm.DEFAULT_THRESHOLD} (объединённые темы снова "
                      "объединяются). Действуют со следующего запуска анализа.",
                      "Names are stored with the topic's centroid and applied on later runs to the topic whose "
                      f"centroid is within cosine {tm.DEFAULT_THRESHOLD} (merged topics are merged again). They "
                      "take effect from the next analysis run."))
        clusters = t.topics[t.topics["kind"] == "cluster"]
        label_of = {int(r["topic"]): f"{int(r['topic'])}: {r['name']} · n = {int(r['size'])}"
                    for _, r in clusters.iterrows()}
        picked = st.multiselect(tr("Темы", "Topics"), list(label_of), format_func=label_of.get, key="ru_name_pick",
                                placeholder=tr("Выберите…", "Choose…"))
        new_name = st.text_input(tr("Новое имя", "New name"), key="ru_name_text")
        c1, c2 = st.columns(2)
        rename = auth.button("label", c1, tr("Переименовать", "Rename"), key="ru_name_rename", disabled=len(picked) != 1)
        merge = auth.button("label", c2, tr("Объединить", "Merge"), key="ru_name_merge", disabled=len(picked) < 2)
        if rename or merge:
            with state.user_errors("Имя не сохранено", "Name not saved"), \
                    auth.audited("label", f"topic name {new_name!r}", {"op": "rename" if rename else "merge"}):
                stored = {n.id: n for n in tm.list_names(engine, model)}
                rows = clusters.set_index("topic")
                centroids, replace = [], []
                for topic in picked:
                    ids = list(rows.loc[topic, "stored_ids"])
                    if ids:  # a topic named before: keep its stored centroids (a merge stays a merge)
                        centroids += [stored[i].centroid for i in ids if i in stored]
                        replace += ids
                    else:
                        centroids.append(t.centroids[topic])
                tm.remember(engine, model, centroids, new_name, replace_ids=replace,
                            source=res.source)  # type: ignore[attr-defined]
                st.success(tr("Сохранено: применится при следующем запуске анализа.",
                              "Saved: applied on the next analysis run."))
        names = tm.list_names(engine, model)
        if names:
            table = pd.DataFrame([{"id": n.id, "name": n.name, "group": n.group_key[:8]} for n in names])
            show_table(table, "topic_names", key="ru_names_tbl")
            drop = st.multiselect(tr("Удалить сохранённые имена (id)", "Delete stored names (id)"),
                                  table["id"].tolist(), key="ru_names_drop", placeholder=tr("Выберите…", "Choose…"))
            if drop and auth.button("label", st, tr("Удалить", "Delete"), key="ru_names_del"):
                with auth.audited("label", "topic names", {"op": "delete", "ids": [int(i) for i in drop]}):
                    tm.forget(engine, drop)
                st.rerun()


def render_changes(res: object, names: dict[int, str]) -> None:
    """What changed: the chosen period vs the one before, topics over time, seasonal peaks."""
    t = res.topics  # type: ignore[attr-defined]
    st.subheader(tr("Что изменилось", "What changed"))
    months = sorted(t.trends.monthly["period"].unique()) if t.trends is not None else []
    if not months:
        st.caption(tr("Нет вопросов с датой.", "No dated questions."))
        return
    c1, c2 = st.columns(2)
    end = c1.selectbox(tr("Последний месяц периода", "Last month of the period"), months[::-1], key="ru_tr_end")
    window = c2.number_input(tr("Месяцев в периоде", "Months in the period"), 1, 12, 1, key="ru_tr_window")
    clustered = t.topics.loc[t.topics["kind"] == "cluster", "topic"].astype(int).tolist()
    # the analysis stored its default period's trends: only another period is computed here
    trends = trends_of_period(t.trends, t.labels, month_of(res.text_log["created_at"]), names,  # type: ignore[attr-defined]
                              effective=res.text_effective_answered,  # type: ignore[attr-defined]
                              topics=clustered, end=end, window=int(window),
                              texts=res.text_log["question"].astype(str).tolist())  # type: ignore[attr-defined]
    from voproshalych_eval import markdown as md

    st.markdown("\n".join(f"- {x}" for x in summary_lines(trends, gaps=t.gaps, lang=lang(), quote=md.literal)))
    st.caption(tr("Статус темы: биномиальный тест доли темы сейчас против прошлого периода (α = 0.05); «новая» — "
                  "≤ 1 вопроса раньше и ≥ 5 сейчас, «растёт» — доля выросла ≥ 1.5 раза.",
                  "Topic status: binomial test of the topic's share now vs the previous period (α = 0.05); "
                  "'emerging' — ≤ 1 question before and ≥ 5 now, 'growing' — the share grew ≥ 1.5 times."))
    changes = trends.changes.copy()
    changes["status_name"] = changes["status"].map(lambda x: tr(*STATUS_NAMES[x]))
    show_table(changes, "topic_changes", key="ru_tr_changes")
    if len(trends.terms):
        st.markdown(tr("**Новые слова в вопросах** (≤ 1 вопроса раньше, ≥ 5 сейчас, биномиальный тест): новая тема "
                       "часто не образует свой кластер, а вливается в соседний.",
                       "**New words in the questions** (≤ 1 question before, ≥ 5 now, binomial test): a new subject "
                       "often joins a neighbouring cluster instead of forming its own."))
        show_table(trends.terms, "emerging_terms", key="ru_tr_terms")
    moved = changes.loc[changes["status"].isin(["emerging", "growing"]), "topic"].astype(int).tolist()
    share = trends.monthly[trends.monthly["topic"].isin(clustered)]
    chart(charts.topic_trend(share, names, value="share", highlight=moved,
                             title=tr("Темы по месяцам: доля вопросов месяца", "Topics by month: share of the month"),
                             y_title=tr("доля месяца", "share of the month"), x_title=tr("месяц", "month")),
          trends.monthly, "topic_trend")
    if len(trends.peaks):
        peaks = trends.peaks.copy()
        peaks["peak_month_name"] = peaks["peak_month"].map(lambda m: (MONTHS_RU if lang() == "ru" else MONTHS_EN)[m - 1])
        st.markdown(tr("**Сезонные пики** (доля темы в этом календарном месяце / её доля за всё время)",
                       "**Seasonal peaks** (the topic's share in that calendar month / its share overall)"))
        show_table(peaks, "topic_peaks", key="ru_tr_peaks")

MAP_KEY = "ru_topic_map"  # (run id, point ids) of the map built on this page
MAP_PROJ_KEY = "ru_topic_map_projection"  # its projection (ui.map_view: PCA first, then UMAP)
MAP_LIMIT = 20_000  # questions on the map (a fixed random sample above)
MAP_TOPIC_KEY = "ru_map_topic"  # the map's "highlight a topic" picker
PICKED_TOPIC_KEY = "ru_map_topic_picked"  # a topic picked in the gap or topic table, for that picker


def hover_texts() -> dict[str, str]:
    """The hover words of the gap and topic charts in the UI language."""
    return {"gap": tr("оценка пробела", "gap score"), "answered": tr("с настоящим ответом", "effectively answered"),
            "non_empty": tr("непустой ответ", "non-empty answer"), "distance": tr("расстояние до базы", "distance to the KB")}


def linked_table(df: pd.DataFrame, name: str, key: str) -> None:
    """A table of topics (one row per topic) linked to the topic map: the topic of the row picked here is
    highlighted on the map (the map's topic picker takes it)."""
    event = tables.show(df, name, key=key, labels=COLUMNS, on_select="rerun",
                        selection_mode="single-row")
    rows = list(getattr(getattr(event, "selection", None), "rows", None) or [])
    picked = int(df["topic"].iloc[rows[0]]) if rows and int(rows[0]) < len(df) else None
    seen_key = f"{key}_picked_seen"
    if picked != st.session_state.get(seen_key):  # a new pick (not the same one still selected on a rerun)
        st.session_state[seen_key] = picked
        if picked is not None:
            st.session_state[PICKED_TOPIC_KEY] = picked
    st.caption(tr("Выберите строку — её тема подсветится на карте тем ниже.",
                  "Pick a row — its topic is highlighted on the topic map below."))


def render_topic_map(res: object, names: dict[int, str]) -> None:
    """Map of the questions coloured by topic (kept across reruns for this run): PCA at once, UMAP when its
    background fit ends (``ui.map_view``); a search box and a topic picker highlight their questions."""
    t = res.topics  # type: ignore[attr-defined]
    st.subheader(tr("Карта тем", "Topic map"))
    if st.button(tr("Построить карту", "Build the map"), key="ru_map"):
        with state.user_errors("Карта не построена", "Map failed"):
            ids = [f"{res.source}:{i}" for i in res.text_log["id"]]  # type: ignore[attr-defined]
            # the first picture at once (the stored UMAP map, else PCA); UMAP refines in the background
            map_view.start(MAP_PROJ_KEY, engine, res.embeddings.vectors, ids,  # type: ignore[attr-defined]
                           model=res.embeddings.model, limit=MAP_LIMIT)  # type: ignore[attr-defined]
            st.session_state[MAP_KEY] = (res.run_id, ids)  # type: ignore[attr-defined]
    stored = st.session_state.get(MAP_KEY)
    if stored is None or stored[0] != res.run_id:  # type: ignore[attr-defined]
        return
    proj = map_view.current(MAP_PROJ_KEY)
    if proj is None:
        return
    from voproshalych_eval.plots import embedding_space as maps

    _, ids = stored
    st.caption(map_view.method_caption(proj, MAP_PROJ_KEY))
    map_view.refine_status(MAP_PROJ_KEY)
    rows = proj.rows
    text_log = res.text_log  # type: ignore[attr-defined]
    meta = pd.DataFrame({"row": rows, "point_id": [ids[i] for i in rows],
                         "text": text_log["question"].iloc[rows].to_numpy(),
                         "url": text_log["url"].iloc[rows].to_numpy(), "kind": "question",
                         "topic_id": t.labels[rows],
                         "topic": [names.get(int(x), str(x))[:40] for x in t.labels[rows]]})
    c1, c2 = st.columns([3, 2])
    query = c1.text_input(tr("Поиск по тексту (подсветить на карте)", "Search the texts (highlight on the map)"),
                          key="ru_map_search")
    topic_ids = sorted({int(x) for x in meta["topic_id"]})
    picked_topic = st.session_state.pop(PICKED_TOPIC_KEY, None)  # a row picked in the gap or topic table
    if picked_topic in topic_ids:
        st.session_state[MAP_TOPIC_KEY] = picked_topic
    focus = c2.selectbox(tr("Подсветить тему", "Highlight a topic"), [None] + topic_ids, key=MAP_TOPIC_KEY,
                         format_func=lambda x: "—" if x is None else f"{x}: {names.get(x, x)}")
    highlight = None
    if query.strip() or focus is not None:
        hit = np.ones(len(meta), dtype=bool)
        if query.strip():
            hit &= meta["text"].fillna("").astype(str).str.contains(query.strip(), case=False, regex=False).to_numpy()
        if focus is not None:
            hit &= (meta["topic_id"] == focus).to_numpy()
        highlight = hit
        st.caption(tr(f"Подсвечено вопросов: {int(hit.sum())} из {len(meta)}.",
                      f"Highlighted questions: {int(hit.sum())} of {len(meta)}."))
    # the points table under the map lists the highlighted questions (or all); rows picked there are starred
    shown = (np.flatnonzero(highlight) if highlight is not None else np.arange(len(meta)))[:2000]
    ev = st.session_state.get("ru_map_points")
    sel = list(getattr(getattr(ev, "selection", None), "rows", []) or (ev or {}).get("selection", {}).get("rows", [])
               if ev is not None else [])
    picked = [int(shown[i]) for i in sel if int(i) < len(shown)]
    fig = maps.scatter_figure(proj.coords, meta, "topic", label_centres=True, color_title=tr("тема", "topic"),
                              highlight=highlight, picked=picked, title=tr("Вопросы, цвет — тема", "Questions coloured by topic"),
                              texts={"other": tr("прочие", "other"),
                                     "outside": tr("за рамкой (прижаты к краю)", "outside the frame (clipped)"),
                                     "matches": tr("подсвечено", "highlighted"),
                                     "picked": tr("выбрано в таблице", "picked in the table"),
                                     "shown": tr("показано {shown} из {total} точек (случайная выборка)",
                                                 "shown {shown} of {total} points (random sample)")},
                              axis_name=map_view.axis_name(proj))
    if proj.subsampled:
        st.caption(tr(f"Случайная выборка {len(rows)} из {proj.n_total} вопросов.",
                      f"A random sample of {len(rows)} of {proj.n_total} questions."))
    chart(fig, meta.assign(x=proj.coords[:, 0], y=proj.coords[:, 1]), "topic_map")
    st.caption(tr("Вопросы карты (первые 2000; поиск и тема сужают список): выбранные строки отмечены на карте "
                  "звездой.",
                  "Questions of the map (first 2,000; the search and the topic narrow the list): selected rows are "
                  "starred on the map."))
    points = meta.iloc[shown][["point_id", "topic", "text", "url"]]
    st.dataframe(points, hide_index=True, on_select="rerun", selection_mode="multi-row", key="ru_map_points", height=240,
                 column_config=tables.column_config(points, COLUMNS))


# ---------------------------------------------------------------- utilization
def _render_utilization(res: RealUsersResult) -> None:
    """The chunk-utilization tab."""
    u = res.utilization
    n_caption(res)
    if u is None and res.snapshot is None:
        st.info(tr("Использование чанков требует базу знаний, а этот журнал с ней не связан (импортирован без связи "
                   "или база не загружена). Отметьте в форме вверху «Журнал относится к загруженной базе знаний», если "
                   "это так.",
                   "Chunk utilization needs a knowledge base, and this log is not linked to one (imported without a "
                   "link, or no KB is loaded). Tick “This log belongs to the loaded knowledge base” in the form at the "
                   "top if it does."))
    elif u is None:
        empty_state("Нет результата.", "No result.")
    else:
        metric_cards({k: u.metrics[k] for k in ("chunk_coverage", "chunk_coverage@1", "page_coverage",
                                                 "page_coverage@1", "n_never_retrieved", "top10pct_chunk_share",
                                                 "mean_top1_similarity")})
        st.caption(tr(f"Чанков в базе знаний: {fmt_count(u.metrics.get('n_chunks'))}",
                      f"Chunks in the knowledge base: {fmt_count(u.metrics.get('n_chunks'))}"))
        chart(charts.long_tail(u.per_chunk, title=tr("Сколько раз чанк попадал в выдачу (длинный хвост)",
                                                     "How often each chunk is retrieved (long tail)"),
                               x_title=tr("чанки по убыванию", "chunks, descending"), y_title=tr("вопросов", "questions")),
              u.per_chunk, "chunk_retrievals")
        chart(charts.pages_bar(u.per_page, title=tr("Страницы", "Pages")), u.per_page, "page_retrievals")
        st.subheader(tr(f"Ни разу не найденные чанки ({len(u.never_retrieved)})",
                        f"Never-retrieved chunks ({len(u.never_retrieved)})"))
        st.caption(tr("Кандидаты на удаление или переписывание.", "Candidates for removal or rewriting."))
        show_table(u.never_retrieved, "never_retrieved_chunks")
        st.subheader(tr("Чанки, собирающие 👎 (top-1)", "Chunks attracting 👎 (top-1)"))
        show_table(u.thumbs_down_chunks, "thumbs_down_chunks")

# ---------------------------------------------------------------- topics
def _render_topics(res: RealUsersResult) -> None:
    """The topics and coverage-gaps tab."""
    t = res.topics
    n_caption(res)
    if t is None:
        empty_state("Нет результата.", "No result.")
    else:
        metric_cards({"n_topics": t.metrics["n_topics"], "best_silhouette": t.metrics["best_silhouette"],
                      "seed_ari_mean": t.metrics["seed_ari_mean"], "n_clustered": t.metrics["n_clustered"],
                      "effective_answered_rate": t.metrics["effective_answered_rate"],
                      "answered_rate": t.metrics["answered_rate"]})
        st.caption(tr(
            f"Силуэт {t.metrics['best_silhouette'] or 0:.2f}: {silhouette_verdict(t.metrics['best_silhouette'], 'ru')}. "
            "Силуэт ∈ [−1, 1]: насколько вопрос ближе к своей теме, чем к соседней (> 0.5 — чёткие темы, "
            "0.25–0.5 — различимые, < 0.25 — слабая структура). Устойчивость: средний скорректированный индекс Рэнда "
            f"(ARI) между темами и KMeans с другими начальными центрами = {t.metrics['seed_ari_mean'] or 0:.2f} (1 — те же темы, "
            "≈0 — случайное совпадение).",
            f"Silhouette {t.metrics['best_silhouette'] or 0:.2f}: {silhouette_verdict(t.metrics['best_silhouette'], 'en')}. "
            "Silhouette ∈ [−1, 1]: how much closer a question is to its own topic than to the next one (> 0.5 clear "
            "topics, 0.25–0.5 distinguishable, < 0.25 weak structure). Stability: mean adjusted Rand index (ARI) "
            f"between the topics and KMeans from other starting centres = {t.metrics['seed_ari_mean'] or 0:.2f} (1 — the same "
            "topics, ≈0 — chance agreement)."))
        st.subheader(tr("Пробелы в покрытии — что дописать", "Coverage gaps — what to write next"))
        st.caption(f"`{GAP_FORMULA}`")
        c1, c2 = st.columns(2)
        # the reports are written when a button is pressed, in the UI language, masked as this session masks
        masked, ui_lang = auth.masks_personal_data(), lang()
        c1.download_button(tr("⬇ Отчёт (Markdown)", "⬇ Report (Markdown)"),
                           lambda: auth.export_bytes(coverage_gap_markdown(res, lang=ui_lang), masked=masked),
                           file_name="coverage_gaps.md", mime="text/markdown", key="ru_rep_md", on_click="ignore")
        c2.download_button(tr("⬇ Отчёт (HTML)", "⬇ Report (HTML)"),
                           lambda: auth.export_bytes(coverage_gap_html(res, lang=ui_lang), masked=masked),
                           file_name="coverage_gaps.html", mime="text/html", key="ru_rep_html", on_click="ignore")
        labels = render_llm_labels(res)
        gaps = with_examples(t.gaps, n=3)  # three example questions inline, beside the name
        gaps.insert(gaps.columns.get_loc("name") + 1, "examples", gaps.pop("examples"))
        if labels:  # the model's label leads, marked as the model's (the caption above names it)
            gaps.insert(gaps.columns.get_loc("name"), "llm_label", gaps["topic"].map(labels))
        st.caption(tr("Смешанные темы (название покрывает мало их вопросов) стоят ниже чистых: это не один пробел.",
                      "Mixed topics (their name covers few of their questions) rank below clean ones: they are not "
                      "one gap."))
        chart(charts.gaps_bar(t.gaps, title=tr("Оценка пробела", "Gap score"), x_title=tr("оценка пробела", "gap score"),
                              texts=hover_texts()), gaps, "coverage_gaps")
        linked_table(gaps, "coverage_gaps_table", "ru_gaps")
        topics = with_examples(t.topics)
        topics["terms"] = topics["terms"].map(lambda xs: ", ".join(xs))
        if labels:
            topics.insert(2, "llm_label", topics["topic"].map(labels))
        chart(charts.topics_scatter(t.topics, title=tr("Темы: отвеченность и удалённость от базы",
                                                       "Topics: answered share vs distance to the KB"),
                                    x_title=tr("доля с настоящим ответом", "effective answered share"),
                                    y_title=tr("расстояние до ближайшего чанка", "distance to nearest chunk"),
                                    texts=hover_texts()),
              topics, "topics")
        names = dict(zip(t.topics["topic"], t.topics["name"], strict=True))
        render_changes(res, names)
        st.subheader(tr("Все темы", "All topics"))
        linked_table(topics, "topics_table", "ru_topics")
        if len(t.k_scores):
            chart(charts.bar(t.k_scores, "k", "silhouette", title=tr("Выбор k: силуэт", "Choosing k: silhouette")),
                  t.k_scores, "k_silhouette")
        render_trust(res)
        render_naming(res)
        render_topic_map(res, names)
        st.page_link("pages/tier0_embeddings.py", label=tr("Открыть пространство эмбеддингов (Tier 0)",
                                                           "Open the embedding-space explorer (Tier 0)"))

# ---------------------------------------------------------------- bot answers
LABELS_VERSION = "ru_labels_version"  # bumped on every save: the labelling widgets start from the new suggestions


def confusion_frame(report: object) -> pd.DataFrame:
    """The classifier's cross-validated confusion matrix as a table: rows the person's class, columns the model's."""
    conf = report.confusion  # type: ignore[attr-defined]
    names = [tr(*CLASS_NAMES[c]) for c in conf["labels"]]
    df = pd.DataFrame(conf["matrix"], columns=names)
    df.insert(0, tr("класс по разметке ↓ / модель →", "labelled class ↓ / model →"), names)
    return df


def _render_answers(res: RealUsersResult, run: runs.Run) -> None:
    """The bot-answers tab: classes, the classifier's quality, labelling and the hint rules."""
    a = res.answers
    n_caption(res)
    if a is None:
        empty_state("Нет результата.", "No result.")
    else:
        am = a.metrics()
        cards = {k: am[k] for k in ("answered_rate", "effective_answered_rate", "n_declined",
                                    "declined_share_of_answered")}
        if a.report is not None:
            cards.update({k: am[k] for k in ("effective_answered_rate_ci", "answer_classifier_accuracy",
                                             "n_answer_labels") if am.get(k) is not None})
        metric_cards(cards)
        st.caption(tr("Доля отвеченных (непустой ответ) − фактическая доля = отказы под видом ответа / n. Темы, пробелы "
                      "и домен считают фактическую долю.",
                      "Answered rate (non-empty answer) − effective rate = declines in disguise / n. Topics, gaps and "
                      "the domain use the effective rate."))
        if a.report is None:
            st.warning(tr("Классы ответов дали шаблоны-правила: классификатор не обучен, его точность неизвестна. "
                          "Нужно не меньше 10 размеченных текстов, из них хотя бы 2 настоящих ответа, — разметьте "
                          "частые ответы ниже.",
                          "The answer classes come from the pattern rules: no classifier is trained, its accuracy is "
                          "unknown. It needs at least 10 labelled texts, at least 2 of them real answers — label the "
                          "frequent answers below."))
        else:
            rep = a.report
            st.caption(tr(
                f"Классификатор {rep.settings['version']}: логистическая регрессия на символьных n-граммах текста "
                f"ответа и признаках правил; обучен на {rep.n_labels} размеченных текстах и {rep.n_seeds} текстах, "
                f"где сработало правило; точность — кросс-валидация ({rep.cv_folds} блоков) только на размеченных, "
                f"интервал Уилсона. Неуверенных текстов (вероятность < {rep.settings['uncertain_below']}): "
                f"{rep.n_uncertain_texts}. Интервал фактической доли учитывает ошибки модели (PPV и FOR из "
                "кросс-валидации).",
                f"Classifier {rep.settings['version']}: logistic regression on character n-grams of the answer text and "
                f"the rules as features; trained on {rep.n_labels} labelled texts and {rep.n_seeds} texts a rule fired "
                f"on; accuracy is cross-validated ({rep.cv_folds} folds) on the labelled texts only, Wilson interval. "
                f"Uncertain texts (probability < {rep.settings['uncertain_below']}): {rep.n_uncertain_texts}. The "
                "effective rate's interval carries the model's errors (PPV and FOR from cross-validation)."))
            st.markdown(tr("**Матрица ошибок (кросс-валидация на размеченных текстах)**",
                           "**Confusion matrix (cross-validated on the labelled texts)**"))
            show_table(confusion_frame(rep), "answer_confusion", key="ru_answer_confusion")
        classes = a.table()
        classes["name"] = classes["class"].map(lambda c: tr(*CLASS_NAMES[c]))
        show_table(classes[["name", "rows", "share"]], "answer_classes")

        st.subheader(tr("Разметка частых ответов", "Label the frequent answers"))
        st.caption(tr("Самые частые тексты бота (они и есть его шаблоны) и заметные отказы. Класс предложен моделью "
                      "или правилами; проверьте его, исправьте при необходимости и отметьте «✓». Сохраняются только "
                      "отмеченные строки — с вашим именем и временем; следующий запуск анализа обучится на них "
                      "(эта страница пересчитывается сразу).",
                      "The bot's most frequent texts (its templates) and the declines that stand out. The class is "
                      "suggested by the model or the rules; check it, fix it if needed and tick “✓”. Only ticked rows "
                      "are saved — with your name and the time; the next analysis run learns from them (this page "
                      "is recomputed at once)."))
        version = int(st.session_state.get(LABELS_VERSION, 0))
        options = list(OVERRIDE_CLASSES)
        option_names = [tr(*CLASS_NAMES[c]) for c in options]  # the shown names; the class by position
        with st.form(f"ru_label_form_{version}", enter_to_submit=False):
            who = st.text_input(tr("Кто размечает", "Who labels"), key=f"ru_label_by_{version}")
            all_ok = st.checkbox(tr("Подтверждаю все показанные классы", "I confirm every class shown"),
                                 key=f"ru_label_all_{version}")
            chosen: list[str] = []
            ticked: list[bool] = []
            for i, r in enumerate(a.frequent.to_dict(orient="records")):
                c1, c2, c3, c4 = st.columns([7, 1, 3, 1], vertical_alignment="center")
                c1.text(str(r["answer"]))  # the bot's text is untrusted: shown as text, never as Markdown
                c2.caption(f"×{int(r['count'])}" + (" ✔" if bool(r["labelled"]) else ""))
                picked = c3.selectbox(tr("Класс", "Class"), option_names, index=options.index(str(r["class"])),
                                      key=f"ru_lab_cls_{version}_{i}", label_visibility="collapsed")
                chosen.append(options[option_names.index(picked)])
                ticked.append(c4.checkbox("✓", key=f"ru_lab_ok_{version}_{i}"))
            save = auth.submit("label", st, tr("Сохранить отмеченные", "Save the ticked rows"), type="primary",
                               key=f"ru_labels_save_{version}")
        if save:
            auth.require("label", "answer labels")
            rows = confirmed_labels(a.frequent, chosen, [ok or all_ok for ok in ticked])
            if not rows:
                st.warning(tr("Ничего не отмечено — ничего не сохранено.", "Nothing ticked — nothing saved."))
            else:
                with state.user_errors("Метки не сохранены", "Labels not saved"):
                    n_saved = save_labels(engine, rows, by=who, source=res.source)
                    auth.record("label", "answer labels", {"op": "save_labels", "rows": n_saved})
                    res.answers = classify_answers(
                        res.log["answer"].tolist(), res.log["url"].tolist(),
                        rules=st.session_state.get(RULES_KEY) or a.rules, labels=load_labels(engine),
                        classifier=ClassifierSettings.from_dict((run.params or {}).get("answer_classifier")))
                    st.session_state[LABELS_VERSION] = version + 1
                    st.session_state["ru_labels_saved"] = n_saved
                    st.rerun()
        saved = st.session_state.pop("ru_labels_saved", None)
        if saved:
            st.success(tr(f"Сохранено меток: {saved}. Классы на странице пересчитаны; запуск #{run.id} хранит "
                          "прежние метки — новый анализ возьмёт эти.",
                          f"Saved {saved} labels. The classes on this page are recomputed; run #{run.id} keeps the "
                          "labels it was run with — a new analysis takes these."))
        with st.expander(tr("Сохранённые метки: выгрузка и загрузка", "Saved labels: export and import")):
            table_with_download(labels_frame(engine), "answer_labels", key="ru_labels_table")
            up = st.file_uploader(tr("Файл меток (CSV/JSON/JSONL: `answer`, `class`, `labelled_by`)",
                                     "Labels file (CSV/JSON/JSONL: `answer`, `class`, `labelled_by`)"),
                                  type=["csv", "json", "jsonl"], key="ru_labels_upload")
            if auth.button("label", st, tr("Загрузить метки", "Import labels"), key="ru_labels_import") \
                    and up is not None:
                auth.require("label", "uploaded file")
                with state.user_errors("Метки не загружены, ничего не записано", "Labels not imported, nothing written"):
                    lab_name, lab_data = uploads.read(up)
                    imp = import_labels(engine, lab_name, by=who or None, data=lab_data)
                    auth.record("label", lab_name, {"op": "import_labels", "rows": imp.n_saved})
                    st.success(tr(f"Загружено меток: {imp.n_saved}", f"Imported labels: {imp.n_saved}"))

        with st.expander(tr("Правила-подсказки (регулярные выражения)", "Hint rules (regular expressions)")):
            st.caption(tr("Правила не решают класс: они подсказывают классы для разметки, служат признаками модели и "
                          "дают ей примеры отказов. Ни одно правило не зависит от ссылок на страницы.",
                          "The rules do not decide the class: they suggest classes for labelling, are features of the "
                          "model and give it examples of declines. No rule depends on the page links."))
            rules: AnswerRules = st.session_state.get(RULES_KEY) or a.rules
            pattern_rows = pd.DataFrame(rules.patterns).reindex(columns=["class", "pattern", "max_chars", "note"])
            class_word = {c: tr(*CLASS_NAMES[c]) for c in OVERRIDE_CLASSES}  # the editor shows and takes words
            pattern_rows["class"] = pattern_rows["class"].map(lambda c: class_word.get(c, c))
            pats = st.data_editor(pattern_rows, hide_index=True, num_rows="dynamic", key="ru_answers_patterns",
                                  column_config={**tables.column_config(pattern_rows, COLUMNS),
                                                 "class": st.column_config.SelectboxColumn(
                                                     tables.header("class", COLUMNS),
                                                     options=list(class_word.values()), required=True)})
            word_class = {w: c for c, w in class_word.items()}
            pats["class"] = pats["class"].map(lambda w: word_class.get(w, w))
            if auth.button("label", st, tr("Применить правила", "Apply rules"), key="ru_rules_apply"):
                auth.require("label", "answer rules")
                patterns = [{k: v for k, v in row.items() if v is not None and not (isinstance(v, float) and pd.isna(v))}
                            for row in pats.to_dict(orient="records") if row.get("pattern")]
                with state.user_errors("Правила не применены", "Rules not applied"):
                    new_rules = AnswerRules(patterns=patterns, overrides=rules.overrides)
                    st.session_state[RULES_KEY] = new_rules
                    res.answers = classify_answers(
                        res.log["answer"].tolist(), res.log["url"].tolist(), rules=new_rules,
                        labels=load_labels(engine),
                        classifier=ClassifierSettings.from_dict((run.params or {}).get("answer_classifier")))
                    st.rerun()
            st.download_button(tr("⬇ Правила (JSON)", "⬇ Rules (JSON)"),
                               json.dumps(rules.to_dict(), ensure_ascii=False, indent=1).encode("utf-8"),
                               file_name="answer_rules.json", mime="application/json", key="ru_rules_dl")

# ---------------------------------------------------------------- domain
def _render_domain(res: RealUsersResult) -> None:
    """The domain tab: volume, users, lengths, scores, terms, slang, repeats, categories, sessions."""
    d = res.domain
    n_caption(res)
    if d is None:
        empty_state("Нет результата.", "No result.")
    else:
        m = d.metrics
        metric_cards({k: m[k] for k in ("n_questions_used", "unique_users", "questions_per_user_mean", "answered_rate",
                                        "effective_answered_rate", "n_sessions", "turns_per_session_mean",
                                        "slang_share", "exact_repeat_share")})
        if m.get("n_without_time"):
            st.caption(tr(f"Без времени: {m['n_without_time']} строк (в графиках по времени не показаны)",
                          f"No timestamp: {m['n_without_time']} rows (left out of time charts)"))
        freq = choice(tr("Шаг", "Step"), {"volume_day": tr("день", "day"), "volume_week": tr("неделя", "week"),
                                          "volume_month": tr("месяц", "month")}, "ru_freq", index=2)
        T = d.tables
        chart(charts.volume(T[freq], title=tr("Вопросы и доля отвеченных", "Questions and answered rate"),
                            rate_name=tr("доля отвеченных (непустой ответ)", "answered rate (non-empty answer)"),
                            effective_name=tr("фактически отвечено", "effectively answered"),
                            n_name=tr("вопросов", "questions")),
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
            tables.show(pd.DataFrame([{"category": r["category"], "rule": r["rule_ru" if lang() == "ru" else "rule_en"]}
                                      for r in CLASSIFIER_RULES]), "classifier_rules", key="ru_cls_rules", download=False)
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
            show_table(T["exact_repeats"].head(200), "exact_repeats")
        with c2:
            st.caption(tr(f"Кластеры почти-дубликатов (косинус ≥ {d.params['near_threshold']})",
                          f"Near-duplicate clusters (cosine ≥ {d.params['near_threshold']})"))
            show_table(T["near_duplicate_clusters"], "near_duplicate_clusters")


def _render_views(run: runs.Run, res: RealUsersResult) -> None:
    """The analysis's tabs; only the open one is drawn (each tab is a rerun away): reopening an analysis
    draws one tab, not four."""
    view = views.tabs("ru_view", {"utilization": ("Использование чанков", "Chunk utilization"),
                                  "topics": ("Темы и пробелы", "Topics & coverage gaps"),
                                  "answers": ("Ответы бота", "Bot answers"), "domain": ("Домен", "Domain")})
    renderers = {"utilization": lambda: _render_utilization(res), "topics": lambda: _render_topics(res),
                 "answers": lambda: _render_answers(res, run), "domain": lambda: _render_domain(res)}
    for name, render in renderers.items():
        with view[name]:
            if view[name].open is not False:
                render()


def _render_page() -> None:
    sources = _render_form()
    if not sources:
        empty_state("Журнала вопросов нет — загрузите демо-данные или импортируйте файл (форма вверху).",
                    "No question log yet — load the demo data or import a file (the form at the top).", demo=True)
        st.stop()
    run, res = _render_run()
    _render_views(run, res)


init_page_state()
_render_page()
