"""LLM client against the scripted OpenAI-compatible server (real sockets)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.llm import LLMCallError, LLMClient, Provider, RetryPolicy
from voproshalych_eval.llm.providers import configured_providers
from voproshalych_eval.llm.structured import ParseError, extract_json_object, parse_structured

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "explanation": {"type": "string"}},
    "required": ["score", "explanation"],
}
FAST = RetryPolicy(max_attempts=4, initial=0.01, multiplier=2, max_delay=0.05, jitter=0.1)


def make_client(srv: ScriptedOpenAI, models=("m1", "m2", "m3"), **kw) -> LLMClient:  # type: ignore[no-untyped-def]
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 5)
    return LLMClient([Provider("scripted", srv.base_url, None, list(models))], **kw)


def msg(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_retry_after_is_honoured_then_success(scripted_openai: ScriptedOpenAI) -> None:
    c = make_client(scripted_openai)
    scripted_openai.script(Reply.error(429, retry_after=0.3), Reply.text("готово"))
    r = c.complete(msg("a"), model="m1")
    assert r.text == "готово" and r.attempts == 2
    # Retry-After (0.3 s) beat the 0.01 s backoff: the delay policy says so
    assert FAST.delay(1, 0.3) >= 0.3
    assert scripted_openai.count == 2


def test_500_then_success_and_exhausted_retries(scripted_openai: ScriptedOpenAI) -> None:
    c = make_client(scripted_openai)
    scripted_openai.script(Reply.error(500), Reply.error(503), Reply.text("ок"))
    assert c.complete(msg("b"), model="m1").attempts == 3
    scripted_openai.script(*[Reply.error(502)] * 4)
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("c"), model="m1")
    assert ei.value.kind == "server_error" and ei.value.attempts == 4
    assert c.usage()["failures"] == 1


def test_bad_request_is_not_retried(scripted_openai: ScriptedOpenAI) -> None:
    c = make_client(scripted_openai)
    scripted_openai.script(Reply.error(400))
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("d"), model="m1")
    assert ei.value.kind == "bad_request" and scripted_openai.count == 1


def test_timeout(scripted_openai: ScriptedOpenAI) -> None:
    c = make_client(scripted_openai, timeout=0.3, retry=RetryPolicy(max_attempts=2, initial=0.01, max_delay=0.01))
    scripted_openai.script(Reply.slow(1.0), Reply.slow(1.0))
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("e"), model="m1")
    assert ei.value.kind == "timeout" and ei.value.attempts == 2


def test_connection_error() -> None:
    c = LLMClient([Provider("dead", "http://127.0.0.1:9/v1", None, ["m"])], retry=RetryPolicy(max_attempts=2, initial=0.01),
                  timeout=1)
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("x"), model="m")
    assert ei.value.kind == "connection"


@pytest.mark.parametrize("status", [400, 500])
def test_json_schema_rejected_fallback_remembered(scripted_openai: ScriptedOpenAI, status: int) -> None:
    scripted_openai.reject_json_schema = status
    c = make_client(scripted_openai)
    r = c.complete(msg("f"), model="m2", schema=SCHEMA)
    assert r.mode == "json_object_schema" and r.parsed == {"score": 0.8, "explanation": "ok"}
    assert c.structured_mode("m2") == "json_object_schema"
    n = scripted_openai.count
    c.complete(msg("g"), model="m2", schema=SCHEMA)
    assert scripted_openai.count == n + 1  # no second json_schema probe
    assert scripted_openai.requests[-1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "JSON Schema:" in scripted_openai.requests[-1]["messages"][-1]["content"]


def test_json_object_rejected_falls_back_to_text(scripted_openai: ScriptedOpenAI) -> None:
    c = make_client(scripted_openai)
    refused = '{"error": {"message": "response_format is not supported by this model", "type": "invalid_request_error"}}'
    scripted_openai.script(*[Reply.raw(400, refused)] * 3, Reply.prose({"score": 0.4, "explanation": "x"}))
    r = c.complete(msg("h"), model="m3", schema=SCHEMA)
    assert r.mode == "text" and r.parsed["score"] == 0.4
    assert "response_format" not in scripted_openai.requests[-1]


def test_prose_around_json_is_parsed(scripted_openai: ScriptedOpenAI) -> None:
    c = make_client(scripted_openai)
    scripted_openai.script(Reply.prose({"score": 0.25, "explanation": "частично"}))
    assert c.complete(msg("i"), model="m1", schema=SCHEMA).parsed == {"score": 0.25, "explanation": "частично"}


@pytest.mark.parametrize("reply", [Reply.garbage(), Reply.empty(), Reply.json({"score": 7, "explanation": "x"}),
                                   Reply.json({"explanation": "нет оценки"})])
def test_unparseable_reply_is_a_failure_with_raw_text(scripted_openai: ScriptedOpenAI, reply: Reply) -> None:
    c = make_client(scripted_openai)
    scripted_openai.script(reply)
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("j"), model="m1", schema=SCHEMA)
    assert ei.value.kind == "parse_error"
    assert ei.value.raw_text == (reply.body if isinstance(reply.body, str) else ei.value.raw_text)
    assert c.usage()["failure_kinds"] == {"parse_error": 1}
    # a failed parse is never cached: the next call goes to the server again
    n = scripted_openai.count
    c.complete(msg("j"), model="m1", schema=SCHEMA)
    assert scripted_openai.count == n + 1


def test_cache_hit_makes_no_request(scripted_openai: ScriptedOpenAI, engine) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import text

    c = make_client(scripted_openai, engine=engine)
    c.cache.clear()
    first = c.complete(msg("кэш"), model="m1", schema=SCHEMA, purpose="test_cache")
    n = scripted_openai.count
    second = c.complete(msg("кэш"), model="m1", schema=SCHEMA, purpose="test_cache")
    assert scripted_openai.count == n and second.cached and second.parsed == first.parsed
    c.complete(msg("кэш"), model="m1", schema=SCHEMA, use_cache=False)
    assert scripted_openai.count == n + 1
    # a fresh client (new process) hits the database cache too
    c2 = make_client(scripted_openai, engine=engine)
    assert c2.complete(msg("кэш"), model="m1", schema=SCHEMA).cached
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT cached, status, attempts FROM eval.llm_calls WHERE purpose='test_cache' ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [(False, "ok", 1), (True, "ok", 0)]


def test_concurrency_bound_and_order(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.delay = 0.1
    c = make_client(scripted_openai, concurrency=3)
    out = c.map_concurrent(lambda i: c.complete(msg(f"q{i}"), model="m1").text, list(range(12)), concurrency=8)
    assert scripted_openai.max_in_flight == 3
    assert all(isinstance(o, str) for o in out)
    assert out[0] == c.complete(msg("q0"), model="m1").text  # cached, same order


def test_map_concurrent_returns_exceptions_and_cancels() -> None:
    from voproshalych_eval.llm import Cancelled, map_concurrent

    def f(i: int) -> int:
        if i == 2:
            raise ValueError("boom")
        return i * 10

    out = map_concurrent(f, [0, 1, 2, 3], concurrency=2)
    assert out[:2] == [0, 10] and isinstance(out[2], ValueError) and out[3] == 30
    ev = threading.Event()
    ev.set()
    assert all(isinstance(o, Cancelled) for o in map_concurrent(f, [1, 2], cancel=ev))


def test_acomplete(scripted_openai: ScriptedOpenAI) -> None:
    c = make_client(scripted_openai)

    async def main() -> list[str]:
        rs = await asyncio.gather(*[c.acomplete(msg(f"async {i}"), model="m1") for i in range(5)])
        return [r.text for r in rs]

    assert len(set(asyncio.run(main()))) == 5


def test_secrets_never_in_errors(scripted_openai: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SECRET_KEY", "sk-very-secret-value")
    c = LLMClient([Provider("p", scripted_openai.base_url, "MY_SECRET_KEY", ["m"])], retry=FAST, timeout=5)
    scripted_openai.script(Reply.error(400))
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("k"), model="m")
    assert "sk-very-secret-value" not in repr(ei.value.to_dict()) + str(ei.value)
    assert "sk-very-secret-value" not in repr(c.providers) + repr(c.providers[0].describe())
    assert c.providers[0].describe()["api_key_set"] is True


def test_configured_providers_from_secrets_and_env() -> None:
    class S:
        secrets = {"llm": {"providers": [
            {"name": "openrouter", "base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY",
             "models": ["google/gemini-2.5-flash", "openai/gpt-4o-mini"]},
            {"name": "broken"},
        ]}}

    ps = configured_providers(S(), env={})
    assert [p.name for p in ps] == ["openrouter"] and ps[0].models[1] == "openai/gpt-4o-mini"
    env = {"OPENAI_BASE_URL": "http://localhost:8000/v1", "VOPROSHALYCH_EVAL_LLM_MODELS": "qwen, llama"}
    d = configured_providers(None, env=env)
    assert d[0].name == "default" and d[0].models == ["qwen", "llama"]
    assert configured_providers(None, env={}) == []
    assert configured_providers(type("X", (), {"secrets": {"llm": "garbage"}})(), env={}) == []


def test_routing_explicit_provider(scripted_openai: ScriptedOpenAI) -> None:
    c = LLMClient([Provider("a", scripted_openai.base_url, None, ["x"]), Provider("b", scripted_openai.base_url, None, ["y"])])
    assert c.route("y")[0].name == "b" and c.route("a:y") == (c.providers[0], "y")


def test_strict_parser() -> None:
    assert extract_json_object('текст {"a": {"b": 1}} ещё {"c": 2}') == {"a": {"b": 1}}
    assert extract_json_object("{broken {\"ok\": true}") == {"ok": True}
    with pytest.raises(ParseError):
        parse_structured('{"score": "высокий", "explanation": ""}', SCHEMA)
    assert parse_structured('{"score": "0,5", "explanation": ""}', SCHEMA)["score"] == 0.5
