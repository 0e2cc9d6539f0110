"""Named bot profiles in ``eval.bot_profiles``: one :class:`BotApiSpec` per bot, saved from the page or the CLI.

A profile holds the request shape (timeout, rate limit, retries and their backoff included) and header
*templates* only: a credential-like header must reference a ``${VARIABLE}``
(:func:`voproshalych_eval.bot_api.spec.check_header`), so no secret can be saved. With it goes how the judge
gets its context when this bot returns only a page URL (:class:`JudgeContext`: ``context_from``, ``context_k``),
stored beside the spec in the same JSON object under ``judge_context``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval.bot_api.spec import BotApiSpec

#: how the judge's context is rebuilt from a page URL (``voproshalych_eval.tiers.page_context.MODES``)
CONTEXT_MODES = ("page", "nearest", "none")
_CONTEXT_KEY = "judge_context"


@dataclass(frozen=True)
class JudgeContext:
    """The judge's context when the bot returns only a page URL: all chunks of the page (``page``), the
    ``context_k`` chunks nearest to the question (``nearest``), or none."""

    context_from: str = "page"
    context_k: int = 3

    def validate(self) -> JudgeContext:
        if self.context_from not in CONTEXT_MODES:
            raise ValueError(f"context_from must be one of {', '.join(CONTEXT_MODES)}, got {self.context_from!r}")
        if int(self.context_k) < 1:
            raise ValueError(f"context_k must be at least 1, got {self.context_k!r}")
        return self

    @classmethod
    def from_dict(cls, d: Any) -> JudgeContext:
        if not d:
            return cls()
        if not isinstance(d, dict):
            raise ValueError(f"judge_context must be an object, got {d!r}")
        return cls(context_from=str(d.get("context_from") or "page"), context_k=int(d.get("context_k") or 3)).validate()


@dataclass(frozen=True)
class BotProfile:
    name: str
    spec: BotApiSpec
    note: str | None
    updated_at: datetime | None
    judge_context: JudgeContext = JudgeContext()


def _name(name: str) -> str:
    n = (name or "").strip()
    if not n:
        raise ValueError("a bot profile needs a name")
    return n


def save_profile(engine: Engine, name: str, spec: BotApiSpec, *, note: str | None = None,
                 judge_context: JudgeContext | None = None) -> BotProfile:
    """Create or replace the profile ``name`` (the spec and the judge's context are validated first; nothing
    half-written)."""
    spec.validate()
    ctx = (judge_context or JudgeContext()).validate()
    n = _name(name)
    stored = {**spec.to_dict(), _CONTEXT_KEY: {"context_from": ctx.context_from, "context_k": int(ctx.context_k)}}
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO eval.bot_profiles(name, spec, note) VALUES (:n, CAST(:s AS jsonb), :note) "
                "ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, note = EXCLUDED.note, updated_at = now()"
            ),
            {"n": n, "s": json.dumps(stored, ensure_ascii=False), "note": note},
        )
    prof = get_profile(engine, n)
    assert prof is not None
    return prof


def _row(r: Any) -> BotProfile:
    stored = dict(r.spec)
    try:
        ctx = JudgeContext.from_dict(stored.pop(_CONTEXT_KEY, None))  # profiles saved before it have none
        spec = BotApiSpec.from_dict(stored)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bot profile {r.name!r} is malformed: {exc}") from None
    return BotProfile(name=r.name, spec=spec, note=r.note, updated_at=r.updated_at, judge_context=ctx)


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
