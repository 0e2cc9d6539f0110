"""Benchmark: judge calls at the provider's pace — wall time vs the ideal, client CPU per call, 429s honoured.

A local OpenAI-compatible server (the scripted test server in its own process, real sockets) answers every
request after ``--latency`` (200 ms) with a valid judge JSON, and every ``--every-429``-th request at once with
HTTP 429 and ``Retry-After: --retry-after`` (1 s). For each ``concurrency:calls`` scenario (default ``8:1000`` and
``64:1000``) the judge calls (structured output, cache off) go through ``LLMClient.map_concurrent``:

* **ideal** (computed from what happened in the same run): ``(calls x latency + n_429 x Retry-After) /
  concurrency`` — every slot busy all the time, each 429 costing exactly the wait the server asked for;
* **ratio** = wall time / ideal (issue 28 targets: <= 1.2x at concurrency 8, <= 1.5x at 64);
* **client CPU per call** = the process's CPU time / calls, sequentially against a server answering at once (target
  <= 1.5 ms; the server runs in another process), and during each scenario (higher on a busy machine: caches go
  cold while a thread waits for its reply);
* **max in flight** — the process-wide limit of the provider must hold (never above the concurrency);
* the server latency is measured in the same run (one call, no 429).

``--sequential-sample N`` also times the earlier loop (one call, then ``--pause`` seconds) on N calls and
extrapolates it (the first scenario's calls). ``--profile`` prints cProfile's top entries of the first scenario.

Usage: ``python benchmarks/bench_llm_concurrency.py [--scenarios 8:1000,64:1000] [--latency 0.2]
[--every-429 10] [--retry-after 1] [--sequential-sample 0] [--pause 2.0] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

if "--client-root" in sys.argv:  # before anything imports the package
    sys.path.insert(0, sys.argv[sys.argv.index("--client-root") + 1])

from voproshalych_eval.llm import LLMClient, Provider  # noqa: E402
from voproshalych_eval.llm.prompts import SCHEMAS, render  # noqa: E402

TARGETS = {8: 1.2, 64: 1.5}
CPU_TARGET_MS = 1.5


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": render("faithfulness", question=f"Вопрос {i}?", context=f"Контекст {i}.",
                                               answer=f"Ответ {i}.")}]


def server(latency: float, every_429: int, retry_after: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.scripted_openai", "--delay", str(latency),
                             "--every-429", str(every_429), "--retry-after", str(retry_after)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, (proc.stdout.readline() if proc.stdout else "").strip()


def scenario(conc: int, calls: int, a: argparse.Namespace, profile: bool) -> dict[str, float]:
    # a fresh server per scenario (its 429 counter restarts), in its own process: it does not share our GIL
    proc, base_url = server(a.latency, a.every_429, a.retry_after)
    try:
        client = LLMClient([Provider(f"bench{conc}", base_url, None, ["judge"])], concurrency=conc, timeout=30)
        schema = SCHEMAS["faithfulness"]
        client.complete(messages(-1), model="judge", schema=schema, use_cache=False)  # warm-up (SDK import, mode)
        t0 = time.perf_counter()
        client.complete(messages(-2), model="judge", schema=schema, use_cache=False)
        latency = time.perf_counter() - t0  # what one call costs end to end here, no 429
        before = client.usage()
        prof = cProfile.Profile() if profile else None
        cpu0, t0 = time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        out = client.map_concurrent(
            lambda i: client.complete(messages(i), model="judge", schema=schema, use_cache=False, purpose="bench"),
            list(range(calls)),
        )
        if prof:
            prof.disable()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        after = client.usage()
        # every request beyond one per call was a 429 answered at once (the server sends nothing else)
        n429 = after["http_requests"] - before["http_requests"] - calls
        limits = getattr(client, "_limits", None)  # absent in older clients (--before runs)
        in_flight = limits[client.providers[0].name].max_in_flight if limits else -1
        failures = sum(isinstance(o, BaseException) for o in out)
        ideal = (calls * latency + n429 * a.retry_after) / conc
        if prof:
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(15)
            print(s.getvalue())
        if a.sequential_sample:
            t0 = time.perf_counter()
            for i in range(a.sequential_sample):
                client.complete(messages(10_000 + i), model="judge", schema=schema, use_cache=False)
                time.sleep(a.pause)
            seq = (time.perf_counter() - t0) / a.sequential_sample * calls
            print(f"  sequential loop with a {a.pause:g} s pause, EXTRAPOLATED from {a.sequential_sample} calls to "
                  f"{calls}: {seq:.0f} s -> the concurrent run is {seq / wall:.1f}x faster")
        client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {"conc": conc, "calls": calls, "wall": wall, "ideal": ideal, "ratio": wall / ideal, "latency": latency,
            "n429": n429, "cpu_ms": cpu / calls * 1000, "in_flight": in_flight, "failures": failures}


def cpu_per_call(calls: int = 300) -> float:
    """Client CPU per call in ms, sequentially against a server that answers at once (what the client itself
    costs, without the cold caches of a busy machine between replies)."""
    proc, base_url = server(0.0, 0, 1.0)
    try:
        client = LLMClient([Provider("cpu", base_url, None, ["judge"])], concurrency=1, timeout=30)
        schema = SCHEMAS["faithfulness"]
        for i in range(20):  # warm-up
            client.complete(messages(-1 - i), model="judge", schema=schema, use_cache=False)
        cpu0 = time.process_time()
        for i in range(calls):
            client.complete(messages(i), model="judge", schema=schema, use_cache=False)
        return (time.process_time() - cpu0) / calls * 1000
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default="8:1000,64:1000", help="concurrency:calls, comma-separated")
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--every-429", type=int, default=10)
    ap.add_argument("--retry-after", type=float, default=1.0)
    ap.add_argument("--sequential-sample", type=int, default=0)
    ap.add_argument("--pause", type=float, default=2.0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--client-root", default=None, help="import voproshalych_eval from this checkout instead (a "
                    "'before' measurement of another branch in the same session)")
    a = ap.parse_args()
    ok = True
    print(f"load average {os.getloadavg()[0]:.1f}; server latency {a.latency * 1000:.0f} ms, every {a.every_429}th "
          f"request 429 with Retry-After {a.retry_after:g} s")
    seq_cpu = cpu_per_call()
    ok &= seq_cpu <= CPU_TARGET_MS
    print(f"client CPU per call, sequential against an instant server: {seq_cpu:.2f} ms (target <= {CPU_TARGET_MS})")
    for i, spec in enumerate(a.scenarios.split(",")):
        conc, calls = (int(x) for x in spec.split(":"))
        r = scenario(conc, calls, a, profile=a.profile and i == 0)
        target = TARGETS.get(conc, 1.5)
        good = r["ratio"] <= target and r["failures"] == 0 and r["in_flight"] <= conc
        if a.client_root:
            print(f"  (client code from {a.client_root})")
        ok &= good
        print(f"concurrency {conc:>3}, {calls} calls: {r['wall']:.2f} s vs ideal {r['ideal']:.2f} s "
              f"(measured call {r['latency'] * 1000:.0f} ms, {r['n429']} x 429 waited {a.retry_after:g} s) -> "
              f"ratio {r['ratio']:.2f}x (target <= {target}x); client CPU {r['cpu_ms']:.2f} ms/call; max in flight {r['in_flight']}; failures {r['failures']} -> "
              f"{'OK' if good else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
