"""Reopening a real-users analysis after an app restart: recomputed (before issue 29) vs read from the store.

On the demo question log (3,668 questions, the walk's case) in a scratch store (an embedded server in a temp
folder): run the analysis once (the engine's ``real_users`` plan, which now stores its result beside the run),
then reopen it the two ways a restarted app can — ``rebuild_result`` (what the page did before: recompute every
step from the run's frozen parameters, embeddings already cached) and ``load_result`` (read the stored tables,
topics and vectors). Prints both times and their ratio, and the stored size.

    .venv/bin/python benchmarks/bench_reopen_analysis.py [--keep]
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
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-reopen-"))
    os.environ["VOPROSHALYCH_EVAL_HOME"] = str(tmp / "home")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("VOPROSHALYCH_EVAL_STORE_URL", None)
    sys.path.insert(0, str(ROOT))
    from voproshalych_eval.analytics.pipeline import RESULT_ARTIFACT, build_plan, load_result, rebuild_result
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.db.artifacts import load_artifact
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.engine import executor, runs

    try:
        engine = get_engine()
        load_demo(engine)
        t = time.perf_counter()
        run_id, prog = executor.run_plan(engine, build_plan(engine, {}))
        first = time.perf_counter() - t
        run = runs.get_run(engine, run_id)
        assert run is not None and prog.status == "done", prog
        n = run.metrics.get("n_questions_used")
        print(f"analysis #{run_id}: {n} questions, first run {first:.1f} s")
        t = time.perf_counter()
        rebuilt = rebuild_result(engine, run)
        before = time.perf_counter() - t
        t = time.perf_counter()
        loaded = load_result(engine, run)
        after = time.perf_counter() - t
        assert loaded is not None and loaded.topics is not None and rebuilt.topics is not None
        assert len(loaded.topics.topics) == len(rebuilt.topics.topics)
        size = load_artifact(engine, run_id, RESULT_ARTIFACT)["n_bytes"]
        print(f"reopen by recomputing (before): {before:.2f} s")
        print(f"reopen from the store (after) : {after:.2f} s  ({size / 1e6:.1f} MB stored)")
        print(f"ratio before/after: {before / after:.0f}x")
        return 0
    finally:
        from voproshalych_eval.db import reset_engines

        reset_engines()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
