"""Benchmark: golden questions on the joint map (questions + knowledge-base chunks), three ways.

The quality measured: the share of answerable golden questions whose nearest chunk **in the 2-D map** is on
one of their relevant pages. Baseline (measured in the same run): one plain UMAP over chunks and questions
together. Compared with it: UMAP fitted on the chunks with the questions placed by ``UMAP.transform``, and
one UMAP after centring each group (``projection.project(centre_groups=...)``, what the app does). The cosine
nearest chunk in the full space is printed as the ceiling. The demo is loaded into a temporary database
(its own embedded server), nothing else is touched.

Usage::

    .venv/bin/python benchmarks/bench_joint_map.py [--seed 42] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--quick", action="store_true", help="accepted for make bench (the demo is small already)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-joint-map-"))
    os.environ["VOPROSHALYCH_EVAL_HOME"] = str(tmp / "home")
    os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(ROOT))
    from voproshalych_eval.datasets import store as datasets
    from voproshalych_eval.db import get_engine, reset_engines
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.tiers import projection, tier0

    try:
        engine = get_engine()
        load_demo(engine)
        chunks = tier0.load_vector_set(engine, "chunks", embedder="use-multilingual")
        golden = tier0.load_vector_set(engine, "golden", embedder="use-multilingual", dataset="demo_golden")
        ds = datasets.get_dataset(engine, "demo_golden", "golden")
        relevant = [set(r.get("relevant_urls") or ([r["confluence_url"]] if r.get("confluence_url") else []))
                    for r in ds.records]
        urls = chunks.meta["url"].to_numpy()
        n_c = len(chunks)
        X = np.vstack([chunks.X, golden.X])
        ids = chunks.point_ids + golden.point_ids
        kinds = ["chunk"] * n_c + ["golden"] * len(golden)
        is_ref = np.r_[np.ones(n_c, bool), np.zeros(len(golden), bool)]

        def share(nn: np.ndarray) -> float:
            return float(np.mean([urls[nn[i]] in rel for i, rel in enumerate(relevant) if rel]))

        rows = []
        t = time.perf_counter()
        base = projection.project(None, X, ids, model=chunks.model, seed=args.seed)
        rows.append(("joint UMAP (baseline)", share(projection.nearest_reference(base.coords, is_ref)[n_c:]),
                     time.perf_counter() - t))
        t = time.perf_counter()
        import umap

        U = X / np.linalg.norm(X, axis=1, keepdims=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reducer = umap.UMAP(n_neighbors=15, min_dist=0.1, metric="cosine", random_state=args.seed).fit(U[:n_c])
            placed = np.vstack([reducer.embedding_, reducer.transform(U[n_c:])])
        rows.append(("KB fit + transform", share(projection.nearest_reference(placed, is_ref)[n_c:]),
                     time.perf_counter() - t))
        t = time.perf_counter()
        cen = projection.project(None, X, ids, model=chunks.model, seed=args.seed, centre_groups=kinds)
        rows.append(("centred groups (the app)", share(projection.nearest_reference(cen.coords, is_ref)[n_c:]),
                     time.perf_counter() - t))
        ceiling = share(projection.nearest_reference(X, is_ref, metric="cosine")[n_c:])
        gap = projection.modality_gap(X, kinds)
        print(f"{n_c} chunks, {len(golden)} golden questions ({sum(map(bool, relevant))} answerable), "
              f"model {chunks.model}")
        print(f"modality gap {gap['gap']:.3f}, spread {np.mean(list(gap['spread'].values())):.3f}, "
              f"ratio {gap['gap_ratio']:.2f}")
        print(f"{'map':<28}{'share':>8}{'vs baseline':>13}{'seconds':>10}")
        for name, sh, sec in rows:
            print(f"{name:<28}{sh:>8.3f}{sh / max(rows[0][1], 1e-9):>13.2f}{sec:>10.1f}")
        print(f"{'cosine NN, full space':<28}{ceiling:>8.3f}")
        return 0 if rows[2][1] > rows[0][1] else 1
    finally:
        reset_engines()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
