"""``eval.audit_log``: who started which run, labelled which item, edited which dataset, changed which setting.

Written here only (:func:`record`); read by the Audit page and ``voproshalych-eval audit`` (:func:`entries`).
A row holds the actor (the signed-in user's e-mail, or the OS user in single-user mode), their role, the
action kind (``run``, ``label``, ``dataset``, ``settings``, ``baseline``, ``bot``, ``schedule``, ``alert``),
its target (a run id, a dataset name, a setting's name), the outcome (``done`` or ``refused``) and a few
details. Details never hold a secret (entries whose name looks secret are dropped) nor a question text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, text

from voproshalych_eval.redaction import redact, secret_name

OUTCOMES = ("done", "refused")


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    actor: str
    role: str | None
    action: str
    target: str | None
    outcome: str
    details: dict[str, Any] = field(default_factory=dict)


def _clean(details: Mapping[str, Any] | None) -> dict[str, Any]:
    """Details without empty values and without entries whose name looks secret (values redacted)."""
    out: dict[str, Any] = {}
    for k, v in (details or {}).items():
        if v is None or secret_name(str(k)):
            continue
        out[str(k)] = _clean(v) if isinstance(v, Mapping) else (redact(v) if isinstance(v, str) else v)
    return out


def record(
    engine: Engine | Connection,
    *,
    actor: str,
    action: str,
    target: str | None = None,
    role: str | None = None,
    outcome: str = "done",
    details: Mapping[str, Any] | None = None,
) -> int:
    """Append one entry (in the caller's transaction when given a connection); returns its id."""
    if not actor or not actor.strip():
        raise ValueError("an audit entry needs an actor")
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    sql = text(
        "INSERT INTO eval.audit_log(actor, role, action, target, outcome, details) "
        "VALUES (:actor, :role, :action, :target, :outcome, CAST(:details AS jsonb)) RETURNING id"
    )
    params = {"actor": actor, "role": role, "action": action, "target": target, "outcome": outcome,
              "details": json.dumps(_clean(details), ensure_ascii=False, default=str)}
    if isinstance(engine, Connection):
        return int(engine.execute(sql, params).scalar_one())
    with engine.begin() as conn:
        return int(conn.execute(sql, params).scalar_one())


def entries(
    engine: Engine,
    *,
    actor: str | None = None,
    action: str | None = None,
    outcome: str | None = None,
    limit: int = 1000,
) -> list[AuditEntry]:
    """The newest entries first, filtered by actor, action kind and outcome when given."""
    where: list[str] = []
    params: dict[str, Any] = {"limit": int(limit)}
    for name, value in (("actor", actor), ("action", action), ("outcome", outcome)):
        if value:
            where.append(f"{name} = :{name}")
            params[name] = value
    sql = ("SELECT id, at, actor, role, action, target, outcome, details FROM eval.audit_log"
           + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY at DESC, id DESC LIMIT :limit")
    with engine.connect() as conn:
        rows = conn.execute(text(sql), params).all()
    return [AuditEntry(**dict(r._mapping)) for r in rows]
