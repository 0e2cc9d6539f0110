"""Quirks of real OpenAI-compatible providers, each served by the scripted server and handled by the client."""

from __future__ import annotations

import json

import pytest

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.llm import LLMCallError, LLMClient, Provider, RetryPolicy
from voproshalych_eval.llm.prices import DEFAULT_PRICES, Price, summarize_usage
from voproshalych_eval.llm.providers import ProviderConfigError, configured_providers, split_base_url

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "explanation": {"type": "string"}},
    "required": ["score", "explanation"],
}
FAST = RetryPolicy(max_attempts=3, initial=0.01, multiplier=2, max_delay=0.02, jitter=0.0)


def client(srv: ScriptedOpenAI, base_url: str | None = None, **kw) -> LLMClient:  # type: ignore[no-untyped-def]
    return LLMClient([Provider("p", base_url or srv.base_url, kw.pop("key_env", None), ["m"], kw.pop("headers", {}))],
                     retry=FAST, timeout=5, **kw)


def msg(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_reasoning_content_with_empty_content(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.reasoning_field = True
    c = client(scripted_openai)
    r = c.complete(msg("a"), model="m")
    assert r.text.startswith("Тестовый ответ модели m")
    s = c.complete(msg("b"), model="m", schema=SCHEMA)
    assert s.parsed == {"score": 0.8, "explanation": "ok"}
    # the server really sent an empty content
    scripted_openai.reasoning_field = False
    assert c.complete(msg("c"), model="m").text.startswith("Тестовый")


def test_max_tokens_refused_switches_to_max_completion_tokens_once(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.refuse_max_tokens = True
    c = client(scripted_openai)
    r = c.complete(msg("a"), model="m", max_tokens=77)
    assert r.text and scripted_openai.count == 2
    assert "max_tokens" in scripted_openai.requests[0] and scripted_openai.requests[1]["max_completion_tokens"] == 77
    c.complete(msg("b"), model="m", max_tokens=50)
    assert scripted_openai.count == 3 and "max_tokens" not in scripted_openai.requests[2]  # remembered


def test_mistral_json_object_only(scripted_openai: ScriptedOpenAI) -> None:
    """json_schema refused (422) and json_object with an extra 'schema' key refused (422): plain json_object."""
    scripted_openai.accept_formats = {"json_object"}
    scripted_openai.strict_formats = True
    c = client(scripted_openai)
    r = c.complete(msg("a"), model="m", schema=SCHEMA)
    assert r.mode == "json_object" and r.parsed["score"] == 0.8
    assert [q.get("response_format", {}).get("type") for q in scripted_openai.requests] == [
        "json_schema", "json_object", "json_object"]
    assert scripted_openai.requests[-1]["response_format"] == {"type": "json_object"}
    assert "JSON Schema:" in scripted_openai.requests[-1]["messages"][-1]["content"]
    n = scripted_openai.count
    c.complete(msg("b"), model="m", schema=SCHEMA)
    assert scripted_openai.count == n + 1 and c.structured_mode("m") == "json_object"


def test_no_response_format_at_all_falls_back_to_text(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.accept_formats = set()
    c = client(scripted_openai)
    r = c.complete(msg("a"), model="m", schema=SCHEMA)
    assert r.mode == "text" and r.parsed == {"score": 0.8, "explanation": "ok"}
    assert "response_format" not in scripted_openai.requests[-1] and scripted_openai.count == 4


def test_missing_usage_is_unknown_not_zero(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.omit_usage = True
    c = client(scripted_openai)
    r = c.complete(msg("a"), model="gpt-4o-mini")
    assert r.prompt_tokens is None and r.completion_tokens is None
    u = c.usage(with_cost=True)
    assert u["no_usage"] == 1 and u["per_model"]["gpt-4o-mini"]["cost_usd"] is None and u["cost_usd"] is None


def test_usage_and_cost_per_model(scripted_openai: ScriptedOpenAI) -> None:
    c = LLMClient([Provider("p", scripted_openai.base_url, None, ["gpt-4o-mini", "no-price-model"])], retry=FAST)
    r = c.complete(msg("раз два три"), model="gpt-4o-mini")
    c.complete(msg("x"), model="no-price-model")
    u = c.usage(with_cost=True)
    inp, out = DEFAULT_PRICES["gpt-4o-mini"]
    expected = (r.prompt_tokens * inp + r.completion_tokens * out) / 1e6
    assert u["per_model"]["gpt-4o-mini"]["cost_usd"] == pytest.approx(expected) and expected > 0
    assert u["per_model"]["no-price-model"]["cost_usd"] is None and u["cost_usd"] is None


def test_summarize_usage_rules() -> None:
    prices = {"a": Price("a", 1.0, 2.0), "openai/b": Price("openai/b", 10.0, 10.0)}
    s = summarize_usage({"a": {"calls": 2, "prompt_tokens": 1_000_000, "completion_tokens": 500_000},
                         "prov:openai/b": {"calls": 1, "cached": 1}}, prices)
    assert s["per_model"]["a"]["cost_usd"] == pytest.approx(2.0)
    assert s["per_model"]["prov:openai/b"]["cost_usd"] == 0.0  # cached only: no money spent, price known
    assert s["cost_usd"] == pytest.approx(2.0)
    assert summarize_usage({}, prices)["cost_usd"] == 0.0


def test_empty_choices_is_retried(scripted_openai: ScriptedOpenAI) -> None:
    c = client(scripted_openai)
    scripted_openai.script(Reply.no_choices(), Reply.text("готово"))
    r = c.complete(msg("a"), model="m")
    assert r.text == "готово" and r.attempts == 2
    scripted_openai.script(*[Reply.no_choices()] * 3)
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("b"), model="m")
    assert ei.value.kind == "server_error" and ei.value.attempts == 3 and "no choices" in ei.value.message


@pytest.mark.parametrize(
    ("reply", "kind", "text"),
    [
        (Reply.raw(404, json.dumps({"detail": "Model 'm' not found"})), "bad_request", "Model 'm' not found"),
        (Reply.raw(400, json.dumps({"error": "model 'm' not found, try pulling it first"})), "bad_request", "try pulling it"),
        (Reply.raw(422, json.dumps({"message": "Invalid model: m", "type": "invalid_model"})), "bad_request", "Invalid model: m"),
        (Reply.raw(401, "<html><body>401 Authorization Required</body></html>", "text/html"), "auth", "Authorization Required"),
        (Reply.raw(400, json.dumps({"detail": [{"loc": ["body", "messages"], "msg": "field required"}]})), "bad_request", "field required"),
    ],
)
def test_error_bodies_in_other_shapes(scripted_openai: ScriptedOpenAI, reply: Reply, kind: str, text: str) -> None:
    c = client(scripted_openai)
    scripted_openai.script(reply)
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("a"), model="m")
    assert ei.value.kind == kind and text in ei.value.message and ei.value.status == reply.status


def test_plain_text_503_is_retried_and_reported(scripted_openai: ScriptedOpenAI) -> None:
    c = client(scripted_openai)
    scripted_openai.script(*[Reply.raw(503, "upstream connect error", "text/plain")] * 3)
    with pytest.raises(LLMCallError) as ei:
        c.complete(msg("a"), model="m")
    assert ei.value.kind == "server_error" and ei.value.attempts == 3 and "upstream connect error" in ei.value.message


def test_openrouter_attribution_headers(scripted_openai: ScriptedOpenAI) -> None:
    class S:
        secrets = {"llm": {"providers": [{"name": "openrouter", "base_url": scripted_openai.base_url, "models": ["m"],
                                          "headers": {"HTTP-Referer": "https://example.org/eval", "X-Title": "Eval"}}]}}

    providers = configured_providers(S(), env={})
    c = LLMClient(providers, retry=FAST, settings=S())
    c.complete(msg("a"), model="m")
    seen = scripted_openai.headers_seen[-1]
    assert seen["http-referer"] == "https://example.org/eval" and seen["x-title"] == "Eval"
    assert providers[0].describe()["headers"] == ["HTTP-Referer", "X-Title"]


def test_base_url_query_is_sent_as_query_params(scripted_openai: ScriptedOpenAI) -> None:
    c = client(scripted_openai, base_url=scripted_openai.base_url + "?api-version=2024-06-01&api-key=qk-0123456789")
    c.complete(msg("a"), model="m")
    path, _, query = scripted_openai.paths[-1].partition("?")
    assert path == "/v1/chat/completions"
    assert sorted(query.split("&")) == ["api-key=qk-0123456789", "api-version=2024-06-01"]


def test_user_info_base_url_makes_a_well_formed_request(scripted_openai: ScriptedOpenAI) -> None:
    base = scripted_openai.base_url.replace("http://", "http://alice:pw-0123456789@")
    c = client(scripted_openai, base_url=base)
    assert c.complete(msg("a"), model="m").text
    assert scripted_openai.paths[-1] == "/v1/chat/completions"


def test_user_info_and_an_api_key_are_refused(scripted_openai: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx turns user-info into Basic auth and silently drops the Bearer key: refused, naming the variable."""
    monkeypatch.setenv("BOTH_API_KEY", "sk-both-0123456789")
    base = scripted_openai.base_url.replace("http://", "http://alice:pw-0123456789@")
    c = client(scripted_openai, base_url=base, key_env="BOTH_API_KEY")
    with pytest.raises(ProviderConfigError) as ei:
        c.complete(msg("a"), model="m")
    assert "BOTH_API_KEY" in str(ei.value) and "pw-0123456789" not in str(ei.value) and scripted_openai.count == 0


@pytest.mark.parametrize(
    ("url", "word"),
    [("http://h/v1?api-key=SECRETVALUE1#frag", "fragment"), ("http://h/v1?key=SECRETVALUE1&key=SECRETVALUE2", "repeats"),
     ("ftp://h/v1?key=SECRETVALUE1", "http(s)"), ("http://h:99999/v1?key=SECRETVALUE1", "malformed")],
)
def test_unusable_base_urls_are_refused_clearly(url: str, word: str) -> None:
    with pytest.raises(ProviderConfigError) as ei:
        split_base_url(url, "prov")
    assert word in str(ei.value) and "'prov'" in str(ei.value) and "SECRETVALUE" not in str(ei.value)


def test_echoed_credentials_are_scrubbed_from_replies_and_cache(scripted_openai: ScriptedOpenAI,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECHO_TEST_API_KEY", "sk-echo-0123456789abcdef")
    scripted_openai.echo_auth = True
    c = client(scripted_openai, base_url=scripted_openai.base_url + "?api-key=qk-echo-9876543210", key_env="ECHO_TEST_API_KEY")
    t = c.complete(msg("a"), model="m")
    s = c.complete(msg("b"), model="m", schema=SCHEMA)
    cached = c.cache.get(next(iter(c.cache._mem)))
    blob = t.text + json.dumps(s.parsed) + json.dumps(cached)
    assert "[auth: Bearer ***" in t.text  # the server did echo them
    assert "sk-echo-0123456789abcdef" not in blob and "qk-echo-9876543210" not in blob
