"""Alerts: one message per change — a run's verdict against its baselines, a gate, a scheduled run's outcome —
to a webhook (JSON POST, Mattermost/Slack-compatible ``text``), a Telegram chat (Bot API ``sendMessage``) or
e-mail (SMTP).

Each watched **series** keeps its last state in ``eval.alert_state``:

* ``verdict:<tier>:<dataset>`` — the baseline verdict of the series' latest finished, non-offline run
  (``good`` / ``attention`` / ``critical``; :func:`baselines.run_status`); an alert when it changes
  (``good → attention``, ``critical → good`` …; a first verdict that is not ``good`` counts as a change);
* ``gate:<name>`` — ``passed`` / ``failed`` of ``voproshalych-eval gate``;
* ``schedule:<name>`` — ``ok`` / ``failed`` of a schedule's runs.

:func:`observe` moves a series to a new state and, only when it changed, sends the message to every enabled
channel that wants the event (``verdict``, ``gate``, ``schedule``); every attempt is logged in
``eval.alert_log``. A message names the metric(s), the value with its 95% CI, the baseline, the run and a
link to it in the app (``VOPROSHALYCH_EVAL_APP_URL``). Secrets (a Telegram token, an SMTP password) are read
from the environment when sending, by the variable name a channel stores, and never stored, logged or shown.
Sending never fails a run: errors are logged and recorded.
"""

from __future__ import annotations

import json
import logging
import smtplib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import httpx
from sqlalchemy import Engine, text

from voproshalych_eval.config import env, secret_value
from voproshalych_eval.engine import baselines, runs
from voproshalych_eval.redaction import redact

log = logging.getLogger(__name__)

KINDS = ("webhook", "telegram", "smtp")
EVENTS = ("verdict", "gate", "schedule")
TELEGRAM_API = "https://api.telegram.org"
TIMEOUT_S = 10.0


@dataclass
class Channel:
    name: str
    kind: str
    target: str  # webhook URL | Telegram chat id | e-mail recipient(s), comma-separated
    options: dict[str, Any] = field(default_factory=dict)  # telegram: api_url, token_env; smtp: host, port, sender, user, password_env, starttls
    events: list[str] = field(default_factory=lambda: list(EVENTS))
    enabled: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "target": self.target, "options": self.options,
                "events": self.events, "enabled": self.enabled}


@dataclass
class Alert:
    event: str
    key: str
    title: str
    lines: list[str]
    run_id: int | None = None
    link: str | None = None

    @property
    def text(self) -> str:
        return "\n".join([self.title, *self.lines] + ([self.link] if self.link else []))

    def payload(self) -> dict[str, Any]:
        return {"text": self.text, "event": self.event, "key": self.key, "title": self.title, "lines": self.lines,
                "run_id": self.run_id, "link": self.link}


# ---------------------------------------------------------------------------------------------- channels


def check_channel(ch: Channel) -> None:
    if ch.kind not in KINDS:
        raise ValueError(f"alert channel {ch.name!r}: kind must be one of {', '.join(KINDS)}, got {ch.kind!r}")
    bad = [e for e in ch.events if e not in EVENTS]
    if bad or not ch.events:
        raise ValueError(f"alert channel {ch.name!r}: events must be among {', '.join(EVENTS)}, got {ch.events}")
    if ch.kind == "webhook" and not ch.target.startswith(("http://", "https://")):
        raise ValueError(f"alert channel {ch.name!r}: a webhook target must be an http(s) URL")
    if ch.kind == "smtp" and not ch.options.get("host"):
        raise ValueError(f"alert channel {ch.name!r}: SMTP needs options.host (and port, sender)")
    secretish = [k for k in ch.options if not k.endswith("_env")
                 and any(w in k.lower() for w in ("password", "token", "secret", "key"))]
    if secretish:
        raise ValueError(f"alert channel {ch.name!r}: secrets are never stored; name the environment variable "
                         "that holds one (token_env, password_env)")


def parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings (blank ones skipped) as a channel's options; digits become numbers."""
    out: dict[str, Any] = {}
    for pair in pairs:
        if not pair.strip():
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"option {pair.strip()!r}: expected KEY=VALUE")
        out[key.strip()] = int(value.strip()) if value.strip().isdigit() else value.strip()
    return out


def save_channel(engine: Engine, ch: Channel) -> Channel:
    check_channel(ch)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO eval.alert_channels(name, kind, target, options, events, enabled) VALUES (:n, :k, :t, "
            "CAST(:o AS jsonb), :e, :en) ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind, target = EXCLUDED.target, "
            "options = EXCLUDED.options, events = EXCLUDED.events, enabled = EXCLUDED.enabled"),
            {"n": ch.name, "k": ch.kind, "t": ch.target, "o": json.dumps(ch.options), "e": list(ch.events),
             "en": ch.enabled})
    return ch


def list_channels(engine: Engine) -> list[Channel]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT name, kind, target, options, events, enabled FROM eval.alert_channels "
                                 "ORDER BY name")).all()
    return [Channel(r[0], r[1], r[2], dict(r[3] or {}), list(r[4] or []), bool(r[5])) for r in rows]


def get_channel(engine: Engine, name: str) -> Channel:
    for ch in list_channels(engine):
        if ch.name == name:
            return ch
    raise LookupError(f"no alert channel named {name!r}")


def delete_channel(engine: Engine, name: str) -> None:
    with engine.begin() as conn:
        if not conn.execute(text("DELETE FROM eval.alert_channels WHERE name = :n"), {"n": name}).rowcount:
            raise LookupError(f"no alert channel named {name!r}")


# ------------------------------------------------------------------------------------------------ sending


def _secret(name: str | None) -> str | None:
    return secret_value(name) if name else None


def send(ch: Channel, alert: Alert) -> None:
    """Deliver ``alert`` on ``ch`` (raises on failure; the message of the error is redacted of secrets)."""
    secrets = [s for s in (_secret(ch.options.get("token_env")), _secret(ch.options.get("password_env"))) if s]
    try:
        if ch.kind == "webhook":
            r = httpx.post(ch.target, json=alert.payload(), timeout=TIMEOUT_S)
            r.raise_for_status()
        elif ch.kind == "telegram":
            token = _secret(ch.options.get("token_env") or "VOPROSHALYCH_EVAL_TELEGRAM_TOKEN")
            if not token:
                raise RuntimeError(f"the Telegram bot token is not set ({ch.options.get('token_env') or 'VOPROSHALYCH_EVAL_TELEGRAM_TOKEN'})")
            secrets.append(token)
            base = str(ch.options.get("api_url") or _setting("VOPROSHALYCH_EVAL_TELEGRAM_API_URL") or TELEGRAM_API)
            r = httpx.post(f"{base.rstrip('/')}/bot{token}/sendMessage",
                           json={"chat_id": ch.target, "text": alert.text, "disable_web_page_preview": True},
                           timeout=TIMEOUT_S)
            if r.status_code != 200 or not r.json().get("ok"):
                raise RuntimeError(f"Telegram answered {r.status_code}: {r.text[:300]}")
        else:
            msg = EmailMessage()
            msg["Subject"] = alert.title
            msg["From"] = str(ch.options.get("sender") or "voproshalych-eval@localhost")
            msg["To"] = ch.target
            msg.set_content(alert.text)
            with smtplib.SMTP(str(ch.options["host"]), int(ch.options.get("port") or 25), timeout=TIMEOUT_S) as smtp:
                if ch.options.get("starttls"):
                    smtp.starttls()
                if ch.options.get("user"):
                    smtp.login(str(ch.options["user"]), _secret(ch.options.get("password_env")) or "")
                smtp.send_message(msg)
    except Exception as exc:  # noqa: BLE001 - re-raised without secrets (a token sits in the Telegram URL)
        raise RuntimeError(redact(f"{type(exc).__name__}: {exc}", secrets)) from None


def _setting(name: str) -> str | None:
    return env(name)


def _log(engine: Engine, ch: str, alert: Alert, error: str | None) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO eval.alert_log(channel, event, key, run_id, ok, error, message) VALUES (:c, :e, :k, :r, :ok, "
            ":err, :m)"), {"c": ch, "e": alert.event, "k": alert.key, "r": alert.run_id, "ok": error is None,
                            "err": error, "m": alert.text[:4000]})


def dispatch(engine: Engine, alert: Alert, *, only: str | None = None) -> dict[str, str | None]:
    """Send ``alert`` to every enabled channel wanting its event (or only to channel ``only``); returns
    ``{channel: error or None}``. Every attempt is logged."""
    out: dict[str, str | None] = {}
    for ch in list_channels(engine):
        if only is not None and ch.name != only:
            continue
        if only is None and (not ch.enabled or alert.event not in ch.events):
            continue
        try:
            send(ch, alert)
            out[ch.name] = None
        except Exception as exc:  # noqa: BLE001 - an alert must never break what triggered it
            out[ch.name] = str(exc)
            log.warning("alert to %s failed: %s", ch.name, exc)
        _log(engine, ch.name, alert, out[ch.name])
    return out


def test_alert(engine: Engine, name: str) -> str | None:
    """Send a test message on channel ``name``; returns the error, or None when it was delivered."""
    get_channel(engine, name)
    alert = Alert("test", f"test:{name}", "voproshalych-eval: test alert",
                  [f"This is a test of the alert channel {name!r}."], link=app_link(None))
    return dispatch(engine, alert, only=name)[name]


def sent(engine: Engine, limit: int = 50) -> list[dict[str, Any]]:
    """The alert log, newest first."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT sent_at, channel, event, key, run_id, ok, error, message FROM eval.alert_log "
                                 "ORDER BY id DESC LIMIT :l"), {"l": limit}).all()
    return [dict(r._mapping) for r in rows]


# ------------------------------------------------------------------------------------------------ changes


def app_link(run_id: int | None) -> str | None:
    """The run in the app (``VOPROSHALYCH_EVAL_APP_URL``; the Runs page), or None without a base URL."""
    base = _setting("VOPROSHALYCH_EVAL_APP_URL")
    if not base:
        return None
    return base.rstrip("/") + ("/runs" + (f"?run={run_id}" if run_id is not None else ""))


def observe(engine: Engine, key: str, state: str, alert: Alert) -> bool:
    """Move series ``key`` to ``state``; when that changes it (a first state counts as a change from
    ``good``/``passed``/``ok``), dispatch ``alert`` once and return True. Concurrent observers of one change
    send one alert (the state row is updated conditionally)."""
    with engine.begin() as conn:
        prev = conn.execute(text("SELECT state FROM eval.alert_state WHERE key = :k FOR UPDATE"), {"k": key}).scalar()
        if prev == state or (prev is None and state in ("good", "passed", "ok")):
            if prev is None:
                conn.execute(text("INSERT INTO eval.alert_state(key, state, run_id) VALUES (:k, :s, :r) "
                                  "ON CONFLICT (key) DO NOTHING"), {"k": key, "s": state, "r": alert.run_id})
            return False
        conn.execute(text(
            "INSERT INTO eval.alert_state(key, state, run_id) VALUES (:k, :s, :r) ON CONFLICT (key) DO UPDATE SET "
            "state = EXCLUDED.state, run_id = EXCLUDED.run_id, updated_at = now()"),
            {"k": key, "s": state, "r": alert.run_id})
    alert.title = f"{alert.title} ({prev or 'none'} → {state})"
    dispatch(engine, alert)
    return True


def _fmt(v: Any) -> str:
    return "—" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


def verdict_lines(run: runs.Run, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per metric off its baseline: label, value with its 95% CI, baseline ± margin, status."""
    lines = []
    for r in rows:
        if r.get("status") not in ("attention", "critical"):
            continue
        agg = baselines.lookup_metric(run.metrics or {}, r["metric"]) or {}
        ci = f" [95% CI {_fmt(agg.get('ci_low'))}–{_fmt(agg.get('ci_high'))}]" if agg.get("ci_low") is not None else ""
        lines.append(f"{r['metric']} ({r.get('label_en')}): {_fmt(r['value'])}{ci}, n={_fmt(r.get('n'))}; "
                     f"baseline {_fmt(r['baseline'])} ± {_fmt(r['attention_margin'])} "
                     f"({r['direction']} is better) — {r['status']}")
    return lines


def on_run_finished(engine: Engine, run_id: int) -> None:
    """The alerts a finished run may trigger: its series' verdict changed; its schedule failed or recovered.
    Never raises (logged)."""
    try:
        run = runs.get_run(engine, run_id)
        if run is None or run.status == "running":
            return
        link = app_link(run.id)
        where = f"run #{run.id} ({run.tier}, dataset {run.dataset_name or '—'})"
        if run.schedule:
            state = "ok" if run.status in ("done", "done_with_failures") else "failed"
            observe(engine, f"schedule:{run.schedule}", state, Alert(
                "schedule", f"schedule:{run.schedule}", f"Scheduled run {run.schedule!r}: {run.status}",
                [where + (f": {run.error}" if run.error else "")], run.id, link))
        if run.offline or run.status != "done":
            return  # offline substitutes are never compared to baselines; an unfinished run has no verdict
        status = baselines.run_status(engine, run)
        if status.status not in ("good", "attention", "critical"):
            return
        key = f"verdict:{run.tier}:{run.dataset_name or '-'}"
        lines = verdict_lines(run, status.metrics) or ["every metric within its baseline"]
        observe(engine, key, status.status, Alert("verdict", key, f"{run.tier} on {run.dataset_name or '—'}: "
                                                  f"verdict {status.status}", [where, *lines], run.id, link))
    except Exception:  # noqa: BLE001 - alerting never breaks a run
        log.exception("alerts for run %s failed", run_id)


def on_gate(engine: Engine, name: str, passed: bool, lines: list[str]) -> bool:
    """A gate's outcome: an alert when it starts failing or passes again."""
    return observe(engine, f"gate:{name}", "passed" if passed else "failed",
                   Alert("gate", f"gate:{name}", f"Quality gate {name!r} {'passed' if passed else 'FAILED'}", lines,
                         link=app_link(None)))
