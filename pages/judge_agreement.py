"""Judge agreement — how far each judge metric is from the people who labelled its items, and its aligned versions."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.judges import agreement as ag
from voproshalych_eval.judges import labels as lb
from voproshalych_eval.judges import versions as jv
from voproshalych_eval.plots.agreement import confusion_heatmap, statistic_intervals
from voproshalych_eval.tiers import judge_agreement
from voproshalych_eval.ui import auth, jobs, judge_picker, state
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import lang, tr
from voproshalych_eval.ui.widgets import empty_state, llm_notice, page_header, table_with_download

COLUMNS = {"id": ("№", "No."), "models": ("Модели", "Models"), "version": ("Версия", "Version"),
           "statistic": ("Статистика", "Statistic"), "value": ("Значение", "Value"), "ci": ("95% ДИ", "95% CI"),
           "n": ("n", "n"), "poor": ("Плохое согласие", "Poor agreement"), "created_at": ("Когда", "When"),
           "topic": ("Тема", "Topic"), "bias": ("Смещение", "Bias"), "adopted": ("Принята", "Adopted"),
           "delta": ("Изменение", "Change"), "folds": ("Фолдов", "Folds"), "labels": ("Меток", "Labels"),
           "optimizer": ("Оптимизатор", "Optimizer")}
RUN_KEY = "ja_run_id"
STAT_LABELS = {"kappa": ("каппа Коэна", "Cohen's kappa"), "alpha": ("альфа Криппендорфа", "Krippendorff's alpha"),
               "spearman": ("Спирмен", "Spearman"), "weighted_kappa": ("взвешенная каппа", "weighted kappa"),
               "alpha_interval": ("альфа (интервальная)", "alpha (interval)")}


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Согласие судей с людьми", "Judge agreement"),
        tr("Насколько оценки судьи совпадают с разметкой людей — по метрике, модели и версии промпта.",
           "How far a judge's scores are from the people's labels — per metric, model and prompt version."),
        tr("Бинарные метрики — каппа Коэна, порядковые (1–5) — альфа Криппендорфа и взвешенная каппа, непрерывные — "
           "Спирмен; у каждой 95% бутстреп-интервал и n. **Смещение** — среднее (судья − человек): больше нуля — судья "
           "мягче людей. Каппа ниже 0,4 (альфа ниже 0,667) — судья согласуется плохо: отчёты о запусках предупреждают "
           "об этом рядом с числом метрики. **Потолок** — согласие двух людей на одних и тех же элементах. Выровненные "
           "версии строятся командой `judge-align`; «после» считается только по элементам, которых версия не видела.",
           "Binary metrics: Cohen's kappa; ordinal (1–5): Krippendorff's alpha and weighted kappa; continuous: Spearman; "
           "each with a 95% bootstrap CI and n. **Bias** is the mean (judge − human): above zero the judge is more "
           "lenient than people. Kappa below 0.4 (alpha below 0.667) means the judge agrees poorly: run reports warn next "
           "to the metric's number. The **ceiling** is the agreement of two people on the same items. Aligned versions "
           "come from `judge-align`; 'after' is measured only on items the version never saw."),
    )


def _render_form(eng: Any, metric: str, items: list) -> None:
    """Measure the agreement: a background run (progress, cancel, resume); the page stays responsive."""
    llm_ok = llm_notice()
    with st.form("ja_form", enter_to_submit=False):
        c = st.columns(3)
        limit = c[0].number_input(tr("Элементов (первые N)", "Items (first N)"), 1, max(1, len(items)),
                                  min(len(items), 30), key="ja_limit")
        offline = c[1].checkbox(tr("Офлайн (без LLM)", "Offline (no LLM)"), value=not llm_ok, key="ja_offline")
        names = [v["version"] for v in jv.stored_versions(eng, metric)]
        options = ["default", f"{metric}@builtin", *names]
        shown = {v: v for v in options} | {"default": tr("по умолчанию", "default")}
        version = c[2].selectbox(tr("Версия судьи", "Judge version"), options, key="ja_version", format_func=shown.get)
        go = st.form_submit_button(tr("Измерить согласие", "Measure agreement"), type="primary")
    if go:  # a background run (progress, cancel, resume); the page stays responsive while the judge works
        params = {"metric": metric, "limit": int(limit), "offline": True if offline else None, "lang": lang(),
                  "version": None if version == "default" else version}
        jobs.start(lambda: judge_agreement.build_plan(eng, params), RUN_KEY)
    jobs.job_panel(RUN_KEY)


def _render_cards(metric: str, measured: list, ceiling: dict | None) -> str:
    """The last measurement's n, statistic, bias and the two-people ceiling; returns the main statistic."""
    last = measured[0]
    rep = last["report"]
    main = rep.get("main") or last["statistic"]
    stat = rep.get(main) or {}
    k = st.columns(4)
    k[0].metric("n", rep.get("n"), help=tr(f"без оценки: {rep.get('n_failed', 0)}", f"not scored: {rep.get('n_failed', 0)}"))
    k[1].metric(tr(*STAT_LABELS.get(main, (main, main))), "—" if stat.get("value") is None else f"{stat['value']:.2f}",
                help=None if not stat.get("ci") else f"95% CI [{stat['ci'][0]:.2f}; {stat['ci'][1]:.2f}]")
    b = rep.get("bias") or {}
    k[2].metric(tr("Смещение (судья − человек)", "Bias (judge − human)"),
                "—" if b.get("mean") is None else f"{b['mean']:+.2f}",
                help=None if not b.get("ci") else f"95% CI [{b['ci'][0]:+.2f}; {b['ci'][1]:+.2f}]")
    ceil_v = None if ceiling is None else (ceiling.get(ceiling.get("main")) or {}).get("value")
    k[3].metric(tr("Потолок (два человека)", "Ceiling (two people)"), "—" if ceil_v is None else f"{ceil_v:.2f}",
                help=None if ceiling is None else ", ".join(ceiling.get("annotators") or []))
    st.caption(f"{', '.join(last['models'] or [])} · {last['version']} · {last['created_at']:%Y-%m-%d %H:%M}")
    if last["poor"]:
        st.warning(tr("Судья плохо согласуется с людьми: отчёты о запусках с этой метрикой предупреждают об этом.",
                      "The judge agrees poorly with people: run reports of this metric carry the warning."))
    return main


def _render_charts(measured: list, rep: dict, main: str) -> None:
    cols = st.columns(2)
    if rep.get("confusion"):
        with cols[0]:
            plotly_chart(confusion_heatmap(rep["confusion"], title=tr("Матрица ошибок", "Confusion matrix"),
                                           x_title=tr("судья", "judge"), y_title=tr("люди", "people")))
    history = [{"label": f"#{m['id']} {m['version'].split('@')[-1]}", "value": m["value"], "ci": m["ci"]}
               for m in reversed(measured[:10])]
    with cols[1]:
        plotly_chart(statistic_intervals(history, title=tr("Измерения (95% CI)", "Measurements (95% CI)"),
                                         y_title=tr(*STAT_LABELS.get(main, (main, main)))))


def _render_measurements(metric: str, measured: list, ceiling: dict | None) -> None:
    if not measured:
        st.info(tr("Согласие этой метрики ещё не измерялось: нажмите «Измерить согласие» или выполните "
                   "`judge-agreement --metric " + metric + "`.",
                   "This metric's agreement has not been measured yet: press 'Measure agreement' or run "
                   "`judge-agreement --metric " + metric + "`."))
        return
    rep = measured[0]["report"]
    main = _render_cards(metric, measured, ceiling)
    _render_charts(measured, rep, main)
    per_topic = rep.get("per_topic") or {}
    if per_topic:
        st.subheader(tr("По темам", "Per topic"))
        table_with_download(pd.DataFrame([{"topic": t, "n": r["n"], "value": (r.get(main) or {}).get("value"),
                                           "bias": (r.get("bias") or {}).get("mean")} for t, r in per_topic.items()]),
                            f"agreement_{metric}_topics", key="ja_topics", labels=COLUMNS)
    table_with_download(pd.DataFrame([{k: m[k] for k in ("id", "models", "version", "statistic", "value", "ci", "n", "poor",
                                                       "created_at")} for m in measured]),
                        f"agreement_{metric}", key="ja_measured", labels=COLUMNS)


def _render_versions(eng: Any, metric: str) -> None:
    st.subheader(tr("Выровненные версии", "Aligned versions"))
    vers = jv.stored_versions(eng, metric)
    if not vers:
        st.caption(tr("Версий нет: выполните `judge-align --metric " + metric + " --folds 5`.",
                      "No versions: run `judge-align --metric " + metric + " --folds 5`."))
        return
    rows = []
    for v in vers:
        lin = v["lineage"] or {}
        d = lin.get("difference") or {}
        rows.append({"version": v["version"], "adopted": v["adopted"], "delta": d.get("delta"), "ci": d.get("ci"),
                     "folds": len(lin.get("folds") or []), "labels": len(lin.get("labels") or []),
                     "models": ", ".join(lin.get("models") or []), "optimizer": lin.get("optimizer"),
                     "created_at": v["created_at"]})
    table_with_download(pd.DataFrame(rows), f"versions_{metric}", key="ja_versions", labels=COLUMNS)
    _render_lineage(vers)


def _render_lineage(vers: list) -> None:
    pick = st.selectbox(tr("Родословная версии", "Version lineage"), [v["version"] for v in vers], key="ja_pick")
    chosen_v = next(v for v in vers if v["version"] == pick)
    spec = chosen_v["spec"]
    with st.expander(tr("Указания и примеры", "Instructions and examples"), expanded=False):
        for line in spec.get("instructions") or []:
            st.text("• " + line)
        st.dataframe(pd.DataFrame([{tr("Вопрос", "Question"): e.get("question"), tr("Ответ", "Answer"): e.get("answer"),
                                    tr("Оценка экспертов", "Experts' value"): e.get("value"),
                                    tr("Почему", "Why"): e.get("note")} for e in spec.get("examples") or []]),
                     hide_index=True)
        st.caption(tr("Порог: ", "Threshold: ") + ("—" if spec.get("threshold") is None else f"{spec['threshold']:g}"))
    with st.expander(tr("Фолды", "Folds"), expanded=False):
        st.dataframe(pd.DataFrame([{tr("Фолд", "Fold"): f["fold"], tr("Отложено", "Held out"): len(f["held_out"]),
                                    tr("Примеры (ключи)", "Examples (keys)"): ", ".join(f["examples"]),
                                    tr("Версия", "Version"): f["version"]}
                                   for f in (chosen_v["lineage"] or {}).get("folds") or []]), hide_index=True)


def _render_page() -> None:
    eng = state.engine()
    counts = lb.label_counts(eng)
    if not counts:
        empty_state("Разметки пока нет: импортируйте файл меток (`labels import`) или загрузите набор демо.",
                    "No labels yet: import a label file (`labels import`) or the demo's judge set.",
                    action=("demo_labels", ("Загрузить 92 метки демо", "Load the demo's 92 labels")),
                    on_action=lambda: auth.can("label") and lb.import_demo_judge_set(eng))
        st.stop()

    labels_df = pd.DataFrame(counts)
    table_with_download(labels_df, "label_counts", key="ja_counts",
                        labels={"metric": ("Метрика", "Metric"), "n_labels": ("Меток", "Labels"),
                                "n_items": ("Элементов", "Items"), "n_annotators": ("Разметчиков", "Annotators")})

    metrics = [c["metric"] for c in counts]
    metric = judge_picker.pick_metric(metrics, key="ja_metric")
    items = ag.labelled_items(eng, metric)
    kind = lb.label_scale(metric).kind
    ceiling = ag.human_ceiling(items, kind, n_resamples=300)
    _render_form(eng, metric, items)
    measured = ag.stored_measurements(eng, metric)
    _render_measurements(metric, measured, ceiling)
    _render_versions(eng, metric)


init_page_state()
_render_page()
