"""Benchmark: the topics step of a real-users click, with cached embeddings (issue "fast where people wait").

A log of ``--rows`` questions is made by resampling the demo log with small perturbations
(:func:`bench_real_users.make_log`); its questions are embedded once (excluded: in the app they come from
the embedding cache) and the word vectors the names need are cached in memory after a warm-up call (in the
app: the store's embedding cache). Then, in the same process, side by side:

* **baseline** — the topics step as it ran before this round: KMeans fits on every OpenMP/BLAS thread, the
  names computed through the ``bertopic`` package (its import paid once, as in a fresh app process; when the
  package is not installed the baseline runs without it and says so);
* **now** — :func:`voproshalych_eval.analytics.topics.topic_coverage` as the app runs it.

Both must give the same topics: the benchmark checks that k, the labels and every topic name are identical
and exits 1 otherwise. It prints seconds and the ratio baseline / now, with the load average (the machine
is shared: compare ratios, not seconds).

Usage::

    .venv/bin/python benchmarks/bench_topics_click.py [--rows 5000] [--quick]
"""

from __future__ import annotations

import argparse
import csv
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
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="1,500 rows")
    args = ap.parse_args()
    rows = 1500 if args.quick else args.rows

    import numpy as np
    import pandas as pd
    from bench_real_users import make_log

    from voproshalych_eval.analytics import topic_names, topics
    from voproshalych_eval.analytics.text_ru import classify_many
    from voproshalych_eval.embeddings import get_embedder

    with tempfile.TemporaryDirectory() as tmp:
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

    # ---- baseline: every KMeans fit on all threads, names through bertopic
    have_bertopic = True
    try:
        import importlib.util

        have_bertopic = importlib.util.find_spec("bertopic") is not None
    except ImportError:
        have_bertopic = False
    saved = topics.SINGLE_THREAD_ROWS, topic_names.name_topics
    topics.SINGLE_THREAD_ROWS = 0
    t_import = 0.0
    if have_bertopic:
        t = time.perf_counter()
        import bertopic  # noqa: F401 - a fresh app process paid this on its first topics click

        t_import = time.perf_counter() - t
        topic_names.name_topics = lambda docs, labels, emb, **kw: bertopic_names(  # type: ignore[assignment]
            list(docs), labels, emb, embedder=kw.get("embedder"), n_terms=kw.get("n_terms", 10), slang=kw.get("slang"))
    t = time.perf_counter()
    base = click()
    t_base = time.perf_counter() - t + t_import
    topics.SINGLE_THREAD_ROWS, topic_names.name_topics = saved

    # ---- now
    t = time.perf_counter()
    now = click()
    t_now = time.perf_counter() - t

    same_k = base.metrics["n_topics"] == now.metrics["n_topics"]
    same_labels = bool(np.array_equal(base.labels, now.labels))
    names_b = base.topics.set_index("topic")["name"].to_dict()
    names_n = now.topics.set_index("topic")["name"].to_dict()
    same_names = names_b == names_n
    print(f"log: {len(df)} questions; {now.metrics['n_topics']} topics; load average {os.getloadavg()[0]:.1f}; "
          f"first embedding {t_embed:.1f} s (excluded)")
    print(f"{'topics step, cached embeddings':<44}{'seconds':>10}")
    label = "baseline (all threads, bertopic" + (f" incl. import {t_import:.1f} s)" if have_bertopic else ": not installed)")
    print(f"{label:<44}{t_base:>10.2f}")
    print(f"{'now':<44}{t_now:>10.2f}")
    print(f"ratio baseline / now: {t_base / max(t_now, 1e-9):.2f}x")
    print(f"identical results: k {same_k}, labels {same_labels}, names {same_names}")
    if not (same_k and same_labels and same_names):
        for t_ in sorted(set(names_b) | set(names_n)):
            if names_b.get(t_) != names_n.get(t_):
                print(f"  topic {t_}: {names_b.get(t_)!r} vs {names_n.get(t_)!r}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
