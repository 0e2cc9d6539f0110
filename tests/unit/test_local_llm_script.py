"""scripts/local_llm.py before any download: compiler check, start deadline, a server that dies while starting."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("local_llm_script", ROOT / "scripts" / "local_llm.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_missing_compiler_is_reported_before_the_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ll = _script()
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no cc, no c++
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(SystemExit, match="needs a C compiler and a C\\+\\+ compiler.*build-essential"):
        ll.check_build_tools()
    cc = tmp_path / "cc"
    cc.write_text("#!/bin/sh\n")
    cc.chmod(0o755)
    with pytest.raises(SystemExit, match="needs a C\\+\\+ compiler \\(none of c\\+\\+, g\\+\\+, clang\\+\\+"):
        ll.check_build_tools()
    monkeypatch.setenv("CXX", "/opt/my/c++")  # named explicitly
    ll.check_build_tools()


def test_start_timeout_from_the_argument_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    ll = _script()
    monkeypatch.delenv("LOCAL_LLM_START_TIMEOUT", raising=False)
    assert ll.start_timeout() == 180
    monkeypatch.setenv("LOCAL_LLM_START_TIMEOUT", "900")
    assert ll.start_timeout() == 900 and ll.start_timeout(30) == 30
    monkeypatch.setenv("LOCAL_LLM_START_TIMEOUT", "soon")
    with pytest.raises(SystemExit, match="LOCAL_LLM_START_TIMEOUT must be a number.*'soon'"):
        ll.start_timeout()
    with pytest.raises(SystemExit, match="must be positive"):
        ll.start_timeout(0)


def test_a_server_that_exits_while_starting_stops_the_wait_with_its_log(tmp_path: Path) -> None:
    ll = _script()
    log = tmp_path / "chat.log"
    with log.open("ab") as fh:
        proc = subprocess.Popen([sys.executable, "-c", "print('loading model'); print('error: out of memory'); "
                                 "raise SystemExit(3)"], stdout=fh, stderr=subprocess.STDOUT)
    proc.wait()
    # a huge deadline: only the exit can end the wait
    with pytest.raises(SystemExit) as err:
        ll.wait_until_ready([("chat", 1, proc, log)], 3600, ready=lambda port: False, poll_s=0.01)
    msg = str(err.value)
    assert "chat server (port 1) exited with code 3 while starting" in msg and "error: out of memory" in msg


def test_wait_ends_when_every_server_answers_and_times_out_otherwise(tmp_path: Path) -> None:
    ll = _script()
    log = tmp_path / "embed.log"
    log.write_text("still loading\n", encoding="utf-8")
    answered: list[int] = []

    def ready(port: int) -> bool:
        answered.append(port)
        return port == 8080 or answered.count(8081) >= 3  # the second server answers on the third poll

    ll.wait_until_ready([("chat", 8080, None, log), ("embed", 8081, None, log)], 3600, ready=ready, poll_s=0.01)
    assert answered.count(8080) == 1 and answered.count(8081) == 3
    with pytest.raises(SystemExit, match=r"embed \(port 8081\) did not come up in 0.05 s(?s:.)*still loading"):
        ll.wait_until_ready([("embed", 8081, None, log)], 0.05, ready=lambda port: False, poll_s=0.01)


def test_threads_leave_a_core_free_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _script()
    monkeypatch.delenv("LOCAL_LLM_THREADS", raising=False)
    assert (mod.threads(1), mod.threads(2), mod.threads(4), mod.threads(64)) == (1, 1, 3, 8)
    monkeypatch.setenv("LOCAL_LLM_THREADS", "2")
    assert mod.threads(2) == 2
    monkeypatch.setenv("LOCAL_LLM_THREADS", "0")
    with pytest.raises(SystemExit, match="at least 1"):
        mod.threads()


def test_printed_variables_fit_a_one_at_a_time_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    mod = _script()
    monkeypatch.setenv("LOCAL_LLM_DIR", str(tmp_path))
    (tmp_path / "speed.json").write_text('{"tokens_per_s": 2.8, "threads": 1, "n_ctx": 4096}')
    mod.print_env()
    out = capsys.readouterr().out
    assert "export VOPROSHALYCH_EVAL_LLM_CONCURRENCY=1" in out
    assert f"export VOPROSHALYCH_EVAL_LLM_TIMEOUT={mod.call_timeout(2.8)}" in out and "2.8 tokens/s" in out
    assert "VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW=4096" in out
    # the timeout grows as the server slows down, 600 s when unmeasured
    assert 300 < mod.call_timeout(2.8) < mod.call_timeout(0.3) <= 7200 and mod.call_timeout(None) == 600


def test_stop_waits_until_the_server_is_gone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A server still finishing a request ignores SIGTERM for a while: ``stop`` returns only once it is gone."""
    mod = _script()
    monkeypatch.setenv("LOCAL_LLM_DIR", str(tmp_path))
    slow = ("import signal, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1.0), exit(0)))\n"
            "print('up', flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", slow], start_new_session=True, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    (tmp_path / "chat.pid").write_text(str(proc.pid))
    mod.stop(timeout=30)
    assert proc.poll() is not None or proc.wait(timeout=0.5) is not None  # gone (reaped here) when stop returned
    assert not (tmp_path / "chat.pid").exists()
