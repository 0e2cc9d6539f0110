"""The one engine: every plan (each tier, real-user analytics, judge metrics, tools) runs here.

A plan module describes its work as a :class:`~voproshalych_eval.plans.Plan` (items, per-item or
per-batch work, aggregation; see :mod:`voproshalych_eval.plans`). :func:`execute` runs it:

* in a thread pool (``concurrency`` workers; LLM calls are I/O bound), either in the foreground (CLI)
  or in a background thread (:func:`start_background`, the app) — the same code either way;
* items go to the workers one by one, or in batches of ``plan.batch_size`` when the plan has a
  ``work_batch`` (vectorised work such as batched retrieval); every item is written with
  :func:`runs.record_items` as soon as it (or its batch) finishes, keyed by ``(run_id, item_key)``: a
  crash, a rerun or a resume never loses or duplicates one;
* one process executes a run at a time: the run's PostgreSQL advisory lock is held for the whole
  execution (:func:`runs.execution_lock`); a second caller gets "already running (pid …)";
* a heartbeat thread touches the run every :data:`runs.HEARTBEAT_SECONDS`, so a run whose process was
  killed is recognisable (:func:`run_state`: the one staleness rule of :mod:`runs`, with this
  process's jobs as the liveness check);
* cancellation is a :class:`threading.Event`: no new item starts; the run becomes ``cancelled``;
* ``on_progress`` receives :class:`Progress` snapshots (counts, rate, ETA, the plan's message, tokens and
  money so far per model: every LLM call made inside an item's work counts on the execution's usage meter
  and is logged under the run id — :mod:`voproshalych_eval.llm.usage`); the finished run's metrics get
  ``cost_usd`` per model and in total, from the call log (every execution of the run counts);
* the outcome tells the truth (:func:`runs.outcome`): every item failed → ``failed``; a judged run (its
  metrics carry ``judged_share``) in which no item, or a share below ``Settings.min_judged_share``
  (``VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE``, 0.5), got a usable judgement → ``failed``
  (:func:`runs.too_few_judged`); more failed than the allowed share → ``done_with_failures``; else ``done``.

:func:`resume` rebuilds the plan from the run's stored parameters and its frozen dataset (by id, never
a path), compares the rebuilt configuration with the frozen one and refuses (:class:`ResumeRefused`,
naming what differs) unless ``force`` — then the run is marked *mixed*. It deletes the run's failed
items so they are retried and executes only the keys not yet recorded.

Background jobs live in a module-level registry keyed by run id (:func:`get_job`): a Streamlit rerun or
a reopened tab keeps only the run id in ``st.session_state`` and reattaches to the job here. The app
starts jobs from a plan *factory*: ``build_plan`` runs in the job's thread, so it may be heavy (a snapshot,
a model load); until the run exists the job is found by its key.
"""

from __future__ import annotations

import importlib
import logging
import queue
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.db import get_engine
from voproshalych_eval.engine import runs
from voproshalych_eval.engine.eta import ItemRateEta
from voproshalych_eval.engine.runs import AlreadyRunning
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.llm.usage import UsageMeter, metering
from voproshalych_eval.plans import ItemResult, Plan, config_differences, spec

__all__ = [
    "AlreadyRunning",
    "ItemResult",
    "Job",
    "NothingToRun",
    "Plan",
    "Progress",
    "ResumeRefused",
    "active_jobs",
    "cancel_run",
    "create_run",
    "execute",
    "execute_batch",
    "finish_if_complete",
    "get_job",
    "resume",
    "resume_background",
    "run_plan",
    "run_state",
    "start_background",
]

log = logging.getLogger(__name__)


class ResumeRefused(VoproshalychEvalError, ValueError):
    """The current configuration cannot reproduce the run; the message names what differs."""


@dataclass
class Progress:
    """A snapshot of a run's progress. ``done``/``failed`` include items recorded before a resume."""

    run_id: int
    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0  # items already recorded when this execution started
    tokens: int = 0  # tokens spent by the run, earlier executions (before a resume) included
    cost_usd: float | None = 0.0  # money spent by this execution's LLM calls; None = unknown (a price or usage missing)
    llm: dict[str, Any] | None = None  # per model: calls, cached, prompt/completion tokens, cost_usd (None = unknown)
    elapsed_s: float = 0.0
    status: str = "running"
    last_error: str | None = None
    message: str | None = None  # what the plan is doing right now ("embedding 5,000 questions…")
    metrics: dict[str, Any] | None = None
    #: LLM requests repeated after an error, by kind, and calls that succeeded only after one (this execution)
    retries: dict[str, Any] | None = None
    #: seconds left, measured from the recent item rate (:class:`voproshalych_eval.engine.eta.ItemRateEta`); None = not
    #: known yet (fewer than two items finished in this execution)
    measured_eta_s: float | None = None

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
        """Seconds left: 0 when every item is finished, else the measured estimate (never items left divided by
        the rate since the start, which counted setup and missed every change of pace: 5–20× off)."""
        if max(self.total - self.finished, 0) == 0:
            return 0.0
        return self.measured_eta_s

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(finished=self.finished, rate=self.rate, eta_s=self.eta_s)
        return d


ProgressCallback = Callable[[Progress], None]


def _max_failure_share(plan: Plan) -> float:
    if plan.max_failure_share is not None:
        return float(plan.max_failure_share)
    if plan.params.get("max_failure_share") is not None:
        return float(plan.params["max_failure_share"])

    return float(get_settings().max_failure_share)


def _min_judged_share() -> float:
    return float(get_settings().min_judged_share)


def create_run(
    engine: Engine,
    plan: Plan,
    *,
    schedule: str | None = None,
    actor: str | None = None,
    actor_role: str | None = None,
) -> int:
    """Register the plan as a new ``running`` run with its frozen configuration; returns its id (``schedule``: the
    schedule that started it; ``actor``: who started it, default the OS user; recorded on the run and in the audit
    log)."""
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
        config=plan.config(),
        snapshot_id=plan.snapshot_id,
        schedule=schedule,
        actor=actor,
        actor_role=actor_role,
    )
    return run.id


def _short_error(exc: BaseException) -> str:
    msg = f"{type(exc).__name__}: {exc}"
    return msg[:1000]


def _as_result(out: Any) -> ItemResult:
    return out if isinstance(out, ItemResult) else ItemResult(dict(out))


def execute(
    engine: Engine,
    run_id: int,
    plan: Plan,
    *,
    cancel: threading.Event | None = None,
    on_progress: ProgressCallback | None = None,
    concurrency: int | None = None,
    heartbeat_s: float = runs.HEARTBEAT_SECONDS,
    retry_failed: bool = False,
    mixed_reason: str | None = None,
) -> Progress:
    """Run the plan's missing items for ``run_id`` and finalize; returns the last progress snapshot.

    Holds the run's execution lock throughout (:class:`AlreadyRunning` when another process has it).
    Items already recorded are skipped (failed ones are first deleted with ``retry_failed``). Each item
    is recorded as soon as it (or its batch) finishes; an exception in the work records it as
    ``failed`` with the error. When every item is recorded the run is closed with ``finalize``'s
    aggregates and :func:`runs.outcome`; when cancelled it becomes ``cancelled`` (aggregates over what
    finished are still stored).
    """
    with runs.execution_lock(engine, run_id):
        if mixed_reason:
            runs.mark_mixed(engine, run_id, mixed_reason)
        if retry_failed:
            runs.forget_failed_items(engine, run_id)
        return _execute_locked(engine, run_id, plan, cancel=cancel or threading.Event(), on_progress=on_progress,
                               concurrency=concurrency, heartbeat_s=heartbeat_s)


def _batches(todo: Sequence[tuple[str, Any]], size: int) -> list[list[tuple[str, Any]]]:
    return [list(todo[i : i + size]) for i in range(0, len(todo), size)]


def execute_batch(
    engine: Engine,
    run_id: int,
    plan: Plan,
    keys: Collection[str],
    *,
    cancel: threading.Event | None = None,
    on_progress: ProgressCallback | None = None,
    concurrency: int | None = None,
    heartbeat_s: float = runs.HEARTBEAT_SECONDS,
) -> Progress:
    """Work the items ``keys`` of ``run_id`` that are not recorded yet (one job of the queue, :mod:`queue`).

    The same item loop as :func:`execute` — each item recorded once as it finishes, the run's heartbeat
    touched while it works — but without the run's execution lock (several workers work one run, each on
    its own batch: the queue's job is the claim) and without closing the run (:func:`finish_if_complete`
    does that once every item is recorded). The heartbeat also watches the run's status: a run cancelled
    or closed elsewhere stops the batch (no new item starts). ``plan.prepare`` is the caller's (once per
    process). An error of the store is raised: the job fails and the queue retries it.
    """
    return _execute_locked(engine, run_id, plan, cancel=cancel or threading.Event(), on_progress=on_progress,
                           concurrency=concurrency, heartbeat_s=heartbeat_s, keys=set(keys))


def finish_if_complete(engine: Engine, run_id: int, plan: Plan) -> str | None:
    """Close ``run_id`` with ``plan``'s aggregates once every item is recorded; returns its status, or None
    while items are missing (or another process is closing it right now). Whoever records the last item
    calls this; the run's execution lock makes exactly one caller finalize, a closed run is left as it is."""
    counts = runs.count_items(engine, run_id)
    if counts.get("done", 0) + counts.get("failed", 0) < len(plan.items):
        return None
    try:
        with runs.execution_lock(engine, run_id):
            run = runs.get_run(engine, run_id)
            if run is None or run.status != "running":
                return run.status if run is not None else None
            prog = Progress(run_id=run_id, total=len(plan.items), done=counts.get("done", 0),
                            failed=counts.get("failed", 0))
            return _finalize(engine, run_id, plan, prog, cancelled=False, emit=lambda: None,
                             update_cost=lambda: None).status
    except AlreadyRunning:
        return None


def _execute_locked(
    engine: Engine,
    run_id: int,
    plan: Plan,
    *,
    cancel: threading.Event,
    on_progress: ProgressCallback | None,
    concurrency: int | None,
    heartbeat_s: float,
    keys: set[str] | None = None,
) -> Progress:
    workers = max(1, int(concurrency or plan.concurrency or 1))
    counts = runs.count_items(engine, run_id)
    recorded = runs.completed_keys(engine, run_id, include_failed=True)
    todo = [(k, p) for k, p in plan.items if k not in recorded and (keys is None or k in keys)]
    prog = Progress(run_id=run_id, total=len(plan.items), done=counts.get("done", 0), failed=counts.get("failed", 0))
    prog.skipped = prog.finished
    lock = threading.Lock()
    t0 = time.perf_counter()
    eta = ItemRateEta()
    meter = UsageMeter()
    prices: dict[str, Any] = {}
    if prog.skipped:  # a resume: tokens and money over the whole run, not only this execution
        try:
            # heavy: keeps llm.prices out of `--help` (+1 ms)
            from voproshalych_eval.llm.prices import run_usage

            before = run_usage(engine, run_id)
            meter.seed(before["per_model"])
            prog.tokens = int(before.get("prompt_tokens") or 0) + int(before.get("completion_tokens") or 0)
        except Exception:  # noqa: BLE001 - a progress nicety, never a reason to fail the run
            log.warning("could not read the earlier usage of run %s", run_id, exc_info=True)

    def update_cost() -> None:
        used = meter.snapshot()
        if not used:
            return
        # heavy: keeps llm.prices out of `--help` (+1 ms)
        from voproshalych_eval.llm.prices import price_table, summarize_usage

        if not prices:
            prices.update(price_table(engine))
        summary = summarize_usage(used, prices)
        prog.llm, prog.cost_usd = summary["per_model"], summary["cost_usd"]
        retries = meter.retries()
        prog.retries = retries if retries["retried"] else None

    def emit() -> None:
        if on_progress is None:
            return
        with lock:
            now = time.perf_counter()
            prog.elapsed_s = now - t0
            eta.observe(now, prog.finished - prog.skipped)
            prog.measured_eta_s = eta.eta(now, prog.total - prog.finished)
            update_cost()
            snap = Progress(**{k: getattr(prog, k) for k in prog.__dataclass_fields__})
        try:
            on_progress(snap)
        except Exception:  # noqa: BLE001 - a broken progress display must not kill the run
            log.exception("progress callback failed")

    def note(message: str) -> None:
        with lock:
            prog.message = message
        emit()

    # finished items of per-item plans are written by the calling thread in batches — everything finished since it
    # last woke (at each completion, at least every 0.5 s): one transaction and one run-row update per batch, not
    # per item (issue 28); a batch plan's items are written as its work yields them
    buffer: list[tuple[str, ItemResult]] = []
    buf_lock = threading.Lock()

    def record(done_items: list[tuple[str, ItemResult]]) -> None:
        with buf_lock:
            buffer.extend(done_items)
        if plan.work_batch is not None:  # a batch plan's items are written as they come (progress inside a batch)
            flush()

    def flush() -> None:
        with buf_lock:
            done_items = list(buffer)
            buffer.clear()
        if not done_items:
            return
        added = runs.record_items(engine, run_id, [(k, r.result, r.status, r.error) for k, r in done_items])
        with lock:
            for key, r in done_items:
                prog.tokens += int(r.tokens or 0)
                if key in added:  # a key recorded meanwhile by someone else is not counted twice
                    if r.status == "done":
                        prog.done += 1
                    else:
                        prog.failed += 1
                        prog.last_error = r.error
        emit()

    def failed(exc: BaseException) -> ItemResult:
        log.debug("work failed:\n%s", traceback.format_exc())
        return ItemResult({}, status="failed", error=_short_error(exc))

    def task(batch: list[tuple[str, Any]]) -> None:
        if cancel.is_set():
            return
        if plan.work_batch is None:
            key, payload = batch[0]
            try:
                with metering(meter, run_id):
                    res = _as_result(plan.work(payload))  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001 - recorded as a failed item, retried on resume
                res = failed(exc)
            record([(key, res)])
            return
        pending = list(batch)
        try:
            with metering(meter, run_id):
                outs: Iterable[Any] = plan.work_batch([p for _, p in batch])
                if isinstance(outs, Iterator):  # a generator does its work as it is consumed: meter that too
                    outs = _metered(outs, meter, run_id)
            if isinstance(outs, list | tuple):
                if len(outs) != len(batch):
                    raise RuntimeError(f"work_batch returned {len(outs)} results for {len(batch)} items")
                record([(k, _as_result(o)) for (k, _), o in zip(batch, outs, strict=True)])
                pending = []
            else:
                for out in outs:
                    if not pending:
                        raise RuntimeError("work_batch yielded more results than items")
                    key, _ = pending.pop(0)
                    record([(key, _as_result(out))])
                if pending:
                    raise RuntimeError(f"work_batch yielded {len(batch) - len(pending)} results for {len(batch)} items")
        except Exception as exc:  # noqa: BLE001 - the batch's remaining items fail (retried on resume)
            res = failed(exc)
            if pending:
                record([(k, res) for k, _ in pending])

    stop_beat = threading.Event()

    def beat() -> None:
        while not stop_beat.wait(heartbeat_s):
            try:
                runs.heartbeat(engine, run_id)
                if keys is not None:  # a batch: the run may be cancelled (or closed) by another process
                    run = runs.get_run(engine, run_id)
                    if run is None or run.status != "running":
                        cancel.set()
            except Exception:  # noqa: BLE001
                log.warning("heartbeat failed for run %s", run_id)

    if keys is None:
        runs.mark_running(engine, run_id)
    else:
        runs.heartbeat(engine, run_id)
    plan.run_id = run_id
    plan.listen(note)
    beater = threading.Thread(target=beat, name=f"heartbeat-{run_id}", daemon=True)
    beater.start()
    emit()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"run{run_id}")
    try:
        if todo and plan.prepare is not None and keys is None and not cancel.is_set():
            with metering(meter, run_id):
                plan.prepare()
        tasks = _batches(todo, plan.batch_size) if plan.work_batch is not None else [[kp] for kp in todo]
        pending: set[Future[None]] = set()
        # finished futures arrive on a queue (a done-callback): waiting on every pending future for each
        # completion (``futures.wait``) cost 16 % of a 64-way judge run's CPU (issue 28)
        finished_q: queue.SimpleQueue[Future[None]] = queue.SimpleQueue()
        it = iter(tasks)
        exhausted = False
        while True:
            while not exhausted and not cancel.is_set() and len(pending) < workers * 2:
                nxt = next(it, None)
                if nxt is None:
                    exhausted = True
                    break
                fut = pool.submit(task, nxt)
                pending.add(fut)
                fut.add_done_callback(finished_q.put)
            if not pending:
                break
            if cancel.is_set():
                for f in pending:
                    f.cancel()
                break
            try:
                finished = [finished_q.get(timeout=0.5)]
            except queue.Empty:
                flush()  # items of a batch plan recorded while its task still runs
                continue
            while True:
                try:
                    finished.append(finished_q.get_nowait())
                except queue.Empty:
                    break
            for f in finished:
                pending.discard(f)
                f.result()  # ``task`` never raises except on database errors: let those surface
            flush()
    except BaseException as exc:
        cancel.set()
        pool.shutdown(wait=False, cancel_futures=True)
        try:
            flush()  # what finished is kept (a resume does not redo it)
        except Exception:  # noqa: BLE001
            log.exception("could not record the last finished items of run %s", run_id)
        stop_beat.set()
        plan.listen(None)
        interrupted = isinstance(exc, KeyboardInterrupt)
        if keys is not None:  # a batch job: the queue retries it; the run stays open for the other batches
            raise
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
    pool.shutdown(wait=True, cancel_futures=True)
    flush()
    stop_beat.set()
    plan.listen(None)
    if keys is not None:  # one batch of a queued run: the run is closed by finish_if_complete
        prog.status = "cancelled" if cancel.is_set() else "batch_done"
        emit()
        return prog
    return _finalize(engine, run_id, plan, prog, cancelled=cancel.is_set(), emit=emit, update_cost=update_cost,
                     lock=lock)


def _finalize(engine: Engine, run_id: int, plan: Plan, prog: Progress, *, cancelled: bool,
              emit: Callable[[], None], update_cost: Callable[[], None],
              lock: threading.Lock | None = None) -> Progress:
    """Aggregate every recorded item of the run and close it with :func:`runs.outcome`."""
    try:
        metrics = with_cost(engine, run_id, plan.finalize(runs.item_records(engine, run_id)))
    except Exception as exc:  # noqa: BLE001
        log.exception("finalize failed for run %s", run_id)
        runs.fail_run(engine, run_id, "aggregation failed: " + _short_error(exc))
        prog.status = "failed"
        prog.last_error = _short_error(exc)
        emit()
        raise
    final_counts = runs.count_items(engine, run_id)
    status = runs.outcome(final_counts, cancelled=cancelled, max_failure_share=_max_failure_share(plan))
    error = None
    unjudged = None if status == "cancelled" else runs.too_few_judged(metrics, _min_judged_share())
    if status == "failed":
        last = prog.last_error or runs.last_item_error(engine, run_id)
        error = f"every item failed ({final_counts.get('failed', 0)}); last error: {last}"
    elif unjudged is not None:
        status, error = "failed", unjudged
    elif status == "done_with_failures":
        error = (f"{final_counts.get('failed', 0)} of {final_counts.get('done', 0) + final_counts.get('failed', 0)} "
                 f"items failed (more than {_max_failure_share(plan):.0%})")
    runs.finish_run(engine, run_id, metrics, status=status, error=error)
    from voproshalych_eval.engine.alerts import on_run_finished  # heavy: defers httpx, rich (via alerts)

    on_run_finished(engine, run_id)  # one alert per change of the verdict / a schedule's outcome (never raises)
    prog.status = status
    prog.metrics = metrics
    prog.message = None
    if lock is not None:
        with lock:
            update_cost()
    emit()
    return prog


def _metered(outs: Iterator[Any], meter: UsageMeter, run_id: int) -> Iterator[Any]:
    """Each result of a generator ``work_batch`` produced under the execution's usage meter."""
    while True:
        with metering(meter, run_id):
            try:
                out = next(outs)
            except StopIteration:
                return
        yield out


def with_cost(engine: Engine, run_id: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics`` plus ``cost_usd``: per model ``{"value": USD or None (unknown), tokens, calls}`` and
    ``total``, from the run's logged LLM calls (nothing added for a run without LLM calls)."""
    from voproshalych_eval.llm.prices import run_usage  # heavy: keeps llm.prices out of `--help` (+1 ms)

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
        # repeated LLM requests (after a timeout, a 429, a 5xx) and the calls they rescued, every execution counted
        out["llm_retries"] = used.get("retries", 0)
        out["llm_recovered"] = used.get("recovered", 0)
        out["llm_failed_calls"] = used.get("failed_calls", 0)
    return out


def run_plan(
    engine: Engine,
    plan: Plan,
    *,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    concurrency: int | None = None,
) -> tuple[int, Progress]:
    """Create a run for ``plan`` and execute it in the foreground (the CLI path)."""
    run_id = create_run(engine, plan)
    return run_id, execute(engine, run_id, plan, on_progress=on_progress, cancel=cancel, concurrency=concurrency)


# ------------------------------------------------------------------ background jobs (the app path)


PlanFactory = Callable[[], Plan]


class NothingToRun(VoproshalychEvalError, ValueError):
    """The plan a factory built has no items (nothing to evaluate): no run is created."""


class Job:
    """A plan executing in a background thread of this process; survives Streamlit reruns.

    Started from a plan factory (:func:`start_background`), the job first *builds* the plan in its thread
    (``building`` is True, ``run_id`` None): snapshot taking, model loading, dataset reading stay off the
    caller's thread; a build error ends the job with ``error`` set and no run. Once built, the run is
    created (``run_id``) and executed. ``plan.outputs`` holds the plan's in-memory artefacts once it has
    run (figures for a page).
    """

    def __init__(self, engine: Engine, run_id: int | None, plan: Plan | PlanFactory, *, retry_failed: bool = False,
                 mixed_reason: str | None = None, actor: str | None = None, actor_role: str | None = None) -> None:
        self.engine = engine
        self.actor, self.actor_role = actor, actor_role
        self.run_id = run_id
        self.key = uuid.uuid4().hex  # names the job before it has a run (``get_job(key)``)
        self.plan: Plan | None = plan if isinstance(plan, Plan) else None
        self._factory: PlanFactory | None = None if isinstance(plan, Plan) else plan
        self.cancel_event = threading.Event()
        self.progress = Progress(run_id=run_id or 0, total=len(self.plan.items) if self.plan is not None else 0,
                                 message=None if self.plan is not None else "preparing the run…")
        self.error: str | None = None
        self.nothing_to_run = False  # the factory's plan had no items
        self.started = time.time()
        self._retry_failed = retry_failed
        self._mixed_reason = mixed_reason
        self._thread = threading.Thread(target=self._main, name=f"job-{run_id or self.key[:8]}", daemon=True)

    @property
    def building(self) -> bool:
        """The plan is still being built (no run yet)."""
        return self.run_id is None and self.error is None and self.alive

    def _update(self, p: Progress) -> None:
        self.progress = p

    def _fail(self, exc: BaseException) -> None:
        self.error = str(exc) if isinstance(exc, AlreadyRunning | NothingToRun) else _short_error(exc)
        self.progress.status = "failed"
        self.progress.last_error = self.error

    def _build(self) -> bool:
        """Build the plan and create its run (the factory path); False when that failed (``error`` set)."""
        assert self._factory is not None
        try:
            plan = self._factory()
            if not plan.items:
                self.nothing_to_run = True
                raise NothingToRun("Nothing to evaluate: the plan has no items.")
            if self.cancel_event.is_set():
                self.progress.status = "cancelled"
                return False
            run_id = create_run(self.engine, plan, actor=self.actor, actor_role=self.actor_role)
        except Exception as exc:  # noqa: BLE001 - kept for the page to show as a sentence
            log.log(logging.INFO if isinstance(exc, NothingToRun) else logging.ERROR, "building a plan failed",
                    exc_info=not isinstance(exc, NothingToRun))
            self._fail(exc)
            return False
        self.plan = plan
        self.progress = Progress(run_id=run_id, total=len(plan.items))
        with _JOBS_LOCK:
            _JOBS[run_id] = self
        self.run_id = run_id
        return True

    def _main(self) -> None:
        if self.plan is None and not self._build():
            return
        assert self.plan is not None and self.run_id is not None
        try:
            self.progress = execute(self.engine, self.run_id, self.plan, cancel=self.cancel_event,
                                    on_progress=self._update, retry_failed=self._retry_failed,
                                    mixed_reason=self._mixed_reason)
        except Exception as exc:  # noqa: BLE001 - kept for the page to show as a sentence
            log.exception("background run %s failed", self.run_id)
            self._fail(exc)

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
_BUILDING: dict[str, Job] = {}  # jobs started from a factory, by key (also kept once built)
_JOBS_LOCK = threading.Lock()


def _start_job(engine: Engine, run_id: int, plan: Plan, **kwargs: Any) -> Job:
    with _JOBS_LOCK:
        existing = _JOBS.get(run_id)
        if existing is not None and existing.alive:
            return existing
        job = Job(engine, run_id, plan, **kwargs)
        _JOBS[run_id] = job
    return job.start()


def start_background(engine: Engine, plan: Plan | PlanFactory, *, actor: str | None = None,
                     actor_role: str | None = None) -> Job:
    """Execute a plan in a background thread; returns its :class:`Job` at once.

    Given a :class:`Plan`, its run is created here first (``job.run_id`` is set on return). Given a plan
    factory (a callable returning the plan), the factory runs in the job's thread — ``build_plan`` may be
    heavy (taking a snapshot, loading a model) — and the run is created once it returns; until then
    ``job.building`` is True and ``job.run_id`` None (find the job again with ``get_job(job.key)``). A
    factory error (or a plan without items: ``job.nothing_to_run``) ends the job with ``job.error``.
    """
    if isinstance(plan, Plan):
        return _start_job(engine, create_run(engine, plan, actor=actor, actor_role=actor_role), plan)
    job = Job(engine, None, plan, actor=actor, actor_role=actor_role)
    with _JOBS_LOCK:
        _BUILDING[job.key] = job
    return job.start()


def register_building(job: Job) -> None:
    """Make a job started from a plan factory findable by its key (a subclass started elsewhere: the queue's)."""
    with _JOBS_LOCK:
        _BUILDING[job.key] = job


def get_job(run_id: int | str | None) -> Job | None:
    """The job of this process executing ``run_id`` (alive or finished), if any; a ``str`` is a job's ``key``
    (a job started from a plan factory, before and after its run exists)."""
    if run_id is None:
        return None
    with _JOBS_LOCK:
        if isinstance(run_id, str):
            return _BUILDING.get(run_id)
        return _JOBS.get(int(run_id))


def job_alive(run_id: int) -> bool:
    """Whether a job of this process executes ``run_id`` right now (the liveness check of :func:`run_state`)."""
    job = get_job(run_id)
    return job is not None and job.alive


def is_alive(run_id: int) -> bool:
    """Whether ``run_id`` executes now: a job of this process, or its batch jobs on the queue (waiting for
    a worker or being worked, on any machine) — the liveness check of :func:`runs.run_state`."""
    if job_alive(run_id):
        return True

    return runs.queue_alive(get_engine(), run_id)


def active_jobs() -> list[Job]:
    """Jobs of this process running (or building their plan) now."""
    with _JOBS_LOCK:
        return [j for j in {id(j): j for j in (*_JOBS.values(), *_BUILDING.values())}.values() if j.alive]


def cancel_run(engine: Engine, run_id: int) -> bool:
    """Cancel ``run_id``: signal its job in this process, or (if no process executes it) mark it cancelled."""
    job = get_job(run_id)
    if job is not None and job.alive:
        job.cancel()
        return True
    run = runs.get_run(engine, run_id)
    if run is not None and run.status == "running":
        if runs.is_locked(engine, run_id):
            raise AlreadyRunning(f"Run {run_id} is executing in another process ({runs.lock_holder(engine, run_id)}); "
                                 "cancel it there.")
        runs.set_status(engine, run_id, "cancelled", error="cancelled")
        return True
    return False


# ------------------------------------------------------------------ state, resume


def run_state(engine: Engine, run_id: int) -> str:
    """``running`` | ``interrupted`` | a stored status | ``unknown`` (:func:`runs.run_state` with this
    process's jobs as the liveness check)."""
    run = runs.get_run(engine, run_id)
    if run is None:
        return "unknown"
    return runs.run_state(run, alive=lambda rid: job_alive(rid) or runs.queue_alive(engine, rid))


def build_plan_for(engine: Engine, run: runs.Run) -> Plan:
    """Rebuild a run's plan from its plan module, its stored parameters and its stored dataset (by id)."""
    try:
        module_name = spec(run.tier).module
    except KeyError as exc:
        raise ValueError(f"run {run.id} (plan {run.tier}) cannot be resumed: {exc.args[0]}") from None
    params = dict(run.params)
    if run.dataset_id is not None:
        params["dataset"] = run.dataset_id  # the stored copy: never re-read a path or a newer version
    module = importlib.import_module(module_name)
    plan: Plan = module.build_plan(engine, params)
    plan.label = run.label
    return plan


def dataset_differences(engine: Engine, run: runs.Run) -> list[str]:
    """The run's dataset as stored must still hash to the hash it started with."""
    if not run.dataset_hash:
        return []

    if run.dataset_id is None:
        return [f"dataset {run.dataset_name!r} ({run.dataset_hash[:12]}) was deleted from the store"]
    try:
        ds = datasets.get_dataset(engine, run.dataset_id)
    except LookupError:
        return [f"dataset {run.dataset_name!r} (id {run.dataset_id}) no longer exists in the store"]
    now = datasets.content_hash(ds.records)
    if now != run.dataset_hash:
        return [f"dataset {run.dataset_name!r} (id {run.dataset_id}) changed since the run started: "
                f"content hash {run.dataset_hash[:12]} at start, {now[:12]} now"]
    return []


def prepare_resume(engine: Engine, run_id: int, *, force: bool = False) -> tuple[Plan, str | None]:
    """Checks before resuming; returns the rebuilt plan and (when forced across a change) the mixed reason.

    Refuses (:class:`AlreadyRunning`) a run some process executes, and (:class:`ResumeRefused`) a run
    whose configuration the current one cannot reproduce (LLM missing, another model, prompt, endpoint,
    changed dataset…) unless ``force``.
    """
    run = runs.get_run(engine, run_id)
    if run is None:
        raise ValueError(f"run {run_id} does not exist")
    if job_alive(run_id):
        raise AlreadyRunning(f"Run {run_id} is already running in this process.")
    if runs.is_locked(engine, run_id):
        raise AlreadyRunning(f"Run {run_id} is already running ({runs.lock_holder(engine, run_id)}); "
                             "wait for it or cancel it.")
    if runs.queue_alive(engine, run_id):
        raise AlreadyRunning(f"Run {run_id} is on the job queue (batches waiting or being worked); wait for it "
                             "(`voproshalych-eval runs wait`) or cancel it.")
    diffs = dataset_differences(engine, run)
    try:
        plan = build_plan_for(engine, run)
    except (LookupError, FileNotFoundError, ValueError) as exc:
        if force:
            raise
        raise ResumeRefused(f"Run {run_id} cannot be resumed: its plan cannot be rebuilt ({exc}).") from exc
    if run.config:
        diffs += config_differences(run.config, plan.config())
    if diffs and not force:
        raise ResumeRefused(
            f"Run {run_id} cannot be resumed with the current configuration — it would mix settings:\n  - "
            + "\n  - ".join(diffs)
            + "\nRestore the configuration the run started with, start a new run, or pass --force to mix "
            "(the run is then marked mixed)."
        )
    return plan, ("; ".join(diffs) if diffs else None)


def resume(
    engine: Engine,
    run_id: int,
    *,
    retry_failed: bool = True,
    force: bool = False,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> Progress:
    """Finish only the missing (and, with ``retry_failed``, the failed) items of ``run_id`` in the foreground."""
    plan, mixed = prepare_resume(engine, run_id, force=force)
    return execute(engine, run_id, plan, on_progress=on_progress, cancel=cancel, retry_failed=retry_failed,
                   mixed_reason=mixed)


def resume_background(engine: Engine, run_id: int, *, retry_failed: bool = True, force: bool = False) -> Job:
    """:func:`resume` in a background thread (the app's "Resume" button); refusals raise at once."""
    plan, mixed = prepare_resume(engine, run_id, force=force)
    return _start_job(engine, run_id, plan, retry_failed=retry_failed, mixed_reason=mixed)


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
    from voproshalych_eval.llm.prices import format_cost  # heavy: keeps llm.prices out of `--help` (+1 ms)

    cost = f" · {format_cost(p.cost_usd)}" if p.llm else ""
    return (
        f"[run {p.run_id}] {p.finished}/{p.total} (failed {p.failed}) · tokens {p.tokens}{cost} · "
        f"ETA {format_eta(p.eta_s)}" + retries_text(p.retries) + (f" · {p.message}" if p.message else "")
    )


def retries_text(retries: Mapping[str, Any] | None) -> str:
    """`` · retried: timeout 3, rate_limited 1 (recovered 3)`` — empty when nothing was retried."""
    if not retries or not retries.get("retried"):
        return ""
    done = sum((retries.get("recovered") or {}).values())
    kinds = ", ".join(f"{k} {n}" for k, n in retries["retried"].items())
    return f" · retried: {kinds} (recovered {done})"
