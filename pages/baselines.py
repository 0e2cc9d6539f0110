"""Baselines: the one table of quality baselines (scale, direction, attention margin), editable, stored in the DB."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.engine import describe, runs
from voproshalych_eval.plans import PLANS
from voproshalych_eval.ui import auth, state, tables
from voproshalych_eval.ui.i18n import fmt, lang, tr
from voproshalych_eval.ui.verdicts import status_text
from voproshalych_eval.ui.widgets import empty_state, page_header

TIER_KEYS = [s.key for s in PLANS]
DIRECTIONS = {"higher": ("больше — лучше", "higher is better"), "lower": ("меньше — лучше", "lower is better"),
              "none": ("без направления", "no direction")}
EDITOR_KEY = "baselines_editor"


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Базовые уровни", "Baselines"),
        tr(
            "Одна таблица целевых значений качества для всех страниц, отчётов и CLI: значение и запас внимания.",
            "One table of quality targets used by every page, report and the CLI: value and attention margin.",
        ),
        tr(
            "Каждая строка — метрика уровня: базовое значение и запас внимания (в единицах метрики). **Шкала** "
            "(0–1, 1–5, 0–100, …) и **направление** (больше или меньше — лучше) берутся из каталога метрик и здесь "
            "только показаны; значение вне шкалы не сохраняется. Метрики уровней со ссылками "
            "на блоки (Tier 1: `chunk`/`url`) сверяются с базовым уровнем по имени метрики на обоих уровнях. "
            "Изменения сохраняются в базе данных кнопкой «Сохранить».\n\n" + bl.RULE_RU,
            "Each row is a metric of a tier: the baseline value and the attention margin (in the metric's own units). "
            "The **scale** (0–1, 1–5, 0–100, …) and **direction** (higher or lower is better) come from the metric "
            "catalog and are only shown here; a value outside the scale is not saved. Tiers with levels "
            "(Tier 1: `chunk`/`url`) are checked against the baseline of the metric's name at both levels. Edits are "
            "stored in the database with Save.\n\n" + bl.RULE_EN,
        ),
    )


def _render_editor(engine: Any) -> pd.DataFrame:
    """The baselines table, editable; scale and direction are the catalog's (read-only, ignored on save)."""
    frame = bl.baselines_frame(engine)
    for problem in bl.problems(engine):  # stored rows the checks refuse: skipped everywhere, named here
        st.warning(tr("Строка пропущена: ", "Row skipped: ") + problem)
    # scale and direction are the catalog's (read-only, ignored on save): shown in words
    frame["direction"] = frame["direction"].map(lambda d: tr(*DIRECTIONS[d]) if d in DIRECTIONS else d)
    st.markdown(tr(bl.RULE_RU, bl.RULE_EN))

    edited = st.data_editor(frame, key=EDITOR_KEY, num_rows="dynamic", hide_index=True,
                            column_config=_editor_columns())
    return edited


def _editor_columns() -> dict:
    return {
        "tier": st.column_config.SelectboxColumn(tr("Уровень", "Tier"), options=TIER_KEYS, required=True),
        "metric": st.column_config.TextColumn(tr("Метрика", "Metric"), required=True),
        "value": st.column_config.NumberColumn(tr("Базовое значение", "Baseline"), format="%.3f", required=True),
        "scale": st.column_config.TextColumn(
            tr("Шкала", "Scale"), disabled=True,
            help=tr("Из каталога метрик; «?» — метрики нет в каталоге", "From the metric catalog; '?' — not catalogued"),
        ),
        "direction": st.column_config.TextColumn(
            tr("Лучше, когда", "Better when"), disabled=True,
            help=tr("Из каталога метрик: больше или меньше — лучше", "From the metric catalog: higher or lower is better"),
        ),
        "attention_margin": st.column_config.NumberColumn(
            tr("Запас внимания", "Attention margin"), min_value=0.0, format="%.3f",
            help=tr("Ширина жёлтой зоны в единицах метрики", "Width of the yellow zone in the metric's units"),
        ),
        "note": st.column_config.TextColumn(tr("Примечание", "Note")),
    }


def _render_actions(engine: Any, edited: pd.DataFrame) -> None:
    c1, c2, _ = st.columns([1, 1, 4])
    if auth.button("baseline", c1, tr("Сохранить", "Save"), type="primary", key="baselines_save"):
        auth.require("baseline", "baselines")
        try:
            n = bl.save_baselines(engine, edited)
        except bl.BaselineError as exc:
            st.error(tr("Не сохранено: ", "Not saved: ") + str(exc))
        else:
            auth.record("baseline", "baselines", {"op": "save", "rows": n})
            st.success(tr(f"Сохранено строк: {n}.", f"Saved {n} rows."))
    if auth.button("baseline", c2, tr("Вернуть значения по умолчанию", "Restore defaults"), key="baselines_reset"):
        with auth.audited("baseline", "baselines", {"op": "reset_defaults"}):
            bl.reset_defaults(engine)
        st.session_state.pop(EDITOR_KEY, None)
        st.rerun()


def _verdict_rows(engine: Any) -> tuple[list[dict], list[dict]]:
    """The latest run of every tier against the baselines: one row per tier and one per judged metric."""
    baselines = bl.list_baselines(engine)
    rows = []
    details = []
    for tier in TIER_KEYS:
        run = runs.latest_run(engine, tier)
        if run is None:
            continue
        res = bl.evaluate_run(baselines, tier, run.status, run.metrics or {}, offline=bool(run.offline))
        rows.append({
            "tier": describe.tier_title(tier, lang()), "run": describe.run_option(run, lang()),
            "quality": status_text(res.status),
            "metrics_judged": sum(1 for m in res.metrics if m["status"] in ("good", "attention", "critical")),
        })
        details += [{
            "tier": describe.tier_title(tier, lang()), "run_id": run.id, "metric": tr(m["label_ru"], m["label_en"]),
            "value": fmt(m["metric"], m["value"]), "baseline": fmt(m["metric"], m["baseline"]),
            "attention_margin": fmt(m["metric"], m["attention_margin"]),
            "quality": status_text(m["status"]) if m["status"] else status_text("offline"),
        } for m in res.metrics]
    return rows, details


def _render_verdicts(engine: Any) -> None:
    st.subheader(tr("Последние запуски против базовых уровней", "Latest runs against the baselines"))
    rows, details = _verdict_rows(engine)
    if rows:
        tables.show(pd.DataFrame(rows), "baseline_verdicts", key="baseline_verdicts")
        if details:
            with st.expander(tr("По метрикам", "Per metric")):
                tables.show(pd.DataFrame(details), "baseline_verdicts_per_metric", key="baseline_verdicts_metric")
    else:
        empty_state("Завершённых запусков пока нет — статусы появятся после первого запуска любого уровня.",
                    "No finished runs yet — statuses appear after the first run of any tier.",
                    page="pages/tier1_retrieval.py", page_label=("Запустить Tier 1 · Поиск", "Run Tier 1 · Retrieval"))


def _render_page() -> None:
    with state.user_errors("Не удалось открыть таблицу базовых уровней", "Could not open the baselines table"):
        engine = state.engine()
        _render_actions(engine, _render_editor(engine))
        _render_verdicts(engine)


init_page_state()
_render_page()
