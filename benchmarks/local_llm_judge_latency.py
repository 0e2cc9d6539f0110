"""Judge latency on a real local LLM server (``make local-llm``) vs the client's own overhead.

Runs N faithfulness judge calls (structured output, cache off, one at a time) against the llama.cpp server
and, as the baseline measured in the same run, the same N calls against the scripted server in its own
process (no model: what the client, the SDK and HTTP cost). Prints p50 / p95 latency of both, their ratio,
the structured-output mode the real server ended up in, and tokens per second.

Usage: ``python benchmarks/local_llm_judge_latency.py [--url http://127.0.0.1:8080/v1] [--model qwen2.5-1.5b]
[--calls 20]`` (exits 0 with a note when no server answers).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from voproshalych_eval.llm import LLMClient, Provider  # noqa: E402
from voproshalych_eval.llm.prompts import SCHEMAS, render  # noqa: E402

FACTS = [
    ("Когда платят стипендию?", "Стипендия выплачивается 25 числа каждого месяца.", "Стипендию платят 25 числа."),
    ("Где общежитие №1?", "Общежитие №1 находится на улице Мельникайте, 44.", "На улице Ленина."),
    ("Сколько длится сессия?", "Зимняя сессия длится три недели в январе.", "Сессия длится три недели."),
    ("Как получить справку?", "Справку об обучении выдаёт деканат за 3 рабочих дня.", "Справку выдаёт деканат."),
    ("Есть ли военная кафедра?", "Военный учебный центр принимает студентов очной формы.", "Да, есть военный центр."),
]


def messages(i: int) -> list[dict[str, str]]:
    q, c, a = FACTS[i % len(FACTS)]
    return [{"role": "user", "content": render("faithfulness", question=f"{q} ({i})", context=c, answer=a)}]


def measure(client: LLMClient, model: str, n: int) -> tuple[list[float], int, int]:
    lat, tokens, failures = [], 0, 0
    for i in range(n):
        t0 = time.perf_counter()
        try:
            r = client.complete(messages(i), model=model, schema=SCHEMAS["faithfulness"], use_cache=False)
            tokens += r.completion_tokens or 0
        except Exception:  # noqa: BLE001 - counted
            failures += 1
        lat.append(time.perf_counter() - t0)
    return lat, tokens, failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default="qwen2.5-1.5b")
    ap.add_argument("--calls", type=int, default=20)
    a = ap.parse_args()
    try:
        urllib.request.urlopen(a.url.rstrip("/") + "/models", timeout=120).read()  # noqa: S310 - loopback
    except OSError:
        print(f"no LLM server at {a.url}: run `make local-llm` first")
        return 0

    real = LLMClient([Provider("local", a.url, None, [a.model])], concurrency=1, timeout=600)
    real.complete(messages(-1), model=a.model, schema=SCHEMAS["faithfulness"], use_cache=False)  # warm-up, mode probe
    lat, tokens, failures = measure(real, a.model, a.calls)

    proc = subprocess.Popen([sys.executable, "-m", "tests.support.scripted_openai"], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        base = (proc.stdout.readline() if proc.stdout else "").strip()
        scripted = LLMClient([Provider("scripted", base, None, ["judge"])], concurrency=1, timeout=30)
        scripted.complete(messages(-1), model="judge", schema=SCHEMAS["faithfulness"], use_cache=False)
        base_lat, _, _ = measure(scripted, "judge", a.calls)
    finally:
        proc.terminate()

    p50, p95 = np.percentile(lat, 50), np.percentile(lat, 95)
    b50, b95 = np.percentile(base_lat, 50), np.percentile(base_lat, 95)
    print(f"local LLM judge ({a.model}, {a.calls} faithfulness calls, cache off, one at a time):")
    print(f"  p50 {p50:.2f} s, p95 {p95:.2f} s, failures {failures}, structured mode {real.structured_mode(a.model)}, "
          f"{tokens / sum(lat):.1f} completion tokens/s")
    print(f"client overhead (scripted server, same calls): p50 {b50 * 1000:.1f} ms, p95 {b95 * 1000:.1f} ms")
    print(f"ratio model / overhead: p50 {p50 / b50:.0f}x, p95 {p95 / b95:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
