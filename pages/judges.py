"""Judges: stability of the benchmark judge and the show/no-show production judge."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.engine import runs
from voproshalych_eval.plots.generation import confusion_matrix, per_model_bars, score_distributions
from voproshalych_eval.tiers import judge_pipeline, judge_stability
from voproshalych_eval.ui import auth, jobs, paid_run, run_view, state, tables, untrusted, views
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt_count, lang, metric_label, tr
from voproshalych_eval.ui.run_page import start_confirmed, submitted_params
from voproshalych_eval.ui.widgets import (
    TIER_COLORS,
    empty_state,
    json_download,
    llm_notice,
    metric_cards,
    page_header,
    table_with_download,
)

JUDGE_METRICS = ["faithfulness", "answer_relevance", "answer_correctness", "e2e_score", "rag_judge"]


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Судьи", "Judges"),
        tr("Можно ли доверять LLM-судьям: стабильность оценок и качество судьи показа/непоказа.",
           "Can the LLM judges be trusted: stability of scores and quality of the show/no-show judge."),
        tr(
            "**Стабильность**: каждый элемент оценивается R раз (кэш выключен). `consistency_score` = 1 − ср. СКО / макс. "
            "СКО шкалы (1 — повторы совпадают), `flip_rate` — доля элементов, чей PASS/FAIL меняется (меньше — лучше), "
            "`error_rate` и `parse_failure_rate` — доли вызовов (меньше — лучше), задержка p50/p95/p99 — по всем вызовам. "
            "**Показ/непоказ**: вердикт `Yes` / `No: причина` разбирается строго; точность, полнота, F1, каппа Коэна "
            "относительно разметки (0–1, больше — лучше).",
            "**Stability**: each item is judged R times (cache off). `consistency_score` = 1 − mean std / max std of the "
            "scale (1 = repeats agree), `flip_rate` = share of items whose PASS/FAIL changes (lower is better), "
            "`error_rate` and `parse_failure_rate` are shares of calls (lower is better), latency p50/p95/p99 over all "
            "calls. **Show/no-show**: the `Yes` / `No: reason` verdict is parsed strictly; precision, recall, F1, Cohen's "
            "kappa against the labels (0–1, higher is better).",
        ),
    )


def _render_page() -> None:
    eng = state.engine()
    stored_judge = datasets.list_datasets(eng, "judge")
    judge_sets = [d["name"] for d in stored_judge] or ["demo_judge"]
    llm_ok = llm_notice()  # before any run: whether it can use an LLM, and the way to Settings when not
    view = views.tabs("judges_view", {"stability": ("Стабильность", "Stability"), "pipeline": ("Показ / непоказ", "Show / no-show")})
    tab_s, tab_p = view["stability"], view["pipeline"]
    with tab_s:
        _render_stability(stored_judge, judge_sets, llm_ok)
    with tab_p:
        _render_pipeline(stored_judge, judge_sets, llm_ok)


# ---------------------------------------------------------------- stability


def _render_stability_form(stored_judge: list[dict], judge_sets: list[str]) -> dict:
    judge_metric_labels = {k: metric_label(k) for k in JUDGE_METRICS}  # resolved now: format_func runs later too
    with st.form("judge_stab_form", enter_to_submit=False):
        c = st.columns(4)
        # the form starts from the dataset of the run shown (ui.run_view), not from the newest dataset
        ds_s = c[0].selectbox(tr("Набор", "Dataset"), judge_sets, key="js_ds",
                              index=run_view.default_dataset_index("judge", stored_judge))
        limit_s = c[1].number_input(tr("Первые N (0 — все)", "First N (0 = all)"), 0, 100000, 5, key="js_lim")
        rep = c[2].number_input(tr("Повторов", "Repeats"), 2, 20, 5, key="js_rep")
        metric = c[3].selectbox(tr("Метрика", "Metric"), JUDGE_METRICS, format_func=judge_metric_labels.get)
        models_s = st.text_input(tr("Модели судей через запятую (пусто — по умолчанию)", "Judge models, comma separated (empty = default)"), "")
        off_s = st.checkbox(tr("Офлайн (без LLM)", "Offline (no LLM)"), key="js_off")
        go_s = auth.submit("run", st, tr("Запустить", "Run"), type="primary", key="js_run", icon=":material/play_arrow:")
    return {"ds": ds_s, "limit": limit_s, "repeats": rep, "metric": metric, "models": models_s, "offline": off_s,
            "go": go_s}


def _start_stability(f: dict, llm_ok: bool) -> None:
    ds_s, limit_s, rep, metric, models_s, off_s, go_s = f.values()
    judge_models = [m.strip() for m in models_s.split(",") if m.strip()] or None
    params, estimate = submitted_params(
        go_s, off_s, llm_ok,
        params=lambda use_off_s: {"dataset": ds_s, "limit": int(limit_s) or None, "repeats": int(rep), "metric": metric,
                                  "judge_models": judge_models, "offline": use_off_s},
        # a paid run: per item, every judge model R times (the cache is off)
        estimate=lambda _: paid_run.estimate(paid_run.items_to_run("judge", ds_s, int(limit_s)) * int(rep), judge_models))
    start_confirmed("judge_run_id", params, estimate, judge_stability.build_plan)


def _render_stability(stored_judge: list[dict], judge_sets: list[str], llm_ok: bool) -> None:
    _start_stability(_render_stability_form(stored_judge, judge_sets), llm_ok)
    run = run_view.run_section("judge", "judge_run_id", stop_while_running=False)
    if run is None:
        empty_state("Запусков ещё нет — задайте параметры выше и нажмите «Запустить».",
                    "No runs yet — set the parameters above and press Run.")
        return
    m = run.metrics or {}
    if m.get("not_applicable"):
        st.info(tr(f"Метрика «{m.get('metric')}» неприменима к этому набору: у элементов нет нужного поля (например, "
                   f"эталонного ответа). Это не сбои судьи: {m.get('n_not_applicable')} вызовов не оценивались.",
                   f"The metric '{m.get('metric')}' does not apply to this set: its items lack a field it needs "
                   f"(e.g. the reference answer). These are not judge failures: {m.get('n_not_applicable')} calls "
                   "were not scored."))
    if m:
        _render_stability_metrics(run, m)
    _render_stability_items(run)


def _render_stability_metrics(run: runs.Run, m: dict) -> None:
    metric_cards({k: m[k] for k in ("consistency_score", "avg_score_std", "flip_rate", "exact_agreement_rate",
                                    "error_rate", "parse_failure_rate", "latency_p50", "latency_p95", "latency_p99",
                                    "inter_judge_cohen_kappa", "inter_judge_fleiss_kappa", "intra_judge_fleiss_kappa")
                  if k in m and m[k] is not None})
    kinds = ", ".join(f"{metric_label(f'failure_kinds.{k}').lower()} {fmt_count(n)}"
                      for k, n in (m.get("failure_kinds") or {}).items() if n)
    calls, n_na, toks = fmt_count(m.get("n_calls")), fmt_count(m.get("n_not_applicable", 0)), fmt_count(m.get("tokens"))
    what = metric_label(str(m.get("metric")))
    st.caption(tr(f"Вызовов: {calls}, неприменимо: {n_na}, токенов: {toks}, метрика: {what}"
                  + (f"; по видам: {kinds}" if kinds else ""),
                  f"Calls: {calls}, not applicable: {n_na}, tokens: {toks}, metric: {what}"
                  + (f"; by kind: {kinds}" if kinds else "")))
    if len(m.get("per_model") or {}) > 1:
        plotly_chart(per_model_bars(m["per_model"], "consistency_score", color=TIER_COLORS["judge"], lang=lang()))
    json_download(m, f"judge_run{run.id}_metrics", key=f"jsm{run.id}")


def _render_stability_items(run: runs.Run) -> None:
    df = jobs.items_frame(run.id)
    if df.empty:
        return
    flat = judge_stability.repeat_rows(df)
    if not flat.empty:
        plotly_chart(score_distributions(flat, ["std"], color=TIER_COLORS["judge"], lang=lang(),
                                            labels={"std": tr("СКО повторов", "Std of repeats")},
                                            title=tr("СКО повторов по элементам", "Per-item std of repeats")))
        if st.checkbox(tr("Только нестабильные или со сбоями", "Unstable or failed only"), key="js_unst"):
            flat = flat[(flat["std"].fillna(0) > 0) | (flat["n_failed_calls"] > 0)]
        table_with_download(flat, f"judge_run{run.id}_items", key=f"jsi{run.id}")
    jobs.drilldown(df, key="js", render=_render_s, trace=False)  # each call is shown above


def _render_s(row: dict) -> None:
    untrusted.labelled(tr("Вопрос", "Question"), row.get("question"))
    untrusted.labelled(tr("Ответ", "Answer"), row.get("answer"))
    with st.expander(tr("Контекст", "Context")):
        st.text(row.get("context") or "")
    for model, calls in (row.get("calls") or {}).items():
        st.markdown(f"#### {model}")
        for i, c in enumerate(calls):
            jobs.judge_reply_view(f"#{i + 1}", c)


# ---------------------------------------------------------------- show / no-show


def _render_pipeline_form(stored_judge: list[dict], judge_sets: list[str]) -> dict:
    with st.form("judge_pipe_form", enter_to_submit=False):
        c = st.columns(3)
        ds_p = c[0].selectbox(tr("Размеченный набор", "Labelled dataset"), judge_sets, key="jp_ds",
                              index=run_view.default_dataset_index("judge_pipeline", stored_judge, url_param="pipeline_run"))
        limit_p = c[1].number_input(tr("Первые N (0 — все)", "First N (0 = all)"), 0, 100000, 0, key="jp_lim")
        calib = c[2].checkbox(tr("Калибровка судьи бенчмарка", "Calibrate the benchmark judge"), True)
        off_p = st.checkbox(tr("Офлайн (без LLM)", "Offline (no LLM)"), key="jp_off")
        go_p = auth.submit("run", st, tr("Запустить", "Run"), type="primary", key="jp_run", icon=":material/play_arrow:")
    return {"ds": ds_p, "limit": limit_p, "calibrate": calib, "offline": off_p, "go": go_p}


def _start_pipeline(f: dict, llm_ok: bool) -> None:
    ds_p, limit_p, calib, off_p, go_p = f.values()
    params, estimate = submitted_params(
        go_p, off_p, llm_ok,
        params=lambda use_off_p: {"dataset": ds_p, "limit": int(limit_p) or None, "calibrate": calib,
                                  "offline": use_off_p},
        # a paid run: per item the show/no-show verdict, and the benchmark judge when calibrating
        estimate=lambda _: paid_run.estimate(paid_run.items_to_run("judge", ds_p, int(limit_p)) * (2 if calib else 1)))
    start_confirmed("judge_pipeline_run_id", params, estimate, judge_pipeline.build_plan)


def _render_pipeline(stored_judge: list[dict], judge_sets: list[str], llm_ok: bool) -> None:
    _start_pipeline(_render_pipeline_form(stored_judge, judge_sets), llm_ok)
    run = run_view.run_section("judge_pipeline", "judge_pipeline_run_id", stop_while_running=False,
                               url_param="pipeline_run")
    if run is None:
        empty_state("Запусков ещё нет — задайте параметры выше и нажмите «Запустить».",
                    "No runs yet — set the parameters above and press Run.")
        return
    m = run.metrics or {}
    if m:
        _render_pipeline_metrics(run, m)
        _render_context_split(run, m)
    json_download(m, f"judge_pipeline_run{run.id}_metrics", key=f"jpm{run.id}")
    _render_pipeline_items(run)


def _render_pipeline_metrics(run: runs.Run, m: dict) -> None:
    cards = {k: m[k] for k in ("accuracy_ci", "precision", "recall", "f1_score", "cohen_kappa", "parse_failure_rate",
                               "error_rate", "latency_p50", "latency_p95", "latency_p99") if m.get(k) is not None}
    metric_cards(cards)
    n_valid, n_failed = fmt_count(m.get("n_valid")), fmt_count(m.get("n_failed"))
    st.caption(tr(f"С вердиктом: {n_valid}, сбоев: {n_failed}", f"With a verdict: {n_valid}, failed: {n_failed}"))
    if m.get("confusion_matrix"):
        plotly_chart(confusion_matrix(m["confusion_matrix"], title=tr("Матрица ошибок", "Confusion matrix"),
                                         labels=(tr("показать", "show"), tr("не показывать", "no-show")),
                                         x_title=tr("судья", "judge"), y_title=tr("разметка", "label")))
    if m.get("benchmark_accuracy") is not None:
        st.markdown(tr("**Калибровка судьи бенчмарка по разметке**", "**Benchmark judge vs human labels**"))
        metric_cards({k: m[k] for k in ("benchmark_accuracy", "benchmark_precision", "benchmark_recall",
                                        "benchmark_f1_score", "benchmark_cohen_kappa") if m.get(k) is not None})
    if m.get("accuracy_by_kind"):
        by_kind = pd.DataFrame(m["accuracy_by_kind"]).T.rename_axis("kind").reset_index()
        tables.show(by_kind, f"judge_pipeline_run{run.id}_by_kind", key=f"jpk{run.id}")


def _render_context_split(run: runs.Run, m: dict) -> None:
    split = {part: {k: (m.get(part) or {}).get(k) for k in ("n_items", "n_valid", "accuracy", "precision",
                                                            "recall", "f1_score", "cohen_kappa")}
             for part in ("with_context", "without_context") if isinstance(m.get(part), dict)}
    if split:
        st.markdown(tr("**С контекстом и без** (без контекста продакшен проверяет ответы из кэша)",
                       "**With and without context** (production judges cached answers without one)"))
        parts = {"with_context": tr("с контекстом", "with context"), "without_context": tr("без контекста", "without context")}
        split_df = pd.DataFrame(split).T.rename(index=parts).rename_axis("kind").reset_index()
        tables.show(split_df, f"judge_pipeline_run{run.id}_context_split", key=f"jpc{run.id}")


def _render_pipeline_items(run: runs.Run) -> None:
    df = jobs.items_frame(run.id)
    if df.empty:
        return
    f = df
    if st.checkbox(tr("Только ошибки судьи и сбои", "Judge mistakes and failures only"), key="jp_wrong"):
        f = df[(df["correct"] != True) | (df["status"] != "done")]  # noqa: E712
    table_with_download(jobs.flat_table(f, ["kind", "label", "verdict", "correct", "reason", "benchmark_verdict", "question"]),
                        f"judge_pipeline_run{run.id}_items", key=f"jpi{run.id}")
    jobs.drilldown(f, key="jp", render=_render_p, trace=False)  # each verdict is shown above


def _render_p(row: dict) -> None:
    untrusted.labelled(tr("Вопрос", "Question"), row.get("question"))
    untrusted.labelled(tr("Ответ", "Answer"), row.get("answer"))
    st.caption(f"{tr('разметка', 'label')}: {untrusted.md(row.get('label'))} · {tr('вид', 'kind')}: "
               f"{untrusted.md(row.get('kind'))}"
               + (f" · {untrusted.md(row.get('rationale'))}" if row.get("rationale") else ""))
    with st.expander(tr("Контекст", "Context")):
        st.text(row.get("context") or "")
    jobs.judge_reply_view("show_no_show", row.get("show_no_show"))
    jobs.judge_reply_view("rag_judge", row.get("benchmark"))


init_page_state()
_render_page()
