"""Tier 3 — end to end: internal pipeline or the bot's HTTP API."""

from __future__ import annotations

import streamlit as st

from voproshalych_eval import datasets
from voproshalych_eval.plots.generation import metric_intervals, score_distributions
from voproshalych_eval.ui import jobs, state
from voproshalych_eval.ui.common import (
    TIER_COLORS,
    empty_state,
    json_download,
    metric_cards,
    page_header,
    table_with_download,
)
from voproshalych_eval.ui.i18n import lang, tr

KEY = "tier3_run_id"
SCORES = ["rag_score", "e2e_score", "semantic_similarity", "rougeL_f"]

page_header(
    tr("Tier 3 · Сквозная оценка", "Tier 3 · End to end"),
    tr("Весь путь: поиск → генерация → ответ, внутренним конвейером или через API бота.",
       "The whole path: retrieval → generation → answer, by the internal pipeline or the bot's API."),
    tr(
        "Судья (seed 003) оценивает корректность и обоснованность ответа по **возвращённым чанкам**, PASS — если оценка ≥ "
        "порога; доля PASS — `pass_rate` (0–1, больше — лучше). E2E — 0–1, больше — лучше. Семантическое сходство — "
        "косинус эмбеддингов ответа и эталона (−1…1, больше — лучше), евклидово расстояние тех же единичных векторов "
        "(0…2, меньше — лучше). Ворота развёртывания: PASS / все элементы (ошибки API — не PASS).",
        "The judge (seed 003) scores correctness and groundedness on the **returned chunks**; PASS when the score ≥ "
        "threshold; the PASS share is `pass_rate` (0–1, higher is better). E2E is 0–1, higher is better. Semantic "
        "similarity is the cosine of the answer and reference embeddings (−1…1, higher is better), Euclidean distance "
        "of the same unit vectors (0…2, lower is better). Deployment gate: PASS / all items (API errors are not PASS).",
    ),
)

eng = state.engine()
golden = [d["name"] for d in datasets.list_datasets(eng, "golden")]
with st.sidebar.form("tier3_form"):
    st.subheader(tr("Параметры", "Parameters"))
    ds_name = st.selectbox(tr("Набор данных", "Dataset"), golden or ["demo_golden"])
    limit = st.number_input(tr("Первые N вопросов (0 — все)", "First N questions (0 = all)"), 0, 100000, 10)
    mode_labels = {"internal": tr("внутренний конвейер", "internal pipeline"), "api": tr("API бота", "bot API")}
    mode = st.radio(tr("Режим", "Mode"), list(mode_labels), format_func=mode_labels.get)
    api_url = st.text_input(tr("URL бота", "Bot URL"), "http://localhost:8080")
    answer_path = st.text_input(tr("JSON-путь ответа", "Answer JSON path"), "answer")
    chunks_path = st.text_input(tr("JSON-путь чанков", "Chunks JSON path"), "chunks")
    top_k = st.number_input("top-k", 1, 50, 1)
    threshold = st.slider(tr("Порог PASS", "PASS threshold"), 0.0, 1.0, 0.5, 0.05)
    min_pass = st.slider(tr("Ворота: мин. доля PASS", "Gate: min pass rate"), 0.0, 1.0, 0.0, 0.05)
    offline = st.checkbox(tr("Офлайн (без LLM)", "Offline (no LLM)"))
    concurrency = st.slider(tr("Параллельно", "Concurrency"), 1, 16, 4)
    submitted = st.form_submit_button(tr("Запустить", "Run"), type="primary")

if submitted:
    from voproshalych_eval.tiers.tier3 import build_plan

    jobs.start(lambda: build_plan(eng, {
        "dataset": ds_name, "limit": int(limit) or None, "mode": mode, "api_url": api_url if mode == "api" else None,
        "answer_path": answer_path, "chunks_path": chunks_path, "top_k": int(top_k), "threshold": threshold,
        "min_pass_rate": min_pass or None, "offline": True if offline else None, "concurrency": concurrency,
    }), KEY)

jobs.job_panel(KEY)
run = jobs.pick_run("tier3", KEY)
if run is None:
    empty_state("Запусков ещё нет — задайте параметры слева и нажмите «Запустить».",
                "No runs yet — set the parameters on the left and press Run.")
    st.stop()

jobs.run_caption(run)
m = run.metrics or {}
if m:
    keys = [k for k in ("pass_rate", "avg_e2e_score", "avg_semantic_similarity", "avg_euclidean_distance", "avg_rouge1_f",
                        "avg_rougeL_f", "avg_bleu", "avg_chrf", "retrieval_hit_rate", "response_exact_match_rate",
                        "response_semantic_consistency") if k in m]
    metric_cards({k: m[k] for k in keys})
    if m.get("gate_passed") is not None:
        (st.success if m["gate_passed"] else st.error)(
            tr(f"Ворота: доля PASS {m['gate_pass_rate']:.3f} (порог {m['min_pass_rate']})",
               f"Gate: pass rate {m['gate_pass_rate']:.3f} (threshold {m['min_pass_rate']})"))
    lat = {k: m.get(k) for k in ("latency_p50", "latency_p95", "latency_p99") if m.get(k) is not None}
    if lat:
        st.caption(tr("Задержка ответа, с: ", "Answer latency, s: ") + ", ".join(f"{k} {v:.3f}" for k, v in lat.items()))
    st.plotly_chart(metric_intervals(m, ["pass_rate", "avg_e2e_score", "avg_rougeL_f", "retrieval_hit_rate"],
                                     color=TIER_COLORS["tier3"], lang=lang(), title=tr("Средние и 95% ДИ", "Means and 95% CI")))
    json_download(m, f"tier3_run{run.id}_metrics", key=f"t3m{run.id}")

df = jobs.items_frame(run.id)
if df.empty:
    st.stop()
st.plotly_chart(score_distributions(df, SCORES, color=TIER_COLORS["tier3"], lang=lang(),
                                    title=tr("Оценки по вопросам", "Per-question scores")))
st.subheader(tr("Вопросы", "Questions"))
filtered = jobs.filter_items(df, key="t3", score_cols=SCORES, disagreement=jobs.per_model_spread())
if "passed" in filtered.columns and st.checkbox(tr("Только FAIL", "FAIL only"), key="t3_fail"):
    filtered = filtered[filtered["passed"] == False]  # noqa: E712
table_with_download(jobs.flat_table(filtered, ["question", "passed", "error_message", *SCORES, "euclidean_distance", "retrieval_hit"]),
                    f"tier3_run{run.id}_items", key=f"t3i{run.id}")


def _render(row: dict) -> None:
    st.markdown(f"**{tr('Вопрос', 'Question')}:** {row.get('question')}")
    c1, c2 = st.columns(2)
    c1.markdown(f"**{tr('Ответ системы', 'System answer')}**")
    c1.write(row.get("answer"))
    c2.markdown(f"**{tr('Эталон', 'Reference')}**")
    c2.write(row.get("reference"))
    if row.get("error_message"):
        st.error(row["error_message"])
    with st.expander(tr("Возвращённые чанки", "Returned chunks")):
        st.caption(f"{row.get('retrieved_urls') or ''}")
        for c in row.get("contexts") or []:
            st.text(c)
    for name, res in (row.get("judges") or {}).items():
        jobs.judge_reply_view(name, res)


st.subheader(tr("Разбор вопроса", "Item drill-down"))
jobs.drilldown(filtered, key="t3", render=_render)
