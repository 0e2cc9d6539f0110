"""Benchmark: LLM judge calls with bounded concurrency vs the ideal and vs the old sequential loop.

A local OpenAI-compatible server (the scripted test server in its own process, real sockets) answers every request after
200 ms with a valid judge JSON. We measure:

* ``concurrent``: 500 judge calls (structured output, cache off) through ``LLMClient.map_concurrent``
  at concurrency 8 — target <= 1.3x the ideal 500 x 0.2 s / 8 = 12.5 s;
* ``sequential``: the earlier benchmark's loop — one call, then a 2 s pause — measured on a small sample
  (10 calls by default) and extrapolated linearly to 500 calls (we do not sleep for ~18 minutes);
  target: the concurrent run is >= 50x faster.

Usage: ``python benchmarks/bench_llm_concurrency.py [--calls 500] [--concurrency 8] [--latency 0.2]
[--sequential-sample 10] [--pause 2.0]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from voproshalych_eval.llm import LLMClient, Provider  # noqa: E402
from voproshalych_eval.llm.prompts import SCHEMAS, render  # noqa: E402


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": render("faithfulness", question=f"Вопрос {i}?", context=f"Контекст {i}.",
                                               answer=f"Ответ {i}.")}]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--sequential-sample", type=int, default=10)
    ap.add_argument("--pause", type=float, default=2.0)
    a = ap.parse_args()

    # The server runs in its own process (as a real local server would), so it does not share our GIL.
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.scripted_openai", "--delay", str(a.latency)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        base_url = (proc.stdout.readline() if proc.stdout else "").strip()
        client = LLMClient([Provider("local", base_url, None, ["judge"])], concurrency=a.concurrency, timeout=30)
        schema = SCHEMAS["faithfulness"]
        client.complete(messages(-1), model="judge", schema=schema, use_cache=False)  # warm-up (SDK import, mode)

        t0 = time.perf_counter()
        out = client.map_concurrent(
            lambda i: client.complete(messages(i), model="judge", schema=schema, use_cache=False, purpose="bench"),
            list(range(a.calls)),
        )
        concurrent_s = time.perf_counter() - t0
        failures = sum(isinstance(o, BaseException) for o in out)

        t0 = time.perf_counter()
        for i in range(a.sequential_sample):
            client.complete(messages(10_000 + i), model="judge", schema=schema, use_cache=False)
            time.sleep(a.pause)
        seq_sample_s = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    seq_per_call = seq_sample_s / a.sequential_sample
    seq_extrapolated = seq_per_call * a.calls
    ideal = a.calls * a.latency / a.concurrency
    r_ideal = concurrent_s / ideal
    speedup = seq_extrapolated / concurrent_s
    print(f"calls={a.calls} concurrency={a.concurrency} server latency={a.latency * 1000:.0f} ms; "
          f"failures={failures}")
    print(f"concurrent: {concurrent_s:.2f} s   ideal (calls x latency / concurrency): {ideal:.2f} s   "
          f"ratio to ideal: {r_ideal:.3f}x (target <= 1.3x) -> {'OK' if r_ideal <= 1.3 else 'MISSED'}")
    print(f"sequential with {a.pause:.1f} s pause: measured {a.sequential_sample} calls in {seq_sample_s:.2f} s "
          f"({seq_per_call:.3f} s/call), EXTRAPOLATED to {a.calls} calls: {seq_extrapolated:.0f} s")
    print(f"speed-up vs the sequential loop: {speedup:.1f}x (target >= 50x) -> {'OK' if speedup >= 50 else 'MISSED'}")
    return 0 if (r_ideal <= 1.3 and speedup >= 50 and failures == 0) else 1


if __name__ == "__main__":
    sys.exit(main())
