"""The job queue: throughput of one vs two worker processes on the same 200-item Tier 2 run, and the wall
time a queued run adds over a foreground run (start latency).

Against the scripted OpenAI-compatible endpoint with every reply delayed (LLM-bound work, as real judging
is), provider limit 16 requests in flight (shared by all workers through the store). Each worker:
``--concurrency 2`` jobs of 10 items, each with the plan's concurrency 4. Baseline (same run): the same
command in the foreground.

    VOPROSHALYCH_EVAL_HOME=/tmp/bench-queue .venv/bin/python benchmarks/bench_queue_workers.py [--items 200] [--delay 0.2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cli(*args: str, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "voproshalych_eval.cli", *args, "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode not in (0,):
        raise SystemExit(f"{args[0]} exited {out.returncode}: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--quick", action="store_true", help="40 items")
    args = ap.parse_args()
    n = 40 if args.quick else args.items
    from tests.support.golden_copies import golden_copies
    from tests.support.scripted_openai import ScriptedOpenAI

    with ScriptedOpenAI(delay=args.delay) as srv:
        os.environ.update(OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="bench", VOPROSHALYCH_EVAL_LLM_MODELS="m",
                          VOPROSHALYCH_EVAL_LLM_CONCURRENCY="16")
        from sqlalchemy import text

        from voproshalych_eval.config import get_settings
        from voproshalych_eval.db import get_engine
        from voproshalych_eval.demo import load_demo
        from voproshalych_eval.engine.job_queue import store_conninfo

        get_settings.cache_clear()
        eng = get_engine(get_settings())
        load_demo(eng)
        env = dict(os.environ, VOPROSHALYCH_EVAL_STORE_URL=store_conninfo())
        tmp = Path(tempfile.mkdtemp(prefix="bench-queue-"))

        def first_item_after_start(run_id: int) -> float:
            """Seconds from the run's creation to its first recorded item (what a worker adds: pick-up + rebuild)."""
            with eng.connect() as conn:
                return float(conn.execute(text(
                    "SELECT extract(epoch FROM min(i.created_at) - r.started_at) FROM eval.run_items i "
                    "JOIN eval.runs r ON r.id = i.run_id WHERE r.id = :r GROUP BY r.started_at"), {"r": run_id}).scalar())

        def steady_rate(run_id: int) -> float:
            """Items per second between the run's first and last recorded item (the start left out)."""
            with eng.connect() as conn:
                n_rec, span = conn.execute(text(
                    "SELECT count(*), extract(epoch FROM max(created_at) - min(created_at)) FROM eval.run_items "
                    "WHERE run_id = :r"), {"r": run_id}).one()
            return (int(n_rec) - 1) / float(span) if span else float("nan")

        def fresh(tag: str) -> str:  # distinct questions per case: every request reaches the slow endpoint
            with eng.begin() as conn:
                conn.execute(text("DELETE FROM eval.llm_cache"))
            return str(golden_copies(eng, tmp / f"{tag}.json", n, tag=tag))

        run_args = ["--concurrency", "4"]
        t0 = time.perf_counter()
        fg = cli("tier2", "--dataset", fresh("fg"), *run_args, env=env)
        t_fg = time.perf_counter() - t0
        lat_fg = first_item_after_start(fg["run_id"])
        print(f"foreground: {fg['n_done']} items in {t_fg:.1f} s = {n / t_fg:.2f} items/s (baseline); "
              f"first item {lat_fg:.2f} s after the run was created")

        rates: dict[int, float] = {}
        steady: dict[int, float] = {}
        print(f"foreground steady rate (first to last item): {steady_rate(fg['run_id']):.2f} items/s")
        for n_workers in (1, 2):
            workers = [subprocess.Popen([sys.executable, "-m", "voproshalych_eval.cli", "worker", "--concurrency", "2"],
                                        cwd=ROOT, env=dict(env, VOPROSHALYCH_EVAL_HOME=str(tmp / f"w{n_workers}-{i}")),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                       for i in range(n_workers)]
            time.sleep(15)  # the workers are up and idle: what is measured is the queue, not their start
            try:
                t0 = time.perf_counter()
                q = cli("tier2", "--dataset", fresh(f"q{n_workers}"), *run_args, "--queue", "--batch-items", "10", env=env)
                done = cli("runs", "wait", str(q["run_id"]), env=env)
                dt = time.perf_counter() - t0
            finally:
                for w in workers:
                    w.send_signal(signal.SIGTERM)
                for w in workers:
                    w.wait(60)
            assert done["status"] == "done" and done["n_done"] == n, done
            rates[n_workers] = n / dt
            steady[n_workers] = steady_rate(q["run_id"])
            lat = first_item_after_start(q["run_id"])
            print(f"queued, {n_workers} worker(s): {n} items in {dt:.1f} s = {rates[n_workers]:.2f} items/s "
                  f"({dt - t_fg:+.1f} s vs foreground); first item {lat:.2f} s after enqueueing: "
                  f"start latency added by the queue {lat - lat_fg:+.2f} s")
        print(f"throughput ratio two workers / one worker: {rates[2] / rates[1]:.2f} (wall time, start included); "
              f"{steady[2] / steady[1]:.2f} between the first and the last item "
              f"({steady[1]:.2f} -> {steady[2]:.2f} items/s)")
        print(f"max LLM requests in flight seen by the server: {srv.max_in_flight} (limit 16)")


if __name__ == "__main__":
    main()
