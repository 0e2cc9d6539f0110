"""Run registry: every run of every tier, its parameters, aggregates and per-item results.

A run is created ``running``; each finished item is written at once (``record_item``), keyed by
``(run_id, item_key)`` so a crash, a rerun or a resume never loses or duplicates an item; ``finish``
stores the aggregates. Nothing secret is stored: callers pass model *names*, never keys or URLs with
credentials (``params`` are scrubbed of keys that look secret).
"""

from __future__ import annotations

import getpass
import json
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval.config import PROJECT_ROOT

RUN_STATUSES = ("running", "done", "failed", "cancelled")
_SECRET_WORDS = ("key", "token", "secret", "password", "authorization")


def scrub(params: Mapping[str, Any]) -> dict[str, Any]:
    """Drop entries whose name looks secret (api_key, token, password...), recursively."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if any(w in k.lower() for w in _SECRET_WORDS):
            continue
        out[k] = scrub(v) if isinstance(v, Mapping) else v
    return out


def code_version() -> str | None:
    """``git describe`` of the working tree, with ``-dirty`` when modified; None outside git."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_default)


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return None if np.isnan(o) else float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, datetime):
        return o.isoformat()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


@dataclass
class Run:
    id: int
    tier: str
    status: str
    label: str | None = None
    dataset_id: int | None = None
    dataset_name: str | None = None
    dataset_hash: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    code_version: str | None = None
    created_by: str | None = None
    offline: bool = False
    n_items_total: int | None = None
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


_RUN_COLS = (
    "id, tier, status, label, dataset_id, dataset_name, dataset_hash, params, models, prompts, metrics, "
    "code_version, created_by, offline, n_items_total, error, started_at, finished_at"
)


def _row_to_run(row: Any) -> Run:
    return Run(**dict(row._mapping))


def create_run(
    engine: Engine,
    tier: str,
    *,
    params: Mapping[str, Any] | None = None,
    models: Mapping[str, Any] | None = None,
    prompts: Mapping[str, Any] | None = None,
    dataset_id: int | None = None,
    dataset_name: str | None = None,
    dataset_hash: str | None = None,
    n_items_total: int | None = None,
    offline: bool = False,
    label: str | None = None,
) -> Run:
    """Register a new ``running`` run and return it."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001
        user = None
    with engine.begin() as conn:
        row = conn.execute(
            text(
                "INSERT INTO eval.runs(tier, label, dataset_id, dataset_name, dataset_hash, params, models, "
                "prompts, code_version, created_by, offline, n_items_total) VALUES (:tier, :label, :did, "
                ":dname, :dhash, CAST(:params AS jsonb), CAST(:models AS jsonb), CAST(:prompts AS jsonb), "
                f":cv, :user, :offline, :n) RETURNING {_RUN_COLS}"
            ),
            {
                "tier": tier,
                "label": label,
                "did": dataset_id,
                "dname": dataset_name,
                "dhash": dataset_hash,
                "params": _json(scrub(params or {})),
                "models": _json(scrub(models or {})),
                "prompts": _json(dict(prompts or {})),
                "cv": code_version(),
                "user": user,
                "offline": offline,
                "n": n_items_total,
            },
        ).one()
    return _row_to_run(row)


def record_item(
    engine: Engine,
    run_id: int,
    item_key: str,
    result: Mapping[str, Any],
    *,
    status: str = "done",
    error: str | None = None,
) -> bool:
    """Write one finished item at once. Returns False if it was already recorded (no duplicates)."""
    with engine.begin() as conn:
        res = conn.execute(
            text(
                "INSERT INTO eval.run_items(run_id, item_key, status, result, error) "
                "VALUES (:r, :k, :s, CAST(:res AS jsonb), :e) ON CONFLICT (run_id, item_key) DO NOTHING"
            ),
            {"r": run_id, "k": str(item_key), "s": status, "res": _json(dict(result)), "e": error},
        )
        conn.execute(text("UPDATE eval.runs SET heartbeat_at = now() WHERE id = :r"), {"r": run_id})
    return res.rowcount == 1


def record_items(engine: Engine, run_id: int, items: Iterable[tuple[str, Mapping[str, Any], str, str | None]]) -> int:
    """Write many finished items in one transaction: ``(item_key, result, status, error)``; returns rows added."""
    rows = [
        {"r": run_id, "k": str(k), "s": s, "res": _json(dict(res)), "e": e} for k, res, s, e in items
    ]
    if not rows:
        return 0
    with engine.begin() as conn:
        res = conn.execute(
            text(
                "INSERT INTO eval.run_items(run_id, item_key, status, result, error) "
                "VALUES (:r, :k, :s, CAST(:res AS jsonb), :e) ON CONFLICT (run_id, item_key) DO NOTHING"
            ),
            rows,
        )
    return max(res.rowcount, 0)


def completed_keys(engine: Engine, run_id: int, *, include_failed: bool = False) -> set[str]:
    """Item keys already recorded for ``run_id`` (what a resume skips)."""
    cond = "" if include_failed else " AND status = 'done'"
    with engine.connect() as conn:
        return {r[0] for r in conn.execute(text(f"SELECT item_key FROM eval.run_items WHERE run_id = :r{cond}"), {"r": run_id})}


def forget_failed_items(engine: Engine, run_id: int) -> int:
    """Delete the failed items of a run so that a resume retries them; returns how many."""
    with engine.begin() as conn:
        return conn.execute(
            text("DELETE FROM eval.run_items WHERE run_id = :r AND status = 'failed'"), {"r": run_id}
        ).rowcount


def set_status(engine: Engine, run_id: int, status: str, *, error: str | None = None) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"unknown run status {status!r}")
    finished = status != "running"
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE eval.runs SET status = :s, error = :e, "
                "finished_at = CASE WHEN :f THEN now() ELSE NULL END WHERE id = :r"
            ),
            {"s": status, "e": error, "f": finished, "r": run_id},
        )


def finish_run(engine: Engine, run_id: int, metrics: Mapping[str, Any], *, status: str = "done") -> None:
    """Store the aggregates and close the run."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE eval.runs SET metrics = CAST(:m AS jsonb), status = :s, finished_at = now(), error = NULL "
                "WHERE id = :r"
            ),
            {"m": _json(dict(metrics)), "s": status, "r": run_id},
        )


def fail_run(engine: Engine, run_id: int, error: str) -> None:
    set_status(engine, run_id, "failed", error=error[:2000])


def get_run(engine: Engine, run_id: int) -> Run | None:
    with engine.connect() as conn:
        row = conn.execute(text(f"SELECT {_RUN_COLS} FROM eval.runs WHERE id = :r"), {"r": run_id}).one_or_none()
    return _row_to_run(row) if row else None


def list_runs(
    engine: Engine,
    *,
    tier: str | None = None,
    status: str | None = None,
    dataset_hash: str | None = None,
    limit: int = 500,
) -> list[Run]:
    """Runs, newest first, optionally filtered."""
    conds, args = [], {"lim": limit}
    if tier:
        conds.append("tier = :tier")
        args["tier"] = tier
    if status:
        conds.append("status = :status")
        args["status"] = status
    if dataset_hash:
        conds.append("dataset_hash = :dh")
        args["dh"] = dataset_hash
    where = ("WHERE " + " AND ".join(conds)) if conds else ""
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT {_RUN_COLS} FROM eval.runs {where} ORDER BY id DESC LIMIT :lim"), args)
        return [_row_to_run(r) for r in rows]


def latest_run(engine: Engine, tier: str, *, status: str = "done") -> Run | None:
    runs = list_runs(engine, tier=tier, status=status, limit=1)
    return runs[0] if runs else None


def run_items(engine: Engine, run_id: int) -> pd.DataFrame:
    """Per-item results of a run: ``item_key, status, error, created_at`` + the result's fields."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT item_key, status, error, created_at, result FROM eval.run_items "
                "WHERE run_id = :r ORDER BY created_at, item_key"
            ),
            {"r": run_id},
        ).all()
    base = pd.DataFrame([{"item_key": r[0], "status": r[1], "error": r[2], "created_at": r[3]} for r in rows])
    if not rows:
        return pd.DataFrame(columns=["item_key", "status", "error", "created_at"])
    detail = pd.json_normalize([r[4] for r in rows], max_level=0)
    detail = detail.drop(columns=[c for c in detail.columns if c in base.columns], errors="ignore")
    return pd.concat([base, detail], axis=1)


def count_items(engine: Engine, run_id: int) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT status, count(*) FROM eval.run_items WHERE run_id = :r GROUP BY status"), {"r": run_id}
        ).all()
    out = {"done": 0, "failed": 0}
    out.update({r[0]: int(r[1]) for r in rows})
    return out
