"""Topic coverage: KMeans topics of the question log, readable names, diverse examples, ranked coverage gaps.

Every row of the log gets a topic (``n_used == len(log)``):

* rows the rule-based classifier (:func:`text_ru.classify`) marks ``greeting``, ``thanks``, ``off_topic``
  or ``jailbreak``, and elliptical follow-ups (:func:`text_ru.is_follow_up`, e.g. "а у заочников?", which
  only make sense after the previous turn) form fixed *category* topics — not clustered, and not
  coverage gaps (a cluster of greetings is not something to write in the knowledge base);
* all other rows (``question``) are clustered with scikit-learn's ``KMeans`` on their L2-normalised
  embeddings (on unit vectors squared Euclidean distance is ``2 − 2·cos``, so this is KMeans in cosine
  geometry). The number of topics ``k`` is the one with the best mean silhouette (cosine distance, computed
  exactly from cluster sums: :func:`~voproshalych_eval.metrics.clusters.cosine_silhouette`) over ``k_range``,
  on a random sample of at most ``sample_size`` questions (one shared k-means++ seeding, short candidate fits:
  :func:`choose_k`); ``k_topics`` overrides it. The final KMeans runs on all clustered rows to convergence,
  initialised from the sample's centroids (on the distinct rows weighted by their repeats: the same fit).

Caps lock: case-sensitive embedders put questions typed with caps lock on ("пАРУ ПЕРЕНЕСЛИ ГДЕ СМОТРЕТЬ")
into one cluster of their own whatever they ask about. With an ``embedder``, questions whose letters are
mostly capitals (:func:`caps_rows`: at least 60% of at least 8 letters) are re-embedded in lower case for the
topics (clustering, centres, examples); retrieval and the other analyses keep the stored vectors.

Names: keywords by c-TF-IDF (distinctive) + MMR (diverse) over pymorphy3 lemmas without stop words and
filler — BERTopic's representation pipeline, see :mod:`~voproshalych_eval.analytics.topic_names`.

Name coverage: the share of a topic's questions that contain at least one of the words of its name (as
lemmas). A low value (below :data:`MIXED_NAME_COVERAGE`) marks a *mixed* topic — KMeans put questions on
different subjects together (typical of a weak silhouette), and no keyword name can describe it; the page
and the report say so instead of pretending the name fits.

Examples (:func:`representative_examples`): the questions closest to the topic centre after removing
near-duplicates — a question is skipped when its cosine similarity to an example already chosen is at
least ``near_threshold`` (0.92, as in the domain analysis) or its content text (lemmas without stop words,
in order) is a near-copy of that example's (``difflib`` ratio >= 0.88: typos, "как записатбся на
пересдачу" vs "Как записаться на пересдачу"); each example carries the number of the topic's questions that
are its near-duplicates (shown as "×14").

Answer rates: ``answered_share`` = non-empty answer (raw); ``effective_answered_share`` = a real answer
after the answer classifier (:mod:`~voproshalych_eval.analytics.answers`) removed not-found replies,
refusals and templates. Gaps use the effective rate.

Trust (:func:`seed_stability`, :func:`k_stability`): the mean adjusted Rand index between the topics and
KMeans runs with other random seeds (1 = the same partition, ~0 = chance), and the ``k`` the silhouette picks
on other random samples. Silhouette itself is in ``[−1, 1]``: above 0.5 clear clusters, 0.25–0.5 reasonable,
below 0.25 weak — usual for short questions, whose topics overlap; then judge the topics by their names and
examples, and by the stability numbers (:data:`SILHOUETTE_GUIDE`).

Per topic: size and share, monthly counts and share of the month (``trend``), answered shares, thumbs up /
down, mean nearest-chunk cosine similarity (top-1 of the current retriever) and distance ``1 − similarity``,
distinct chunks and pages reached in the top-k.

Coverage gap score (clustered topics only)::

    need(t)  = 0.5 * (1 - effective_answered_share(t)) + 0.5 * dist_norm(t)      in [0, 1]
    gap(t)   = sqrt(size(t) / max_size) * need(t)                                 in [0, 1]

``dist_norm`` is the topic's mean nearest-chunk distance min-max scaled over the clustered topics
(1 = the farthest topic from the knowledge base). The square root keeps a small topic the knowledge
base does not cover at all above a large, well-served one. Higher = write this next.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import numpy as np
import pandas as pd

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.analytics.domain import DEFAULT_TZ
from voproshalych_eval.analytics.question_log import SCORE_DOWN, SCORE_UP
from voproshalych_eval.analytics.topic_names import keyphrase, name_topics
from voproshalych_eval.analytics.topic_trends import topic_trends
from voproshalych_eval.analytics.utilization import LogRetrieval
from voproshalych_eval.metrics.clusters import cosine_silhouette, kmeans, seeding  # the one KMeans rule
from voproshalych_eval.metrics.threads import limit_threads

CATEGORY_TOPICS = ("follow_up", "off_topic", "greeting", "thanks", "jailbreak")
CATEGORY_NAMES = {
    "follow_up": ("уточнения в диалоге (нужен контекст)", "follow-ups (need the previous turn)"),
    "off_topic": ("вне тематики университета", "off-topic"),
    "greeting": ("приветствия", "greetings"),
    "thanks": ("благодарности и реакции", "thanks and reactions"),
    "jailbreak": ("попытки jailbreak", "jailbreak attempts"),
}
GAP_FORMULA = (
    "need = 0.5·(1 − effective_answered_share) + 0.5·dist_norm;  gap = √(size / max_size) · need  "
    "(effective: real answers only, declines removed; dist_norm: mean nearest-chunk cosine distance, "
    "min–max scaled over topics)"
)
NEAR_THRESHOLD = 0.92
MIXED_NAME_COVERAGE = 0.3
SILHOUETTE_GUIDE = (
    (0.5, "сильная структура: темы чётко разделены", "strong structure: topics are clearly separated"),
    (0.25, "умеренная структура: темы различимы, границы размыты", "reasonable structure: topics differ, borders blur"),
    (-1.0, "слабая структура — обычное дело для коротких вопросов: темы перекрываются; судите о темах по "
           "названиям, примерам и устойчивости (ARI)",
     "weak structure — usual for short questions: topics overlap; judge the topics by their names, examples "
     "and stability (ARI)"),
)


def silhouette_verdict(value: float | None, lang: str = "ru") -> str:
    """What a silhouette value means (:data:`SILHOUETTE_GUIDE`, rules of thumb of Kaufman & Rousseeuw)."""
    if value is None or not np.isfinite(value):
        return "—"
    for lo, ru, en in SILHOUETTE_GUIDE:
        if value >= lo:
            return ru if lang == "ru" else en
    return SILHOUETTE_GUIDE[-1][1 if lang == "ru" else 2]


def unit_rows(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32."""
    X = np.asarray(X, dtype=np.float32)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.ascontiguousarray(X / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def caps_rows(texts: list[str], *, min_letters: int = 8, min_share: float = 0.6) -> np.ndarray:
    """Rows typed with caps lock on: at least ``min_share`` of at least ``min_letters`` letters are capitals."""
    out = np.zeros(len(texts), dtype=bool)
    for i, t in enumerate(texts):
        t = str(t)
        if len(t) < min_letters or sum(map(str.isupper, t)) < min_share * min_letters:
            continue  # too short, or too few capitals of any kind to be min_share of min_letters letters
        letters = [c for c in t if c.isalpha()]
        if len(letters) >= min_letters and sum(c.isupper() for c in letters) >= min_share * len(letters):
            out[i] = True
    return out


#: Lloyd iterations of each candidate of the k search (:func:`choose_k`); the chosen k's fit then runs to convergence
SEARCH_ITER = 10
#: threads fitting the k search's candidates at once (the machine's cores, at most 2)
SEARCH_WORKERS = max(1, min(2, os.cpu_count() or 1))


def _sample(n: int, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=size, replace=False)) if n > size else np.arange(n)


def choose_k(
    X: np.ndarray,
    *,
    k_range: tuple[int, int] = (4, 30),
    sample_size: int = 2500,
    seed: int = 0,
    search_iter: int = SEARCH_ITER,
) -> tuple[int, pd.DataFrame, np.ndarray | None]:
    """The k in ``k_range`` (inclusive) with the best cosine silhouette on a random sample of at most
    ``sample_size`` unit rows; returns ``(k, table of k/silhouette/inertia, centroids of the best k)``.

    The sample is seeded once with k-means++ for the largest k (:func:`~voproshalych_eval.metrics.clusters.seeding`);
    each candidate k starts from the first k of those centres and runs ``search_iter`` Lloyd iterations (fewer
    only when no label changes), and
    its silhouette is exact (:func:`~voproshalych_eval.metrics.clusters.cosine_silhouette`, ``O(n·k·d)``). The
    caller fits the chosen k on all rows from the returned centroids, to convergence.

    Before (issue 28) every candidate had its own k-means++ seeding and ran to convergence, and the silhouette
    came from the sample's full distance matrix: 27 full fits were two thirds of a topics click. On the demo
    log (2,455 clustered questions) both searches choose k = 30 and the final topics are identical (adjusted
    Rand index 1.0; ``benchmarks/bench_topics_click.py`` prints the comparison); two KMeans runs of the same k
    with different seeds agree only to ARI ≈ 0.42–0.49 there, so a search that lands elsewhere would still be
    within the seed noise. The silhouette values differ from the old table by the shorter candidate fits.
    """
    S = X[_sample(X.shape[0], sample_size, seed)]
    n_distinct = len(np.unique(S, axis=0))
    lo, hi = max(2, k_range[0]), min(k_range[1], n_distinct - 1)
    rows = []
    best: tuple[float, int, np.ndarray | None] = (-2.0, max(1, min(lo, n_distinct)), None)
    centres = seeding(S, hi, seed=seed) if hi >= lo else None

    def candidate(k: int) -> tuple[int, float, float, np.ndarray] | None:
        assert centres is not None
        model = kmeans(S, k, seed=seed, init=centres[:k], max_iter=search_iter, tol=0.0)
        if len(np.unique(model.labels_)) < 2:
            return None
        return k, cosine_silhouette(S, model.labels_), float(model.inertia_), model.cluster_centers_

    # the candidates are independent (deterministic from the shared seeding): SEARCH_WORKERS threads fit them
    # (scikit-learn's Lloyd loop and BLAS release the GIL), every pool held at one thread for the whole search
    with limit_threads(1), ThreadPoolExecutor(SEARCH_WORKERS) as pool:
        results = list(pool.map(candidate, range(lo, hi + 1)))
    for res in results:  # in k order, as the sequential search
        if res is None:
            continue
        k, score, inertia, fitted = res
        rows.append({"k": k, "silhouette": score, "inertia": inertia})
        if score > best[0] + 1e-12:
            best = (score, k, fitted)
    return best[1], pd.DataFrame(rows, columns=["k", "silhouette", "inertia"]), best[2]


def _fit_distinct(X: np.ndarray, k: int, init: np.ndarray) -> np.ndarray:
    """Labels of the final fit from ``init``, run on the distinct rows weighted by their repeats (a 50,000-row
    log has ~19,000 distinct questions): the same centres and labels as on every row, at the cost of the
    distinct ones. scikit-learn's tolerance is ``tol`` times the mean feature variance of the rows it is given
    (unweighted), so ``tol`` is rescaled to the variance of all rows: the same stopping rule."""
    X = np.ascontiguousarray(X)
    _, first, inverse, counts = np.unique(X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel(),
                                          return_index=True, return_inverse=True, return_counts=True)
    D = X[first].astype(np.float64)
    var_all = float(np.mean(np.var(X.astype(np.float64), axis=0)))
    var_distinct = float(np.mean(np.var(D, axis=0)))
    tol = 1e-4 * var_all / var_distinct if var_distinct > 0 else 1e-4
    model = kmeans(D, k, init=init, tol=tol, sample_weight=counts.astype(np.float64))
    return np.asarray(model.labels_, dtype=np.int64)[np.asarray(inverse).ravel()]


def seed_stability(X: np.ndarray, labels: np.ndarray, k: int, *, seeds: tuple[int, ...] = (1, 2, 3),
                   sample_size: int = 5000, seed: int = 0, n_init: int = 1) -> dict[str, Any]:
    """Adjusted Rand index between ``labels`` and KMeans with other random seeds, on a sample of at most
    ``sample_size`` rows: ``{"ari_mean", "ari_min", "ari": [...], "seeds", "n"}`` (1 = identical partition)."""
    from sklearn.metrics import adjusted_rand_score  # heavy: defers sklearn

    if k < 2 or X.shape[0] <= k:
        return {"ari_mean": None, "ari_min": None, "ari": [], "seeds": list(seeds), "n": int(X.shape[0])}
    idx = _sample(X.shape[0], sample_size, seed)
    S, base = X[idx], labels[idx]
    aris = [float(adjusted_rand_score(base, kmeans(S, k, seed=s, n_init=n_init).labels_)) for s in seeds]
    return {"ari_mean": float(np.mean(aris)), "ari_min": float(np.min(aris)), "ari": aris, "seeds": list(seeds),
            "n": len(idx)}


def k_stability(X: np.ndarray, *, k_range: tuple[int, int], runs: int = 3, sample_size: int = 2500,
                seed: int = 0, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """The k the silhouette picks on ``runs`` other random samples (one row per run: seed, k, silhouette).

    ``progress(run, runs)`` before each sample (a progress bar)."""
    out = []
    for r in range(1, runs + 1):
        if progress is not None:
            progress(r, runs)
        k, scores, _ = choose_k(X, k_range=k_range, sample_size=sample_size, seed=seed + 1000 * r)
        best = float(scores["silhouette"].max()) if len(scores) else None
        out.append({"run": r, "sample_seed": seed + 1000 * r, "k": int(k), "silhouette": best})
    return pd.DataFrame(out, columns=["run", "sample_seed", "k", "silhouette"])


TEXT_RATIO = 0.88


def _text_dup(a: str, b: str, ratio: float = TEXT_RATIO, matchers: dict[str, Any] | None = None) -> bool:
    """Near-copies of content text (``difflib.SequenceMatcher`` ratio; empty texts never match).

    ``matchers`` caches one matcher per ``b`` (difflib indexes its second text once; the same result)."""
    if not a or not b:
        return False
    if a == b:
        return True
    if 2.0 * min(len(a), len(b)) / (len(a) + len(b)) < ratio:  # difflib's real_quick_ratio, without indexing b
        return False

    m = matchers.get(b) if matchers is not None else None
    if m is None:
        m = SequenceMatcher(None, "", b, autojunk=False)
        if matchers is not None:
            matchers[b] = m
    m.set_seq1(a)
    return m.quick_ratio() >= ratio and m.ratio() >= ratio


def representative_examples(
    texts: list[str],
    X: np.ndarray,
    center: np.ndarray,
    *,
    n: int = 3,
    near_threshold: float = NEAR_THRESHOLD,
    keys: list[str] | None = None,
) -> tuple[list[int], list[int]]:
    """Rows (positions in ``texts``) of up to ``n`` examples and their repeat counts (module docstring).

    ``X`` are the rows' unit vectors, ``center`` the topic centre, ``keys`` the rows' content texts
    (default: their lemmas without stop words). Returned examples are pairwise below ``near_threshold``
    cosine similarity; every row counts towards the most similar example it duplicates.
    """
    if not len(texts):
        return [], []
    c = center / (np.linalg.norm(center) or 1.0)
    order = np.argsort(-(X @ c), kind="stable")
    keys = keys if keys is not None else [" ".join(text_ru.terms(t)) for t in texts]  # type: ignore[arg-type]
    picked: list[int] = []
    matchers: dict[str, Any] = {}
    for i in order:
        if len(picked) >= n:
            break
        i = int(i)
        if picked:
            sims = X[picked] @ X[i]
            if (sims >= near_threshold).any() or any(_text_dup(keys[i], keys[j], matchers=matchers) for j in picked):
                continue
        picked.append(i)
    S = X @ X[picked].T  # (rows, examples)
    memo: dict[tuple[str, int], bool] = {}

    def text_dup(r: int, e: int) -> bool:
        key = (keys[r], e)
        if key not in memo:
            memo[key] = _text_dup(keys[r], keys[picked[e]], matchers=matchers)
        return memo[key]

    dup = np.greater_equal(S, near_threshold)
    # the text test depends on the row's key only: decided once per distinct key, then spread to its rows
    first: dict[str, int] = {}
    key_row = np.fromiter((first.setdefault(k, r) for r, k in enumerate(keys)), dtype=np.int64, count=len(keys))
    for e in range(len(picked)):
        todo = np.flatnonzero(~dup[:, e])
        if todo.size:
            hit = {int(r) for r in np.unique(key_row[todo]) if text_dup(int(r), e)}
            if hit:
                dup[todo[np.isin(key_row[todo], list(hit))], e] = True
    best = np.where(dup, S, -np.inf).argmax(axis=1)
    counts = [int(((best == e) & dup.any(axis=1)).sum()) for e in range(len(picked))]
    return picked, counts


def format_example(text: str, count: int) -> str:
    """An example with its repeat count: ``"как закрыть пропуски? ×14"`` (no suffix for a single question)."""
    return f"{text} ×{count}" if count > 1 else text


@dataclass
class TopicResult:
    labels: np.ndarray  # topic id per log row
    topics: pd.DataFrame
    gaps: pd.DataFrame
    trend: pd.DataFrame  # topic, period, n, share (of the month)
    k_scores: pd.DataFrame
    metrics: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    centroids: np.ndarray | None = None  # (n_clustered_topics, dim) unit centres of topics 0..k-1
    stability: dict[str, Any] = field(default_factory=dict)
    trends: Any = None  # topic_trends.TopicTrends of the default period (the latest month vs the one before)

    def to_dict(self, *, max_rows: int = 30) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "params": self.params,
            "gap_formula": GAP_FORMULA,
            "k_scores": self.k_scores.to_dict(orient="records"),
            "stability": {k: (v.to_dict(orient="records") if isinstance(v, pd.DataFrame) else v)
                          for k, v in self.stability.items()},
            "topics": self.topics.head(max_rows).to_dict(orient="records"),
            "gaps": self.gaps.head(max_rows).to_dict(orient="records"),
            "trends": self.trends.to_dict(max_rows=max_rows) if self.trends is not None else None,
        }


def _slope(y: np.ndarray) -> float:
    if len(y) < 2:
        return 0.0
    x = np.arange(len(y), dtype=float)
    return float(np.polyfit(x, y, 1)[0])


def month_of(created: pd.Series, tz: str = DEFAULT_TZ) -> pd.Series:
    """``YYYY-MM`` of each timestamp in the bot's time zone (None without a timestamp)."""
    if not created.notna().any():
        return pd.Series([None] * len(created), index=created.index, dtype=object)
    out = created.dt.tz_convert(tz).dt.tz_localize(None).dt.to_period("M").astype(str)
    return out.where(created.notna(), None)


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
    near_threshold: float = NEAR_THRESHOLD,
    categories: list[str] | None = None,
    answer_classes: np.ndarray | None = None,
    slang: text_ru.SlangNormalizer | None = None,
    embedder: Any | None = None,
    stability_seeds: tuple[int, ...] = (1, 2, 3),
    k_stability_runs: int = 0,
    memory: Any | None = None,
    trend_end: str | None = None,
    trend_window: int = 1,
    lang: str = "ru",
) -> TopicResult:
    """Topics, per-topic statistics and ranked coverage gaps for the whole filtered log (module docstring).

    ``answer_classes`` (one class per row, :mod:`answers`) gives the effective answered share; without it
    the raw one is used for both. ``embedder`` embeds candidate keywords for MMR. ``memory`` (a
    :class:`~voproshalych_eval.analytics.topic_memory.TopicMemory`) renames and merges topics the user
    named before, matched by centroid.
    """
    n = len(log)
    if n != vectors.shape[0]:
        raise ValueError(f"{n} log rows but {vectors.shape[0]} vectors")
    questions = log["question"].astype(str).tolist()
    empty = [i for i, q in enumerate(questions) if not q.strip()]
    if empty:
        raise ValueError(f"topics need question text, but {len(empty)} of {n} rows have none (rows "
                         f"{', '.join(map(str, empty[:5]))}{', …' if len(empty) > 5 else ''}); take "
                         "question_log.text_rows(log) first")
    cats = np.asarray(categories if categories is not None else text_ru.classify_many(questions, slang=slang))
    groups = cats.astype(object).copy()
    follow = np.fromiter((text_ru.is_follow_up(q) for q in questions), dtype=bool, count=n)
    groups[(cats == "question") & follow] = "follow_up"
    cluster_mask = ~np.isin(groups, CATEGORY_TOPICS)
    U = unit_rows(vectors) if n else np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0), np.float32)
    caps = caps_rows(questions)
    if embedder is not None and caps.any():
        U = U.copy()
        U[caps] = unit_rows(np.asarray(embedder.encode_queries([questions[i].lower() for i in np.flatnonzero(caps)])))
    Xc = U[cluster_mask]
    labels = np.full(n, -1, dtype=np.int64)
    k_scores = pd.DataFrame(columns=["k", "silhouette", "inertia"])
    k_chosen = 0
    stability: dict[str, Any] = {}
    if len(Xc) >= 3:
        if k_topics is not None:
            k_chosen = max(1, min(int(k_topics), len(np.unique(Xc, axis=0))))
            lab = kmeans(Xc, k_chosen, seed=seed, n_init=2).labels_.astype(np.int64)
        else:
            k_chosen, k_scores, centroids = choose_k(Xc, k_range=k_range, sample_size=sample_size, seed=seed)
            if centroids is not None and len(centroids) == k_chosen:
                lab = _fit_distinct(Xc, k_chosen, centroids)
            else:
                lab = kmeans(Xc, k_chosen, seed=seed, n_init=2).labels_.astype(np.int64)
        if stability_seeds:
            stability["seeds"] = seed_stability(Xc, lab, k_chosen, seeds=stability_seeds, seed=seed)
        if k_stability_runs and k_topics is None:
            stability["k"] = k_stability(Xc, k_range=k_range, runs=k_stability_runs, sample_size=sample_size, seed=seed)
        labels[cluster_mask] = lab
    elif len(Xc):
        k_chosen = 1
        labels[cluster_mask] = 0
    renamed: dict[int, dict[str, Any]] = {}
    if memory is not None and k_chosen:
        sub, renamed = memory.apply(labels[cluster_mask], Xc)
        labels[cluster_mask] = sub
        k_chosen = int(sub.max()) + 1 if len(sub) else 0
    centers = np.zeros((k_chosen, U.shape[1]), dtype=np.float32)
    for t in range(k_chosen):
        m = labels == t
        if m.any():
            centers[t] = U[m].mean(axis=0)
    centers = unit_rows(centers) if k_chosen else centers
    cat_ids: dict[str, int] = {}
    for j, c in enumerate(CATEGORY_TOPICS):
        m = groups == c
        if m.any():
            cat_ids[c] = k_chosen + j
            labels[m] = k_chosen + j

    # ---- names: c-TF-IDF + MMR (BERTopic's method) over the distinct questions of the clustered topics
    norm = [text_ru.normalize(q) for q in questions]
    seen: set[tuple[int, str]] = set()
    distinct_rows = []
    for i in np.flatnonzero(cluster_mask):
        key = (int(labels[i]), norm[i])
        if key not in seen:
            seen.add(key)
            distinct_rows.append(int(i))
    named = name_topics([questions[i] for i in distinct_rows], labels[distinct_rows], U[distinct_rows],
                        embedder=embedder, n_terms=max(n_terms, 8), slang=slang) if distinct_rows else {}

    period = month_of(log["created_at"])
    sim = retrieval_result.top1_similarity if retrieval_result is not None else np.full(n, np.nan)
    answered = log["answered"].to_numpy(bool)
    effective = (np.asarray(answer_classes) == "answer") if answer_classes is not None else answered
    score = log["score"].to_numpy(dtype="float64", na_value=np.nan)
    frame = pd.DataFrame({"topic": labels, "period": period.to_numpy()})
    trend = (
        frame.dropna(subset=["period"]).groupby(["topic", "period"]).size().rename("n").reset_index()
        if frame["period"].notna().any()
        else pd.DataFrame(columns=["topic", "period", "n"])
    )
    month_tot = trend.groupby("period")["n"].sum() if len(trend) else pd.Series(dtype=float)
    trend["share"] = (trend["n"] / trend["period"].map(month_tot)).astype(float) if len(trend) else []
    all_months = sorted(month_tot.index)
    key_of: dict[str, str] = {}
    for q in questions:
        if q not in key_of:
            key_of[q] = " ".join(text_ru.terms(q))  # type: ignore[arg-type]
    content = [key_of[q] for q in questions]
    # monthly share of each topic, one table (was a filter + reindex per topic: the same float64 divisions)
    month_den = month_tot.reindex(all_months).replace(0, np.nan) if len(trend) else pd.Series(dtype=float)
    shares = ((trend.pivot(index="topic", columns="period", values="n").reindex(columns=all_months)
               .fillna(0).astype(float) / month_den).fillna(0) if len(trend) else pd.DataFrame())

    rows = []
    for t in sorted(set(labels.tolist())):
        m = labels == t
        idx = np.flatnonzero(m)
        is_cat = t >= k_chosen
        cat_name = next((c for c, v in cat_ids.items() if v == t), None)
        center = centers[t] if not is_cat else U[idx].mean(axis=0)
        pos, counts = representative_examples([questions[i] for i in idx], U[idx], center, n=n_examples,
                                              near_threshold=near_threshold, keys=[content[i] for i in idx])
        examples = [questions[idx[p]] for p in pos]
        keywords = named.get(t).terms if (not is_cat and t in named) else []
        name_source = "keywords"
        if is_cat and cat_name:
            name, name_source = CATEGORY_NAMES[cat_name][0 if lang == "ru" else 1], "category"
        elif (phrase := keyphrase([questions[idx[p]] for p in pos] + [questions[i] for i in idx], keywords)) is not None:
            name, name_source = phrase  # an agreed adjective + noun, or the central question shortened
        else:
            name = ", ".join(keywords[:n_terms])
        user_name = renamed.get(t, {}).get("name")
        if user_name:
            name, name_source = user_name, "user"
        if not name:
            name = examples[0][:60] if examples else f"topic {t}"
        name_words = set(keywords[:n_terms])
        coverage = (float(np.mean([bool(name_words & set(content[i].split())) for i in idx]))
                    if name_words and len(idx) else None)
        ids_t = retrieval_result.chunk_ids[idx] if retrieval_result is not None else np.zeros((0, 0), dtype=np.int64)
        urls_t = retrieval_result.urls[idx] if retrieval_result is not None else np.zeros((0, 0), dtype=object)
        share_series = (shares.loc[t].to_numpy(dtype=float) if t in shares.index
                        else np.zeros(len(all_months)))
        sims = sim[idx]
        rated_up = int((score[idx] == SCORE_UP).sum())
        rated_down = int((score[idx] == SCORE_DOWN).sum())
        cat_counts = Counter(cats[idx].tolist())
        rows.append(
            {
                "topic": int(t),
                "name": name,
                "name_source": name_source,
                "kind": "category" if is_cat else "cluster",
                "terms": keywords,
                "name_coverage": coverage,
                "mixed": bool(coverage is not None and coverage < MIXED_NAME_COVERAGE and not user_name),
                "user_named": bool(user_name),
                "merged_from": renamed.get(t, {}).get("merged", 1),
                "stored_ids": list(renamed.get(t, {}).get("stored_ids", [])),
                "size": int(m.sum()),
                "share": float(m.sum() / n) if n else 0.0,
                "answered_share": float(answered[idx].mean()) if len(idx) else None,
                "effective_answered_share": float(effective[idx].mean()) if len(idx) else None,
                "declined": int((answered[idx] & ~effective[idx]).sum()),
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
                "example_counts": counts,
            }
        )
    topics = pd.DataFrame(rows)
    gaps = rank_gaps(topics)
    topics = topics.merge(gaps[["topic", "need", "gap_score", "gap_rank"]], on="topic", how="left")
    topics = topics.sort_values(["kind", "size"], ascending=[False, False]).reset_index(drop=True)
    best_sil = float(k_scores["silhouette"].max()) if len(k_scores) else None
    metrics: dict[str, Any] = {
        "n_questions_used": n,
        "n_clustered": int(cluster_mask.sum()),
        "n_topics": int(k_chosen),
        "best_silhouette": best_sil,
        "answered_rate": float(answered.mean()) if n else None,
        "effective_answered_rate": float(effective.mean()) if n else None,
        "mean_top1_similarity": float(np.nanmean(sim)) if n and np.isfinite(sim).any() else None,
        "seed_ari_mean": stability.get("seeds", {}).get("ari_mean"),
        "seed_ari_min": stability.get("seeds", {}).get("ari_min"),
        "n_user_named": int(sum(1 for r in renamed.values() if r.get("name"))),
        "n_caps_lowercased": int(caps.sum()) if embedder is not None else 0,
    }
    params = {
        "k_topics": k_topics,
        "k_range": list(k_range),
        "sample_size": sample_size,
        "seed": seed,
        "k_chosen_by": "override" if k_topics is not None else "silhouette",
        "clusterer": "sklearn.cluster.KMeans on L2-normalised embeddings",
        "names": "keyphrase (adjective + noun agreed by pymorphy3) or the central question shortened; keywords: c-TF-IDF + MMR over pymorphy3 lemmas" + ("" if embedder is not None else " (no MMR: no embedder)"),
        "near_threshold": near_threshold,
        "classifier": "rule-based (text_ru.CLASSIFIER_RULES)",
    }

    names = dict(zip(topics["topic"].astype(int), topics["name"], strict=True))
    trends = topic_trends(labels, period, names, effective=effective, topics=list(range(k_chosen)),
                          end=trend_end, window=trend_window,
                          texts=questions)
    metrics["n_emerging_topics"] = int((trends.changes["status"] == "emerging").sum())
    metrics["n_growing_topics"] = int((trends.changes["status"] == "growing").sum())
    metrics["n_emerging_terms"] = int(len(trends.terms))
    return TopicResult(labels, topics, gaps, trend, k_scores, metrics, params, centers, stability, trends)


def rank_gaps(topics: pd.DataFrame) -> pd.DataFrame:
    """Coverage-gap ranking of the clustered topics (formula :data:`GAP_FORMULA`); mixed topics below clean ones,
    off-topic topics last."""
    cols = ["gap_rank", "topic", "name", "name_coverage", "mixed", "size", "answered_share", "effective_answered_share",
            "declined",
            "nearest_distance", "nearest_similarity", "dist_norm", "need", "gap_score", "thumbs_down",
            "distinct_pages", "off_topic", "examples", "example_counts"]
    cl = topics[topics["kind"] == "cluster"].copy() if len(topics) else topics.copy()
    if cl.empty:
        return pd.DataFrame(columns=cols)
    d = cl["nearest_distance"].astype(float)
    if d.notna().any() and d.max() > d.min():
        dist_norm = (d - d.min()) / (d.max() - d.min())
    else:
        dist_norm = pd.Series(0.0, index=cl.index)
    cl["dist_norm"] = dist_norm.fillna(0.0)
    cl["need"] = 0.5 * (1 - cl["effective_answered_share"].astype(float)) + 0.5 * cl["dist_norm"]
    cl["gap_score"] = np.sqrt(cl["size"] / cl["size"].max()) * cl["need"]
    cl["off_topic"] = cl["off_topic_share"] > 0.5
    # mixed topics (their name covers few of their questions) rank below clean ones: a mixed cluster is not one gap
    cl["mixed"] = cl["mixed"].fillna(False).astype(bool) if "mixed" in cl else False
    cl = cl.sort_values(["off_topic", "mixed", "gap_score", "size"], ascending=[True, True, False, False]).reset_index(drop=True)
    cl["gap_rank"] = np.arange(1, len(cl) + 1)
    return cl[cols]
