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
    "simple_criteria_score": {"definition": "Полнота ответа"}, "rubrics_score": {"rubrics": RUBRICS},
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


@pytest.mark.parametrize("agg", AGGREGATORS)
def test_every_metric_aggregates_across_models(client: LLMClient, agg: str) -> None:
    judge = Judge(client, models=["a", "b", "c"], aggregate=agg, embedder=TinyEmbedder())
    for metric, cfg in LLM_METRICS.items():
        r = judge.evaluate(metric, SAMPLE, **cfg)
        assert set(r.per_model) == {"a", "b", "c"}, metric
        assert r.per_model["a"] == 1.0 and r.per_model["c"] == 0.0, (metric, r.per_model)
        binary = metric in ("aspect_critic", "show_no_show")
        expected = EXPECTED[agg]
        if binary and agg in ("average",):
            expected = 2 / 3  # b votes "true" (0.5 -> true)
        if binary and agg == "median":
            expected = 1.0
        if expected is None:
            assert r.score is None and r.failures[-1]["kind"] == "no_consensus", metric
        else:
            assert r.score == pytest.approx(expected), (metric, agg, r.per_model)
        assert not r.offline and 0 <= (r.score or 0) <= 1


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
    assert r.per_model["a"] is None and r.per_model["b"] == 0.5 and r.score == 0.5
    assert r.failures[0]["kind"] == "parse_error" and "¯\\_(ツ)_/¯" in r.failures[0]["raw_text"]
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


def test_simple_criteria_out_of_range_is_failure(scripted_openai: ScriptedOpenAI, client: LLMClient) -> None:
    scripted_openai.script(Reply.json({"score": 9, "reason": "x"}))
    r = Judge(client, models=["a"], use_cache=False).simple_criteria_score(SAMPLE, "x", min_score=1, max_score=5)
    assert r.score is None and r.failures[0]["kind"] == "parse_error" and r.scale == "1–5 → 0–1"


def test_missing_field_is_a_failure(client: LLMClient) -> None:
    r = Judge(client, models=["a"]).answer_correctness(Sample("вопрос", "ответ"))
    assert r.score is None and r.failures[0]["kind"] == "missing_field"


def test_evaluate_many_keeps_order(client: LLMClient) -> None:
    judge = Judge(client, models=["b"], embedder=TinyEmbedder())
    samples = [SAMPLE, Sample("q2", "r2", None, ["c2"]), Sample("q3")]
    seen = []
    out = judge.evaluate_many("faithfulness", samples, progress=lambda d, t: seen.append((d, t)))
    assert [o.score for o in out] == [0.5, 0.5, None] and seen[-1] == (3, 3)


def test_aggregate_scores_definitions() -> None:
    assert aggregate_scores([0.8, 0.85, None], "consensus") == (None, "no consensus: a model failed")
    assert aggregate_scores([0.8, 0.85], "consensus")[0] == pytest.approx(0.825)
    assert aggregate_scores([None, None], "average") == (None, "no valid score")
    assert aggregate_scores([1, 0, 0.6], "majority_voting")[0] == 1.0
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
           "--models", "m1,m2", "--aggregate", "median", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data["results"]) == 2 and data["models"] == ["m1", "m2"] and not data["offline"]
    assert data["results"][0]["per_model"] == {"m1": 1.0, "m2": 0.0} and data["results"][0]["score"] == 0.5
    assert data["aggregate"]["n"] == 2 and data["aggregate"]["n_failures"] == 0
    assert "sk-cli-secret" not in out.stdout + out.stderr
    from voproshalych_eval.runs import get_run

    run = get_run(engine, data["run_id"])
    assert run.tier == "judge_metrics" and run.status == "done" and "avg_faithfulness" in run.metrics
