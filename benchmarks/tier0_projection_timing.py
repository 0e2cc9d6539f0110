"""Time the first UMAP projection of the demo knowledge base in a fresh process, then the cached reopen.

Run: ``.venv/bin/python benchmarks/tier0_projection_timing.py [--source chunks] [--dim 2]``. The first
call pays the imports and numba compilation of UMAP's layout (the kNN is precomputed exactly, so
pynndescent is not compiled); the second call reads ``eval.projections``. Pass ``--no-cache`` to
force a fit (a fresh key) on the first call.
"""

from __future__ import annotations

import argparse
import time

T_START = time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default="chunks")
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--no-cache", action="store_true", help="use a random seed so the first call must fit")
    args = ap.parse_args()

    from voproshalych_eval.db import get_engine
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.tiers import projection, tier0

    eng = get_engine()
    load_demo(eng)
    t0 = time.perf_counter()
    vs = tier0.load_vector_set(eng, args.source)
    t1 = time.perf_counter()
    seed = int(time.time()) % 100_000 if args.no_cache else 42
    p = projection.project_vector_set(eng, vs, n_components=args.dim, seed=seed)
    t2 = time.perf_counter()
    q = projection.project_vector_set(eng, vs, n_components=args.dim, seed=seed)
    t3 = time.perf_counter()
    print(f"points: {len(vs)} ({vs.dim}-d, {vs.model}); trustworthiness@10 = {p.trustworthiness}")
    print(f"process start -> vectors loaded: {t1 - T_START:.2f} s (load {t1 - t0:.2f} s)")
    print(f"first projection: {t2 - t1:.2f} s (from cache: {p.from_cache}; {p.timings})")
    print(f"process start -> first projection on screen data: {t2 - T_START:.2f} s")
    print(f"second call: {(t3 - t2) * 1000:.1f} ms (from cache: {q.from_cache})")


if __name__ == "__main__":
    main()
