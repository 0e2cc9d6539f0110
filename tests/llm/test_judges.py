"""Judge metrics: every metric x every aggregator over 3 models, failures, offline, prompts, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.judges import (
    AGGREGATORS,
    EvaluationResult,
    Judge,
    Sample,
    aggregate_scores,
    parse_verdict,
)
from voproshalych_eval.llm import LLMClient, Provider, RetryPolicy
from voproshalych_eval.llm.prompts import PROMPTS, PromptError, prompt_hash, render

SAMPLE = Sample(
    "Когда выплачивают стипендию?",
    "Стипендию выплачивают 25 числа каждого месяца.",
    "Стипендия выплачивается 25-го числа.",
    ["Академическая стипендия выплачивается 25 числа каждого месяца на карту студента."],
)
RUBRICS = {f"score{i}_description": f"уровень {i}" for i in range(1, 6)}
LLM_METRICS = {
    "faithfulness": {}, "answer_relevance": {}, "answer_correctness": {}, "e2e_score": {}, "rag_judge": {},
    "aspect_critic": {"definition": "Ответ вежлив?", "strictness": 3},
    # the scripted server fills an unbounded number on 0–1: a 0–1 criterion keeps the fractions as they are
    "simple_criteria_score": {"definition": "Полнота ответа", "min_score": 0, "max_score": 1},
    "rubrics_score": {"rubrics": RUBRICS},
    "show_no_show": {},
}
# model fractions: a -> top of the scale, b -> middle, c -> bottom
EXPECTED = {"average": 0.5, "median": 0.5, "majority_voting": 1.0, "min": 0.0, "max": 1.0, "consensus": None}


class TinyEmbedder:
    """Deterministic bag-of-character-trigrams embedder for tests (no model download)."""

    name = "tiny-trigram"
    dim = 256

    def _enc(self, texts):  # type: ignore[no-untyped-def]
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            t = f"  {t.lower()}  "
            for j in range(len(t) - 2):
                out[i, hash(t[j:j + 3]) % self.dim] += 1.0
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(n == 0, 1, n)

    encode_queries = _enc
    encode_passages = _enc


@pytest.fixture
def client(scripted_openai: ScriptedOpenAI) -> LLMClient:
    scripted_openai.model_scores = {"a": 1.0, "b": 0.5, "c": 0.0}
    return LLMClient([Provider("s", scripted_openai.base_url, None, ["a", "b", "c"])],
                     retry=RetryPolicy(max_attempts=2, initial=0.01, max_delay=0.02), timeout=5)


#: metrics reported on the seed's 1–5 scale / the rubric's integer level (everything else on 0–1)
ON_1_5 = ("answer_correctness", "rubrics_score")


@pytest.mark.parametrize("agg", AGGREGATORS)
def test_every_metric_aggregates_across_models(client: LLMClient, agg: str) -> None:
    judge = Judge(client, models=["a", "b", "c"], aggregate=agg, embedder=TinyEmbedder())
    for metric, cfg in LLM_METRICS.items():
        r = judge.evaluate(metric, SAMPLE, **cfg)
        assert set(r.per_model) == {"a", "b", "c"}, metric
        lo, hi = r.score_range
        assert (lo, hi) == ((1.0, 5.0) if metric in ON_1_5 else (0.0, 1.0)), metric
        assert r.per_model["a"] == hi and r.per_model["c"] == lo, (metric, r.per_model)
        assert (r.n_asked, r.n_answered) == (3 * cfg.get("strictness", 1), 3 * cfg.get("strictness", 1))
        binary = metric in ("aspect_critic", "show_no_show")
        expected = EXPECTED[agg]
        if binary and agg in ("average",):
            expected = 2 / 3  # b votes "true" (0.5 -> true)
        if binary and agg == "median":
            expected = 1.0
        if expected is None:
            assert r.score is None and r.failures[-1]["kind"] == "no_consensus", metric
            assert r.failure_kind == "no_consensus"
        else:
            assert r.score_norm == pytest.approx(expected), (metric, agg, r.per_model)
            assert not r.partial
        assert not r.offline and lo <= (r.score if r.score is not None else lo) <= hi


def test_response_relevancy_and_semantic_similarity(client: LLMClient) -> None:
    judge = Judge(client, models=["a", "b"], embedder=TinyEmbedder())
    r = judge.response_relevancy(SAMPLE)
    assert set(r.per_model) == {"a", "b"} and r.score is not None
    assert r.per_model["b"] is not None  # b: noncommittal false at 0.5 -> mean cosine
    assert r.per_model["a"] == 0.0  # a: noncommittal=true -> 0 by definition
    s = judge.semantic_similarity(SAMPLE)
    assert -1 <= s.score <= 1 and not s.offline
    t = judge.semantic_similarity(SAMPLE, threshold=0.0)
    assert t.score == 1.0 and t.passed


def test_parse_failure_is_counted_not_scored(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    judge = Judge(client, models=["a", "b"], embedder=TinyEmbedder())
    scripted_openai.script(Reply.garbage(), model="a")
    r = judge.faithfulness(SAMPLE)
    # one surviving model of two is no majority: no score (it must not decide alone), the parse failure kept
    assert r.per_model["a"] is None and r.per_model["b"] == 0.5 and r.score is None and r.failure_kind == "no_quorum"
    assert r.failures[0]["kind"] == "parse_error" and "¯\\_(ツ)_/¯" in r.failures[0]["raw_text"]
    scripted_openai.script(Reply.garbage(), model="a")
    lenient = Judge(client, models=["a", "b"], embedder=TinyEmbedder(), quorum="any", use_cache=False)
    r = lenient.faithfulness(SAMPLE)
    assert r.score == 0.5 and r.partial and (r.n_asked, r.n_answered) == (2, 1)
    scripted_openai.script(Reply.garbage(), model="a")
    scripted_openai.script(Reply.text("да, наверное"), model="b")
    single = Judge(client, models=["a", "b"], embedder=TinyEmbedder(), use_cache=False).show_no_show("q", "c", "ans")
    assert single.score is None and len(single.failures) == 2


def test_strict_verdict_parse() -> None:
    assert parse_verdict("Yes") == (True, "")
    assert parse_verdict(" No: нет в контексте ") == (False, "нет в контексте")
    for bad in ("yesterday", "No, yes…", "No", "Yes, but no", "Ответ: Yes", "", None):
        assert parse_verdict(bad) is None, bad


def test_rag_judge_details_and_threshold(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    scripted_openai.script(Reply.json({"answer_correctness": 0.9, "groundedness": 0.4, "error_message": "нет в чанках"}))
    r = Judge(client, models=["a"], embedder=TinyEmbedder(), use_cache=False).rag_judge(SAMPLE, threshold=0.5)
    assert r.score == 0.4 and r.passed is False and r.details["verdict"] == "FAIL"
    assert r.details["error_message"] == "нет в чанках"


def test_simple_criteria_clamps_out_of_range_and_records_it(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    scripted_openai.script(Reply.json({"score": 9, "reason": "x"}))
    r = Judge(client, models=["a"], use_cache=False).simple_criteria_score(SAMPLE, "x", min_score=1, max_score=5)
    assert r.score == 1.0 and r.scale == "1–5 → 0–1"  # seed 004: clamped to max, then normalised
    assert r.details["clamped"] == 1 and r.details["per_model"]["a"][0] == {"raw_score": 9.0, "clamped": True}
    scripted_openai.script(Reply.json({"score": -2, "reason": "x"}))
    low = Judge(client, models=["a"], use_cache=False).simple_criteria_score(SAMPLE, "y", min_score=1, max_score=5)
    assert low.score == 0.0 and low.details["clamped"] == 1


def test_simple_criteria_median_as_the_seed_defines_it(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    # 4 runs asked, one fails to parse, 3 survive: 2, 3, 5 -> the median 3 (a value a run produced)
    scripted_openai.script(Reply.json({"score": 2, "reason": "x"}), Reply.json({"score": 5, "reason": "x"}),
                           Reply.garbage(), Reply.json({"score": 3, "reason": "x"}), model="a")
    judge = Judge(client, models=["a"], use_cache=False)
    judge.client.concurrency = 1  # the scripted replies are consumed in run order
    r = judge.simple_criteria_score(SAMPLE, "x", min_score=0, max_score=5, strictness=4)
    assert r.n_asked == 4 and r.n_answered == 3 and r.partial
    assert r.score * 5 in (2.0, 3.0, 5.0) and r.score == pytest.approx(3 / 5)
    # an even number of survivors (2 and 5): the mean of the two middle values, 3.5 (the seed's median; issue 22)
    scripted_openai.script(Reply.json({"score": 2, "reason": "x"}), Reply.json({"score": 5, "reason": "x"}),
                           Reply.garbage(), Reply.garbage(), model="a")
    even = judge.simple_criteria_score(SAMPLE, "z", min_score=0, max_score=5, strictness=4)
    assert even.score is None and even.failure_kind == "no_quorum"  # 2 of 4 is not a strict majority
    judge.vote_quorum = "any"
    scripted_openai.script(Reply.json({"score": 2, "reason": "x"}), Reply.json({"score": 5, "reason": "x"}),
                           Reply.garbage(), Reply.garbage(), model="a")
    even = judge.simple_criteria_score(SAMPLE, "w", min_score=0, max_score=5, strictness=4)
    assert even.score == pytest.approx(3.5 / 5)


def test_rubrics_score_is_the_integer_level(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    scripted_openai.script(Reply.json({"score": 4, "reason": "хорошо"}))
    r = Judge(client, models=["a"], use_cache=False).rubrics_score(SAMPLE, RUBRICS)
    assert r.score == 4 and isinstance(r.score, float) and r.score.is_integer() and r.details["per_model"]["a"][0]["level"] == 4
    assert r.score_range == (1.0, 5.0) and r.score_norm == pytest.approx(0.75)
    scripted_openai.script(Reply.json({"score": 7, "reason": "?"}))
    bad = Judge(client, models=["a"], use_cache=False).rubrics_score(SAMPLE, RUBRICS)
    assert bad.score is None and bad.failure_kind == "parse"


def test_missing_field_is_not_applicable(client: LLMClient) -> None:
    r = Judge(client, models=["a"]).answer_correctness(Sample("вопрос", "ответ"))
    assert r.score is None and r.failures[0]["kind"] == "missing_field"
    assert r.failure_kind == "not_applicable" and not r.failed


def test_empty_answer_is_scored_lowest_by_rule_never_excluded(scripted_openai: ScriptedOpenAI,
                                                              client: LLMClient) -> None:
    judge = Judge(client, models=["a"], embedder=TinyEmbedder())
    n_calls = len(scripted_openai.requests)
    empty = Sample("Когда стипендия?", "   ", "25 числа.", ["Стипендия 25 числа."])
    for metric, lowest in (("faithfulness", 0.0), ("answer_correctness", 1.0), ("show_no_show", 0.0),
                           ("semantic_similarity", 0.0), ("rubrics_score", 1.0)):
        cfg = {"rubrics": RUBRICS} if metric == "rubrics_score" else {}
        r = judge.evaluate(metric, empty, **cfg)
        assert r.score == lowest and r.empty_answer and r.failure_kind is None, metric
    assert len(scripted_openai.requests) == n_calls  # scored by rule, no call
    assert judge.show_no_show("q", "c", "").passed is False


def test_quorum_per_aggregator(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    def run(agg: str, failing: tuple[str, ...], **kw: object) -> EvaluationResult:
        for m in failing:
            scripted_openai.script(Reply.error(503), Reply.error(503), model=m)
        return Judge(client, models=["a", "b", "c"], aggregate=agg, use_cache=False, **kw).faithfulness(SAMPLE)

    # one of three failing: a strict majority answered -> average/median score, flagged partial
    r = run("average", ("c",))
    assert r.score == pytest.approx(0.75) and r.partial and (r.n_asked, r.n_answered) == (3, 2)
    assert r.per_model == {"a": 1.0, "b": 0.5, "c": None} and r.failures[0]["kind"] == "server_error"
    # min / max / consensus need every model: the missing one could be the strictest
    for agg in ("min", "max", "consensus"):
        r = run(agg, ("c",))
        assert r.score is None and r.failure_kind == "no_quorum", agg
    # two of three failing: no majority -> no score, even for average
    r = run("average", ("b", "c"))
    assert r.score is None and r.failure_kind == "no_quorum" and r.per_model["a"] == 1.0
    # configurable: a quorum of one model
    r = run("min", ("c",), quorum="any")
    assert r.score == 0.5 and r.partial
    # all failing with a 5xx -> a server failure (named as what it is), not a parse failure
    r = run("average", ("a", "b", "c"))
    assert r.score is None and r.failure_kind == "server"


def test_aspect_critic_votes_need_a_majority(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    judge = Judge(client, models=["a"], use_cache=False)
    judge.client.concurrency = 1
    scripted_openai.script(Reply.json({"verdict": True, "reason": "ok"}), Reply.garbage(), Reply.garbage(), model="a")
    r = judge.aspect_critic(SAMPLE, "вежливо?", strictness=3)  # one vote of three: no verdict
    assert r.score is None and r.failure_kind == "no_quorum" and (r.n_asked, r.n_answered) == (3, 1)
    scripted_openai.script(Reply.json({"verdict": True, "reason": "ok"}), Reply.json({"verdict": True, "reason": "ok"}),
                           Reply.garbage(), model="a")
    r = judge.aspect_critic(SAMPLE, "вежливо?!", strictness=3)
    assert r.score == 1.0 and r.partial and r.passed is None


def test_semantic_similarity_over_several_embedders(client: LLMClient) -> None:
    class Other(TinyEmbedder):
        name = "tiny-other"

        def _enc(self, texts):  # type: ignore[no-untyped-def]
            import numpy as np

            return np.ones((len(texts), 4), dtype=np.float32)

        encode_queries = _enc
        encode_passages = _enc

    loader = {"tiny-other": Other()}.__getitem__
    for agg, expected in (("min", None), ("max", 1.0)):
        judge = Judge(client, models=["a"], aggregate=agg, embedder=TinyEmbedder(), embedder_loader=loader)
        r = judge.semantic_similarity(SAMPLE, embedders=["tiny-trigram", "tiny-other"])
        assert set(r.per_model) == {"tiny-trigram", "tiny-other"} and r.per_model["tiny-other"] == pytest.approx(1.0)
        assert r.details["embedders"] == ["tiny-trigram", "tiny-other"] and r.n_asked == 2
        if agg == "min":
            assert r.score == pytest.approx(min(r.per_model.values()))
        else:
            assert r.score == pytest.approx(expected)
    with pytest.raises(ValueError, match="unknown option"):
        Judge(client, models=["a"], embedder=TinyEmbedder()).semantic_similarity(SAMPLE, models=["x"])


def test_evaluate_many_keeps_order(client: LLMClient) -> None:
    judge = Judge(client, models=["b"], embedder=TinyEmbedder())
    samples = [SAMPLE, Sample("q2", "r2", None, ["c2"]), Sample("q3")]
    seen = []
    out = judge.evaluate_many("faithfulness", samples, progress=lambda d, t: seen.append((d, t)))
    assert [o.score for o in out] == [0.5, 0.5, None] and seen[-1] == (3, 3)


def test_aggregate_scores_definitions() -> None:
    assert aggregate_scores([0.8, 0.85, None], "consensus")[1].startswith("no quorum: 2 of 3 answered, 3 needed")
    assert aggregate_scores([0.8, 0.85], "consensus")[0] == pytest.approx(0.825)
    assert aggregate_scores([4.0, 4.3], "consensus", scale=(1, 5))[0] == pytest.approx(4.15)  # 0.1 of the width
    assert aggregate_scores([None, None], "average") == (None, "no valid score")
    assert aggregate_scores([1, 0, 0.6], "majority_voting")[0] == 1.0
    assert aggregate_scores([5, 1, 4], "majority_voting", scale=(1, 5))[0] == 5.0
    assert aggregate_scores([0.2, 0.9], "median")[0] == 0.2  # lower median: a value some model gave
    assert aggregate_scores([0.2, 0.9, None], "median")[0] == 0.2
    assert aggregate_scores([0.2, None, None], "median")[0] is None
    with pytest.raises(ValueError):
        aggregate_scores([1], "mode")


def test_offline_judge_and_generator_labelled() -> None:
    from voproshalych_eval.judges import get_judge
    from voproshalych_eval.llm.generation import get_generator

    judge = get_judge(embedder=TinyEmbedder())  # nothing configured in tests -> offline
    assert judge.offline and judge.models == ["offline-heuristic"]
    for metric in ("faithfulness", "answer_relevance", "answer_correctness", "e2e_score", "rag_judge",
                   "response_relevancy", "show_no_show"):
        r = judge.evaluate(metric, SAMPLE)
        assert r.offline and r.to_dict()["label"] == "offline heuristic" and r.score is not None, metric
    r = judge.aspect_critic(SAMPLE, "вежливо?")
    assert r.offline and r.score is None and r.failures[0]["kind"] == "unsupported_offline"
    assert r.failure_kind == "not_applicable"
    assert 1.0 <= judge.answer_correctness(SAMPLE).score <= 5.0  # the offline rule on the seed's scale too
    unsupported = judge.faithfulness(Sample("q", "Луна сделана из сыра.", None, ["Стипендия платится 25 числа."]))
    assert unsupported.score == 0.0
    gen = get_generator(embedder=TinyEmbedder())
    g = gen.generate("Когда стипендия?", ["Общежитие на Мельникайте. Стипендия платится 25 числа.", "Спорт по средам."])
    assert gen.offline and g.offline and "Стипендия" in g.text and g.error is None


def test_llm_generator(scripted_openai_env: ScriptedOpenAI) -> None:
    from voproshalych_eval.llm.generation import get_generator

    gen = get_generator(use_cache=False)
    assert not gen.offline and gen.name == "gpt-4o-mini"
    g = gen.generate("Когда стипендия?", ["Стипендия платится 25 числа."])
    assert g.error is None and g.text.startswith("Тестовый ответ") and g.tokens["completion"]
    req = scripted_openai_env.requests[-1]
    assert req["messages"][0]["role"] == "system" and "Вопрошалыч" in req["messages"][0]["content"]
    assert "Стипендия платится 25 числа." in req["messages"][1]["content"]


@pytest.mark.parametrize("lang", ["ru", "en"])
@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_every_prompt_renders_and_checks_fields(name: str, lang: str) -> None:
    fields = {f: f"<{f}>" for f in PROMPTS[name].fields(lang)}
    text = render(name, lang=lang, **fields)
    assert "{" not in text.replace("{\n", "").replace("{{", "") or name == "rag_judge"
    for f in fields:
        assert f"<{f}>" in text
    if fields:
        missing = dict(fields)
        missing.pop(next(iter(fields)))
        with pytest.raises(PromptError, match="missing"):
            render(name, lang=lang, **missing)
    with pytest.raises(PromptError, match="unused"):
        render(name, lang=lang, **fields, surplus="x")
    assert len(prompt_hash(name, lang)) == 12


def test_result_to_dict_is_json() -> None:
    r = EvaluationResult("faithfulness", 0.5, per_model={"a": 0.5})
    assert json.loads(json.dumps(r.to_dict()))["per_model"] == {"a": 0.5}


def test_cli_judge_json(scripted_openai: ScriptedOpenAI, tmp_path, engine) -> None:  # type: ignore[no-untyped-def]
    import os

    scripted_openai.model_scores = {"m1": 1.0, "m2": 0.0}
    path = tmp_path / "samples.jsonl"
    rows = [SAMPLE.to_dict(), {"user_input": "Где общежитие?", "response": "На Мельникайте.", "retrieved_contexts": ["x"]}]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    env = dict(os.environ, OPENAI_BASE_URL=scripted_openai.base_url, OPENAI_API_KEY="sk-cli-secret",
               VOPROSHALYCH_EVAL_LLM_MODELS="m1,m2")
    cmd = [sys.executable, "-m", "voproshalych_eval.cli", "judge", "--metric", "faithfulness", "--input", str(path),
           "--models", "m1,m2", "--aggregate", "average", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data["results"]) == 2 and data["models"] == ["m1", "m2"] and not data["offline"]
    assert data["results"][0]["per_model"] == {"m1": 1.0, "m2": 0.0} and data["results"][0]["score"] == 0.5
    assert data["aggregate"]["n"] == 2 and data["aggregate"]["n_failures"] == 0
    assert "sk-cli-secret" not in out.stdout + out.stderr
    from voproshalych_eval.engine.runs import get_run

    run = get_run(engine, data["run_id"])
    assert run.tier == "judge_metrics" and run.status == "done" and "avg_faithfulness" in run.metrics


def test_cli_flags_come_from_the_table_and_never_silently_ignored() -> None:
    import argparse

    from voproshalych_eval.commands.judge import metric_config, register
    from voproshalych_eval.judges import JUDGE_METRICS

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    flags = {a.option_strings[0] for a in parser._subparsers._group_actions[0].choices["judge"]._actions if a.option_strings}
    for spec in JUDGE_METRICS.values():
        assert {o.flag for o in spec.options} <= flags, spec.key
    args = parser.parse_args(["judge", "--metric", "faithfulness", "--input", "x", "--definition", "вежливо?"])
    with pytest.raises(ValueError, match="--definition does not apply to faithfulness"):
        metric_config("faithfulness", args)
    args = parser.parse_args(["judge", "--metric", "aspect_critic", "--input", "x", "--definition", "вежливо?",
                              "--strictness", "3"])
    assert metric_config("aspect_critic", args) == {"definition": "вежливо?", "strictness": 3}
    args = parser.parse_args(["judge", "--metric", "semantic_similarity", "--input", "x", "--models", "a,b"])
    assert metric_config("semantic_similarity", args)["embedders"] == ["a", "b"]  # seed 002: embedding models
    args = parser.parse_args(["judge", "--metric", "aspect_critic", "--input", "x", "--strictness", "9",
                              "--definition", "x"])
    with pytest.raises(ValueError, match="strictness must be within"):
        metric_config("aspect_critic", args)
