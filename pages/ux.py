"""UX: similar-question cache, context preservation, multi-turn consistency."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.engine import runs
from voproshalych_eval.plots.generation import rate_bars
from voproshalych_eval.tiers import ux
from voproshalych_eval.ui import auth, jobs, paid_run, run_view, state, tables, untrusted
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt, fmt_count, lang, metric_label, tr
from voproshalych_eval.ui.run_page import run_results, start_confirmed, submitted_params
from voproshalych_eval.ui.widgets import (
    TIER_COLORS,
    json_download,
    llm_notice,
    metric_cards,
    page_header,
    table_with_download,
)

KEY = "ux_run_id"


def _source_labels() -> dict[str, str]:
    return {"dialogs": tr("набор диалогов", "dialog dataset"), "log": tr("журнал вопросов", "question log")}


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("UX", "UX"),
        tr("Что видит пользователь в разговоре: кэш похожих вопросов, удержание контекста, согласованность ответов.",
           "What a user sees in a conversation: the similar-question cache, context kept, consistent answers."),
        tr(
            "`cache_hit_rate` — доля вопросов, на которые ответил бы кэш (раньше был похожий вопрос с ответом 👍 на "
            "косинусном расстоянии ≤ порога; в продакшене 0.6). `context_preservation` — для **уточняющих** вопросов "
            "(та же тема, что у предыдущего хода) доля, где система осталась на странице разговора. "
            "`multi_turn_consistency` — для **повторно заданных** вопросов (перефразировок) средний косинус между "
            "эмбеддингами двух ответов (−1…1, больше — согласованнее). Это разные измерения: разные пары ходов и разные "
            "сигналы (страница или текст ответа). Сессии журнала: по пользователю, разрыв на `stop_point` и на паузе.",
            "`cache_hit_rate` — share of questions the cache would answer (an earlier 👍-rated question within the cosine "
            "distance threshold; production 0.6). `context_preservation` — for **follow-up** questions (same topic as the "
            "previous turn) the share where the system stays on the conversation's page. `multi_turn_consistency` — for "
            "**re-asked** questions (paraphrases) the mean cosine between the two answers' embeddings (−1…1, higher is more "
            "consistent). They are different measurements: different turn pairs, different signals (page vs answer text). "
            "Log sessions: per user, split at `stop_point` and at long pauses.",
        ),
    )


def _render_form(stored_dialogs: list[dict], dialog_sets: list[str], llm_ok: bool) -> dict:
    """The run form at the top: Run visible without scrolling."""
    source_labels = _source_labels()
    with st.form("ux_form", border=True, enter_to_submit=False):  # the run form at the top: Run visible without scrolling
        f1, f2, f3 = st.columns([2, 3, 2])
        source = f1.radio(tr("Источник", "Source"), list(source_labels), format_func=source_labels.get, horizontal=True)
        # the form starts from the dataset of the run shown (ui.run_view), not from the newest dataset
        ds_name = f2.selectbox(tr("Набор диалогов", "Dialog dataset"), dialog_sets,
                               index=run_view.default_dataset_index("ux", stored_dialogs))
        limit = f3.number_input(tr("Первые N диалогов/сессий (0 — все)", "First N dialogs/sessions (0 = all)"), 0, 1000000, 0)
        g1, g2, g3, g4 = st.columns([3, 2, 2, 2])
        cache_d = g1.slider(tr("Порог кэша (косинусное расстояние)", "Cache threshold (cosine distance)"), 0.0, 1.0, 0.6, 0.05)
        pause = g2.number_input(tr("Пауза, начинающая сессию, мин", "Pause that starts a session, min"), 1, 10000, 30)
        offline = g3.checkbox(tr("Офлайн (без LLM)", "Offline (no LLM)"), value=not llm_ok, key="ux_offline")
        submitted = auth.submit("run", g4, tr("Запустить", "Run"), type="primary", key="ux_run", icon=":material/play_arrow:",
                                          use_container_width=True)
    return {"source": source, "ds_name": ds_name, "limit": limit, "cache_d": cache_d, "pause": pause,
            "offline": offline, "submitted": submitted}


def _estimate(params: dict) -> object | None:
    """Only re-asked dialogs ("same") call the generator, once per turn."""
    if params["source"] != "dialogs":
        return None
    estimate = None
    with state.user_errors("Не удалось прочитать набор", "Could not read the dataset"):
        dialogs = datasets.get_dataset(state.engine(), params["dataset"], "dialogs").records[:params["limit"]]
        calls = sum(len(d.get("turns") or []) for d in dialogs if d.get("paraphrase_of") == "same")
        estimate = paid_run.estimate(calls) if calls else None
    return estimate


def _start_run(f: dict, llm_ok: bool) -> None:
    source, ds_name, limit, cache_d, pause = (f[k] for k in ("source", "ds_name", "limit", "cache_d", "pause"))
    params, estimate = submitted_params(
        f["submitted"], f["offline"], llm_ok, estimate=_estimate,
        params=lambda use_offline: {"source": source, "dataset": ds_name, "limit": int(limit) or None,
                                    "cache_distance": cache_d, "pause_minutes": pause, "offline": use_offline})
    start_confirmed(KEY, params, estimate, ux.build_plan)


def _render_metrics(run: runs.Run, m: dict) -> None:
    source_labels = _source_labels()
    keys = [k for k in ("cache_hit_rate", "context_preservation", "multi_turn_consistency", "multi_turn_source_agreement",
                        "first_turn_hit_rate", "cache_precision", "cache_recall", "cache_false_hit_rate", "avg_session_length",
                        "single_question_session_rate") if m.get(k) is not None]
    metric_cards({k: m[k] for k in keys})
    src = source_labels.get(str(m.get("source")), str(m.get("source")))
    n_items, n_turns, thr = fmt_count(m.get("n_items")), fmt_count(m.get("n_turns")), run.params.get("cache_distance")
    st.caption(tr(f"Источник: {src}, элементов: {n_items}, ходов: {n_turns}, порог кэша: {thr}",
                  f"Source: {src}, items: {n_items}, turns: {n_turns}, cache threshold: {thr}"))
    plotly_chart(rate_bars(m, ["cache_hit_rate", "context_preservation", "first_turn_hit_rate", "multi_turn_source_agreement",
                                  "cache_precision", "cache_recall", "cache_false_hit_rate"], color=TIER_COLORS["ux"],
                              lang=lang(), labels={k: metric_label(k) for k in keys}), key="ux_rates")
    json_download(m, f"ux_run{run.id}_metrics", key=f"uxm{run.id}")


def _render_turns(run: runs.Run, df: pd.DataFrame) -> None:
    turn_rows = [
        {"item_key": r["item_key"], "turn": i + 1, **{k: v for k, v in t.items() if not isinstance(v, list | dict)}}
        for _, r in df.iterrows() for i, t in enumerate(r.get("turns") or [])
    ]
    turns = pd.DataFrame(turn_rows)
    if not turns.empty and st.checkbox(tr("Только попадания в кэш", "Cache hits only"), key="ux_hits"):
        turns = turns[turns["cache_hit"] == True]  # noqa: E712
    table_with_download(turns, f"ux_run{run.id}_turns", key=f"uxt{run.id}")


def _yes_no(v: object) -> object:
    if isinstance(v, bool):
        return tr("да", "yes") if v else tr("нет", "no")
    return fmt(None, v) if isinstance(v, float) else v  # a distance: three decimals, as every unlisted float


def _pairs(value: object, name: str) -> None:
    """Turn pairs as a readable table (never a JSON tree)."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        tables.show(pd.DataFrame(value), name, download=False)
    elif isinstance(value, dict):
        tables.definition_list([(tables.header(str(k)), v) for k, v in value.items()])
    else:
        tables.definition_list([(str(i + 1), v) for i, v in enumerate(value if isinstance(value, list) else [value])])


def _render(row: dict) -> None:
    for i, t in enumerate(row.get("turns") or []):
        st.markdown(f"**{i + 1}.** {untrusted.md(t.get('question'))}")
        extra = {k: t.get(k) for k in ("expected_url", "retrieved_url", "url", "cache_hit", "cache_distance") if t.get(k) is not None}
        st.caption(" · ".join(f"{tables.header(k)}: {_yes_no(v)}" for k, v in extra.items()))
        if t.get("answer"):
            untrusted.text(t["answer"])
    if row.get("followup_pairs"):
        st.markdown(f"**{tr('Уточняющие пары', 'Follow-up pairs')}**")
        _pairs(row["followup_pairs"], f"ux_{row.get('item_key')}_followups")
    if row.get("reask_pairs"):
        st.markdown(f"**{tr('Переспрошенные пары', 'Re-asked pairs')}**")
        _pairs(row["reask_pairs"], f"ux_{row.get('item_key')}_reasks")


def _render_page() -> None:
    eng = state.engine()
    stored_dialogs = datasets.list_datasets(eng, "dialogs")
    dialog_sets = [d["name"] for d in stored_dialogs] or ["demo_dialogs"]
    llm_ok = llm_notice()  # before the run: whether it can use an LLM, and the way to Settings when not
    _start_run(_render_form(stored_dialogs, dialog_sets, llm_ok), llm_ok)
    # the run shown (ui.run_view): the one just made, else the link's, else the latest UX run
    run, df = run_results("ux", KEY, _render_metrics)
    _render_turns(run, df)
    jobs.drilldown(df, key="ux", render=_render)


init_page_state()
_render_page()
