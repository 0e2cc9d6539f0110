"""The bot API's requests-per-second limit against the production QA stand-in, 4 workers.

Baseline (same run): no limit. Then limits of 5 and 10 requests/s. Prints the request rate the server
saw (requests between the first and the last arrival / that time) and its ratio to the limit (about 1.0 when
the limit holds; arrival jitter moves it by a percent or so), and the unlimited rate for scale.

    .venv/bin/python benchmarks/bench_bot_api_rate.py [--requests 30] [--quick]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="12 requests")
    args = ap.parse_args()
    n = 12 if args.quick else args.requests
    from tests.support.production_qa import ProductionQA
    from voproshalych_eval.bot_api.client import BotApiClient
    from voproshalych_eval.bot_api.spec import spec_from_options

    with ProductionQA() as srv:
        questions = [f"Вопрос {i}" for i in range(n)]
        for q in questions:
            srv.answers[q] = ("Ответ.", "https://kb/page")
        base_rate = None
        for rps in (None, 5.0, 10.0):
            srv.requests.clear()
            spec = replace(spec_from_options(srv.base_url, preset="voproshalych"), rps=rps)
            client = BotApiClient(spec, secret=lambda name: None)
            with ThreadPoolExecutor(4) as pool:
                outcomes = list(pool.map(client.ask, questions))
            assert all(o.outcome == "answered" for o in outcomes)
            times = sorted(r.at for r in srv.posts())
            rate = (len(times) - 1) / (times[-1] - times[0]) if times[-1] > times[0] else float("inf")
            if rps is None:
                base_rate = rate
                print(f"no limit : {rate:8.1f} requests/s seen by the server (baseline)")
            else:
                print(f"limit {rps:4.1f}: {rate:8.2f} requests/s seen, ratio to the limit {rate / rps:.3f}, "
                      f"{base_rate / rate:.1f}x slower than unlimited")
            client.close()


if __name__ == "__main__":
    main()
