"""Tier 0 · Embedding space: geometry metrics and the interactive UMAP explorer (thin page)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from voproshalych_eval.bilingual import Text
from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS
from voproshalych_eval.engine import executor, runs
from voproshalych_eval.metrics import catalog
from voproshalych_eval.plots import embedding_space as charts
from voproshalych_eval.tiers import projection as proj
from voproshalych_eval.tiers import tier0
from voproshalych_eval.ui import auth, jobs, map_view, run_view, state, tables, untrusted
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt, fmt_count, fmt_seconds, lang, metric_label, tr
from voproshalych_eval.ui.widgets import (
    TIER_COLORS,
    csv_download,
    download_buttons,
    json_download,
    page_header,
)

RESULT, PROJ, PROJ_RUN, RUN_KEY = "tier0_result", "tier0_projection", "tier0_projection_run", "t0_run_id"
SOURCE_LABELS = {
    "chunks": ("Чанки базы знаний", "Knowledge-base chunks"),
    "questions": ("Вопросы пользователей (журнал)", "User questions (log)"),
    "both": ("Чанки + вопросы в одном пространстве", "Chunks + questions in one space"),
    "golden": ("Вопросы золотого набора", "Golden-set questions"),
}
COLOR_LABELS = {
    "section": ("Раздел (страница)", "Section (page)"),
    "url": ("URL", "URL"),
    "source_type": ("Тип источника", "Source type"),
    "kind": ("Вид точки (чанк / вопрос)", "Point kind (chunk / question)"),
    "cluster": ("Кластер KMeans", "KMeans cluster"),
    "answered": ("Есть ответ", "Answered"),
    "score": ("Оценка пользователя", "User score"),
    "outlier_score": ("Оценка выброса", "Outlier score"),
    "period": ("Период (месяц)", "Period (month)"),
    "kb_page": ("Страница базы (ближайший чанк)", "KB page (nearest chunk)"),
}
#: headers of this page's tables that are neither metrics nor common columns
TABLE_LABELS = {"outlier_score": COLOR_LABELS["outlier_score"], "score": COLOR_LABELS["outlier_score"]}
#: the outlier score is a mean distance to the k neighbours: written as the distance metrics are
OUTLIER_FORMAT = {"outlier_score": "avg_nn_distance", "score": "avg_nn_distance"}
MAP_TEXTS = {
    "other": ("прочие", "other"),
    "outside": ("за рамкой (прижаты к краю)", "outside the frame (clipped)"),
    "matches": ("найдено", "matches"),
    "picked": ("выбрано в таблице", "picked in a table"),
    "shown": ("показано {shown} из {total} точек (случайная выборка)", "shown {shown} of {total} points (random sample)"),
}


def label(key: str) -> str:
    return metric_label(key)


def unit(key: str, metric: str) -> str:
    """Which distance a number is in (every number on this page names it)."""
    dist = tr("косинусное", "cosine") if metric == "cosine" else tr("евклидово", "Euclidean")
    if key in tier0.DISTANCE_METRICS:
        return f"{dist} " + tr("расстояние", "distance") if key != "density_score" else "1 / " + tr(f"{dist} расст.", f"{dist} dist.")
    if key in tier0.EUCLIDEAN_ALWAYS:
        return tr("евклидово, всегда", "Euclidean, always")
    if key in ("mean_pairwise_cosine_similarity", "near_duplicate_pairs"):
        return tr("косинусное сходство", "cosine similarity")
    return ""



def _how_to_read() -> str:
    """The page's "how to read" text."""
    return tr(
    r"""
**Что это.** Геометрия векторного пространства без разметки («Научное описание метрик бенчмарков», раздел 3). $d$ — выбранное расстояние:
косинусное $d = 1 - \cos(x, y) \in [0, 2]$ или евклидово $\lVert x - y \rVert_2$. Соседи — $k$ ближайших
других точек (сама точка исключена).

* `avg_nn_distance` $= \frac{1}{Nk}\sum_i\sum_{j\le k} d_{i,j}$ — ниже → локально компактнее; `std_nn_distance` выше → неоднородная плотность.
* `density_score` $= 1/(\text{avg\_nn\_distance}+\varepsilon)$ — выше → плотнее.
* `avg/max_spread`, `spread_std` — евклидово расстояние до центроида $\mu$ (всегда евклидово); `max_spread` помогает найти выбросы.
* `effective_dimensionality` $= \min\{m: \sum_{i\le m}\lambda_i / \sum\lambda_i \ge 0.95\}$ — слишком низкая → схлопывание пространства.
* `avg/std/min/max_pairwise_distance` — по всем $N(N-1)/2$ парам (точно, блоками, без матрицы $N\times N$); выше порога — оценка по выборке с 95% ДИ.
* Анизотропия: средний косинус пар близок к 1 или доля 1-й компоненты велика → векторы смотрят в одну сторону, расстояния «сжаты».
* Почти-дубликаты: пары с $\cos \ge 0.95$. Выброс: среднее расстояние до $k$ соседей (больше → дальше от всех).
* Сравнивайте числа только при одной модели, одной метрике и одном $k$.

**Проекция UMAP** — картинка, не метрика. Trustworthiness@10 $\in[0,1]$ показывает, насколько соседи на
картинке — настоящие соседи (1 — ложных соседей нет; ниже ~0.8 — не доверяйте близости точек на рисунке).
""",
    r"""
**What this is.** Label-free geometry of the vector space (the benchmark methodology, section 3). $d$ is the chosen distance:
cosine $d = 1 - \cos(x, y) \in [0, 2]$ or Euclidean $\lVert x - y \rVert_2$. Neighbours are the $k$ nearest
other points (self excluded).

* `avg_nn_distance` $= \frac{1}{Nk}\sum_i\sum_{j\le k} d_{i,j}$ — lower → locally more compact; higher `std_nn_distance` → uneven density.
* `density_score` $= 1/(\text{avg\_nn\_distance}+\varepsilon)$ — higher → denser.
* `avg/max_spread`, `spread_std` — Euclidean distance to the centroid $\mu$ (always Euclidean); `max_spread` points at outliers.
* `effective_dimensionality` $= \min\{m: \sum_{i\le m}\lambda_i / \sum\lambda_i \ge 0.95\}$ — too low → the space collapses.
* `avg/std/min/max_pairwise_distance` — over all $N(N-1)/2$ pairs (exact, in blocks, no $N\times N$ matrix); above a size limit, a sampled estimate with a 95% CI.
* Anisotropy: a mean pairwise cosine near 1 or a large top-1 variance share → vectors point one way and distances are compressed.
* Near duplicates: pairs with $\cos \ge 0.95$. Outlier score: mean distance to the $k$ neighbours (higher → farther from everything).
* Compare numbers only for the same model, distance and $k$.

**The UMAP projection** is a picture, not a metric. Trustworthiness@10 $\in[0,1]$ says how far neighbours in
the picture are real neighbours (1 — no false neighbours; below ~0.8 do not trust closeness in the picture).
""",
    )


def init_page_state() -> None:
    """The page header; the projection's imports warm up in the background."""
    page_header(
        tr("Пространство эмбеддингов (Tier 0)", "Embedding space (Tier 0)"),
        tr(
            "Геометрия векторов чанков и вопросов: плотность, разброс, размерность, выбросы — и карта UMAP.",
            "Geometry of chunk and question vectors: density, spread, dimensionality, outliers — and a UMAP map.",
        ),
        _how_to_read(),
    )
    proj.prewarm_in_background()


# ----------------------------------------------------------------------------------------- run form


def _render_form() -> dict:
    """The run form at the top of the main area: both buttons are visible without scrolling."""
    with st.container(border=True):
        left, right = st.columns([3, 2], gap="large")
    with left:
        form = _render_vectors_form()
    with right:
        form.update(_render_projection_form())
    return form


def _embedder_select(col: Any) -> str:
    emb_options = [tier0.STORED] + [n for n in BUILTIN_EMBEDDERS]
    current = state.current_embedder_name()
    if current not in emb_options:
        emb_options.append(current)
    embedder = col.selectbox(
        tr("Эмбеддер", "Embedder"), emb_options, key="t0_embedder",
        format_func={n: tr("сохранённые векторы (модель базы)", "stored vectors (database model)") if n == tier0.STORED
                     else n for n in emb_options}.get,
        help=tr("Чанки и вопросы в одном пространстве считаются одной моделью; если сохранённые векторы от другой "
                "модели, тексты переэмбеддятся (через кэш).",
                "Chunks and questions in one space use one model; when the stored vectors come from another model, "
                "texts are re-embedded (through the cache)."),
    )
    return str(embedder)


def _render_vectors_form() -> dict:
    st.markdown(f"**{tr('Векторы и метрики', 'Vectors and metrics')}**")
    a1, a2 = st.columns(2)
    source = a1.selectbox(tr("Векторы", "Vectors"), list(SOURCE_LABELS), format_func={s: tr(*v) for s, v in SOURCE_LABELS.items()}.get,
                          key="t0_source")
    embedder = _embedder_select(a2)
    a3, a4, a5 = st.columns([2, 1, 2])
    metric = a3.radio(tr("Расстояние", "Distance"), ["cosine", "euclidean"], horizontal=True, key="t0_metric",
                      format_func={"cosine": tr("косинусное", "cosine"), "euclidean": tr("евклидово", "Euclidean")}.get)
    k = a4.number_input(tr("k соседей", "k neighbours"), min_value=1, max_value=100, value=5, key="t0_k")
    n_clusters = a5.slider(tr("Кластеров KMeans", "KMeans clusters"), 2, 40, 8, key="t0_clusters")
    with st.expander(tr("Фильтры", "Filters")):
        f1, f2 = st.columns(2)
        url_contains = f1.text_input(tr("URL содержит", "URL contains"), key="t0_f_url")
        text_contains = f2.text_input(tr("Текст содержит", "Text contains"), key="t0_f_text")
        answered = f1.selectbox(tr("Вопросы с ответом", "Answered questions"), ["any", "yes", "no"], key="t0_f_answered",
                                format_func={"any": tr("все", "all"), "yes": tr("с ответом", "answered"),
                                             "no": tr("без ответа", "unanswered")}.get)
        dates = f2.text_input(tr("Период вопросов (ГГГГ-ММ-ДД..ГГГГ-ММ-ДД)", "Question period (YYYY-MM-DD..YYYY-MM-DD)"),
                              key="t0_f_dates")
    run_clicked = auth.button("run", st, tr("Запустить расчёт метрик", "Run metrics"), type="primary", key="t0_run",
                            icon=":material/play_arrow:", width="stretch")
    return {"source": source, "embedder": embedder, "metric": metric, "k": k, "n_clusters": n_clusters,
            "url_contains": url_contains, "text_contains": text_contains, "answered": answered, "dates": dates,
            "run_clicked": run_clicked}


def _render_projection_form() -> dict:
    st.markdown(f"**{tr('Проекция UMAP', 'UMAP projection')}**")
    b1, b2 = st.columns(2)
    n_components = b1.radio(tr("Размерность", "Dimensions"), [2, 3], horizontal=True, key="t0_dim",
                            format_func=lambda d: f"{d}D")
    seed = b2.number_input("seed", min_value=0, max_value=1_000_000, value=42, key="t0_seed")
    b3, b4 = st.columns(2)
    n_neighbors = b3.slider("n_neighbors", 2, 100, 15, key="t0_nn")
    min_dist = b4.slider("min_dist", 0.0, 0.99, 0.1, step=0.01, key="t0_min_dist")
    limit = st.number_input(tr("Макс. точек (иначе подвыборка)", "Max points (subsample above)"), min_value=50,
                            max_value=200_000, value=proj.DEFAULT_LIMIT, step=500, key="t0_limit")
    centre = st.checkbox(
        tr("Убрать разрыв модальностей (центрировать чанки и вопросы по отдельности)",
           "Remove the modality gap (centre chunks and questions separately)"), value=True, key="t0_centre",
        help=tr("Вопросы и чанки одной модели лежат в двух сдвинутых областях пространства: на общей карте все чанки "
                "собираются в один кластер вдали от вопросов. Центрирование каждой группы перед UMAP убирает этот "
                "сдвиг, и вопросы ложатся рядом со страницами, о которых спрашивают. Действует, когда на карте "
                "несколько видов точек.",
                "Questions and chunks of one model sit in two offset regions: on a joint map every chunk collapses "
                "into one cluster away from the questions. Centring each group before UMAP removes the offset, so "
                "questions land beside the pages they ask about. Applies when the map holds several kinds of points."))
    proj_clicked = auth.button("run", st, tr("Построить проекцию", "Build projection"), key="t0_project",
                             icon=":material/scatter_plot:", width="stretch")
    return {"n_components": n_components, "seed": seed, "n_neighbors": n_neighbors, "min_dist": min_dist,
            "limit": limit, "centre": centre, "proj_clicked": proj_clicked}


def current_filters(form: dict) -> dict:
    url_contains, text_contains, answered, dates = (form[k] for k in ("url_contains", "text_contains", "answered", "dates"))
    f: dict = {}
    if url_contains.strip():
        f["url_contains"] = url_contains.strip()
    if text_contains.strip():
        f["text_contains"] = text_contains.strip()
    if answered != "any":
        f["answered"] = answered == "yes"
    if ".." in dates:
        lo, hi = (p.strip() for p in dates.split("..", 1))
        if lo:
            f["date_from"] = lo
        if hi:
            f["date_to"] = hi
    return f


def request(form: dict) -> dict:
    return {"source": form["source"], "embedder": form["embedder"], "metric": form["metric"], "k": int(form["k"]),
            "n_clusters": int(form["n_clusters"]), "filters": current_filters(form)}


def start_run(form: dict) -> None:
    """Tier 0 runs as a background job (its steps are the run's items); the page shows it when done."""
    req = request(form)
    params = {**req, "embedder": None if req["embedder"] == tier0.STORED else req["embedder"]}
    if jobs.start(lambda: tier0.build_plan(state.engine(), params), RUN_KEY) is not None:
        st.session_state[f"{RUN_KEY}_request"] = req
        st.session_state.pop(RESULT, None)
        map_view.forget(PROJ)


def run_result(run: runs.Run) -> dict:
    """The picked run as the page reads it (kept per run in the session); the vectors and kNN for the map
    are the in-memory ones of the process that ran it, when this process did."""
    res = st.session_state.get(RESULT)
    if res is not None and res.get("run_id") == run.id:
        return res
    job = executor.get_job(run.id)
    res = tier0.result(run, runs.item_records(state.engine(), run.id), job.plan.outputs if job is not None else None)
    res["request"] = st.session_state.get(f"{RUN_KEY}_request") if run.id == st.session_state.get(RUN_KEY) else None
    st.session_state[RESULT] = res
    if (st.session_state.get(PROJ_RUN)) != run.id:  # a map belongs to the vectors of one run
        map_view.forget(PROJ)
    return res

# ----------------------------------------------------------------------------------------- actions


def _render_run() -> runs.Run:
    """The run shown (ui.run_view): the one just made, else the link's, else the latest Tier 0 run; while it runs
    its progress is shown and the page stops; the results come when it finishes."""
    picked_run = run_view.run_section("tier0", RUN_KEY, demo=True, empty=(
        "Запусков ещё нет — выберите векторы в форме вверху и нажмите «Запустить расчёт метрик», затем "
        "«Построить проекцию». Нет данных — загрузите демо.",
        "No runs yet — choose the vectors in the form at the top and press “Run metrics”, then “Build projection”. "
        "No data yet — load the demo."))
    # selections belong to one run: points picked on the map or in the tables of another run are forgotten
    run_view.scope_to_run("tier0", picked_run.id, ("t0_scatter", "t0_points", "t0_outliers", "t0_sel"))
    if picked_run.status in ("failed", "cancelled") and picked_run.error:
        st.error(tr(f"Tier 0 (запуск #{picked_run.id}) не выполнен: ", f"Tier 0 (run #{picked_run.id}) did not finish: ")
                 + str(picked_run.error))
    return picked_run


def _render_reload(res: dict, picked_run: runs.Run) -> None:
    if res.get("vector_set") is None:
        st.info(tr("Векторы этого запуска не в памяти (запуск сделан в другом сеансе): карта и гистограмма соседей "
                   "появятся, когда они будут загружены заново по параметрам запуска.",
                   "This run's vectors are not in memory (it ran in another session): the map and the neighbour "
                   "histogram appear once they are loaded again from the run's parameters."))
        if st.button(tr("Загрузить векторы запуска", "Load the run's vectors"), key="t0_reload", icon=":material/refresh:"):
            with state.user_errors("Не удалось загрузить векторы", "Could not load the vectors"), \
                    st.spinner(tr("Загружаю векторы и соседей…", "Loading the vectors and neighbours…")):
                res.update(tier0.reload_outputs(state.engine(), picked_run))


def _build_projection(res: dict, picked_run: runs.Run, form: dict) -> None:
    n_components, n_neighbors, min_dist, seed, limit, centre = (
        form[k] for k in ("n_components", "n_neighbors", "min_dist", "seed", "limit", "centre"))
    with (
        state.user_errors("Не удалось выполнить Tier 0", "Tier 0 failed"),
        st.status(tr("Строю проекцию…", "Building the projection…"), expanded=True) as status,
    ):
        if res.get("vector_set") is None:
            st.warning(tr("Сначала запустите расчёт метрик (или загрузите векторы выбранного запуска).",
                          "Run the metrics first (or load the picked run's vectors)."))
        else:
            ran = res.get("request") or {}
            if ran and any(ran.get(key) != request(form)[key] for key in ("source", "embedder", "filters")):
                st.warning(tr("Векторы в форме изменились после запуска: карта строится по векторам "
                              "последнего запуска. Запустите расчёт метрик снова, чтобы увидеть новые.",
                              "The vectors in the form changed since the run: the map shows the last run's "
                              "vectors. Run the metrics again to map the new ones."))
            vs = res["vector_set"]
            kinds = vs.meta["kind"].astype(str)
            # the first picture at once: the stored UMAP map, else PCA while UMAP refines in the background
            p = map_view.start(
                PROJ, state.engine(), vs.X, list(vs.point_ids), model=vs.model, n_components=int(n_components),
                n_neighbors=int(n_neighbors), min_dist=float(min_dist), seed=int(seed), limit=int(limit),
                centre_groups=kinds.tolist() if centre and kinds.nunique() > 1 else None,
            )
            st.session_state[PROJ_RUN] = picked_run.id
            untrusted.text(tr(f"Проекция: {fmt_count(len(p.point_ids))} точек за {fmt_seconds(p.seconds)} — ",
                              f"Projection: {fmt_count(len(p.point_ids))} points in {fmt_seconds(p.seconds)} — ")
                           + map_view.method_label(p))
        status.update(label=tr("Готово", "Done"), state="complete", expanded=False)



def _dist_name(metric_used: str) -> str:
    return tr("косинусное", "cosine") if metric_used == "cosine" else tr("евклидово", "Euclidean")


# ----------------------------------------------------------------------------------------- metric cards


def _render_metric_cards(res: dict) -> None:
    metric_used = res["distance_metric"]
    dist_name = _dist_name(metric_used)
    st.subheader(tr("Метрики пространства", "Space metrics"))
    st.caption(
        tr(f"Модель: `{res['model']}` ({res['dim']}-d) · расстояние: **{dist_name}** · k = {res['k']} · n = {fmt_count(res['n'])}",
           f"Model: `{res['model']}` ({res['dim']}-d) · distance: **{dist_name}** · k = {res['k']} · n = {fmt_count(res['n'])}")
        + (f" · {tr('запуск', 'run')} #{res['run_id']}" if res.get("run_id") else "")
    )
    for note in res["notes"]:
        st.caption("ℹ️ " + (tr(note.ru, note.en) if isinstance(note, Text) else str(note)))
    if res["estimated"]:
        st.warning(tr("Попарные и nn-метрики — ОЦЕНКА по случайной выборке (95% ДИ в подписи): N больше порога точного расчёта.",
                      "Pairwise and nn metrics are ESTIMATED from a random sample (95% CI in the captions): N is above the exact limit."))
    keys = list(METRIC_KEYS)
    for start in range(0, len(keys), 4):
        cols = st.columns(4)
        for col, key in zip(cols, keys[start : start + 4], strict=False):
            v = res["metrics"].get(key)
            with col:
                spec = catalog.get(key)
                st.metric(label(key), fmt(key, v), help=spec.how(lang()) if spec is not None else None)
                cap = unit(key, metric_used)
                ci = res["metrics"].get(f"{key}_ci")
                if ci:
                    cap += f" · {tr('95% ДИ', '95% CI')} [{fmt(key, ci[0])}; {fmt(key, ci[1])}]"
                if cap:
                    st.caption(cap)


METRIC_KEYS = tier0.SEED_METRICS + tier0.EXTRA_METRICS


def with_kb_page(vs: tier0.VectorSet) -> pd.DataFrame:
    """``meta`` plus ``kb_page``: a chunk's own section, a question's nearest chunk's section (cosine, full space) —
    which part of the knowledge base users ask about."""
    meta = vs.meta.copy()
    is_chunk = (meta["kind"] == "chunk").to_numpy()
    if is_chunk.any() and (~is_chunk).any():
        nn = proj.nearest_reference(vs.X, is_chunk, metric="cosine")
        sections = meta["section"].to_numpy()
        meta["kb_page"] = np.where(is_chunk, sections, sections[np.maximum(nn, 0)])
    return meta


def render_gap(vs: tier0.VectorSet, p: proj.Projection) -> None:
    """The modality gap between chunks and questions, as a number, when both are on the map."""
    kinds = vs.meta["kind"].astype(str)
    if kinds.nunique() < 2 or "chunk" not in set(kinds):
        return
    g = proj.modality_gap(vs.X, kinds.tolist(), reference="chunk")
    centred = "centred_groups" in p.params
    st.metric(tr("Разрыв модальностей (центроиды / разброс)", "Modality gap (centroids / spread)"),
              f"{g['gap']:.3f} / {np.mean(list(g['spread'].values())):.3f} = {g['gap_ratio']:.2f}",
              help=tr("‖μ_вопросов − μ_чанков‖ по единичным векторам против среднего расстояния точки до центроида своей "
                      "группы. Больше ~0.3 — на общей карте чанки и вопросы разойдутся в разные стороны независимо от "
                      "смысла.",
                      "‖μ_questions − μ_chunks‖ of the unit vectors against the mean distance of a point to its own "
                      "group's centroid. Above ~0.3 chunks and questions drift apart on a joint map whatever they mean."))
    st.caption(tr("Карта построена после центрирования групп — разрыв убран." if centred else
                  "Карта построена без центрирования — чанки и вопросы разведены разрывом модальностей.",
                  "The map was built after centring the groups — the gap is removed." if centred else
                  "The map was built without centring — the modality gap keeps chunks and questions apart."))


def table_selection(key: str) -> list[int]:
    """Row positions selected in the ``st.dataframe`` of ``key`` (read before the table is drawn again)."""
    ev = st.session_state.get(key)
    if ev is None:
        return []
    return [int(i) for i in (getattr(getattr(ev, "selection", None), "rows", None) or (ev or {}).get("selection", {}).get("rows", []))]


def picked_table_rows(linked: pd.DataFrame) -> list[int]:
    """Vector-set rows picked in the tables of this page — the outliers and the map's points table (the way
    to select in 3D) — to star on the map."""
    res_ = st.session_state.get(RESULT)
    if not res_ or res_.get("vector_set") is None:
        return []
    ids = [res_["outliers"][i]["point_id"] for i in table_selection("t0_outliers") if i < len(res_["outliers"])]
    pos = {pid: i for i, pid in enumerate(res_["vector_set"].point_ids)}
    from_points = [int(linked.iloc[i]["row"]) for i in table_selection("t0_points") if i < len(linked)]
    return [pos[x] for x in ids if x in pos] + from_points


# ----------------------------------------------------------------------------------------- projection


def _render_map(res: dict) -> None:
    vs: tier0.VectorSet = res["vector_set"]
    st.subheader(tr("Карта пространства", "Map of the space"))
    p: proj.Projection | None = map_view.current(PROJ)
    if p is None:
        st.info(tr("Нажмите «Построить проекцию» в форме вверху страницы.", "Press “Build projection” in the form at the top of the page."))
        return
    meta_all = with_kb_page(vs)
    color_options = [c for c in (*tier0.COLOR_FIELDS, "kb_page") if c in meta_all.columns and meta_all[c].notna().any()]
    color_by = st.selectbox(tr("Цвет по", "Colour by"), color_options, key="t0_color",
                            format_func={c: tr(*COLOR_LABELS.get(c, (c, c))) for c in color_options}.get)
    rows = p.rows
    meta_p = meta_all.iloc[rows].reset_index(drop=True).assign(row=rows)
    _render_map_figures(p, vs)
    selected_rows = _render_map_chart(res, p, meta_p, color_by)
    if selected_rows:
        _render_selection(res, vs, sorted(set(selected_rows)))


def _render_map_figures(p: proj.Projection, vs: tier0.VectorSet) -> None:
    cols = st.columns(4)
    cols[0].metric("Trustworthiness@10", "—" if p.trustworthiness is None else f"{p.trustworthiness:.3f}",
                   help=tr("1 — соседи на картинке = соседи в пространстве; ниже ~0.8 — не доверяйте близости на рисунке.",
                           "1 — neighbours in the picture are neighbours in space; below ~0.8 do not trust closeness in the picture."))
    cols[1].metric(tr("Точек на карте", "Points shown"), f"{len(p.point_ids)} / {p.n_total}")
    cols[2].metric(tr("Время", "Time"), fmt_seconds(p.seconds))
    cols[3].metric(tr("Проекция", "Projection"), map_view.method_label(p))
    st.caption(map_view.method_caption(p, PROJ))
    map_view.refine_status(PROJ)
    render_gap(vs, p)
    if p.subsampled:
        st.warning(tr(f"Показана случайная подвыборка {len(p.point_ids)} из {p.n_total} точек (лимит в форме вверху, зерно случайности {p.params.get('seed')}). Метрики выше посчитаны по всем точкам.",
                      f"Showing a random subsample of {len(p.point_ids)} of {p.n_total} points (limit in the form at the top, random state {p.params.get('seed')}). The metrics above use all points."))
    if p.trust_n and p.trust_n < len(p.point_ids):
        st.caption(tr(f"Trustworthiness посчитана на подвыборке {p.trust_n} точек.",
                      f"Trustworthiness computed on a subsample of {p.trust_n} points."))
    st.caption(tr(
        (f"UMAP: косинусное расстояние, n_neighbors={p.params.get('n_neighbors')}, min_dist={p.params.get('min_dist')}, seed={p.params.get('seed')}. "
         if not map_view.is_pca(p) else "PCA: оси — направления наибольшего разброса векторов. ") +
        "Выделите точки рамкой или лассо (2D) или строками таблицы под картой (2D и 3D) — их тексты появятся ниже. "
        "Рамка карты — 1–99-й перцентили координат: более далёкие точки прижаты к краю и обведены кольцом.",
        (f"UMAP: cosine distance, n_neighbors={p.params.get('n_neighbors')}, min_dist={p.params.get('min_dist')}, seed={p.params.get('seed')}. "
         if not map_view.is_pca(p) else "PCA: the axes are the directions of the vectors' largest spread. ") +
        "Select points with the box or lasso (2D) or with rows of the table under the map (2D and 3D) to list their texts below. "
        "The frame spans the 1st–99th percentiles of the coordinates: farther points sit on the edge inside a ring."))


def _render_map_chart(res: dict, p: proj.Projection, meta_p: pd.DataFrame, color_by: str) -> list[int]:
    """The map with its search, the linked points table and the downloads; returns the selected rows."""
    rows = p.rows
    c_search, c_labels = st.columns([3, 1])
    query = c_search.text_input(tr("Поиск по тексту (подсветить на карте)", "Search the texts (highlight on the map)"),
                                key="t0_search")
    label_centres = c_labels.checkbox(tr("Подписи в центрах групп", "Labels at group centres"), value=False,
                                      key="t0_labels")
    highlight = (meta_p["text"].fillna("").astype(str).str.contains(query.strip(), case=False, regex=False).to_numpy()
                 if query.strip() else None)
    # the points table under the map (drawn below): the same rows as then, so that its picks are starred here
    linked = meta_p if highlight is None else meta_p[highlight]
    linked = linked[["row", "point_id", "kind", "section", "text"]].head(2000).reset_index(drop=True)
    table_rows = picked_table_rows(linked)
    picked_pos = [int(i) for i in np.flatnonzero(np.isin(rows, table_rows))]
    fig = charts.scatter_figure(p.coords, meta_p, color_by, color_title=tr(*COLOR_LABELS.get(color_by, (color_by, color_by))),
                                highlight=highlight, picked=picked_pos, label_centres=label_centres,
                                texts={k: tr(*v) for k, v in MAP_TEXTS.items()}, axis_name=map_view.axis_name(p))
    meta_fig = fig.layout.meta or {}
    if highlight is not None:
        st.caption(tr(f"Найдено точек: {int(highlight.sum())}", f"Matching points: {int(highlight.sum())}"))
    if meta_fig.get("n_clipped"):
        st.caption(tr(f"За рамкой (прижаты к краю): {meta_fig['n_clipped']}", f"Outside the frame (clipped): {meta_fig['n_clipped']}"))
    selected_rows: list[int] = []
    if p.n_components == 2:
        event = plotly_chart(fig, key="t0_scatter", on_select="rerun", selection_mode=("points", "box", "lasso"))
        for pt in (event.selection.points if event and event.selection else []):
            cd = pt.get("customdata")
            if cd is not None and len(cd):
                selected_rows.append(int(cd[0]))
    else:
        plotly_chart(fig, key="t0_scatter3d")
    # selection through a linked table: works in 3D as in 2D; search narrows it; picked rows are starred above
    st.caption(tr("Таблица точек карты: выбранные строки выделяются на карте звездой и разбираются ниже "
                  "(первые 2000; поиск сужает список).",
                  "Points of the map: selected rows are starred on the map and analysed below (first 2,000; the "
                  "search narrows the list)."))
    tev = st.dataframe(linked, hide_index=True, on_select="rerun", selection_mode="multi-row", key="t0_points",
                       column_config={**tables.column_config(linked), "row": None}, height=240)
    for i in (tev.selection.rows if tev and tev.selection else []):
        selected_rows.append(int(linked.iloc[int(i)]["row"]))
    dl = st.columns(3)
    dl[0].download_button(tr("⬇ Проекция (HTML)", "⬇ Projection (HTML)"), data=charts.standalone_html(fig).encode("utf-8"),
                          file_name=f"tier0_projection_{res['source']}_{p.n_components}d.html", mime="text/html",
                          key="t0_dl_html")
    coords_df = meta_p[[c for c in ("point_id", "kind", "url", "section", "kb_page") if c in meta_p.columns]].copy()
    for i in range(p.n_components):
        coords_df[f"{map_view.axis_name(p).lower()}_{i + 1}"] = p.coords[:, i]
    dl[1].download_button(tr("⬇ Координаты (CSV)", "⬇ Coordinates (CSV)"), data=csv_download(coords_df),
                          file_name="tier0_projection_coords.csv", mime="text/csv", key="t0_dl_coords",
                          on_click="ignore")
    return selected_rows


def _render_selection(res: dict, vs: tier0.VectorSet, sel: list[int]) -> None:
    metric_used = res["distance_metric"]
    keys = list(METRIC_KEYS)
    st.markdown(tr(f"**Выбрано точек: {len(sel)}**", f"**Selected points: {len(sel)}**"))
    sel_df = vs.meta.iloc[sel][["point_id", "kind", "section", "url", "text", "outlier_score"]]
    tables.show(sel_df, "tier0_selection", key="t0_sel", labels=TABLE_LABELS, metrics=OUTLIER_FORMAT)
    if len(sel) >= 2:
        sm = tier0.space_metrics(vs.X[sel], k=min(res["k"], len(sel) - 1), metric=metric_used)
        cmp = pd.DataFrame(  # numbers written by each metric's kind, in one column of mixed metrics
            {"metric": [label(kk) for kk in keys],
             "selection": [fmt(kk, sm.get(kk)) for kk in keys],
             "all_points": [fmt(kk, res["metrics"].get(kk)) for kk in keys],
             "distance": [unit(kk, metric_used) for kk in keys]}
        )
        st.markdown(tr("Метрики выделения против всего набора", "Selection metrics vs the whole set"))
        tables.show(cmp, "tier0_selection_vs_all", key="t0_sel_cmp")


# ----------------------------------------------------------------------------------------- distributions, outliers


def _render_neighbours(res: dict) -> None:
    metric_used = res["distance_metric"]
    dist_name = _dist_name(metric_used)
    st.subheader(tr("Соседи и выбросы", "Neighbours and outliers"))
    c1, c2 = st.columns(2)
    if res.get("knn") is not None:
        idx, dist = res["knn"]
        c1.plotly_chart(charts.nn_distance_histogram(
            dist, metric=metric_used, color=TIER_COLORS["tier0"],
            title=tr(f"Расстояния до {res['k']} ближайших соседей ({dist_name})", f"Distances to the {res['k']} nearest neighbours ({dist_name})"),
            x_title=tr(f"{dist_name} расстояние", f"{dist_name} distance"), y_title=tr("число пар", "pairs")), key="t0_hist")
    with c2:
        plotly_chart(charts.outlier_bar_chart(
            res["outliers"], metric=metric_used, color=TIER_COLORS["tier0"],
            title=tr("Главные выбросы", "Top outliers"),
            x_title=tr(f"ср. {dist_name} расстояние до k соседей", f"mean {dist_name} distance to k neighbours")), key="t0_outbar")
    _render_outliers(res, dist_name)


def _render_outliers(res: dict, dist_name: str) -> None:
    out_df = pd.DataFrame([{kk: o[kk] for kk in ("rank", "point_id", "kind", "score", "section", "url", "text")} for o in res["outliers"]])
    if len(out_df):
        st.caption(tr("Выберите строку, чтобы увидеть соседей точки.", "Pick a row to see the point's neighbours."))
        ev = st.dataframe(out_df, hide_index=True, on_select="rerun", selection_mode="single-row", key="t0_outliers",
                          column_config=tables.column_config(out_df, TABLE_LABELS, OUTLIER_FORMAT))
        download_buttons(out_df, "tier0_outliers", key="t0_out")
        picked = ev.selection.rows if ev and ev.selection else []
        if picked:
            o = res["outliers"][int(picked[0])]
            st.markdown(tr(f"**Соседи {o['point_id']}** ({dist_name} расстояние)", f"**Neighbours of {o['point_id']}** ({dist_name} distance)"))
            st.text(o["text"])
            tables.show(pd.DataFrame(o["neighbors"]).drop(columns=["row"], errors="ignore"), f"tier0_neighbours_{o['point_id']}",
                        key="t0_nbrs", metrics={"distance": "avg_nn_distance"})


# ----------------------------------------------------------------------------------------- per section


def _render_per_section(res: dict) -> None:
    dist_name = _dist_name(res["distance_metric"])
    st.subheader(tr("Метрики по разделам", "Metrics per section"))
    st.caption(tr(f"Каждая строка — метрики точек одного раздела (страницы); расстояния — {dist_name}, спреды — евклидовы.",
                  f"Each row is the metrics of one section's (page's) points; distances are {dist_name}, spreads Euclidean."))
    per_section: pd.DataFrame = res["per_section"]
    if len(per_section):
        tables.show(per_section, "tier0_per_section", key="t0_sec")
    if isinstance(res.get("per_kind"), pd.DataFrame) and len(res["per_kind"]):
        st.markdown(tr("**По виду точки**", "**Per point kind**"))
        tables.show(res["per_kind"], "tier0_per_kind", key="t0_kind")


def _render_downloads(res: dict) -> None:
    metric_used = res["distance_metric"]
    st.subheader(tr("Выгрузки", "Downloads"))
    metrics_df = pd.DataFrame({"metric": list(res["metrics"]), "value": [json.dumps(v) if isinstance(v, list) else v for v in res["metrics"].values()],
                               "distance": [unit(kk, metric_used) for kk in res["metrics"]]})
    download_buttons(metrics_df, "tier0_metrics", key="t0_metrics")
    json_download(tier0.json_result(res), "tier0_result", label=tr("⬇ Всё (JSON)", "⬇ Everything (JSON)"), key="t0_all")


def _render_page() -> None:
    form = _render_form()
    if form["run_clicked"]:
        start_run(form)
    picked_run = _render_run()
    res = run_result(picked_run)
    if not res["metrics"]:
        st.stop()
    _render_reload(res, picked_run)
    if form["proj_clicked"]:
        _build_projection(res, picked_run, form)
    _render_metric_cards(res)
    _render_map(res)
    _render_neighbours(res)
    _render_per_section(res)
    _render_downloads(res)


init_page_state()
_render_page()
