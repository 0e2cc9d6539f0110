"""Tier 1: retrieval accuracy — run the benchmark, read the metrics, inspect failures, compare retrievers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets.store import DatasetError, list_datasets, load_file, store
from voproshalych_eval.db.production import read_chunks
from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS
from voproshalych_eval.engine import describe, runs
from voproshalych_eval.plots import retrieval as charts
from voproshalych_eval.tiers import tier1
from voproshalych_eval.ui import auth, jobs, param_form, run_view, state, untrusted, uploads, views
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt, fmt_count, lang, metric_label, tr
from voproshalych_eval.ui.verdicts import run_verdict
from voproshalych_eval.ui.widgets import empty_state, metric_cards, page_header, table_with_download

SUMMARY_KEYS = ("hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "ndcg@5", "ndcg@10", "recall@5", "map")
LEVEL_NAMES = {"chunk": ("Чанки", "Chunks"), "url": ("Страницы (URL)", "Pages (URL)")}
RETRIEVER_NAMES = {
    "vector": ("Векторный (pgvector, косинус)", "Vector (pgvector, cosine)"),
    "fts": ("Полнотекстовый (PostgreSQL, russian)", "Full-text (PostgreSQL, russian)"),
    "hybrid": ("Гибридный (RRF)", "Hybrid (RRF)"),
}


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Tier 1 · Поиск", "Tier 1 · Retrieval"),
        tr(
            "Насколько хорошо поиск находит нужный чанк и нужную страницу для вопросов золотого набора.",
            "How well retrieval finds the right chunk and the right page for the golden questions.",
        ),
        tr(
            "Поиск повторяет production: эмбеддинг вопроса и `ORDER BY embedding <=> :q LIMIT k`. Метрики — на "
            "уровне **чанков** и на уровне **страниц** (список URL без повторов, порядок сохранён); шкала 0–1, "
            "больше — лучше. Hit Rate@K — доля вопросов с релевантным результатом в top-K; MRR — среднее 1/ранг "
            "первого релевантного; NDCG@K учитывает позиции всех релевантных. В скобках — 95% бутстреп-интервал. "
            "Вопросы без ответа в базе исключены из средних и показаны отдельно: расстояние их лучшего результата "
            "помогает выбрать порог «нет ответа».",
            "Retrieval mirrors production: embed the question and `ORDER BY embedding <=> :q LIMIT k`. Metrics are "
            "computed at **chunk** level and at **page** level (URL list deduplicated, order kept); scale 0–1, higher "
            "is better. Hit Rate@K is the share of questions with a relevant result in the top K; MRR the mean of "
            "1/rank of the first relevant hit; NDCG@K accounts for the positions of all relevant items. Brackets: "
            "95% bootstrap interval. Questions the knowledge base cannot answer are excluded from the means and "
            "shown separately: the distance of their top hit helps choose a \"no answer\" threshold.",
        ),
    )


#: the reasons ``tier1.consistency_setup`` gives, in words of the UI language
REASONS = {
    "PostgreSQL full-text search is deterministic; the same query always returns the same top-k": (
        "полнотекстовый поиск PostgreSQL детерминирован: один и тот же запрос всегда даёт тот же top-k",
        "PostgreSQL full-text search is deterministic; the same query always returns the same top-k"),
    "measurable here (HNSW / external API) but needs repeats >= 2": (
        "измеримо здесь (HNSW / внешний API), но нужно не меньше 2 повторов",
        "measurable here (HNSW / external API) but needs repeats >= 2"),
    "HNSW index rebuilt for every repeat": ("HNSW-индекс перестраивается на каждом повторе",
                                            "HNSW index rebuilt for every repeat"),
    "external embedding API called again (no cache)": ("внешний API эмбеддингов вызывается заново (без кэша)",
                                                       "external embedding API called again (no cache)"),
    "not measured": ("не измерялась", "not measured"),
}


def _keep_selection() -> None:
    """on_change of the compared runs: remember the analyst's selection."""
    st.session_state["t1_cmp_sel"] = list(st.session_state.get("t1_cmp_runs", []))


def _open_run(run_id: int) -> None:
    """on_click: show run ``run_id`` with its per-question detail open."""
    st.session_state["pick_t1_run_id"] = run_id
    views.open_view("t1_view", "questions")


def _reason(reason: object) -> str:
    text = str(reason or "")
    if text.startswith("exact search"):
        return tr("точный поиск (последовательный просмотр) с детерминированным эмбеддером по построению даёт тот же "
                  "top-k на каждом повторе; согласованность измеряется только с HNSW-индексом или внешним API",
                  text)
    return tr(*REASONS[text]) if text in REASONS else text


def _dataset_picker() -> object | None:
    engine = state.engine()
    stored = list_datasets(engine, "golden")
    options = {f"{d['name']} · {d['n_items']} · {d['content_hash'][:8]} (#{d['id']})": d["id"] for d in stored}
    # the form starts from the dataset of the run shown (ui.run_view), not from the newest dataset
    choice = st.selectbox(tr("Золотой набор", "Golden dataset"), list(options), key="t1_dataset",
                          index=run_view.default_dataset_index("tier1", stored)) if options else None
    upload = st.file_uploader(tr("…или загрузите файл (JSON/JSONL/CSV)", "…or upload a file (JSON/JSONL/CSV)"),
                              type=["json", "jsonl", "csv"], key="t1_upload")
    if upload is not None:
        fname, data = uploads.read(upload)  # from memory: the client's name is a label, never a path
        try:
            ds = load_file(fname, "golden", name=Path(fname).stem, data=data)
        except DatasetError as exc:
            st.error(tr("Файл не принят: ", "File rejected: ") + fname
                     + (f", {tr('строка', 'row')} {exc.row}" if exc.row else "")
                     + (f", {tr('поле', 'field')} '{exc.field}'" if exc.field else "") + f": {exc.message}")
            return None
        ds = store(engine, ds)
        st.success(tr(f"Набор «{ds.name}» загружен: {len(ds)} вопросов.", f"Dataset '{ds.name}' loaded: {len(ds)} questions."))
        return ds.id
    return options.get(choice) if choice else None


def _filter_labels() -> dict:
    """Labels are computed during the script run (format_func must not read the session state later)."""
    return {
    "all": tr("все вопросы", "all questions"),
    "fail1": tr("провалы: релевантный не на 1-м месте", "failures: relevant not at rank 1"),
    "failk": tr("провалы: релевантного нет в top-k", "failures: no relevant in top k"),
}


def _render_form() -> tuple[Any, object | None, bool]:
    """The run form at the top: Run is visible without scrolling; the widgets come from Tier 1's parameter table
    (plan_parameters.TIER1): bounds, choices, labels, help."""
    engine = state.engine()
    with st.container(border=True):
        st.markdown(f"**{tr('Новый запуск', 'New run')}**")
        chosen = st.session_state.get("t1_retriever", "vector")
        hnsw_on = bool(st.session_state.get("t1_hnsw")) and chosen != "fts"
        emb_options = list(dict.fromkeys([tier1.default_embedder_name(engine), state.current_embedder_name(), *BUILTIN_EMBEDDERS]))
        off = {"embedder": chosen == "fts", "use_index": chosen == "fts", "repeats": not hnsw_on, "ef_search": not hnsw_on,
               "hnsw_m": not hnsw_on, "hnsw_ef_construction": not hnsw_on, "rrf_k": chosen != "hybrid"}
        custom = {
            "dataset": lambda p, key: _dataset_picker(),
            "embedder": lambda p, key: st.selectbox(tr("Эмбеддер", "Embedder"), emb_options, key=key, disabled=off["embedder"]),
        }
        FIRST = ("dataset", "retriever", "embedder", "k")
        SECOND = ("use_index", "repeats", "cutoffs")
        form = param_form.render("tier1", "t1", only=FIRST, custom=custom, disabled=off,
                                 containers=st.columns([3, 2, 2, 1]))
        dataset_id = form.values.get("dataset")
        g1, g2, g3, g4 = st.columns([3, 2, 2, 3])
        form |= param_form.render("tier1", "t1", only=SECOND, disabled=off, containers=(g1, g2, g3))
        form |= param_form.render("tier1", "t1", skip=(*FIRST, *SECOND), disabled=off)
        run_clicked = auth.button("run", g4, tr("Запустить", "Run"), type="primary", key="t1_run",
                                  disabled=dataset_id is None or bool(form.errors), icon=":material/play_arrow:",
                                  use_container_width=True)
        if dataset_id is None:
            empty_state("Золотого набора нет: загрузите демо-данные или файл набора выше.",
                        "No golden dataset: load the demo data or upload a dataset file above.", demo=True)
    return form, dataset_id, run_clicked


def _start_run(form: Any, dataset_id: object) -> None:
    engine = state.engine()
    params = {**form.values, "dataset": int(dataset_id)}
    if params["retriever"] == "fts":
        params.update(embedder=None, use_index=False)
    jobs.start(lambda: tier1.build_plan(engine, params), "t1_run_id")


def _render_run() -> runs.Run:
    """The run shown (ui.run_view): the one just started, else the link's, else the latest Tier 1 run — on its own
    dataset whatever the form picks (a newly generated set never hides the golden set's runs)."""
    run = run_view.run_section("tier1", "t1_run_id", caption=False, empty=(
        "Запусков Tier 1 ещё нет: выберите набор и нажмите «Запустить» вверху страницы.",
        "No Tier 1 run yet: pick a dataset and press Run at the top of the page."))
    run_view.scope_to_run("tier1", run.id, ("t1_pick", "t1_questions", "t1_thr", "t1_cmp_sel", "t1_cmp_added"))
    if run.status not in runs.FINISHED:
        st.warning(tr(f"Запуск #{run.id}: {jobs.state_label(run.status)}. {run.error or ''}",
                      f"Run #{run.id}: {jobs.state_label(run.status)}. {run.error or ''}"))
        st.stop()
    return run


def _run_items(run: runs.Run) -> pd.DataFrame:
    run_id = run.id
    items = runs.run_items(state.engine(), int(run_id))
    missing_fields = tier1.missing_item_fields(items)
    if missing_fields:
        st.warning(tr(
            f"Записи запуска #{run_id} неполны (нет полей: {', '.join(missing_fields)}); детализация по вопросам недоступна.",
            f"The items of run #{run_id} are incomplete (missing: {', '.join(missing_fields)}); per-question details are unavailable.",
        ))
        items = items.iloc[0:0]
    return items


def _render_run_head(run: runs.Run, m: dict) -> None:
    run_verdict(run)
    st.subheader(describe.config_words(run, lang()) + f" · {run.dataset_name} · #{run.id}")
    jobs.stale_dataset_warning(run)
    ne = m.get("n_evaluated") or {}
    st.caption(
        tr(f"Вопросов: {fmt_count(run.n_items_total)}; оценено: {fmt_count(ne.get('questions'))}; "
           f"без ответа (исключены): {fmt_count(m.get('n_unanswerable'))}.",
           f"Questions: {fmt_count(run.n_items_total)}; evaluated: {fmt_count(ne.get('questions'))}; "
           f"unanswerable (excluded): {fmt_count(m.get('n_unanswerable'))}.")
    )
    for level in ("chunk", "url"):
        st.markdown(f"**{tr(*LEVEL_NAMES[level])}**")
        metric_cards({key: m.get(level, {}).get(key) for key in SUMMARY_KEYS if key in m.get(level, {})})
    _render_consistency(m)


def _render_consistency(m: dict) -> None:
    rc = m.get("retrieval_consistency") or {}
    if rc.get("value") is not None:
        st.info(f"{metric_label('retrieval_consistency')} = {fmt('retrieval_consistency', rc['value'])} "
                f"({_reason(rc.get('reason'))}, {tr('повторов', 'repeats')}: {fmt_count(rc.get('repeats'))})")
    else:
        st.caption(metric_label("retrieval_consistency") + ": " + tr("неприменимо — ", "not applicable — ") + _reason(rc.get("reason")))
    if m.get("hnsw"):  # recall@k against exact search (catalog label, share), then the index parameters in words
        st.info("HNSW: " + ", ".join(
            f"{metric_label(a)} = {fmt(a, b)}" if a.endswith("_vs_exact")
            else f"{describe.param_label('hnsw_' + a if a in ('m', 'ef_construction') else a, lang())} = {b}"
            for a, b in m["hnsw"].items()))


def _render_page() -> None:
    form, dataset_id, run_clicked = _render_form()
    if run_clicked and dataset_id is not None and not form.errors:
        _start_run(form, dataset_id)
    run = _render_run()
    items = _run_items(run)
    m = run.metrics or {}
    _render_run_head(run, m)
    view = views.tabs("t1_view", {
        "summary": ("Сводка", "Summary"), "questions": ("По вопросам", "Per question"),
        "sections": ("Провалы по разделам", "Failures by section"), "compare": ("Сравнение", "Comparison"),
        "threshold": ("Порог «нет ответа»", "No-answer threshold"),
    })
    tab_sum, tab_q, tab_fail, tab_cmp, tab_thr = (view[n] for n in ("summary", "questions", "sections", "compare", "threshold"))
    with tab_sum:
        _render_summary(run, m)
    table = tier1.run_table(items, failure_rank=None) if not items.empty else None
    with tab_q:
        _render_questions(run, items, table)
    with tab_fail:
        if table is not None:
            _render_failures(run, items)
    with tab_cmp:
        _render_compare(run)
    with tab_thr:
        if table is not None:
            _render_threshold(run, table)


def _render_summary(run: runs.Run, m: dict) -> None:
    level_names = {lvl: tr(*LEVEL_NAMES[lvl]) for lvl in ("chunk", "url")}
    plotly_chart(charts.metrics_by_level({lvl: m.get(lvl, {}) for lvl in ("chunk", "url")}, SUMMARY_KEYS,
                                            level_names=level_names, lang=lang()), key="t1_levels")
    summary = pd.concat([tier1.comparison_frame([run], level=lvl) for lvl in ("chunk", "url")], ignore_index=True)
    summary["config"] = describe.config_words(run, lang())
    summary["level"] = summary["level"].map(level_names)
    summary.insert(summary.columns.get_loc("metric"), "metric_name", summary["metric"].map(metric_label))
    table_with_download(summary, f"tier1_run{run.id}_metrics", key="t1_summary",
                        labels={"metric_name": ("Метрика", "Metric"), "metric": ("Ключ", "Key")})


def _render_questions(run: runs.Run, items: pd.DataFrame, table: pd.DataFrame | None) -> None:
    if table is None:
        empty_state("В запуске нет записей.", "The run has no items.")
        return
    filter_labels = _filter_labels()
    run_view.bind("t1_filter", "filter", valid=filter_labels)
    mode = st.radio(tr("Показывать", "Show"), ["all", "fail1", "failk"], horizontal=True, key="t1_filter",
                    format_func=filter_labels.get)
    shown = tier1.run_table(items, failure_rank=1 if mode == "fail1" else None)
    if mode != "all":
        shown = shown[shown["failed"]]
    evaluated = table[table["relevant_chunk_ids"] != ""]
    ranks = [None if pd.isna(r) else int(r) for r in evaluated["first_relevant_rank"]]
    depth = (run.params or {}).get("retrieved_depth") or (run.params or {}).get("k", 10)
    plotly_chart(charts.first_rank_histogram(ranks, k=int(depth), not_found_label=tr("не найден", "not found"),
                                                x_title=tr("Ранг первого релевантного чанка", "Rank of the first relevant chunk"),
                                                y_title=tr("Вопросов", "Questions")), key="t1_ranks")
    table_with_download(shown, f"tier1_run{run.id}_questions", key="t1_questions")
    if not shown.empty:
        _render_question_detail(items, shown)


def _render_question_detail(items: pd.DataFrame, shown: pd.DataFrame) -> None:
    pick = st.selectbox(tr("Подробнее о вопросе", "Question details"), list(shown["item_key"]), key="t1_pick",
                        format_func=lambda key: f"{key}: {shown.set_index('item_key').loc[key, 'question']}")
    texts = read_chunks(state.engine()).set_index("id")["text"].to_dict()
    row = items.set_index("item_key").loc[pick]
    rel = set(row["relevant_chunk_ids"] or [])
    st.markdown(f"**{tr('Найдено', 'Retrieved')}**")
    for rank, (cid, url, dist) in enumerate(zip(row["retrieved_ids"], row["retrieved_urls"], row["retrieved_distances"], strict=False), 1):
        mark = "✅" if cid in rel else "▫️"
        with st.expander(f"{mark} #{rank} · {tr('чанк', 'chunk')} {cid} · {tr('расстояние', 'distance')} {dist:.3f} · "
                         f"{untrusted.md(url)}"):
            untrusted.text(texts.get(cid, ""))
    st.markdown(f"**{tr('Релевантные чанки', 'Relevant chunks')}**")
    for cid in row["relevant_chunk_ids"] or []:
        with st.expander(f"{tr('чанк', 'chunk')} {cid}"):
            untrusted.text(texts.get(cid, tr("(чанка нет в базе)", "(chunk not in the database)")))


def _render_failures(run: runs.Run, items: pd.DataFrame) -> None:
    filter_labels = _filter_labels()
    failure_labels = {1: filter_labels["fail1"], None: filter_labels["failk"]}
    run_view.bind("t1_fail_rank", "fail_rank", parse=run_view.parse_optional_int, valid=(1, None))
    frank = st.radio(tr("Провал — это", "A failure is"), [1, None], horizontal=True, key="t1_fail_rank",
                     format_func=failure_labels.get)
    by_section = tier1.failures_by_section(items, failure_rank=frank)
    plotly_chart(charts.failures_by_section(by_section[by_section["failures"] > 0],
                                               x_title=tr("Провалов", "Failures")), key="t1_sections")
    table_with_download(by_section, f"tier1_run{run.id}_failures_by_section", key="t1_sections_tbl")


def _render_compare(run: runs.Run) -> None:
    engine = state.engine()
    retriever_labels = {r: tr(*names) for r, names in RETRIEVER_NAMES.items()}
    st.caption(tr(
        "Сравните поисковики и эмбеддеры на одном наборе: выберите конфигурации и запустите, или отметьте прежние запуски.",
        "Compare retrievers and embedders on one dataset: pick configurations and run them, or tick earlier runs.",
    ))
    configs = [("vector", e) for e in BUILTIN_EMBEDDERS] + [("fts", None), ("hybrid", tier1.default_embedder_name(engine))]
    chosen = st.multiselect(tr("Конфигурации", "Configurations"), configs, default=[], key="t1_cmp_cfg", placeholder=tr("Выберите…", "Choose…"),
                            format_func=lambda c: retriever_labels[c[0]] + (f" · {c[1]}" if c[1] else ""))
    if auth.button("run", st, tr("Запустить сравнение", "Run comparison"), key="t1_cmp_run", disabled=not chosen or not run.dataset_id,
                 type="primary"):
        _start_comparison(run, chosen)
    by_id, cmp_ids = _compare_selection(run)
    level_labels = {lvl: tr(*names) for lvl, names in LEVEL_NAMES.items()}
    run_labels = {i: describe.run_option(r, lang()) for i, r in by_id.items()}  # resolved now: format_func runs later too
    picked = st.multiselect(tr("Запуски на этом наборе", "Runs on this dataset"), list(by_id), key="t1_cmp_runs", placeholder=tr("Выберите…", "Choose…"),
                            format_func=run_labels.get, on_change=_keep_selection)
    waiting = [i for i in cmp_ids if i not in by_id]
    if waiting:
        st.caption(tr(f"Ещё выполняются: {', '.join(f'#{i}' for i in waiting)} — добавятся сами, когда завершатся.",
                      f"Still running: {', '.join(f'#{i}' for i in waiting)} — they join when they finish."))
    run_view.bind("t1_cmp_level", "level", valid=level_labels)
    level = st.radio(tr("Уровень", "Level"), ["chunk", "url"], horizontal=True, key="t1_cmp_level", format_func=level_labels.get)
    sel = [by_id[i] for i in picked]
    if sel:
        _render_comparison(run, sel, level)


def _start_comparison(run: runs.Run, chosen: list) -> None:
    engine = state.engine()
    started = []
    for n, (retr, emb_name) in enumerate(chosen):
        cfg = {"dataset": int(run.dataset_id), "retriever": retr, "embedder": emb_name,
               "k": int((run.params or {}).get("k", 10))}
        new_id = jobs.start(lambda cfg=cfg: tier1.build_plan(engine, cfg), f"t1_cmp_job{n}")
        if new_id is not None:
            started.append(new_id)
    st.session_state["t1_cmp_ids"] = started
    st.session_state["t1_cmp_sel"] = [run.id]  # the comparison shows this run and every run it started
    st.session_state["t1_cmp_added"] = []


def _compare_selection(run: runs.Run) -> tuple[dict, list]:
    """The runs of this dataset to compare: by default every finished one, or the link's (``?cmp=3,5``); every run
    the comparison started joins as soon as it finishes."""
    cmp_ids = list(st.session_state.get("t1_cmp_ids", []))
    for n in range(len(cmp_ids)):
        jobs.job_panel(f"t1_cmp_job{n}")
    cmp_ids = [i for i in (jobs.run_id_of(f"t1_cmp_job{n}") for n in range(len(cmp_ids))) if i is not None]  # once built
    same = runs.list_runs(state.engine(), tier="tier1", status=runs.FINISHED, dataset_hash=run.dataset_hash, limit=50)
    by_id = {r.id: r for r in same}
    # the selection lives under its own key (the widget's state is rebuilt whenever its options change): by
    # default every finished run of this dataset, or the link's (``?cmp=3,5``); every run the comparison
    # started joins it as soon as it finishes
    if "t1_cmp_sel" not in st.session_state:  # a link's selection once per session, then all runs of the dataset
        from_link = None if st.session_state.get("t1_cmp_from_link") else run_view.url_ints("cmp")
        st.session_state["t1_cmp_from_link"] = True
        st.session_state["t1_cmp_sel"] = from_link or list(by_id)
    selection = [i for i in st.session_state["t1_cmp_sel"] if i in by_id]
    added = set(st.session_state.get("t1_cmp_added", []))
    fresh = [i for i in cmp_ids if i in by_id and i not in added]
    if fresh:
        selection = list(dict.fromkeys([*selection, *fresh]))
        st.session_state["t1_cmp_added"] = [*added, *fresh]
    st.session_state["t1_cmp_sel"] = selection
    st.session_state["t1_cmp_runs"] = selection
    run_view.set_url("cmp", selection)
    return by_id, cmp_ids


def _render_comparison(run: runs.Run, sel: list[runs.Run], level: str) -> None:
    cmp_df = tier1.comparison_frame(sel, level=level, keys=("hit_rate@1", "hit_rate@5", "mrr", "ndcg@10", "map"))
    words = {r.id: f"{describe.config_words(r, lang())} · #{r.id}" for r in sel}
    cmp_df["config"] = cmp_df["run_id"].map(words)
    plotly_chart(charts.comparison_bars(cmp_df, lang=lang()), key="t1_cmp_chart")
    best = runs.best_by(sel, f"{level}.mrr")  # from the runs' stored aggregates, by the catalog's direction
    b1, b2 = st.columns([3, 1])
    if best is not None:
        b1.caption(tr(f"Лучший по MRR: {words[best.id]} ({fmt('mrr', runs.flatten_metrics(best.metrics)[f'{level}.mrr']['value'])})",
                      f"Best by MRR: {words[best.id]} ({fmt('mrr', runs.flatten_metrics(best.metrics)[f'{level}.mrr']['value'])})"))
    if best is not None and best.id != run.id:
        b2.button(tr("Открыть лучший запуск", "Open the best run"), key="t1_open_best", on_click=_open_run,
                  args=(best.id,))
    wide = cmp_df.pivot_table(index="config", columns="metric", values="value", sort=False).reset_index()
    table_with_download(wide, f"tier1_comparison_{level}", key="t1_cmp_tbl")
    if len(sel) == 2:
        _render_paired_test(sel, level)


def _render_paired_test(sel: list[runs.Run], level: str) -> None:
    metric = st.selectbox(tr("Метрика для парного теста", "Metric for the paired test"),
                          ["mrr", "hit_rate@1", "hit_rate@5", "ndcg@10"], key="t1_cmp_metric",
                          format_func={k: metric_label(k) for k in ("mrr", "hit_rate@1", "hit_rate@5", "ndcg@10")}.get)
    with state.user_errors("Сравнение не удалось", "The comparison failed"):
        cmp = runs.compare_runs(state.engine(), sel[0].id, sel[1].id)
        row = cmp.metrics.set_index("metric").loc[f"{level}.{metric}"]
        if row["n_pairs"]:
            verdict = (tr("разница значима", "the difference is significant") if row["significant"]
                       else tr("значимой разницы нет", "no significant difference"))
            st.markdown(f"Δ {metric_label(metric)} = **{row['paired_mean_diff']:+.3f}** "
                        f"[{row['ci_low']:+.3f}; {row['ci_high']:+.3f}], "
                        f"p ({tr('перестановочный тест', 'permutation test')}) = {row['p_value']:.4f}, "
                        f"n = {int(row['n_pairs'])} → {verdict}")


def _render_threshold(run: runs.Run, table: pd.DataFrame) -> None:
    ans = [float(x) for x in table.loc[table["answerable"], "top_distance"].dropna()]
    una = [float(x) for x in table.loc[~table["answerable"], "top_distance"].dropna()]
    if (run.params or {}).get("retriever") != "vector":
        st.caption(tr("Для FTS и гибрида «расстояние» — это 1/(1+ts_rank) и нормированный RRF, а не косинус.",
                      "For FTS and hybrid the \"distance\" is 1/(1+ts_rank) and the normalised RRF score, not cosine."))
    if not una:
        empty_state("В наборе нет вопросов без ответа — порог не выбрать.", "The dataset has no unanswerable question — no threshold to choose.")
    if not (ans or una):
        return
    lo, hi = min([*ans, *una]), max([*ans, *una])
    thr = st.slider(tr("Порог расстояния", "Distance threshold"), float(lo), float(hi) if hi > lo else float(lo) + 0.01,
                    float((lo + hi) / 2), key="t1_thr")
    names = (tr("есть ответ", "answerable"), tr("нет ответа", "unanswerable"))
    plotly_chart(charts.threshold_chart(ans, una, threshold=thr, names=names,
                                           x_title=tr("Расстояние лучшего результата", "Top-hit distance")), key="t1_thr_hist")
    kept = sum(1 for x in ans if x <= thr) / len(ans) if ans else None
    rejected = sum(1 for x in una if x > thr) / len(una) if una else None
    c1, c2 = st.columns(2)
    c1.metric(tr("Отвечаем на вопросы с ответом", "Answerable questions kept"), "—" if kept is None else f"{kept:.1%}")
    c2.metric(tr("Отклоняем вопросы без ответа", "Unanswerable questions rejected"), "—" if rejected is None else f"{rejected:.1%}")
    plotly_chart(charts.threshold_tradeoff(ans, una, names=(tr("доля сохранённых отвечаемых", "answerable kept"),
                                                                  tr("доля отклонённых без ответа", "unanswerable rejected")),
                                              x_title=tr("Порог", "Threshold")), key="t1_thr_curve")
    unans = table.loc[~table["answerable"], ["item_key", "question", "top_distance", "retrieved"]]
    table_with_download(unans, f"tier1_run{run.id}_unanswerable", key="t1_unans")


init_page_state()
_render_page()
