"""The redaction layer: URLs, headers, configured values, log records of our loggers and the SDK's."""

from __future__ import annotations

import io
import logging

import pytest

from voproshalych_eval import redaction as rd

KEY = "sk-live-7f3a9c1e5b2d4a6f"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://alice:hunter2-long-pass@127.0.0.1:9/v1?api-key=qk-9d8c7b6a5f4e")
    rd.refresh()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://u:p4ss@host:8080/v1", "http://***@host:8080/v1"),
        ("https://host/v1?api-key=abc123&x=1", "https://host/v1?api-key=***&x=1"),
        ("https://host/p?token=t&access_token=a&key=k&sig=s&page=2", "https://host/p?token=***&access_token=***&key=***&sig=***&page=2"),
        ("https://host/v1", "https://host/v1"),
        ("https://host/v1?q=Привет", "https://host/v1?q=Привет"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert rd.redact_url(url) == expected


def test_url_secrets() -> None:
    assert set(rd.url_secrets("http://bob:pw-123@h/v1?api-key=K1&page=2&token=T2")) == {
        "bob", "pw-123", "K1", "T2", "Ym9iOnB3LTEyMw=="}  # the last: base64 of the Basic auth pair
    assert rd.url_secrets("http://h/v1") == [] and rd.url_secrets(None) == []


@pytest.mark.parametrize(
    ("text", "leak"),
    [
        ("Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        ("{'authorization': 'Bearer zyxwvutsrq123', 'x': 1}", "zyxwvutsrq123"),
        ('headers={"api-key": "azure-key-0987"}', "azure-key-0987"),
        ("X-Api-Key=plainvalue77", "plainvalue77"),
        ("proxy-authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("sent bearer tok_1234567890 to the server", "tok_1234567890"),
        ('HTTP Request: POST http://u:secretpw@h/v1/chat/completions?api-key=QQQ "HTTP/1.1 200 OK"', "secretpw"),
    ],
)
def test_redact_headers_and_urls(text: str, leak: str) -> None:
    out = rd.redact(text)
    assert leak not in out and rd.MASK in out


def test_configured_values_masked_everywhere(secret_env: None) -> None:
    text = f"the key {KEY} and the password hunter2-long-pass, the query key qk-9d8c7b6a5f4e"
    out = rd.redact(text)
    assert KEY not in out and "hunter2-long-pass" not in out and "qk-9d8c7b6a5f4e" not in out
    assert out.startswith("the key *** and the password ***")


def test_url_encoded_form_is_masked() -> None:
    key = "ab+cd/ef=gh12"
    assert rd.scrub_values("sent key=ab%2Bcd%2Fef%3Dgh12 and ab+cd/ef=gh12", [key]) == "sent key=*** and ***"


def test_short_values_are_not_masked_as_free_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    rd.refresh()
    assert rd.redact("a local server") == "a local server"
    assert rd.redact("Authorization: Bearer local") == "Authorization: Bearer ***"


def test_secrets_toml_values(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    toml = tmp_path / "secrets.toml"
    toml.write_text('MY_PROVIDER_API_KEY = "prov-key-5566778899"\nname = "not secret at all"\n'
                    '[[llm.providers]]\nname = "x"\nbase_url = "https://h/v1?token=tok-in-toml-1122"\n', encoding="utf-8")
    monkeypatch.setenv("VOPROSHALYCH_EVAL_SECRETS", str(toml))
    rd.refresh()
    values = rd.configured_secrets()
    assert "prov-key-5566778899" in values and "tok-in-toml-1122" in values and "not secret at all" not in values


def test_scrub_obj_and_redact_obj(secret_env: None) -> None:
    obj = {"reason": f"echo {KEY}", "nested": [f"x {KEY}", 3, None], KEY: 1}
    out = rd.scrub_obj(obj)
    assert KEY not in repr(out) and out["nested"][1] == 3
    assert KEY not in repr(rd.redact_obj({"u": "http://a:b-password@h/"}))


def test_filter_redacts_message_args_and_traceback(secret_env: None) -> None:
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.addFilter(rd.RedactingFilter())
    lg = logging.getLogger("test.redaction.filter")
    lg.addHandler(handler)
    lg.propagate = False
    try:
        lg.warning("calling %s with %r", "http://alice:hunter2-long-pass@h/v1", {"Authorization": f"Bearer {KEY}"})
        try:
            raise RuntimeError(f"failed with key {KEY}")
        except RuntimeError:
            lg.exception("boom")
    finally:
        lg.removeHandler(handler)
    out = buf.getvalue()
    assert KEY not in out and "hunter2-long-pass" not in out
    assert "RuntimeError: failed with key ***" in out and "calling http://***@h/v1" in out


def test_configure_logging_protects_sdk_loggers(secret_env: None) -> None:
    """The SDK's transport logs every request URL (httpx2 for openai 3.x); a handler someone else installed on
    it (OPENAI_LOG, a library) gets the filter too; verbose shows the lines, redacted."""
    buf, other = io.StringIO(), io.StringIO()
    foreign = logging.StreamHandler(other)
    logging.getLogger("httpx2").addHandler(foreign)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        handler = rd.configure_logging(verbose=True, stream=buf)
        assert rd.configure_logging(verbose=True, stream=buf) is handler  # idempotent
        url = "http://alice:hunter2-long-pass@127.0.0.1:9/v1/chat/completions?api-key=qk-9d8c7b6a5f4e"
        logging.getLogger("httpx2").info('HTTP Request: %s %s "%s %d %s"', "POST", url, "HTTP/1.1", 200, "OK")
        logging.getLogger("httpx").info("HTTP Request: POST %s", url)
        for text in (buf.getvalue(), other.getvalue()):
            assert "hunter2-long-pass" not in text and "qk-9d8c7b6a5f4e" not in text and "alice" not in text
        assert "http://***@127.0.0.1:9/v1/chat/completions?api-key=***" in buf.getvalue()
        rd.configure_logging(verbose=False, stream=buf)
        assert logging.getLogger("httpx2").level == logging.WARNING
    finally:
        rd.uninstall_record_factory()
        logging.getLogger("httpx2").removeHandler(foreign)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_record_factory_covers_handlers_installed_later(secret_env: None) -> None:
    buf = io.StringIO()
    rd.install_record_factory()
    rd.install_record_factory()  # idempotent
    try:
        lg = logging.getLogger("test.redaction.later")
        late = logging.StreamHandler(buf)  # installed after the setup, without the filter
        lg.addHandler(late)
        lg.propagate = False
        lg.warning("pg_ctl with %s", f"postgresql://u:hunter2-long-pass@h/db key {KEY}")
        lg.removeHandler(late)
    finally:
        rd.uninstall_record_factory()
    assert "hunter2-long-pass" not in buf.getvalue() and KEY not in buf.getvalue() and "postgresql://***@h/db" in buf.getvalue()
    assert not getattr(logging.getLogRecordFactory(), "_voproshalych_eval_redacting", False)


def test_one_rule_names_secrets_for_settings_run_parameters_and_audit_details() -> None:
    from voproshalych_eval.db.audit import _clean
    from voproshalych_eval.engine.runs import scrub
    from voproshalych_eval.redaction import secret_name

    secret = ["OPENAI_API_KEY", "bot-token", "db.password", "openaiapikey", "Authorization", "session_cookie",
              "client_secret", "credentials"]
    plain = ["max_tokens", "n_tokens", "keyboard", "monkey", "PWD", "SSH_AUTH_SOCK", "judge_model"]
    assert [n for n in secret if not secret_name(n)] == []
    assert [n for n in plain if secret_name(n)] == []
    params = {n: "x" for n in secret + plain}
    assert sorted(scrub(params)) == sorted(plain)
    assert sorted(_clean(params)) == sorted(plain)
