"""Runs: every recorded run, a metric's history against its baseline, comparison of two runs, reports."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval import reports
from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.engine import describe, executor, runs
from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.statistics import correction_label
from voproshalych_eval.plans import SPECS as TIERS
from voproshalych_eval.plots import runs as charts
from voproshalych_eval.ui import auth, item_diff_view, leaderboard_view, state, tables, trace_view, views
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt, fmt_count, lang, metric_label, show, tr
from voproshalych_eval.ui.jobs import StepBar, job_panel, mixed_warning, resume_button, state_label
from voproshalych_eval.ui.verdicts import status_text
from voproshalych_eval.ui.widgets import (
    TIER_COLORS,
    download_buttons,
    empty_state,
    json_download,
    offline_badge,
    page_header,
)

VERDICTS = {
    "better": ("🟢 лучше", "🟢 better"),
    "worse": ("🔴 хуже", "🔴 worse"),
    "no significant difference": ("⚪ нет значимой разницы", "⚪ no significant difference"),
    "changed": ("🔵 изменилась (у метрики нет «лучше»)", "🔵 changed (the metric has no better direction)"),
    "no per-item data": ("— нет данных по элементам", "— no per-item data"),
    "no valid pairs": ("— нет валидных пар", "— no valid pairs"),
}
DIRECTIONS = {"higher": ("больше — лучше", "higher is better"), "lower": ("меньше — лучше", "lower is better"),
              "none": ("без направления", "no direction"), "None": ("без направления", "no direction")}
ITEM_STATES = {"done": ("готово", "done"), "failed": ("сбой", "failed"), "partial": ("частично", "partial")}
#: per-item columns of some tiers that the common table headers do not name
ITEM_COLUMNS = {"benchmark": ("Эталонный судья", "Benchmark judge"), "rationale": ("Обоснование", "Rationale"),
                "n_used": ("Использовано", "Used"), "n_stored": ("Из сохранённых", "Stored"),
                "n_questions": ("Вопросов", "Questions"), "gap_formula": ("Формула пробела", "Gap formula"),
                "note": ("Примечание", "Note")}
CMP_LABELS = {
    "direction": ("Лучше, когда", "Better when"), "a": ("A", "A"), "b": ("B", "B"), "diff": ("B − A", "B − A"),
    "ci_low": ("ДИ 2,5%", "CI 2.5%"), "ci_high": ("ДИ 97,5%", "CI 97.5%"), "effect_size": ("d_z", "d_z"),
    "effect_ci_low": ("d_z: ДИ 2,5%", "d_z: CI 2.5%"), "effect_ci_high": ("d_z: ДИ 97,5%", "d_z: CI 97.5%"),
    "n_better": ("Лучше", "Better"), "n_worse": ("Хуже", "Worse"), "n_same": ("Без изменений", "Same"),
    "n_up": ("Выросло", "Up"), "n_down": ("Снизилось", "Down"),
    "verdict": ("Вывод", "Verdict"),
}


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Запуски", "Runs"),
        tr(
            "Все запуски всех уровней: история метрик относительно базовых уровней, сравнение двух запусков, отчёты.",
            "Every run of every tier: metric history against the baselines, comparing two runs, reports.",
        ),
        tr(
            "Каждый запуск хранит уровень, набор данных и его хэш, модели, хэши промптов, параметры, версию кода, "
            "агрегаты с 95% доверительными интервалами и результаты по элементам. **Сравнение** ставит запуск B "
            "против эталонного A на одних и тех же элементах: разность B − A, её 95% бутстреп-интервал, парный "
            "перестановочный тест и размер эффекта (d_z Коэна с 95% интервалом). Метрик сравнивается много сразу, "
            "поэтому вывод делается по p с поправкой Холма (p_adj < 0,05 — значимо; исходное p тоже показано). "
            "«Лучше»/«хуже» учитывают направление метрики из каталога метрик (больше или меньше — лучше). Запуск, который числится выполняющимся, но давно не подавал "
            "сигнал, показан как **прерван** (его процесс завершился) — его можно продолжить здесь, на вкладке «Отчёт и экспорт» "
            "(кнопка «Продолжить»).",
            "Every run stores its tier, dataset and its hash, models, prompt hashes, parameters, code version, "
            "aggregates with 95% confidence intervals and per-item results. **Compare** puts run B against the "
            "reference run A on the same items: the difference B − A, its 95% bootstrap interval, a paired "
            "permutation test and the effect size (Cohen's d_z with a 95% interval). Many metrics are compared at "
            "once, so the verdict uses Holm-adjusted p-values (p_adj < 0.05 is significant; the raw p is shown too). "
            "Better/worse follow the metric's direction from the metric catalog (higher or lower is better). A run still marked running whose heartbeat is old is shown "
            "as **interrupted** (its process died) — resume it right here, on the Report and export tab (the Resume button).",
        ),
    )


FILTER_KEYS = ("runs_f_tier", "runs_f_dataset", "runs_f_model", "runs_f_period", "runs_f_status")
RESET_FILTERS = ("Сбросить фильтры", "Reset the filters")


def _reset_filters() -> None:
    """on_click: clear every sidebar filter (before the rerun, so the widgets start empty)."""
    for k in FILTER_KEYS:
        st.session_state.pop(k, None)


def _no_match(key: str) -> None:
    empty_state("Под фильтры не попал ни один запуск — сбросьте фильтры на боковой панели.",
                "No run matches the filters — reset the sidebar filters.", action=(key, RESET_FILTERS),
                on_action=_reset_filters)


def _run_option(r: runs.Run) -> str:
    return describe.run_option(r, lang(), with_tier=True)


def _runs_table(rows: list[runs.Run], baselines: list) -> pd.DataFrame:
    """The runs as a person reads them: tier title, verdict, state, configuration in words."""
    table = runs.runs_frame(rows, alive=executor.is_alive)
    table["tier"] = table["tier"].map(lambda t: describe.tier_title(t, lang()))
    table.insert(2, "quality", [status_text(bl.evaluate_run(baselines, r.tier, r.status, r.metrics or {},
                                                            offline=bool(r.offline)).status) for r in rows])
    table["status"] = table["status"].map(state_label)
    table.insert(5, "config", [describe.config_words(r, lang()) for r in rows])
    table["offline"] = table["offline"].map(lambda v: tr("да", "yes") if v else tr("нет", "no"))
    for col in ("label", "dataset_name", "dataset_hash", "code_version", "created_by"):  # no value: a dash, not "None"
        table[col] = table[col].map(lambda v: "—" if v is None or v != v or v == "" else v)
    return table.drop(columns=["models"])


def _render_filters(everything: list[runs.Run]) -> dict:
    """The sidebar filters of the runs table."""
    st.subheader(tr("Фильтры запусков", "Run filters"))
    tier_titles = {t: describe.tier_title(t, lang()) for t in {r.tier for r in everything}}  # resolved now
    f_tiers = st.multiselect(tr("Уровень", "Tier"), sorted(tier_titles), key="runs_f_tier", format_func=tier_titles.get,
                             placeholder=tr("Выберите…", "Choose…"))
    f_ds = st.multiselect(tr("Набор данных", "Dataset"), sorted({r.dataset_name for r in everything if r.dataset_name}),
                          placeholder=tr("Выберите…", "Choose…"),
                          key="runs_f_dataset")
    f_model = st.text_input(tr("Модель содержит", "Model contains"), key="runs_f_model")
    f_period = st.date_input(tr("Период", "Period"), value=(), key="runs_f_period")
    state_names = {s: state_label(s) for s in runs.RUN_STATES}  # resolved now: format_func runs later too
    f_status = st.multiselect(tr("Статус", "Status"), list(runs.RUN_STATES), format_func=state_names.get, placeholder=tr("Выберите…", "Choose…"),
                              key="runs_f_status")
    return {"tiers": f_tiers, "datasets": f_ds, "model": f_model, "period": f_period, "status": f_status}


def _filtered_runs(engine: Any, f: dict) -> list[runs.Run]:
    f_tiers, f_ds, f_model, f_period, f_status = (f[k] for k in ("tiers", "datasets", "model", "period", "status"))
    since = until = None
    if isinstance(f_period, tuple | list) and len(f_period) >= 1:
        since = f_period[0]
        until = f_period[1] if len(f_period) > 1 else None
    filtered = runs.list_runs(
        engine, tier=f_tiers or None, status=f_status or None, dataset_name=f_ds or None, model=f_model or None,
        since=since, until=until, alive=executor.is_alive, limit=5000,
    )
    return filtered


def _render_page() -> None:
    with state.user_errors("Не удалось прочитать реестр запусков", "Could not read the run registry"):
        engine = state.engine()
        everything = runs.list_runs(engine, limit=5000)

        with st.sidebar:
            f = _render_filters(everything)
        filtered = _filtered_runs(engine, f)
        baselines = bl.list_baselines(engine)

        if not everything:
            empty_state(
                "Запусков ещё нет: запустите любой уровень на его странице или командой `voproshalych-eval tier1 …`.",
                "No runs yet: run any tier from its page or with `voproshalych-eval tier1 …`.",
                page="pages/tier1_retrieval.py", page_label=("Запустить Tier 1 · Поиск", "Run Tier 1 · Retrieval"),
            )
        else:
            _render_runs(engine, everything, filtered, baselines)
        if not filtered and everything:
            st.caption(tr("Сбросьте фильтры на боковой панели, чтобы увидеть все запуски.",
                          "Clear the sidebar filters to see all runs."))
            st.button(tr(*RESET_FILTERS), key="runs_reset", on_click=_reset_filters)


def _render_runs(engine: Any, everything: list[runs.Run], filtered: list[runs.Run], baselines: list) -> None:
    table = _runs_table(filtered, baselines)
    st.subheader(tr(f"Запуски ({len(filtered)} из {len(everything)})", f"Runs ({len(filtered)} of {len(everything)})"))
    tables.show(table, "runs", key="runs_table", height=min(420, 38 + 35 * max(len(table), 1)),
                labels={"quality": ("Вердикт", "Verdict")}, metrics={"cost_usd": "cost_usd"})

    view = views.tabs("runs_view", {
        "history": ("История метрики", "Metric history"), "compare": ("Сравнение двух запусков", "Compare two runs"),
        "report": ("Отчёт и экспорт", "Report and export"),
        "leaderboard": ("Рейтинг конфигураций", "Leaderboard"),
    })
    tab_hist, tab_cmp, tab_rep = view["history"], view["compare"], view["report"]
    with view["leaderboard"]:  # configurations of one dataset ranked by a metric, with cost and latency
        leaderboard_view.render(engine, filtered)

    with tab_hist:
        _render_history(engine, filtered, baselines)
    with tab_cmp:
        _render_compare(engine, filtered)
    with tab_rep:
        _render_report(engine, filtered, baselines)


# ---------------------------------------------------------------- history


def _render_history(engine: Any, filtered: list[runs.Run], baselines: list) -> None:
    tiers_here = sorted({r.tier for r in filtered})
    if not tiers_here:
        _no_match("runs_reset_hist")
        return
    c1, c2 = st.columns(2)
    tier_names = {t: tr(*TIERS[t].title) if t in TIERS else t for t in tiers_here}
    h_tier = c1.selectbox(tr("Уровень", "Tier"), tiers_here, key="runs_h_tier", format_func=tier_names.get)
    keys: list[str] = []
    for r in filtered:
        if r.tier == h_tier and r.status == "done":
            keys += [k for k in runs.flatten_metrics(r.metrics or {}) if k not in keys]
    if not keys:
        empty_state("У этого уровня нет завершённых запусков с метриками.",
                    "This tier has no finished run with metrics.")
        return
    key_metrics = TIERS[h_tier].key_metrics if h_tier in TIERS else ()
    preferred = [c for km in key_metrics for c in (km, f"chunk.{km}") if c in keys]
    preferred += [k for k in keys if bl.find_baseline(baselines, h_tier, k)]
    default = preferred[0] if preferred else keys[0]
    key_labels = {k: metric_label(k) for k in keys}  # resolved now: format_func runs later too
    h_metric = c2.selectbox(tr("Метрика", "Metric"), keys, index=keys.index(default), key="runs_h_metric",
                            format_func=key_labels.get)
    _render_history_chart(engine, filtered, baselines, h_tier, h_metric)


def _render_history_chart(engine: Any, filtered: list[runs.Run], baselines: list, h_tier: str, h_metric: str) -> None:
    hist = runs.metric_history(engine, h_tier, h_metric)
    ids = {r.id for r in filtered}
    hist = hist[hist["run_id"].isin(ids)].copy()
    words = {r.id: describe.config_words(r, lang()) + (f" · {r.dataset_name}" if r.dataset_name else "")
             for r in filtered}
    hist["config"] = [words.get(i, c) for i, c in zip(hist["run_id"], hist["config"], strict=True)]
    offline_ids = {r.id for r in filtered if r.offline}
    hist["offline"] = hist["run_id"].isin(offline_ids)
    b = bl.find_baseline(baselines, h_tier, h_metric)
    plotly_chart(
        charts.history_figure(
            hist, metric_label=metric_label(h_metric),
            baseline=b.value if b else None, attention_margin=b.attention_margin if b else None,
            direction=catalog.direction(h_metric), scale=catalog.scale_of(h_metric), lang=lang(),
            color=TIER_COLORS.get(h_tier, "#00A67E"), metric_key=h_metric,
            baseline_label=tr("базовый уровень", "baseline"), run_label=tr("запуск", "run"),
            offline_label=tr("офлайн — не сравнивается", "offline — not compared"),
            online_only_label=tr("только для онлайн-запусков", "online runs only"),
        ),
        key="runs_hist_chart",
    )
    if hist["offline"].any():
        st.caption("📴 " + tr(
            "Серые пунктирные линии — офлайн-запуски (оценки офлайн-заменителей, не LLM): с базовым "
            "уровнем они не сравниваются, его линия относится только к онлайн-запускам.",
            "Grey dotted lines are offline runs (scores of offline substitutes, not an LLM): they are "
            "never compared to the baseline; its line applies to online runs only."))
    if b is None:
        st.caption(tr("Для этой метрики нет базового уровня — добавьте его на странице «Базовые уровни».",
                      "This metric has no baseline — add one on the Baselines page."))
    else:
        st.caption(tr(
            f"Базовый уровень {fmt(h_metric, b.value)} (шкала {b.scale}, {'больше' if b.direction == 'higher' else 'меньше'} — лучше); жёлтая полоса — зона внимания. Линия — одна конфигурация; разные конфигурации не соединяются.",
            f"Baseline {fmt(h_metric, b.value)} (scale {b.scale}, {b.direction} is better); the yellow band is the attention zone. One line per configuration; configurations are never joined.",
        ))
    tables.show(hist.drop(columns=["models"]), f"history_{h_tier}_{h_metric}", key="runs_hist_table",
                metrics={c: h_metric for c in ("value", "ci_low", "ci_high")})


# ---------------------------------------------------------------- compare


def _render_compare(engine: Any, filtered: list[runs.Run]) -> None:
    candidates = [r for r in filtered if r.status in ("done", "cancelled")]
    if len(candidates) < 2:
        empty_state("Для сравнения нужны два завершённых запуска одного уровня и набора данных.",
                    "Comparing needs two finished runs of the same tier and dataset.")
        return
    by_id = {r.id: r for r in candidates}
    groups: dict[tuple[str, str | None], list[int]] = {}
    for r in candidates:
        groups.setdefault((r.tier, r.dataset_hash or r.dataset_name), []).append(r.id)
    pairable = [r.id for r in candidates if len(groups[(r.tier, r.dataset_hash or r.dataset_name)]) > 1]
    if not pairable:
        empty_state("Нет двух завершённых запусков одного уровня на одном наборе данных.",
                    "No two finished runs of the same tier on the same dataset.")
        return
    c1, c2 = st.columns(2)
    options = {i: _run_option(by_id[i]) for i in by_id}  # resolved now: format_func runs later too
    a_id = c1.selectbox(tr("A — эталон (было)", "A — reference (before)"), pairable,
                        index=min(1, len(pairable) - 1), format_func=options.get,
                        key="runs_cmp_a")
    ra = by_id[a_id]
    same = [i for i in groups[(ra.tier, ra.dataset_hash or ra.dataset_name)] if i != a_id]
    b_id = c2.selectbox(tr("B — кандидат (стало)", "B — candidate (after)"), same,
                        format_func=options.get, key="runs_cmp_b")
    method_names = {"permutation": tr("перестановочный", "permutation"), "bootstrap": tr("бутстреп", "bootstrap")}
    method = st.radio(tr("Парный тест", "Paired test"), list(method_names), horizontal=True,
                      format_func=method_names.get, key="runs_cmp_method")
    wanted = (a_id, b_id, method)
    if st.button(tr("Сравнить", "Compare"), type="primary", key="runs_cmp_go"):
        bar = StepBar(tr("Парные тесты по всем метрикам…", "Paired tests on every metric…"))
        cmp_result = runs.compare_runs(engine, a_id, b_id, method=method, progress=lambda done, total: bar(
            1, 1, tr("парные тесты по метрикам", "paired tests by metric"), done, total))
        bar.finish(tr(f"Сравнено метрик: {fmt_count(len(cmp_result.metrics))}",
                      f"Metrics compared: {fmt_count(len(cmp_result.metrics))}"))
        st.session_state["runs_cmp_result"] = (wanted, cmp_result)
    stored = st.session_state.get("runs_cmp_result")
    if not stored or stored[0] != wanted:
        st.info(tr("Выберите два запуска и нажмите «Сравнить».", "Pick two runs and press Compare."))
        return
    _render_comparison(stored[1], a_id, b_id)


def _render_comparison(cmp: runs.Comparison, a_id: int, b_id: int) -> None:
    for w in cmp.warnings:
        st.warning(show(w))
    mixed_warning(cmp.run_a)
    mixed_warning(cmp.run_b)
    if cmp.run_a.offline or cmp.run_b.offline:
        st.warning(status_text("offline") + " — " + tr(
            "один из запусков получен офлайн-заменителями (не LLM): разность показана, но с базовыми "
            "уровнями не сравнивается.",
            "one of the runs was produced by offline substitutes (not an LLM): the difference is "
            "shown, never compared to the baselines."))
    m = cmp.metrics
    tested = m[m["n_pairs"] > 0]
    c = st.columns(4)
    c[0].metric(tr("Метрик с парным тестом", "Metrics with a paired test"), fmt_count(len(tested)))
    c[1].metric(tr("Значимо лучше", "Significantly better"), fmt_count((tested["verdict"] == "better").sum()))
    c[2].metric(tr("Значимо хуже", "Significantly worse"), fmt_count((tested["verdict"] == "worse").sum()))
    c[3].metric(tr("Общих элементов", "Common items"), fmt_count(len(cmp.items)))
    st.caption(tr(f"Только в A: {cmp.n_only_a}, только в B: {cmp.n_only_b}.",
                  f"Only in A: {cmp.n_only_a}, only in B: {cmp.n_only_b}."))
    shown = m.copy()
    shown["verdict"] = shown["verdict"].map(lambda v: tr(*VERDICTS.get(v, (v, v))))
    shown["metric"] = shown["metric"].map(metric_label)
    shown["direction"] = shown["direction"].map(lambda d: tr(*DIRECTIONS.get(d, (str(d), str(d)))))
    tables.show(
        shown[["metric", "direction", "a", "b", "diff", "paired_mean_diff", "ci_low", "ci_high", "p_value",
               "p_adjusted", "effect_size", "effect_ci_low", "effect_ci_high", "n_pairs", "n_better",
               "n_worse", "n_up", "n_down", "n_same", "verdict"]],
        f"compare_{a_id}_{b_id}_metrics", key="runs_cmp_table",
        labels=CMP_LABELS | {"p_adjusted": (f"p ({correction_label(cmp.correction, 'ru')})",
                                            f"p ({correction_label(cmp.correction, 'en')})")},
    )
    if len(tested):
        _render_item_diffs(cmp, m, tested, a_id, b_id)
    json_download(cmp.to_dict(), f"compare_{a_id}_{b_id}", label=tr("⬇ Сравнение целиком (JSON)", "⬇ Full comparison (JSON)"),
                  key="runs_cmp_json")


def _render_item_diffs(cmp: runs.Comparison, m: pd.DataFrame, tested: pd.DataFrame, a_id: int, b_id: int) -> None:
    plotly_chart(
        charts.diff_figure(m, x_title=tr("B − A (95% ДИ)", "B − A (95% CI)"), lang=lang(),
                           verdict_labels={k: tr(*v) for k, v in VERDICTS.items()},
                           correction=cmp.correction),
        key="runs_cmp_chart",
    )
    st.subheader(tr("Что изменилось по элементам", "What changed, item by item"))
    d1, _ = st.columns(2)
    tested_labels = {k: metric_label(k) for k in tested["metric"]}
    pick = d1.selectbox(tr("Метрика", "Metric"), tested["metric"].tolist(), key="runs_cmp_metric",
                        format_func=tested_labels.get)
    item_diff_view.render(cmp, pick, key="runs_cmp_diff", name=f"compare_{a_id}_{b_id}_{pick}")


# ---------------------------------------------------------------- report


def _render_report(engine: Any, filtered: list[runs.Run], baselines: list) -> None:
    if not filtered:
        _no_match("runs_reset_rep")
        return
    by_id_all = {r.id: r for r in filtered}
    all_options = {i: _run_option(r) for i, r in by_id_all.items()}
    rid = st.selectbox(tr("Запуск", "Run"), list(by_id_all), format_func=all_options.get,
                       key="runs_rep_run")
    run = by_id_all[rid]
    _render_report_head(engine, run, baselines)
    if run.error:
        st.error(tr("Ошибка запуска: ", "Run error: ") + run.error)
    with st.expander(tr("Конфигурация и происхождение запуска", "Run configuration and provenance")):
        tables.definition_list(describe.provenance_rows(run, lang()))
    _render_report_metrics(run, baselines)
    _render_report_items(engine, run)
    _render_report_exports(engine, run)


def _render_report_head(engine: Any, run: runs.Run, baselines: list) -> None:
    rid = run.id
    overall = bl.evaluate_run(baselines, run.tier, run.status, run.metrics or {}, offline=bool(run.offline))
    c = st.columns(3)
    c[0].metric(tr("Вердикт", "Verdict"), status_text(overall.status))
    c[1].metric(tr("Состояние", "State"), state_label(runs.run_state(run, alive=executor.is_alive)))
    counts = runs.count_items(engine, rid)
    c[2].metric(tr("Элементов: готово / сбоев", "Items: done / failed"),
                f"{fmt_count(counts['done'])} / {fmt_count(counts['failed'])}")
    with st.expander(tr("Правило статуса", "Status rule")):
        st.markdown(tr(bl.RULE_RU, bl.RULE_EN))
    if run.offline:
        offline_badge()
    mixed_warning(run)
    if runs.run_state(run, alive=executor.is_alive) in ("interrupted", "cancelled", "failed",
                                                         "done_with_failures"):
        resume_button(rid, "runs_resumed")  # through the engine: missing and failed items only
    job_panel("runs_resumed")


def _render_report_metrics(run: runs.Run, baselines: list) -> None:
    rid = run.id
    mf = runs.metrics_frame(run, baselines)
    if len(mf):
        mf_shown = mf.copy()
        mf_shown.insert(1, "label", mf_shown["metric"].map(metric_label))
        for col in ("value", "ci_low", "ci_high", "baseline"):
            mf_shown[col] = [fmt(k, v) if v is not None and v == v else "—"
                             for k, v in zip(mf_shown["metric"], mf_shown[col], strict=True)]
        mf_shown["direction"] = mf_shown["direction"].map(lambda d: tr(*DIRECTIONS.get(d, (str(d), str(d)))))
        mf_shown["status"] = mf_shown["status"].map(lambda v: status_text(v) if v else "—")
        tables.show(mf_shown.drop(columns=["metric"]), f"run_{rid}_metrics", key="runs_rep_metrics",
                    labels={"label": ("Метрика", "Metric"), "status": ("Вердикт", "Verdict")},
                    download=False)
        download_buttons(mf, f"run_{rid}_metrics", key="runs_rep_metrics")
        if mf["value"].notna().any() and len(mf) <= 60:
            plotly_chart(charts.metrics_figure(mf, baseline_label=tr("базовый уровень", "baseline"), lang=lang()),
                            key="runs_rep_chart")
    else:
        empty_state("У запуска нет агрегатов.", "The run has no aggregates.")


def _render_report_items(engine: Any, run: runs.Run) -> None:
    rid = run.id
    items = runs.run_items(engine, rid)
    st.markdown(f"**{tr('Элементы', 'Items')}** ({len(items)})")
    if not len(items):
        return
    items["status"] = items["status"].map(lambda v: tr(*ITEM_STATES.get(v, (v, v))))
    nested = tables.nested_columns(items)  # whole step results (tables, dicts): in the exports
    # the gap formula is the analysis' constant, stated in its report, not an item's value
    nested += [c for c in ("gap_formula",) if c in items.columns and c not in nested]
    shown_items = items.drop(columns=nested)
    # text columns: a missing value is a dash, never the word "nan" of a mixed column
    for col in shown_items.select_dtypes(include="object").columns:
        shown_items[col] = shown_items[col].map(
            lambda v: "—" if v is None or (isinstance(v, float) and v != v) else v)
    tables.show(shown_items, f"run_{rid}_items", key="runs_rep_items", height=320,
                download=False, labels=ITEM_COLUMNS)
    # an analysis' items are whole step results (tables, shown on its own page): no per-item trace
    traced = TIERS[run.tier].kind != "analytics" if run.tier in TIERS else True
    if nested:
        st.caption(tr(f"Вложенные результаты элементов ({len(nested)} полей) — "
                      + ("в трассе элемента ниже и в экспорте JSON." if traced else "в экспорте JSON."),
                      f"Nested item results ({len(nested)} fields) are in "
                      + ("the item's trace below and in the JSON export." if traced else "the JSON export.")))
    if traced:  # one item's trace: its steps as a collapsible tree with latency, tokens and cost
        records = {r["item_key"]: r for r in runs.item_records(engine, rid)}
        trace_key = st.selectbox(tr("Трасса элемента", "Item trace"), list(records), key="runs_trace_item")
        if trace_key is not None:
            trace_view.render(records[trace_key].get("result") or {}, key=f"trace_{rid}")


def _render_report_exports(engine: Any, run: runs.Run) -> None:
    rid = run.id
    ui_lang = lang()
    st.markdown(f"**{tr('Экспорт отчёта', 'Export the report')}**")
    cols = st.columns(5)
    specs = [("md", "items", "text/markdown", "md"), ("html", "items", "text/html", "html"),
             ("json", "items", "application/json", "json"), ("csv", "items", "text/csv", "items.csv"),
             ("csv", "metrics", "text/csv", "metrics.csv")]
    for col, (kind, part, mime, ext) in zip(cols, specs, strict=True):
        col.download_button(
            f"⬇ {ext.upper()}",
            data=lambda kind=kind, part=part, mask=auth.masks_personal_data(): reports.run_report(
                engine, rid, kind, lang=ui_lang, part=part, mask_personal_data=mask),
            file_name=f"run_{rid}_{run.tier}.{ext}", mime=mime, key=f"runs_rep_dl_{ext}",
        )


init_page_state()
_render_page()
