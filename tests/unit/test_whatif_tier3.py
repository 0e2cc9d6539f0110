"""The Tier 3 part of what-if, aggregated: outcome counts per side, judged PASS, and the paired tests over the
questions with no error on either side (a decline is 0 in both ``answered`` and ``good``). Hand-picked question
references from arguments and files."""

from __future__ import annotations

import pytest

from voproshalych_eval.analytics import gaps
from voproshalych_eval.datasets.files import RecordFileError
from voproshalych_eval.tiers.whatif import _tier3_summary


def _side(outcome: str, passed: bool | None = None, cls: str | None = None, kind: str | None = None) -> dict:  # type: ignore[type-arg]
    return {"outcome": outcome, "passed": passed, "answer_class": cls, "error_kind": kind, "judge_failures": None}


def test_summary_counts_and_paired_tests() -> None:
    items = [
        {"tier3": {"before": _side("declined", cls="not_found"), "after": _side("answered", True, "answer")}},
        {"tier3": {"before": _side("declined", cls="refusal"), "after": _side("answered", False, "answer")}},
        {"tier3": {"before": _side("answered", True, "answer"), "after": _side("answered", True, "answer")}},
        {"tier3": {"before": _side("error", kind="generation"), "after": _side("answered", True, "answer")}},
        {"tier3": None},  # not in the sample
    ]
    s = _tier3_summary(items, n_resamples=200)
    assert s is not None and s["n"] == 4
    assert (s["before"]["n_answered"], s["before"]["n_declined"], s["before"]["n_error"]) == (1, 2, 1)
    assert s["before"]["declines_by_class"] == {"not_found": 1, "refusal": 1}
    assert s["before"]["errors_by_kind"] == {"generation": 1}
    assert s["before"]["answered_rate"] == pytest.approx(1 / 4)
    assert (s["after"]["n_answered"], s["after"]["n_judged"], s["after"]["n_passed"]) == (4, 4, 3)
    assert s["after"]["pass_rate"] == pytest.approx(3 / 4)
    tests = {t["metric"]: t for t in s["paired_tests"]}
    # three pairs without an error: answered 0,0,1 -> 1,1,1; good 0,0,1 -> 1,0,1
    assert tests["answered"]["mean_diff"] == pytest.approx(2 / 3)
    assert tests["good"]["mean_diff"] == pytest.approx(1 / 3)


def test_summary_without_sampled_items_is_none() -> None:
    assert _tier3_summary([{"tier3": None}], n_resamples=100) is None


def test_refs_from_args_and_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert gaps.refs_from_args(["12", " как оплатить общежитие "]) == [
        ("--questions value 1", 12), ("--questions value 2", " как оплатить общежитие ")]
    f = tmp_path / "q.jsonl"
    f.write_text('{"log_id": 7}\n{"question": "где столовая"}\n', encoding="utf-8")
    assert [r for _, r in gaps.refs_from_file(str(f))] == [7, "где столовая"]
    f.write_text('{"log_id": 7}\n{"log_id": null, "question": "  "}\n', encoding="utf-8")
    with pytest.raises(RecordFileError, match=r"q.jsonl, row 2, field 'log_id': give either a log_id or a question"):
        gaps.refs_from_file(str(f))
    f.write_text('{"log_id": "семь"}\n', encoding="utf-8")
    with pytest.raises(RecordFileError, match=r"row 1, field 'log_id': must be an integer"):
        gaps.refs_from_file(str(f))
