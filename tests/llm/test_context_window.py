"""Context windows: a "context length exceeded" reply is named as such (never a format fallback or a
transport error), the window is read from the server or a setting, and contexts are cut to fit."""

from __future__ import annotations

import json

import pytest

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.llm import LLMCallError, LLMClient, Provider, RetryPolicy
from voproshalych_eval.llm.context_window import (
    TokenEstimate,
    fit_contexts,
    window_from_models,
    window_from_props,
)
from voproshalych_eval.metrics.failures import category, item_kind

SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}
FAST = RetryPolicy(max_attempts=3, initial=0.01, max_delay=0.02, jitter=0.0)

#: the bodies real servers send when the prompt does not fit (HTTP 400)
OVERFLOW_BODIES = {
    # OpenAI (and llama-cpp-python's server, which copies its wording and code)
    "openai": {"error": {"message": "This model's maximum context length is 4096 tokens. However, your messages "
                                    "resulted in 5120 tokens. Please reduce the length of the messages.",
                         "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}},
    # vLLM's OpenAI server
    "vllm": {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested "
                                          "5120 tokens (4120 in the messages, 1000 in the completion). Please reduce "
                                          "the length of the messages or completion.",
             "type": "BadRequestError", "param": None, "code": 400},
    # llama.cpp's own server (llama-server)
    "llama.cpp": {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                            "type": "exceed_context_size_error", "n_prompt_tokens": 5120, "n_ctx": 4096}},
}


def client(srv: ScriptedOpenAI, **kw) -> LLMClient:  # type: ignore[no-untyped-def]
    return LLMClient([Provider("s", srv.base_url, None, ["m"], **kw)], retry=FAST, timeout=5)


@pytest.mark.parametrize("shape", sorted(OVERFLOW_BODIES))
def test_context_length_exceeded_is_context_overflow(scripted_openai: ScriptedOpenAI, shape: str) -> None:
    c = client(scripted_openai)
    scripted_openai.script(Reply.raw(400, json.dumps(OVERFLOW_BODIES[shape])))
    with pytest.raises(LLMCallError) as ei:
        c.complete([{"role": "user", "content": "длинный контекст " * 50}], model="m", schema=SCHEMA, use_cache=False)
    err = ei.value
    # named as what it is, with the server's words, and counted apart from transport and parse failures
    assert err.kind == "context_overflow" and err.status == 400 and "context window" in err.message
    assert category(err.kind) == "context_overflow"
    assert item_kind([{"kind": err.kind, "message": err.message}]) == "context_overflow"
    # not a response-format refusal: one request, no json_object / text variants sent after it
    assert scripted_openai.count == 1 and c.structured_mode("m") == "json_schema"
    assert c.usage()["failure_kinds"] == {"context_overflow": 1} and c.usage()["format_fallbacks"] == 0


def test_only_a_refused_response_format_falls_back(scripted_openai: ScriptedOpenAI) -> None:
    c = client(scripted_openai)
    scripted_openai.script(Reply.raw(400, json.dumps({"error": {"message": "Invalid value for temperature"}})))
    with pytest.raises(LLMCallError) as ei:
        c.complete([{"role": "user", "content": "x"}], model="m", schema=SCHEMA, use_cache=False)
    assert ei.value.kind == "bad_request" and scripted_openai.count == 1
    scripted_openai.script(Reply.raw(401, json.dumps({"error": {"message": "Incorrect API key provided"}})))
    with pytest.raises(LLMCallError) as ei:
        c.complete([{"role": "user", "content": "y"}], model="m", schema=SCHEMA, use_cache=False)
    assert ei.value.kind == "auth" and category("auth") == "auth" and "credentials" in ei.value.message


def test_fallback_is_kept_in_the_store(scripted_openai: ScriptedOpenAI, engine) -> None:  # type: ignore[no-untyped-def]
    """A refused format is learned once per endpoint and model and kept: a new client (a new process) never
    sends the refused request again."""
    scripted_openai.reject_json_schema = 400
    first = LLMClient([Provider("s", scripted_openai.base_url, None, ["m"])], engine, retry=FAST, timeout=5)
    first.complete([{"role": "user", "content": "a"}], model="m", schema=SCHEMA, use_cache=False)
    assert [r.get("response_format", {}).get("type") for r in scripted_openai.requests] == ["json_schema", "json_object"]
    second = LLMClient([Provider("s", scripted_openai.base_url, None, ["m"])], engine, retry=FAST, timeout=5)
    second.complete([{"role": "user", "content": "b"}], model="m", schema=SCHEMA, use_cache=False)
    assert scripted_openai.requests[-1]["response_format"]["type"] == "json_object" and scripted_openai.count == 3


def test_tokens_of_an_unparseable_reply_are_counted(scripted_openai: ScriptedOpenAI) -> None:
    c = client(scripted_openai)
    scripted_openai.script(Reply.garbage())
    with pytest.raises(LLMCallError) as ei:
        c.complete([{"role": "user", "content": "x"}], model="m", schema=SCHEMA, use_cache=False)
    assert ei.value.kind == "parse_error" and ei.value.prompt_tokens and ei.value.completion_tokens
    u = c.usage()
    assert u["prompt_tokens"] == ei.value.prompt_tokens and u["completion_tokens"] == ei.value.completion_tokens


def test_window_from_the_server_or_a_setting(scripted_openai: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    assert window_from_props({"default_generation_settings": {"n_ctx": 8192}}) == 8192
    assert window_from_models({"data": [{"id": "m", "meta": {"n_ctx_train": 32768, "n_ctx": 4096}}]}, "m") == 4096
    assert window_from_models({"data": [{"id": "m", "max_model_len": 16384}]}, "m") == 16384
    # the scripted server reports nothing: the provider's setting, else the environment, else unknown
    assert client(scripted_openai, context_window=3000).context_window("m") == 3000
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW", "2048")
    assert client(scripted_openai).context_window("m") == 2048
    monkeypatch.delenv("VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW")
    assert client(scripted_openai).context_window("m") is None


def test_fit_contexts_keeps_whole_chunks_then_cuts_and_records() -> None:
    est = TokenEstimate(2.0)
    chunks = ["а" * 100, "б" * 100, "в " * 200]  # 50, 50, 200 tokens
    same = fit_contexts(chunks, 1000, est)
    assert same.contexts == chunks and same.cut is None
    fit = fit_contexts(chunks, 150, est)
    assert fit.contexts[:2] == chunks[:2] and fit.contexts[2].endswith("…") and len(fit.contexts[2]) < len(chunks[2])
    assert sum(est.tokens(c) for c in fit.contexts) <= 150
    assert fit.cut == {"window_budget_tokens": 150, "kept_chunks": 2, "cut_chunks": 1, "dropped_chunks": 0,
                       "chars_before": 600, "chars_after": sum(map(len, fit.contexts))}
    none = fit_contexts(chunks, 0, est)
    assert not none.fits and none.contexts == []
