"""Tier 3 aggregates by outcome, against hand-computed values (no database)."""

from __future__ import annotations

import pytest

from tests.support import tier_records as tr
from voproshalych_eval.tiers.tier3 import aggregate


def _records() -> list[dict]:
    answered = [tr.tier3_item(i) for i in range(3)] + [tr.tier3_item(3, passed=False)]
    for r in answered:
        r["result"]["outcome"] = "answered"
        r["result"]["gate_pass"] = r["result"]["passed"] is True
    return [
        *answered,
        tr.tier3_outcome(4, "not_found", reason="Chunk not found", answerable=False),  # a right decline
        tr.tier3_outcome(5, "banned", reason="Answer banned", answerable=True),  # a wrong decline
        tr.tier3_outcome(6, "error", reason="http_5xx", failures={"http_5xx": 4}),
        tr.rec("q9", None, "failed", error="RuntimeError: boom"),  # no result at all: an internal error
    ]


def test_outcome_rates_and_judge_metrics_over_answered() -> None:
    m = aggregate(_records(), min_pass_rate=0.5)
    assert (m["n_items"], m["n_answered"], m["n_not_found"], m["n_banned"], m["n_error"]) == (8, 4, 1, 1, 2)
    assert m["answered_rate"]["value"] == pytest.approx(4 / 8) and m["error_rate"]["value"] == pytest.approx(2 / 8)
    assert m["not_found_rate"]["value"] == pytest.approx(1 / 8) and m["banned_rate"]["value"] == pytest.approx(1 / 8)
    # judge metrics: over the 4 answered items only, not diluted by declines or errors
    assert m["pass_rate"]["value"] == pytest.approx(3 / 4) and m["pass_rate"]["n"] == 4
    assert m["avg_e2e_score"]["n"] == 4 and m["url_hit_rate"]["value"] == 1.0
    assert m["errors_by_kind"] == {"http_5xx": 1, "internal": 1}
    assert m["declines_by_reason"] == {"Answer banned": 1, "Chunk not found": 1}
    assert m["transport_failures"] == {"http_5xx": 4}
    # gate: 3 PASS answers + the right decline = 4 of 8
    assert m["gate_pass_rate"] == pytest.approx(4 / 8) and m["gate_passed"] and m["gate"] == "PASS"
    assert aggregate(_records(), min_pass_rate=0.51)["gate"] == "FAIL"


def test_decline_passes_the_gate_only_on_unanswerable_questions() -> None:
    recs = [tr.tier3_outcome(0, "not_found", reason="Answer not found", answerable=True),
            tr.tier3_outcome(1, "not_found", reason="Chunk not found", answerable=False)]
    m = aggregate(recs, min_pass_rate=0.5)
    assert m["gate_pass_rate"] == 0.5 and m["n_answered"] == 0 and m["pass_rate"]["value"] is None


def test_outcomes_by_answerability() -> None:
    """The gate weighs a decline by answerability: the run counts the outcomes of each group apart."""
    recs = _records()
    recs[3]["result"]["answerable"] = False  # an answer to a question the knowledge base cannot answer
    for r in recs[:3]:
        r["result"]["answerable"] = True
    m = aggregate(recs)
    assert m["outcomes_by_answerability"] == {
        "answerable": {"answered": 3, "banned": 1, "error": 1},
        "unanswerable": {"answered": 1, "not_found": 1},
        "unknown": {"error": 1},  # the item that failed without a result
    }
    assert m["n_answered_unanswerable"] == 1
    assert sum(sum(g.values()) for g in m["outcomes_by_answerability"].values()) == m["n_items"]


def test_outcome_bars_stack_the_counts_per_group() -> None:
    from voproshalych_eval.plots.generation import outcome_bars

    fig = outcome_bars({"unanswerable": {"not_found": 2, "answered": 1}, "answerable": {"answered": 3, "error": 1}},
                       lang="ru")
    bars = {t.name: list(t.y) for t in fig.data}
    assert list(fig.data[0].x) == ["есть ответ в базе", "нет ответа в базе"]
    assert bars == {"ответ": [3, 1], "«не найдено»": [0, 2], "ошибка": [1, 0]}  # no banned trace: none banned
    assert fig.layout.barmode == "stack"
