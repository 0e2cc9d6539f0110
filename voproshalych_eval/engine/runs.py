"""Run registry: every run of every plan, its configuration, aggregates and per-item results.

This module owns every statement on ``eval.runs`` and ``eval.run_items``. A run is created ``running``
with the configuration it starts with frozen (``config``: models, prompts, provider endpoints, dataset
id + content hash, knowledge-base snapshot, parameters); each finished item is written at once
(:func:`record_item`), keyed by ``(run_id, item_key)`` so a crash, a rerun or a resume never loses or
duplicates an item; :func:`finish_run` stores the aggregates and the outcome (:func:`outcome`).

One process executes a run at a time: :func:`execution_lock` holds a PostgreSQL advisory lock per run
for as long as it executes. One staleness rule (:func:`run_state`): a ``running`` run is *interrupted*
when no job of this process runs it (the ``alive`` check passed in) and its heartbeat is older than
:data:`STALE_AFTER_SECONDS`. Nothing secret is stored: callers pass model *names* and base-URL *hosts*,
never keys (``params`` are scrubbed of keys that look secret).
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import math
import os
import socket
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval import parameters
from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.datasets.store import item_payloads
from voproshalych_eval.db import audit
from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.jsonable import dumps, jsonable
from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.statistics import (
    ALPHA,
    adjust_pvalues,
    paired_bootstrap_test,
    paired_effect_size,
    paired_permutation_test,
)
from voproshalych_eval.plans import PLANS
from voproshalych_eval.redaction import redact, redact_obj, secret_name

RUN_STATUSES = ("running", "done", "done_with_failures", "failed", "cancelled")
#: finished with aggregates (``done_with_failures``: more failed items than the allowed share)
FINISHED = ("done", "done_with_failures")
#: states shown to users: the stored statuses plus ``interrupted`` (running, but its process died)
RUN_STATES = ("running", "interrupted", "done", "done_with_failures", "failed", "cancelled")
#: a run's state in words (ru, en): the one table for the app, the reports and the CLI
STATE_LABELS: dict[str, tuple[str, str]] = {
    "queued": ("в очереди — ждёт обработчика", "queued — waiting for a worker"),
    "running": ("выполняется", "running"),
    "interrupted": ("прерван — можно продолжить", "interrupted — resume"),
    "done": ("готов", "done"),
    "done_with_failures": ("готов со сбоями", "done with failures"),
    "failed": ("ошибка", "failed"),
    "cancelled": ("отменён", "cancelled"),
}
#: an executing run touches its heartbeat this often
HEARTBEAT_SECONDS = 5.0
#: a ``running`` run whose heartbeat is older than this (and that no job of this process runs) is interrupted
STALE_AFTER_SECONDS = 30.0
#: advisory-lock namespace of run executions (``pg_try_advisory_lock(namespace, run_id)``)
_LOCK_NAMESPACE = 0x7275  # "ru"

AliveCheck = Callable[[int], bool]


def scrub(params: Mapping[str, Any]) -> dict[str, Any]:
    """Drop entries whose name looks secret (api_key, token, password...), recursively."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if secret_name(str(k)):
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
    """JSON for the store; every string redacted of secrets (configured keys, URL credentials, auth headers)."""
    return dumps(redact_obj(jsonable(value)))


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
    heartbeat_at: datetime | None = None
    config: dict[str, Any] = field(default_factory=dict)
    snapshot_id: int | None = None
    mixed: bool = False
    mixed_reason: str | None = None
    pid: int | None = None
    host: str | None = None
    schedule: str | None = None  # the schedule that started it (``eval.schedules``), if any
    #: who started the run: the signed-in user in team mode, else the OS user (``created_by`` is the process's)
    actor: str | None = None

    def state(self, *, alive: AliveCheck | None = None, now: datetime | None = None) -> str:
        """The stored status, except ``interrupted`` for a ``running`` run whose process died."""
        return run_state(self, alive=alive, now=now)


_RUN_COLS = (
    "id, tier, status, label, dataset_id, dataset_name, dataset_hash, params, models, prompts, metrics, "
    "code_version, created_by, offline, n_items_total, error, started_at, finished_at, heartbeat_at, "
    "config, snapshot_id, mixed, mixed_reason, pid, host, schedule, actor"
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
    config: Mapping[str, Any] | None = None,
    snapshot_id: int | None = None,
    schedule: str | None = None,
    actor: str | None = None,
    actor_role: str | None = None,
) -> Run:
    """Register a new ``running`` run with its frozen ``config`` and return it.

    ``actor`` is who started it (the signed-in user in team mode; default: the OS user, or ``local``); the
    start is also written to the audit log (``eval.audit_log``) in the same transaction."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001
        user = None
    actor = actor or user or "local"
    with engine.begin() as conn:
        row = conn.execute(
            text(
                "INSERT INTO eval.runs(tier, label, dataset_id, dataset_name, dataset_hash, params, models, "
                "prompts, code_version, created_by, offline, n_items_total, config, snapshot_id, schedule, actor) "
                "VALUES (:tier, :label, :did, :dname, :dhash, CAST(:params AS jsonb), CAST(:models AS jsonb), "
                f"CAST(:prompts AS jsonb), :cv, :user, :offline, :n, CAST(:config AS jsonb), :snap, :sched, :actor) "
                f"RETURNING {_RUN_COLS}"
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
                "config": _json(scrub(config or {})),
                "snap": snapshot_id,
                "sched": schedule,
                "actor": actor,
            },
        ).one()
        audit.record(conn, actor=actor, role=actor_role, action="run", target=f"run #{row.id}",
                     details={"tier": tier, "label": label, "dataset": dataset_name, "offline": offline})
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
    return bool(record_items(engine, run_id, [(item_key, result, status, error)]))


def record_items(
    engine: Engine, run_id: int, items: Iterable[tuple[str, Mapping[str, Any], str, str | None]]
) -> set[str]:
    """Write finished items in one statement: ``(item_key, result, status, error)``; returns the keys added
    (an item already recorded is kept as it was: no duplicates). Results and errors are redacted of secrets."""
    rows = [{"k": str(k), "s": s, "res": jsonable(dict(res)), "e": redact(e)} for k, res, s, e in items]
    if not rows:
        return set()
    with engine.begin() as conn:
        added = conn.execute(
            text(
                "INSERT INTO eval.run_items(run_id, item_key, status, result, error) "
                "SELECT :r, x.k, x.s, x.res, x.e FROM jsonb_to_recordset(CAST(:rows AS jsonb)) "
                "AS x(k text, s text, res jsonb, e text) ON CONFLICT (run_id, item_key) DO NOTHING RETURNING item_key"
            ),
            {"r": run_id, "rows": _json(rows)},
        ).all()
        conn.execute(text("UPDATE eval.runs SET heartbeat_at = now() WHERE id = :r"), {"r": run_id})
    return {r[0] for r in added}


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


def heartbeat(engine: Engine, run_id: int) -> None:
    """Touch the run's heartbeat (the executing process is alive)."""
    with engine.begin() as conn:
        conn.execute(text("UPDATE eval.runs SET heartbeat_at = now() WHERE id = :r"), {"r": run_id})


def mark_running(engine: Engine, run_id: int) -> None:
    """The run (new or resumed) executes now, in this process."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE eval.runs SET status = 'running', error = NULL, finished_at = NULL, heartbeat_at = now(), "
                "pid = :pid, host = :host WHERE id = :r"
            ),
            {"r": run_id, "pid": os.getpid(), "host": socket.gethostname()},
        )


def mark_mixed(engine: Engine, run_id: int, reason: str) -> None:
    """A forced resume crossed a configuration change: the run's results mix settings (shown everywhere)."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE eval.runs SET mixed = true, mixed_reason = concat_ws('; ', mixed_reason, CAST(:why AS text)) "
                "WHERE id = :r"
            ),
            {"r": run_id, "why": redact(reason[:2000])},
        )


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
            {"s": status, "e": redact(error), "f": finished, "r": run_id},
        )


def outcome(counts: Mapping[str, int], *, cancelled: bool = False, max_failure_share: float = 0.0) -> str:
    """The status of a run that stopped executing, from its item counts.

    ``cancelled`` when cancelled; ``failed`` when items were recorded and every one failed;
    ``done_with_failures`` when the failed share exceeds ``max_failure_share``; else ``done``.
    """
    done, failed = int(counts.get("done", 0)), int(counts.get("failed", 0))
    if cancelled:
        return "cancelled"
    if failed and not done:
        return "failed"
    if failed and failed / (done + failed) > max_failure_share:
        return "done_with_failures"
    return "done"


def too_few_judged(metrics: Mapping[str, Any], min_share: float) -> str | None:
    """Why a judged run must end ``failed``, or ``None``: its ``judged_share`` (items with a usable judgement /
    items that could be judged) is 0, or below ``min_share``. A run without the key, or with nothing to judge
    (``value`` None), is not checked."""
    js = metrics.get("judged_share")
    if not isinstance(js, Mapping) or js.get("value") is None or not js.get("n"):
        return None
    share, n, k = float(js["value"]), int(js["n"]), int(js.get("n_judged") or 0)
    if k == 0 or share < min_share:
        return (f"only {k} of {n} items got a usable judgement ({share:.0%}; the minimum is {min_share:.0%}, "
                f"VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE)")
    return None


def finish_run(engine: Engine, run_id: int, metrics: Mapping[str, Any], *, status: str = "done",
               error: str | None = None) -> None:
    """Store the aggregates and close the run with ``status``."""
    if status not in RUN_STATUSES or status == "running":
        raise ValueError(f"a finished run cannot be {status!r}")
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE eval.runs SET metrics = CAST(:m AS jsonb), status = :s, finished_at = now(), error = :e "
                "WHERE id = :r"
            ),
            {"m": _json(dict(metrics)), "s": status, "r": run_id, "e": redact(error)},
        )


def fail_run(engine: Engine, run_id: int, error: str) -> None:
    set_status(engine, run_id, "failed", error=error[:2000])


@contextmanager
def execution_lock(engine: Engine, run_id: int) -> Iterator[None]:
    """Hold the run's advisory lock while it executes; :class:`AlreadyRunning` if another session holds it.

    The lock lives on a dedicated connection: it is released when the block ends, or by PostgreSQL
    when the process dies (``kill -9`` closes the connection).
    """
    conn = engine.connect()
    try:
        # the lock's session names its process, so that a second caller is told who holds it (never a stale pid)
        conn.execute(text("SELECT set_config('application_name', :n, false)"),
                     {"n": _holder_name(os.getpid(), socket.gethostname())})
        got = conn.execute(text("SELECT pg_try_advisory_lock(:ns, :r)"), {"ns": _LOCK_NAMESPACE, "r": run_id}).scalar()
        conn.commit()
        if not got:
            raise AlreadyRunning(f"Run {run_id} is already running ({lock_holder(engine, run_id)}); "
                                 "wait for it or cancel it.")
        # the holder names itself at once (what a second caller is told)
        conn.execute(text("UPDATE eval.runs SET pid = :pid, host = :host WHERE id = :r"),
                     {"r": run_id, "pid": os.getpid(), "host": socket.gethostname()})
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:ns, :r)"), {"ns": _LOCK_NAMESPACE, "r": run_id})
            conn.commit()
    finally:
        with contextlib.suppress(Exception):  # a pooled connection keeps no holder's name
            conn.rollback()
            conn.execute(text("SELECT set_config('application_name', '', false)"))
            conn.commit()
        conn.close()


_HOLDER_PREFIX = "voproshalych-eval "


def _holder_name(pid: int, host: str) -> str:
    return f"{_HOLDER_PREFIX}pid {pid} on {host}"[:63]


def lock_holder(engine: Engine, run_id: int) -> str:
    """Who holds the run's execution lock *now*: ``pid P on HOST`` as the holding session names itself (see
    :func:`execution_lock`), ``another process`` when it does not (or nobody holds it any more). Never the pid
    stored with the run, which may be a process that died since."""
    with engine.connect() as conn:
        name = conn.execute(
            text("SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                 "WHERE l.locktype = 'advisory' AND l.classid = :ns AND l.objid = :r AND l.objsubid = 2 AND l.granted"),
            {"ns": _LOCK_NAMESPACE, "r": run_id},
        ).scalar()
    if name and name.startswith(_HOLDER_PREFIX):
        return name[len(_HOLDER_PREFIX):]
    return "another process"


def is_locked(engine: Engine, run_id: int) -> bool:
    """Whether some session holds the run's execution lock (it is executing somewhere)."""
    with engine.connect() as conn:
        return bool(conn.execute(
            text("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = :ns "
                 "AND objid = :r AND objsubid = 2 AND granted)"),
            {"ns": _LOCK_NAMESPACE, "r": run_id},
        ).scalar())


def last_item_error(engine: Engine, run_id: int) -> str | None:
    """The error of the run's most recently recorded failed item."""
    with engine.connect() as conn:
        return conn.execute(text("SELECT error FROM eval.run_items WHERE run_id = :r AND status = 'failed' "
                                 "ORDER BY created_at DESC LIMIT 1"), {"r": run_id}).scalar()


def schedule_runs(engine: Engine, schedule: str, limit: int = 20) -> list[dict[str, Any]]:
    """The runs a schedule started, newest first: id, tier, status, started_at, finished_at."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT id, tier, status, started_at, finished_at FROM eval.runs WHERE schedule = :n "
            "ORDER BY id DESC LIMIT :l"), {"n": schedule, "l": limit}).all()
    return [dict(r._mapping) for r in rows]


#: the queue's task executing a batch of a run's items (:mod:`voproshalych_eval.queue`)
BATCH_TASK = "voproshalych_eval.run_batch"


def queue_jobs(engine: Engine, run_id: int) -> dict[str, int]:
    """The run's batch jobs on the queue by status (``todo``, ``doing``, ``succeeded``, ``failed`` …)."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT status::text, count(*) FROM public.procrastinate_jobs WHERE task_name = :t "
            "AND (args->>'run_id')::int = :r GROUP BY status"), {"t": BATCH_TASK, "r": run_id}).all()
    return {r[0]: int(r[1]) for r in rows}


def queue_alive(engine: Engine, run_id: int) -> bool:
    """Whether the run has batch jobs waiting for a worker or being worked (the queue's liveness check)."""
    jobs = queue_jobs(engine, run_id)
    return bool(jobs.get("todo") or jobs.get("doing"))


class AlreadyRunning(VoproshalychEvalError, RuntimeError):
    """Another process (or job) executes the run right now."""


def get_run(engine: Engine, run_id: int) -> Run | None:
    with engine.connect() as conn:
        row = conn.execute(text(f"SELECT {_RUN_COLS} FROM eval.runs WHERE id = :r"), {"r": run_id}).one_or_none()
    return _row_to_run(row) if row else None


def list_runs(
    engine: Engine,
    *,
    tier: str | Sequence[str] | None = None,
    status: str | Sequence[str] | None = None,
    dataset_hash: str | None = None,
    limit: int = 500,
    dataset_name: str | Sequence[str] | None = None,
    model: str | None = None,
    since: datetime | date | None = None,
    until: datetime | date | None = None,
    alive: AliveCheck | None = None,
) -> list[Run]:
    """Runs, newest first, optionally filtered.

    ``tier``, ``status`` and ``dataset_name`` take one value or several. ``status`` may include
    ``interrupted`` (see :func:`run_state`); ``running`` then means running with a live process.
    ``model`` matches any model name of the run (case-insensitive substring). ``since``/``until`` bound
    ``started_at`` (a date ``until`` includes that whole day).
    """
    conds: list[str] = []
    args: dict[str, Any] = {"lim": limit}
    wanted: list[str] = []
    if tier:
        conds.append("tier = ANY(:tier)")
        args["tier"] = [tier] if isinstance(tier, str) else list(tier)
    if status:
        wanted = [status] if isinstance(status, str) else list(status)
        parts = []
        stored = [s for s in wanted if s in RUN_STATUSES and s != "running"]
        if stored:
            parts.append("status = ANY(:stored)")
            args["stored"] = stored
        if "running" in wanted or "interrupted" in wanted:
            parts.append("status = 'running'")
        conds.append("(" + (" OR ".join(parts) or "false") + ")")
    if dataset_hash:
        conds.append("dataset_hash = :dh")
        args["dh"] = dataset_hash
    if dataset_name:
        conds.append("dataset_name = ANY(:dn)")
        args["dn"] = [dataset_name] if isinstance(dataset_name, str) else list(dataset_name)
    if model:
        conds.append("models::text ILIKE :model")
        args["model"] = f"%{model}%"
    if since is not None:
        conds.append("started_at >= :since")
        args["since"] = since
    if until is not None:
        if isinstance(until, date) and not isinstance(until, datetime):
            until = datetime.combine(until + timedelta(days=1), time.min)
            conds.append("started_at < :until")
        else:
            conds.append("started_at <= :until")
        args["until"] = until
    where = ("WHERE " + " AND ".join(conds)) if conds else ""
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT {_RUN_COLS} FROM eval.runs {where} ORDER BY id DESC LIMIT :lim"), args)
        found = [_row_to_run(r) for r in rows]
    if wanted and ("running" in wanted) != ("interrupted" in wanted):
        now = datetime.now(UTC)
        keep = set(wanted)
        found = [r for r in found if r.status != "running" or run_state(r, alive=alive, now=now) in keep]
    return found


def latest_run(engine: Engine, tier: str, *, status: str | Sequence[str] = "done") -> Run | None:
    runs = list_runs(engine, tier=tier, status=status, limit=1)
    return runs[0] if runs else None


def item_records(engine: Engine, run_id: int) -> list[dict[str, Any]]:
    """The one reader of a run's items: ``{"item_key", "status", "error", "created_at", "result"}`` each,
    ordered by key (what ``finalize`` aggregates, what tables and comparisons are built from)."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT item_key, status, error, created_at, result FROM eval.run_items WHERE run_id = :r "
                 "ORDER BY item_key"),
            {"r": run_id},
        ).all()
    return [{"item_key": r[0], "status": r[1], "error": r[2], "created_at": r[3], "result": r[4] or {}} for r in rows]


def run_items(engine: Engine, run_id: int) -> pd.DataFrame:
    """Per-item results of a run: ``item_key, status, error, created_at`` + the result's top-level fields,
    in the order the items finished."""
    recs = sorted(item_records(engine, run_id), key=lambda r: (r["created_at"], r["item_key"]))
    if not recs:
        return pd.DataFrame(columns=["item_key", "status", "error", "created_at"])
    base = pd.DataFrame([{k: r[k] for k in ("item_key", "status", "error", "created_at")} for r in recs])
    detail = pd.json_normalize([r["result"] for r in recs], max_level=0)
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


def count_runs_reading_snapshot(engine: Engine, snapshot_id: int) -> int:
    """How many recorded runs read knowledge-base snapshot ``snapshot_id`` (``snapshot_id`` or, in runs made
    before that column, ``params.snapshot.id``). ``db.snapshots.delete`` takes this count from its caller."""
    sql = text("SELECT count(*) FROM eval.runs WHERE snapshot_id = :i "
               "OR (params -> 'snapshot' ->> 'id') = CAST(:i AS text)")
    with engine.connect() as conn:
        return int(conn.execute(sql, {"i": int(snapshot_id)}).scalar() or 0)


# ------------------------------------------------------------------------------------- stale runs


def run_state(run: Run, *, alive: AliveCheck | None = None, now: datetime | None = None) -> str:
    """The one staleness rule: the stored status, except for a ``running`` run that no job of this
    process executes (``alive(run.id)`` false or not given) and whose heartbeat is older than
    :data:`STALE_AFTER_SECONDS` — its process died: ``interrupted`` (resume it)."""
    if run.status != "running":
        return run.status
    if alive is not None and alive(run.id):
        return "running"
    beat = run.heartbeat_at or run.started_at
    if beat is None:
        return "running"
    now = now or datetime.now(UTC)
    if beat.tzinfo is None:
        beat = beat.replace(tzinfo=UTC)
    return "interrupted" if (now - beat).total_seconds() > STALE_AFTER_SECONDS else "running"


def stale_runs(engine: Engine, *, alive: AliveCheck | None = None) -> list[Run]:
    """Runs stored as ``running`` whose process died (see :func:`run_state`)."""
    return list_runs(engine, status="interrupted", alive=alive, limit=10_000)


# ------------------------------------------------------------------------------------- metrics


_AGG_KEYS = ("value", "n", "n_failed", "n_partial", "n_not_applicable", "ci_low", "ci_high")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def flatten_metrics(metrics: Mapping[str, Any], *, prefix: str = "", max_depth: int = 3) -> dict[str, dict[str, Any]]:
    """A run's stored aggregates as ``{key: {"value", "n", "n_failed", "ci_low", "ci_high"}}``.

    Plain numbers become ``{"value": x}``; ``Aggregate`` dicts are kept; a block without ``value``
    (Tier 1's ``{"chunk": {...}, "url": {...}}``, a per-group breakdown) is flattened with dotted keys
    (``chunk.mrr``). Strings, booleans, lists and ``None`` are not metrics and are skipped.
    """
    out: dict[str, dict[str, Any]] = {}
    for key, v in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(v, Mapping):
            if "value" in v:
                if _is_number(v.get("value")) or v.get("value") is None:
                    out[name] = {k: v.get(k) for k in _AGG_KEYS}
            elif max_depth > 1:
                out.update(flatten_metrics(v, prefix=f"{name}.", max_depth=max_depth - 1))
        elif _is_number(v):
            out[name] = dict.fromkeys(_AGG_KEYS) | {"value": float(v)}
    return out


def best_by(run_list: Sequence[Run], key: str) -> Run | None:
    """The run of ``run_list`` with the best stored value of metric ``key`` (dotted for blocks: ``chunk.mrr``),
    better meaning the catalog's direction (``higher`` / ``lower``); runs without a number for ``key`` never
    win, ties go to the newest run. None when no run has a value or the catalog gives the key no direction.

    Read from each run's stored aggregates (:func:`flatten_metrics`), never from a chart's frame: a missing or
    NaN value there once made the oldest run "best by MRR" (0.689) beside a run scoring 0.897."""
    sign = {"higher": 1.0, "lower": -1.0}.get(catalog.direction(key))
    if sign is None:
        return None
    scored = [(v, r) for r in run_list
              if _is_number(v := flatten_metrics(r.metrics or {}).get(key, {}).get("value"))]
    if not scored:
        return None
    return max(scored, key=lambda vr: (sign * float(vr[0]), vr[1].id))[1]


def metrics_frame(run: Run, baselines: list[Any] | None = None) -> pd.DataFrame:
    """One row per aggregate of ``run``: value, n, failures, CI and — with ``baselines`` — its baseline
    (value, scale, direction, margin) and status."""
    rows = []
    for key, agg in flatten_metrics(run.metrics or {}).items():
        row: dict[str, Any] = {"metric": key, **agg}
        if baselines is not None:
            b = bl.find_baseline(baselines, run.tier, key)
            scale = catalog.scale_of(key)
            row.update({
                "baseline": b.value if b else None,
                "scale": scale.key if scale else None,
                "direction": catalog.direction(key),
                # a run made by offline substitutes is never compared to a baseline (no status on any row)
                "status": None if run.offline else bl.classify(agg.get("value"), b),
            })
        rows.append(row)
    cols = ["metric", *_AGG_KEYS] + (["baseline", "scale", "direction", "status"] if baselines is not None else [])
    return pd.DataFrame(rows, columns=cols)


def metric_history(
    engine: Engine,
    tier: str,
    metric: str,
    *,
    dataset_name: str | None = None,
    limit: int = 200,
) -> pd.DataFrame:
    """``run_id, started_at, value, ci_low, ci_high, n, dataset_name, models, config, label`` of the finished
    runs of ``tier`` that have ``metric``, oldest first. ``config`` (:func:`config_label`) names the run's
    configuration; a history chart draws one line per configuration, never joining two."""
    rows = []
    for run in list_runs(engine, tier=tier, status="done", dataset_name=dataset_name, limit=limit):
        agg = flatten_metrics(run.metrics or {}).get(metric)
        if agg is None or agg.get("value") is None:
            continue
        rows.append({
            "run_id": run.id, "started_at": run.started_at, "value": agg["value"], "ci_low": agg.get("ci_low"),
            "ci_high": agg.get("ci_high"), "n": agg.get("n"), "dataset_name": run.dataset_name,
            "models": models_label(run), "config": config_label(run), "label": run.label,
        })
    cols = ["run_id", "started_at", "value", "ci_low", "ci_high", "n", "dataset_name", "models", "config", "label"]
    return pd.DataFrame(rows, columns=cols).sort_values("run_id").reset_index(drop=True)


#: run parameters that make a different configuration (beside the models, the dataset and the offline flag;
#: role ``config`` in the plans' parameter tables): history lines never join runs that differ in one of them
CONFIG_PARAMS = parameters.union((p.params for p in PLANS), parameters.config_names)
_SHORT_VALUE = 40


def _config_value(key: str, value: Any) -> str:
    """A parameter's value for :func:`config_label`: as it is when short, else a short content hash (a
    system prompt, a rubric table); the bot endpoint's URL stays readable beside the hash of its spec."""
    if isinstance(value, list | tuple) and all(isinstance(v, int | float | str) for v in value):
        value = "+".join(str(v) for v in value)
    if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= _SHORT_VALUE):
        return str(value)
    digest = "#" + hashlib.sha256(dumps(value, sort_keys=True).encode("utf-8")).hexdigest()[:8]
    if key == "api" and isinstance(value, Mapping) and value.get("url"):
        return f"{value['url']} {digest}"
    return digest


def config_label(run: Run) -> str:
    """The run's configuration on one line: dataset, models, the configuring parameters (:data:`CONFIG_PARAMS`;
    long values as a short hash), offline."""
    p = run.params or {}
    parts = [f"dataset={run.dataset_name}"] if run.dataset_name else []
    if run.models:
        parts.append(models_label(run))
    parts += [f"{k}={_config_value(k, p[k])}" for k in CONFIG_PARAMS if p.get(k) not in (None, {}, [])]
    if run.offline:
        parts.append("offline")
    return ", ".join(parts) or "—"


def models_label(run: Run) -> str:
    """The run's model names on one line (``embedder=e5-small, generator=…``)."""
    parts = []
    for k, v in (run.models or {}).items():
        if isinstance(v, list | tuple):
            v = "+".join(str(x) for x in v)
        elif isinstance(v, Mapping):
            v = ",".join(f"{a}:{b}" for a, b in v.items())
        parts.append(f"{k}={v}")
    return ", ".join(parts)


def run_cost(metrics: Mapping[str, Any]) -> tuple[float | None, int | None]:
    """``(USD, tokens)`` of a run's metered LLM calls (``cost_usd.total``): USD None when a price or the usage
    is unknown (never 0), tokens None when the run made no metered call."""
    block = metrics.get("cost_usd")
    total = (block.get("total") or {}) if isinstance(block, Mapping) else {}
    tokens = int(total.get("prompt_tokens") or 0) + int(total.get("completion_tokens") or 0) if total else None
    return total.get("value"), tokens


def run_latency(flat: Mapping[str, Mapping[str, Any]], q: int) -> float | None:
    """The run's own latency percentile ``q`` (``latency_p{q}``, else ``generation_latency_p{q}``) from its
    :func:`flatten_metrics`, in seconds; None when the plan does not measure it."""
    for key in (f"latency_p{q}", f"generation_latency_p{q}"):
        agg = flat.get(key)
        if agg is not None and agg.get("value") is not None:
            return float(agg["value"])
    return None


def runs_frame(runs: Sequence[Run], *, alive: AliveCheck | None = None) -> pd.DataFrame:
    """A table of runs for display/export: id, tier, state, label, dataset, models, times, counts, and what the
    run cost — USD and tokens (:func:`run_cost`) and latency p50/p95 where the run measures it (:func:`run_latency`)."""
    now = datetime.now(UTC)
    rows = []
    for r in runs:
        duration = None
        if r.started_at and r.finished_at:
            duration = round((r.finished_at - r.started_at).total_seconds(), 1)
        cost, tokens = run_cost(r.metrics or {})
        flat = flatten_metrics(r.metrics or {})
        rows.append({
            "id": r.id, "tier": r.tier, "status": run_state(r, alive=alive, now=now),
            "label": r.label, "dataset_name": r.dataset_name,
            "dataset_hash": (r.dataset_hash or "")[:12] or None, "models": models_label(r),
            "started_at": r.started_at, "duration_s": duration, "n_items_total": r.n_items_total,
            "cost_usd": cost, "tokens": tokens, "latency_p50": run_latency(flat, 50), "latency_p95": run_latency(flat, 95),
            "offline": r.offline, "code_version": r.code_version, "created_by": r.created_by, "actor": r.actor,
        })
    cols = ["id", "tier", "status", "label", "dataset_name", "dataset_hash", "models", "started_at", "duration_s",
            "n_items_total", "cost_usd", "tokens", "latency_p50", "latency_p95", "offline", "code_version", "created_by",
            "actor"]
    frame = pd.DataFrame(rows, columns=cols)
    frame["tokens"] = frame["tokens"].astype("Int64")  # a count, empty where unknown (never 1000.0)
    return frame


# ------------------------------------------------------------------------------------- per-item results


#: result fields shown as the item's text in comparisons (first found)
TEXT_FIELDS = ("question", "query", "question_text", "text", "input", "dialog", "title")
#: result fields holding the system's output, shown side by side in comparisons
OUTPUT_FIELDS = ("answer", "response", "generated_answer", "verdict")
_ID_SUFFIXES = ("_id", "_ids", "index", "_idx", "seed")


def item_table(engine: Engine, run_id: int) -> pd.DataFrame:
    """Per-item results fully flattened (``chunk.mrr``), indexed by ``item_key``, with ``status``/``error``."""
    raw = item_records(engine, run_id)
    if not raw:
        return pd.DataFrame(columns=["status", "error"], index=pd.Index([], name="item_key"))
    detail = pd.json_normalize([r["result"] for r in raw], sep=".")
    detail = detail.drop(columns=[c for c in ("status", "error", "item_key") if c in detail.columns])
    base = pd.DataFrame({"status": [r["status"] for r in raw], "error": [r["error"] for r in raw]})
    out = pd.concat([base, detail], axis=1)
    out.index = pd.Index([r["item_key"] for r in raw], name="item_key")
    return out


def numeric_item_fields(items: pd.DataFrame) -> list[str]:
    """Columns of an :func:`item_table` that are per-item metrics: numbers or booleans (as 0/1),
    excluding identifiers (``*_id``, ``*index``)."""
    out = []
    for col in items.columns:
        if col in ("status", "error") or any(col.lower().endswith(s) for s in _ID_SUFFIXES) or col.lower() == "id":
            continue
        series = items[col].dropna()
        if series.empty:
            continue
        if all(isinstance(v, int | float) and not (isinstance(v, float) and pd.isna(v)) for v in series):
            out.append(col)
    return out


def _numeric(items: pd.DataFrame, col: str) -> pd.Series:
    """A metric column as floats, ``NaN`` for failed items and missing values."""
    s = pd.to_numeric(items[col].map(lambda v: float(v) if isinstance(v, int | float) else None), errors="coerce")
    return s.where(items["status"] == "done")


def _item_texts(engine: Engine, run: Run, items: pd.DataFrame) -> pd.Series:
    text_col = next((c for c in TEXT_FIELDS if c in items.columns), None)
    texts = items[text_col].astype("string") if text_col else pd.Series(pd.NA, index=items.index, dtype="string")
    if texts.isna().any() and run.dataset_id is not None:
        payload_text = {}
        for key, payload in item_payloads(engine, run.dataset_id).items():
            found = next((payload.get(c) for c in TEXT_FIELDS if isinstance(payload, dict) and payload.get(c)), None)
            if found:
                payload_text[str(key)] = str(found)
        texts = texts.fillna(pd.Series({k: payload_text.get(k) for k in items.index}, dtype="string"))
    return texts


# ------------------------------------------------------------------------------------- comparison


@dataclass
class Comparison:
    """Two runs compared item by item (``b`` against the reference ``a``)."""

    run_a: Run
    run_b: Run
    warnings: list[str]
    metrics: pd.DataFrame
    items: pd.DataFrame  # item_key, text, status_a, status_b, outputs, then <field>.a / <field>.b per metric
    n_only_a: int
    n_only_b: int
    correction: str = "holm"

    def item_diff(self, metric: str) -> pd.DataFrame:
        """Per-item diff of one metric: ``item_key, text, a, b, diff, change`` (better/worse/same/failed…),
        most changed first."""
        return item_diff(self, metric)

    def to_dict(self, *, with_items: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run_a": _run_brief(self.run_a),
            "run_b": _run_brief(self.run_b),
            "warnings": self.warnings,
            "n_only_a": self.n_only_a,
            "n_only_b": self.n_only_b,
            "correction": self.correction,
            "metrics": frame_records(self.metrics),
        }
        if with_items:
            out["items"] = {m: frame_records(self.item_diff(m)) for m in self.item_metrics()}
        return jsonable(out)

    def item_metrics(self) -> list[str]:
        return [m for m in self.metrics["item_field"].dropna().unique().tolist()]


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records", force_ascii=False, date_format="iso"))


def _run_brief(run: Run) -> dict[str, Any]:
    return {
        "id": run.id, "tier": run.tier, "status": run.status, "label": run.label,
        "dataset_name": run.dataset_name, "dataset_hash": run.dataset_hash, "models": run.models,
        "params": run.params, "code_version": run.code_version, "started_at": run.started_at,
        "offline": run.offline, "mixed": run.mixed, "mixed_reason": run.mixed_reason, "snapshot_id": run.snapshot_id,
        "config": run.config,
    }


def _item_field_of(metric: str, fields: Sequence[str]) -> str | None:
    """The per-item field a run-level aggregate is the mean of, from the metric catalog's ``item_field``.

    A Tier 1 block (``chunk.mrr``, ``url.hit_rate@5``) maps to the per-query field ``metrics_<block>.<field>``.
    A subgroup mean (``by_question_type.factoid.…``, ``per_model.…``) or a prefixed twin (``benchmark_…``) is not
    the mean of every item, so it gets no per-item field."""
    head, _, tail = metric.rpartition(".")
    if head not in ("", "chunk", "url") or any(tail.startswith(p) for p in catalog.PREFIXES):
        return None
    entry = catalog.get(tail)
    if entry is None or entry.item_field is None:
        return None
    found = f"metrics_{head}.{entry.item_field}" if head else entry.item_field
    return found if found in fields else None


def _field_direction(field_name: str) -> str:
    """The direction of a per-item field shown on its own (``item.<field>``): its catalog entry's, else ``none``."""
    entry = catalog.for_item_field(field_name)
    return entry.direction if entry is not None else "none"


def _signed_counts(diff: pd.Series, direction: str) -> dict[str, int | None]:
    """Items that went up / down / stayed, and — only for a metric with a better direction — better / worse."""
    up, down = int((diff > 1e-12).sum()), int((diff < -1e-12).sum())
    out: dict[str, int | None] = {"n_up": up, "n_down": down, "n_same": int((diff.abs() <= 1e-12).sum()),
                                  "n_better": None, "n_worse": None}
    if direction == "higher":
        out.update(n_better=up, n_worse=down)
    elif direction == "lower":
        out.update(n_better=down, n_worse=up)
    return out


class NotComparable(VoproshalychEvalError, ValueError):
    """Two runs whose items do not correspond (other tier, other dataset); the message says why."""


def comparability(ra: Run, rb: Run) -> list[str]:
    """Why runs ``ra`` and ``rb`` cannot be paired item by item (empty when they can)."""
    out: list[str] = []
    if ra.tier != rb.tier:
        out.append(bi(f"они разных уровней ({ra.tier} и {rb.tier})", f"they are of different tiers ({ra.tier} vs {rb.tier})"))
    if (ra.dataset_hash or ra.dataset_name) != (rb.dataset_hash or rb.dataset_name):
        sets = (f"{ra.dataset_name} {str(ra.dataset_hash or '')[:8]}", f"{rb.dataset_name} {str(rb.dataset_hash or '')[:8]}")
        out.append(bi(f"они на разных наборах данных ({sets[0]} и {sets[1]})",
                      f"they used different datasets ({sets[0]} vs {sets[1]})"))
    return out


def adjust_comparison_pvalues(rows: Sequence[Mapping[str, Any]], *, method: str = "holm") -> list[float | None]:
    """Adjusted p-values of a comparison's rows (aligned with ``rows``; ``None`` where ``p_value`` is ``None``).

    Two families, each adjusted on its own (``metrics.statistics.adjust_pvalues``): the run's metrics, and the
    item-only fields (``item.<field>``: latencies, token counts, distances…), so describing more per-item fields
    never weakens the metrics' verdicts."""
    out: list[float | None] = [None] * len(rows)
    for is_item in (False, True):
        idx = [i for i, r in enumerate(rows) if str(r["metric"]).startswith("item.") is is_item]
        for i, adj in zip(idx, adjust_pvalues([rows[i]["p_value"] for i in idx], method=method), strict=True):
            out[i] = adj
    return out


def compare_runs(
    engine: Engine,
    run_a: int | Run,
    run_b: int | Run,
    *,
    method: str = "permutation",
    n_resamples: int = 10_000,
    seed: int = 0,
    correction: str = "holm",
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Comparison:
    """Compare run ``b`` with the reference run ``a``; ``progress(done, total)`` before each metric's test
    (a progress bar).

    Every metric gets ``a``, ``b``, ``diff = b − a`` and, when its per-item values exist in both runs,
    a paired test on the items present in both (``metrics.statistics.paired_permutation_test`` by default,
    ``method="bootstrap"`` for the paired bootstrap): the mean per-item difference with its 95% CI, the raw
    p-value, the p-value adjusted for testing all these metrics at once (``p_adjusted``: Holm–Bonferroni by
    default, ``correction="fdr_bh"`` for Benjamini–Hochberg), the standardised effect size (Cohen's d_z with a
    bootstrap CI) and a verdict on the ADJUSTED p — ``better`` / ``worse`` (significant at 5 %, in the metric's
    direction from the metric catalog), ``changed`` (a metric with no better direction) or
    ``no significant difference``. Items without a value on either side (failed, or
    not applicable such as an unanswerable question) are left out of the test (``n_unpaired``).

    One policy on runs that do not pair up: runs of different tiers, or on different datasets (name or
    content hash), are refused with :class:`NotComparable` saying why, unless ``force`` — then they are
    compared with the reason kept in ``warnings``. Mixed runs and runs that are not finished are compared
    with a warning.
    """
    ra = run_a if isinstance(run_a, Run) else get_run(engine, run_a)
    rb = run_b if isinstance(run_b, Run) else get_run(engine, run_b)
    if ra is None or rb is None:
        missing = run_a if ra is None else run_b
        raise ValueError(f"Run {missing} does not exist.")
    reasons = comparability(ra, rb)
    if reasons and not force:
        raise NotComparable(f"Runs {ra.id} and {rb.id} cannot be compared item by item: " + "; ".join(reasons)
                            + ". Compare anyway with force (CLI: --force).")
    warnings: list[str] = list(reasons)  # each in both languages (bilingual.Text; its value is the English one)
    for r in (ra, rb):
        if r.status != "done":
            warnings.append(bi(f"Запуск {r.id} не завершён ({run_state(r)}): его агрегаты могут быть неполными.",
                               f"Run {r.id} is {run_state(r)}, not done: its aggregates may be partial."))
        if r.mixed:
            warnings.append(bi(f"Запуск {r.id} смешанный (продолжен после смены конфигурации: {r.mixed_reason}).",
                               f"Run {r.id} is mixed (resumed across a configuration change: {r.mixed_reason})."))
    test = paired_bootstrap_test if method == "bootstrap" else paired_permutation_test

    ia, ib = item_table(engine, ra.id), item_table(engine, rb.id)
    common = [k for k in ia.index if k in ib.index]
    fields_a, fields_b = set(numeric_item_fields(ia)), set(numeric_item_fields(ib))
    item_fields = sorted(fields_a & fields_b)
    baselines = bl.list_baselines(engine)

    agg_a, agg_b = flatten_metrics(ra.metrics or {}), flatten_metrics(rb.metrics or {})
    metric_keys = [k for k in agg_a if k in agg_b] + [k for k in agg_a if k not in agg_b] + [
        k for k in agg_b if k not in agg_a
    ]
    matched: dict[str, str | None] = {k: _item_field_of(k, item_fields) for k in metric_keys}
    used = {f for f in matched.values() if f}
    # item-only fields identical in both runs are properties of the item (answerable, …), not results
    def _varies(f: str) -> bool:
        d = (_numeric(ib.loc[common], f) - _numeric(ia.loc[common], f)).dropna()
        return bool(len(d)) and bool((d.abs() > 1e-12).any())

    varying = [f for f in item_fields if f not in used and common and _varies(f)]
    rows_spec = [(k, matched[k]) for k in metric_keys] + [(f"item.{f}", f) for f in varying]

    rows = []
    for done, (key, field_name) in enumerate(rows_spec):
        if progress is not None:
            progress(done, len(rows_spec))
        b = bl.find_baseline(baselines, rb.tier, key.removeprefix("item.") if field_name else key)
        # an aggregate's direction is its own catalog entry's; an item-only field's is its field entry's
        direction = _field_direction(field_name) if key.startswith("item.") else catalog.direction(key)
        va = (agg_a.get(key) or {}).get("value")
        vb = (agg_b.get(key) or {}).get("value")
        row: dict[str, Any] = {
            "metric": key, "item_field": field_name, "direction": direction, "a": va, "b": vb,
            "diff": None, "paired_mean_diff": None, "ci_low": None, "ci_high": None, "p_value": None,
            "n_pairs": 0, "n_unpaired": 0, "n_up": 0, "n_down": 0, "n_better": None, "n_worse": None, "n_same": 0,
            "significant": None, "verdict": "no per-item data", "method": None,
            "status_a": None if ra.offline else bl.classify(va, b), "status_b": None if rb.offline else bl.classify(vb, b),
        }
        if field_name and common:
            xa = _numeric(ia.loc[common], field_name)
            xb = _numeric(ib.loc[common], field_name)
            if va is None and xa.notna().any():
                row["a"] = va = float(xa.mean())
            if vb is None and xb.notna().any():
                row["b"] = vb = float(xb.mean())
            valid = xa.notna() & xb.notna()
            row["n_unpaired"] = int((~valid).sum())
            if valid.any():
                res = test(xa.tolist(), xb.tolist(), n_resamples=n_resamples, seed=seed)
                eff = paired_effect_size(xa.tolist(), xb.tolist(), n_resamples=min(n_resamples, 2000), seed=seed)
                row.update({
                    "paired_mean_diff": res.mean_diff, "ci_low": res.ci_low, "ci_high": res.ci_high,
                    "p_value": res.p_value, "n_pairs": res.n, "method": res.method,
                    "effect_size": eff.d_z, "effect_ci_low": eff.ci_low, "effect_ci_high": eff.ci_high,
                    **_signed_counts(xb[valid] - xa[valid], direction),
                })
            else:
                row["verdict"] = "no valid pairs"
        if va is not None and vb is not None:
            row["diff"] = vb - va
        rows.append(row)
    # several metrics are tested at once: the verdicts use Holm-adjusted p-values (raw p kept); the family is the
    # metrics only — item-only fields (``item.…``) are adjusted in a family of their own
    for row, adj in zip(rows, adjust_comparison_pvalues(rows, method=correction), strict=True):
        row["p_adjusted"] = adj
        if adj is None:
            continue
        row["significant"] = adj < ALPHA
        if not row["significant"]:
            row["verdict"] = "no significant difference"
        elif row["direction"] == "none":
            row["verdict"] = "changed"  # an informational metric: no better direction
        else:
            good = (row["paired_mean_diff"] > 0) == (row["direction"] == "higher")
            row["verdict"] = "better" if good else "worse"
    metrics = pd.DataFrame(rows, columns=[
        "metric", "item_field", "direction", "a", "b", "diff", "paired_mean_diff", "ci_low", "ci_high",
        "p_value", "p_adjusted", "effect_size", "effect_ci_low", "effect_ci_high", "n_pairs", "n_unpaired",
        "n_up", "n_down", "n_better", "n_worse", "n_same", "significant", "verdict", "method", "status_a", "status_b",
    ])
    metrics = (metrics.assign(_t=metrics["n_pairs"] == 0).sort_values(["_t", "metric"], kind="stable")
               .drop(columns="_t").reset_index(drop=True))

    texts = _item_texts(engine, rb, ib.loc[common]) if common else pd.Series(dtype="string")
    if common and texts.isna().any():
        texts = texts.fillna(_item_texts(engine, ra, ia.loc[common]))
    items = pd.DataFrame(index=pd.Index(common, name="item_key"))
    items["text"] = texts
    items["status_a"] = ia.loc[common, "status"] if common else []
    items["status_b"] = ib.loc[common, "status"] if common else []
    items["error_a"] = ia.loc[common, "error"] if common else []
    items["error_b"] = ib.loc[common, "error"] if common else []
    for out_field in OUTPUT_FIELDS:
        if out_field in ia.columns and out_field in ib.columns:
            items[f"{out_field}.a"] = ia.loc[common, out_field]
            items[f"{out_field}.b"] = ib.loc[common, out_field]
    for f in item_fields:
        items[f"{f}.a"] = _numeric(ia.loc[common], f) if common else []
        items[f"{f}.b"] = _numeric(ib.loc[common], f) if common else []
    return Comparison(ra, rb, warnings, metrics, items.reset_index(), len(set(ia.index) - set(common)),
                      len(set(ib.index) - set(common)), correction)


def item_diff(comparison: Comparison, metric: str) -> pd.DataFrame:
    """Per-item diff of one metric (a row key of ``comparison.metrics`` or an item field)."""
    rows = comparison.metrics
    match = rows[(rows["metric"] == metric) | (rows["item_field"] == metric)]
    field_name = match["item_field"].dropna().iloc[0] if not match["item_field"].dropna().empty else None
    if field_name is None:
        raise ValueError(f"No per-item values of {metric!r} in both runs.")
    direction = match["direction"].iloc[0]
    items = comparison.items
    out = pd.DataFrame({"item_key": items["item_key"], "text": items["text"]})
    out["a"] = items[f"{field_name}.a"]
    out["b"] = items[f"{field_name}.b"]
    out["diff"] = out["b"] - out["a"]
    # a metric with no better direction changes up or down, never better or worse
    words = {"higher": ("better", "worse"), "lower": ("worse", "better")}.get(direction, ("up", "down"))

    def change(row: pd.Series, sa: str, sb: str) -> str:
        if sa != "done" and sb != "done":
            return "failed in both"
        if sa != "done":
            return "fixed (failed in A)"
        if sb != "done":
            return "broken (failed in B)"
        if pd.isna(row["a"]) or pd.isna(row["b"]):
            return "no value"
        d = row["diff"]
        return words[0] if d > 1e-12 else (words[1] if d < -1e-12 else "same")

    out["change"] = [change(r, sa, sb) for (_, r), sa, sb in zip(out.iterrows(), items["status_a"], items["status_b"], strict=True)]
    for extra in items.columns:
        if any(extra == f"{o}.{s}" for o in OUTPUT_FIELDS for s in ("a", "b")) or extra in ("error_a", "error_b"):
            out[extra] = items[extra]
    order = {"worse": 0, "broken (failed in B)": 1, "better": 2, "fixed (failed in A)": 3, "down": 4, "up": 4}
    out["_o"] = out["change"].map(lambda c: order.get(c, 9))
    out["_m"] = -(out["diff"].abs().fillna(0))
    return out.sort_values(["_o", "_m", "item_key"]).drop(columns=["_o", "_m"]).reset_index(drop=True)


# ------------------------------------------------------------------------------------- export


def export_data(engine: Engine, run_id: int, *, alive: AliveCheck | None = None) -> dict[str, Any]:
    """Everything about one run, JSON-friendly: metadata (dataset hash, models, prompts, parameters, code
    version, who/when), aggregates with CIs and failures, baseline statuses with the overall status and
    its rule, failed items with their errors, and the per-item table."""
    run = get_run(engine, run_id)
    if run is None:
        raise ValueError(f"Run {run_id} does not exist.")
    baselines = bl.list_baselines(engine)
    items = item_table(engine, run_id)
    counts = count_items(engine, run_id)
    overall = bl.evaluate_run(baselines, run.tier, run.status, run.metrics or {}, offline=bool(run.offline))
    failures = items[items["status"] != "done"].reset_index()[["item_key", "error"]] if len(items) else pd.DataFrame(
        columns=["item_key", "error"])
    meta = _run_brief(run) | {
        "state": run_state(run, alive=alive), "prompts": run.prompts,
        "created_by": run.created_by, "actor": run.actor, "finished_at": run.finished_at, "heartbeat_at": run.heartbeat_at,
        "n_items_total": run.n_items_total, "n_items_done": counts.get("done", 0),
        "n_items_failed": counts.get("failed", 0), "error": run.error, "dataset_id": run.dataset_id,
    }
    return jsonable({
        "run": meta,
        "metrics": frame_records(metrics_frame(run, baselines)),
        "raw_metrics": run.metrics,
        "baseline_status": overall.to_dict() | {"rule_en": bl.RULE_EN, "rule_ru": bl.RULE_RU},
        "failures": frame_records(failures),
        "items": frame_records(items.reset_index()),
    })
