"""Tier 1: retrieval accuracy of a retriever on a golden dataset, recorded as a run.

Pipeline (seed, section 4): embed each question (cached), retrieve the top-k chunks exactly like
production (:mod:`voproshalych_eval.db.retrieval`), score the rankings with
:func:`voproshalych_eval.metrics.retrieval.evaluate_retrieval` at two levels:

* ``chunk`` — the ranked chunk ids against ``relevant_chunk_ids``;
* ``url`` — the ranked pages (:func:`to_url_ranking`: chunk URLs deduplicated, order kept) against
  ``relevant_urls``.

The two levels are separate blocks (``{"chunk": {...}, "url": {...}}``), never merged: the URL MRR
cannot overwrite the chunk MRR. Each mean carries a 95% bootstrap CI. Questions with no relevant
chunk (resp. URL) are excluded from that level's means; questions with neither are *unanswerable*
and reported separately with the distance of their top hit (to choose a "no answer" threshold).

``retrieval_consistency`` (mean pairwise Jaccard of the top-k over repeated identical runs) is
measured only where it can vary: an HNSW index rebuilt for every repeat (graph construction is
randomised), or an external embedding API called again without the cache. Exact search with a local
deterministic embedder returns the same list every time by construction, so it is reported as not
applicable rather than as a meaningless 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval import runs
from voproshalych_eval.datasets import Dataset, resolve, store
from voproshalych_eval.db import retrieval as R
from voproshalych_eval.db import snapshots
from voproshalych_eval.metrics.retrieval import (
    DEFAULT_KS,
    evaluate_retrieval,
    first_relevant_rank,
    recall_against_exact,
    retrieval_consistency,
    to_url_ranking,
)
from voproshalych_eval.metrics.statistics import paired_bootstrap_test, paired_permutation_test, percentiles

__all__ = [
    "LEVELS",
    "RETRIEVERS",
    "Tier1Result",
    "compare_tier1_runs",
    "default_embedder_name",
    "export_trec",
    "retrieve",
    "run_tier1",
]

RETRIEVERS = ("vector", "fts", "hybrid")
LEVELS = ("chunk", "url")
TIER = "tier1"
#: the cut-offs K reported at both levels (``hit_rate@K``, ``recall@K``, ``precision@K``; NDCG at K >= 5)
CUTOFFS: tuple[int, ...] = DEFAULT_KS
#: URL level: the first K distinct pages are looked for among at most this many chunks per question
URL_CHUNK_CAP = 200

Progress = Callable[[str], None]


@dataclass
class Tier1Result:
    """What :func:`run_tier1` computed and recorded.

    ``metrics[level][key]`` are plain means; ``ci[level][key]`` the matching
    :class:`~voproshalych_eval.metrics.statistics.Aggregate` dicts (value, n, n_failed, ci_low, ci_high).
    """

    run_id: int
    dataset: dict[str, Any]
    params: dict[str, Any]
    metrics: dict[str, dict[str, float]]
    ci: dict[str, dict[str, dict[str, Any]]]
    n_questions: int
    n_evaluated: dict[str, int]
    n_unanswerable: int
    unanswerable: list[dict[str, Any]]
    retrieval_consistency: dict[str, Any]
    hnsw: dict[str, Any] | None
    items: list[dict[str, Any]] = field(repr=False)
    #: the knowledge-base snapshot the run searched (``Snapshot.to_json()``)
    snapshot: dict[str, Any] | None = None

    def to_json(self, *, with_items: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_items:
            out.pop("items")
        return out


def default_embedder_name(engine: Engine, *, snapshot: R.SnapshotRef = None) -> str:
    """The stored model when the app knows it and can load it, else the configured embedder."""
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS

    stored = R.stored_model_name(engine, snapshot=snapshot)
    if stored and (stored in BUILTIN_EMBEDDERS or stored.startswith(("st:", "openai:"))):
        return stored
    return get_settings().embedder


def _vector_hits(
    engine: Engine,
    qvecs: np.ndarray,
    embedder: Any,
    *,
    k: int,
    use_index: bool,
    ef_search: int | None,
    snapshot: R.SnapshotRef = None,
) -> list[list[R.Hit]]:
    model = embedder.name
    return R.search_vectors(engine, qvecs, k=k, model=model, use_index=use_index, ef_search=ef_search,
                            snapshot=snapshot)


def _prepare_vectors(engine: Engine, embedder: Any, progress: Progress, snapshot: R.SnapshotRef = None) -> bool:
    """Re-embed the knowledge base into ``eval.chunk_vectors`` when ``embedder`` did not fill ``chunk.embedding``."""
    stored = R.uses_stored_vectors(engine, embedder.name, dim=embedder.dim, snapshot=snapshot)
    if not stored:
        n = R.ensure_chunk_vectors(engine, embedder, progress=progress, snapshot=snapshot)
        progress(f"Knowledge base vectors for {embedder.name}: {n} chunk(s) (re-)embedded into eval.chunk_vectors.")
    return stored


def retrieve(
    engine: Engine,
    questions: Sequence[str],
    *,
    retriever: str = "vector",
    embedder: Any = None,
    k: int = 10,
    use_index: bool = False,
    ef_search: int | None = None,
    rrf_k: int = 60,
    progress: Progress | None = None,
    snapshot: R.SnapshotRef = None,
) -> list[list[R.Hit]]:
    """Top-``k`` hits per question with one retriever (``vector``, ``fts`` or ``hybrid``) in a snapshot
    of the knowledge base (default: the current one)."""
    say = progress or (lambda _m: None)
    if retriever not in RETRIEVERS:
        raise ValueError(f"unknown retriever {retriever!r}; use one of {', '.join(RETRIEVERS)}")
    qs = [str(q) for q in questions]
    if retriever == "fts":
        return R.search_fts(engine, qs, k=k, snapshot=snapshot)
    if embedder is None:
        raise ValueError("vector and hybrid retrieval need an embedder")
    _prepare_vectors(engine, embedder, say, snapshot)
    say(f"Embedding {len(qs)} questions with {embedder.name}…")
    qvecs = embedder.encode_queries(qs)
    if retriever == "vector":
        return _vector_hits(engine, qvecs, embedder, k=k, use_index=use_index, ef_search=ef_search, snapshot=snapshot)
    depth = max(k, R.FUSION_DEPTH)
    vec = _vector_hits(engine, qvecs, embedder, k=depth, use_index=use_index, ef_search=ef_search, snapshot=snapshot)
    fts = R.search_fts(engine, qs, k=depth, snapshot=snapshot)
    return R.hybrid(vec, fts, k=k, rrf_k=rrf_k)


def _ids(hits: Sequence[R.Hit]) -> list[int]:
    return [h.chunk_id for h in hits]


def retrieval_depth(k: int, cutoffs: Sequence[int] = CUTOFFS) -> int:
    """Chunks retrieved per question: at least the largest reported cut-off, whatever the answer depth ``k``."""
    return max(int(k), *(int(c) for c in cutoffs))


def deepen_for_pages(
    questions: Sequence[str],
    hits: list[list[R.Hit]],
    fetch: Callable[[list[str], int], list[list[R.Hit]]],
    *,
    pages: int,
    cap: int = URL_CHUNK_CAP,
) -> tuple[list[list[R.Hit]], int]:
    """Hits deep enough for the URL level: each question's list holds ``pages`` distinct pages, unless the
    collection ran out or ``cap`` chunks were retrieved. Questions short of pages are retrieved again,
    three times deeper each round (``fetch(questions, depth)``). Returns the hits and the deepest depth used."""
    out = list(hits)
    depth = max((len(h) for h in hits), default=0)
    used = depth

    def short(i: int, d: int) -> bool:
        return len(to_url_ranking([x.url for x in out[i]])) < pages and len(out[i]) >= d

    need = [i for i in range(len(out)) if short(i, depth)]
    while need and depth < cap:
        depth = min(cap, max(depth + 1, depth * 3))
        again = fetch([questions[i] for i in need], depth)
        for i, h in zip(need, again, strict=True):
            out[i] = h
        used = depth
        need = [i for i in need if short(i, depth)]
    return out, used


def _consistency(
    engine: Engine,
    questions: list[str],
    *,
    retriever: str,
    embedder: Any,
    k: int,
    use_index: bool,
    ef_search: int | None,
    repeats: int,
    hnsw_params: dict[str, int],
    first: list[list[R.Hit]],
    rrf_k: int,
    say: Progress,
    snapshot: R.SnapshotRef = None,
) -> dict[str, Any]:
    """retrieval_consistency where it can vary; ``applicable=False`` with the reason elsewhere."""
    external = embedder is not None and str(embedder.name).startswith("openai:")
    if retriever == "fts" or (not use_index and not external):
        reason = (
            "exact search (sequential scan) with a deterministic embedder returns the same top-k on every "
            "repeat by construction; consistency is only measured with an HNSW index or an external embedding API"
        )
        if retriever == "fts":
            reason = "PostgreSQL full-text search is deterministic; the same query always returns the same top-k"
        return {"value": None, "applicable": False, "reason": reason, "repeats": repeats}
    if repeats < 2:
        return {
            "value": None,
            "applicable": True,
            "reason": "measurable here (HNSW / external API) but needs repeats >= 2",
            "repeats": repeats,
        }
    runs_per_query: list[list[list[int]]] = [[_ids(h)] for h in first]
    for r in range(1, repeats):
        say(f"Consistency repeat {r + 1}/{repeats}…")
        if use_index:
            R.build_hnsw_index(engine, model=embedder.name, snapshot=snapshot, **hnsw_params)  # new random graph
        if external:
            qvecs = getattr(embedder, "model", embedder).encode_queries(questions)  # bypass the cache: a fresh call
            hits = _vector_hits(engine, qvecs, embedder, k=max(k, R.FUSION_DEPTH) if retriever == "hybrid" else k,
                                use_index=use_index, ef_search=ef_search, snapshot=snapshot)
            if retriever == "hybrid":
                fts = R.search_fts(engine, questions, k=max(k, R.FUSION_DEPTH), snapshot=snapshot)
                hits = R.hybrid(hits, fts, k=k, rrf_k=rrf_k)
        else:
            hits = retrieve(engine, questions, retriever=retriever, embedder=embedder, k=k, use_index=use_index,
                            ef_search=ef_search, rrf_k=rrf_k, snapshot=snapshot)
        for lst, h in zip(runs_per_query, hits, strict=True):
            lst.append(_ids(h))
    source = "HNSW index rebuilt for every repeat" if use_index else "external embedding API called again (no cache)"
    return {
        "value": retrieval_consistency(runs_per_query, k=k),
        "applicable": True,
        "reason": source,
        "repeats": repeats,
    }


def _as_dataset(engine: Engine, dataset: Dataset | str) -> Dataset:
    if isinstance(dataset, str):
        return resolve(engine, dataset, "golden")
    if dataset.kind != "golden":
        raise ValueError(f"Tier 1 needs a golden dataset, got kind {dataset.kind!r}")
    return dataset if dataset.id is not None else store(engine, dataset)


def run_tier1(
    engine: Engine,
    dataset: Dataset | str,
    *,
    retriever: str = "vector",
    embedder: Any = None,
    k: int = 10,
    use_index: bool = False,
    ef_search: int | None = None,
    hnsw_m: int = 16,
    hnsw_ef_construction: int = 64,
    repeats: int = 1,
    rrf_k: int = 60,
    n_resamples: int = 2000,
    label: str | None = None,
    progress: Progress | None = None,
    cutoffs: Sequence[int] = CUTOFFS,
    url_chunk_cap: int = URL_CHUNK_CAP,
    snapshot: R.SnapshotRef = None,
) -> Tier1Result:
    """Run Tier 1 on a golden dataset and record it (tier ``tier1``) with its per-question items.

    Args:
        dataset: a :class:`Dataset` of kind ``golden`` or a path / stored name (``demo_golden``).
        retriever: ``vector`` (embedder + pgvector), ``fts`` (Russian full-text search) or ``hybrid`` (RRF).
        embedder: an embedder object or name (default: :func:`default_embedder_name`); unused by ``fts``.
        k: the answer depth (top-k the generator would get). Chunks are retrieved to
            ``max(k, max(cutoffs))`` so every reported cut-off is computed on a list that deep.
        cutoffs: the K of the ``@K`` metrics (default 1, 3, 5, 10).
        url_chunk_cap: URL-level @K is over the first K distinct pages; questions whose chunks hold fewer
            pages are retrieved deeper, up to this many chunks.
        use_index: search an HNSW copy in the ``eval`` schema; its recall@k against exact search is reported.
        repeats: repeated runs for ``retrieval_consistency`` (HNSW / external API only).
        snapshot: the knowledge-base snapshot to search (id); default: the source's present content
            (a new snapshot is taken when it changed; see :func:`voproshalych_eval.db.snapshots.for_run`).
            The run records it (``params["snapshot"]``) and the result names it (``Tier1Result.snapshot``).
    """
    say = progress or (lambda _m: None)
    if retriever not in RETRIEVERS:
        raise ValueError(f"unknown retriever {retriever!r}; use one of {', '.join(RETRIEVERS)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    ds = _as_dataset(engine, dataset)
    questions = [str(r["question"]) for r in ds.records]
    keys = ds.keys()
    snap = snapshots.for_run(engine, snapshot, progress=say)
    say(f"Knowledge base: snapshot {snap.label}.")

    emb = None
    if retriever != "fts":
        from voproshalych_eval.embeddings import cached_embedder

        if embedder is None:
            embedder = default_embedder_name(engine, snapshot=snap)
        emb = cached_embedder(embedder, engine) if isinstance(embedder, str) else embedder
    hnsw_params = {"m": hnsw_m, "ef_construction": hnsw_ef_construction}
    cutoffs = sorted({int(c) for c in cutoffs})
    if not cutoffs or any(c < 1 for c in cutoffs):
        raise ValueError(f"cut-offs must be positive integers, got {cutoffs!r}")
    depth = retrieval_depth(k, cutoffs)
    params: dict[str, Any] = {
        "retriever": retriever,
        "k": k,
        "cutoffs": cutoffs,
        "retrieved_depth": depth,
        "url_chunk_cap": url_chunk_cap,
        "use_index": use_index,
        "repeats": repeats,
        "distance": "cosine (pgvector <=>)" if retriever != "fts" else "1 / (1 + ts_rank)",
        "snapshot": {"id": snap.id, "content_hash": snap.content_hash},
    }
    if use_index and retriever != "fts":
        params.update({"hnsw": hnsw_params, "ef_search": max(int(ef_search or 40), depth)})
    if retriever == "hybrid":
        params.update({"rrf_k": rrf_k, "fusion_depth": max(k, R.FUSION_DEPTH), "fts_config": "russian"})
    if retriever == "fts":
        params["fts_config"] = "russian, plainto_tsquery with OR"
    models: dict[str, Any] = {}
    if emb is not None:
        models = {
            "embedder": emb.name,
            "dim": emb.dim,
            "stored_model": R.stored_model_name(engine, snapshot=snap),
            "vectors": R.vectors_label(engine, emb.name, dim=emb.dim, snapshot=snap),
        }
    run = runs.create_run(
        engine,
        TIER,
        params=params,
        models=models,
        dataset_id=ds.id,
        dataset_name=ds.name,
        dataset_hash=ds.content_hash,
        n_items_total=len(questions),
        label=label,
    )
    try:
        if use_index and emb is not None:
            _prepare_vectors(engine, emb, say, snap)
            say("Building the HNSW index in the eval schema…")
            R.build_hnsw_index(engine, model=emb.name, snapshot=snap, **hnsw_params)
        say(f"Retrieving top-{depth} for {len(questions)} questions ({retriever})…")
        hits = retrieve(
            engine, questions, retriever=retriever, embedder=emb, k=depth, use_index=use_index, ef_search=ef_search,
            rrf_k=rrf_k, progress=say, snapshot=snap,
        )
        url_hits, url_depth = deepen_for_pages(
            questions, hits, lambda qs, d: retrieve(engine, qs, retriever=retriever, embedder=emb, k=d,
                                                    use_index=use_index, ef_search=ef_search, rrf_k=rrf_k,
                                                    snapshot=snap),
            pages=max(cutoffs), cap=max(url_chunk_cap, depth))
        params["url_retrieved_depth_max"] = url_depth
        hnsw_info = None
        if use_index and emb is not None:
            say("Exact search for the HNSW recall…")
            exact = retrieve(engine, questions, retriever=retriever, embedder=emb, k=k, use_index=False, rrf_k=rrf_k,
                             snapshot=snap)
            hnsw_info = {
                f"recall@{k}_vs_exact": recall_against_exact([_ids(h) for h in hits], [_ids(h) for h in exact], k=k),
                **hnsw_params,
                "ef_search": max(int(ef_search or 40), depth),
            }
        consistency = _consistency(
            engine, questions, retriever=retriever, embedder=emb, k=k, use_index=use_index, ef_search=ef_search,
            repeats=repeats, hnsw_params=hnsw_params, first=hits, rrf_k=rrf_k, say=say, snapshot=snap,
        )
        say("Computing metrics…")
        result = _evaluate(ds, keys, questions, hits, k=k, n_resamples=n_resamples, cutoffs=cutoffs, depth=depth,
                           url_hits=url_hits)
        metrics_store: dict[str, Any] = {
            "chunk": result["ci"]["chunk"],
            "url": result["ci"]["url"],
            "n_evaluated": result["n_evaluated"],
            "n_unanswerable": result["n_unanswerable"],
            "unanswerable_top_distance": result["unanswerable_summary"],
            "retrieval_consistency": consistency,
        }
        if hnsw_info:
            metrics_store["hnsw"] = hnsw_info
        runs.record_items(engine, run.id, [(key, item, "done", None) for key, item in zip(keys, result["items"], strict=True)])
        runs.finish_run(engine, run.id, metrics_store)
    except BaseException as exc:
        runs.fail_run(engine, run.id, f"{type(exc).__name__}: {exc}")
        raise
    say("Done.")
    return Tier1Result(
        run_id=run.id,
        dataset={"id": ds.id, "name": ds.name, "hash": ds.content_hash, "n_items": len(ds)},
        params={**params, "embedder": emb.name if emb is not None else None},
        metrics=result["metrics"],
        ci=result["ci"],
        n_questions=len(questions),
        n_evaluated=result["n_evaluated"],
        n_unanswerable=result["n_unanswerable"],
        unanswerable=result["unanswerable"],
        retrieval_consistency=consistency,
        hnsw=hnsw_info,
        items=result["items"],
        snapshot=snap.to_json(),
    )


def _evaluate(
    ds: Dataset, keys: list[str], questions: list[str], hits: list[list[R.Hit]], *, k: int, n_resamples: int,
    cutoffs: Sequence[int] = CUTOFFS, depth: int | None = None, url_hits: list[list[R.Hit]] | None = None,
) -> dict[str, Any]:
    """Metrics at both levels. Chunk level: the ``depth`` chunks asked for (cut-offs above it are omitted);
    URL level: the distinct pages of ``url_hits`` (retrieved deeper for that), its @K over the first K pages."""
    ks = tuple(cutoffs)
    ndcg_ks = tuple(c for c in ks if c >= 5) or (max(ks),)
    url_hits = url_hits if url_hits is not None else hits
    chunk_rank = [_ids(h) for h in hits]
    url_rank = [to_url_ranking([x.url for x in h]) for h in url_hits]
    chunk_rel = [[int(x) for x in (r.get("relevant_chunk_ids") or [])] for r in ds.records]
    url_rel = [[str(x) for x in (r.get("relevant_urls") or [])] for r in ds.records]
    evals = {
        "chunk": evaluate_retrieval(chunk_rank, chunk_rel, ks=ks, ndcg_ks=ndcg_ks, depth=depth),
        "url": evaluate_retrieval(url_rank, url_rel, ks=ks, ndcg_ks=ndcg_ks),
    }
    ci = {lvl: {key: agg.to_dict() for key, agg in ev.aggregates(n_resamples=n_resamples).items()} for lvl, ev in evals.items()}
    metrics = {lvl: dict(ev.means) for lvl, ev in evals.items()}
    items: list[dict[str, Any]] = []
    unanswerable: list[dict[str, Any]] = []
    for i, rec in enumerate(ds.records):
        h = hits[i]
        answerable = bool(chunk_rel[i] or url_rel[i])
        top = h[0].distance if h else None
        item = {
            "question": questions[i],
            "question_type": rec.get("question_type"),
            "answerable": answerable,
            "first_relevant_rank": first_relevant_rank(chunk_rank[i], chunk_rel[i]) if chunk_rel[i] else None,
            "first_relevant_rank_url": first_relevant_rank(url_rank[i], url_rel[i]) if url_rel[i] else None,
            "retrieved_ids": chunk_rank[i],
            "retrieved_urls": [x.url for x in h],
            "url_ranking": url_rank[i],
            "retrieved_distances": [x.distance for x in h],
            "top_distance": top,
            "relevant_chunk_ids": chunk_rel[i],
            "relevant_urls": url_rel[i],
            "metrics_chunk": evals["chunk"].per_query[i],
            "metrics_url": evals["url"].per_query[i],
        }
        items.append(item)
        if not answerable:
            unanswerable.append(
                {"item_key": keys[i], "question": questions[i], "top_distance": top, "top_chunk_id": h[0].chunk_id if h else None,
                 "top_url": h[0].url if h else None}
            )
    n_answerable = sum(1 for it in items if it["answerable"])
    tops = [u["top_distance"] for u in unanswerable if u["top_distance"] is not None]
    summary: dict[str, Any] = {"n": len(unanswerable), "n_with_hits": len(tops)}
    if tops:
        summary.update({"mean": float(np.mean(tops)), "min": float(min(tops)), **percentiles(tops, qs=(5, 50, 95))})
    return {
        "metrics": metrics,
        "ci": ci,
        "n_evaluated": {"questions": n_answerable, "chunk": evals["chunk"].n_evaluated, "url": evals["url"].n_evaluated},
        "n_unanswerable": len(unanswerable),
        "unanswerable": unanswerable,
        "unanswerable_summary": summary,
        "items": items,
    }


# ---------------------------------------------------------------- comparison and export


def _per_query(engine: Engine, run_id: int, metric: str, level: str) -> dict[str, float | None]:
    df = runs.run_items(engine, run_id)
    col = f"metrics_{level}"
    if df.empty or col not in df.columns:
        raise LookupError(f"Run {run_id} has no Tier 1 items at level {level!r}.")
    out: dict[str, float | None] = {}
    for key, m in zip(df["item_key"], df[col], strict=True):
        value = m.get(metric) if isinstance(m, dict) else None
        if isinstance(m, dict) and metric not in m:
            raise KeyError(f"Run {run_id} has no metric {metric!r}; known: {', '.join(m)}")
        out[str(key)] = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    return out


def compare_tier1_runs(
    engine: Engine,
    run_a: int,
    run_b: int,
    *,
    metric: str = "mrr",
    level: str = "chunk",
    n_resamples: int = 10000,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired comparison of two Tier 1 runs on the same dataset: is ``b - a`` on ``metric`` real?

    Items are paired by key; unanswerable questions (no value) are dropped. Returns the means, the
    paired bootstrap and the paired permutation (sign-flip) tests.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}")
    ra, rb = runs.get_run(engine, run_a), runs.get_run(engine, run_b)
    if ra is None or rb is None:
        raise LookupError(f"No run {run_a if ra is None else run_b}.")
    if ra.dataset_hash != rb.dataset_hash:
        raise ValueError(
            f"Runs {run_a} and {run_b} used different datasets ({ra.dataset_name} {str(ra.dataset_hash)[:8]} vs "
            f"{rb.dataset_name} {str(rb.dataset_hash)[:8]}); a paired test needs the same questions."
        )
    va, vb = _per_query(engine, run_a, metric, level), _per_query(engine, run_b, metric, level)
    common = sorted(set(va) & set(vb))
    a = [va[k] for k in common]
    b = [vb[k] for k in common]
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    boot = paired_bootstrap_test(a, b, n_resamples=n_resamples, seed=seed)
    perm = paired_permutation_test(a, b, n_resamples=n_resamples, seed=seed)
    return {
        "run_a": run_a,
        "run_b": run_b,
        "metric": metric,
        "level": level,
        "n_pairs": len(pairs),
        "mean_a": float(np.mean([p[0] for p in pairs])) if pairs else None,
        "mean_b": float(np.mean([p[1] for p in pairs])) if pairs else None,
        "bootstrap": boot.to_dict(),
        "permutation": perm.to_dict(),
        "significant": bool(boot.significant and perm.significant),
    }


def export_trec(engine: Engine, run_id: int, run_path: str | Path, qrels_path: str | Path, *, level: str = "chunk") -> dict[str, Any]:
    """Write a recorded Tier 1 run as a TREC run file and its qrels file (for ``trec_eval``).

    Run lines ``qid Q0 docid rank score tag`` with ``score = (n + 1 - rank)`` strictly decreasing,
    so trec_eval (which sorts by score) keeps our order; docids are chunk ids (``level="chunk"``) or
    page URLs, deduplicated with order kept (``level="url"``). Qrels lines ``qid 0 docid 1``;
    unanswerable questions have no qrels line, so trec_eval leaves them out as Tier 1 does. Use
    ``trec_eval -c`` so questions with an empty ranking count as zeros.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}")
    run = runs.get_run(engine, run_id)
    if run is None or run.tier != TIER:
        raise LookupError(f"No Tier 1 run {run_id}.")
    df = runs.run_items(engine, run_id)
    tag = f"voproshalych_eval_{run_id}"
    run_lines: list[str] = []
    qrel_lines: list[str] = []
    for _, row in df.iterrows():
        qid = str(row["item_key"]).replace(" ", "_")
        if level == "chunk":
            docs = [str(x) for x in row["retrieved_ids"]]
            rel = [str(x) for x in row["relevant_chunk_ids"]]
        else:
            ranked = row.get("url_ranking")
            docs = [str(x) for x in ranked] if isinstance(ranked, list) else to_url_ranking([str(x) for x in row["retrieved_urls"]])
            rel = [str(x) for x in row["relevant_urls"]]
        n = len(docs)
        run_lines += [f"{qid} Q0 {d} {rank} {n + 1 - rank} {tag}" for rank, d in enumerate(docs, start=1)]
        qrel_lines += [f"{qid} 0 {d} 1" for d in dict.fromkeys(rel)]
    Path(run_path).write_text("\n".join(run_lines) + ("\n" if run_lines else ""), encoding="utf-8")
    Path(qrels_path).write_text("\n".join(qrel_lines) + ("\n" if qrel_lines else ""), encoding="utf-8")
    return {"run_file": str(run_path), "qrels_file": str(qrels_path), "level": level,
            "n_run_lines": len(run_lines), "n_qrels_lines": len(qrel_lines)}


# ---------------------------------------------------------------- tables for the page and exports


def run_table(items: Any, *, failure_rank: int | None = None) -> Any:
    """Per-question table of a recorded run (``runs.run_items``): one row per question.

    Columns: item_key, question, question_type, answerable, first_relevant_rank (chunk),
    first_relevant_rank_url, top_distance, retrieved (``id (distance)`` list), relevant_chunk_ids,
    relevant_urls, mrr, ndcg@10, failed. ``failed`` = answerable and no relevant chunk within the
    first ``failure_rank`` positions (default: none in the list at all).
    """
    import pandas as pd

    rows = []
    for _, r in items.iterrows():
        rank = r.get("first_relevant_rank")
        rank = None if rank is None or (isinstance(rank, float) and math.isnan(rank)) else int(rank)
        mc = r.get("metrics_chunk") if isinstance(r.get("metrics_chunk"), dict) else {}
        answerable = bool(r.get("answerable"))
        failed = answerable and bool(r.get("relevant_chunk_ids")) and (
            rank is None or (failure_rank is not None and rank > failure_rank)
        )
        rows.append({
            "item_key": r["item_key"],
            "question": r.get("question"),
            "question_type": r.get("question_type"),
            "answerable": answerable,
            "first_relevant_rank": rank,
            "first_relevant_rank_url": None if r.get("first_relevant_rank_url") is None or (
                isinstance(r.get("first_relevant_rank_url"), float) and math.isnan(r.get("first_relevant_rank_url"))
            ) else int(r.get("first_relevant_rank_url")),
            "top_distance": r.get("top_distance"),
            "retrieved": ", ".join(
                f"{cid} ({d:.3f})" for cid, d in zip(r.get("retrieved_ids") or [], r.get("retrieved_distances") or [], strict=False)
            ),
            "relevant_chunk_ids": ", ".join(str(x) for x in (r.get("relevant_chunk_ids") or [])),
            "relevant_urls": ", ".join(str(x) for x in (r.get("relevant_urls") or [])),
            "mrr": mc.get("mrr"),
            "ndcg@10": mc.get("ndcg@10"),
            "failed": failed,
        })
    return pd.DataFrame(rows)


def failures_by_section(items: Any, *, failure_rank: int | None = None) -> Any:
    """Failures grouped by the section (relevant URL) the answer lives in.

    Columns: section, questions (answerable questions of that section), failures, failure_rate,
    retrieved_instead (the URLs ranked first for the failed questions, most frequent first).
    """
    import pandas as pd

    table = run_table(items, failure_rank=failure_rank)
    stats: dict[str, dict[str, Any]] = {}
    for (_, r), (_, t) in zip(items.iterrows(), table.iterrows(), strict=True):
        if not t["answerable"]:
            continue
        for url in dict.fromkeys(r.get("relevant_urls") or []):
            s = stats.setdefault(url, {"section": url, "questions": 0, "failures": 0, "instead": {}})
            s["questions"] += 1
            if t["failed"]:
                s["failures"] += 1
                top = (r.get("retrieved_urls") or [None])[0]
                if top:
                    s["instead"][top] = s["instead"].get(top, 0) + 1
    rows = [
        {
            "section": s["section"],
            "questions": s["questions"],
            "failures": s["failures"],
            "failure_rate": s["failures"] / s["questions"] if s["questions"] else None,
            "retrieved_instead": ", ".join(f"{u} ×{n}" for u, n in sorted(s["instead"].items(), key=lambda x: -x[1])),
        }
        for s in stats.values()
    ]
    df = pd.DataFrame(rows, columns=["section", "questions", "failures", "failure_rate", "retrieved_instead"])
    return df.sort_values(["failures", "failure_rate"], ascending=False).reset_index(drop=True)


def run_config_label(run: Any) -> str:
    """Short label of a Tier 1 run: ``#id retriever · embedder · k[ · HNSW]``."""
    p, m = run.params or {}, run.models or {}
    parts = [f"#{run.id} {p.get('retriever', '?')}"]
    if m.get("embedder"):
        parts.append(str(m["embedder"]))
    parts.append(f"k={p.get('k')}")
    if p.get("use_index"):
        parts.append("HNSW")
    return " · ".join(parts)


def comparison_frame(run_list: Sequence[Any], *, level: str = "chunk", keys: Sequence[str] | None = None) -> Any:
    """Long table ``config, run_id, level, metric, value, ci_low, ci_high, n`` for several runs."""
    import pandas as pd

    rows = []
    for run in run_list:
        block = (run.metrics or {}).get(level) or {}
        for key, agg in block.items():
            if keys is not None and key not in keys:
                continue
            agg = agg if isinstance(agg, dict) else {"value": agg}
            rows.append({
                "config": run_config_label(run), "run_id": run.id, "level": level, "metric": key,
                "value": agg.get("value"), "ci_low": agg.get("ci_low"), "ci_high": agg.get("ci_high"), "n": agg.get("n"),
            })
    return pd.DataFrame(rows, columns=["config", "run_id", "level", "metric", "value", "ci_low", "ci_high", "n"])


ITEM_FIELDS = ("question", "relevant_chunk_ids", "retrieved_ids", "retrieved_urls", "retrieved_distances", "first_relevant_rank")


def missing_item_fields(items: Any) -> list[str]:
    """Per-item fields a Tier 1 view needs that ``items`` lacks (runs recorded by other tools or versions)."""
    if items.empty:
        return []
    return [f for f in ITEM_FIELDS if f not in items.columns]
