"""Benchmark: Tier 0 geometry metrics, blockwise (ours) vs the straightforward full-matrix approach.

    python benchmarks/bench_tier0_geometry.py                 # N = 5,000 and 20,000, D = 1024
    python benchmarks/bench_tier0_geometry.py --quick         # smoke run, small sizes
    python benchmarks/bench_tier0_geometry.py --n 20000 --full  # also the baseline at 20k (~13 GB RAM)

Data: a mixture of 50 Gaussian clusters of Zipf-like sizes around a shared direction (text
embeddings are anisotropic), projected to the unit sphere, float32, ~1% exact duplicates, fixed seed.

Each computation runs in its own fresh subprocess that loads the data from a ``.npy`` file and
reports its wall time and its peak RSS growth (``ru_maxrss`` after the computation minus the RSS
after loading the data), so BLAS buffers and every temporary are counted.

Baseline ("straightforward"): ``sklearn.metrics.pairwise_distances`` (full N x N matrix), upper
triangle via ``np.triu_indices``, ``sklearn.neighbors.NearestNeighbors(algorithm="brute")`` for the
kNN, the cosine-similarity matrix (``1 - D`` under cosine, else ``cosine_similarity``) for the mean
cosine and the near-duplicate count; spread and covariance spectrum as in ours. Both sides get the
same float32 data; the baseline casts it to float64 so both compute in float64 and values can be
compared to 1e-6. The full baseline needs ~13 GB at N = 20,000: it only runs at N <= 5,000 unless
``--full`` is passed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BASELINE_MAX_N = 5_000
NUMERIC_KEYS = [
    "avg_nn_distance", "std_nn_distance", "density_score", "avg_spread", "max_spread", "spread_std",
    "effective_dimensionality", "avg_pairwise_distance", "std_pairwise_distance", "min_pairwise_distance",
    "max_pairwise_distance", "mean_pairwise_cosine_similarity", "top1_variance_share",
    "top10_variance_share", "near_duplicate_pairs",
]


def make_data(n: int, d: int, *, seed: int = 0, n_clusters: int = 50) -> np.ndarray:
    """Unit-norm float32 vectors: clustered, anisotropic, with ~1% exact duplicates."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(d)
    common /= np.linalg.norm(common)
    centres = rng.standard_normal((n_clusters, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    centres = 0.6 * common + 0.8 * centres
    weights = 1.0 / np.arange(1, n_clusters + 1)
    labels = rng.choice(n_clusters, size=n, p=weights / weights.sum())
    X = centres[labels] + rng.standard_normal((n, d)) * (0.7 / math.sqrt(d))
    n_dup = n // 100
    X[rng.choice(n, n_dup, replace=False)] = X[rng.choice(n, n_dup, replace=False)]
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X.astype(np.float32)


# --------------------------------------------------------------------------- workers (subprocess)


def run_ours(X: np.ndarray, *, k: int, metric: str, block_size: int) -> dict[str, Any]:
    from voproshalych_eval.metrics.geometry import embedding_space_metrics

    return embedding_space_metrics(X, k=k, metric=metric, block_size=block_size)  # type: ignore[arg-type]


def run_baseline(X: np.ndarray, *, k: int, metric: str, variance_threshold: float = 0.95,
                 near_duplicate_threshold: float = 0.95) -> dict[str, Any]:
    from sklearn.metrics import pairwise_distances
    from sklearn.metrics.pairwise import cosine_similarity
    from sklearn.neighbors import NearestNeighbors

    X = X.astype(np.float64)
    n = X.shape[0]
    D = pairwise_distances(X, metric=metric)
    iu = np.triu_indices(n, 1)
    pair = D[iu]
    nn_d, _ = NearestNeighbors(n_neighbors=k, metric=metric, algorithm="brute").fit(X).kneighbors()
    S = 1.0 - D if metric == "cosine" else cosine_similarity(X)
    cos = S[iu]
    mu = X.mean(axis=0)
    spread = np.linalg.norm(X - mu, axis=1)
    ev = np.clip(np.linalg.eigvalsh(np.cov(X.T))[::-1], 0, None)
    ratio = np.cumsum(ev) / ev.sum()
    return {
        "total_samples": n,
        "avg_nn_distance": float(nn_d.mean()),
        "std_nn_distance": float(nn_d.std()),
        "density_score": float(1.0 / (nn_d.mean() + 1e-12)),
        "avg_spread": float(spread.mean()),
        "max_spread": float(spread.max()),
        "spread_std": float(spread.std()),
        "effective_dimensionality": int(np.searchsorted(ratio, variance_threshold - 1e-12)) + 1,
        "avg_pairwise_distance": float(pair.mean()),
        "std_pairwise_distance": float(pair.std()),
        "min_pairwise_distance": float(pair.min()),
        "max_pairwise_distance": float(pair.max()),
        "mean_pairwise_cosine_similarity": float(cos.mean()),
        "top1_variance_share": float(ev[0] / ev.sum()),
        "top10_variance_share": float(ev[:10].sum() / ev.sum()),
        "near_duplicate_pairs": int(np.count_nonzero(cos >= near_duplicate_threshold)),
        "distance_metric": metric,
        "k": k,
        "estimated": False,
    }


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def worker(args: argparse.Namespace) -> None:
    import sklearn.metrics  # noqa: F401  (import cost is not part of the measurement)

    import voproshalych_eval.metrics.geometry  # noqa: F401

    X = np.load(args.data)
    metric = args.metric[0]
    rss0 = _rss_mb()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    if args.worker == "ours":
        res = run_ours(X, k=args.k, metric=metric, block_size=args.block_size)
    else:
        res = run_baseline(X, k=args.k, metric=metric)
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "peak_growth_mb": peak - rss0, "peak_rss_mb": peak, "result": res}))


def spawn(which: str, data: Path, *, k: int, metric: str, block_size: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", which, "--data", str(data), "--k", str(k),
           "--metric", metric, "--block-size", str(block_size)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{which} worker failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- driver


def max_abs_diff(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, str]:
    worst, worst_key = 0.0, "-"
    for key in NUMERIC_KEYS:
        if a.get(key) is None or b.get(key) is None:
            continue
        diff = abs(float(a[key]) - float(b[key]))
        if key == "density_score":  # 1/x: compare relatively
            diff /= max(abs(float(b[key])), 1.0)
        if diff > worst:
            worst, worst_key = diff, key
    return worst, worst_key


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=None, help="numbers of vectors (default 5000 20000)")
    p.add_argument("--d", type=int, default=None, help="dimension (default 1024)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--metric", nargs="+", default=["cosine", "euclidean"], choices=["cosine", "euclidean"])
    p.add_argument("--block-size", type=int, default=2048)
    p.add_argument("--quick", action="store_true", help="smoke run: N = 500, 2000; D = 64")
    p.add_argument("--full", action="store_true", help=f"run the baseline above N = {BASELINE_MAX_N} too")
    p.add_argument("--worker", choices=["ours", "baseline"], help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    sizes = args.n or ([500, 2000] if args.quick else [5_000, 20_000])
    dim = args.d or (64 if args.quick else 1024)
    print(f"Tier 0 geometry benchmark: D={dim}, k={args.k}, block_size={args.block_size}, "
          f"{len(os.sched_getaffinity(0))} cores, load average at start {os.getloadavg()[0]:.2f}")
    header = (f"{'N':>7} {'D':>5} {'metric':>9} {'ours s':>8} {'baseline s':>10} {'ratio':>7} "
              f"{'max abs diff':>13} {'(key)':>24} {'peak MB':>8} {'base peak MB':>12} {'cpu s ours/base':>16}")
    print(header)
    print("-" * len(header))
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"x_{n}_{dim}.npy"
            np.save(path, make_data(n, dim))
            for metric in args.metric:
                ours = spawn("ours", path, k=args.k, metric=metric, block_size=args.block_size)
                base = None
                if n <= BASELINE_MAX_N or args.full:
                    base = spawn("baseline", path, k=args.k, metric=metric, block_size=args.block_size)
                if base is not None:
                    ratio = base["seconds"] / ours["seconds"]
                    diff, key = max_abs_diff(ours["result"], base["result"])
                    cols = (f"{base['seconds']:>10.2f} {ratio:>6.1f}x {diff:>13.2e} {key:>24} "
                            f"{ours['peak_growth_mb']:>8.0f} {base['peak_growth_mb']:>12.0f}")
                    if diff > 1e-6:
                        failures.append(f"N={n} {metric}: max abs diff {diff:.2e} ({key}) > 1e-6")
                    if n == BASELINE_MAX_N and dim == 1024 and ratio < 2.0:
                        failures.append(f"N={n} {metric}: speed ratio {ratio:.2f} < 2")
                else:
                    cols = (f"{'skipped':>10} {'-':>7} {'-':>13} {'-':>24} "
                            f"{ours['peak_growth_mb']:>8.0f} {'-':>12}")
                cpu = f"{ours['cpu_seconds']:.1f}/" + (f"{base['cpu_seconds']:.1f}" if base else "-")
                print(f"{n:>7} {dim:>5} {metric:>9} {ours['seconds']:>8.2f} {cols} {cpu:>16}", flush=True)
                if n == 20_000 and dim == 1024:
                    if ours["seconds"] > 30:
                        failures.append(f"N={n} {metric}: {ours['seconds']:.1f} s > 30 s")
                    if ours["peak_growth_mb"] > 1536:
                        failures.append(f"N={n} {metric}: peak {ours['peak_growth_mb']:.0f} MB > 1.5 GB")
    print()
    print("ratio = baseline s / ours s; max abs diff over the Tier 0 values (density_score relative);")
    print("peak MB = peak RSS growth of the computing subprocess over the loaded data;")
    print("cpu s = user+sys CPU seconds of that subprocess (BLAS uses both cores, so cpu s ~ 2x wall when idle).")
    print(f"load average at end {os.getloadavg()[0]:.2f} (other processes on this shared machine slow both sides)")
    print("Targets: N=20000, D=1024 <= 30 s and <= 1.5 GB; N=5000: >= 2x faster, diff <= 1e-6.")
    print("RESULT:", "all targets met" if not failures else "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
