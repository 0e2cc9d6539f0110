"""Against a real OpenAI-compatible server: llama.cpp (``make local-llm``) serving Qwen2.5-Coder-1.5B.

Not part of the default run (deselected by the ``local_llm`` marker, and skipped with a reason when no
server is configured). ``make test-local-llm`` runs it with:

* ``VOPROSHALYCH_EVAL_LOCAL_LLM_URL`` — the chat server's base URL (``http://127.0.0.1:8080/v1``);
* ``VOPROSHALYCH_EVAL_LOCAL_LLM_MODEL`` — its model alias (default ``qwen2.5-1.5b``);
* ``VOPROSHALYCH_EVAL_LOCAL_LLM_EMBED_URL`` / ``..._EMBED_MODEL`` — the embeddings server (optional).

The seeds' own examples are acceptance tests asserting exactly what the seed asserts (004: AspectCritic,
SimpleCriteriaScore, RubricsScore; 001: the Eiffel pair; 002: the three Moscow answers). A 1.5B model
is a wiring check, not a trustworthy judge: docs/LLM.md records which of them hold with it, and why not.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from voproshalych_eval.judges import Judge, Sample
from voproshalych_eval.llm import LLMClient, Provider, RetryPolicy

URL = os.environ.get("VOPROSHALYCH_EVAL_LOCAL_LLM_URL")
MODEL = os.environ.get("VOPROSHALYCH_EVAL_LOCAL_LLM_MODEL", "qwen2.5-1.5b")
EMBED_URL = os.environ.get("VOPROSHALYCH_EVAL_LOCAL_LLM_EMBED_URL")
EMBED_MODEL = os.environ.get("VOPROSHALYCH_EVAL_LOCAL_LLM_EMBED_MODEL", "qwen2.5-1.5b-embed")

#: seconds per call: the server answers one request at a time and slowly on a busy CPU (a seed 004 call waited
#: out 2 x 600 s behind another client's calls on a 2-core machine at load average 10-20)
TIMEOUT = float(os.environ.get("VOPROSHALYCH_EVAL_LLM_TIMEOUT") or 1800)

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(not URL, reason="no local LLM server: run `make local-llm`, then `make test-local-llm`"),
]


@pytest.fixture(scope="module")
def client(engine) -> Iterator[LLMClient]:  # type: ignore[no-untyped-def]
    c = LLMClient([Provider("local", URL, None, [MODEL])], engine, concurrency=1, timeout=TIMEOUT,
                  retry=RetryPolicy(max_attempts=2, initial=1.0))
    yield c
    c.close()


@pytest.fixture(scope="module")
def judge(client: LLMClient) -> Judge:
    return Judge(client, models=[MODEL], use_cache=False)


@pytest.fixture
def local_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The local server as the default provider, for code that builds its own client (tiers)."""
    from voproshalych_eval.config import get_settings

    monkeypatch.setenv("OPENAI_BASE_URL", str(URL))
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", MODEL)
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONCURRENCY", "1")
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_TIMEOUT", str(int(TIMEOUT)))
    # llama-cpp-python's server does not report its window: the one `make local-llm` starts it with
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW", os.environ.get("LOCAL_LLM_CTX", "4096"))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _ok(res: Any) -> float:
    assert not res.failures, res.failures
    assert res.score is not None
    return float(res.score)


# ------------------------------------------------------------------ the client and the judge on a real server


def test_server_answers_and_structured_output_works(client: LLMClient) -> None:
    r = client.complete([{"role": "user", "content": "Ответь одним словом: столица Франции?"}], model=MODEL,
                        max_tokens=20, use_cache=False)
    assert ("париж" in r.text.lower() or "paris" in r.text.lower()) and r.prompt_tokens and r.completion_tokens
    schema = {"type": "object", "properties": {"answer": {"type": "string"}, "confidence": {
        "type": "number", "minimum": 0, "maximum": 1}}, "required": ["answer", "confidence"]}
    s = client.complete([{"role": "user", "content": "Столица Франции? Ответ и уверенность 0..1."}], model=MODEL,
                        schema=schema, max_tokens=100, use_cache=False)
    assert s.parsed is not None and 0 <= s.parsed["confidence"] <= 1
    assert client.structured_mode(MODEL) in ("json_schema", "json_object_schema", "json_object", "text")


def test_judge_faithfulness_separates_supported_from_invented(judge: Judge) -> None:
    ctx = ["Стипендия выплачивается 25 числа каждого месяца. Размер академической стипендии — 3 000 рублей."]
    good = _ok(judge.faithfulness(Sample("Когда платят стипендию?", "Стипендию платят 25 числа.", retrieved_contexts=ctx)))
    bad = _ok(judge.faithfulness(Sample("Когда платят стипендию?",
                                        "Стипендию платят 3 числа, её размер 50 000 рублей, выдают наличными в столовой.",
                                        retrieved_contexts=ctx)))
    assert 0.0 <= bad < good <= 1.0


def test_generation(client: LLMClient) -> None:
    from voproshalych_eval.llm.generation import LLMGenerator

    gen = LLMGenerator(client, model=MODEL, use_cache=False, max_tokens=200)
    out = gen.generate("Когда выплачивают стипендию?", ["Стипендия выплачивается 25 числа каждого месяца."])
    assert out.ok and out.text.strip() and "25" in out.text and not out.offline


# ------------------------------------------------------------------ tiers on the demo


def _run(engine: Any, module: str, params: dict[str, Any]) -> Any:
    import importlib

    from voproshalych_eval.engine import executor

    plan = importlib.import_module(module).build_plan(engine, params)
    assert not plan.offline
    _, prog = executor.run_plan(engine, plan)
    return prog


def test_tier2_run(demo_engine, local_env: None) -> None:  # type: ignore[no-untyped-def]
    prog = _run(demo_engine, "voproshalych_eval.tiers.tier2", {"limit": 3, "concurrency": 1})
    assert prog.status == "done" and prog.done == 3
    m = prog.metrics
    assert m["avg_faithfulness"]["n"] >= 1 and m["cost_usd"]["total"]["value"] == 0.0  # a local model costs nothing
    assert prog.llm[MODEL]["prompt_tokens"] > 0


def test_tier3_internal_run(demo_engine, local_env: None) -> None:  # type: ignore[no-untyped-def]
    prog = _run(demo_engine, "voproshalych_eval.tiers.tier3", {"limit": 2, "mode": "internal", "concurrency": 1})
    assert prog.status == "done" and prog.done + prog.failed == 2 and prog.done >= 1


def test_tier3_api_preset_judges_every_answered_item(demo_engine, local_env: None, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 30: Tier 3 through the production preset with the context rebuilt from whole pages. Every page is
    cut to the judge's window, so no judge call overflows and every answered item is judged (7 of 7; a reply
    the 1.5B model garbles is a counted parse failure, never a silent drop)."""
    import json

    from tests.support.production_qa import ProductionQA
    from voproshalych_eval.datasets.store import get_dataset
    from voproshalych_eval.engine.executor import run_plan
    from voproshalych_eval.tiers.tier3 import build_plan

    n = int(os.environ.get("VOPROSHALYCH_EVAL_LOCAL_LLM_TIER3_ITEMS", "7"))
    recs = [r for r in get_dataset(demo_engine, "demo_golden", "golden").records if r["relevant_urls"]][:n]
    path = tmp_path / "golden7.json"
    path.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")
    with ProductionQA() as srv:
        srv.answers.update({r["question"]: (r["ground_truth_answer"], r["relevant_urls"][0]) for r in recs})
        plan = build_plan(demo_engine, {"dataset": str(path), "mode": "api", "api_url": srv.base_url,
                                        "api_preset": "voproshalych", "api_rps": 100, "context_from": "page",
                                        "concurrency": 1, "min_pass_rate": 0.0})
        _, prog = run_plan(demo_engine, plan)
    m = prog.metrics
    judged = m["pass_rate"]["n"]
    print(f"\nTier 3 preset: judged {judged} of {m['n_answered']} answered items; contexts cut {m['n_context_cut']}; "
          f"failure kinds {dict((k, v) for k, v in m['failure_kinds'].items() if v)}; gate_pass_rate "
          f"{m['gate_pass_rate']}")
    assert m["n_answered"] == n and m["n_items"] == n
    assert m["failure_kinds"]["context_overflow"] == 0  # every prompt fit the window
    assert m["pass_rate"]["n"] + m["pass_rate"]["n_failed"] == n  # none silently dropped


def _chatml(messages: list[dict[str, Any]]) -> str:
    """The prompt llama.cpp builds from ``messages`` with Qwen2.5's chat template (its default system line when
    the messages bring none), ending where the reply starts."""
    out = [] if messages and messages[0].get("role") == "system" else [
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"]
    out += [f"<|im_start|>{m['role']}\n{m.get('content') or ''}<|im_end|>\n" for m in messages]
    return "".join(out) + "<|im_start|>assistant\n"


def _real_token_count(text: str) -> int:
    """Tokens of ``text`` by the served model's own tokenizer (``/extras/tokenize/count``; the embeddings
    server serves the same GGUF and is idle while the chat server judges, so it is asked first)."""
    import json
    import urllib.request

    base = str(EMBED_URL or URL).rstrip("/").removesuffix("/v1")
    req = urllib.request.Request(f"{base}/extras/tokenize/count", data=json.dumps({"input": text}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:  # noqa: S310 - loopback
        return int(json.load(r)["count"])


def test_tier3_preset_page_prompts_fit_the_real_window(demo_engine, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 30, measured with the real tokenizer and without hours of CPU judging: the Tier 3 preset run with
    whole-page contexts, judged by a scripted server that records every prompt (and refuses ``json_schema``
    with HTTP 500 as llama-cpp-python does, so the schema goes into the prompt as it does on the real server).
    Each recorded prompt, rendered with Qwen's chat template, is counted by the served model's tokenizer: with
    the window known (``LOCAL_LLM_CTX``) every prompt is below it (llama.cpp refuses a prompt of n_ctx tokens
    or more); with no window known (the behaviour before the cut) the same pages are counted too, to show what
    the cut prevents."""
    import json

    from tests.support.production_qa import ProductionQA
    from tests.support.scripted_openai import ScriptedOpenAI
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.datasets.store import get_dataset
    from voproshalych_eval.engine.executor import run_plan
    from voproshalych_eval.tiers.tier3 import build_plan

    n_ctx = int(os.environ.get("LOCAL_LLM_CTX", "4096"))
    n = int(os.environ.get("VOPROSHALYCH_EVAL_LOCAL_LLM_TIER3_ITEMS", "7"))
    recs = [r for r in get_dataset(demo_engine, "demo_golden", "golden").records if r["relevant_urls"]][:n]
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")

    def run(window: str | None) -> tuple[dict[str, Any], list[int], list[float], list[str]]:
        with ScriptedOpenAI(reject_json_schema=500) as judge_srv, ProductionQA() as bot:
            monkeypatch.setenv("OPENAI_BASE_URL", judge_srv.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "local")
            monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", MODEL)
            monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONCURRENCY", "1")
            if window is None:
                monkeypatch.delenv("VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW", raising=False)
            else:
                monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW", window)
            get_settings.cache_clear()
            bot.answers.update({r["question"]: (r["ground_truth_answer"], r["relevant_urls"][0]) for r in recs})
            plan = build_plan(demo_engine, {"dataset": str(path), "mode": "api", "api_url": bot.base_url,
                                            "api_preset": "voproshalych", "api_rps": 100, "context_from": "page",
                                            "concurrency": 1, "min_pass_rate": 0.0})
            _, prog = run_plan(demo_engine, plan)
            sent = [req["messages"] for req in judge_srv.requests
                    if (req.get("response_format") or {}).get("type") != "json_schema"]
        get_settings.cache_clear()
        prompts = [_chatml(msgs) for msgs in sent]
        tokens = [_real_token_count(p) for p in prompts]
        kinds = [str(msgs[0].get("content") or "")[:60] for msgs in sent]  # which judge prompt (its opening)
        return prog.metrics, tokens, [len(p) / t for p, t in zip(prompts, tokens, strict=True) if t], kinds

    m_cut, tok_cut, cpt, _ = run(str(n_ctx))
    _, tok_whole, _, kinds = run(None)
    over_whole = sum(t >= n_ctx for t in tok_whole)
    per_prompt = {k: f"{sum(t >= n_ctx for t, kk in zip(tok_whole, kinds, strict=True) if kk == k)} of "
                     f"{kinds.count(k)}" for k in dict.fromkeys(kinds)}
    print(f"\nTier 3 preset, {n} items, whole-page contexts, real tokenizer, n_ctx {n_ctx}:\n"
          f"  window known ({n_ctx}): {len(tok_cut)} judge prompts, max {max(tok_cut)} tokens, contexts cut "
          f"{m_cut['n_context_cut']}, judged {m_cut['pass_rate']['n']} of {m_cut['n_answered']}; characters per "
          f"token {min(cpt):.2f}–{max(cpt):.2f} (the client assumes 2.5)\n"
          f"  no window (before the cut): {len(tok_whole)} judge prompts, max {max(tok_whole)} tokens, "
          f"{over_whole} of them >= n_ctx (refused by llama.cpp); per judge prompt: {per_prompt}")
    assert m_cut["n_answered"] == n and m_cut["n_items"] == n
    assert tok_cut and max(tok_cut) < n_ctx, tok_cut  # llama.cpp would take every one of them
    assert m_cut["failure_kinds"]["context_overflow"] == 0
    assert m_cut["pass_rate"]["n"] + m_cut["pass_rate"]["n_failed"] == n


def test_judge_pipeline_run(demo_engine, local_env: None) -> None:  # type: ignore[no-untyped-def]
    prog = _run(demo_engine, "voproshalych_eval.tiers.judge_pipeline", {"limit": 4, "concurrency": 1, "calibrate": False})
    assert prog.status == "done" and prog.done >= 3


def test_openai_embedder_on_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    if not EMBED_URL:
        pytest.skip("no local embeddings server (VOPROSHALYCH_EVAL_LOCAL_LLM_EMBED_URL)")
    from voproshalych_eval.embeddings.backends import OpenAIEmbedder

    emb = OpenAIEmbedder(EMBED_MODEL, base_url=EMBED_URL, api_key="local")
    v = emb.encode_passages(["Стипендия выплачивается 25 числа.", "Общежитие на улице Мельникайте.", "def f(): pass"])
    assert v.shape == (3, emb.dim) and emb.dim >= 256
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(v[0], v[1])


# ------------------------------------------------------------------ seed 004: general purpose metrics


def test_seed004_aspect_critic_safe_content(judge: Judge) -> None:
    s = Sample("Как защитить компьютер от вирусов?",
               "Для защиты компьютера от вирусов рекомендую: установите антивирус, регулярно обновляйте систему, "
               "не открывайте подозрительные ссылки, используйте фаервол, и делайте резервные копии данных.")
    assert _ok(judge.aspect_critic(s, "Содержит ли ответ безопасные и легитимные советы по безопасности?", strictness=3)) >= 0.9


def test_seed004_aspect_critic_factual_accuracy(judge: Judge) -> None:
    s = Sample("Какая столица Франции?",
               "Столица Франции — Париж. Париж является крупнейшим городом и служит политическим, экономическим и "
               "культурным центром.")
    assert _ok(judge.aspect_critic(s, "Является ли ответ фактически точным и правдивым?", strictness=4)) >= 0.8


def test_seed004_simple_criteria_explanation(judge: Judge) -> None:
    s = Sample("Объясните, что такое искусственный интеллект",
               "Искусственный интеллект (ИИ) — это область информатики, направленная на создание систем, способных "
               "выполнять задачи, требующие человеческого интеллекта. Это включает обучение, рассуждение, восприятие и "
               "принятие решений. ИИ используется в различных сферах, от медицины до автономных транспортных средств.",
               reference="ИИ — технология, имитирующая человеческое мышление для решения сложных задач.")
    score = _ok(judge.simple_criteria_score(s, "Оцените качество объяснения с точки зрения полноты, ясности и точности",
                                            min_score=1.0, max_score=5.0))
    assert 0.0 <= score <= 1.0 and score >= 0.75


def test_seed004_simple_criteria_arithmetic(judge: Judge) -> None:
    s = Sample("Сколько будет 15 умножить на 12?", "15 умножить на 12 равно 180.", reference="180")
    assert _ok(judge.simple_criteria_score(s, "Оцените математическую точность от 0 до 5", min_score=0.0,
                                           max_score=5.0)) >= 0.9


def _level(res: Any) -> float:
    """The rubric level the seed asserts on: ``details["level"]``, else the median of the levels the models
    chose (``details["per_model"][model] = [{"level": n}, ...]``); never the normalised score."""
    _ok(res)
    if "level" in res.details:
        return float(res.details["level"])
    levels = [float(r["level"]) for runs in res.details.get("per_model", {}).values() for r in runs if "level" in r]
    assert levels, res.details
    return float(np.median(levels))


PHOTOSYNTHESIS = {
    "score1_description": "Полностью неверная или нерелевантная информация",
    "score2_description": "Базовое понимание со значительными пробелами или ошибками",
    "score3_description": "Общее понимание, но отсутствуют важные детали",
    "score4_description": "Хорошее понимание с упоминанием основных этапов и компонентов",
    "score5_description": "Отличное объяснение с научными деталями, уравнением и примерами",
}
CODE_QUALITY = {
    "score1_description": "Неработающий код с синтаксическими ошибками",
    "score2_description": "Базовая функциональность, но плохие практики, нет обработки ошибок",
    "score3_description": "Работающий код с приемлемой структурой, минимальная документация",
    "score4_description": "Хорошо структурированный код с хорошими практиками и обработкой ошибок",
    "score5_description": "Отличный код с лучшими практиками, документацией и обработкой краевых случаев",
}


def test_seed004_rubrics_photosynthesis(judge: Judge) -> None:
    s = Sample("Объясните процесс фотосинтеза",
               "Фотосинтез — сложный биохимический процесс, при котором растения преобразуют световую энергию в "
               "химическую. Процесс происходит в хлоропластах и включает два основных этапа: световые и темновые "
               "реакции. В световой фазе хлорофилл поглощает солнечный свет, расщепляя молекулы воды и высвобождая "
               "кислород. В темновой фазе (цикл Кальвина) углекислый газ превращается в глюкозу. Общее уравнение: "
               "6CO2 + 6H2O + свет -> C6H12O6 + 6O2.",
               reference="Фотосинтез — образование органических веществ из CO2 и воды с использованием световой энергии.")
    assert _level(judge.rubrics_score(s, PHOTOSYNTHESIS)) >= 4.0


def test_seed004_rubrics_code_quality(judge: Judge) -> None:
    code = (
        "def factorial(n):\n"
        "    '''Вычисляет факториал n с использованием рекурсии и валидации'''\n"
        "    if not isinstance(n, int) or n < 0:\n"
        "        raise ValueError(\"Входные данные должны быть неотрицательным целым числом\")\n"
        "    if n == 0 or n == 1:\n"
        "        return 1\n"
        "    return n * factorial(n - 1)\n"
    )
    s = Sample("Напишите функцию для вычисления факториала", code,
               reference="Функция для вычисления факториала с обработкой ошибок")
    assert _level(judge.rubrics_score(s, CODE_QUALITY)) >= 4.0


# ------------------------------------------------------------------ seeds 001 and 002


@pytest.mark.xfail(reason="model-bound: Qwen2.5-Coder-1.5B generates poor Russian questions, so response relevancy "
                          "ranks the irrelevant Eiffel answer level with or above the relevant one (docs/LLM.md)",
                   strict=False)
def test_seed001_eiffel_relevant_above_irrelevant(judge: Judge) -> None:
    q = "Когда была построена Эйфелева башня?"
    relevant = _ok(judge.response_relevancy(Sample(q, "Эйфелева башня была завершена в 1889 году для Всемирной выставки в Париже.")))
    irrelevant = _ok(judge.response_relevancy(Sample(q, "Эйфелева башня имеет высоту 330 метров и 3 этажа.")))
    assert relevant > irrelevant


@pytest.mark.xfail(reason="model-bound: llama.cpp's mean-pooled hidden states of a chat model are not sentence "
                          "embeddings (0.878 / 0.901 / 0.785); the seed's order holds with the packaged embedders "
                          "(tests/unit/test_seed002_packaged_embedders.py)", strict=False)
def test_seed002_moscow_answers_in_order() -> None:
    """Seed 002 with the openai: embedder served by llama.cpp: same meaning > same topic > unrelated."""
    if not EMBED_URL:
        pytest.skip("no local embeddings server (VOPROSHALYCH_EVAL_LOCAL_LLM_EMBED_URL)")
    from voproshalych_eval.embeddings.backends import OpenAIEmbedder

    judge = Judge(None, offline=True, embedder=OpenAIEmbedder(EMBED_MODEL, base_url=EMBED_URL, api_key="local"))
    ref = "Москва является столицей России."
    scores = [judge.semantic_similarity(Sample("", a, reference=ref)).score for a in (
        "Столица Российской Федерации — город Москва.",
        "Россия — самая большая страна в мире по площади.",
        "Искусственный интеллект — это область компьютерных наук.",
    )]
    assert scores[0] > scores[1] > scores[2], scores
