"""Helpers shared by CLI subcommands: JSON output, progress on stderr, engine from settings, exit codes."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import StatementError

from voproshalych_eval.db import get_engine
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.jsonable import jsonable


class Queued(VoproshalychEvalError):  # noqa: N818 - not an error: the command's work went to the job queue
    """Raised by a command that put its run on the job queue (``--queue``): the CLI exits 0 at once."""

    def __init__(self, run_id: int) -> None:
        super().__init__(f"run {run_id} queued")
        self.exit_code = 0
        self.run_id = run_id


def emit(obj: Any, as_json: bool, human: str | None = None) -> None:
    """Print one JSON object (``--json``) or a human summary on stdout."""
    if as_json:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=_default, indent=1) + "\n")
    else:
        sys.stdout.write((human if human is not None else json.dumps(obj, ensure_ascii=False, default=_default, indent=1)) + "\n")
    sys.stdout.flush()


def _default(o: Any) -> Any:
    return jsonable(o)


#: exit status of a command that executed a run, by the run's outcome
EXIT_CODES: dict[str, int] = {"done": 0, "failed": 1, "done_with_failures": 3, "cancelled": 4}
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_CODES_HELP = """exit codes:
  0    success (a run: done)
  1    the run failed (every item failed, or it crashed), or a quality gate failed (tier3 --min-pass-rate)
  2    error before or around a run: bad arguments or input, a refused resume (configuration changed),
       the run is already running in another process
  3    the run finished with more failed items than allowed (done_with_failures; see --max-failure-share)
  4    the run was cancelled: SIGTERM (`kill <pid>`) stops it after the items in flight (resumable)
  130  interrupted with Ctrl-C (the run is marked cancelled and can be resumed)"""


class RunCrashed(VoproshalychEvalError, RuntimeError):
    """A run's execution stopped on an error (e.g. the database crashed): exit 1, as the README documents."""

    exit_code = 1

    def __init__(self, run_id: int, exc: BaseException) -> None:
        super().__init__(f"run {run_id} crashed: {error_sentence(exc)} (resume it with `voproshalych-eval resume {run_id}`)")


def error_sentence(exc: BaseException) -> str:
    """The one sentence stderr shows for ``exc`` (the details — a traceback, the SQL and its parameters — only
    with ``-v``): a database error is its driver's first line, never the statement or its rows."""
    if isinstance(exc, StatementError):
        orig = exc.orig if exc.orig is not None else exc
        first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        return f"the database failed ({type(orig).__name__}: {first[:300]}; -v for details)"
    if type(exc).__module__.startswith("psycopg"):
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"the database failed ({type(exc).__name__}: {first[:300]}; -v for details)"
    return str(exc) or type(exc).__name__


def exit_code(status: str) -> int:
    """The exit status for a run outcome (see :data:`EXIT_CODES_HELP`)."""
    return EXIT_CODES.get(status, 1)


@contextmanager
def cancel_on_sigterm() -> Iterator[threading.Event]:
    """An event that SIGTERM (``kill <pid>``) sets while a run executes in the foreground: the executor then
    starts no new item, finishes the ones in flight and closes the run as ``cancelled`` (exit code 4,
    resumable). Off the main thread (an in-process caller) no handler is installed."""
    cancel = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return
    def on_term(*_: Any) -> None:
        if not cancel.is_set():  # acknowledged at once: the run stops after the items in flight
            os.write(2, b"SIGTERM received: cancelling - no new items; the ones in flight finish, then the run is "
                        b"marked cancelled (resumable with `resume RUN_ID`)\n")
        cancel.set()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield cancel
    finally:
        signal.signal(signal.SIGTERM, previous)


def progress(message: str) -> None:
    """Progress line on stderr (never pollutes ``--json`` stdout)."""
    print(message, file=sys.stderr, flush=True)


def engine() -> Engine:
    return get_engine()


def add_json_flag(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
