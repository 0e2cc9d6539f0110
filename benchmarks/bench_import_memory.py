"""Memory peak of a question-log import (``import-questions``) of a large CSV: 1,000,000 rows by default.

A child process imports the file into a scratch store (a temporary embedded server) and reports its peak
resident memory (``ru_maxrss``) and its resident memory just before the import (the baseline: interpreter,
libraries, engine). Printed: the file's size, the baseline, the peak, the growth (peak − baseline) and two
ratios — growth / file size and growth / the text of one insert batch (5,000 rows) — so that runs on
different machines compare. ``--compare TREE`` runs the same child against another checkout (e.g. the code
before a change) in the same run, on the same file and server.

    .venv/bin/python benchmarks/bench_import_memory.py [--rows 1000000] [--compare /path/to/old/tree] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BATCH = 5_000


def make_log(path: Path, rows: int, seed: int = 7) -> None:
    """A production-like export: Russian questions and answers, URLs, scores, users, timestamps."""
    rnd = random.Random(seed)
    words = ["как", "когда", "где", "сессия", "общежитие", "пересдача", "стипендия", "расписание", "зачёт", "экзамен", "справка", "приказ", "деканат", "библиотека", "пропуск", "договор", "оплата", "кафедра", "практика", "диплом"]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["id", "question", "answer", "confluence_url", "score", "user_id", "stop_point", "created_at"])
        for i in range(1, rows + 1):
            q = " ".join(rnd.choices(words, k=rnd.randint(4, 9))) + "?"
            a = " ".join(rnd.choices(words, k=rnd.randint(6, 14))) + "."
            w.writerow([i, q, a, f"https://wiki.utmn.ru/pages/{rnd.randint(1, 400)}", rnd.choice(["", 1, 2, 3, 4, 5]),
                        rnd.randint(1, 20_000), rnd.choice(["false", "true"]),
                        f"2025-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}T{rnd.randint(0, 23):02d}:00:00+05:00"])


def child(path: str, source: str) -> None:
    """Runs in the measured process: import ``path`` and print the memory numbers as JSON."""
    from voproshalych_eval.analytics import import_file
    from voproshalych_eval.db import get_engine

    engine = get_engine()
    with engine.connect() as conn:  # the engine's first connection and the libraries are part of the baseline
        conn.exec_driver_sql("SELECT 1")
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    rep = import_file(engine, path, source=source)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"baseline_kb": base, "peak_kb": peak, "n_imported": rep.n_imported, "seconds": seconds}))


def measure(tree: Path, path: Path, source: str, env: dict[str, str]) -> dict[str, float]:
    code = (f"import sys; sys.path.insert(0, {str(tree)!r}); sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
            f"import bench_import_memory as b; b.child({str(path)!r}, {source!r})")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, "PYTHONPATH": str(tree)},
                         cwd=str(tree), timeout=7200)
    if res.returncode != 0:
        raise SystemExit(f"the import in {tree} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--compare", type=Path, default=None, help="another checkout to measure first (e.g. before a change)")
    ap.add_argument("--quick", action="store_true", help="100,000 rows")
    args = ap.parse_args()
    rows = 100_000 if args.quick else args.rows
    tmp = Path(tempfile.mkdtemp(prefix="bench-import-memory-"))
    sys.path.insert(0, str(ROOT))
    from voproshalych_eval.db import server

    pgdata = tmp / "pgdata"
    url = server.start(pgdata, logs_dir=tmp / "logs", cleanup_mode="delete")
    try:
        path = tmp / "log.csv"
        make_log(path, rows)
        size_mb = path.stat().st_size / 2**20
        batch_mb = size_mb * BATCH / rows
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update({"VOPROSHALYCH_EVAL_HOME": str(tmp / "home"), "VOPROSHALYCH_EVAL_STORE_URL": url})
        print(f"file: {rows:,} rows, {size_mb:.1f} MiB; one insert batch ({BATCH:,} rows) ≈ {batch_mb:.2f} MiB of text")
        trees = ([("before", args.compare)] if args.compare else []) + [("this tree", ROOT)]
        for i, (label, tree) in enumerate(trees):
            m = measure(tree, path, f"bench_mem_{i}", env)
            base, peak = m["baseline_kb"] / 1024, m["peak_kb"] / 1024
            growth = peak - base
            print(f"{label:>10}: baseline {base:.0f} MiB, peak {peak:.0f} MiB, growth {growth:.0f} MiB = "
                  f"{growth / size_mb:.2f}× the file = {growth / batch_mb:.0f}× one batch; "
                  f"{m['n_imported']:,} rows in {m['seconds']:.0f} s")
    finally:
        server.stop(pgdata)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
