"""Tier 2 — generation on the full reference context."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.engine import runs
from voproshalych_eval.plots.generation import metric_intervals, score_distributions
from voproshalych_eval.tiers import tier2
from voproshalych_eval.ui import auth, jobs, paid_run, run_view, state, untrusted
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt_count, lang, metric_label, tr
from voproshalych_eval.ui.run_page import run_results, start_confirmed, submitted_params
from voproshalych_eval.ui.widgets import (
    TIER_COLORS,
    json_download,
    llm_notice,
    metric_cards,
    page_header,
    table_with_download,
)

KEY = "tier2_run_id"
SCORES = ["faithfulness", "answer_relevance", "answer_correctness", "rouge1_f", "rouge2_f", "rougeL_f"]


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Tier 2 · Генерация", "Tier 2 · Generation"),
        tr("Насколько хорошо модель отвечает, когда ей дан весь правильный контекст.",
           "How well the model answers when it is given the whole correct context."),
        tr(
            "Генератор отвечает по **полному** эталонному контексту (все релевантные чанки, без обрезки; обрезка — только "
            "явная, в параметрах). Фактичность и релевантность — оценки судьи на шкале 0–1, корректность — на шкале методики "
            "1–5, больше — лучше. ROUGE-F — 0–1, BLEU и chrF — 0–100, больше — лучше; полосы чтения методики («BLEU > 50 — очень "
            "хорошо, 20–40 — приемлемо») относятся к корпусному BLEU, показанному рядом со средним BLEU по ответам. Пустой "
            "ответ получает 0 по ROUGE/BLEU и наименьшую оценку судьи — он не выпадает из средних. "
            "`response_exact_match_rate` и `response_semantic_consistency` — **самосогласованность** повторов между собой, "
            "не совпадение с эталоном. У каждой метрики: n, число сбоев (не превращаются в оценку) и 95% ДИ.",
            "The generator answers from the **full** reference context (all relevant chunks, never cut; a cut is explicit "
            "and recorded). Faithfulness and relevance are judge scores on 0–1, correctness on the methodology's 1–5, higher is "
            "better. ROUGE-F is 0–1, BLEU and chrF 0–100, higher is better; the methodology's reading bands ('BLEU > 50 very "
            "good, 20–40 acceptable') are about corpus BLEU, shown beside the mean sentence BLEU. An empty answer scores 0 "
            "on ROUGE/BLEU and the judges' lowest score — it never drops out of the means. "
            "`response_exact_match_rate` and `response_semantic_consistency` are **self-consistency** of repeats with "
            "each other, not agreement with the reference. Each metric shows n, failures (never turned into a score) and "
            "the 95% CI.",
        ),
    )


def _render_form(golden: list[str], stored_golden: list[dict], llm_ok: bool) -> dict:
    """The run form at the top: Run visible without scrolling."""
    with st.form("tier2_form", border=True, enter_to_submit=False):  # the run form at the top: Run visible without scrolling
        f1, f2, f3, f4 = st.columns([3, 2, 2, 2])
        # the form starts from the dataset of the run shown (ui.run_view), not from the newest dataset
        ds_name = f1.selectbox(tr("Набор данных", "Dataset"), golden or ["demo_golden"],
                               index=run_view.default_dataset_index("tier2", stored_golden))
        limit = f2.number_input(tr("Первые N вопросов (0 — все)", "First N questions (0 = all)"), 0, 100000, 10)
        repeats = f3.number_input(tr("Повторов генерации", "Generation repeats"), 1, 10, 1)
        max_chars = f4.number_input(tr("Обрезать контекст, симв. (0 — нет)", "Cut context, chars (0 = never)"), 0, 1000000, 0)
        g1, g2, g3, g4 = st.columns([2, 2, 3, 2])
        stem = g1.checkbox(tr("Стемминг для ROUGE", "Stemming for ROUGE"))
        offline = g2.checkbox(tr("Офлайн (без LLM)", "Offline (no LLM)"), value=not llm_ok, key="t2_offline")
        concurrency = g3.slider(tr("Параллельно", "Concurrency"), 1, 16, 4)
        submitted = auth.submit("run", g4, tr("Запустить", "Run"), type="primary", key="t2_run", icon=":material/play_arrow:",
                                          use_container_width=True)
    return {"ds_name": ds_name, "limit": limit, "repeats": repeats, "max_chars": max_chars, "stem": stem,
            "offline": offline, "concurrency": concurrency, "submitted": submitted}


def _start_run(f: dict, llm_ok: bool) -> None:
    ds_name, limit, repeats = f["ds_name"], int(f["limit"]), int(f["repeats"])
    params, estimate = submitted_params(
        f["submitted"], f["offline"], llm_ok,
        params=lambda use_offline: {"dataset": ds_name, "limit": limit or None, "repeats": repeats,
                                    "max_context_chars": int(f["max_chars"]) or None, "stem": f["stem"],
                                    "offline": use_offline, "concurrency": f["concurrency"]},
        # a paid run: per item the generation repeats and three judge calls (faithfulness, relevance, correctness)
        estimate=lambda _: paid_run.estimate(paid_run.items_to_run("golden", ds_name, limit) * (repeats + 3)))
    start_confirmed(KEY, params, estimate, tier2.build_plan)


def _render_metrics(run: runs.Run, m: dict) -> None:
    keys = [k for k in ("avg_faithfulness", "avg_answer_relevance", "avg_answer_correctness", "avg_rouge1_f", "avg_rouge2_f",
                        "avg_rougeL_f", "avg_bleu", "corpus_bleu", "avg_chrf", "response_exact_match_rate",
                        "response_semantic_consistency") if k in m]
    metric_cards({k: m[k] for k in keys})
    n_items, n_failed, n_cut = (fmt_count(m.get(k)) for k in ("n_items", "n_failed_items", "n_context_truncated"))
    st.caption(tr(f"Элементов: {n_items}, не выполнено: {n_failed}, контекст обрезан: {n_cut}",
                  f"Items: {n_items}, failed: {n_failed}, context cut: {n_cut}"))
    plotly_chart(metric_intervals(m, keys, color=TIER_COLORS["tier2"], labels={k: metric_label(k) for k in keys},
                                     lang=lang(), title=tr("Средние и 95% ДИ (по шкалам)", "Means and 95% CI (by scale)")))
    json_download(m, f"tier2_run{run.id}_metrics", key=f"t2m{run.id}")


def _render_items(run: runs.Run, df: pd.DataFrame) -> pd.DataFrame:
    """The per-question scores and table; returns the rows the filters keep."""
    plotly_chart(score_distributions(df, SCORES, color=TIER_COLORS["tier2"], lang=lang(),
                                        title=tr("Оценки по вопросам", "Per-question scores")))
    st.subheader(tr("Вопросы", "Questions"))
    filtered = jobs.filter_items(df, key="t2", score_cols=SCORES, disagreement=jobs.per_model_spread())
    table_with_download(jobs.flat_table(filtered, ["question", "question_type", *SCORES, "bleu", "chrf", "response_exact_match",
                                                   "context_truncated"]), f"tier2_run{run.id}_items", key=f"t2i{run.id}")
    json_download(filtered.to_dict(orient="records"), f"tier2_run{run.id}_items_full", label=tr("⬇ JSON (всё)", "⬇ JSON (all)"), key=f"t2f{run.id}")
    return filtered


def _render(row: dict) -> None:
    untrusted.labelled(tr("Вопрос", "Question"), row.get("question"))
    c1, c2 = st.columns(2)
    untrusted.labelled(tr("Ответ", "Answer"), row.get("answer"), where=c1)
    untrusted.labelled(tr("Эталон", "Reference"), row.get("reference"), where=c2)
    with st.expander(tr(f"Контекст ({row.get('context_chars_used')} симв.)", f"Context ({row.get('context_chars_used')} chars)")):
        if row.get("context_truncated"):
            st.warning(tr(f"Контекст обрезан: {row.get('context_chars_used')} из {row.get('context_chars_full')} символов",
                          f"Context cut: {row.get('context_chars_used')} of {row.get('context_chars_full')} chars"))
        for c in row.get("contexts") or []:
            st.text(c)
    for name, res in (row.get("judges") or {}).items():
        jobs.judge_reply_view(name, res)
    if row.get("repeats"):
        with st.expander(tr("Повторы", "Repeats")):
            for t in row["repeats"]:
                st.text(t)


def _render_page() -> None:
    eng = state.engine()
    stored_golden = datasets.list_datasets(eng, "golden")
    golden = [d["name"] for d in stored_golden]
    llm_ok = llm_notice()  # before the run: whether it can use an LLM, and the way to Settings when not
    _start_run(_render_form(golden, stored_golden, llm_ok), llm_ok)
    # the run shown (ui.run_view): the one just made, else the link's, else the latest Tier 2 run
    run, df = run_results("tier2", KEY, _render_metrics, scope=("t2_item",))
    filtered = _render_items(run, df)
    st.subheader(tr("Разбор вопроса", "Item drill-down"))
    jobs.drilldown(filtered, key="t2", render=_render)


init_page_state()
_render_page()
