"""Tier 3 — end to end: internal pipeline or the bot's HTTP API (presets, saved bot profiles, outcomes)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.bot_api import profiles
from voproshalych_eval.bot_api.client import ERROR_KIND_LABELS
from voproshalych_eval.bot_api.spec import (
    PRESETS,
    BotApiSpec,
    OutcomeRule,
    header_variables,
    parse_header,
    spec_from_options,
)
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.engine import runs
from voproshalych_eval.plots.generation import (
    OUTCOME_STYLE,
    metric_intervals,
    outcome_bars,
    score_distributions,
)
from voproshalych_eval.tiers import tier3
from voproshalych_eval.tiers.page_context import MODES
from voproshalych_eval.ui import auth, jobs, paid_run, run_view, state, untrusted
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt, lang, metric_label, tr
from voproshalych_eval.ui.run_page import start_confirmed, submitted_params
from voproshalych_eval.ui.widgets import (
    TIER_COLORS,
    json_download,
    llm_notice,
    metric_cards,
    page_header,
    table_with_download,
)

KEY = "tier3_run_id"
SCORES = ["rag_score", "e2e_score", "semantic_similarity", "rougeL_f"]
NEW = "—"
#: metric with counts by kind -> (ru, en) category of the outcome-kinds table
KIND_GROUPS = {"errors_by_kind": ("ошибка", "error"), "declines_by_reason": ("отказ", "decline"),
               "transport_failures": ("сбой транспорта (с повторёнными)", "transport failure (retried included)")}
GATE_RULE = (
    "Ворота развёртывания: доля прошедших среди ВСЕХ вопросов. Ответ проходит при вердикте PASS; отказ бота "
    "(«не найдено», «запрещено») на вопрос, на который в базе есть ответ, — НЕ проходит, а отказ на вопрос без "
    "ответа (в эталонном наборе нет релевантных чанков и URL) — проходит; ошибка запроса не проходит никогда.",
    "Deployment gate: the share of ALL questions that pass. An answer passes on a PASS verdict; a decline "
    "(not found / banned) on a question the knowledge base answers does NOT pass, a decline on an unanswerable "
    "question (no relevant chunks or URLs in the golden set) passes; a request error never passes.",
)

def outcome_word(outcome: str) -> str:
    """A reply outcome (answered / not_found / banned / error) in words of the UI language."""
    ru, en, _color = OUTCOME_STYLE.get(outcome, (outcome, outcome, ""))
    return tr(ru, en)


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Tier 3 · Сквозная оценка", "Tier 3 · End to end"),
        tr("Весь путь: поиск → генерация → ответ, внутренним конвейером или через API бота.",
           "The whole path: retrieval → generation → answer, by the internal pipeline or the bot's API."),
        tr(
            "Каждый вопрос получает исход: ответ, «не найдено», «запрещено» (отказы бота — исходы, не ошибки) или "
            "ошибка запроса. Судья (из теста RAG + LLM на качество ответа) оценивает корректность и обоснованность **отвеченных** вопросов по "
            "возвращённым чанкам (или по тексту страницы из базы знаний, если API вернул только URL); PASS — оценка ≥ "
            "порога. Все оценки судьи и сходства — средние по отвеченным вопросам (n под карточкой). Семантическое "
            "сходство — косинус эмбеддингов ответа и эталона (−1…1, больше — лучше), евклидово расстояние тех же "
            "единичных векторов (0…2, меньше — лучше). " + GATE_RULE[0],
            "Every question gets an outcome: answered, not found, banned (the bot's declines — outcomes, not errors) "
            "or a request error. The judge (of the RAG + LLM answer-quality test) scores correctness and groundedness of the **answered** "
            "questions on the returned chunks (or on the knowledge-base text of the page when the API returned only a "
            "URL); PASS when the score ≥ threshold. All judge and similarity scores are means over the answered "
            "questions (n under each card). Semantic similarity is the cosine of the answer and reference embeddings "
            "(−1…1, higher is better), Euclidean distance of the same unit vectors (0…2, lower is better). "
            + GATE_RULE[1],
        ),
    )


def _render_mode_row(eng: Any) -> tuple[str, BotApiSpec | None, dict[str, profiles.BotProfile], str, str]:
    """What the form asks for: the mode, then the bot profile or an API preset."""
    mode_labels = {"internal": tr("внутренний конвейер", "internal pipeline"), "api": tr("API бота", "bot API")}
    top = st.columns([2, 3, 3])  # what the form asks for: the mode, then the bot profile or an API preset
    mode = top[0].radio(tr("Режим", "Mode"), list(mode_labels), format_func=mode_labels.get, key="t3_mode", horizontal=True)

    spec: BotApiSpec | None = None
    saved: dict[str, profiles.BotProfile] = {}
    profile_name = NEW
    fk = ""
    if mode != "api":
        return mode, spec, saved, profile_name, fk
    saved = {p.name: p for p in state.safe_call(profiles.list_profiles, eng, default=[]) or []}
    profile_labels = {NEW: tr("— новый —", "— new —"), **{n: n for n in saved}}
    profile_name = top[1].selectbox(tr("Профиль бота", "Bot profile"), list(profile_labels), key="t3_profile",
                                    format_func=profile_labels.get)
    if profile_name == NEW:
        preset = top[2].selectbox(tr("Шаблон API", "API preset"), list(PRESETS), key="t3_preset",
                                  help=tr("voproshalych — сервис QA в продакшене (POST /qa/); search-rag — "
                                          "GET /llm/search-rag?questions= из теста RAG + LLM; custom — свой.",
                                          "voproshalych — the production QA service (POST /qa/); search-rag — "
                                          "the RAG + LLM test's GET /llm/search-rag?questions=; custom — your own."))
        spec = spec_from_options("http://localhost:8080", preset=preset)
    else:
        spec = saved[profile_name].spec
    # widget keys follow the profile / preset, so that switching fills the form with its settings
    fk = f"{profile_name}|{spec.preset}"
    return mode, spec, saved, profile_name, fk


def _render_form(golden: list[str], stored_golden: list[dict], llm_ok: bool, spec: BotApiSpec | None, fk: str,
                 profile_name: str, judge_context: profiles.JudgeContext) -> dict:
    """The run form at the top: Run visible without scrolling."""
    api = None
    with st.form("tier3_form", border=True, enter_to_submit=False):  # the run form at the top: Run visible without scrolling
        f1, f2, f3, f4 = st.columns([3, 2, 2, 2])
        # the form starts from the dataset of the run shown (ui.run_view), not from the newest dataset
        ds_name = f1.selectbox(tr("Набор данных", "Dataset"), golden or ["demo_golden"],
                               index=run_view.default_dataset_index("tier3", stored_golden))
        limit = f2.number_input(tr("Первые N вопросов (0 — все)", "First N questions (0 = all)"), 0, 100000, 10)
        threshold = f3.slider(tr("Порог PASS", "PASS threshold"), 0.0, 1.0, 0.5, 0.05)
        min_pass = f4.slider(tr("Ворота: мин. доля прошедших", "Gate: min pass rate"), 0.0, 1.0, 0.0, 0.05,
                             help=tr(*GATE_RULE))
        if spec is not None:
            with st.expander(tr("Запрос к боту", "Request to the bot"), expanded=profile_name == NEW):
                api = _render_api_fields(spec, fk, profile_name, judge_context)
        g1, g2, g3, g4, g5 = st.columns([2, 2, 3, 2, 2])
        top_k = g1.number_input("top-k", 1, 50, 1) if spec is None else 1
        offline = g2.checkbox(tr("Офлайн (без LLM)", "Offline (no LLM)"), value=not llm_ok, key="t3_offline")
        concurrency = g3.slider(tr("Параллельно", "Concurrency"), 1, 16, 4)
        submitted = auth.submit("run", g4, tr("Запустить", "Run"), type="primary", key="t3_run", icon=":material/play_arrow:",
                                          use_container_width=True)
        save_clicked = spec is not None and auth.submit("bot", g5, tr("Сохранить профиль", "Save profile"), key="t3_save_profile",
                                                                  use_container_width=True)
    return {"ds_name": ds_name, "limit": limit, "threshold": threshold, "min_pass": min_pass, "api": api,
            "top_k": top_k, "offline": offline, "concurrency": concurrency, "submitted": submitted,
            "save_clicked": save_clicked}


def _render_api_fields(spec: BotApiSpec, fk: str, profile_name: str, judge_context: profiles.JudgeContext) -> dict:
    """The request to the bot; widget keys follow the profile / preset (``fk``)."""
    return _render_api_request(spec, fk) | _render_api_rules(spec, fk, profile_name, judge_context)


def _render_api_request(spec: BotApiSpec, fk: str) -> dict:
    url = st.text_input(tr("URL (шаблон, {question} — вопрос)", "URL (template, {question} = the question)"),
                        spec.url, key=f"t3_url|{fk}")
    method = st.selectbox(tr("Метод", "Method"), ["GET", "POST"], index=["GET", "POST"].index(spec.method),
                          key=f"t3_method|{fk}")
    body_text = st.text_area(
        tr("Тело JSON (POST): «{question}», «{dialog_context}»",
           "JSON body (POST): \"{question}\", \"{dialog_context}\""),
        json.dumps(spec.body, ensure_ascii=False) if spec.body is not None else "", key=f"t3_body|{fk}")
    headers_text = st.text_area(
        tr("Заголовки, по одному в строке (секреты — только ${ПЕРЕМЕННАЯ})",
           "Headers, one per line (secrets only as ${VARIABLE})"),
        "\n".join(f"{k}: {v}" for k, v in spec.headers.items()), key=f"t3_headers|{fk}",
        placeholder="Authorization: Bearer ${BOT_TOKEN}",
        help=tr("Значение переменной берётся из окружения или secrets.toml в момент запроса и нигде не сохраняется.",
                "The variable's value is read from the environment or secrets.toml at request time and never stored."))
    p1, p2, p3 = st.columns(3)
    answer_path = p1.text_input(tr("JSON-путь ответа", "Answer JSON path"), spec.answer_path, key=f"t3_ap|{fk}")
    url_path = p2.text_input(tr("JSON-путь URL страницы", "Page URL JSON path"), spec.url_path or "",
                             key=f"t3_up|{fk}")
    chunks_path = p3.text_input(tr("JSON-путь чанков", "Chunks JSON path"), spec.chunks_path or "",
                                key=f"t3_cp|{fk}")
    c1, c2, c3, c4 = st.columns(4)
    timeout = c1.number_input(tr("Таймаут, с", "Timeout, s"), 1.0, 600.0, float(spec.timeout_s), key=f"t3_to|{fk}")
    rps = c2.number_input(tr("Запросов/с (0 — без лимита)", "Requests/s (0 = no limit)"), 0.0, 100.0,
                          float(spec.rps or 0.0), key=f"t3_rps|{fk}")
    retries = c3.number_input(tr("Повторы", "Retries"), 0, 10, int(spec.retries), key=f"t3_rt|{fk}")
    backoff = c4.number_input(
        tr("Пауза перед повтором, с", "Retry backoff, s"), 0.0, 60.0, float(spec.retry_backoff_s), 0.5,
        key=f"t3_bo|{fk}", help=tr("Первая пауза; удваивается с каждой попыткой (Retry-After ответа 429 важнее).",
                                   "The first pause; doubled per attempt (a 429's Retry-After wins)."))
    return {"url": url, "method": method, "body_text": body_text, "headers_text": headers_text,
            "answer_path": answer_path, "url_path": url_path, "chunks_path": chunks_path, "timeout": timeout,
            "rps": rps, "retries": retries, "backoff": backoff}


def _render_api_rules(spec: BotApiSpec, fk: str, profile_name: str, judge_context: profiles.JudgeContext) -> dict:
    rules_text = st.text_area(
        tr("Правила исходов: СТАТУС[:РЕГВЫР]=ИСХОД", "Outcome rules: STATUS[:REGEX]=OUTCOME"),
        "\n".join(r.describe() for r in spec.outcomes), key=f"t3_rules|{fk}",
        help=tr("Исходы: answered (ответ), not_found («не найдено»), banned (запрет), error (ошибка). "
                "Первое подходящее правило решает.",
                "Outcomes: answered, not_found (not found), banned, error. The first matching rule decides."))
    k1, k2 = st.columns([3, 1])
    context_from = k1.selectbox(
        tr("Если API вернул только URL — контекст для судьи", "When the API returns only a URL — judge's context"),
        list(MODES), index=list(MODES).index(judge_context.context_from), key=f"t3_ctx|{fk}",
        format_func={"page": tr("все чанки страницы", "all chunks of the page"),
                     "nearest": tr("ближайшие к вопросу чанки страницы", "the page's chunks nearest to the question"),
                     "none": tr("без контекста", "no context")}.get)
    context_k = k2.number_input(tr("Ближайших чанков", "Nearest chunks"), 1, 50, judge_context.context_k,
                                key=f"t3_ctxk|{fk}")
    save_as = st.text_input(tr("Сохранить как профиль", "Save as profile"),
                            "" if profile_name == NEW else profile_name, key=f"t3_save|{fk}")
    return {"rules_text": rules_text, "context_from": context_from, "context_k": context_k, "save_as": save_as}


def _form_spec(api: dict, spec: BotApiSpec | None) -> BotApiSpec:
    """The bot API settings as entered (validated; a literal credential in a header is refused)."""
    body = json.loads(api["body_text"]) if api["body_text"].strip() else None
    headers = dict(parse_header(line) for line in api["headers_text"].splitlines() if line.strip())
    rules = tuple(OutcomeRule.parse(line.strip()) for line in api["rules_text"].splitlines() if line.strip())
    return BotApiSpec(
        url=api["url"].strip(), method=api["method"], body=body, headers=headers,
        answer_path=api["answer_path"].strip(), url_path=api["url_path"].strip() or None,
        chunks_path=api["chunks_path"].strip() or None, timeout_s=float(api["timeout"]),
        rps=float(api["rps"]) or None, retries=int(api["retries"]), retry_backoff_s=float(api["backoff"]),
        outcomes=rules, preset=spec.preset if spec else None,
    ).validate()


def _save_profile(eng: Any, api: dict, spec: BotApiSpec | None) -> None:
    save_as = api["save_as"]
    with state.user_errors("Не удалось сохранить профиль", "Could not save the profile"), \
            auth.audited("bot", save_as, {"op": "save_profile"}):
        prof = profiles.save_profile(eng, save_as, _form_spec(api, spec),
                                     judge_context=profiles.JudgeContext(api["context_from"], int(api["context_k"])))
        st.success(tr(f"Профиль «{prof.name}» сохранён.", f"Profile '{prof.name}' saved."))
        need = header_variables(prof.spec.headers)
        if need:
            st.caption(tr("Нужные переменные: ", "Variables needed: ") + ", ".join(need))


def _form_params(form: dict, mode: str, spec: BotApiSpec | None, profile_name: str, use_offline: bool) -> dict:
    """The run's parameters from the form (a bad bot API form raises: shown as a sentence)."""
    form_params = {"dataset": form["ds_name"], "limit": int(form["limit"]) or None, "mode": mode,
                   "threshold": form["threshold"], "min_pass_rate": form["min_pass"] or None, "offline": use_offline,
                   "concurrency": form["concurrency"]}
    if mode == "api":
        api = form["api"]
        form_params.update(api=_form_spec(api, spec).to_dict(), context_from=api["context_from"],
                           context_k=int(api["context_k"]), api_profile=None if profile_name == NEW else profile_name)
    else:
        form_params["top_k"] = int(form["top_k"])
    return form_params


def _start_run(form: dict, mode: str, spec: BotApiSpec | None, profile_name: str, llm_ok: bool) -> None:
    def params(use_offline: bool) -> dict | None:
        with state.user_errors("Не удалось запустить", "Could not start the run"):  # a bad bot API form: a sentence
            return _form_params(form, mode, spec, profile_name, use_offline)
        return None

    def estimate(_: dict) -> object:  # a paid run: its calls, tokens and cost confirmed first
        # per item: a call per judge metric, and the internal pipeline's generation (a bot API is not our LLM)
        per_item = len(tier3.JUDGE_METRICS) + (1 if mode == "internal" else 0)
        return paid_run.estimate(paid_run.items_to_run("golden", form["ds_name"], int(form["limit"])) * per_item)

    submitted, cost = submitted_params(form["submitted"], form["offline"], llm_ok, params=params, estimate=estimate)
    start_confirmed(KEY, submitted, cost, tier3.build_plan)


def _render_run() -> runs.Run:
    """The run shown (ui.run_view): the one just made, else the link's, else the latest Tier 3 run (its dataset
    picked in the result block, whatever the form's dataset)."""
    run = run_view.run_section("tier3", KEY, empty=("Запусков ещё нет — задайте параметры вверху и нажмите «Запустить».",
                                                    "No runs yet — set the parameters above and press Run."))
    run_view.scope_to_run("tier3", run.id, ("t3_item",), params=("item",))
    api_settings = (run.params or {}).get("api")
    if api_settings:
        st.caption(tr("API бота: ", "Bot API: ") + untrusted.md(f"{api_settings.get('method')} {api_settings.get('url')}")
                   + (f" · {tr('профиль', 'profile')} {untrusted.md(run.params.get('api_profile'))}"
                      if run.params.get("api_profile") else ""))
    return run


def _render_outcomes(run: runs.Run, m: dict) -> None:
    st.subheader(tr("Исходы", "Outcomes"))
    metric_cards({k: m[k] for k in ("answered_rate", "not_found_rate", "banned_rate", "error_rate") if k in m})
    if "n_answered" in m:
        st.caption(tr(
            f"Из {m.get('n_items')} вопросов: ответов {m.get('n_answered')}, «не найдено» {m.get('n_not_found')}, "
            f"запретов {m.get('n_banned')}, ошибок {m.get('n_error')}.",
            f"Of {m.get('n_items')} questions: answered {m.get('n_answered')}, not found {m.get('n_not_found')}, "
            f"banned {m.get('n_banned')}, errors {m.get('n_error')}."))
    kinds = [(tr(*KIND_GROUPS[group]), tr(*ERROR_KIND_LABELS.get(k, (k, k))), n)
             for group in KIND_GROUPS for k, n in (m.get(group) or {}).items()]
    if kinds:
        table_with_download(pd.DataFrame(kinds, columns=["category", "kind", "n"]), f"tier3_run{run.id}_outcomes",
                            key=f"t3o{run.id}")
    if m.get("outcomes_by_answerability"):
        plotly_chart(outcome_bars(m["outcomes_by_answerability"], lang=lang(), title=tr(
            "Исходы по вопросам с ответом в базе и без него", "Outcomes of answerable and unanswerable questions")))
    if m.get("n_context_reconstructed"):
        st.info(tr(
            f"Контекст восстановлен из базы знаний для {m['n_context_reconstructed']} ответов: API вернул только URL "
            "страницы, судья оценивал по тексту этой страницы.",
            f"Context reconstructed from the knowledge base for {m['n_context_reconstructed']} answers: the API "
            "returned only the page URL, the judge scored against that page's text."))


def _render_quality(run: runs.Run, m: dict) -> None:
    st.subheader(tr("Качество отвеченных", "Quality of the answered"))
    keys = [k for k in ("pass_rate", "avg_e2e_score", "avg_semantic_similarity", "avg_euclidean_distance", "avg_rouge1_f",
                        "avg_rougeL_f", "avg_bleu", "avg_chrf", "retrieval_hit_rate", "url_hit_rate",
                        "response_exact_match_rate", "response_semantic_consistency") if k in m]
    metric_cards({k: m[k] for k in keys})
    if m.get("gate_passed") is None and m.get("gate_pass_rate") is not None:
        st.caption(tr("Доля прошедших ворота: ", "Gate pass rate: ") + fmt("gate_pass_rate", m["gate_pass_rate"]))
    st.caption(tr(*GATE_RULE))
    lat = {k: m.get(k) for k in ("latency_p50", "latency_p95", "latency_p99") if m.get(k) is not None}
    if lat:
        st.caption(tr("Задержка ответа: ", "Answer latency: ") + ", ".join(f"{metric_label(k)} {fmt(k, v)}" for k, v in lat.items()))
    plotly_chart(metric_intervals(m, ["answered_rate", "pass_rate", "avg_e2e_score", "avg_rougeL_f", "retrieval_hit_rate"],
                                     color=TIER_COLORS["tier3"], lang=lang(), title=tr("Средние и 95% ДИ", "Means and 95% CI")))
    json_download(m, f"tier3_run{run.id}_metrics", key=f"t3m{run.id}")


def _render_items(run: runs.Run) -> pd.DataFrame:
    """The per-question scores and table, filtered by outcome; returns the rows shown."""
    df = jobs.items_frame(run.id)
    if df.empty:
        st.stop()
    score_cols = [c for c in SCORES if c in df.columns]
    if score_cols:
        plotly_chart(score_distributions(df, score_cols, color=TIER_COLORS["tier3"], lang=lang(),
                                            title=tr("Оценки по вопросам", "Per-question scores")))
    st.subheader(tr("Вопросы", "Questions"))
    filtered = jobs.filter_items(df, key="t3", score_cols=score_cols, disagreement=jobs.per_model_spread())
    if "outcome" in filtered.columns:
        present = [o for o in OUTCOME_STYLE if o in set(filtered["outcome"].dropna())]
        words = {o: outcome_word(o) for o in present}  # resolved now: format_func runs later too
        chosen = st.multiselect(tr("Исход", "Outcome"), present, default=present, key="t3_outcomes", format_func=words.get,
                                placeholder=tr("Выберите исходы", "Choose outcomes"))
        filtered = filtered[filtered["outcome"].isin(chosen)]
    if "passed" in filtered.columns and st.checkbox(tr("Только FAIL", "FAIL only"), key="t3_fail"):
        filtered = filtered[filtered["passed"] == False]  # noqa: E712
    shown = jobs.flat_table(filtered, ["question", "outcome", "reason", "gate_pass", "passed", "error_message",
                                      *SCORES, "euclidean_distance", "retrieval_hit", "url_hit", "context_source"])
    if "outcome" in shown.columns:  # outcomes in words of the UI language
        shown["outcome"] = shown["outcome"].map(lambda o: outcome_word(o) if isinstance(o, str) else o)
    table_with_download(shown, f"tier3_run{run.id}_items", key=f"t3i{run.id}")
    return filtered


def _render(row: dict) -> None:
    # declined and failed items have no answer, contexts or judges: their cells are NaN in the table
    row = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
    untrusted.labelled(tr("Вопрос", "Question"), row.get("question"))
    st.caption(f"{tr('Исход', 'Outcome')}: {outcome_word(row['outcome']) if row.get('outcome') else '—'}"
               + (f" · {untrusted.md(row.get('reason'))}" if row.get("reason") else ""))
    c1, c2 = st.columns(2)
    untrusted.labelled(tr("Ответ системы", "System answer"), row.get("answer"), where=c1)
    untrusted.labelled(tr("Эталон", "Reference"), row.get("reference"), where=c2)
    if row.get("error_message"):
        st.error(untrusted.md(row["error_message"]))
    title = (tr("Контекст, восстановленный из базы знаний", "Context reconstructed from the knowledge base")
             if row.get("context_reconstructed") else tr("Возвращённые чанки", "Returned chunks"))
    with st.expander(title):
        st.caption(untrusted.md(row.get('retrieved_urls') or row.get('returned_url') or ''))
        for c in row.get("contexts") or []:
            st.text(c)
    for name, res in (row.get("judges") or {}).items():
        jobs.judge_reply_view(name, res)


def _render_page() -> None:
    eng = state.engine()
    stored_golden = datasets.list_datasets(eng, "golden")
    golden = [d["name"] for d in stored_golden]
    llm_ok = llm_notice()  # before the run: whether it can use an LLM, and the way to Settings when not
    mode, spec, saved, profile_name, fk = _render_mode_row(eng)
    judge_context = saved[profile_name].judge_context if profile_name in saved else profiles.JudgeContext()
    form = _render_form(golden, stored_golden, llm_ok, spec, fk, profile_name, judge_context)
    if form["save_clicked"]:
        _save_profile(eng, form["api"], spec)
    _start_run(form, mode, spec, profile_name, llm_ok)
    run = _render_run()
    m = run.metrics or {}
    # the deployment gate's PASS / FAIL is a line of the run's one verdict above (jobs.run_caption), never a second box
    if m:
        _render_outcomes(run, m)
        _render_quality(run, m)
    filtered = _render_items(run)
    st.subheader(tr("Разбор вопроса", "Item drill-down"))
    jobs.drilldown(filtered, key="t3", render=_render)


init_page_state()
_render_page()
