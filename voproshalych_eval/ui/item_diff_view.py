"""The per-item diff of two runs on one metric (``runs.Comparison.item_diff``) as a page shows it: what changed
(kinds to show), the items of both runs side by side with B − A, and the histogram of the differences.

One view for the Runs page's comparison and the leaderboard's "diff two configurations"."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from voproshalych_eval.engine import runs
from voproshalych_eval.plots import runs as charts
from voproshalych_eval.ui import tables
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt_count, metric_label, tr

#: the systems' outputs of both runs, side by side
OUTPUT_LABELS = {"answer.a": ("Ответ A", "Answer A"), "answer.b": ("Ответ B", "Answer B"),
                 "response.a": ("Ответ A", "Answer A"), "response.b": ("Ответ B", "Answer B"),
                 "generated_answer.a": ("Ответ A", "Answer A"), "generated_answer.b": ("Ответ B", "Answer B"),
                 "verdict.a": ("Вердикт A", "Verdict A"), "verdict.b": ("Вердикт B", "Verdict B"),
                 "error_a": ("Ошибка A", "Error A"), "error_b": ("Ошибка B", "Error B")}
#: an item's change from A to B in words
CHANGES = {
    "worse": ("хуже", "worse"), "better": ("лучше", "better"), "same": ("без изменений", "same"),
    "broken (failed in B)": ("сломалось (сбой в B)", "broken (failed in B)"),
    "fixed (failed in A)": ("починилось (сбой в A)", "fixed (failed in A)"),
    "failed in both": ("сбой в обоих", "failed in both"), "no value": ("нет значения", "no value"),
    "up": ("выросло (у метрики нет «лучше»)", "up (no better direction)"),
    "down": ("снизилось (у метрики нет «лучше»)", "down (no better direction)"),
}
#: the kinds shown first (the rest one click away)
DEFAULT_KINDS = ("worse", "better", "down", "up", "broken (failed in B)", "fixed (failed in A)")


def render(cmp: runs.Comparison, metric: str, *, key: str, name: str,
           labels: Mapping[str, tuple[str, str]] | None = None) -> None:
    """The item-by-item diff of ``metric`` (B − A) with a download; ``labels``: headers of A and B (the
    configurations' names) beside :data:`OUTPUT_LABELS`."""
    diff = cmp.item_diff(metric)
    kinds = [k for k in CHANGES if k in set(diff["change"])]
    default_kinds = [k for k in DEFAULT_KINDS if k in kinds] or kinds
    change_names = {k: tr(*CHANGES[k]) for k in kinds}
    chosen = st.multiselect(tr("Показать", "Show"), kinds, default=default_kinds, placeholder=tr("Выберите…", "Choose…"),
                            format_func=change_names.get, key=f"{key}_kinds")
    counts = diff["change"].value_counts()
    st.caption(" · ".join(f"{tr(*CHANGES.get(k, (k, k)))}: {fmt_count(counts[k])}" for k in counts.index))
    changed = diff[diff["change"].isin(chosen)].copy()
    changed["change"] = changed["change"].map(lambda k: tr(*CHANGES.get(k, (k, k))))
    tables.show(changed, name, key=key, labels={**OUTPUT_LABELS, **(labels or {})},
                metrics={c: metric for c in ("a", "b", "diff")})
    valid = diff["diff"].dropna()
    if len(valid):
        plotly_chart(charts.item_diff_histogram(valid, x_title=f"{metric_label(metric)}: B − A",
                                                y_title=tr("Элементов", "Items")), key=f"{key}_hist")
