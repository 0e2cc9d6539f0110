"""Verdicts that stand out: a run's status against the baselines as a coloured badge or banner.

Every run card and result view leads with it (:func:`run_verdict`): 🟢 good / 🟡 attention / 🔴 critical /
⚪ insufficient data — or 📴 *offline — not compared* for numbers made by offline substitutes, which never
reach a baseline verdict. A deployment gate's PASS / FAIL is a line of
the same verdict (``baselines.evaluate_run``), so the card, the gate and the report never disagree.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.ui import state
from voproshalych_eval.ui.i18n import fmt, tr

#: status -> badge colour
COLORS = {"good": "green", "attention": "orange", "critical": "red", "insufficient": "gray", "offline": "violet",
          "failed": "red"}


def status_text(status: str) -> str:
    """``🟢 хорошо`` / ``📴 офлайн — не сравнивается`` in the UI language."""
    return f"{bl.STATUS_ICONS.get(status, '')} {tr(*bl.STATUS_LABELS.get(status, (status, status)))}"


def badge_markdown(status: str) -> str:
    """The status as a coloured Markdown badge (usable inside any Markdown text)."""
    label = tr(*bl.STATUS_LABELS.get(status, (status, status))).replace("[", "(").replace("]", ")")
    return f":{COLORS.get(status, 'gray')}-badge[{bl.STATUS_ICONS.get(status, '')} {label}]"


def evaluate(run: Any) -> bl.RunStatus:
    """The run's status against the stored baselines (offline runs: ``offline``, never judged)."""
    return bl.evaluate_run(bl.list_baselines(state.engine()), run.tier, run.status, run.metrics or {},
                           offline=bool(getattr(run, "offline", False)))


def run_verdict(run: Any, *, compact: bool = False) -> str:
    """Lead a run's view with its verdict against the baselines; returns the status.

    ``compact``: one coloured badge (cards); else a banner with what it means and the metrics behind it."""
    res = evaluate(run)
    if compact:
        st.markdown(badge_markdown(res.status))
        return res.status
    judged = [m for m in res.metrics if m.get("status") in ("good", "attention", "critical") and not m.get("gate")]
    detail = " · ".join(
        f"{m['label_en'] if tr('ru', 'en') == 'en' else m['label_ru']} {fmt(m['metric'], m['value'])} "
        f"({tr('база', 'baseline')} {fmt(m['metric'], m['baseline'])}) {bl.STATUS_ICONS.get(m['status'], '')}"
        for m in judged[:6]
    )
    gate = next((m for m in res.metrics if m.get("gate")), None)
    if gate is not None:  # the deployment gate is one line of the same verdict, never a second box
        passed = gate["status"] == "good" if gate["status"] else gate["value"] is not None and gate["baseline"] is not None \
            and gate["value"] >= gate["baseline"]
        share, thr = fmt("gate_pass_rate", gate["value"]), fmt("gate_pass_rate", gate["baseline"])
        line = (":green[**PASS**] — " + tr(f"ворота пройдены: доля прошедших из всех вопросов {share} ≥ порога {thr}",
                                           f"gate passed: passing share of all questions {share} ≥ threshold {thr}")
                if passed else
                ":red[**FAIL**] — " + tr(f"ворота не пройдены: доля прошедших из всех вопросов {share} < порога {thr}",
                                         f"gate failed: passing share of all questions {share} < threshold {thr}"))
        detail = line + (f"\n\n{detail}" if detail else "")
    head = tr("Вердикт относительно базовых уровней: ", "Verdict against the baselines: ") + status_text(res.status)
    if res.status == "offline":
        st.warning(f"**{head}**\n\n" + tr(
            "Числа получены офлайн-заменителями (эвристический судья, извлекающий генератор), а не LLM; с базовыми "
            "уровнями они не сравниваются.",
            "These numbers come from offline substitutes (heuristic judge, extractive generator), not an LLM; they "
            "are never compared to the baselines.") + (f"\n\n{detail}" if gate is not None else ""), icon="📴")
    elif res.status == "failed":
        st.error(f"**{head}**\n\n" + tr(
            "Все элементы или все оценки закончились сбоем: запуск ничего не измерил. Причины — в таблице сбоев.",
            "Every item or every judgement failed: the run measured nothing. The reasons are in the failures table."),
            icon="⛔")
    elif res.status == "good":
        st.success(f"**{head}**" + (f"\n\n{detail}" if detail else ""))
    elif res.status == "attention":
        st.warning(f"**{head}**" + (f"\n\n{detail}" if detail else ""))
    elif res.status == "critical":
        st.error(f"**{head}**" + (f"\n\n{detail}" if detail else ""))
    else:
        reason = tr("запуск не завершён", "the run has not finished") if run.status not in ("done",) else tr(
            "нет метрик с базовым уровнем и достаточным n", "no metric with a baseline and enough items")
        st.info(f"**{head}** — {reason}")
    return res.status
