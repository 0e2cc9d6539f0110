"""Named bot profiles in ``eval.bot_profiles``: one :class:`BotApiSpec` per bot, saved from the page or the CLI.

A profile holds the request shape and header *templates* only: a credential-like header must reference a
``${VARIABLE}`` (:func:`voproshalych_eval.bot_api.spec.check_header`), so no secret can be saved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval.bot_api.spec import BotApiSpec


@dataclass(frozen=True)
class BotProfile:
    name: str
    spec: BotApiSpec
    note: str | None
    updated_at: datetime | None


def _name(name: str) -> str:
    n = (name or "").strip()
    if not n:
        raise ValueError("a bot profile needs a name")
    return n


def save_profile(engine: Engine, name: str, spec: BotApiSpec, *, note: str | None = None) -> BotProfile:
    """Create or replace the profile ``name`` (the spec is validated first; nothing half-written)."""
    spec.validate()
    n = _name(name)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO eval.bot_profiles(name, spec, note) VALUES (:n, CAST(:s AS jsonb), :note) "
                "ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, note = EXCLUDED.note, updated_at = now()"
            ),
            {"n": n, "s": json.dumps(spec.to_dict(), ensure_ascii=False), "note": note},
        )
    prof = get_profile(engine, n)
    assert prof is not None
    return prof


def _row(r: Any) -> BotProfile:
    try:
        spec = BotApiSpec.from_dict(r.spec)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bot profile {r.name!r} is malformed: {exc}") from None
    return BotProfile(name=r.name, spec=spec, note=r.note, updated_at=r.updated_at)


def get_profile(engine: Engine, name: str) -> BotProfile | None:
    with engine.connect() as conn:
        r = conn.execute(
            text("SELECT name, spec, note, updated_at FROM eval.bot_profiles WHERE name = :n"), {"n": _name(name)}
        ).one_or_none()
    return _row(r) if r is not None else None


def require_profile(engine: Engine, name: str) -> BotProfile:
    prof = get_profile(engine, name)
    if prof is None:
        known = [p.name for p in list_profiles(engine)]
        raise ValueError(f"no bot profile named {name!r}" + (f"; saved: {', '.join(known)}" if known else "; none saved yet"))
    return prof


def list_profiles(engine: Engine) -> list[BotProfile]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT name, spec, note, updated_at FROM eval.bot_profiles ORDER BY name")).all()
    return [_row(r) for r in rows]


def delete_profile(engine: Engine, name: str) -> bool:
    with engine.begin() as conn:
        return conn.execute(text("DELETE FROM eval.bot_profiles WHERE name = :n"), {"n": _name(name)}).rowcount == 1
