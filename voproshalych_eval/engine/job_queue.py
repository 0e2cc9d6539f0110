"""Runs as jobs of a PostgreSQL job queue (procrastinate): workers on any machine share the work.

The queue's tables live in the store (revision ``0035_job_queue`` applies procrastinate's schema, frozen),
so every process that reaches the store — the app, the CLI, ``voproshalych-eval worker`` on any number of
machines — sees the same jobs. A run is split into **batches** of item keys, one job each
(:func:`enqueue`): several workers work on one run at once, each batch claimed by one worker (the queue's
``doing`` status is the claim). The item records of :mod:`runs` stay the truth:

* a batch works only the keys of its batch that are not recorded yet (:func:`executor.execute_batch`), and
  ``runs.record_items`` keeps the first record of a key: an item is recorded once, whoever works it;
* the worker rebuilds the plan from the run's stored parameters and frozen dataset, exactly as ``resume``
  does, and refuses (the run fails, naming what differs) a configuration that cannot reproduce the run;
* the batch touches the run's heartbeat while it works (the one heartbeat rule of :func:`runs.run_state`;
  batches waiting on the queue count as alive: :func:`runs.queue_alive`);
* whoever records the last item closes the run (:func:`executor.finish_if_complete`, once, under the run's
  lock) with the plan's aggregates over every recorded item;
* a worker killed with ``-9`` stops sending its heartbeat to the queue: the periodic
  :func:`retry_stalled_jobs` puts its batches back to ``todo`` after :data:`STALLED_AFTER_SECONDS`, and
  another worker works the keys still missing.

Schedules (``voproshalych-eval schedule``) ride on the same queue: one periodic tick
(:mod:`voproshalych_eval.commands.schedule`, imported by the worker) defers the schedules that are due.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import procrastinate
import psycopg_pool
from sqlalchemy import Engine

from voproshalych_eval.bilingual import Text
from voproshalych_eval.config import env, get_settings
from voproshalych_eval.db import get_engine
from voproshalych_eval.db.engine import store_url
from voproshalych_eval.engine import executor, runs
from voproshalych_eval.engine.eta import ItemRateEta
from voproshalych_eval.plans import Plan, config_differences

log = logging.getLogger(__name__)

#: the queue of run batches
RUNS_QUEUE = "runs"
#: the queue of housekeeping (stalled-job recovery, the schedule tick)
SYSTEM_QUEUE = "system"
#: items per batch job when the plan has no vectorised batch of its own
BATCH_ITEMS = 20
#: a worker whose queue heartbeat is older than this is dead: its batches are retried
STALLED_AFTER_SECONDS = 15.0
#: how often a worker tells the queue it is alive
WORKER_HEARTBEAT_SECONDS = 3.0


def _async_pool(**kwargs: Any) -> Any:
    return psycopg_pool.AsyncConnectionPool(conninfo=store_conninfo(), **kwargs)


def store_conninfo() -> str:
    """The store's libpq URL (the embedded server is started if it is the store)."""
    url = store_url(get_settings())
    scheme, rest = url.split("://", 1)
    return ("postgresql://" + rest) if scheme.startswith("postgres") else url


#: the queue application; no connection is made until it is used (the store URL is resolved then)
app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(pool_factory=_async_pool),
    import_paths=["voproshalych_eval.commands.schedule"],
)

_open_lock = threading.Lock()
_sync_app: procrastinate.App | None = None


def open_sync() -> procrastinate.App:
    """An application for deferring jobs synchronously from this process (the CLI, the app, a sync task):
    its own small connection pool, independent of a worker's event loop running in this process."""
    global _sync_app
    with _open_lock:
        if _sync_app is None:
            deferrer = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(
                conninfo=store_conninfo(), min_size=1, max_size=4))
            deferrer.open()
            _sync_app = deferrer
    return _sync_app


# ------------------------------------------------------------------------------------------ enqueue


def batches_of(plan: Plan, batch_items: int | None = None) -> list[list[str]]:
    """The run's item keys cut into batch jobs: ``batch_items`` keys each (default: the plan's vectorised
    batch size, else :data:`BATCH_ITEMS`)."""
    return _cut(plan.keys(), _batch_size(plan, batch_items))


def _batch_size(plan: Plan, batch_items: int | None) -> int:
    return max(1, int(batch_items or (plan.batch_size if plan.work_batch is not None else BATCH_ITEMS) or BATCH_ITEMS))


def _cut(keys: Sequence[str], size: int) -> list[list[str]]:
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


def serves(engine: Engine) -> bool:
    """Whether ``engine`` is this process's store — the one whose queue the workers of this process (and
    :func:`defer_batches`) use. A run in another store (a second store opened by a test or a tool) cannot be
    queued here: its run ids are another table's."""
    return engine.url.render_as_string(hide_password=False) == \
        get_engine().url.render_as_string(hide_password=False)


def _check_served(engine: Engine) -> None:
    if not serves(engine):
        raise ValueError("the job queue serves this process's store only (VOPROSHALYCH_EVAL_STORE_URL); "
                         "run this store's runs in the foreground")


def enqueue(engine: Engine, plan: Plan, *, batch_items: int | None = None, schedule: str | None = None,
            actor: str | None = None, actor_role: str | None = None) -> int:
    """Register ``plan`` as a run (its configuration frozen now) and put its batches on the queue; returns
    the run id at once. Workers execute it (``voproshalych-eval worker``); ``actor``: who started it."""
    _check_served(engine)
    if not plan.items:
        raise executor.NothingToRun("Nothing to evaluate: the plan has no items.")
    run_id = executor.create_run(engine, plan, schedule=schedule, actor=actor, actor_role=actor_role)
    defer_batches(run_id, batches_of(plan, batch_items))
    return run_id


def defer_batches(run_id: int, batches: Sequence[Sequence[str]]) -> list[int]:
    """Put ``batches`` of ``run_id``'s item keys on the queue (one job each); returns the job ids."""
    deferrer = open_sync().configure_task(runs.BATCH_TASK, queue=RUNS_QUEUE)
    return deferrer.batch_defer(*[{"run_id": int(run_id), "batch": i, "keys": list(ks)}
                                  for i, ks in enumerate(batches)])


def requeue(engine: Engine, run_id: int, *, batch_items: int | None = None, force: bool = False) -> int:
    """Put the keys of ``run_id`` not recorded yet (its failed ones are retried) back on the queue — a resume
    through the workers; refuses like ``resume`` does. Returns the number of batch jobs deferred."""
    _check_served(engine)
    plan, mixed = executor.prepare_resume(engine, run_id, force=force)
    if mixed:
        runs.mark_mixed(engine, run_id, mixed)
    runs.forget_failed_items(engine, run_id)
    runs.mark_running(engine, run_id)
    recorded = runs.completed_keys(engine, run_id, include_failed=True)
    all_keys = plan.keys()
    batches = _cut([k for k in all_keys if k not in recorded], _batch_size(plan, batch_items))
    if not batches:
        executor.finish_if_complete(engine, run_id, plan)
        return 0
    return len(defer_batches(run_id, batches))


# ------------------------------------------------------------------------------------- the batch job


class _Cached:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.prepared = False
        self.lock = threading.Lock()


_PLANS: dict[int, _Cached] = {}
_PLANS_LOCK = threading.Lock()
_BUILD_LOCKS: dict[int, threading.Lock] = {}


def plan_for(engine: Engine, run: runs.Run) -> Plan:
    """The plan of ``run`` in this worker: rebuilt once from its stored parameters and dataset (as a resume
    does), checked against its frozen configuration (:class:`executor.ResumeRefused` naming what differs),
    prepared once; kept while the process works the run."""
    with _PLANS_LOCK:
        lock = _BUILD_LOCKS.setdefault(run.id, threading.Lock())
    with lock:
        cached = _PLANS.get(run.id)
        if cached is None:
            diffs = executor.dataset_differences(engine, run)
            plan = executor.build_plan_for(engine, run)
            if run.config:
                diffs += config_differences(run.config, plan.config())
            if diffs and not run.mixed:
                raise executor.ResumeRefused(
                    f"worker {socket.gethostname()} (pid {os.getpid()}) cannot reproduce run {run.id}'s "
                    "configuration:\n  - " + "\n  - ".join(diffs))
            cached = _Cached(plan)
            with _PLANS_LOCK:
                for old in [k for k in _PLANS if k != run.id][:-3]:  # keep a few recent runs' plans
                    _PLANS.pop(old, None)
                _PLANS[run.id] = cached
    with cached.lock:
        if not cached.prepared:
            if cached.plan.prepare is not None:
                cached.plan.prepare()
            cached.prepared = True
    return cached.plan


def forget_plans() -> None:
    """Drop this process's cached plans (tests)."""
    with _PLANS_LOCK:
        _PLANS.clear()


@app.task(name=runs.BATCH_TASK, queue=RUNS_QUEUE)
def run_batch(run_id: int, batch: int, keys: list[str]) -> dict[str, Any]:
    """One batch of a run's items: work the keys not recorded yet, then close the run if it is complete."""
    engine = get_engine()
    run = runs.get_run(engine, run_id)
    if run is None or run.status != "running":
        return {"run_id": run_id, "batch": batch, "skipped": run.status if run is not None else "deleted"}
    try:
        plan = plan_for(engine, run)
    except executor.ResumeRefused as exc:
        runs.fail_run(engine, run_id, str(exc))
        from voproshalych_eval.engine.alerts import on_run_finished  # heavy: defers httpx (via alerts)

        on_run_finished(engine, run_id)
        raise
    prog = executor.execute_batch(engine, run_id, plan, keys)
    status = executor.finish_if_complete(engine, run_id, plan)
    return {"run_id": run_id, "batch": batch, "done": prog.done, "failed": prog.failed, "run_status": status}


@app.periodic(cron="* * * * * */5", periodic_id="retry_stalled")
@app.task(name="voproshalych_eval.retry_stalled_jobs", queue=SYSTEM_QUEUE, queueing_lock="retry_stalled_jobs")
async def retry_stalled_jobs(timestamp: int) -> int:
    """Put the jobs of dead workers (no queue heartbeat for :data:`STALLED_AFTER_SECONDS`) back to ``todo``."""
    stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_AFTER_SECONDS)
    n = 0
    for job in stalled:
        if job.task_name == "voproshalych_eval.retry_stalled_jobs":
            continue
        log.warning("retrying job %s (%s) of a dead worker", job.id, job.task_name)
        await app.job_manager.retry_job(job)
        n += 1
    return n


# ------------------------------------------------------------------------------------------- worker


def run_worker(*, concurrency: int = 1, queues: Sequence[str] | None = None, name: str | None = None,
               wait: bool = True, install_signal_handlers: bool = True) -> None:
    """Work jobs of ``queues`` (default: all) until stopped (SIGINT/SIGTERM), ``concurrency`` jobs at once."""
    app.run_worker(
        queues=list(queues) if queues else None,
        concurrency=max(1, int(concurrency)),
        name=name or f"{socket.gethostname()}-{os.getpid()}",
        wait=wait,
        install_signal_handlers=install_signal_handlers,
        update_heartbeat_interval=WORKER_HEARTBEAT_SECONDS,
        stalled_worker_timeout=STALLED_AFTER_SECONDS,
        fetch_job_polling_interval=1.0,
    )


class ThreadWorker:
    """A worker in a thread of this process (the app's single-user default, and tests): the same worker
    as ``voproshalych-eval worker``, on its own event loop; :meth:`stop` ends it after the jobs in hand."""

    def __init__(self, *, concurrency: int = 2, queues: Sequence[str] | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        self._worker: Any = None
        self._ready = threading.Event()
        self.concurrency, self.queues = concurrency, queues
        self._thread = threading.Thread(target=self._main, name="queue-worker", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def go() -> None:
            async with app.open_async():
                app.perform_import_paths()
                self._worker = app._worker(  # noqa: SLF001 - the documented run_worker_async builds it the same way
                    queues=list(self.queues) if self.queues else None, concurrency=self.concurrency,
                    name=f"{socket.gethostname()}-{os.getpid()}-thread", wait=True, install_signal_handlers=False,
                    update_heartbeat_interval=WORKER_HEARTBEAT_SECONDS, stalled_worker_timeout=STALLED_AFTER_SECONDS,
                    fetch_job_polling_interval=0.5)
                self._ready.set()
                await self._worker.run()

        try:
            self._loop.run_until_complete(go())
        finally:
            self._ready.set()

    def start(self) -> ThreadWorker:
        self._thread.start()
        self._ready.wait(30)
        return self

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        if self._worker is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._worker.stop)
        self._thread.join(timeout)


_THREAD_WORKER: ThreadWorker | None = None


def ensure_thread_worker(*, concurrency: int = 2) -> ThreadWorker:
    """One in-process worker thread for this process (started on first call)."""
    global _THREAD_WORKER
    with _open_lock:
        if _THREAD_WORKER is None or not _THREAD_WORKER.alive:
            _THREAD_WORKER = ThreadWorker(concurrency=concurrency)
            _THREAD_WORKER._thread.start()  # noqa: SLF001
        worker = _THREAD_WORKER
    worker._ready.wait(30)  # noqa: SLF001
    return worker


# ------------------------------------------------------------------------------- the app's start path


def keep_plan(run_id: int, plan: Plan) -> None:
    """Let a worker of this process work ``run_id`` with this very plan (built by the app): no rebuild, and
    the plan's in-memory outputs (Tier 0's vectors, the real-users result) reach the page that started it.
    A worker of another process rebuilds the plan from the store as usual."""
    with _PLANS_LOCK:
        _PLANS[run_id] = _Cached(plan)


def in_process_worker_wanted() -> bool:
    """Whether the app runs a worker thread of its own (the single-user default); ``VOPROSHALYCH_EVAL_NO_WORKER=1``
    when workers run as their own processes (``make run``, a deployment)."""
    return (env("VOPROSHALYCH_EVAL_NO_WORKER") or "").strip().lower() not in ("1", "true", "yes")


class QueuedJob(executor.Job):
    """The app's background job for a run that executes on the queue: the plan is built in the job's thread
    (as :class:`executor.Job` does), the run created, its batches deferred; then the job only *follows* the
    run in the store (counts, state, aggregates) until it ends — the work happens in the workers. Cancelling
    the job cancels the run (the batches stop at their next heartbeat)."""

    poll_s = 0.5

    def _main(self) -> None:
        if self.plan is None and not self._build():
            return
        assert self.plan is not None and self.run_id is not None
        run_id, plan = self.run_id, self.plan
        try:
            keep_plan(run_id, plan)
            defer_batches(run_id, batches_of(plan))
            self._follow(run_id)
        except Exception as exc:  # noqa: BLE001 - kept for the page to show as a sentence
            log.exception("queued run %s failed", run_id)
            self._fail(exc)

    def _follow(self, run_id: int) -> None:
        t0 = time.monotonic()
        eta, first = ItemRateEta(), None  # items recorded before this follow began are not a rate
        cancelled = False
        while True:
            if self.cancel_event.is_set() and not cancelled:
                cancelled = True
                run = runs.get_run(self.engine, run_id)
                if run is not None and run.status == "running":
                    runs.set_status(self.engine, run_id, "cancelled", error="cancelled")
            run = runs.get_run(self.engine, run_id)
            if run is None:
                raise RuntimeError(f"run {run_id} was deleted")
            state = executor.run_state(self.engine, run_id)
            counts = runs.count_items(self.engine, run_id)
            label = queue_label(self.engine, run_id) if state == "running" else state
            now, finished = time.monotonic(), counts.get("done", 0) + counts.get("failed", 0)
            first = finished if first is None else first
            eta.observe(now, finished - first)
            self.progress = executor.Progress(
                run_id=run_id, total=int(run.n_items_total or 0), done=counts.get("done", 0),
                failed=counts.get("failed", 0), elapsed_s=time.monotonic() - t0, status="running",
                message=(Text("в очереди: ждёт свободного обработчика…", "queued: waiting for a worker…")
                         if label == "queued" else None),
                metrics=run.metrics or None, last_error=run.error,
                measured_eta_s=eta.eta(now, int(run.n_items_total or 0) - finished))
            if state != "running":
                self.progress.status = state
                if state in ("failed", "interrupted") and run.error:
                    self.error = run.error
                return
            time.sleep(self.poll_s)


def start_queued(engine: Engine, build: Callable[[], Plan], *, actor: str | None = None,
                 actor_role: str | None = None) -> executor.Job:
    """The app's start path: a :class:`QueuedJob` building the plan off the page's thread, then enqueueing it
    (found again with ``executor.get_job(job.key)`` / ``get_job(run_id)`` like every job). ``actor``/``actor_role``
    (who started it) reach the run's creation in the job's thread."""
    if not serves(engine):  # another store than the process's: its queue has no worker here, run it in a thread
        return executor.start_background(engine, build, actor=actor, actor_role=actor_role)
    if in_process_worker_wanted():
        ensure_thread_worker()
    job = QueuedJob(engine, None, build, actor=actor, actor_role=actor_role)
    executor.register_building(job)
    return job.start()


def stop_thread_worker(timeout: float = 30.0) -> None:
    """Stop this process's worker thread, if one runs (before the store goes away: tests, shutdown)."""
    global _THREAD_WORKER
    with _open_lock:
        worker, _THREAD_WORKER = _THREAD_WORKER, None
    if worker is not None:
        worker.stop(timeout)


# -------------------------------------------------------------------------------------------- follow


def wait_run(engine: Engine, run_id: int, *, poll_s: float = 0.5, timeout: float | None = None,
             on_progress: Callable[[executor.Progress], None] | None = None) -> str:
    """Follow ``run_id`` until it stops (a finished status, or ``interrupted`` when nothing works it any
    more); returns its state. ``on_progress`` gets counts from the store as they change."""
    t0 = time.monotonic()
    last: tuple[int, int] | None = None
    eta, first = ItemRateEta(), None
    while True:
        run = runs.get_run(engine, run_id)
        if run is None:
            raise ValueError(f"run {run_id} does not exist")
        state = executor.run_state(engine, run_id)
        counts = runs.count_items(engine, run_id)
        if on_progress is not None and (counts.get("done", 0), counts.get("failed", 0)) != last:
            last = (counts.get("done", 0), counts.get("failed", 0))
            now = time.monotonic()
            first = sum(last) if first is None else first
            eta.observe(now, sum(last) - first)
            on_progress(executor.Progress(run_id=run_id, total=int(run.n_items_total or 0), done=last[0],
                                          failed=last[1], elapsed_s=now - t0, status=state,
                                          measured_eta_s=eta.eta(now, int(run.n_items_total or 0) - sum(last))))
        if state != "running":
            return state
        if timeout is not None and time.monotonic() - t0 > timeout:
            raise TimeoutError(f"run {run_id} still running after {timeout:.0f} s")
        time.sleep(poll_s)


def queue_label(engine: Engine, run_id: int) -> str:
    """``queued`` (batches wait for a worker, none worked yet) | ``running`` | the run's state."""
    state = executor.run_state(engine, run_id)
    if state != "running":
        return state
    jobs = runs.queue_jobs(engine, run_id)
    counts = runs.count_items(engine, run_id)
    if jobs.get("todo") and not jobs.get("doing") and not (counts.get("done") or counts.get("failed")):
        return "queued"
    return "running"
