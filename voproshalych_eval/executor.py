"""Runs that survive: per-item work off the Streamlit script thread, every item written at once.

A tier describes its work as a :class:`Plan` — the item keys with their payloads, a ``work`` function
turning one payload into an :class:`ItemResult`, and a ``finalize`` function computing the run's
aggregates from *all* recorded items (read back from ``eval.run_items``, so a resumed run aggregates
exactly like an uninterrupted one). :func:`execute` runs a plan:

* in a thread pool (``concurrency`` workers; LLM calls are I/O bound), either in the foreground (CLI)
  or in a background thread (:func:`start_background`, the app) — the same code either way;
* each finished item is written with :func:`runs.record_item` from the worker that produced it, at
  once, keyed by ``(run_id, item_key)``: a crash, a rerun or a resume never loses or duplicates one;
* a heartbeat thread touches ``eval.runs.heartbeat_at`` every few seconds, so a run whose process
  was killed (``kill -9``) is recognisable: status ``running`` with a stale heartbeat, shown as
  "interrupted — resume" (:func:`run_state`);
* cancellation is a :class:`threading.Event`: no new item starts, the run becomes ``cancelled``
  (items already in flight still record themselves when they finish);
* ``on_progress`` receives :class:`Progress` snapshots (counts, rate, ETA, tokens and money so far, per
  model: every LLM call made inside an item's work counts on the execution's usage meter and is logged
  under the run id — :mod:`voproshalych_eval.llm.usage`); the finished run's metrics get ``cost_usd``
  per model and in total, from the call log (every execution of the run counts).

:func:`resume` rebuilds the plan from the run's stored parameters (each tier module exposes
``build_plan(engine, params)``), deletes the run's *failed* items so they are retried, and executes
only the keys not yet recorded.

Background jobs live in a module-level registry keyed by run id (:func:`get_job`): a Streamlit rerun
or a reopened tab keeps only the run id in ``st.session_state`` and reattaches to the job here.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval import runs
from voproshalych_eval.llm.usage import UsageMeter, metering

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
#: A ``running`` run whose heartbeat is older than this, and which no job of this process runs, is
#: considered interrupted (its process died).
STALE_AFTER_SECONDS = 30.0

#: tier key -> module exposing ``build_plan(engine, params) -> Plan`` (used by :func:`resume`).
TIER_MODULES: dict[str, str] = {
    "tier2": "voproshalych_eval.tiers.tier2",
    "tier3": "voproshalych_eval.tiers.tier3",
    "judge": "voproshalych_eval.tiers.judge_stability",
    "judge_pipeline": "voproshalych_eval.tiers.judge_pipeline",
    "ux": "voproshalych_eval.tiers.ux",
    "dataset_generation": "voproshalych_eval.generation.plan",
}


@dataclass
class ItemResult:
    """Outcome of one item: its JSON-serialisable result, status and the tokens it spent."""

    result: dict[str, Any]
    status: str = "done"
    error: str | None = None
    tokens: int = 0


@dataclass
class Plan:
    """What a run does: items (key, payload), the per-item work and the aggregation."""

    tier: str
    items: list[tuple[str, Any]]
    work: Callable[[Any], ItemResult | Mapping[str, Any]]
    finalize: Callable[[Engine, int], dict[str, Any]]
    concurrency: int = 4
    params: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, Any] = field(default_factory=dict)
    dataset_id: int | None = None
    dataset_name: str | None = None
    dataset_hash: str | None = None
    offline: bool = False
    label: str | None = None

    def keys(self) -> list[str]:
        return [k for k, _ in self.items]


@dataclass
class Progress:
    """A snapshot of a run's progress. ``done``/``failed`` include items recorded before a resume."""

    run_id: int
    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0  # items already recorded when this execution started
    tokens: int = 0  # tokens spent by this execution
    cost_usd: float | None = 0.0  # money spent by this execution's LLM calls; None = unknown (a price or usage missing)
    llm: dict[str, Any] | None = None  # per model: calls, cached, prompt/completion tokens, cost_usd (None = unknown)
    elapsed_s: float = 0.0
    status: str = "running"
    last_error: str | None = None
    metrics: dict[str, Any] | None = None

    @property
    def finished(self) -> int:
        return self.done + self.failed

    @property
    def rate(self) -> float | None:
        """Items per second finished by this execution (not counting skipped ones)."""
        new = self.finished - self.skipped
        return new / self.elapsed_s if self.elapsed_s > 0 and new > 0 else None

    @property
    def eta_s(self) -> float | None:
        rate = self.rate
        remaining = max(self.total - self.finished, 0)
        if remaining == 0:
            return 0.0
        return remaining / rate if rate else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(finished=self.finished, rate=self.rate, eta_s=self.eta_s)
        return d


ProgressCallback = Callable[[Progress], None]


def create_run(engine: Engine, plan: Plan) -> int:
    """Register the plan as a new ``running`` run; returns its id."""
    keys = plan.keys()
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})[:5]
        raise ValueError(f"item keys must be unique; duplicated: {', '.join(dup)}")
    run = runs.create_run(
        engine,
        plan.tier,
        params=plan.params,
        models=plan.models,
        prompts=plan.prompts,
        dataset_id=plan.dataset_id,
        dataset_name=plan.dataset_name,
        dataset_hash=plan.dataset_hash,
        n_items_total=len(plan.items),
        offline=plan.offline,
        label=plan.label,
    )
    return run.id


def heartbeat(engine: Engine, run_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(text("UPDATE eval.runs SET heartbeat_at = now() WHERE id = :r"), {"r": run_id})


def _set_running(engine: Engine, run_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE eval.runs SET status = 'running', error = NULL, finished_at = NULL, heartbeat_at = now() WHERE id = :r"),
            {"r": run_id},
        )


def _short_error(exc: BaseException) -> str:
    msg = f"{type(exc).__name__}: {exc}"
    return msg[:1000]


def execute(
    engine: Engine,
    run_id: int,
    plan: Plan,
    *,
    cancel: threading.Event | None = None,
    on_progress: ProgressCallback | None = None,
    concurrency: int | None = None,
    heartbeat_s: float = HEARTBEAT_SECONDS,
) -> Progress:
    """Run the plan's missing items for ``run_id`` and finalize; returns the last progress snapshot.

    Items already recorded (done) are skipped. Each item is recorded as soon as it finishes; an
    exception in ``work`` records the item as ``failed`` with the error (retried by :func:`resume`).
    When every item is recorded the run is closed with ``finalize``'s aggregates; when cancelled
    the run is marked ``cancelled`` (aggregates over what finished are still stored).
    """
    cancel = cancel or threading.Event()
    workers = max(1, int(concurrency or plan.concurrency or 1))
    counts = runs.count_items(engine, run_id)
    recorded = runs.completed_keys(engine, run_id, include_failed=True)
    todo = [(k, p) for k, p in plan.items if k not in recorded]
    prog = Progress(
        run_id=run_id,
        total=len(plan.items),
        done=counts.get("done", 0),
        failed=counts.get("failed", 0),
    )
    prog.skipped = prog.finished
    lock = threading.Lock()
    t0 = time.perf_counter()
    meter = UsageMeter()
    prices: dict[str, Any] = {}

    def update_cost() -> None:
        used = meter.snapshot()
        if not used:
            return
        from voproshalych_eval.llm.prices import price_table, summarize_usage

        if not prices:
            prices.update(price_table(engine))
        summary = summarize_usage(used, prices)
        prog.llm, prog.cost_usd = summary["per_model"], summary["cost_usd"]

    def emit() -> None:
        if on_progress is None:
            return
        with lock:
            prog.elapsed_s = time.perf_counter() - t0
            update_cost()
            snap = Progress(**{k: getattr(prog, k) for k in prog.__dataclass_fields__})
        try:
            on_progress(snap)
        except Exception:  # noqa: BLE001 - a broken progress display must not kill the run
            log.exception("progress callback failed")

    def one(key: str, payload: Any) -> None:
        if cancel.is_set():
            return
        try:
            with metering(meter, run_id):
                out = plan.work(payload)
            res = out if isinstance(out, ItemResult) else ItemResult(dict(out))
        except Exception as exc:  # noqa: BLE001 - recorded as a failed item, retried on resume
            log.debug("item %s failed:\n%s", key, traceback.format_exc())
            res = ItemResult({}, status="failed", error=_short_error(exc))
        added = runs.record_item(engine, run_id, key, res.result, status=res.status, error=res.error)
        with lock:
            prog.tokens += int(res.tokens or 0)
            if added:
                if res.status == "done":
                    prog.done += 1
                else:
                    prog.failed += 1
                    prog.last_error = res.error
        emit()

    stop_beat = threading.Event()

    def beat() -> None:
        while not stop_beat.wait(heartbeat_s):
            try:
                heartbeat(engine, run_id)
            except Exception:  # noqa: BLE001
                log.warning("heartbeat failed for run %s", run_id)

    _set_running(engine, run_id)
    beater = threading.Thread(target=beat, name=f"heartbeat-{run_id}", daemon=True)
    beater.start()
    emit()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"run{run_id}")
    try:
        pending: set[Future[None]] = set()
        it = iter(todo)
        exhausted = False
        while True:
            while not exhausted and not cancel.is_set() and len(pending) < workers * 2:
                nxt = next(it, None)
                if nxt is None:
                    exhausted = True
                    break
                pending.add(pool.submit(one, nxt[0], nxt[1]))
            if not pending:
                break
            if cancel.is_set():
                for f in pending:
                    f.cancel()
                break
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for f in finished:
                f.result()  # ``one`` never raises except on database errors: let those surface
    except BaseException as exc:
        cancel.set()
        pool.shutdown(wait=False, cancel_futures=True)
        stop_beat.set()
        interrupted = isinstance(exc, KeyboardInterrupt)
        try:
            if interrupted:
                runs.set_status(engine, run_id, "cancelled", error="interrupted by the user")
            else:
                runs.fail_run(engine, run_id, _short_error(exc))
        except Exception:  # noqa: BLE001
            log.exception("could not mark run %s failed", run_id)
        prog.status = "cancelled" if interrupted else "failed"
        prog.last_error = _short_error(exc)
        emit()
        raise
    pool.shutdown(wait=not cancel.is_set(), cancel_futures=True)
    stop_beat.set()

    try:
        metrics = with_cost(engine, run_id, plan.finalize(engine, run_id))
    except Exception as exc:  # noqa: BLE001
        log.exception("finalize failed for run %s", run_id)
        runs.fail_run(engine, run_id, "aggregation failed: " + _short_error(exc))
        prog.status = "failed"
        prog.last_error = _short_error(exc)
        emit()
        raise
    if cancel.is_set():
        runs.finish_run(engine, run_id, metrics, status="cancelled")
        prog.status = "cancelled"
    else:
        runs.finish_run(engine, run_id, metrics, status="done")
        prog.status = "done"
    prog.metrics = metrics
    with lock:
        update_cost()
    emit()
    return prog


def with_cost(engine: Engine, run_id: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics`` plus ``cost_usd``: per model ``{"value": USD or None (unknown), tokens, calls}`` and
    ``total``, from the run's logged LLM calls (nothing added for a run without LLM calls)."""
    from voproshalych_eval.llm.prices import run_usage

    out = dict(metrics)
    used = run_usage(engine, run_id)
    if used["per_model"]:
        cost: dict[str, Any] = {m: {"value": u["cost_usd"], "prompt_tokens": u["prompt_tokens"],
                                    "completion_tokens": u["completion_tokens"], "calls": u["calls"],
                                    "cached": u["cached"], "price_known": u["price"] is not None}
                                for m, u in used["per_model"].items()}
        cost["total"] = {"value": used["cost_usd"], "prompt_tokens": used["prompt_tokens"],
                         "completion_tokens": used["completion_tokens"]}
        out["cost_usd"] = cost
    return out


def run_plan(
    engine: Engine,
    plan: Plan,
    *,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> tuple[int, Progress]:
    """Create a run for ``plan`` and execute it in the foreground (the CLI path)."""
    run_id = create_run(engine, plan)
    return run_id, execute(engine, run_id, plan, on_progress=on_progress, cancel=cancel)


# ------------------------------------------------------------------ background jobs (the app path)


class Job:
    """A plan executing in a background thread of this process; survives Streamlit reruns."""

    def __init__(self, engine: Engine, run_id: int, plan: Plan) -> None:
        self.engine = engine
        self.run_id = run_id
        self.plan = plan
        self.cancel_event = threading.Event()
        self.progress = Progress(run_id=run_id, total=len(plan.items))
        self.error: str | None = None
        self.started = time.time()
        self._thread = threading.Thread(target=self._main, name=f"job-{run_id}", daemon=True)

    def _update(self, p: Progress) -> None:
        self.progress = p

    def _main(self) -> None:
        try:
            self.progress = execute(self.engine, self.run_id, self.plan, cancel=self.cancel_event, on_progress=self._update)
        except Exception as exc:  # noqa: BLE001 - kept for the page to show as a sentence
            log.exception("background run %s failed", self.run_id)
            self.error = _short_error(exc)
            self.progress.status = "failed"
            self.progress.last_error = self.error

    def start(self) -> Job:
        self._thread.start()
        return self

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> Progress:
        self._thread.join(timeout)
        return self.progress


_JOBS: dict[int, Job] = {}
_JOBS_LOCK = threading.Lock()


def start_background(engine: Engine, plan: Plan, *, run_id: int | None = None) -> Job:
    """Create (or continue, with ``run_id``) a run and execute it in a background thread."""
    rid = run_id if run_id is not None else create_run(engine, plan)
    with _JOBS_LOCK:
        existing = _JOBS.get(rid)
        if existing is not None and existing.alive:
            return existing
        job = Job(engine, rid, plan)
        _JOBS[rid] = job
    return job.start()


def get_job(run_id: int | None) -> Job | None:
    """The job of this process executing ``run_id`` (alive or finished), if any."""
    if run_id is None:
        return None
    with _JOBS_LOCK:
        return _JOBS.get(int(run_id))


def active_jobs() -> list[Job]:
    with _JOBS_LOCK:
        return [j for j in _JOBS.values() if j.alive]


def cancel_run(engine: Engine, run_id: int) -> bool:
    """Cancel ``run_id``: signal its job in this process, or (if none) mark an orphaned run cancelled."""
    job = get_job(run_id)
    if job is not None and job.alive:
        job.cancel()
        return True
    run = runs.get_run(engine, run_id)
    if run is not None and run.status == "running":
        runs.set_status(engine, run_id, "cancelled", error="cancelled")
        return True
    return False


# ------------------------------------------------------------------ state, resume


def heartbeat_age(engine: Engine, run_id: int) -> float | None:
    """Seconds since the run's last heartbeat (None for an unknown run)."""
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT EXTRACT(EPOCH FROM (now() - heartbeat_at)) FROM eval.runs WHERE id = :r"), {"r": run_id}
        ).one_or_none()
    return float(row[0]) if row and row[0] is not None else None


def run_state(engine: Engine, run_id: int, *, stale_after: float = STALE_AFTER_SECONDS) -> str:
    """``running`` | ``interrupted`` | ``done`` | ``failed`` | ``cancelled`` | ``unknown``.

    ``interrupted``: stored as ``running`` but no job of this process runs it and its heartbeat is
    older than ``stale_after`` seconds — its process died (``kill -9``, a crash); resume it.
    """
    run = runs.get_run(engine, run_id)
    if run is None:
        return "unknown"
    if run.status != "running":
        return run.status
    job = get_job(run_id)
    if job is not None and job.alive:
        return "running"
    age = heartbeat_age(engine, run_id)
    return "interrupted" if age is not None and age > stale_after else "running"


def build_plan_for(engine: Engine, run: runs.Run) -> Plan:
    """Rebuild a run's plan from its tier and stored parameters."""
    module_name = TIER_MODULES.get(run.tier)
    if module_name is None:
        raise ValueError(f"run {run.id} (tier {run.tier}) cannot be resumed: only {', '.join(TIER_MODULES)} runs can")
    module = importlib.import_module(module_name)
    return module.build_plan(engine, dict(run.params))


def prepare_resume(engine: Engine, run_id: int, *, retry_failed: bool = True, force: bool = False) -> Plan:
    """Checks and bookkeeping before resuming; returns the rebuilt plan.

    Refuses a run that is still alive (a job of this process runs it, or its heartbeat is fresh)
    unless ``force``. Failed items are deleted so that they are retried (``retry_failed``).
    """
    run = runs.get_run(engine, run_id)
    if run is None:
        raise ValueError(f"run {run_id} does not exist")
    job = get_job(run_id)
    if job is not None and job.alive:
        raise ValueError(f"run {run_id} is still executing in this process")
    if not force and run.status == "running" and run_state(engine, run_id) == "running":
        raise ValueError(
            f"run {run_id} looks alive (heartbeat {heartbeat_age(engine, run_id):.0f} s ago); "
            "wait until it is interrupted or pass --force"
        )
    plan = build_plan_for(engine, run)
    if retry_failed:
        runs.forget_failed_items(engine, run_id)
    return plan


def resume(
    engine: Engine,
    run_id: int,
    *,
    retry_failed: bool = True,
    force: bool = False,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> Progress:
    """Finish only the missing items of ``run_id`` in the foreground (no duplicates)."""
    plan = prepare_resume(engine, run_id, retry_failed=retry_failed, force=force)
    return execute(engine, run_id, plan, on_progress=on_progress, cancel=cancel)


def resume_background(engine: Engine, run_id: int, *, retry_failed: bool = True, force: bool = False) -> Job:
    """:func:`resume` in a background thread (the app's "Resume" button)."""
    plan = prepare_resume(engine, run_id, retry_failed=retry_failed, force=force)
    return start_background(engine, plan, run_id=run_id)


def items_records(engine: Engine, run_id: int) -> list[dict[str, Any]]:
    """All recorded items of a run as dicts ``{item_key, status, error, result}`` (for ``finalize``)."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT item_key, status, error, result FROM eval.run_items WHERE run_id = :r ORDER BY item_key"),
            {"r": run_id},
        ).all()
    return [{"item_key": r[0], "status": r[1], "error": r[2], "result": r[3] or {}} for r in rows]


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {(seconds % 3600) // 60:02d} min"


def summary_line(p: Progress) -> str:
    from voproshalych_eval.llm.prices import format_cost

    cost = f" · {format_cost(p.cost_usd)}" if p.llm else ""
    return (
        f"[run {p.run_id}] {p.finished}/{p.total} (failed {p.failed}) · tokens {p.tokens}{cost} · "
        f"ETA {format_eta(p.eta_s)}"
    )


def keys_in_order(plan_items: Sequence[tuple[str, Any]]) -> list[str]:
    return [k for k, _ in plan_items]
