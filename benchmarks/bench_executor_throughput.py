"""Executor throughput against a slow scripted OpenAI-compatible endpoint (every reply delayed).

Runs the show/no-show judge pipeline (1 LLM call per item) and Tier 2 (1 generation + 3 judge calls
per item) at concurrency 1 (baseline, same run) and 8, and prints items/s and the speed-up ratio.

    VOPROSHALYCH_EVAL_HOME=/tmp/bench .venv/bin/python benchmarks/bench_executor_throughput.py [--delay 0.2] [--items 48]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--items", type=int, default=48)
    args = ap.parse_args()
    from tests.support.scripted_openai import ScriptedOpenAI

    with ScriptedOpenAI(delay=args.delay) as srv:
        os.environ["OPENAI_BASE_URL"] = srv.base_url
        os.environ["OPENAI_API_KEY"] = "bench"
        from voproshalych_eval.config import get_settings
        from voproshalych_eval.db import get_engine
        from voproshalych_eval.demo import load_demo
        from voproshalych_eval.engine.executor import run_plan

        get_settings.cache_clear()
        eng = get_engine(get_settings())
        load_demo(eng)
        from sqlalchemy import text

        from voproshalych_eval.tiers import judge_pipeline, tier2

        cases = [
            ("judge-pipeline (1 call/item)", judge_pipeline.build_plan, {"calibrate": False}, args.items),
            ("tier2 (4 calls/item)", tier2.build_plan, {}, max(8, args.items // 2)),
        ]
        for name, build, extra, n in cases:
            rates = {}
            for conc in (1, 8):
                n_items = n if conc == 8 else max(4, n // 4)  # the baseline is 8x slower: fewer items
                plan = build(eng, {**extra, "limit": n_items, "concurrency": conc})
                srv.reset()  # (also clears the delay: set it again)
                srv.delay = args.delay
                with eng.begin() as conn:  # every call must reach the slow endpoint
                    conn.execute(text("DELETE FROM eval.llm_cache"))
                t0 = time.perf_counter()
                _, prog = run_plan(eng, plan)
                dt = time.perf_counter() - t0
                rates[conc] = prog.done / dt
                print(f"{name}: concurrency {conc}: {prog.done} items in {dt:.2f} s = {rates[conc]:.2f} items/s, "
                      f"{srv.count} calls, max in flight {srv.max_in_flight}, delay {args.delay} s")
            print(f"{name}: speed-up x{rates[8] / rates[1]:.2f} (ideal x8 with {args.delay} s replies)")


if __name__ == "__main__":
    main()
