"""Tier 1: retrieval accuracy of a retriever on a golden dataset — a plan run by the engine.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.config import get_settings
from voproshalych_eval.db import retrieval as R
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS, cached_embedder
from voproshalych_eval.metrics.failures import count as count_kinds
from voproshalych_eval.metrics.retrieval import (
    evaluate_retrieval,
    first_relevant_rank,
    recall_against_exact,
    retrieval_consistency,
    to_url_ranking,
)
from voproshalych_eval.metrics.statistics import percentiles, summarize
from voproshalych_eval.plans import Plan, spec
from voproshalych_eval.tiers import aggregation, inputs

__all__ = [
    "LEVELS",
    "RETRIEVERS",
    "Tier1Result",
    "build_plan",
    "default_embedder_name",
    "export_trec",
]

RETRIEVERS: tuple[str, ...] = spec("tier1").param("retriever").choices
LEVELS = ("chunk", "url")
TIER = "tier1"
#: the cut-offs K reported at both levels (``hit_rate@K``, ``recall@K``, ``precision@K``; NDCG at K >= 5)
CUTOFFS: tuple[int, ...] = tuple(spec("tier1").param("cutoffs").default)
#: URL level: the first K distinct pages are looked for among at most this many chunks per question
URL_CHUNK_CAP: int = spec("tier1").param("url_chunk_cap").default

Progress = Callable[[str], None]


def default_embedder_name(engine: Engine, *, snapshot: R.SnapshotRef = None) -> str:
    """The stored model when the app knows it and can load it, else the configured embedder."""
    stored = R.stored_model_name(engine, snapshot=snapshot)
    if stored and (stored in BUILTIN_EMBEDDERS or stored.startswith(("st:", "openai:"))):
        return stored
    return get_settings().embedder


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


#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("tier1").defaults()


def build_plan(engine: Engine, params: Mapping[str, Any]) -> Tier1Plan:
    """The Tier 1 plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return Tier1Plan(engine, params)


class Tier1Plan(Plan):
    """Tier 1: retrieval quality of one retriever on a golden dataset.

    Items: one per question (batched: ``batch_size`` questions are embedded and retrieved together, then
    each is recorded), then one per extra consistency repeat (``consistency:repeat<r>``: the whole set
    retrieved again after an HNSW rebuild / a fresh API call). ``prepare`` (re-)embeds the knowledge base
    for an embedder that did not fill ``chunk.embedding`` and builds the HNSW copy. ``finalize`` computes
    both levels' means with bootstrap CIs, the unanswerable summary, the HNSW recall and consistency.

    Params: ``dataset`` (stored name / id, or a golden file), ``retriever`` (``vector``, ``fts``,
    ``hybrid``), ``embedder`` (default: :func:`default_embedder_name`; unused by ``fts``), ``k`` (the
    answer depth: chunks are retrieved to ``max(k, max(cutoffs))`` so every reported cut-off is computed
    on a list that deep), ``cutoffs`` (the K of the ``@K`` metrics), ``url_chunk_cap`` (URL-level @K is
    over the first K distinct pages: questions whose chunks hold fewer pages are retrieved deeper, up to
    this many chunks),
    ``use_index`` (search an HNSW copy in the ``eval`` schema; its recall@k against exact search is
    reported), ``repeats`` (for ``retrieval_consistency``: HNSW / external API only), ``rrf_k``,
    ``snapshot`` (the knowledge-base snapshot id to search; default: the source's present content, taken
    when it changed — the run is pinned to it, so a resume searches the same snapshot).
    """

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("tier1").resolve(params)
        self.method, self.k, self.cutoffs = retriever, k, cutoffs = _checked(p)
        self.depth = depth = retrieval_depth(k, cutoffs)
        self.url_cap = max(int(p["url_chunk_cap"]), depth)
        self.ds = ds = inputs.load_dataset(engine, p["dataset"], "golden")
        self.snap = snap = snapshots.for_run(engine, p["snapshot"])
        self.use_index = use_index = bool(p["use_index"]) and retriever != "fts"
        self.repeats = repeats = max(1, int(p["repeats"] or 1))
        self.n_resamples = int(p["n_resamples"])
        self.ef_search = p["ef_search"]
        self.hnsw_params = {"m": int(p["hnsw_m"]), "ef_construction": int(p["hnsw_ef_construction"])}
        emb = None
        if retriever != "fts":
            emb = cached_embedder(str(p["embedder"] or default_embedder_name(engine, snapshot=snap)), engine)
        #: the one retriever of the run: every question batch, URL deepening, exact comparison and repeat asks it
        self.search = Retriever.open(engine, snapshot=snap, method=retriever, embedder=emb, use_index=use_index,
                                     ef_search=self.ef_search, rrf_k=int(p["rrf_k"]))
        self.question_keys = keys = ds.keys()
        models: dict[str, Any] = {}
        if emb is not None:
            models = {
                "embedder": emb.name,
                "dim": emb.dim,
                "stored_model": self.search.stored_model(),
                "vectors": self.search.vectors_label(),
            }
        self.consistency = consistency_setup(retriever, emb, use_index=use_index, repeats=repeats)
        self.external = emb is not None and str(emb.name).startswith("openai:")
        n_repeats = repeats - 1 if self.consistency["applicable"] and repeats >= 2 else 0
        items: list[tuple[str, Any]] = [(key, ("question", i)) for i, key in enumerate(keys)]
        items += [(f"consistency:repeat{r + 1}", ("repeat", r + 1)) for r in range(1, n_repeats + 1)]
        super().__init__(
            tier=TIER,
            items=items,
            batch_size=int(p["batch_size"]),
            concurrency=1,  # one database-bound batch at a time; HNSW rebuilds must not race the searches
            params=self._run_params(p, emb),
            models=models,
            dataset_id=ds.id,
            dataset_name=ds.name,
            dataset_hash=ds.content_hash,
            snapshot_id=snap.id,
        )

    def _run_params(self, p: Mapping[str, Any], emb: Any) -> dict[str, Any]:
        """The parameters the run records (its identity): the resolved ones and what they imply."""
        retriever, use_index, depth = self.method, self.use_index, self.depth
        run_params: dict[str, Any] = {
            "dataset": p["dataset"],
            "retriever": retriever,
            "k": self.k,
            "cutoffs": self.cutoffs,
            "retrieved_depth": depth,
            "url_chunk_cap": int(p["url_chunk_cap"]),
            "use_index": use_index,
            "repeats": self.repeats,
            "n_resamples": int(p["n_resamples"]),
            "batch_size": int(p["batch_size"]),
            "embedder": emb.name if emb is not None else None,
            "distance": "cosine (pgvector <=>)" if retriever != "fts" else "1 / (1 + ts_rank)",
            "snapshot": self.snap.id,
        }
        hnsw_params, ef_search = self.hnsw_params, self.ef_search
        if use_index:
            run_params.update({"hnsw": hnsw_params, "hnsw_m": hnsw_params["m"],
                               "hnsw_ef_construction": hnsw_params["ef_construction"],
                               "ef_search": max(int(ef_search or 40), depth)})
        if retriever == "hybrid":
            run_params.update({"rrf_k": int(p["rrf_k"]), "fusion_depth": max(self.k, R.FUSION_DEPTH),
                               "fts_config": "russian"})
        if retriever == "fts":
            run_params["fts_config"] = "russian, plainto_tsquery with OR"
        return run_params

    def prepare(self) -> None:
        snap = self.snap
        self.say(bi(f"База знаний: снимок {snap.label}.", f"Knowledge base: snapshot {snap.label}."))
        self.search.prepare(self.say)
        if self.use_index:
            self.say(bi("Строится HNSW-индекс в служебной схеме…", "Building the HNSW index in the eval schema…"))
            self.search.build_index(**self.hnsw_params)

    def _questions_batch(self, indices: list[int]) -> list[dict[str, Any]]:
        ds, depth, retriever, search = self.ds, self.depth, self.method, self.search
        qs = [str(ds.records[i]["question"]) for i in indices]
        self.say(bi(f"Поиск top-{depth} для {len(qs)} вопросов ({retriever})…",
                    f"Retrieving top-{depth} for {len(qs)} questions ({retriever})…"))
        hits = search.search(qs, depth)
        url_hits, _ = deepen_for_pages(qs, hits, search.search, pages=max(self.cutoffs), cap=self.url_cap)
        exact = search.exact().search(qs, self.k) if self.use_index else None
        out = question_items([ds.records[i] for i in indices], qs, hits, cutoffs=self.cutoffs, depth=depth,
                             url_hits=url_hits)
        for item, uh in zip(out, url_hits, strict=True):
            item["url_depth"] = len(uh)  # chunks retrieved for the URL level (deepened for pages)
        if exact is not None:
            for item, h in zip(out, exact, strict=True):
                item["exact_retrieved_ids"] = _ids(h)
        return out

    def _repeat(self, r: int) -> dict[str, Any]:
        qs = [str(rec["question"]) for rec in self.ds.records]
        self.say(bi(f"Повтор для согласованности {r}/{self.repeats}…", f"Consistency repeat {r}/{self.repeats}…"))
        if self.use_index:  # a new random graph
            self.search.build_index(**self.hnsw_params)
        # an external API: a fresh call, no cache
        hits = (self.search.uncached() if self.external else self.search).search(qs, self.k)
        return {"repeat": r, "topk": {key: _ids(h) for key, h in zip(self.question_keys, hits, strict=True)}}

    def work_batch(self, payloads: list[tuple[str, int]]) -> list[dict[str, Any]]:
        results: dict[int, dict[str, Any]] = {}
        q_pos = [j for j, (kind, _) in enumerate(payloads) if kind == "question"]
        if q_pos:
            for j, item in zip(q_pos, self._questions_batch([payloads[j][1] for j in q_pos]), strict=True):
                results[j] = item
        for j, (kind, r) in enumerate(payloads):
            if kind == "repeat":
                results[j] = self._repeat(r)
        return [results[j] for j in range(len(payloads))]

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        hnsw = {**self.hnsw_params, "ef_search": max(int(self.ef_search or 40), self.depth)} if self.use_index else None
        return aggregate(records, keys=self.question_keys, k=self.k, n_resamples=self.n_resamples,
                         consistency=self.consistency, hnsw=hnsw)


def _checked(p: Mapping[str, Any]) -> tuple[str, int, list[int]]:
    """The retriever, ``k`` and the sorted cut-offs of the resolved parameters; ``ValueError`` naming a bad one."""
    retriever, k = p["retriever"], p["k"]
    if retriever not in RETRIEVERS:
        raise ValueError(f"unknown retriever {retriever!r}; use one of {', '.join(RETRIEVERS)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    cutoffs = sorted({int(c) for c in p["cutoffs"]})
    if not cutoffs or any(c < 1 for c in cutoffs):
        raise ValueError(f"cut-offs must be positive integers, got {cutoffs!r}")
    return retriever, k, cutoffs


def consistency_setup(retriever: str, emb: Any, *, use_index: bool, repeats: int) -> dict[str, Any]:
    """Whether ``retrieval_consistency`` can vary for this configuration, and why (before any repeat)."""
    external = emb is not None and str(emb.name).startswith("openai:")
    if retriever == "fts":
        return {"value": None, "applicable": False, "repeats": repeats,
                "reason": "PostgreSQL full-text search is deterministic; the same query always returns the same top-k"}
    if not use_index and not external:
        return {"value": None, "applicable": False, "repeats": repeats, "reason": (
            "exact search (sequential scan) with a deterministic embedder returns the same top-k on every "
            "repeat by construction; consistency is only measured with an HNSW index or an external embedding API")}
    if repeats < 2:
        return {"value": None, "applicable": True, "repeats": repeats,
                "reason": "measurable here (HNSW / external API) but needs repeats >= 2"}
    source = "HNSW index rebuilt for every repeat" if use_index else "external embedding API called again (no cache)"
    return {"value": None, "applicable": True, "repeats": repeats, "reason": source}


def question_items(
    records: Sequence[Mapping[str, Any]],
    questions: Sequence[str],
    hits: Sequence[Sequence[R.Hit]],
    *,
    cutoffs: Sequence[int] = CUTOFFS,
    depth: int | None = None,
    url_hits: Sequence[Sequence[R.Hit]] | None = None,
) -> list[dict[str, Any]]:
    """One item result per question: ranking, distances, relevant ids and both levels' per-query metrics.

    Chunk level: the ``depth`` chunks asked for (cut-offs above it are omitted); URL level: the distinct
    pages of ``url_hits`` (retrieved deeper for that), its @K over the first K pages and MRR / MAP over the
    first ``max(cutoffs)`` pages — a fixed depth for every question, however deep its list was retrieved."""
    ks = tuple(cutoffs)
    ndcg_ks = tuple(c for c in ks if c >= 5) or (max(ks),)
    url_hits = url_hits if url_hits is not None else hits
    chunk_rank = [_ids(h) for h in hits]
    url_rank = [to_url_ranking([x.url for x in h]) for h in url_hits]
    chunk_rel = [[int(x) for x in (r.get("relevant_chunk_ids") or [])] for r in records]
    url_rel = [[str(x) for x in (r.get("relevant_urls") or [])] for r in records]
    per_chunk = evaluate_retrieval(chunk_rank, chunk_rel, ks=ks, ndcg_ks=ndcg_ks, depth=depth).per_query
    # URL level over a FIXED depth: the first max(cut-offs) distinct pages of every question. The lists were
    # deepened question by question until they held that many pages, so MRR/MAP over the whole list would
    # reward a question for having been retrieved deeper than another.
    pages = max(ks)
    per_url = evaluate_retrieval([r[:pages] for r in url_rank], url_rel, ks=ks, ndcg_ks=ndcg_ks).per_query
    out = []
    for i, rec in enumerate(records):
        h = hits[i]
        out.append({
            "question": questions[i],
            "question_type": rec.get("question_type"),
            "answerable": bool(chunk_rel[i] or url_rel[i]),
            "first_relevant_rank": first_relevant_rank(chunk_rank[i], chunk_rel[i]) if chunk_rel[i] else None,
            "first_relevant_rank_url": first_relevant_rank(url_rank[i], url_rel[i]) if url_rel[i] else None,
            "retrieved_ids": chunk_rank[i],
            "retrieved_urls": [x.url for x in h],
            "url_ranking": url_rank[i],
            "retrieved_distances": [x.distance for x in h],
            "top_distance": h[0].distance if h else None,
            "relevant_chunk_ids": chunk_rel[i],
            "relevant_urls": url_rel[i],
            "metrics_chunk": per_chunk[i],
            "metrics_url": per_url[i],
        })
    return out


def aggregate(
    records: Sequence[Mapping[str, Any]],
    *,
    keys: Sequence[str],
    k: int,
    n_resamples: int = 2000,
    consistency: Mapping[str, Any] | None = None,
    hnsw: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The run's aggregates from its recorded items (dataset order): per level every metric's mean with a
    bootstrap CI over the evaluated questions (a failed question counts as a failure of every metric,
    an unanswerable one is left out), the unanswerable questions' top distances, the HNSW recall
    against exact search and ``retrieval_consistency``."""
    by_key = {r["item_key"]: r for r in records}
    q_records = [by_key[key] for key in keys if key in by_key]
    done = [r["result"] for r in q_records if r["status"] == "done"]
    failed_kinds = aggregation.failed_item_kinds(q_records)  # timeout / 429 / 5xx of the embedding API -> transport
    n_failed = len(failed_kinds)
    out: dict[str, Any] = {}
    n_eval: dict[str, int] = {"questions": sum(1 for it in done if it["answerable"])}
    for level in LEVELS:
        rows = [it[f"metrics_{level}"] for it in done if it.get(f"metrics_{level}") is not None]
        n_eval[level] = len(rows)
        metric_keys = list(rows[0]) if rows else []
        kinds = [None] * len(rows) + failed_kinds
        out[level] = {m: summarize([row[m] for row in rows] + [None] * n_failed, kinds=kinds,
                                   n_resamples=n_resamples).to_dict()
                      for m in metric_keys}
    tops = [it["top_distance"] for it in done if not it["answerable"] and it["top_distance"] is not None]
    summary: dict[str, Any] = {"n": sum(1 for it in done if not it["answerable"]), "n_with_hits": len(tops)}
    if tops:
        summary.update({"mean": float(np.mean(tops)), "min": float(min(tops)), **percentiles(tops, qs=(5, 50, 95))})
    out.update({"n_evaluated": n_eval, "n_unanswerable": summary["n"], "unanswerable_top_distance": summary,
                "n_failed_items": n_failed, "failure_kinds": count_kinds(failed_kinds)})
    cons = dict(consistency or {"value": None, "applicable": False, "reason": "not measured", "repeats": 1})
    repeats = sorted((r["result"] for r in records if r["item_key"].startswith("consistency:") and r["status"] == "done"),
                     key=lambda x: x["repeat"])
    if cons.get("applicable") and repeats:
        lists = [[it["retrieved_ids"]] + [rep["topk"].get(key, []) for rep in repeats]
                 for key, it in zip([r["item_key"] for r in q_records if r["status"] == "done"], done, strict=True)]
        cons["value"] = retrieval_consistency(lists, k=k)
        cons["repeats"] = 1 + len(repeats)
    out["retrieval_consistency"] = cons
    if hnsw is not None:
        pairs = [(it["retrieved_ids"], it["exact_retrieved_ids"]) for it in done if "exact_retrieved_ids" in it]
        out["hnsw"] = {f"recall@{k}_vs_exact": recall_against_exact([a for a, _ in pairs], [b for _, b in pairs], k=k)
                       if pairs else None, **hnsw}
    return out


@dataclass
class Tier1Result:
    """A recorded Tier 1 run as the CLI and tests read it (:meth:`from_run`).

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
    #: the knowledge-base snapshot the run searched (``Snapshot.to_json()``, when given to :meth:`from_run`)
    snapshot: dict[str, Any] | None = None

    def to_json(self, *, with_items: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_items:
            out.pop("items")
        return out

    @classmethod
    def from_run(cls, run: Any, records: Sequence[Mapping[str, Any]], snapshot: Any = None) -> Tier1Result:
        """From a run (``runs.Run``), its item records (``runs.item_records``) and its snapshot (a ``Snapshot``)."""
        m = run.metrics or {}
        q = [r for r in records if not str(r["item_key"]).startswith("consistency:")]
        items = [dict(r["result"], item_key=r["item_key"]) for r in q if r["status"] == "done"]
        unanswerable = [
            {"item_key": it["item_key"], "question": it["question"], "top_distance": it["top_distance"],
             "top_chunk_id": (it["retrieved_ids"] or [None])[0], "top_url": (it["retrieved_urls"] or [None])[0]}
            for it in items if not it["answerable"]
        ]
        ci = {lvl: dict(m.get(lvl) or {}) for lvl in LEVELS}
        params = dict(run.params or {})
        depths = [it["url_depth"] for it in items if it.get("url_depth") is not None]
        if depths:
            params["url_retrieved_depth_max"] = max(depths)  # the deepest URL-level retrieval of the run
        return cls(
            run_id=run.id,
            dataset={"id": run.dataset_id, "name": run.dataset_name, "hash": run.dataset_hash, "n_items": len(q)},
            params=params,
            metrics={lvl: {key: agg.get("value") for key, agg in block.items()} for lvl, block in ci.items()},
            ci=ci,
            n_questions=len(q),
            n_evaluated=dict(m.get("n_evaluated") or {}),
            n_unanswerable=int(m.get("n_unanswerable") or 0),
            unanswerable=unanswerable,
            retrieval_consistency=dict(m.get("retrieval_consistency") or {}),
            hnsw=m.get("hnsw"),
            items=items,
            snapshot=snapshot.to_json() if snapshot is not None else None,
        )


# ---------------------------------------------------------------- export


def export_trec(run: Any, records: Sequence[Mapping[str, Any]], run_path: str | Path, qrels_path: str | Path, *,
                level: str = "chunk") -> dict[str, Any]:
    """Write a recorded Tier 1 run (``runs.Run`` + ``runs.item_records``) as a TREC run file and its qrels
    file (for ``trec_eval``).

    Run lines ``qid Q0 docid rank score tag`` with ``score = (n + 1 - rank)`` strictly decreasing,
    so trec_eval (which sorts by score) keeps our order; docids are chunk ids (``level="chunk"``) or
    page URLs, deduplicated with order kept and cut to the first ``max(cutoffs)`` pages, the fixed depth of the
    URL-level metrics (``level="url"``). Qrels lines ``qid 0 docid 1``;
    unanswerable questions have no qrels line, so trec_eval leaves them out as Tier 1 does. Use
    ``trec_eval -c`` so questions with an empty ranking count as zeros.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}")
    if run is None or run.tier != TIER:
        raise LookupError(f"No Tier 1 run {getattr(run, 'id', '')}.")
    tag = f"voproshalych_eval_{run.id}"
    url_pages = max(int(c) for c in ((run.params or {}).get("cutoffs") or CUTOFFS))
    run_lines: list[str] = []
    qrel_lines: list[str] = []
    for rec in records:
        row = rec["result"]
        if rec["status"] != "done" or str(rec["item_key"]).startswith("consistency:"):
            continue
        qid = str(rec["item_key"]).replace(" ", "_")
        if level == "chunk":
            docs = [str(x) for x in row["retrieved_ids"]]
            rel = [str(x) for x in row["relevant_chunk_ids"]]
        else:
            ranked = row.get("url_ranking")
            docs = [str(x) for x in ranked] if isinstance(ranked, list) else to_url_ranking([str(x) for x in row["retrieved_urls"]])
            rel = [str(x) for x in row["relevant_urls"]]
            docs = docs[:url_pages]  # the fixed depth the URL-level metrics are computed over
        n = len(docs)
        run_lines += [f"{qid} Q0 {d} {rank} {n + 1 - rank} {tag}" for rank, d in enumerate(docs, start=1)]
        qrel_lines += [f"{qid} 0 {d} 1" for d in dict.fromkeys(rel)]
    Path(run_path).write_text("\n".join(run_lines) + ("\n" if run_lines else ""), encoding="utf-8")
    Path(qrels_path).write_text("\n".join(qrel_lines) + ("\n" if qrel_lines else ""), encoding="utf-8")
    return {"run_file": str(run_path), "qrels_file": str(qrels_path), "level": level,
            "n_run_lines": len(run_lines), "n_qrels_lines": len(qrel_lines)}


# ---------------------------------------------------------------- tables for the page and exports


def questions_only(items: Any) -> Any:
    """The question rows of a run's items table (without the ``consistency:repeat<r>`` items)."""
    if items.empty or "item_key" not in items.columns:
        return items
    return items[~items["item_key"].astype(str).str.startswith("consistency:")].reset_index(drop=True)


def run_table(items: Any, *, failure_rank: int | None = None) -> Any:
    """Per-question table of a recorded run (``runs.run_items``): one row per question.

    Columns: item_key, question, question_type, answerable, first_relevant_rank (chunk),
    first_relevant_rank_url, top_distance, retrieved (``id (distance)`` list), relevant_chunk_ids,
    relevant_urls, mrr, ndcg@10, failed. ``failed`` = answerable and no relevant chunk within the
    first ``failure_rank`` positions (default: none in the list at all).
    """
    rows = []
    for _, r in questions_only(items).iterrows():
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
    items = questions_only(items)
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
    items = questions_only(items)
    if items.empty:
        return []
    return [f for f in ITEM_FIELDS if f not in items.columns]
