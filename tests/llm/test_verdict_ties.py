"""Issue 22 §3: a tie between judges is *undecided* — never PASS / "show" — under every aggregator that claims to
be a vote; undecided items are counted apart and left out of accuracy-type metrics; SimpleCriteriaScore's median
of an even number of runs is the mean of the two middle values (the seed). Scripted server over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.judges import Judge, Sample
from voproshalych_eval.llm import LLMClient, Provider, RetryPolicy

SAMPLE = Sample("Когда выплачивают стипендию?", "25 числа.", None,
                ["Академическая стипендия выплачивается 25 числа каждого месяца."])


@pytest.fixture
def client(scripted_openai: ScriptedOpenAI) -> LLMClient:
    return LLMClient([Provider("s", scripted_openai.base_url, None, ["a", "b", "c"])],
                     retry=RetryPolicy(max_attempts=1, initial=0.01, max_delay=0.02), timeout=5)


@pytest.mark.parametrize("agg", ["average", "median", "majority_voting"])
def test_show_no_show_split_is_undecided(scripted_openai: ScriptedOpenAI, client: LLMClient, agg: str) -> None:
    scripted_openai.script(Reply.text("Yes"), model="a")
    scripted_openai.script(Reply.text("No: нет в контексте"), model="b")
    r = Judge(client, models=["a", "b"], aggregate=agg, use_cache=False).show_no_show("q", "c", "ans")
    assert r.passed is None and r.undecided, (agg, r.score, r.passed)
    assert r.to_dict()["undecided"] is True


@pytest.mark.parametrize("agg", ["average", "median", "majority_voting"])
def test_two_to_one_is_the_majority(scripted_openai: ScriptedOpenAI, client: LLMClient, agg: str) -> None:
    scripted_openai.script(Reply.text("No: нет"), model="a")
    scripted_openai.script(Reply.text("No: нет"), model="b")
    scripted_openai.script(Reply.text("Yes"), model="c")
    r = Judge(client, models=["a", "b", "c"], aggregate=agg, use_cache=False).show_no_show("q", "c", "ans")
    assert r.passed is False and not r.undecided, agg


def test_rag_judge_split_is_undecided_not_pass(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    scripted_openai.model_scores = {"a": 1.0, "b": 0.0}
    r = Judge(client, models=["a", "b"], use_cache=False).rag_judge(SAMPLE, threshold=0.5)
    assert r.score == pytest.approx(0.5)  # the mean stays the mean
    assert r.passed is None and r.undecided and r.details["verdict"] is None


def test_simple_criteria_median_of_even_runs_is_the_mean_of_the_middle(scripted_openai: ScriptedOpenAI,
                                                                       client: LLMClient) -> None:
    scripted_openai.script(Reply.json({"score": 1, "reason": "r"}), Reply.json({"score": 4, "reason": "r"}), model="a")
    r = Judge(client, models=["a"], use_cache=False).simple_criteria_score(
        SAMPLE, definition="Полнота", min_score=0, max_score=5, strictness=2)
    assert r.score == pytest.approx(0.5)  # median of 0.2 and 0.8 (the lower median would say 0.2)


# ------------------------------------------------------------------ consumers of verdicts (pure aggregates)
def _rec(result: dict[str, Any], status: str = "done") -> dict[str, Any]:
    return {"item_key": str(id(result)), "status": status, "result": result, "error": None}


def test_pipeline_counts_undecided_apart() -> None:
    from voproshalych_eval.tiers.judge_pipeline import _verdict, aggregate

    tie = {"score": 0.5, "passed": None, "undecided": True, "failures": []}
    assert _verdict(tie) is None
    recs = [_rec({"label": 1, "verdict": 1, "correct": True, "with_context": True, "show_no_show": {"score": 1.0}}),
            _rec({"label": 0, "verdict": 0, "correct": True, "with_context": True, "show_no_show": {"score": 0.0}}),
            _rec({"label": 1, "verdict": None, "correct": None, "with_context": True, "failure_kind": "undecided",
                  "show_no_show": tie})]
    m = aggregate(recs)
    assert m["n_undecided"] == 1 and m["n_valid"] == 2 and m["n_failed"] == 0 and m["accuracy"] == 1.0
    assert m["failure_kinds"]["undecided"] == 1 and m["parse_failure_rate"] == 0.0


def test_stability_majority_tie_is_undecided() -> None:
    from voproshalych_eval.tiers.judge_stability import _majority, aggregate

    assert _majority([True, False]) is None and _majority([True, True, False]) is True
    calls = {"m1": [{"score": 1.0, "failure_kind": None}, {"score": 0.0, "failure_kind": None}],
             "m2": [{"score": 1.0, "failure_kind": None}, {"score": 1.0, "failure_kind": None}]}
    m = aggregate([_rec({"calls": calls})], models=["m1", "m2"], metric="faithfulness")
    assert m["per_model"]["m1"]["n_undecided"] == 1 and m["per_model"]["m2"]["n_undecided"] == 0
    assert m["n_undecided"] == 1


def test_tier3_pass_rate_leaves_undecided_out() -> None:
    from voproshalych_eval.tiers.tier3 import aggregate

    def answered(passed: bool | None, undecided: bool = False) -> dict[str, Any]:
        rag = {"score": 0.5 if undecided else float(bool(passed)), "passed": passed, "undecided": undecided,
               "failures": []}
        return _rec({"outcome": "answered", "answer": "a", "reference": "r", "answerable": True, "passed": passed,
                     "rag_score": rag["score"], "e2e_score": 0.5, "gate_pass": passed is True,
                     "judges": {"rag_judge": rag, "e2e_score": {"score": 0.5, "failures": []}}})

    m = aggregate([answered(True), answered(False), answered(None, undecided=True)])
    assert m["pass_rate"]["value"] == 0.5 and m["pass_rate"]["n"] == 2 and m["pass_rate"]["n_failed"] == 0
    assert m["n_undecided"] == 1 and m["failure_kinds"]["undecided"] == 1
