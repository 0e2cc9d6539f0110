"""Topic coverage: KMeans topics of the question log, named by c-TF-IDF terms, and ranked coverage gaps.

Every row of the log gets a topic (``n_used == len(log)``):

* rows the rule-based classifier (:func:`text_ru.classify`) marks ``greeting``, ``thanks``, ``off_topic``
  or ``jailbreak``, and elliptical follow-ups (:func:`text_ru.is_follow_up`, e.g. "а у заочников?", which
  only make sense after the previous turn) form fixed *category* topics — not clustered, and not
  coverage gaps (a cluster of greetings is not something to write in the knowledge base);
* all other rows (``question``) are clustered with KMeans on their unit embeddings (spherical KMeans:
  cosine similarity, centroids renormalised). The number of topics ``k`` is the one with the best mean
  silhouette (cosine distance) over ``k_range``, computed on a random sample of at most ``sample_size``
  questions for speed; ``k_topics`` overrides it. The final KMeans runs on all clustered rows,
  initialised from the sample's centroids.

Names: class-based TF-IDF over normalised Russian terms (stop words removed, slang mapped, Snowball
stems shown as their most frequent word form): ``w(t, c) = tf(t, c) / |c| * log(1 + A / f(t))`` where
``tf(t, c)`` is the count of term ``t`` in topic ``c``, ``|c|`` the topic's total term count, ``A`` the
mean term count per topic and ``f(t)`` the count of ``t`` over all topics. The top terms name the topic;
the representative questions are the distinct questions closest to the centroid.

Per topic: size and share, monthly trend (and its slope in share points per month), answered share,
thumbs up / down, mean nearest-chunk cosine similarity (top-1 of the current retriever) and distance
``1 - similarity``, distinct chunks and pages reached in the top-k.

Coverage gap score (clustered topics only)::

    need(t)  = 0.5 * (1 - answered_share(t)) + 0.5 * dist_norm(t)            in [0, 1]
    gap(t)   = sqrt(size(t) / max_size) * need(t)                             in [0, 1]

``dist_norm`` is the topic's mean nearest-chunk distance min-max scaled over the clustered topics
(1 = the farthest topic from the knowledge base). The square root keeps a small topic the knowledge
base does not cover at all above a large, well-served one. Higher = write this next.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.analytics.question_log import SCORE_DOWN, SCORE_UP
from voproshalych_eval.analytics.utilization import LogRetrieval

CATEGORY_TOPICS = ("follow_up", "off_topic", "greeting", "thanks", "jailbreak")
CATEGORY_NAMES = {
    "follow_up": ("уточнения в диалоге (нужен контекст)", "follow-ups (need the previous turn)"),
    "off_topic": ("вне тематики университета", "off-topic"),
    "greeting": ("приветствия", "greetings"),
    "thanks": ("благодарности и реакции", "thanks and reactions"),
    "jailbreak": ("попытки jailbreak", "jailbreak attempts"),
}
GAP_FORMULA = (
    "need = 0.5·(1 − answered_share) + 0.5·dist_norm;  gap = √(size / max_size) · need  "
    "(dist_norm: mean nearest-chunk cosine distance, min–max scaled over topics)"
)


def _kmeanspp(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding with cosine distance ``1 - <x, c>`` on unit rows."""
    n = X.shape[0]
    centers = [int(rng.integers(n))]
    d = np.maximum(1.0 - X @ X[centers[0]], 0.0).astype(np.float64)
    for _ in range(1, k):
        total = d.sum()
        nxt = int(rng.integers(n)) if total <= 0 else int(rng.choice(n, p=d / total))
        centers.append(nxt)
        d = np.minimum(d, np.maximum(1.0 - X @ X[nxt], 0.0))
    return X[centers].copy()


def spherical_kmeans(
    X: np.ndarray,
    k: int,
    *,
    seed: int = 0,
    n_init: int = 3,
    max_iter: int = 100,
    init: np.ndarray | None = None,
    tol: float = 1e-5,
) -> tuple[np.ndarray, np.ndarray, float]:
    """KMeans on unit vectors with cosine similarity (Lloyd iterations, centroids renormalised).

    Minimises ``sum_i (1 - <x_i, c_{label(i)}>)`` — on unit vectors equivalent to Euclidean KMeans up to
    the centroid normalisation. Returns ``(labels, centers, objective)``; the best of ``n_init``
    k-means++ starts (or the given ``init``). Pure numpy matrix products: fast on 2 cores.
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    rng = np.random.default_rng(seed)
    best: tuple[np.ndarray, np.ndarray, float] | None = None
    for run in range(1 if init is not None else max(1, n_init)):
        C = np.asarray(init, dtype=np.float32).copy() if init is not None else _kmeanspp(X, k, rng)
        prev = np.inf
        labels = np.zeros(X.shape[0], dtype=np.int64)
        for _ in range(max_iter):
            S = X @ C.T
            labels = S.argmax(axis=1)
            obj = float((1.0 - S[np.arange(X.shape[0]), labels]).sum())
            C_new = np.zeros_like(C)
            np.add.at(C_new, labels, X)
            norms = np.linalg.norm(C_new, axis=1)
            empty = norms == 0
            if empty.any():  # re-seed empty clusters at the worst-served points
                worst = np.argsort(S[np.arange(X.shape[0]), labels])[: int(empty.sum())]
                C_new[empty] = X[worst]
                norms[empty] = 1.0
            C = (C_new / norms[:, None]).astype(np.float32)
            if prev - obj <= tol * max(prev, 1.0):
                break
            prev = obj
        S = X @ C.T
        labels = S.argmax(axis=1)
        obj = float((1.0 - S[np.arange(X.shape[0]), labels]).sum())
        if best is None or obj < best[2]:
            best = (labels, C, obj)
        del run
    assert best is not None
    return best


def silhouette_cosine(D: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette ``(b - a) / max(a, b)`` from a precomputed cosine distance matrix ``D`` (singletons: 0)."""
    k = int(labels.max()) + 1
    onehot = np.zeros((len(labels), k), dtype=np.float32)
    onehot[np.arange(len(labels)), labels] = 1.0
    counts = onehot.sum(axis=0)
    sums = D @ onehot  # (n, k): total distance of each point to each cluster
    own = counts[labels]
    a = sums[np.arange(len(labels)), labels] / np.maximum(own - 1, 1)
    other = sums / np.where(counts > 0, counts, np.inf)
    other[np.arange(len(labels)), labels] = np.inf
    b = other.min(axis=1)
    sil = np.where(own > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-12), 0.0)
    return float(sil.mean())


def choose_k(
    X: np.ndarray,
    *,
    k_range: tuple[int, int] = (4, 30),
    sample_size: int = 2500,
    seed: int = 0,
    n_init: int = 2,
) -> tuple[int, pd.DataFrame, np.ndarray | None]:
    """The k in ``k_range`` (inclusive) with the best cosine silhouette on a random sample of at most
    ``sample_size`` rows; returns ``(k, table of k/silhouette/objective, centroids of the best k)``."""
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(n, size=sample_size, replace=False)) if n > sample_size else np.arange(n)
    S = np.ascontiguousarray(X[idx], dtype=np.float32)
    n_distinct = len(np.unique(S, axis=0))
    lo, hi = max(2, k_range[0]), min(k_range[1], n_distinct - 1)
    D = np.maximum(1.0 - S @ S.T, 0.0).astype(np.float32)
    np.fill_diagonal(D, 0.0)
    rows = []
    best: tuple[float, int, np.ndarray | None] = (-2.0, max(1, min(lo, n_distinct)), None)
    for k in range(lo, hi + 1):
        labels, centers, obj = spherical_kmeans(S, k, seed=seed, n_init=n_init)
        if len(np.unique(labels)) < 2:
            continue
        score = silhouette_cosine(D, labels)
        rows.append({"k": k, "silhouette": score, "objective": obj})
        if score > best[0] + 1e-12:
            best = (score, k, centers)
    return best[1], pd.DataFrame(rows, columns=["k", "silhouette", "objective"]), best[2]


def c_tf_idf(docs_by_topic: dict[int, list[list[str]]], *, top_n: int = 5) -> dict[int, list[tuple[str, float]]]:
    """Top ``top_n`` (term, weight) per topic by class-based TF-IDF (formula in the module docstring)."""
    tf: dict[int, Counter[str]] = {t: Counter(term for d in docs for term in d) for t, docs in docs_by_topic.items()}
    total = Counter()
    for c in tf.values():
        total.update(c)
    sizes = {t: sum(c.values()) for t, c in tf.items()}
    A = (sum(sizes.values()) / len(sizes)) if sizes else 0.0
    out: dict[int, list[tuple[str, float]]] = {}
    for t, c in tf.items():
        if not sizes[t]:
            out[t] = []
            continue
        w = {term: (cnt / sizes[t]) * math.log(1 + A / total[term]) for term, cnt in c.items()}
        out[t] = sorted(w.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]
    return out


@dataclass
class TopicResult:
    labels: np.ndarray  # topic id per log row
    topics: pd.DataFrame
    gaps: pd.DataFrame
    trend: pd.DataFrame
    k_scores: pd.DataFrame
    metrics: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, max_rows: int = 30) -> dict[str, Any]:
        cols = [c for c in self.topics.columns if c not in ("examples",)]
        return {
            "metrics": self.metrics,
            "params": self.params,
            "gap_formula": GAP_FORMULA,
            "k_scores": self.k_scores.to_dict(orient="records"),
            "topics": self.topics[cols].head(max_rows).to_dict(orient="records"),
            "gaps": self.gaps.head(max_rows).to_dict(orient="records"),
        }


def _slope(y: np.ndarray) -> float:
    if len(y) < 2:
        return 0.0
    x = np.arange(len(y), dtype=float)
    return float(np.polyfit(x, y, 1)[0])


def topic_coverage(
    log: pd.DataFrame,
    vectors: np.ndarray,
    retrieval_result: LogRetrieval | None,
    *,
    k_topics: int | None = None,
    k_range: tuple[int, int] = (4, 30),
    sample_size: int = 2500,
    seed: int = 0,
    n_terms: int = 4,
    n_examples: int = 3,
    categories: list[str] | None = None,
    slang: text_ru.SlangNormalizer | None = None,
    lang: str = "ru",
) -> TopicResult:
    """Topics, per-topic statistics and ranked coverage gaps for the whole filtered log (see module docstring)."""
    n = len(log)
    if n != vectors.shape[0]:
        raise ValueError(f"{n} log rows but {vectors.shape[0]} vectors")
    questions = log["question"].astype(str).tolist()
    cats = np.asarray(categories if categories is not None else text_ru.classify_many(questions, slang=slang))
    groups = cats.astype(object).copy()
    follow = np.fromiter((text_ru.is_follow_up(q) for q in questions), dtype=bool, count=n)
    groups[(cats == "question") & follow] = "follow_up"
    cluster_mask = ~np.isin(groups, CATEGORY_TOPICS)
    Xc = np.ascontiguousarray(vectors[cluster_mask], dtype=np.float32)
    labels = np.full(n, -1, dtype=np.int64)
    k_scores = pd.DataFrame(columns=["k", "silhouette", "objective"])
    k_chosen = 0
    if len(Xc) >= 3:
        if k_topics is not None:
            k_chosen = max(1, min(int(k_topics), len(np.unique(Xc, axis=0))))
            init: np.ndarray | None = None
            n_init = 3
        else:
            k_chosen, k_scores, centroids = choose_k(Xc, k_range=k_range, sample_size=sample_size, seed=seed)
            init = centroids if centroids is not None and len(centroids) == k_chosen else None
            n_init = 3
        lab, centers, _ = spherical_kmeans(Xc, k_chosen, seed=seed, n_init=n_init, init=init)
        labels[cluster_mask] = lab
    elif len(Xc):
        k_chosen = 1
        labels[cluster_mask] = 0
        centers = Xc.mean(axis=0, keepdims=True)
    else:
        centers = np.zeros((0, vectors.shape[1]), dtype=np.float32)
    cat_ids: dict[str, int] = {}
    for j, c in enumerate(CATEGORY_TOPICS):
        m = groups == c
        if m.any():
            cat_ids[c] = k_chosen + j
            labels[m] = k_chosen + j

    # ---- names (clustered topics) via c-TF-IDF over normalised terms
    docs, vocab = text_ru.document_terms(questions, slang=slang)
    # each distinct normalised question counts once, so one question repeated 50 times cannot name a topic
    by_topic: dict[int, list[list[str]]] = {t: [] for t in range(k_chosen)}
    seen: set[tuple[int, str]] = set()
    for i in np.flatnonzero(cluster_mask):
        key = (int(labels[i]), text_ru.normalize(questions[i]))
        if key in seen:
            continue
        seen.add(key)
        by_topic[int(labels[i])].append(docs[i])
    top_terms = c_tf_idf(by_topic, top_n=n_terms)

    created = log["created_at"]
    period = created.dt.tz_convert(None).dt.to_period("M").astype(str) if created.notna().any() else pd.Series([None] * n)
    sim = retrieval_result.top1_similarity if retrieval_result is not None else np.full(n, np.nan)
    answered = log["answered"].to_numpy(bool)
    score = log["score"].to_numpy(dtype="float64", na_value=np.nan)
    frame = pd.DataFrame({"topic": labels, "period": period.to_numpy(), "answered": answered, "score": score,
                          "sim": sim, "category": cats})
    trend = (
        frame.dropna(subset=["period"]).groupby(["topic", "period"]).size().rename("n").reset_index()
        if frame["period"].notna().any()
        else pd.DataFrame(columns=["topic", "period", "n"])
    )
    month_tot = trend.groupby("period")["n"].sum() if len(trend) else pd.Series(dtype=float)
    all_months = sorted(month_tot.index)

    rows = []
    for t in sorted(set(labels.tolist())):
        m = labels == t
        idx = np.flatnonzero(m)
        is_cat = t >= k_chosen
        cat_name = next((c for c, v in cat_ids.items() if v == t), None)
        if is_cat and cat_name:
            name = CATEGORY_NAMES[cat_name][0 if lang == "ru" else 1]
            terms_list: list[str] = []
        else:
            terms_list = [vocab.display(term) for term, _ in top_terms.get(t, [])]
            name = ", ".join(terms_list)
        # representative questions: closest to the centroid, distinct texts
        if not is_cat and len(centers):
            d = np.linalg.norm(vectors[idx] - centers[t], axis=1)
            order = idx[np.argsort(d, kind="stable")]
        else:
            order = idx
        examples: list[str] = []
        for i in order:
            q = questions[i]
            if q not in examples:
                examples.append(q)
            if len(examples) >= n_examples:
                break
        if not name:
            name = examples[0][:60] if examples else f"topic {t}"
        ids_t = retrieval_result.chunk_ids[idx] if retrieval_result is not None else np.zeros((0, 0), dtype=np.int64)
        urls_t = retrieval_result.urls[idx] if retrieval_result is not None else np.zeros((0, 0), dtype=object)
        series = trend[trend["topic"] == t].set_index("period")["n"].reindex(all_months).fillna(0)
        share_series = (series / month_tot.reindex(all_months).replace(0, np.nan)).fillna(0).to_numpy()
        sims = sim[idx]
        rated_up = int((score[idx] == SCORE_UP).sum())
        rated_down = int((score[idx] == SCORE_DOWN).sum())
        cat_counts = Counter(cats[idx].tolist())
        rows.append(
            {
                "topic": int(t),
                "name": name,
                "kind": "category" if is_cat else "cluster",
                "terms": terms_list,
                "size": int(m.sum()),
                "share": float(m.sum() / n) if n else 0.0,
                "answered_share": float(answered[idx].mean()) if len(idx) else None,
                "thumbs_up": rated_up,
                "thumbs_down": rated_down,
                "down_share": (rated_down / (rated_up + rated_down)) if (rated_up + rated_down) else None,
                "nearest_similarity": float(np.nanmean(sims)) if np.isfinite(sims).any() else None,
                "nearest_distance": float(1 - np.nanmean(sims)) if np.isfinite(sims).any() else None,
                "distinct_chunks": int(len(np.unique(ids_t[ids_t >= 0]))) if ids_t.size else 0,
                "distinct_pages": int(len({u for u in urls_t.ravel() if u})) if urls_t.size else 0,
                "off_topic_share": float(cat_counts.get("off_topic", 0) / len(idx)) if len(idx) else 0.0,
                "trend_slope": _slope(share_series),
                "examples": examples,
            }
        )
    topics = pd.DataFrame(rows)
    gaps = rank_gaps(topics)
    topics = topics.merge(gaps[["topic", "need", "gap_score", "gap_rank"]], on="topic", how="left")
    topics = topics.sort_values(["kind", "size"], ascending=[False, False]).reset_index(drop=True)
    metrics: dict[str, Any] = {
        "n_questions_used": n,
        "n_clustered": int(cluster_mask.sum()),
        "n_topics": int(k_chosen),
        "best_silhouette": float(k_scores["silhouette"].max()) if len(k_scores) else None,
        "answered_rate": float(answered.mean()) if n else None,
        "mean_top1_similarity": float(np.nanmean(sim)) if n and np.isfinite(sim).any() else None,
    }
    params = {
        "k_topics": k_topics,
        "k_range": list(k_range),
        "sample_size": sample_size,
        "seed": seed,
        "k_chosen_by": "override" if k_topics is not None else "silhouette",
        "classifier": "rule-based (text_ru.CLASSIFIER_RULES)",
    }
    return TopicResult(labels, topics, gaps, trend, k_scores, metrics, params)


def rank_gaps(topics: pd.DataFrame) -> pd.DataFrame:
    """Coverage-gap ranking of the clustered topics (formula :data:`GAP_FORMULA`); off-topic topics last."""
    cl = topics[topics["kind"] == "cluster"].copy() if len(topics) else topics.copy()
    if cl.empty:
        return pd.DataFrame(columns=["gap_rank", "topic", "name", "size", "answered_share", "nearest_distance",
                                     "need", "gap_score", "off_topic", "examples"])
    d = cl["nearest_distance"].astype(float)
    if d.notna().any() and d.max() > d.min():
        dist_norm = (d - d.min()) / (d.max() - d.min())
    else:
        dist_norm = pd.Series(0.0, index=cl.index)
    cl["dist_norm"] = dist_norm.fillna(0.0)
    cl["need"] = 0.5 * (1 - cl["answered_share"].astype(float)) + 0.5 * cl["dist_norm"]
    cl["gap_score"] = np.sqrt(cl["size"] / cl["size"].max()) * cl["need"]
    cl["off_topic"] = cl["off_topic_share"] > 0.5
    cl = cl.sort_values(["off_topic", "gap_score", "size"], ascending=[True, False, False]).reset_index(drop=True)
    cl["gap_rank"] = np.arange(1, len(cl) + 1)
    return cl[["gap_rank", "topic", "name", "size", "answered_share", "nearest_distance", "nearest_similarity",
               "dist_norm", "need", "gap_score", "thumbs_down", "distinct_pages", "off_topic", "examples"]]
