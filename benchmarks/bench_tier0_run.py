"""Benchmark: a Tier 0 analysis as a user runs it, against the float32 GEMM floor of the same matrix.

The steps of a run (:func:`voproshalych_eval.tiers.tier0.analyse`: metrics, neighbours and outliers,
clusters, metrics per section) on ``N × D`` anisotropic unit vectors (``bench_tier0_geometry.make_data``),
against, in the same process:

* **GEMM floor** — ``X @ X.T`` in float32, in row blocks of 2,048 (the least any exact all-pairs method pays;
  blocked because float64/float32 products of 16,384+ rows crash the bundled OpenBLAS);
* **last round** — ``tier0.analyse`` with float64 pair tiles and the covariance eigenvalues on every thread
  (the state before issue 28's float32 round);
* **now** — ``tier0.analyse``: float32 pair tiles (float64 sums, neighbour distances recomputed in float64),
  eigenvalues on one thread;
* with ``--three-scans``, **before** — the steps as they ran when the issue was filed: the metrics' pair scan,
  a second full scan for the neighbours, a third for the one section that covers the whole set.

Checks that the metrics, the outlier scores and the per-section rows of "now" equal "last round" within 1e-5
(the float32 tolerance stated in ``metrics/geometry.py``; the near-duplicate count exactly); exits 1 otherwise.
Prints seconds, the ratios to the GEMM floor, the peak RSS, and the load average (shared machine).

``--memory``: only the pair scan (``geometry.embedding_space_metrics_and_knn``), twice under ``tracemalloc``:
the copying path before this round (a float32 input's float64 copy kept next to its float64 unit rows) and
now (the copy becomes the unit rows in place); prints both traced peaks, their ratio, the times, the input's
size and the process's peak RSS, and checks that both give identical metrics and neighbours.

Usage::

    .venv/bin/python benchmarks/bench_tier0_run.py [--n 20000] [--d 1024] [--quick] [--three-scans] [--no-last]
    .venv/bin/python benchmarks/bench_tier0_run.py --memory --n 100000 --d 1024
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
    ap.add_argument("--three-scans", action="store_true", help="also time the steps as they ran when filed")
    ap.add_argument("--no-last", action="store_true", help="skip the float64 run (large N: time and memory)")
    ap.add_argument("--exact-limit", type=int, default=None, help="exact pair scan up to this N (default: 50,000)")
    ap.add_argument("--memory", action="store_true", help="traced peak memory of the pair scan, before vs now")
    ap.add_argument("--now-only", action="store_true", help="with --memory: only the current path, untraced "
                    "(its peak RSS and time; for N too large to run twice)")
    args = ap.parse_args()
    n, d = (3000, 256) if args.quick else (args.n, args.d)
    if args.memory:
        return memory(n, d, args.exact_limit or max(n, 50_000), now_only=args.now_only)

    import contextlib
    import math
    import resource

    import numpy as np
    from bench_tier0_geometry import make_data

    from voproshalych_eval.metrics import geometry
    from voproshalych_eval.tiers import tier0

    if args.exact_limit:
        import functools

        tier0.space_metrics_and_knn = functools.partial(  # type: ignore[assignment]
            tier0.space_metrics_and_knn, exact_limit=args.exact_limit)
    X = make_data(n, d).astype(np.float32)

    t = time.perf_counter()
    for a in range(0, n, 2048):
        _ = X[a : a + 2048] @ X.T
    t_gemm = time.perf_counter() - t

    rows = []
    last = None
    if not args.no_last:
        prepare, limit = geometry._prepare, geometry.limit_threads

        def prepare64(*a: object, **kw: object) -> object:
            p = prepare(*a, **kw)  # type: ignore[arg-type]
            p.W32 = None
            return p

        geometry._prepare = prepare64  # type: ignore[assignment]
        geometry.limit_threads = lambda _n: contextlib.nullcontext()  # type: ignore[assignment]
        vs_last = tier0.vector_set_from_array(X)
        t = time.perf_counter()
        last = tier0.analyse(vs_last, k=5, n_clusters=None)
        rows.append(("last round: float64 tiles, threaded eigvalsh", time.perf_counter() - t))
        geometry._prepare, geometry.limit_threads = prepare, limit  # type: ignore[assignment]

    vs_now = tier0.vector_set_from_array(X)
    t = time.perf_counter()
    now = tier0.analyse(vs_now, k=5, n_clusters=None)
    t_now = time.perf_counter() - t
    rows.append(("now: float32 tiles, one scan", t_now))
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2

    if args.three_scans:
        t = time.perf_counter()
        tier0.space_metrics(X, k=5)
        idx, dist = geometry.knn(X, k=5)
        geometry.outlier_scores(dist)
        tier0.space_metrics(X, k=5)  # the one section "—" = the whole set
        rows.insert(0, ("before: 3 scans (metrics, kNN, whole section)", time.perf_counter() - t))

    same = True
    if last is not None:
        def close(a: object, b: object) -> bool:
            if isinstance(a, float) and isinstance(b, float):
                return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-5) or (math.isnan(a) and math.isnan(b))
            if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
                return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
            return a == b

        bad = [key for key in last["raw"] if not close(now["raw"][key], last["raw"][key])]
        o_now = vs_now.meta["outlier_score"].to_numpy(float)
        o_last = vs_last.meta["outlier_score"].to_numpy(float)
        out_diff = float(np.max(np.abs(o_now - o_last))) if len(o_now) else 0.0
        sec = [key for key in tier0.SEED_METRICS if key in now["per_section"].columns
               and not close(now["per_section"].iloc[0][key], last["per_section"].iloc[0][key])]
        same = not bad and out_diff <= 1e-5 and not sec
        print(f"now vs last round: metrics outside 1e-5: {bad or 'none'}; per-section: {sec or 'none'}; "
              f"max outlier-score difference {out_diff:.1e}")
    print(f"N = {n}, D = {d}, float32 input; load average {os.getloadavg()[0]:.1f}; peak RSS {rss_gb:.2f} GB; "
          f"estimated mode: {now['raw'].get('estimated')}")
    print(f"{'':<48}{'seconds':>10}{'/ GEMM':>10}")
    print(f"{'GEMM floor (float32 X @ X.T, blocked)':<48}{t_gemm:>10.2f}{1.0:>10.2f}")
    for label, sec_ in rows:
        print(f"{label:<48}{sec_:>10.2f}{sec_ / t_gemm:>10.2f}")
    for label, sec_ in rows:
        if not label.startswith("now"):
            print(f"ratio {label.split(':')[0]} / now: {sec_ / t_now:.2f}x")
    print(f"within tolerance: {same}")
    return 0 if same else 1


def _hwm_gb() -> float:
    """The process's peak resident set (``VmHWM``, resettable through ``/proc/self/clear_refs``) in GB."""
    with open("/proc/self/status") as fh:
        kb = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    return kb / 1024**2


def memory(n: int, d: int, exact_limit: int, *, now_only: bool = False) -> int:
    """The pair scan's traced peak memory and time, the copying path (before) vs in place (now).

    ``now_only``: the current path alone, without tracemalloc (its cost), reporting the process's peak RSS."""
    import resource
    import tracemalloc

    import numpy as np
    from bench_tier0_geometry import make_data

    from voproshalych_eval.metrics import geometry

    X = make_data(n, d).astype(np.float32)
    if now_only:
        rss0 = _hwm_gb()
        with open("/proc/self/clear_refs", "w") as fh:  # reset the peak: the test data's float64 temporaries are not the scan's
            fh.write("5")
        t, c = time.perf_counter(), time.process_time()
        res, _ = geometry.embedding_space_metrics_and_knn(X, k=5, exact_limit=exact_limit)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"N = {n}, D = {d}, float32 input {X.nbytes / 2**30:.2f} GB; load average {os.getloadavg()[0]:.1f}; "
              f"now (exact: {not res['estimated']}): {wall:.1f} s wall, {cpu:.1f} s CPU; peak RSS during the scan "
              f"{_hwm_gb():.2f} GB (the whole process, input and libraries included; making the data peaked at {rss0:.2f} GB)")
        return 0
    out = {}
    private = geometry._private_copy
    for label, patch in (("before: float64 copy + float64 unit rows", lambda *_: False), ("now: unit rows in place", None)):
        geometry._private_copy = patch or private  # type: ignore[assignment]
        tracemalloc.start()
        t, c = time.perf_counter(), time.process_time()
        res, knn = geometry.embedding_space_metrics_and_knn(X, k=5, exact_limit=exact_limit)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out[label] = (res, knn, wall, cpu, peak)
    geometry._private_copy = private  # type: ignore[assignment]
    (rb, kb, wb, cb, pb), (rn, kn, wn, cn, pn) = out.values()
    same = rb == rn and kb is not None and kn is not None and all(np.array_equal(a, b) for a, b in zip(kb, kn, strict=True))
    print(f"N = {n}, D = {d}, float32 input {X.nbytes / 2**30:.2f} GB; load average {os.getloadavg()[0]:.1f}; "
          f"process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2:.2f} GB")
    print(f"{'pair scan':<44}{'wall s':>9}{'CPU s':>9}{'traced peak GB':>16}")
    for label, (_, _, w, c, p) in out.items():
        print(f"{label:<44}{w:>9.1f}{c:>9.1f}{p / 2**30:>16.2f}")
    print(f"peak ratio before / now: {pb / max(pn, 1):.2f}x; identical metrics and neighbours: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
