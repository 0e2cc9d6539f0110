"""Run the real-user analyses end to end and record a run (tier ``real_users``).

:func:`run_real_users` reads the filtered log, embeds the whole of it (stored vectors where the model
matches, cached embedder for the rest), retrieves the top-k of every question once, runs the requested
analyses (utilization, topics, domain), records a run with the metrics (``chunk_coverage``,
``chunk_coverage@1``, ``n_topics``, ``n_questions_used``, ``answered_rate``, …) and one item per topic, and
returns everything the page, the CLI and the report need.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval import runs
from voproshalych_eval.analytics import text_ru
from voproshalych_eval.analytics.domain import DomainResult, domain_analysis
from voproshalych_eval.analytics.question_log import (
    LogEmbeddings,
    LogFilters,
    default_source,
    embed_log,
    read_log,
    text_rows,
)
from voproshalych_eval.analytics.topics import TopicResult, topic_coverage
from voproshalych_eval.analytics.utilization import (
    LogRetrieval,
    UtilizationResult,
    retrieve_log,
    utilization_for_log,
)

log = logging.getLogger(__name__)
ANALYSES = ("utilization", "topics", "domain")
Progress = Callable[[str], None]


@dataclass
class RealUsersResult:
    source: str
    filters: LogFilters
    log: pd.DataFrame
    """Every row of the filtered log (events: sessions and user counts); ``text_log`` = rows with question
    text, which the text analyses (embeddings, retrieval, utilization, topics, terms) use."""
    text_log: pd.DataFrame
    embeddings: LogEmbeddings | None
    retrieval: LogRetrieval | None
    categories: list[str]
    utilization: UtilizationResult | None = None
    topics: TopicResult | None = None
    domain: DomainResult | None = None
    run_id: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    #: real questions a person labelled "not in the knowledge base" (realq datasets): confirmed gaps
    confirmed_gaps: pd.DataFrame | None = None
    #: the knowledge-base snapshot analysed (``Snapshot.to_json()``; its log too for the bot's own log)
    snapshot: dict[str, Any] | None = None

    @property
    def n_used(self) -> int:
        return len(self.log)

    @property
    def n_empty_questions(self) -> int:
        return len(self.log) - len(self.text_log)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "snapshot": self.snapshot,
            "source": self.source,
            "filters": self.filters.describe(),
            "n_questions_used": self.n_used,
            "n_empty_questions": self.n_empty_questions,
            "embeddings": self.embeddings.info() if self.embeddings else None,
            "metrics": self.metrics,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }
        if self.utilization is not None:
            out["utilization"] = self.utilization.to_dict()
        if self.topics is not None:
            out["topics"] = self.topics.to_dict()
        if self.domain is not None:
            out["domain"] = self.domain.to_dict()
        return out


def run_real_users(
    engine: Engine,
    *,
    analyses: Sequence[str] = ANALYSES,
    source: str | None = None,
    filters: LogFilters | None = None,
    top_k: int = 5,
    k_topics: int | None = None,
    k_range: tuple[int, int] = (4, 30),
    embedder_name: str | None = None,
    pause_minutes: float = 30.0,
    near_threshold: float = 0.92,
    slang: dict[str, str] | None = None,
    record: bool = True,
    lang: str = "ru",
    progress: Progress | None = None,
    snapshot: int | None = None,
) -> RealUsersResult:
    """Run the requested analyses over the whole filtered log; record a ``real_users`` run when ``record``.

    ``snapshot``: the snapshot of the knowledge base (and of the bot's log) to analyse; default: the
    source's present content, taken when it changed (:func:`voproshalych_eval.db.snapshots.for_run`).
    """
    say = progress or (lambda m: log.info(m))
    unknown = set(analyses) - set(ANALYSES)
    if unknown:
        raise ValueError(f"unknown analyses {sorted(unknown)}; choose from {', '.join(ANALYSES)}")
    from voproshalych_eval.db import snapshots

    filters = filters or LogFilters()
    snap = snapshots.for_run(engine, snapshot, progress=say)
    say(f"Knowledge base and log: snapshot {snap.label}.")
    source = source or default_source(engine, snapshot=snap)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    say("Reading the question log…")
    df = read_log(engine, source=source, filters=filters, snapshot=snap)
    timings["read"] = time.perf_counter() - t0
    if df.empty:
        raise LookupError("No questions match the filters (period, answered, score, source). Widen the filters.")
    tdf, n_empty = text_rows(df)
    if n_empty:
        say(f"{n_empty} rows have no question text: counted as events (sessions, users), left out of text analyses.")
    if tdf.empty and set(analyses) & {"utilization", "topics"}:
        raise LookupError("No row with question text matches the filters. Widen the filters.")
    normalizer = text_ru.SlangNormalizer(slang) if slang is not None else text_ru.SlangNormalizer()
    t = time.perf_counter()
    categories = text_ru.classify_many(tdf["question"].tolist(), slang=normalizer)
    timings["classify"] = time.perf_counter() - t

    need_vectors = bool(set(analyses) & {"utilization", "topics", "domain"})
    emb: LogEmbeddings | None = None
    ret: LogRetrieval | None = None
    if need_vectors and not tdf.empty:
        t = time.perf_counter()
        emb = embed_log(engine, tdf, embedder_name=embedder_name, progress=say, snapshot=snap)
        timings["embed"] = time.perf_counter() - t
        say(f"{emb.n_used} questions: {emb.n_stored} stored vectors, {emb.n_embedded} embedded with {emb.model}.")
    if emb is not None and set(analyses) & {"utilization", "topics"}:
        t = time.perf_counter()
        say(f"Retrieving the top-{top_k} chunks of every question…")
        ret = retrieve_log(engine, emb.vectors, k=top_k, model=emb.model, snapshot=snap)
        timings["retrieve"] = time.perf_counter() - t

    res = RealUsersResult(source or "", filters, df, tdf, emb, ret, categories, snapshot=snap.to_json())
    run = None
    if record:
        run = runs.create_run(
            engine,
            "real_users",
            params={"analyses": list(analyses), "source": source, "filters": filters.describe(), "top_k": top_k,
                    "k_topics": k_topics, "k_range": list(k_range), "pause_minutes": pause_minutes,
                    "near_threshold": near_threshold,
                    "snapshot": {"id": snap.id, "content_hash": snap.content_hash}},
            models={"embedder": emb.model if emb else None},
            dataset_name=f"question_log:{source}",
            n_items_total=len(df),
        )
        res.run_id = run.id
    try:
        if "utilization" in analyses and ret is not None:
            t = time.perf_counter()
            say("Chunk utilization…")
            res.utilization = utilization_for_log(engine, tdf, ret, snapshot=snap)
            timings["utilization"] = time.perf_counter() - t
        if "topics" in analyses and emb is not None:
            t = time.perf_counter()
            say("Topics and coverage gaps…")
            res.topics = topic_coverage(tdf, emb.vectors, ret, k_topics=k_topics, k_range=k_range,
                                        categories=categories, slang=normalizer, lang=lang)
            timings["topics"] = time.perf_counter() - t
        if "domain" in analyses:
            t = time.perf_counter()
            say("Domain analysis…")
            res.domain = domain_analysis(df, emb.vectors if emb else None, pause_minutes=pause_minutes,
                                         near_threshold=near_threshold, slang=normalizer, categories=categories)
            timings["domain"] = time.perf_counter() - t
        if "topics" in analyses:
            from voproshalych_eval.annotations import confirmed_gaps

            res.confirmed_gaps = confirmed_gaps(engine)
        res.metrics = _summary_metrics(res)
        res.timings = timings
        if run is not None:
            if res.topics is not None:
                items = [
                    (f"topic:{int(r['topic'])}", {k: _clean(r[k]) for k in ("name", "kind", "size", "answered_share",
                                                                     "nearest_distance", "gap_score", "gap_rank",
                                                                     "examples") if k in r}, "done", None)
                    for r in res.topics.topics.to_dict(orient="records")
                ]
                runs.record_items(engine, run.id, items)
            runs.finish_run(engine, run.id, {**res.metrics, "timings_s": {k: round(v, 3) for k, v in timings.items()}})
    except Exception as exc:
        if run is not None:
            runs.fail_run(engine, run.id, str(exc))
        raise
    return res


def _clean(v: Any) -> Any:
    if isinstance(v, (np.floating, float)):
        return None if np.isnan(v) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _summary_metrics(res: RealUsersResult) -> dict[str, Any]:
    m: dict[str, Any] = {"n_questions_used": res.n_used, "n_empty_questions": res.n_empty_questions,
                         "answered_rate": float(res.log["answered"].mean()) if res.n_used else None}
    if res.embeddings is not None:
        m["n_stored_embeddings"] = res.embeddings.n_stored
        m["n_embedded"] = res.embeddings.n_embedded
    if res.utilization is not None:
        for k in ("chunk_coverage", "chunk_coverage@1", "page_coverage", "page_coverage@1", "n_never_retrieved",
                  "top10pct_chunk_share", "mean_top1_similarity"):
            m[k] = res.utilization.metrics.get(k)
    if res.topics is not None:
        m["n_topics"] = res.topics.metrics["n_topics"]
        m["best_silhouette"] = res.topics.metrics["best_silhouette"]
        if len(res.topics.gaps):
            m["top_gap"] = str(res.topics.gaps.iloc[0]["name"])
    if res.domain is not None:
        for k in ("unique_users", "questions_per_user_mean", "n_sessions", "turns_per_session_mean", "slang_share",
                  "exact_repeat_share", "near_duplicate_share", "share_greeting", "share_thanks", "share_off_topic",
                  "share_jailbreak"):
            m[k] = res.domain.metrics.get(k)
    return {k: _clean(v) for k, v in m.items()}
