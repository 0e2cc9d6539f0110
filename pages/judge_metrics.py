"""Judge metrics: any judge metric on an uploaded sample file or the demo, on several models, aggregated."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.ui import state
from voproshalych_eval.ui.common import (
    empty_state,
    json_download,
    metric_cards,
    offline_badge,
    page_header,
    table_with_download,
)
from voproshalych_eval.ui.i18n import tr

page_header(
    tr("Метрики судей", "Judge metrics"),
    tr(
        "Любая LLM-метрика (фактичность, AspectCritic, рубрики, …) на файле примеров или демо-наборе, на одной "
        "или нескольких моделях.",
        "Any LLM-judged metric (faithfulness, AspectCritic, rubrics, …) on a sample file or the demo set, on one "
        "or several models.",
    ),
    tr(
        "Все оценки на шкале 0–1, больше — лучше (1–5 нормируется как (s−1)/4; шкала указана у каждого результата). "
        "Оценки нескольких моделей сводятся агрегатором: среднее, медиана, большинство (1, если больше половины "
        "моделей ≥ 0.5), минимум, максимум, консенсус (все модели ответили и расходятся не более чем на 0.1, "
        "иначе оценки нет). Ответ, который не удалось разобрать, — это сбой: он не превращается в оценку, "
        "исключается из среднего и показан отдельно. Карточка: среднее, n, сбои и 95% бутстреп-интервал.",
        "All scores are on 0–1, higher is better (1–5 answers are normalised (s−1)/4; each result shows its scale). "
        "Several models are combined by an aggregator: average, median, majority (1 if more than half of the models "
        "score ≥ 0.5), min, max, consensus (every model answered and they differ by at most 0.1, else no score). "
        "A reply that could not be parsed is a failure: never a score, excluded from the mean and shown separately. "
        "The card shows the mean, n, failures and the 95% bootstrap CI.",
    ),
)

from voproshalych_eval.judges import AGGREGATORS, METRICS  # noqa: E402
from voproshalych_eval.llm.providers import all_models, configured_providers  # noqa: E402

s = state.settings()
providers = configured_providers(s)
models_available = all_models(providers)

with st.sidebar:
    st.subheader(tr("Метрика судьи", "Judge metric"))
    metric = st.selectbox(tr("Метрика", "Metric"), list(METRICS), key="jm_metric")
    source = st.radio(tr("Примеры", "Samples"), ["demo", "file"], key="jm_source",
                      format_func=lambda x: tr("демо-набор (show/no-show)", "demo set (show/no-show)") if x == "demo"
                      else tr("загрузить файл", "upload a file"))
    upload = None
    if source == "file":
        upload = st.file_uploader(tr("JSON или JSONL (user_input, response, reference, retrieved_contexts)",
                                     "JSON or JSONL (user_input, response, reference, retrieved_contexts)"),
                                  type=["json", "jsonl", "csv"], key="jm_upload")
    limit = st.number_input(tr("Не больше примеров", "At most samples"), 1, 5000, 20, key="jm_limit")
    if models_available:
        models = st.multiselect(tr("Модели-судьи", "Judge models"), models_available, default=models_available[:1],
                                key="jm_models")
    else:
        models = []
        st.caption(tr("LLM не настроен — офлайн-эвристика", "No LLM configured — offline heuristic"))
    aggregate = st.selectbox(tr("Агрегатор моделей", "Model aggregator"), AGGREGATORS, key="jm_agg")
    use_cache = st.checkbox(tr("Использовать кэш ответов", "Use the response cache"), True, key="jm_cache")

cfg: dict[str, Any] = {}
with st.form("jm_form"):
    if metric in ("aspect_critic", "simple_criteria_score"):
        cfg["definition"] = st.text_input(tr("Критерий", "Criterion"),
                                          tr("Ответ вежлив и по существу?", "Is the answer polite and to the point?"))
        cfg["strictness"] = st.slider(tr("Число прогонов (strictness)", "Runs (strictness)"), 1, 5, 1)
    if metric == "simple_criteria_score":
        c1, c2 = st.columns(2)
        cfg["min_score"] = c1.number_input(tr("Минимум шкалы", "Scale minimum"), value=0.0)
        cfg["max_score"] = c2.number_input(tr("Максимум шкалы", "Scale maximum"), value=5.0)
    if metric == "rubrics_score":
        default_rubrics = {f"score{i}_description": d for i, d in enumerate(
            [tr("Неверно или не по теме", "Wrong or off-topic"), tr("Много ошибок", "Many errors"),
             tr("Частично верно", "Partly right"), tr("Верно, мелкие пропуски", "Right, minor gaps"),
             tr("Полностью верно и полно", "Fully right and complete")], start=1)}
        cfg["rubrics"] = st.text_area(tr("Рубрики (JSON)", "Rubrics (JSON)"),
                                      json.dumps(default_rubrics, ensure_ascii=False, indent=1))
    if metric in ("faithfulness", "answer_relevance", "answer_correctness", "e2e_score", "rag_judge",
                  "semantic_similarity"):
        use_thr = st.checkbox(tr("Порог прохождения", "Pass threshold"), metric == "rag_judge")
        thr = st.slider(tr("Порог", "Threshold"), 0.0, 1.0, 0.5, 0.05)
        if use_thr:
            cfg["threshold"] = thr
    if metric == "response_relevancy":
        cfg["n_questions"] = st.slider(tr("Сколько вопросов генерировать", "Questions to generate"), 1, 5, 3)
    run = st.form_submit_button(tr("Запустить", "Run"), type="primary")


def demo_samples() -> list[dict[str, Any]]:
    from voproshalych_eval.datasets import get_dataset

    ds = get_dataset(state.engine(), "demo_judge", "judge")
    return [{"id": r.get("id", i), "user_input": r["question"], "response": r["answer"], "reference": None,
             "retrieved_contexts": [r["context"]]} for i, r in enumerate(ds.records)]


if run:
    with state.user_errors("Не удалось выполнить оценку", "Evaluation failed"):
        from voproshalych_eval.commands.judge import read_rubrics, read_samples, run_judge_metric
        from voproshalych_eval.judges import get_judge

        if "rubrics" in cfg:
            cfg["rubrics"] = read_rubrics(cfg["rubrics"])
        if source == "demo":
            samples = demo_samples()
            name = "demo_judge"
        elif upload is None:
            samples, name = [], None
            st.warning(tr("Загрузите файл с примерами.", "Upload a sample file."))
        else:
            samples, name = read_samples(upload.name, data=upload.getvalue()), upload.name
        samples = samples[: int(limit)]
        if samples:
            judge = get_judge(s, state.engine(), models=models or None, aggregate=aggregate, use_cache=use_cache,
                              lang=s.language if s.language in ("ru", "en") else "ru",
                              embedder=state.embedder(state.current_embedder_name()))
            bar = st.progress(0.0, text=tr("Оценка…", "Evaluating…"))
            out = run_judge_metric(state.engine(), metric, samples, judge=judge, cfg=cfg, dataset_name=name,
                                   progress_cb=None)
            bar.progress(1.0, text=tr("Готово", "Done"))
            st.session_state["jm_result"] = out

out = st.session_state.get("jm_result")
if not out:
    empty_state("Выберите метрику и нажмите «Запустить». Без настроенного LLM работает офлайн-эвристика.",
                "Pick a metric and press Run. Without a configured LLM the offline heuristic is used.")
else:
    if out["offline"]:
        offline_badge()
    st.caption(f"{tr('Запуск', 'Run')} #{out['run_id']} · {out['metric']} · {tr('модели', 'models')}: "
               f"{', '.join(out['models'])} · {tr('агрегатор', 'aggregator')}: {out['aggregate_method']}")
    metric_cards(out["metrics"])
    rows = []
    for r in out["results"]:
        row = {"item_key": r["item_key"], "user_input": r["user_input"], "score": r["score"], "passed": r["passed"],
               "scale": r["scale"], "failures": len(r["failures"])}
        row.update({f"model:{m}": v for m, v in r["per_model"].items()})
        rows.append(row)
    df = pd.DataFrame(rows)
    only_failed = st.checkbox(tr("Только сбои", "Failures only"), key="jm_only_failed")
    view = df[df["failures"] > 0] if only_failed and not df.empty else df
    table_with_download(view, f"judge_{out['metric']}_{out['run_id']}", key="jm_table")
    json_download(out, f"judge_{out['metric']}_{out['run_id']}_full", label=tr("⬇ Полный JSON", "⬇ Full JSON"))
    st.subheader(tr("Разбор примера", "Sample drill-down"))
    keys = [r["item_key"] for r in out["results"]]
    if keys:
        pick = st.selectbox(tr("Пример", "Sample"), keys, key="jm_pick")
        r = next(x for x in out["results"] if x["item_key"] == pick)
        st.markdown(f"**{tr('Вопрос', 'Question')}:** {r['user_input']}")
        shown = "—" if r["score"] is None else f"{r['score']:.3f}"
        st.markdown(f"**{tr('Оценка', 'Score')}:** {shown} ({r['scale']})"
                    + (" · " + tr("офлайн-эвристика", "offline heuristic") if r["offline"] else ""))
        if r["explanation"]:
            st.markdown(f"**{tr('Объяснение', 'Explanation')}:** {r['explanation']}")
        if r["failures"]:
            st.error(tr("Сбои", "Failures") + ":")
            st.dataframe(pd.DataFrame(r["failures"]), hide_index=True)
        if r["raw_replies"]:
            with st.expander(tr("Сырые ответы моделей", "Raw model replies")):
                for t in r["raw_replies"]:
                    st.code(t)
        with st.expander(tr("Подробности", "Details")):
            st.json(r["details"])
