"""``alerts channel add|list|delete``, ``alerts test NAME``, ``alerts log`` — where alerts go (one per change)."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine
from voproshalych_eval.engine.alerts import (
    EVENTS,
    KINDS,
    Channel,
    delete_channel,
    list_channels,
    parse_options,
    save_channel,
    sent,
    test_alert,
)


def register(sub: Any) -> None:
    p = sub.add_parser("alerts", help="alert channels (webhook, Telegram, e-mail): a verdict change, a gate failure, "
                                      "a scheduled run's failure — one message per change")
    a = p.add_subparsers(dest="alerts_command", metavar="ACTION")
    a.required = True
    ch = a.add_parser("channel", help="add, list or delete channels")
    c = ch.add_subparsers(dest="channel_command", metavar="ACTION")
    c.required = True
    q = c.add_parser("add", help="add (or replace) a channel",
                     description="Options (--option KEY=VALUE): telegram: api_url (a stand-in), token_env (default "
                                 "VOPROSHALYCH_EVAL_TELEGRAM_TOKEN); smtp: host, port, sender, user, password_env, "
                                 "starttls=1. Secrets are named by their environment variable, never stored.")
    q.add_argument("name")
    q.add_argument("--kind", required=True, choices=KINDS)
    q.add_argument("--target", required=True, help="webhook URL | Telegram chat id | e-mail address(es)")
    q.add_argument("--events", nargs="+", default=list(EVENTS), choices=EVENTS)
    q.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    q.add_argument("--disabled", action="store_true")
    add_json_flag(q)
    q.set_defaults(func=cmd_add)
    q = c.add_parser("list", help="every channel")
    add_json_flag(q)
    q.set_defaults(func=cmd_list)
    q = c.add_parser("delete", help="remove a channel")
    q.add_argument("name")
    add_json_flag(q)
    q.set_defaults(func=cmd_delete)
    q = a.add_parser("test", help="send a test alert on a channel (exit 1 when it was not delivered)")
    q.add_argument("name")
    add_json_flag(q)
    q.set_defaults(func=cmd_test)
    q = a.add_parser("log", help="alerts sent, newest first")
    q.add_argument("--limit", type=int, default=20)
    add_json_flag(q)
    q.set_defaults(func=cmd_log)


def cmd_add(args: Any) -> int:
    ch = save_channel(engine(), Channel(args.name, args.kind, args.target, parse_options(args.option), list(args.events),
                                        not args.disabled))
    emit(ch.to_json(), args.json, f"channel {ch.name}: {ch.kind} -> {ch.target} ({', '.join(ch.events)})")
    return 0


def cmd_list(args: Any) -> int:
    found = list_channels(engine())
    emit({"channels": [c.to_json() for c in found]}, args.json,
         "\n".join(f"{c.name:<16} {c.kind:<9} {c.target:<40} {','.join(c.events)}{'' if c.enabled else ' (disabled)'}"
                   for c in found) or "no channels")
    return 0


def cmd_delete(args: Any) -> int:
    delete_channel(engine(), args.name)
    emit({"deleted": args.name}, args.json, f"deleted {args.name}")
    return 0


def cmd_test(args: Any) -> int:
    error = test_alert(engine(), args.name)
    emit({"channel": args.name, "delivered": error is None, "error": error}, args.json,
         f"{args.name}: delivered" if error is None else f"{args.name}: NOT delivered: {error}")
    return 0 if error is None else 1


def cmd_log(args: Any) -> int:
    rows = sent(engine(), args.limit)
    emit({"alerts": rows}, args.json, "\n".join(
        f"{r['sent_at']:%Y-%m-%d %H:%M} {r['channel']:<14} {r['event']:<9} {'ok' if r['ok'] else 'FAILED'} "
        f"{r['message'].splitlines()[0]}" for r in rows) or "no alerts sent")
    return 0
