"""Bot API settings: templates, presets, outcome rules, credential guard, rate limiter, client vs the stand-in."""

from __future__ import annotations

import json
import threading

import pytest

from tests.support.production_qa import ProductionQA
from voproshalych_eval.bot_api.client import BotApiClient
from voproshalych_eval.bot_api.rate_limit import RateLimiter
from voproshalych_eval.bot_api.spec import (
    BotApiSpec,
    OutcomeRule,
    classify,
    header_variables,
    preset_url,
    spec_from_options,
)


def test_body_template_encodes_values_as_json() -> None:
    spec = spec_from_options("http://h:1", preset="voproshalych")
    tricky = 'Где "деканат"?\n\\ {x} </script>'
    body = json.loads(spec.request_body(tricky, ["привет", 'он сказал "да"']))
    assert body == {"question": tricky, "dialog_context": ["привет", 'он сказал "да"']}
    assert json.loads(spec.request_body("q")) == {"question": "q", "dialog_context": []}
    # a placeholder inside other text is filled as text; numbers and nesting survive
    custom = spec_from_options("http://h:1/ask", method="POST", body={"q": "Вопрос: {question}", "n": 3, "l": ["{question}"]})
    assert json.loads(custom.request_body('a"b')) == {"q": 'Вопрос: a"b', "n": 3, "l": ['a"b']}


def test_presets_and_urls() -> None:
    prod = spec_from_options("http://host:8080", preset="voproshalych")
    assert (prod.method, prod.url, prod.answer_path, prod.url_path, prod.chunks_path) == (
        "POST", "http://host:8080/qa/", "answer", "confluence_url", None)
    assert preset_url("http://host:8080/qa/", "voproshalych") == "http://host:8080/qa/"
    seed = spec_from_options("http://host:8080/")
    assert seed.preset == "search-rag" and seed.method == "GET"
    assert seed.request_url("Где общежитие?") == "http://host:8080/llm/search-rag?questions=%D0%93%D0%B4%D0%B5%20%D0%BE%D0%B1%D1%89%D0%B5%D0%B6%D0%B8%D1%82%D0%B8%D0%B5%3F"
    own = spec_from_options("http://h/x?q={question}&k=1")
    assert own.preset == "custom" and own.request_url("a&b") == "http://h/x?q=a%26b&k=1"
    # overrides replace preset values; a saved spec round-trips through JSON
    tuned = spec_from_options("http://h", preset="voproshalych", rps=0.5, timeout_s=5, headers=["X-Client: eval"])
    assert tuned.rps == 0.5 and tuned.timeout_s == 5.0 and tuned.headers == {"X-Client": "eval"}
    assert BotApiSpec.from_dict(json.loads(json.dumps(tuned.to_dict()))) == tuned


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"url": "ftp://h"}, "http://"),
        ({"url": "http://user:pw@h/qa/"}, "credentials"),
        ({"url": "http://h", "method": "GET", "body": {"q": 1}}, "GET request has no body"),
        ({"url": "http://h", "method": "PUT"}, "GET or POST"),
        ({"url": "http://h", "rps": 0}, "requests-per-second"),
        ({"url": "http://h", "headers": {"Authorization": "Bearer abc123"}}, "looks like a credential"),
        ({"url": "http://h", "headers": {"X-Api-Key": "k-${KEY}-literal"}}, "looks like a credential"),
        ({"url": "http://h", "headers": {"Bad Name": "x"}}, "valid HTTP header name"),
    ],
)
def test_spec_validation_names_the_problem(kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        BotApiSpec(**kwargs).validate()


def test_credential_headers_take_variables_only() -> None:
    spec = BotApiSpec("http://h", headers={"Authorization": "Bearer ${BOT_TOKEN}", "X-Api-Key": "${KEY}", "X-Client": "eval"})
    assert spec.validate() is spec
    assert header_variables(spec.headers) == ["BOT_TOKEN", "KEY"]
    assert "${BOT_TOKEN}" in json.dumps(spec.to_dict())


def test_outcome_rules() -> None:
    rules = [OutcomeRule.parse("404:^Answer banned=banned"), OutcomeRule.parse("4xx=not_found"),
             OutcomeRule.parse("*:Ответ не найден=not_found")]
    assert classify(404, "Answer banned", rules).outcome == "banned"
    assert classify(404, "Chunk not found", rules).outcome == "not_found"
    assert classify(410, "", rules).outcome == "not_found"
    assert classify(200, '{"answer": "Ответ не найден."}', rules).outcome == "not_found"
    assert classify(200, '{"answer": "ok"}', rules) is None
    assert OutcomeRule.parse("404:a=b=banned").pattern == "a=b"  # the outcome follows the LAST '='
    for bad in ("404", "404:x=maybe", "40:x=banned", "404:(=banned"):
        with pytest.raises(ValueError, match="outcome rule"):
            OutcomeRule.parse(bad)


def test_rate_limiter_spaces_slots_on_a_fake_clock() -> None:
    now = [100.0]
    slept: list[float] = []
    lim = RateLimiter(4.0, clock=lambda: now[0], sleep=slept.append)
    assert [lim.reserve() for _ in range(4)] == [0.0, 0.25, 0.5, 0.75]  # four callers at the same instant
    now[0] += 2.0  # long idle: the next call goes at once, no burst credit beyond one slot
    assert lim.reserve() == 0.0 and lim.reserve() == 0.25
    now[0] += 0.1
    assert lim.acquire() == pytest.approx(0.4) and slept == [pytest.approx(0.4)]
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_rate_limiter_is_shared_by_threads() -> None:
    now = [0.0]
    lim = RateLimiter(10.0, clock=lambda: now[0], sleep=lambda s: None)
    waits: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        w = lim.reserve()
        with lock:
            waits.append(w)

    threads = [threading.Thread(target=take) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # twenty distinct slots 0.1 s apart, whatever the thread interleaving
    assert sorted(round(w, 6) for w in waits) == [round(i * 0.1, 6) for i in range(20)]


def test_client_against_the_production_stand_in() -> None:
    with ProductionQA() as srv:
        srv.answers["Где деканат?"] = ("В корпусе 1.", "https://kb/pages/1")
        srv.declines["Как взломать?"] = "Answer banned"
        srv.declines["Что такое X?"] = "Answer not found"
        srv.faults["Медленно"] = [503, 429, "drop"]
        srv.answers["Медленно"] = ("Ответ.", "https://kb/pages/2")
        srv.faults["Сломано"] = [500, 500, 500]
        spec = spec_from_options(srv.base_url, preset="voproshalych", rps=None, retries=2, retry_backoff_s=0.0)
        slept: list[float] = []
        cl = BotApiClient(spec, sleep=slept.append, secret=lambda name: None)
        ok = cl.ask("Где деканат?")
        assert (ok.outcome, ok.answer, ok.url, ok.contexts, ok.status) == ("answered", "В корпусе 1.", "https://kb/pages/1", [], 200)
        banned, nf, chunk = cl.ask("Как взломать?"), cl.ask("Что такое X?"), cl.ask("Неизвестно")
        assert (banned.outcome, banned.reason) == ("banned", "Answer banned")
        assert (nf.outcome, nf.reason) == ("not_found", "Answer not found")
        assert (chunk.outcome, chunk.reason) == ("not_found", "Chunk not found")
        slow = cl.ask("Медленно")  # 3 retries are one too many for retries=2: the third attempt drops
        assert slow.outcome == "error" and slow.error_kind == "connect" and slow.attempts == 3
        assert slow.transport_failures == {"http_5xx": 1, "http_429": 1, "connect": 1}
        srv.faults["Медленно"] = [429]
        again = cl.ask("Медленно")
        assert again.outcome == "answered" and again.attempts == 2 and again.transport_failures == {"http_429": 1}
        srv.faults["Медленно"] = [("sleep", 1.0)]
        timed = BotApiClient(spec_from_options(srv.base_url, preset="voproshalych", rps=None, timeout_s=0.2,
                                               retry_backoff_s=0.0), secret=lambda n: None).ask("Медленно")
        assert timed.outcome == "answered" and timed.transport_failures == {"timeout": 1}
        srv.answers["Пусто"] = ("", "https://kb/pages/3")
        empty = cl.ask("Пусто")  # an empty answer is an answer (scored as a bad one), not a decline
        assert (empty.outcome, empty.answer, empty.url) == ("answered", "", "https://kb/pages/3")
        broken = cl.ask("Сломано")
        assert (broken.outcome, broken.error_kind, broken.attempts) == ("error", "http_5xx", 3)
        # the seed-003 GET form against the production service: 405, an error (not retried)
        get = BotApiClient(spec_from_options(srv.base_url + "/qa/?q={question}"), secret=lambda n: None).ask("q")
        assert (get.outcome, get.error_kind, get.status, get.attempts) == ("error", "http_4xx", 405, 1)
        assert "does not accept GET; it allows POST" in get.reason and "--api-preset voproshalych" in get.reason
        posts = srv.posts()
        assert all(r.path == "/qa/" and r.headers["Content-Type"].startswith("application/json") for r in posts)
        assert posts[0].body == {"question": "Где деканат?", "dialog_context": []}
        assert any(r.method == "GET" for r in srv.requests)


def test_secret_value_reads_env_then_secrets_toml(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.config import Settings, secret_value

    s = Settings(home=tmp_path, secrets={"BOT_TOKEN": "from-toml", "EMPTY": ""})
    assert secret_value("BOT_TOKEN", env={}, settings=s) == "from-toml"
    assert secret_value("BOT_TOKEN", env={"BOT_TOKEN": "from-env"}, settings=s) == "from-env"
    assert secret_value("EMPTY", env={}, settings=s) is None and secret_value("NOPE", env={}, settings=s) is None
    spec = BotApiSpec("http://h", headers={"Authorization": "Bearer ${BOT_TOKEN}"})
    with pytest.raises(ValueError, match="BOT_TOKEN"):
        BotApiClient(spec, secret=lambda n: None).check_variables()


def test_redaction_keeps_variable_references_and_masks_values() -> None:
    """Run parameters are redacted before they are stored: a header template must survive (a resume sends it)."""
    from voproshalych_eval.redaction import redact

    assert redact('["Authorization: Bearer ${BOT_TOKEN}", "X-Api-Key: ${KEY}"]') == \
        '["Authorization: Bearer ${BOT_TOKEN}", "X-Api-Key: ${KEY}"]'
    assert redact("Authorization: Bearer abcdefghijk") == "Authorization: Bearer ***"


def test_header_values_are_masked_whatever_the_variable_is_called() -> None:
    """A header's value read from ``${VAR}`` is registered for redaction, even when the variable's name does not
    look secret: an error body that echoes the request's headers is stored and logged without it."""
    from voproshalych_eval.redaction import MASK, redact

    value = "sess-7f3a9c2e1b-value"
    with ProductionQA() as srv:
        srv.faults["Эхо"] = ["echo"]
        spec = BotApiSpec(srv.base_url + "/qa/", method="POST", body={"question": "{question}"},
                          headers={"X-Bot-Session": "${QA_SESSION_VALUE}"}, retries=0)
        reply = BotApiClient(spec, secret=lambda name: value if name == "QA_SESSION_VALUE" else None).ask("Эхо")
    assert reply.outcome == "error" and reply.error_kind == "http_5xx" and value in reply.reason
    assert value not in redact(reply.reason) and MASK in redact(reply.reason)


def test_golden_dialog_context_is_a_list_of_strings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A golden item's ``dialog_context`` (what the bot receives with the question) is a list of strings; a CSV
    cell holds it as JSON text, a plain cell is one turn; anything else fails naming the row and field."""
    from voproshalych_eval.datasets.store import DatasetError, load_file

    good = tmp_path / "golden.csv"
    good.write_text('question,ground_truth_answer,dialog_context\n'
                    'Где деканат?,В корпусе 1.,"[""Привет"", ""Я первокурсник""]"\n'
                    'А где столовая?,На первом этаже.,Где деканат?\n'
                    'Когда сессия?,В январе.,\n', encoding="utf-8")
    recs = load_file(good, "golden").records
    assert [r["dialog_context"] for r in recs] == [["Привет", "Я первокурсник"], ["Где деканат?"], []]
    spec = spec_from_options("http://h", preset="voproshalych")
    body = json.loads(spec.request_body(recs[0]["question"], recs[0]["dialog_context"]))
    assert body == {"question": "Где деканат?", "dialog_context": ["Привет", "Я первокурсник"]}
    bad = tmp_path / "bad.csv"
    bad.write_text('question,ground_truth_answer,dialog_context\nГде?,Там.,"[1, 2]"\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"row 2.*dialog_context.*element 1 must be a string"):
        load_file(bad, "golden")
