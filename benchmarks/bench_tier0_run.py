"""Benchmark: a Tier 0 analysis as a user runs it, against the float32 GEMM floor of the same matrix.

The steps of a run (:func:`voproshalych_eval.tiers.tier0.analyse`: metrics, neighbours and outliers,
clusters, metrics per section) on ``N × D`` anisotropic unit vectors (``bench_tier0_geometry.make_data``),
against, in the same process:

* **GEMM floor** — ``X @ X.T`` in float32, in row blocks of 2,048 (the least any exact all-pairs method pays;
  blocked because float64/float32 products of 16,384+ rows crash the bundled OpenBLAS);
* **before** — the same steps as they ran before this round: the metrics' pair scan, a second full scan for
  the neighbours, and a third for the one section that covers the whole set.

Checks that the metrics, the outlier scores and the per-section rows of "now" equal "before" exactly; exits 1
otherwise. Prints seconds, the ratios now / GEMM and before / now, and the load average (shared machine).

Usage::

    .venv/bin/python benchmarks/bench_tier0_run.py [--n 20000] [--d 1024] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--quick", action="store_true", help="N = 3,000, D = 256")
    args = ap.parse_args()
    n, d = (3000, 256) if args.quick else (args.n, args.d)

    import numpy as np
    from bench_tier0_geometry import make_data

    from voproshalych_eval.metrics import geometry
    from voproshalych_eval.tiers import tier0

    X = make_data(n, d).astype(np.float32)

    t = time.perf_counter()
    for a in range(0, n, 2048):
        _ = X[a : a + 2048] @ X.T
    t_gemm = time.perf_counter() - t

    vs_before = tier0.vector_set_from_array(X)
    t = time.perf_counter()
    raw_before = tier0.space_metrics(X, k=5)
    idx, dist = geometry.knn(X, k=5)
    vs_before.meta["outlier_score"] = geometry.outlier_scores(dist)
    sections_before = tier0.space_metrics(X, k=5)  # the one section "—" = the whole set
    t_before = time.perf_counter() - t

    vs_now = tier0.vector_set_from_array(X)
    t = time.perf_counter()
    now = tier0.analyse(vs_now, k=5, n_clusters=None)
    t_now = time.perf_counter() - t

    same = (now["raw"] == raw_before
            and np.array_equal(vs_now.meta["outlier_score"].to_numpy(), vs_before.meta["outlier_score"].to_numpy())
            and all(now["per_section"].iloc[0][key] == sections_before[key] for key in tier0.SEED_METRICS
                    if key in now["per_section"].columns))
    print(f"N = {n}, D = {d}, float32; load average {os.getloadavg()[0]:.1f}")
    print(f"{'':<46}{'seconds':>10}")
    print(f"{'GEMM floor (float32 X @ X.T, blocked)':<46}{t_gemm:>10.2f}")
    print(f"{'before: 3 scans (metrics, kNN, whole section)':<46}{t_before:>10.2f}")
    print(f"{'now: tier0.analyse (one scan)':<46}{t_now:>10.2f}")
    print(f"ratio now / GEMM floor: {t_now / t_gemm:.2f}x; before / now: {t_before / t_now:.2f}x")
    print(f"identical results: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
