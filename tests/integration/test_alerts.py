"""Alerts, one per change: a run's verdict crossing its baseline (and back) posts exactly one JSON message each
to a webhook served here over real HTTP; a gate that starts failing, a scheduled run that fails; the Telegram
Bot API and SMTP paths against local stand-ins of their protocols (an HTTP server answering ``sendMessage``,
aiosmtpd); the test button; secrets never stored or shown."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.golden_copies import golden_copies
from voproshalych_eval.engine import alerts, baselines, runs


class Receiver:
    """An HTTP server recording every POST (path, JSON body); answers ``status`` with ``reply``."""

    def __init__(self, status: int = 200, reply: Any = None) -> None:
        self.posts: list[tuple[str, Any]] = []
        self.status, self.reply = status, reply if reply is not None else {"ok": True}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.posts.append((self.path, json.loads(body or b"null")))
                data = json.dumps(outer.reply).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def only_channel(engine: Any) -> Iterator[None]:
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.alert_channels"))
    yield
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.alert_channels"))


def _cli(args: list[str], capsys: Any) -> tuple[int, str, str]:
    from voproshalych_eval.cli import main

    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_baseline_crossing_sends_one_alert_per_change(demo_engine: Any, receiver: Receiver, only_channel: None,
                                                      tmp_path: Path, capsys: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOPROSHALYCH_EVAL_APP_URL", "https://eval.example")
    alerts.save_channel(demo_engine, alerts.Channel("hook", "webhook", receiver.url + "/hooks/x", events=["verdict"]))
    dataset = golden_copies(demo_engine, tmp_path / "alerts_golden.json", 24, tag="alerts")
    baselines.ensure_defaults(demo_engine)  # the defaults are seeded once: seed them before saving what to restore
    with demo_engine.connect() as conn:
        saved = [baselines.Baseline(**dict(r._mapping)) for r in conn.execute(text(
            "SELECT tier, metric, value, attention_margin, note FROM eval.baselines WHERE tier = 'tier1'"))]

    def run_with_mrr_baseline(value: float) -> int:
        with demo_engine.begin() as conn:
            conn.execute(text("DELETE FROM eval.baselines WHERE tier = 'tier1'"))
        baselines.set_baseline(demo_engine, baselines.Baseline("tier1", "mrr", value, 0.01))
        code, out, err = _cli(["tier1", "--retriever", "fts", "--dataset", str(dataset), "--json"], capsys)
        assert code == 0, err
        return int(json.loads(out)["run_id"])

    try:
        run_with_mrr_baseline(0.01)  # good: the series' first verdict, nothing to report
        assert receiver.posts == []
        crossed = run_with_mrr_baseline(0.999)  # critical: one alert
        run_with_mrr_baseline(0.999)  # still critical: no new alert
        back = run_with_mrr_baseline(0.01)  # good again: one alert
    finally:
        with demo_engine.begin() as conn:
            conn.execute(text("DELETE FROM eval.baselines WHERE tier = 'tier1'"))
        for b in saved:
            baselines.set_baseline(demo_engine, b)
    assert [p for p, _ in receiver.posts] == ["/hooks/x", "/hooks/x"]
    first, second = (body for _, body in receiver.posts)
    assert first["event"] == "verdict" and first["run_id"] == crossed and "good → critical" in first["title"]
    mrr = runs.get_run(demo_engine, crossed).metrics["chunk"]["mrr"]
    line = next(x for x in first["lines"] if x.startswith("chunk.mrr"))
    assert f"{mrr['value']:.4g}" in line and "95% CI" in line and "baseline 0.999 ± 0.01" in line
    assert first["link"] == f"https://eval.example/runs?run={crossed}" and first["text"].startswith(first["title"])
    assert second["run_id"] == back and "critical → good" in second["title"]


def test_gate_and_schedule_failures_alert_once_per_change(engine: Any, receiver: Receiver,
                                                          only_channel: None) -> None:
    alerts.save_channel(engine, alerts.Channel("hook", "webhook", receiver.url, events=["gate", "schedule"]))
    assert not alerts.on_gate(engine, "ci-gate-test", True, ["every check passed"])  # first state passed: quiet
    assert alerts.on_gate(engine, "ci-gate-test", False, ["chunk.mrr = 0.5; required >= 0.6"])
    assert not alerts.on_gate(engine, "ci-gate-test", False, ["chunk.mrr = 0.5; required >= 0.6"])
    assert alerts.on_gate(engine, "ci-gate-test", True, ["every check passed"])
    for status in ("failed", "failed"):
        run = runs.create_run(engine, "tier1", schedule="nightly-alert-test")
        runs.set_status(engine, run.id, status, error="source unreachable")
        alerts.on_run_finished(engine, run.id)
    events = [(b["event"], b["title"]) for _, b in receiver.posts]
    assert events == [("gate", "Quality gate 'ci-gate-test' FAILED (passed → failed)"),
                      ("gate", "Quality gate 'ci-gate-test' passed (failed → passed)"),
                      ("schedule", "Scheduled run 'nightly-alert-test': failed (none → failed)")]
    assert "source unreachable" in receiver.posts[-1][1]["text"]


def test_telegram_through_a_bot_api_stand_in(engine: Any, only_channel: None, capsys: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    token = "123456:telegram-secret-token-abc"
    monkeypatch.setenv("ALERT_TEST_TG_TOKEN", token)
    bot = Receiver(reply={"ok": True, "result": {"message_id": 1}})
    try:
        code, out, err = _cli(["alerts", "channel", "add", "tg", "--kind", "telegram", "--target", "-10042",
                               "--option", f"api_url={bot.url}", "--option", "token_env=ALERT_TEST_TG_TOKEN"], capsys)
        assert code == 0, err
        code, out, err = _cli(["alerts", "test", "tg", "--json"], capsys)
        assert code == 0 and json.loads(out)["delivered"], out + err
        path, body = bot.posts[-1]
        assert path == f"/bot{token}/sendMessage" and body["chat_id"] == "-10042" and "test alert" in body["text"]
        bot.status, bot.reply = 401, {"ok": False, "description": "Unauthorized"}
        code, out, err = _cli(["alerts", "test", "tg", "--json"], capsys)
        assert code == 1 and "401" in out and token not in out + err
    finally:
        bot.close()
    log_text = json.dumps(alerts.sent(engine), default=str)
    assert token not in log_text and "Unauthorized" in log_text
    code, _, err = _cli(["alerts", "channel", "add", "bad", "--kind", "telegram", "--target", "1",
                         "--option", "token=abc"], capsys)
    assert code == 2 and "secrets are never stored" in err


def test_smtp_through_a_local_server(engine: Any, only_channel: None, capsys: Any) -> None:
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    received: list[Any] = []

    class Keep(Message):
        def handle_message(self, message: Any) -> None:
            received.append(message)

    with socket.socket() as probe:  # a free port (aiosmtpd checks readiness by connecting to the port it is given)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ctl = Controller(Keep(), hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        code, _, err = _cli(["alerts", "channel", "add", "mail", "--kind", "smtp", "--target", "team@example.org",
                             "--option", "host=127.0.0.1", "--option", f"port={port}",
                             "--option", "sender=eval@example.org"], capsys)
        assert code == 0, err
        code, out, err = _cli(["alerts", "test", "mail"], capsys)
        assert code == 0, out + err
    finally:
        ctl.stop()
    assert len(received) == 1
    msg = received[0]
    assert msg["To"] == "team@example.org" and msg["Subject"] == "voproshalych-eval: test alert"
    assert "alert channel 'mail'" in msg.get_payload()
