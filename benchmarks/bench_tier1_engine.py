"""Benchmark: Tier 1 through the run engine keeps its batched retrieval.

Tier 1 is a plan whose ``work_batch`` embeds and retrieves ``batch_size`` questions together and records
each question as its own item. This measures, in one process on one scratch database (the demo loaded
into a temporary embedded server, or ``--database-url``), on the demo golden questions repeated to
``--questions`` items (distinct keys, cached embeddings):

* **direct** — the whole set retrieved in one batched call and scored, nothing recorded (the lower bound:
  what the pre-engine ``run_tier1`` did before writing the run);
* **engine, batch 500** — the plan executed by the engine (default batch size), every item recorded;
* **engine, batch 1** — the same plan one question per batch (what a per-item engine would cost).

Printed: wall-clock seconds and the ratios against *direct*, measured in the same run.

Usage::

    .venv/bin/python benchmarks/bench_tier1_engine.py [--questions 1088] [--retriever vector] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=1088)
    ap.add_argument("--retriever", choices=("vector", "fts", "hybrid"), default="vector")
    ap.add_argument("--database-url", default=None, help="a scratch database (default: a temporary embedded server)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 136 questions")
    args = ap.parse_args()
    n_q = 136 if args.quick else args.questions

    tmp = Path(tempfile.mkdtemp(prefix="bench-tier1-engine-"))
    os.environ["VOPROSHALYCH_EVAL_HOME"] = str(tmp / "home")
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(ROOT))
    from voproshalych_eval.datasets import store as datasets
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.embeddings import cached_embedder
    from voproshalych_eval.engine import executor
    from voproshalych_eval.tiers import tier1

    try:
        engine = get_engine()
        load_demo(engine)
        golden = datasets.get_dataset(engine, "demo_golden", "golden")
        records = [dict(golden.records[i % len(golden)], id=f"b{i:05d}") for i in range(n_q)]
        ds = datasets.store(engine, datasets.Dataset("bench_golden", "golden", records, datasets.content_hash(records)))
        name = tier1.default_embedder_name(engine)
        emb = cached_embedder(name, engine)
        questions = [str(r["question"]) for r in records]
        emb.encode_queries(questions)  # warm the embedding cache: every variant reads the same vectors
        params = {"dataset": ds.id, "retriever": args.retriever, "embedder": name, "k": 10, "n_resamples": 200}

        def direct() -> None:
            hits = tier1.retrieve(engine, questions, retriever=args.retriever, embedder=emb, k=10)
            tier1.question_items(records, questions, hits)

        def engine_run(batch: int) -> None:
            plan = tier1.build_plan(engine, {**params, "batch_size": batch})
            _, prog = executor.run_plan(engine, plan)
            assert prog.status == "done" and prog.done == n_q, prog

        direct()  # warm-up (SQL plans, pgvector pages)
        timings = {}
        for label, fn in (("direct (one batched call, nothing recorded)", direct),
                          ("engine, batch 500 (every item recorded)", lambda: engine_run(500)),
                          ("engine, batch 1 (one question per batch)", lambda: engine_run(1))):
            t = time.perf_counter()
            fn()
            timings[label] = time.perf_counter() - t
        base = timings["direct (one batched call, nothing recorded)"]
        print(f"Tier 1 ({args.retriever}, {name}), {n_q} questions, k = 10")
        for label, sec in timings.items():
            print(f"  {label:48s} {sec:7.2f} s   x{sec / base:5.2f} of direct")
        b500, b1 = timings["engine, batch 500 (every item recorded)"], timings["engine, batch 1 (one question per batch)"]
        print(f"batching inside the engine: batch 1 takes x{b1 / b500:.1f} the time of batch 500")
    finally:
        from voproshalych_eval.db import reset_engines

        reset_engines()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
