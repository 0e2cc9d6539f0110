"""Tier 0: embedding-space geometry of chunks, logged questions, golden questions, or both in one space.

Vector sets
-----------
:func:`load_vector_set` returns a :class:`VectorSet`: an ``(N, D)`` float32 matrix from **one** model and
a metadata table (one row per vector) used for colouring, hover texts and filters.

* ``chunks`` — ``public.chunk.embedding`` when the stored vectors come from the selected model (or no
  model is selected), otherwise the chunk texts re-embedded with the selected model
  (``encode_passages`` through the database cache).
* ``questions`` — the **whole** question log ``public.question_answer``: stored vectors are used when they
  come from the selected model; every row without one is embedded with ``encode_queries`` (cached), so
  ``n`` is always the size of the log (the counts are stated in ``VectorSet.notes``).
* ``golden`` — the questions of a golden dataset (``encode_queries``).
* ``both`` — chunks + questions in one space, with the same model for both.

Which model filled ``chunk.embedding`` is known from the demo loader's metadata or from the
``stored_embedding_model`` setting; when it is unknown, stored vectors are used only for ``chunks``
without an explicit embedder (labelled ``stored:chunk.embedding``).

Metrics: :func:`build_plan` is the ``tier0`` plan — steps (load the vectors, the space metrics
:func:`~voproshalych_eval.metrics.geometry.embedding_space_metrics` (the methodology's twelve + readability aids),
the kNN outlier ranking with texts and clusters, metrics per section and per kind) recorded as the run's
items; its ``metrics`` are keyed by the methodology's names. :func:`analyse` runs the same steps on vectors in
memory without a run.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.bilingual import Text
from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.config import get_settings
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.production import inspect_schema, read_chunks
from voproshalych_eval.db.retrieval import stored_model_name as resolve
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.jsonable import jsonable
from voproshalych_eval.metrics import geometry
from voproshalych_eval.metrics.clusters import kmeans
from voproshalych_eval.plans import Lazy, Plan, spec

log = logging.getLogger(__name__)

SOURCES = ("chunks", "questions", "golden", "both")
STORED = "stored"
Progress = Callable[[str], None]

# The methodology's twelve Tier 0 metrics (section 3.3), in its order.
SEED_METRICS = (
    "total_samples",
    "avg_nn_distance",
    "std_nn_distance",
    "density_score",
    "avg_spread",
    "max_spread",
    "spread_std",
    "effective_dimensionality",
    "avg_pairwise_distance",
    "std_pairwise_distance",
    "min_pairwise_distance",
    "max_pairwise_distance",
)
# Added so that the twelve can be read correctly (anisotropy, duplicates).
EXTRA_METRICS = (
    "mean_pairwise_cosine_similarity",
    "top1_variance_share",
    "top10_variance_share",
    "near_duplicate_pairs",
)
# Metrics whose value is a distance in the chosen metric (cosine or Euclidean); spreads are always Euclidean.
DISTANCE_METRICS = (
    "avg_nn_distance",
    "std_nn_distance",
    "density_score",
    "avg_pairwise_distance",
    "std_pairwise_distance",
    "min_pairwise_distance",
    "max_pairwise_distance",
)
EUCLIDEAN_ALWAYS = ("avg_spread", "max_spread", "spread_std")

# Fields the explorer can colour by (column names of VectorSet.meta).
COLOR_FIELDS = (
    "section",
    "url",
    "source_type",
    "kind",
    "cluster",
    "answered",
    "score",
    "outlier_score",
    "period",
)

META_COLUMNS = (
    "point_id", "kind", "item_id", "text", "url", "section", "source_type", "answered", "score",
    "created_at", "period", "stored_vector",
)


class Tier0Error(VoproshalychEvalError, ValueError):
    """A Tier 0 request that cannot be served (no data, inconsistent models); the message is for users."""


@dataclass
class VectorSet:
    """``X`` (float32, one row per point, one model) and ``meta`` (one row per point, same order)."""

    source: str
    model: str
    X: np.ndarray
    meta: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.X.shape[0])

    @property
    def point_ids(self) -> list[str]:
        return [str(p) for p in self.meta["point_id"]]

    @property
    def dim(self) -> int:
        return int(self.X.shape[1]) if self.X.ndim == 2 else 0

    def subset(self, rows: Sequence[int] | np.ndarray) -> VectorSet:
        idx = np.asarray(rows, dtype=np.int64)
        return VectorSet(
            self.source, self.model, self.X[idx], self.meta.iloc[idx].reset_index(drop=True),
            list(self.notes), dict(self.counts),
        )


# ---------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------


def stored_model_name(engine: Engine, *, snapshot: Any = None) -> str | None:
    """Name of the model that filled ``chunk.embedding`` (one resolver: :func:`db.retrieval.stored_model_name`)."""
    return resolve(engine, snapshot=snapshot)


def _stored_label(dim: int | None) -> str:
    return f"stored:chunk.embedding ({dim}-d)" if dim else "stored:chunk.embedding"


def resolve_model(engine: Engine, source: str, embedder: str | None, *, snapshot: Any = None) -> tuple[str, bool]:
    """``(model name, use stored vectors)`` for a request.

    ``embedder`` ``None``/``"stored"`` means "the stored vectors where possible": the stored model when it is
    known, else stored chunk vectors (``chunks`` only) or the configured embedder (other sources).
    """
    stored = stored_model_name(engine, snapshot=snapshot)
    if embedder in (None, "", STORED):
        if stored:
            return stored, True
        if source == "chunks":
            schema = inspect_schema(engine, snapshot=snapshot)
            return _stored_label(schema.chunk_dim), True
        return get_settings().embedder, False
    return str(embedder), stored is not None and stored == embedder


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------


def section_of(url: Any) -> str:
    """A short section label for a URL: its last non-empty path component (``Stipendii``), else the host."""
    if url is None or (isinstance(url, float) and math.isnan(url)) or not str(url).strip():
        return "—"
    parts = urlsplit(str(url))
    path = [p for p in parts.path.split("/") if p]
    if path:
        return path[-1]
    return parts.netloc or str(url)


def _period(ts: Any) -> str | None:
    if ts is None or pd.isna(ts):
        return None
    return pd.Timestamp(ts).strftime("%Y-%m")


def _load_chunks(engine: Engine, model: str, use_stored: bool, say: Progress, snapshot: Any = None
                 ) -> tuple[np.ndarray, pd.DataFrame, list[str]]:
    schema = inspect_schema(engine, snapshot=snapshot)
    if not schema.has_chunk:
        raise Tier0Error(
            "The database has no 'chunk' table: load the demo data or point the app at the bot's database."
        )
    df = read_chunks(engine, with_embeddings=use_stored, snapshot=snapshot)
    notes: list[str] = []
    if len(df) == 0:
        return np.zeros((0, schema.chunk_dim or 0), np.float32), df, notes
    if use_stored:
        X = np.vstack(df["embedding"].to_list()).astype(np.float32, copy=False)
        notes.append(bi(f"{len(df)} чанков: сохранённые векторы из chunk.embedding ({X.shape[1]}-d, модель {model})",
                        f"{len(df)} chunks: stored vectors from chunk.embedding ({X.shape[1]}-d, model {model})"))
        df = df.drop(columns=["embedding"])
    else:
        say(bi(f"Эмбеддинг {len(df)} текстов чанков моделью {model} (через кэш)…", f"Embedding {len(df)} chunk texts with {model} (cached)…"))
        X = cached_embedder(model, engine).encode_passages(df["text"].astype(str).tolist())
        notes.append(bi(f"{len(df)} чанков: тексты заново закодированы моделью {model} ({X.shape[1]}-d) — "
                        "сохранённые векторы от другой модели",
                        f"{len(df)} chunks: texts re-embedded with {model} ({X.shape[1]}-d) — stored vectors come "
                        "from another model"))
    meta = pd.DataFrame(
        {
            "point_id": ["chunk:" + str(i) for i in df["id"]],
            "kind": "chunk",
            "item_id": df["id"].astype(str),
            "text": df["text"].astype(str),
            "url": df["url"],
            "section": [section_of(u) for u in df["url"]],
            "source_type": df["source_type"].fillna("—") if "source_type" in df else "—",
            "answered": None,
            "score": np.nan,
            "created_at": pd.NaT,
            "period": None,
            "stored_vector": use_stored,
        }
    )
    return X, meta, notes


def _load_questions(engine: Engine, model: str, use_stored: bool, say: Progress, snapshot: Any = None
                    ) -> tuple[np.ndarray, pd.DataFrame, list[str]]:
    """The whole question log (``analytics.question_log.read_log``) and a vector for every row with question
    text (``embed_log``: stored vectors where the stored model is ``model``, the cached embedder for the rest);
    rows without text (a sticker, whitespace) are left out and counted in the note."""
    # heavy: defers the analytics package (snowballstemmer, stop-words)
    from voproshalych_eval.analytics.question_log import embed_log, read_log, text_rows

    try:
        df, n_empty = text_rows(read_log(engine, snapshot=snapshot))
    except LookupError as exc:
        raise Tier0Error(str(exc)) from None
    n = len(df)
    if n:
        embedded = embed_log(engine, df, embedder_name=model, progress=say, snapshot=snapshot)
        X, stored_mask = embedded.vectors, embedded.stored_mask
        note = (
            f"{n} logged questions (the whole log): {embedded.n_stored} stored vectors, "
            f"{embedded.n_embedded} embedded with {model}"
            + (f"; {n_empty} rows without question text left out" if n_empty else "")
        )
    else:
        X, stored_mask, note = np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=bool), "the question log is empty"
    created = pd.to_datetime(df["created_at"], utc=True, errors="coerce")
    meta = pd.DataFrame(
        {
            "point_id": ["q:" + str(i) for i in df["id"]],
            "kind": "question",
            "item_id": df["id"].astype(str),
            "text": df["question"].astype(str),
            "url": df["url"],
            "section": [section_of(u) for u in df["url"]],
            "source_type": "question",
            "answered": df["answered"].to_numpy(),
            "score": pd.to_numeric(df["score"], errors="coerce").to_numpy(dtype=float),
            "created_at": created,
            "period": [_period(t) for t in created],
            "stored_vector": stored_mask,
        }
    )
    return X, meta, [note]


def _load_golden(engine: Engine, model: str, dataset: str | None, say: Progress) -> tuple[np.ndarray, pd.DataFrame, list[str]]:
    if dataset:
        ds = datasets.get_dataset(engine, dataset, "golden")
    else:
        stored = datasets.list_datasets(engine, "golden")
        if not stored:
            raise Tier0Error("No golden dataset is stored yet: load the demo or import a golden file.")
        ds = datasets.get_dataset(engine, int(stored[0]["id"]), "golden")
    recs = ds.records
    say(bi(f"Эмбеддинг {len(recs)} вопросов золотого набора моделью {model} (через кэш)…", f"Embedding {len(recs)} golden questions with {model} (cached)…"))
    X = cached_embedder(model, engine).encode_queries([str(r["question"]) for r in recs])
    urls = [r.get("confluence_url") or ((r.get("relevant_urls") or [None])[0]) for r in recs]
    meta = pd.DataFrame(
        {
            "point_id": [f"golden:{ds.id}:{r.get('id', i)}" for i, r in enumerate(recs)],
            "kind": "golden",
            "item_id": [str(r.get("id", i)) for i, r in enumerate(recs)],
            "text": [str(r["question"]) for r in recs],
            "url": urls,
            "section": [section_of(u) for u in urls],
            "source_type": "golden",
            "answered": None,
            "score": np.nan,
            "created_at": pd.NaT,
            "period": None,
            "stored_vector": False,
        }
    )
    return X, meta, [f"{len(recs)} golden questions of dataset '{ds.name}' (id {ds.id}) embedded with {model}"]


def load_vector_set(
    engine: Engine,
    source: str = "chunks",
    *,
    embedder: str | None = None,
    filters: Mapping[str, Any] | None = None,
    dataset: str | None = None,
    progress: Progress | None = None,
    snapshot: Any = None,
) -> VectorSet:
    """Load the vectors of ``source`` from one model, with metadata; apply ``filters`` (see :func:`apply_filters`).

    Chunks and the bot's log come from a snapshot of the source (``snapshot``: id or ``Snapshot``; default
    the current one)."""
    if source not in SOURCES:
        raise Tier0Error(f"Unknown source '{source}': use one of {', '.join(SOURCES)}.")
    say = progress or (lambda m: log.info(m))
    model, use_stored = resolve_model(engine, source, embedder, snapshot=snapshot)
    parts: list[tuple[np.ndarray, pd.DataFrame, list[str]]] = []
    if source in ("chunks", "both"):
        if source == "both" and model.startswith("stored:"):
            raise Tier0Error("Chunks and questions in one space need a named embedder: choose one in the sidebar.")
        say(bi("Загрузка чанков…", "Loading chunks…"))
        parts.append(_load_chunks(engine, model, use_stored, say, snapshot))
    if source in ("questions", "both"):
        say(bi("Загрузка журнала вопросов…", "Loading the question log…"))
        parts.append(_load_questions(engine, model, use_stored, say, snapshot))
    if source == "golden":
        parts.append(_load_golden(engine, model, dataset, say))
    dims = {p[0].shape[1] for p in parts if p[0].shape[0]}
    if len(dims) > 1:
        raise Tier0Error(f"Vectors of different dimensions {sorted(dims)} cannot share one space; choose one embedder.")
    nonempty = [p for p in parts if p[0].shape[0]]
    X = np.vstack([p[0] for p in nonempty]).astype(np.float32, copy=False) if nonempty else np.zeros((0, 0), np.float32)
    meta = pd.concat([p[1] for p in parts], ignore_index=True) if parts else pd.DataFrame(columns=list(META_COLUMNS))
    notes = [n for p in parts for n in p[2]]
    counts = {str(k): int(v) for k, v in meta["kind"].value_counts().items()} if len(meta) else {}
    vs = VectorSet(source, model, X, meta.reset_index(drop=True), notes, counts)
    if filters:
        vs = apply_filters(vs, filters)
    return vs


def apply_filters(vs: VectorSet, filters: Mapping[str, Any]) -> VectorSet:
    """Keep the points matching every filter.

    Keys (all optional): ``kind``, ``section``, ``source_type``, ``period`` (lists of allowed values),
    ``url_contains`` / ``text_contains`` (case-insensitive substring), ``answered`` (bool, questions only;
    other points are kept), ``score`` (list of allowed user scores), ``date_from`` / ``date_to``
    (ISO dates, on ``created_at``).
    """
    m = vs.meta
    keep = np.ones(len(m), dtype=bool)
    for key in ("kind", "section", "source_type", "period"):
        allowed = filters.get(key)
        if allowed:
            keep &= m[key].isin(list(allowed)).to_numpy()
    for key, col in (("url_contains", "url"), ("text_contains", "text")):
        needle = filters.get(key)
        if needle:
            keep &= m[col].fillna("").astype(str).str.contains(str(needle), case=False, regex=False).to_numpy()
    if filters.get("answered") is not None:
        is_q = (m["kind"] == "question").to_numpy()
        ans = m["answered"].fillna(False).astype(bool).to_numpy()
        keep &= ~is_q | (ans == bool(filters["answered"]))
    if filters.get("score"):
        keep &= m["score"].isin([float(s) for s in filters["score"]]).to_numpy()
    created = pd.to_datetime(m["created_at"], utc=True, errors="coerce")
    if filters.get("date_from"):
        keep &= (created >= pd.Timestamp(filters["date_from"], tz="UTC")).fillna(False).to_numpy()
    if filters.get("date_to"):
        keep &= (created < pd.Timestamp(filters["date_to"], tz="UTC") + pd.Timedelta(days=1)).fillna(False).to_numpy()
    out = vs.subset(np.flatnonzero(keep))
    if not keep.all():
        out.notes.append(bi(f"фильтры оставили {int(keep.sum())} из {len(keep)} точек: {dict(filters)}",
                            f"filters kept {int(keep.sum())} of {len(keep)} points: {dict(filters)}"))
    return out


def vector_set_from_array(X: np.ndarray, *, texts: Sequence[str] | None = None, model: str = "file") -> VectorSet:
    """A vector set for any float matrix (rows are vectors), e.g. a ``.npy`` file."""
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise Tier0Error(f"The matrix must be 2-D (rows are vectors), got shape {arr.shape}.")
    n = arr.shape[0]
    meta = pd.DataFrame(
        {
            "point_id": [f"row:{i}" for i in range(n)],
            "kind": "vector",
            "item_id": [str(i) for i in range(n)],
            "text": list(texts) if texts is not None else [f"row {i}" for i in range(n)],
            "url": None,
            "section": "—",
            "source_type": "—",
            "answered": None,
            "score": np.nan,
            "created_at": pd.NaT,
            "period": None,
            "stored_vector": True,
        }
    )
    data = arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float64)
    return VectorSet("vectors", model, data, meta, [f"{n} rows of a {arr.shape[1]}-d matrix"],
                     {"vector": n})


# ---------------------------------------------------------------------------------------------
# per-point attributes: outlier scores, clusters
# ---------------------------------------------------------------------------------------------


def neighbours(X: np.ndarray, *, k: int = 5, metric: str = "cosine") -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN (self excluded) with ``k`` capped at ``N - 1``; empty arrays for ``N < 2``."""
    n = X.shape[0]
    if n < 2:
        return np.zeros((n, 0), np.int64), np.zeros((n, 0))
    return geometry.knn(X, k=max(1, min(int(k), n - 1)), metric=metric)  # type: ignore[arg-type]


def kmeans_labels(X: np.ndarray, n_clusters: int, *, seed: int = 0) -> np.ndarray:
    """KMeans cluster of each row on L2-normalised vectors (spherical k-means approximation of cosine geometry).

    ``n_clusters`` is capped at ``N``; the package's KMeans rule (:func:`voproshalych_eval.metrics.clusters.kmeans`,
    best of 3 k-means++ starts) up to 20,000 rows, ``MiniBatchKMeans`` above.
    """
    from sklearn.cluster import MiniBatchKMeans  # heavy: defers sklearn

    n = X.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    kk = max(1, min(int(n_clusters), n))
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    U = X / np.where(norms > 0, norms, 1.0)
    if n <= 20_000:
        return kmeans(U, kk, seed=seed, n_init=3).labels_.astype(np.int64)
    model = MiniBatchKMeans(n_clusters=kk, random_state=seed, n_init=3, batch_size=4096)
    return model.fit_predict(U).astype(np.int64)


def attach_attributes(
    vs: VectorSet, *, k: int = 5, metric: str = "cosine", n_clusters: int | None = 8, seed: int = 0,
    knn: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Add ``outlier_score`` (mean distance to the k nearest neighbours) and ``cluster`` columns; return the kNN
    (``knn``: the neighbours already found by the metrics' pair scan, same ``k`` and metric; else computed)."""
    idx, dist = knn if knn is not None else neighbours(vs.X, k=k, metric=metric)
    vs.meta["outlier_score"] = geometry.outlier_scores(dist) if dist.shape[1] else np.nan
    if n_clusters:
        vs.meta["cluster"] = [f"c{c}" for c in kmeans_labels(vs.X, n_clusters, seed=seed)]
    return idx, dist


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------


def space_metrics(X: np.ndarray, *, k: int = 5, metric: str = "cosine", **kwargs: Any) -> dict[str, Any]:
    """``embedding_space_metrics`` made JSON-friendly (CI tuples as lists); an empty set gives ``total_samples = 0``."""
    return space_metrics_and_knn(X, k=k, metric=metric, **kwargs)[0]


def space_metrics_and_knn(X: np.ndarray, *, k: int = 5, metric: str = "cosine", **kwargs: Any
                          ) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray] | None]:
    """:func:`space_metrics` and the exact kNN its pair scan found (``None`` when it found none: estimated mode,
    fewer than two points) — one pass over the pairs for the metrics and the outliers."""
    if X.shape[0] == 0:
        return {"total_samples": 0, "distance_metric": metric, "k": int(k), "estimated": False}, None
    res, knn = geometry.embedding_space_metrics_and_knn(X, k=k, metric=metric, **kwargs)  # type: ignore[arg-type]
    return {key: jsonable(v) for key, v in res.items()}, knn


def metrics_by_group(
    vs: VectorSet, by: str = "section", *, k: int = 5, metric: str = "cosine", min_size: int = 2, max_groups: int = 100,
    whole: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Tier 0 metrics of every group of ``meta[by]`` with at least ``min_size`` points (largest ``max_groups``).

    ``whole``: the metrics of the whole set, already computed — a group that is the whole set takes them
    instead of scanning every pair again."""
    if by not in vs.meta.columns or len(vs) == 0:
        return pd.DataFrame()
    groups = vs.meta[by].astype(str).fillna("—")
    sizes = groups.value_counts()
    rows: list[dict[str, Any]] = []
    for name, size in sizes.head(max_groups).items():
        if size < min_size:
            continue
        if whole is not None and int(size) == len(vs):
            res = dict(whole)
        else:
            sel = np.flatnonzero((groups == name).to_numpy())
            res = space_metrics(vs.X[sel], k=min(k, int(size) - 1), metric=metric)
        rows.append({by: name, **{key: res.get(key) for key in SEED_METRICS + EXTRA_METRICS}})
    return pd.DataFrame(rows)


def outlier_table(
    vs: VectorSet, idx: np.ndarray, dist: np.ndarray, *, top: int = 20, snippet: int = 160
) -> list[dict[str, Any]]:
    """The ``top`` points with the largest mean kNN distance, with their texts and their neighbours' texts."""
    if dist.shape[1] == 0:
        return []
    scores = geometry.outlier_scores(dist)
    order = np.lexsort((np.arange(len(scores)), -scores))[: int(top)]
    m = vs.meta
    out = []
    for rank, i in enumerate(order, start=1):
        out.append(
            {
                "rank": rank,
                "row": int(i),
                "point_id": jsonable(m.at[i, "point_id"]),
                "kind": jsonable(m.at[i, "kind"]),
                "score": float(scores[i]),
                "url": jsonable(m.at[i, "url"]),
                "section": jsonable(m.at[i, "section"]),
                "text": str(m.at[i, "text"]),
                "neighbors": [
                    {
                        "row": int(j),
                        "point_id": jsonable(m.at[int(j), "point_id"]),
                        "distance": float(d),
                        "url": jsonable(m.at[int(j), "url"]),
                        "text": str(m.at[int(j), "text"])[: snippet * 4],
                    }
                    for j, d in zip(idx[i], dist[i], strict=True)
                ],
            }
        )
    return out


def run_metrics(res: Mapping[str, Any]) -> dict[str, Any]:
    """The run's ``metrics`` object: the methodology's twelve names + the readability aids (+ ``*_ci`` when estimated)."""
    out: dict[str, Any] = {key: res.get(key) for key in SEED_METRICS + EXTRA_METRICS}
    for key, v in res.items():
        if key.endswith("_ci"):
            out[key] = v
    return out


#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("tier0").defaults()
def _stored_note(note: str) -> Any:
    """A note as stored in the run's result: both languages of a bilingual note, else the text."""
    return {"ru": note.ru, "en": note.en} if isinstance(note, Text) else str(note)


def _read_note(note: Any) -> str:
    """A stored note back as a bilingual :class:`~voproshalych_eval.bilingual.Text` (plain text as it is)."""
    return Text(str(note.get("ru", "")), str(note.get("en", ""))) if isinstance(note, dict) else str(note)


#: the steps of a Tier 0 run, in order (each is an item of the run); ``per_kind`` only when kinds are mixed
STEPS = ("vectors", "metrics", "neighbours", "per_section", "per_kind")


def analyse_step(step: str, vs: VectorSet, *, k: int, metric: str, n_clusters: int | None, top_outliers: int,
                 knn: Lazy, scan: Lazy) -> dict[str, Any]:
    """One step's JSON result (``scan`` computes the metrics and, on the way, the kNN once; ``knn`` the
    neighbours, outlier scores and clusters once, from the scan's kNN when the scan already ran)."""
    if step == "vectors":
        return {"source": vs.source, "model": vs.model, "dim": vs.dim, "n": len(vs), "counts": vs.counts,
                "notes": [_stored_note(n) for n in vs.notes]}
    if step == "metrics":
        return {"raw": scan.get()[0]}
    if step == "neighbours":
        idx, dist = knn.get()
        return {"outliers": outlier_table(vs, idx, dist, top=top_outliers)}
    if step in ("per_section", "per_kind"):
        by = "section" if step == "per_section" else "kind"
        table = metrics_by_group(vs, by, k=k, metric=metric, whole=scan.get()[0] if scan.ready else None)
        return {"rows": jsonable(table.to_dict("records"))}
    raise ValueError(f"unknown Tier 0 step {step!r}")


def build_plan(engine: Engine, params: Mapping[str, Any]) -> Tier0Plan:
    """The Tier 0 plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return Tier0Plan(engine, params)


class Tier0Plan(Plan):
    """Tier 0: the embedding space of one vector set.

    Items are the steps (:data:`STEPS`): load the vectors (the whole set, one model), the space metrics,
    the neighbours (outliers with texts, clusters), the metrics per section and per point kind. The
    vectors are loaded once per execution, by the first step that needs them; ``plan.outputs`` then
    holds the vector set and the kNN (``vector_set``, ``knn``) for the explorer.
    """

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("tier0").resolve(params)
        self.metric, self.k = metric, k = str(p["metric"]), int(p["k"])
        if metric not in ("cosine", "euclidean"):
            raise Tier0Error(f"Unknown distance '{metric}': use cosine or euclidean.")
        self.source = source = str(p["source"])
        if source not in SOURCES:
            raise Tier0Error(f"Unknown source '{source}': use one of {', '.join(SOURCES)}.")
        self.engine = engine
        self.embedder = embedder = None if p["embedder"] in (None, "", STORED) else str(p["embedder"])
        snap = None
        if source != "golden":  # chunks and the log come from a snapshot of the source, pinned for the run

            snap = snapshots.for_run(engine, p["snapshot"])
        self.snap = snap
        model, _ = resolve_model(engine, source, embedder, snapshot=snap)
        self.ds = ds = _golden_dataset(engine, p["dataset"]) if source == "golden" else None
        self.n_clusters = n_clusters = int(p["n_clusters"]) if p["n_clusters"] else None
        self.top = top = int(p["top_outliers"])
        self.filters = filters = dict(p["filters"] or {})
        self.vectors = Lazy(self._load)
        self.scan = Lazy(lambda: space_metrics_and_knn(self.vectors.get().X, k=k, metric=metric))
        self.knn = Lazy(self._neighbours)
        steps = [s for s in STEPS if s != "per_kind" or source == "both"]
        super().__init__(
            tier="tier0",
            items=[(s, s) for s in steps],
            concurrency=1,  # one CPU-heavy step at a time (numpy uses the cores)
            params={"source": source, "embedder": embedder, "k": k, "metric": metric, "filters": filters,
                    "dataset": ds.id if ds else None, "n_clusters": n_clusters, "top_outliers": top,
                    "snapshot": snap.id if snap else None},
            models={"embedder": model},
            dataset_id=ds.id if ds else None,
            dataset_name=ds.name if ds else None,
            dataset_hash=ds.content_hash if ds else None,
            snapshot_id=snap.id if snap else None,
        )

    def _load(self) -> VectorSet:
        vs = load_vector_set(self.engine, self.source, embedder=self.embedder, filters=self.filters,
                             dataset=self.ds.id if self.ds else None, progress=self.say, snapshot=self.snap)
        if len(vs) == 0:
            raise Tier0Error("No vectors to analyse (empty table or filters that keep nothing).")
        self.outputs["vector_set"] = vs
        return vs

    def _neighbours(self) -> tuple[np.ndarray, np.ndarray]:
        vs = self.vectors.get()
        self.say(bi("Ближайшие соседи, выбросы и кластеры…", "Nearest neighbours, outliers and clusters…"))
        # the metrics step's pair scan already found the neighbours (a resume that skips it scans again)
        found = self.scan.get()[1] if self.scan.ready else None
        self.outputs["knn"] = attach_attributes(vs, k=self.k, metric=self.metric, n_clusters=self.n_clusters, knn=found)
        return self.outputs["knn"]

    def work(self, step: str) -> dict[str, Any]:
        vs = self.vectors.get()
        if step == "per_kind" and vs.meta["kind"].nunique() < 2:
            return {"rows": [], "note": "one kind of point only"}
        if step == "metrics":
            self.say(bi(f"Метрики по {len(vs)} векторам ({vs.dim}-d, {self.metric})…",
                        f"Computing the metrics on {len(vs)} vectors ({vs.dim}-d, {self.metric})…"))
        elif step.startswith("per_"):
            self.say(bi(f"Метрики по группам: {step.removeprefix('per_')}…", f"Metrics per {step.removeprefix('per_')}…"))
        return analyse_step(step, vs, k=self.k, metric=self.metric, n_clusters=self.n_clusters, top_outliers=self.top,
                            knn=self.knn, scan=self.scan)

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        by = {r["item_key"]: r["result"] for r in records if r["status"] == "done"}
        raw = (by.get("metrics") or {}).get("raw") or {}
        out: dict[str, Any] = {**run_metrics(raw), "distance_metric": self.metric, "k": raw.get("k"),
                               "estimated": raw.get("estimated")} if raw else {"distance_metric": self.metric}
        if "vectors" in by:
            out["n_by_kind"] = by["vectors"].get("counts")
        return out


def _golden_dataset(engine: Engine, dataset: Any) -> Any:
    """The golden dataset Tier 0 reads: ``dataset`` (name / id), else the first stored one."""
    if dataset is not None:
        return datasets.get_dataset(engine, dataset, "golden")
    stored = datasets.list_datasets(engine, "golden")
    if not stored:
        raise Tier0Error("No golden dataset is stored yet: load the demo or import a golden file.")
    return datasets.get_dataset(engine, int(stored[0]["id"]), "golden")


def reload_outputs(engine: Engine, run: Any) -> dict[str, Any]:
    """The in-memory vector set and kNN of a recorded run (``plan.outputs``), loaded again from its stored
    parameters (same source, model, filters and knowledge-base snapshot) — for the explorer of an earlier run."""
    plan = build_plan(engine, run.params or {})
    plan.work("vectors")
    plan.work("neighbours")
    return dict(plan.outputs)


def analyse(vs: VectorSet, *, k: int = 5, metric: str = "cosine", n_clusters: int | None = 8,
            top_outliers: int = 20) -> dict[str, Any]:
    """Every Tier 0 step on a vector set in memory, without recording a run (a ``.npy`` file, a
    selection): the same result shape as :func:`result`, ``run_id`` None."""
    if metric not in ("cosine", "euclidean"):
        raise Tier0Error(f"Unknown distance '{metric}': use cosine or euclidean.")
    if len(vs) == 0:
        raise Tier0Error("No vectors to analyse (empty table or filters that keep nothing).")
    scan = Lazy(lambda: space_metrics_and_knn(vs.X, k=k, metric=metric))
    knn = Lazy(lambda: attach_attributes(vs, k=k, metric=metric, n_clusters=n_clusters,
                                         knn=scan.get()[1] if scan.ready else None))
    steps = [s for s in STEPS if s != "per_kind" or vs.meta["kind"].nunique() > 1]
    records = [{"item_key": s, "status": "done",
                "result": analyse_step(s, vs, k=k, metric=metric, n_clusters=n_clusters, top_outliers=top_outliers,
                                       knn=knn, scan=scan)} for s in steps]
    return result(None, records, {"vector_set": vs, "knn": knn.get()}, metric=metric)


def result(run: Any, records: Sequence[Mapping[str, Any]], outputs: Mapping[str, Any] | None = None, *,
           metric: str | None = None) -> dict[str, Any]:
    """A Tier 0 run (``runs.Run`` + ``runs.item_records``, or ``None`` for an unrecorded analysis) as the
    page, the CLI and reports read it: ``{"run_id", "source", "model", "dim", "n", "counts", "notes",
    "distance_metric", "k", "estimated", "metrics", "raw", "outliers", "per_section", "per_kind",
    "vector_set", "knn"}``. ``vector_set`` / ``knn`` are the in-memory objects of the process that
    executed the run (``plan.outputs``), else None."""
    by = {r["item_key"]: r["result"] for r in records if r["status"] == "done"}
    vec = by.get("vectors") or {}
    raw = (by.get("metrics") or {}).get("raw") or {}
    outputs = outputs or {}
    return {
        "run_id": getattr(run, "id", None),
        "source": vec.get("source") or (run.params.get("source") if run is not None else None),
        "model": vec.get("model") or (run.models.get("embedder") if run is not None else None),
        "dim": vec.get("dim"),
        "n": vec.get("n"),
        "counts": vec.get("counts") or {},
        "notes": [_read_note(n) for n in vec.get("notes") or []],
        "distance_metric": metric or (run.params.get("metric") if run is not None else None) or raw.get("distance_metric"),
        "k": raw.get("k"),
        "estimated": bool(raw.get("estimated")),
        "metrics": run_metrics(raw) if raw else {},
        "raw": raw,
        "outliers": (by.get("neighbours") or {}).get("outliers") or [],
        "per_section": pd.DataFrame((by.get("per_section") or {}).get("rows") or []),
        "per_kind": pd.DataFrame((by.get("per_kind") or {}).get("rows") or []),
        "vector_set": outputs.get("vector_set"),
        "knn": outputs.get("knn"),
    }


def json_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-friendly part of a :func:`result` (tables as lists of records)."""
    out: dict[str, Any] = {}
    for key, v in result.items():
        if key in ("vector_set", "knn", "raw"):
            continue
        if isinstance(v, pd.DataFrame):
            out[key] = [{k2: jsonable(x) for k2, x in r.items()} for r in v.to_dict("records")]
        else:
            out[key] = v
    return out
