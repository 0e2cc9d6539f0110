"""The first map picture and a search on it, at 3,668 and 20,000 points: before (UMAP + trustworthiness, the old
plotly figure) against after (PCA at once, the new figure), measured side by side in one process.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_map_first_picture.py [--sizes 3668 20000] [--dim 512]
[--base 7dd1114] [--quick]``.

* Vectors: ``n`` unit vectors of ``--dim`` dimensions around 29 topic centres (the shape of a question log
  embedded by USE; no database needed).
* **Before** = what a click on "build the map" cost: ``projection.project`` (exact kNN + UMAP fit +
  trustworthiness@10) + the figure of the old ``plots/embedding_space.py`` (loaded from git at ``--base``, the
  commit before this change) + its JSON (what Streamlit sends to the browser).
* **After** = the first picture now: ``projection_refine.first_picture`` (PCA of the same rows; UMAP then refines
  in a background thread) + the new figure (density layer, de-overlapped labels, contrast search matches) + JSON.
  It is timed with ``background=False`` (a running fit would share the process's CPU clock); in the app the
  background fit competes with the page for the machine's cores while it runs.
* **Interaction** = a search typed into the map's box: the figure rebuilt with a highlight + JSON, old vs new.
* UMAP is warmed first (a tiny fit compiles or loads numba's cache), so the baseline is the *warm* UMAP cost.
* Identical results: unless ``--quick``, the background UMAP's coordinates are compared with the baseline fit
  (same seed, same rows) — the refinement must give exactly the map the old path gave.

Prints CPU seconds (process time, all threads) and wall seconds per step, the ratios before/after, and the
load average (the machine is shared; compare ratios, not absolute times).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def vectors(n: int, dim: int, seed: int = 0) -> tuple[np.ndarray, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(29, dim))
    topic = rng.integers(0, 29, size=n)
    X = centres[topic] + 1.2 * rng.normal(size=(n, dim))
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    words = ["стипендия", "общежитие", "расписание", "пропуск", "справка", "практика", "экзамен"]
    meta = pd.DataFrame({
        "point_id": [f"q:{i}" for i in range(n)], "kind": "question", "url": None,
        "text": [f"вопрос {i}: {words[i % len(words)]} тема {t}" for i, t in enumerate(topic)],
        "topic": [f"тема {t:02d} — {words[t % len(words)]}" for t in topic],
    })
    return X, meta


def old_charts(base: str) -> Any:
    """``plots/embedding_space.py`` as it was at ``base`` (imported under another name)."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{base}:voproshalych_eval/plots/embedding_space.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="bench_map_")) / "embedding_space_before.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("embedding_space_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn: Any) -> tuple[Any, float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def figure(charts: Any, p: Any, meta: pd.DataFrame, highlight: np.ndarray | None, **extra: Any) -> str:
    m = meta.iloc[p.rows].reset_index(drop=True).assign(row=p.rows)
    hl = highlight[p.rows] if highlight is not None else None
    fig = charts.scatter_figure(p.coords, m, "topic", label_centres=True, highlight=hl, **extra)
    return fig.to_json()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[3668, 20000])
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--base", default="7dd1114", help="the commit whose plots/embedding_space.py is the baseline")
    ap.add_argument("--quick", action="store_true", help="skip the identical-results check (one UMAP fit less)")
    args = ap.parse_args()

    from voproshalych_eval.plots import embedding_space as new_charts
    from voproshalych_eval.tiers import projection, projection_refine

    before_charts = old_charts(args.base)
    X0, _ = vectors(200, args.dim, seed=99)
    projection.project(None, X0, [str(i) for i in range(200)], model="warm", n_neighbors=10)  # warm numba
    print(f"load average at start: {os.getloadavg()}; dim {args.dim}; baseline figure from {args.base}")
    rows = []
    for n in args.sizes:
        X, meta = vectors(n, args.dim)
        ids = meta["point_id"].tolist()
        highlight = meta["text"].str.contains("стипенд", regex=False).to_numpy()
        kw = {"model": "bench", "seed": 42, "limit": n, "n_neighbors": 15}

        old_p, c_umap, w_umap = timed(lambda: projection.project(None, X, ids, **kw))  # noqa: B023
        _, c_ofig, w_ofig = timed(lambda: figure(before_charts, old_p, meta, None))  # noqa: B023
        _, c_osearch, w_osearch = timed(lambda: figure(before_charts, old_p, meta, highlight))  # noqa: B023

        # timed without the background fit (it would share this process's CPU clock); started afterwards
        (pic, _), c_pca, w_pca = timed(
            lambda: projection_refine.first_picture(None, X, ids, background=False, **kw))  # noqa: B023
        _, c_nfig, w_nfig = timed(lambda: figure(new_charts, pic, meta, None, axis_name="PCA"))  # noqa: B023
        _, c_nsearch, w_nsearch = timed(lambda: figure(new_charts, pic, meta, highlight, axis_name="PCA"))  # noqa: B023
        same = None
        if not args.quick:
            _, ref = projection_refine.first_picture(None, X, ids, **kw)
            assert ref is not None
            ref.wait()
            same = ref.error is None and ref.result is not None and ref.result.point_ids == old_p.point_ids and \
                bool(np.array_equal(ref.result.coords, old_p.coords))
        before_c, after_c = c_umap + c_ofig, c_pca + c_nfig
        before_w, after_w = w_umap + w_ofig, w_pca + w_nfig
        trust = old_p.timings.get("trustworthiness", 0.0)
        print(f"\nn = {n:,} points ({highlight.sum()} search matches)")
        print(f"  before  UMAP+trust {c_umap:7.2f} CPU-s {w_umap:6.2f} s (trust {trust:.2f} s = "
              f"{trust / max(w_umap, 1e-9):.0%}) | old figure+JSON {c_ofig:5.2f} CPU-s {w_ofig:5.2f} s")
        print(f"  after   PCA        {c_pca:7.2f} CPU-s {w_pca:6.2f} s | new figure+JSON {c_nfig:5.2f} CPU-s "
              f"{w_nfig:5.2f} s")
        print(f"  first picture: before {before_w:6.2f} s ({before_c:.2f} CPU-s) -> after {after_w:5.2f} s "
              f"({after_c:.2f} CPU-s): {before_w / after_w:5.1f}x wall, {before_c / after_c:5.1f}x CPU")
        print(f"  search on the map: before {w_osearch:5.2f} s -> after {w_nsearch:5.2f} s: "
              f"{w_osearch / w_nsearch:4.1f}x")
        if same is not None:
            print(f"  background UMAP identical to the old path's map: {same}")
        rows.append((n, before_w, after_w, w_osearch, w_nsearch, same))
    print(f"\nload average at end: {os.getloadavg()}")
    print("n, first picture before s, after s, ratio, search before s, after s, ratio, identical")
    for n, bw, aw, os_, ns, same in rows:
        print(f"{n}, {bw:.2f}, {aw:.2f}, {bw / aw:.1f}, {os_:.2f}, {ns:.2f}, {os_ / ns:.1f}, {same}")
    if any(same is False for *_, same in rows):
        sys.exit("the background UMAP differs from the old path's map")


if __name__ == "__main__":
    main()
