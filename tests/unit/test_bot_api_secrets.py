"""Bot API settings never carry or leak the runner's secrets: credentials in the URL's query (``?token=``) are
refused, and a header template may not read the app's own configuration variables (``DATABASE_URL``,
``OPENAI_API_KEY``, a provider's key variable …) — a shared profile cannot send them to the bot's host."""

from __future__ import annotations

import pytest

from voproshalych_eval.bot_api.client import BotApiClient
from voproshalych_eval.bot_api.spec import BotApiSpec, reserved_variable, spec_from_options
from voproshalych_eval.config import ENV_VARS


@pytest.mark.parametrize("url", [
    "http://bot.example/qa/?token=abc123secret",
    "http://bot.example/llm/search-rag?questions={question}&api_key=abc123secret",
    "https://bot.example/qa/?access_token=abc123secret&x=1",
])
def test_credentials_in_the_query_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="query") as exc:
        spec_from_options(url, preset="custom")
    assert "abc123secret" not in str(exc.value)


@pytest.mark.parametrize("variable", ["DATABASE_URL", "OPENAI_API_KEY", "VOPROSHALYCH_EVAL_STORE_URL",
                                      "VOPROSHALYCH_EVAL_EMBEDDINGS_API_KEY", "PGPASSWORD"])
def test_a_header_may_not_read_the_apps_configuration(variable: str) -> None:
    assert reserved_variable(variable)
    with pytest.raises(ValueError, match=variable):
        spec_from_options("http://bot.example/qa/", preset="voproshalych", headers=[f"X-Debug: ${{{variable}}}"])
    with pytest.raises(ValueError, match=variable):
        spec_from_options("http://bot.example/qa/", preset="voproshalych",
                          headers=[f"Authorization: Bearer ${{{variable}}}"])


def test_every_configuration_variable_is_reserved() -> None:
    assert all(reserved_variable(v) for v in ENV_VARS)
    assert not reserved_variable("BOT_TOKEN")


def test_a_provider_key_variable_is_reserved(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[[llm.providers]]\nname = "router"\nbase_url = "https://router.example/v1"\n'
                       'api_key_env = "ROUTER_KEY"\n', encoding="utf-8")
    monkeypatch.setenv("VOPROSHALYCH_EVAL_SECRETS", str(secrets))
    assert reserved_variable("ROUTER_KEY")
    with pytest.raises(ValueError, match="ROUTER_KEY"):
        spec_from_options("http://bot.example/qa/", preset="voproshalych", headers=["X-Key: ${ROUTER_KEY}"])


def test_a_stored_spec_with_a_reserved_variable_never_resolves_it() -> None:
    """A spec that bypassed validation (an old run's parameters) still never reads the variable."""
    spec = BotApiSpec(url="http://bot.example/qa/", headers={"X-Debug": "${DATABASE_URL}"})
    read: list[str] = []

    def secret(name: str) -> str:
        read.append(name)
        return "postgresql://u:p@h/db"

    with pytest.raises(ValueError, match="DATABASE_URL"):
        BotApiClient(spec, secret=secret)._headers()
    assert read == []


def test_a_declared_bot_variable_still_works() -> None:
    spec = spec_from_options("http://bot.example/qa/", preset="voproshalych",
                             headers=["Authorization: Bearer ${BOT_TOKEN}"])
    headers = BotApiClient(spec, secret=lambda n: "tok-123456" if n == "BOT_TOKEN" else None)._headers()
    assert headers["Authorization"] == "Bearer tok-123456"
