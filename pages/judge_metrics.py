"""Judge metrics: any judge metric on an uploaded sample file or the demo, on several models, aggregated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets.store import get_dataset
from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS
from voproshalych_eval.engine import executor, runs
from voproshalych_eval.engine.describe import AGGREGATOR_LABELS, QUORUM_LABELS
from voproshalych_eval.judges import AGGREGATORS, JUDGE_METRICS, Option
from voproshalych_eval.judges.base import QUORUMS
from voproshalych_eval.llm.providers import all_models, configured_providers
from voproshalych_eval.tiers import judge_metrics as jm
from voproshalych_eval.tiers.judge_metrics import (
    TIER,
    read_rubrics,
    read_samples,
    run_summary,
    samples_from_judge_set,
    store_samples,
)
from voproshalych_eval.ui import auth, jobs, paid_run, run_view, state, tables, untrusted, uploads
from voproshalych_eval.ui.i18n import lang, tr
from voproshalych_eval.ui.run_page import start_confirmed
from voproshalych_eval.ui.widgets import (
    empty_state,
    json_download,
    llm_notice,
    metric_cards,
    page_header,
    table_with_download,
)

#: the per-sample table's headers that are not metric keys
JM_LABELS = {"user_input": ("Вопрос", "Question"), "failure_kind": ("Вид сбоя", "Failure kind"),
             "partial": ("Частично", "Partial"), "answered": ("Ответили модели", "Models answered")}
RUN_KEY = "jm_run_id"
FORM_KEYS = ("metric", "source", "limit", "upload", "models", "aggregate", "quorum", "vote_quorum", "use_cache")


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Метрики судей", "Judge metrics"),
        tr(
            "Любая LLM-метрика (фактичность, AspectCritic, рубрики, …) на файле примеров или демо-наборе, на одной "
            "или нескольких моделях.",
            "Any LLM-judged metric (faithfulness, AspectCritic, rubrics, …) on a sample file or the demo set, on one "
            "or several models.",
        ),
        tr(
            "Каждая метрика — на своей шкале, больше — лучше: корректность ответа — 1–5 (как в методике оценки), RubricsScore — "
            "целый уровень рубрики, семантическое сходство — косинус −1…1, остальные — 0–1 (шкала указана у каждого "
            "результата). Оценки нескольких моделей сводятся агрегатором: среднее, медиана (нижняя — всегда оценка "
            "какой-то модели), большинство, минимум, максимум, консенсус. Оценка выставляется, только если ответил "
            "кворум: все модели для минимума, максимума и консенсуса, строгое большинство для остальных (и для "
            "голосов повторных прогонов одной модели); оценка неполным кворумом помечена как частичная. Сбой — транспорт (таймаут, 429, "
            "5xx, соединение) или неразобранный ответ — не превращается в оценку и считается отдельно по видам; "
            "пример без нужного поля — «неприменимо», не сбой; пустой ответ получает наименьшую оценку шкалы. "
            "Карточка: среднее, n, сбои и 95% бутстреп-интервал.",
            "Each metric is on its own scale, higher is better: answer correctness on 1–5 (as in the evaluation methodology), "
            "RubricsScore the integer rubric level, semantic similarity a cosine −1…1, the rest 0–1 (each result shows "
            "its scale). Several models are combined by an aggregator: average, median (the lower one — always a score "
            "some model gave), majority, min, max, consensus. A score is given only when a quorum answered: every "
            "model for min, max and consensus, a strict majority otherwise (and for the votes of one model's repeated runs); a score from "
            "an incomplete quorum is marked partial. A failure — transport (timeout, 429, 5xx, connection) or an "
            "unparseable reply — is never a score and is counted by kind; a sample missing a required field is "
            "'not applicable', not a failure; an empty answer gets the scale's lowest score. "
            "The card shows the mean, n, failures and the 95% bootstrap CI.",
        ),
    )


def _render_settings(metric_names: dict, models_available: list[str]) -> dict:
    """Every setting of the run at the top of the page, the Run button below them."""
    source_names = {"demo": tr("демо-набор (show/no-show)", "demo set (show/no-show)"), "file": tr("загрузить файл", "upload a file")}
    with st.container(border=True):
        a1, a2, a3 = st.columns([3, 2, 1])
        metric = a1.selectbox(tr("Метрика", "Metric"), list(JUDGE_METRICS), key="jm_metric", format_func=metric_names.get)
        source = a2.radio(tr("Примеры", "Samples"), ["demo", "file"], key="jm_source", format_func=source_names.get,
                          horizontal=True)
        limit = a3.number_input(tr("Не больше примеров", "At most samples"), 1, 5000, 20, key="jm_limit")
        st.caption(tr(JUDGE_METRICS[metric].description_ru, JUDGE_METRICS[metric].description_en))
        upload = None
        if source == "file":
            upload = st.file_uploader(tr("JSON или JSONL (user_input, response, reference, retrieved_contexts)",
                                         "JSON or JSONL (user_input, response, reference, retrieved_contexts)"),
                                      type=["json", "jsonl", "csv"], key="jm_upload")
        row = _render_models_row(models_available)
    return {"metric": metric, "source": source, "limit": limit, "upload": upload, **row}


def _render_models_row(models_available: list[str]) -> dict:
    b1, b2, b3, b4, b5 = st.columns([3, 2, 2, 2, 2])
    if models_available:
        models = b1.multiselect(tr("Модели-судьи", "Judge models"), models_available, default=models_available[:1], placeholder=tr("Выберите…", "Choose…"),
                                key="jm_models")
    else:
        models = []
        b1.caption(tr("LLM не настроен — оценит офлайн-эвристика (помечена, с базовыми уровнями не сравнивается)",
                      "No LLM configured — the offline heuristic judges (marked, never compared to baselines)"))
    agg_names = {a: tr(*AGGREGATOR_LABELS[a]) for a in AGGREGATORS}  # resolved now: format_func runs later too
    aggregate = b2.selectbox(tr("Агрегатор моделей", "Model aggregator"), AGGREGATORS, key="jm_agg",
                             format_func=agg_names.get)
    quorum_names = {None: tr("по агрегатору", "the aggregator's"), **{q: tr(*QUORUM_LABELS[q]) for q in QUORUMS}}
    quorum = b3.selectbox(tr("Кворум моделей", "Model quorum"), list(quorum_names), key="jm_quorum",
                          format_func=quorum_names.get,
                          help=tr("Сколько моделей должны ответить, чтобы оценка была выставлена. По умолчанию: все — "
                                  "для минимума, максимума и консенсуса, строгое большинство — для остальных.",
                                  "How many models must answer for a score to be given. By default: all for min, max "
                                  "and consensus, a strict majority otherwise."))
    vote_quorum = b4.selectbox(tr("Кворум голосов", "Vote quorum"), list(quorum_names), key="jm_vote_quorum",
                               format_func=quorum_names.get,
                               help=tr("Сколько повторных прогонов одной модели (строгость) должны ответить.",
                                       "How many repeated runs of one model (strictness) must answer."))
    use_cache = b5.checkbox(tr("Использовать кэш ответов", "Use the response cache"), True, key="jm_cache")
    return {"models": models, "aggregate": aggregate, "quorum": quorum, "vote_quorum": vote_quorum,
            "use_cache": use_cache}


def _default_rubrics() -> dict[str, str]:
    return {f"score{i}_description": d for i, d in enumerate(
    [tr("Неверно или не по теме", "Wrong or off-topic"), tr("Много ошибок", "Many errors"),
     tr("Частично верно", "Partly right"), tr("Верно, мелкие пропуски", "Right, minor gaps"),
     tr("Полностью верно и полно", "Fully right and complete")], start=1)}


def option_widget(o: Option, key: str) -> Any:
    """One widget per option of the judge-metric table (its type, bounds and labels say which)."""
    label, help_ = tr(o.ru, o.en), tr(o.help_ru, o.help_en) or None
    if o.kind == "text":
        return st.text_input(label, tr("Ответ вежлив и по существу?", "Is the answer polite and to the point?"),
                             key=key, help=help_)
    if o.kind == "int":
        return st.slider(label, int(o.low or 1), int(o.high or 10), int(o.default or o.low or 1), key=key, help=help_)
    if o.kind == "float" and o.name == "threshold":
        use = st.checkbox(tr("Порог прохождения", "Pass threshold"), o.default is not None, key=f"{key}_use")
        lo, hi = float(o.low or 0.0), float(o.high or 1.0)
        value = st.slider(label, lo, hi, float(o.default if o.default is not None else (lo + hi) / 2),
                          (hi - lo) / 20, key=key, help=help_)
        return value if use else None
    if o.kind == "float":
        return st.number_input(label, value=float(o.default or 0.0), key=key, help=help_)
    if o.kind == "json":
        return st.text_area(label, json.dumps(_default_rubrics(), ensure_ascii=False, indent=1), key=key, help=help_)
    if o.kind == "list":
        current = state.current_embedder_name()
        choices = list(dict.fromkeys([current, *BUILTIN_EMBEDDERS]))
        return st.multiselect(label, choices, default=[current], key=key, help=help_, placeholder=tr("Выберите…", "Choose…")) or None
    raise ValueError(f"no widget for option kind {o.kind!r}")


def _render_options(metric: str) -> tuple[dict[str, Any], bool]:
    """The chosen metric's options (one widget each) and Run."""
    cfg: dict[str, Any] = {}
    with st.form("jm_form", border=True, enter_to_submit=False):
        for opt in JUDGE_METRICS[metric].options:
            cfg[opt.name] = option_widget(opt, f"jm_opt_{metric}_{opt.name}")
        run = auth.submit("run", st, tr("Запустить", "Run"), type="primary", key="jm_run", icon=":material/play_arrow:")
    return cfg, run


def samples_dataset(source: str, upload: Any) -> int | None:
    """The samples to judge, stored as a dataset (the demo show/no-show set, or the uploaded file)."""
    if source == "demo":
        return store_samples(state.engine(), samples_from_judge_set(get_dataset(state.engine(), "demo_judge", "judge")),
                             "demo_judge_samples").id
    if upload is None:
        st.warning(tr("Загрузите файл с примерами.", "Upload a sample file."))
        return None
    up_name, up_data = uploads.read(upload)
    samples = read_samples(up_name, data=up_data)
    return store_samples(state.engine(), samples, Path(up_name).stem).id


def _submitted(f: dict, cfg: dict[str, Any], s: Any, providers: Any) -> tuple[dict[str, Any] | None, Any]:
    """The run's parameters (and a paid run's estimate) from the form."""
    metric, source, limit, upload, models, aggregate, quorum, vote_quorum, use_cache = (f[k] for k in FORM_KEYS)
    submitted_params: dict[str, Any] | None = None
    estimate = None
    with state.user_errors("Не удалось выполнить оценку", "Evaluation failed"):
        if isinstance(cfg.get("rubrics"), str):
            cfg["rubrics"] = read_rubrics(cfg["rubrics"])
        cfg = JUDGE_METRICS[metric].resolve({k: v for k, v in cfg.items() if v is not None})
        dataset_id = samples_dataset(source, upload)
        if dataset_id is not None:
            submitted_params = {"dataset": dataset_id, "metric": metric, "models": models or None, "aggregate": aggregate,
                                "quorum": quorum, "vote_quorum": vote_quorum, "use_cache": use_cache, "config": cfg,
                                "limit": int(limit), "lang": s.language if s.language in ("ru", "en") else "ru"}
            if providers and JUDGE_METRICS[metric].prompt is not None:  # a paid run: per sample, each model per vote
                votes = int(cfg.get(JUDGE_METRICS[metric].runs_option or "", 1) or 1)
                estimate = paid_run.estimate(paid_run.items_to_run("samples", dataset_id, int(limit)) * votes, models)
    return submitted_params, estimate


def _start_run(f: dict, cfg: dict[str, Any], run: bool, s: Any, providers: Any) -> None:
    submitted_params: dict[str, Any] | None = None
    estimate = None
    if run:
        submitted_params, estimate = _submitted(f, cfg, s, providers)
    if start_confirmed(RUN_KEY, submitted_params, estimate, jm.build_plan) is not None:
        st.session_state.pop("jm_result", None)


def _picked_summary() -> tuple[runs.Run | None, dict | None]:
    """The run shown (ui.run_view): the one just made, else the link's, else the latest judge-metrics run; its
    summary unless it is still running (its progress is shown above)."""
    picked = run_view.run_section(TIER, RUN_KEY, caption=False, stop_while_running=False)
    live = executor.get_job(picked.id) if picked is not None else None
    out = None
    if picked is not None and not (live is not None and live.alive):  # a running job shows its progress above
        out = st.session_state.get("jm_result")
        if not out or out.get("run_id") != picked.id or out.get("status") != picked.status:
            out = run_summary(picked, runs.item_records(state.engine(), picked.id))
            st.session_state["jm_result"] = out
    return picked, out


def _render_result(picked: runs.Run, out: dict, metric_names: dict) -> None:
    jobs.run_caption(picked)  # its verdict first, the offline badge, what was run
    p_ = picked.params or {}
    quorums = " · ".join(f"{tr(ru, en)}: {tr(*QUORUM_LABELS.get(str(p_[k]), (str(p_[k]),) * 2))}"
                         for k, ru, en in (("quorum", "кворум моделей", "model quorum"),
                                           ("vote_quorum", "кворум голосов", "vote quorum")) if p_.get(k) is not None)
    st.caption(f"{tr('Запуск', 'Run')} #{out['run_id']} · {metric_names.get(out['metric'], out['metric'])} · "
               f"{tr('модели', 'models')}: {', '.join(out['models']) or '—'} · {tr('агрегатор', 'aggregator')}: "
               f"{tr(*AGGREGATOR_LABELS.get(out['aggregate_method'], (out['aggregate_method'],) * 2))}"
               + (f" · {quorums}" if quorums else ""))
    metric_cards(out["metrics"])
    df = _results_frame(out)
    only_failed = st.checkbox(tr("Только сбои", "Failures only"), key="jm_only_failed")
    view = df[df["failures"] > 0] if only_failed and not df.empty else df
    table_with_download(view, f"judge_{out['metric']}_{out['run_id']}", key="jm_table", labels=JM_LABELS)
    json_download(out, f"judge_{out['metric']}_{out['run_id']}_full", label=tr("⬇ Полный JSON", "⬇ Full JSON"))
    _render_sample(out)


def _results_frame(out: dict) -> pd.DataFrame:
    rows = []
    for r in out["results"]:
        row = {"item_key": r["item_key"], "user_input": r["user_input"], "score": r["score"], "passed": r["passed"],
               "scale": r["scale"], "failure_kind": r.get("failure_kind"), "partial": r.get("partial"),
               "answered": f"{r.get('n_answered', 0)}/{r.get('n_asked', 0)}", "failures": len(r["failures"])}
        row.update({f"{tr('модель', 'model')} {m}": v for m, v in r["per_model"].items()})
        rows.append(row)
    return pd.DataFrame(rows)


def _render_sample(out: dict) -> None:
    st.subheader(tr("Разбор примера", "Sample drill-down"))
    keys = [r["item_key"] for r in out["results"]]
    if not keys:
        return
    pick = st.selectbox(tr("Пример", "Sample"), keys, key="jm_pick")
    r = next(x for x in out["results"] if x["item_key"] == pick)
    untrusted.labelled(tr("Вопрос", "Question"), r["user_input"])
    shown = "—" if r["score"] is None else f"{r['score']:.3f}".rstrip("0").rstrip(".")
    st.markdown(f"**{tr('Оценка', 'Score')}:** {shown} ({r['scale']})"
                + (" · " + tr("офлайн-эвристика", "offline heuristic") if r["offline"] else ""))
    if r["explanation"]:
        untrusted.labelled(tr("Объяснение", "Explanation"), r["explanation"])
    if r["failures"]:
        st.error(tr("Сбои", "Failures") + ":")
        tables.show(pd.DataFrame(r["failures"]), f"judge_{out['run_id']}_{pick}_failures", download=False)
    if r["raw_replies"]:
        with st.expander(tr("Сырые ответы моделей", "Raw model replies")):
            for t in r["raw_replies"]:
                st.code(t)
    if r.get("details"):
        _render_details(r, out, pick)


def _render_details(r: dict, out: dict, pick: str) -> None:
        with st.expander(tr("Подробности", "Details")):
            details = r["details"] if isinstance(r["details"], dict) else {"details": r["details"]}
            records = {k: v for k, v in details.items()  # lists of records (sentences, statements…) read as tables
                       if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
            tables.definition_list([(tables.header(str(k)), v) for k, v in details.items() if k not in records])
            for k, v in records.items():
                st.markdown(f"**{tables.header(str(k))}**")
                tables.show(pd.DataFrame(v), f"judge_{out['run_id']}_{pick}_{k}", key=f"jm_details_{k}")


def _render_page() -> None:
    s = state.settings()
    providers = configured_providers(s)
    models_available = all_models(providers)
    llm_notice()  # before the run: whether it can use an LLM, and the way to Settings when not
    metric_names = {m: JUDGE_METRICS[m].label(lang()) for m in JUDGE_METRICS}  # resolved now: format_func runs later too
    f = _render_settings(metric_names, models_available)
    cfg, run = _render_options(f["metric"])
    _start_run(f, cfg, run, s, providers)
    picked, out = _picked_summary()
    if not out:
        empty_state("Выберите метрику вверху и нажмите «Запустить». Без настроенного LLM работает офлайн-эвристика.",
                    "Pick a metric above and press Run. Without a configured LLM the offline heuristic is used.")
    else:
        _render_result(picked, out, metric_names)


init_page_state()
_render_page()
