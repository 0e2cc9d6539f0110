"""One concurrency setting per provider in a process, Retry-After honoured exactly (issue 28, issue 23)."""

from __future__ import annotations

import threading

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.llm import LLMClient, Provider, RetryPolicy


def _client(srv: ScriptedOpenAI, **kw) -> LLMClient:  # type: ignore[no-untyped-def]
    return LLMClient([Provider("s", srv.base_url, None, ["m"])], timeout=10, **kw)


def test_retry_after_is_the_wait_without_backoff_or_doubling() -> None:
    p = RetryPolicy(initial=2.0, multiplier=2.0, jitter=0.25)
    # the server said 1 s: 1 s on every retry, never the 2 s backoff nor a doubling
    assert [p.delay(n, retry_after=1.0) for n in (1, 2, 3, 4)] == [1.0, 1.0, 1.0, 1.0]
    assert p.delay(1, retry_after=0.0) == 0.0 and p.delay(1, retry_after=500.0) == p.max_retry_after
    assert 1.5 <= p.delay(1) <= 2.5  # no header: the backoff


def test_two_clients_share_the_providers_limit(scripted_openai: ScriptedOpenAI) -> None:
    """A generator and a judge built apart (Tier 2) never have more requests in flight than the setting."""
    scripted_openai.delay = 0.05
    gen, judge = _client(scripted_openai, concurrency=3), _client(scripted_openai)  # the judge: the default
    assert judge.concurrency == 3  # a default never caps nor overrides an explicit setting
    msgs = [{"role": "user", "content": "x"}]
    threads = [threading.Thread(target=lambda c=c: c.map_concurrent(
        lambda i: c.complete(msgs, model="m", use_cache=False, cache_salt=str(i)), list(range(12)), concurrency=8))
        for c in (gen, judge)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert scripted_openai.count == 24 and 2 <= scripted_openai.max_in_flight <= 3


def test_the_asked_concurrency_is_what_is_sent(scripted_openai: ScriptedOpenAI) -> None:
    """`judge --concurrency 16` sends 16 at once: the client's own default (8) does not win."""
    scripted_openai.delay = 0.5  # long enough for 16 requests to be in flight together on a busy machine
    c = _client(scripted_openai)
    assert c.concurrency == 8
    c.set_concurrency(16)
    c.map_concurrent(lambda i: c.complete([{"role": "user", "content": str(i)}], model="m", use_cache=False),
                     list(range(32)), concurrency=32)
    assert scripted_openai.max_in_flight > 8 and scripted_openai.max_in_flight <= 16


def test_recovered_retries_are_counted(scripted_openai: ScriptedOpenAI) -> None:
    c = _client(scripted_openai, retry=RetryPolicy(max_attempts=4, initial=0.01, max_delay=0.02, jitter=0.0))
    scripted_openai.script(Reply.error(429, retry_after=0), Reply.error(503))
    r = c.complete([{"role": "user", "content": "x"}], model="m", use_cache=False)
    assert r.attempts == 3
    u = c.usage()
    assert u["retries"] == {"rate_limited": 1, "server_error": 1}
    assert u["recovered"] == {"rate_limited": 1, "server_error": 1} and u["failures"] == 0


def test_a_retry_asleep_holds_no_thread_the_requests_need(scripted_openai: ScriptedOpenAI) -> None:
    """At concurrency 2, items asleep on a Retry-After leave their request slots to others: the client runs twice
    the concurrency in threads (here 4 items meet at once), while requests in flight stay within 2."""
    from voproshalych_eval.llm.client import map_concurrent

    c = _client(scripted_openai, concurrency=2)
    meet = threading.Barrier(4, timeout=30)
    assert all(not isinstance(r, BaseException) for r in c.map_concurrent(lambda i: meet.wait(), list(range(4))))
    # the plain map keeps exactly its threads: 4 items cannot meet on 2
    short = threading.Barrier(4, timeout=1)
    assert all(isinstance(r, threading.BrokenBarrierError) for r in map_concurrent(lambda i: short.wait(), range(4),
                                                                                    concurrency=2))
    # with real requests and 429s: the bound on requests in flight holds
    scripted_openai.delay = 0.05
    scripted_openai.script(Reply.error(429, retry_after=0.3), Reply.error(429, retry_after=0.3))
    out = c.map_concurrent(lambda i: c.complete([{"role": "user", "content": str(i)}], model="m", use_cache=False),
                           list(range(12)))
    assert all(not isinstance(r, BaseException) for r in out) and scripted_openai.max_in_flight <= 2
