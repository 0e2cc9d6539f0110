"""Benchmark: the topics step of a real-users click, with cached embeddings (issue 28 "fast where people wait").

The log is the demo log itself (``--demo``, 3,668 questions) or ``--rows`` questions made by resampling it with
small perturbations (:func:`bench_real_users.make_log`); its questions are embedded once (excluded: in the
app they come from the embedding cache) and the word vectors the names need are cached in memory after a
warm-up call (in the app: the store's embedding cache). Then, in the same process, side by side:

* **baseline** — the topics step as it ran when issue 28 was filed: the old k search (27 independent
  k-means++ fits run to convergence, silhouette from the sample's distance matrix), KMeans on every
  OpenMP/BLAS thread, the names computed through the ``bertopic`` package (its import paid once, as in a
  fresh app process; without the package the baseline runs without it and says so);
* **last round** — the old k search single-threaded, names without ``bertopic`` (the previous session's state);
* **round start** — "now" with every ``text_ru.terms`` call lemmatising its text again (the state before
  the per-text cache); **now, first click** — with that cache emptied (a fresh process);
* **now** — :func:`voproshalych_eval.analytics.topics.topic_coverage` as the app runs it (shared k-means++
  seeding, short candidate fits, exact O(n·k·d) silhouette; the chosen k fitted to convergence).

The k search changed, so the topics may differ: the benchmark prints the chosen k of both searches and the
adjusted Rand index between their labels, next to the seed noise (ARI between the topics and KMeans with
other seeds, computed by the click itself). It exits 1 when the two searches' topics agree less than two
runs of the same search with different seeds (ARI below the minimum seed ARI). It prints seconds and the
ratios baseline / now and last round / now, with the load average (the machine is shared: compare ratios).

Usage::

    .venv/bin/python benchmarks/bench_topics_click.py [--demo | --rows 5000] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


class MemoryCachedEmbedder:
    """The embedder behind an in-memory cache of texts (the app's store cache, without a database)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[str, Any] = {}

    def encode_queries(self, texts: list[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.inner.encode_queries(missing), strict=True):
                self.cache[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 512), np.float32)


def choose_k_before(X: Any, *, k_range: tuple[int, int] = (4, 30), sample_size: int = 2500, seed: int = 0,
                    n_init: int = 1, **_: Any) -> tuple[int, Any, Any]:
    """The k search before issue 28: each k its own k-means++ fit to convergence, silhouette on the sample's
    precomputed cosine distance matrix."""
    import numpy as np
    import pandas as pd
    from sklearn.metrics import silhouette_score

    from voproshalych_eval.analytics.topics import _sample
    from voproshalych_eval.metrics.clusters import kmeans

    S = X[_sample(X.shape[0], sample_size, seed)]
    n_distinct = len(np.unique(S, axis=0))
    lo, hi = max(2, k_range[0]), min(k_range[1], n_distinct - 1)
    S64 = np.asarray(S, dtype=np.float64)
    D = np.maximum(1.0 - S64 @ S64.T, 0.0)
    np.fill_diagonal(D, 0.0)
    rows = []
    best: tuple[float, int, Any] = (-2.0, max(1, min(lo, n_distinct)), None)
    for k in range(lo, hi + 1):
        model = kmeans(S, k, seed=seed, n_init=n_init)
        if len(np.unique(model.labels_)) < 2:
            continue
        score = float(silhouette_score(D, model.labels_, metric="precomputed"))
        rows.append({"k": k, "silhouette": score, "inertia": float(model.inertia_)})
        if score > best[0] + 1e-12:
            best = (score, k, model.cluster_centers_)
    return best[1], pd.DataFrame(rows, columns=["k", "silhouette", "inertia"]), best[2]


def bertopic_names(docs: list[str], labels: Any, embeddings: Any, *, embedder: Any, n_terms: int, slang: Any) -> dict:
    """The names as computed before this round: the same steps run inside ``bertopic``'s ``BERTopic`` object."""
    from collections import Counter

    import numpy as np
    import pandas as pd
    from bertopic import BERTopic
    from bertopic.backend import BaseEmbedder
    from bertopic.cluster import BaseCluster
    from bertopic.dimensionality import BaseDimensionalityReduction
    from bertopic.representation import BaseRepresentation
    from bertopic.vectorizers import ClassTfidfTransformer
    from sklearn.feature_extraction.text import CountVectorizer

    from voproshalych_eval.analytics import text_ru
    from voproshalych_eval.analytics.topic_names import (
        DEFAULT_CONCENTRATION,
        DEFAULT_DIVERSITY,
        DEFAULT_MIN_DOC_SHARE,
        TopicTerms,
        _analyzer,
        _characteristic,
        _mmr,
    )

    analyzer = _analyzer(slang, text_ru.FILLER_WORDS)

    class Characteristic(BaseRepresentation):
        def extract_topics(self, topic_model: Any, documents: pd.DataFrame, c_tf_idf: Any, topics: dict) -> dict:
            doc_freq: dict[int, Counter] = {}
            for topic, doc in zip(documents["Topic"], documents["Document"], strict=True):
                doc_freq.setdefault(int(topic), Counter()).update(set(analyzer(doc)))
            overall: Counter = Counter()
            for c in doc_freq.values():
                overall.update(c)
            n_docs = {t: int((documents["Topic"] == t).sum()) for t in doc_freq}
            return {t: _characteristic(ws, doc_freq.get(int(t), Counter()), overall, n_docs.get(int(t), 0),
                                       min_doc_share=DEFAULT_MIN_DOC_SHARE, concentration=DEFAULT_CONCENTRATION)
                    for t, ws in topics.items()}

    class Mmr(BaseRepresentation):
        def extract_topics(self, topic_model: Any, documents: pd.DataFrame, c_tf_idf: Any, topics: dict) -> dict:
            return {t: _mmr(ws, embedder, diversity=DEFAULT_DIVERSITY, top_n_words=n_terms) for t, ws in topics.items()}

    class Backend(BaseEmbedder):
        def embed(self, documents: Any, verbose: bool = False) -> Any:
            return np.asarray(embedder.encode_queries([str(d) for d in documents]), dtype=np.float32)

    model = BERTopic(embedding_model=Backend(), umap_model=BaseDimensionalityReduction(), hdbscan_model=BaseCluster(),
                     vectorizer_model=CountVectorizer(analyzer=analyzer), ctfidf_model=ClassTfidfTransformer(),
                     representation_model=[Characteristic(), Mmr()], top_n_words=n_terms, language="multilingual",
                     calculate_probabilities=False, verbose=False)
    labels = np.asarray(labels)
    fitted, _ = model.fit_transform(list(docs), embeddings=np.asarray(embeddings, np.float32), y=labels)
    mapping: dict[int, int] = {}
    for ours, theirs in zip(labels.tolist(), list(fitted), strict=True):
        mapping.setdefault(int(theirs), int(ours))
    out = {}
    for theirs, ours in mapping.items():
        words = [(w, float(s)) for w, s in (model.get_topic(theirs) or []) if w][:n_terms]
        out[ours] = TopicTerms([w for w, _ in words], [s for _, s in words])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--demo", action="store_true", help="the demo log itself (3,668 questions)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="1,500 rows")
    args = ap.parse_args()
    rows = 1500 if args.quick else args.rows

    import numpy as np
    import pandas as pd
    from bench_real_users import make_log
    from sklearn.metrics import adjusted_rand_score

    from voproshalych_eval.analytics import topic_names, topics
    from voproshalych_eval.analytics.text_ru import classify_many
    from voproshalych_eval.embeddings import get_embedder
    from voproshalych_eval.metrics import clusters

    with tempfile.TemporaryDirectory() as tmp:
        path = ROOT / "data" / "question_log.csv"
        if not args.demo:
            path = Path(tmp) / "log.csv"
            make_log(ROOT / "data" / "question_log.csv", path, rows, args.seed)
        with path.open(encoding="utf-8") as fh:
            recs = [r for r in csv.DictReader(fh) if r["question"].strip()]
    df = pd.DataFrame({
        "question": [r["question"] for r in recs],
        "answered": [bool(r["answer"].strip()) for r in recs],
        "score": [float(r["score"]) if r["score"] else np.nan for r in recs],
        "created_at": pd.to_datetime([r["created_at"] for r in recs], utc=True, format="ISO8601"),
    })
    embedder = MemoryCachedEmbedder(get_embedder("use-multilingual"))
    t = time.perf_counter()
    vectors = embedder.encode_queries(df["question"].tolist())
    t_embed = time.perf_counter() - t
    cats = classify_many(df["question"].tolist())

    def click() -> Any:
        return topics.topic_coverage(df, vectors, None, categories=cats, embedder=embedder)

    click()  # warm-up: the word vectors of the names are cached, as in the app's store cache

    def timed(label: str) -> tuple[Any, float, float]:
        t, c = time.perf_counter(), time.process_time()
        res = click()
        return res, time.perf_counter() - t, time.process_time() - c

    # ---- baseline: the old k search on all threads, names through bertopic
    have_bertopic = importlib.util.find_spec("bertopic") is not None
    saved = clusters.SINGLE_THREAD_ROWS, topic_names.name_topics, topics.choose_k
    clusters.SINGLE_THREAD_ROWS = 0
    topics.choose_k = choose_k_before  # type: ignore[assignment]
    t_import = 0.0
    if have_bertopic:
        t = time.perf_counter()
        import bertopic  # noqa: F401 - a fresh app process paid this on its first topics click

        t_import = time.perf_counter() - t
        topic_names.name_topics = lambda docs, labels, emb, **kw: bertopic_names(  # type: ignore[assignment]
            list(docs), labels, emb, embedder=kw.get("embedder"), n_terms=kw.get("n_terms", 10), slang=kw.get("slang"))
    base, t_base, c_base = timed("baseline")
    t_base += t_import
    clusters.SINGLE_THREAD_ROWS, topic_names.name_topics = saved[0], saved[1]
    # ---- last round: the old k search, single-threaded small fits, names without bertopic
    last, t_last, c_last = timed("last round")
    topics.choose_k = saved[2]  # type: ignore[assignment]
    # ---- this round's start: every call of text_ru.terms lemmatises its text again (no per-text cache)
    from voproshalych_eval.analytics import text_ru

    cached_terms = text_ru._terms_cached
    text_ru._terms_cached = text_ru._terms_pairs  # type: ignore[assignment]
    start, t_start, c_start = timed("round start")
    text_ru._terms_cached = cached_terms
    # ---- now (the first click of a process lemmatises each distinct text once; later clicks reuse it)
    cached_terms.cache_clear()
    first, t_first, c_first = timed("now, first click")
    now, t_now, c_now = timed("now")

    k_b, k_n = base.metrics["n_topics"], now.metrics["n_topics"]
    clustered = (base.labels < k_b) & (base.labels >= 0)
    ari = float(adjusted_rand_score(base.labels[clustered], now.labels[clustered]))
    same_last = bool(np.array_equal(base.labels, last.labels))
    seed_ari = now.stability.get("seeds", {})
    print(f"log: {len(df)} questions ({'demo' if args.demo else 'resampled'}), {int(clustered.sum())} clustered; "
          f"load average {os.getloadavg()[0]:.1f}; first embedding {t_embed:.1f} s (excluded)")
    print(f"{'topics step, cached embeddings':<46}{'wall s':>9}{'CPU s':>9}")
    label = "baseline (old search, all threads, bertopic" + (
        f" incl. import {t_import:.1f} s)" if have_bertopic else ": not installed)")
    print(f"{label:<46}{t_base:>9.2f}{c_base + t_import:>9.2f}")
    print(f"{'last round (old search, 1 thread, no bertopic)':<46}{t_last:>9.2f}{c_last:>9.2f}")
    print(f"{'round start (terms lemmatised on every call)':<46}{t_start:>9.2f}{c_start:>9.2f}")
    print(f"{'now, first click (empty terms cache)':<46}{t_first:>9.2f}{c_first:>9.2f}")
    print(f"{'now':<46}{t_now:>9.2f}{c_now:>9.2f}")
    same_start = (bool(np.array_equal(start.labels, now.labels)) and bool(np.array_equal(first.labels, now.labels))
                  and start.topics.equals(now.topics) and first.topics.equals(now.topics))
    print(f"ratio round start / now: {t_start / max(t_now, 1e-9):.2f}x wall, {c_start / max(c_now, 1e-9):.2f}x CPU; "
          f"round start / first click: {c_start / max(c_first, 1e-9):.2f}x CPU; identical labels and topic tables: "
          f"{same_start}")
    print(f"ratio baseline / now: {t_base / max(t_now, 1e-9):.2f}x wall; last round / now: "
          f"{t_last / max(t_now, 1e-9):.2f}x wall, {c_last / max(c_now, 1e-9):.2f}x CPU")
    print(f"k: old search {k_b}, new search {k_n}; ARI(old topics, new topics) = {ari:.3f}; seed noise of the "
          f"new topics: ARI {seed_ari.get('ari_min', float('nan')):.3f}..{max(seed_ari.get('ari', [float('nan')])):.3f}"
          f"; baseline and last round identical labels: {same_last}")
    names_b = base.topics.set_index("topic")["name"].to_dict()
    names_l = last.topics.set_index("topic")["name"].to_dict()
    names_n = now.topics.set_index("topic")["name"].to_dict()
    print(f"topic names identical: baseline vs last round {names_b == names_l}, last round vs now {names_l == names_n}; "
          f"labels identical last round vs now: {bool(np.array_equal(last.labels, now.labels))}")
    for t_ in sorted(set(names_l) | set(names_n)):
        if names_l.get(t_) != names_n.get(t_):
            print(f"  topic {t_}: {names_l.get(t_)!r} vs {names_n.get(t_)!r}")
    if not same_start:
        print("FAIL: the cached text path changed the topics")
        return 1
    if not same_last or (seed_ari.get("ari_min") is not None and ari < seed_ari["ari_min"]):
        print("FAIL: the new search agrees with the old one less than two seeds of KMeans do")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
