"""Label real questions ("realq"): pick questions from the log, let a person mark the relevant chunks.

Picking (:func:`candidates`) works on the question log (:mod:`voproshalych_eval.analytics.question_log`),
keeps only messages the rule classifier calls questions (no greetings, thanks, off-topic, jailbreaks),
deduplicates them by normalised text (the number of times each was asked is kept) and selects by:

* ``random_stratified`` — a seeded sample stratified by outcome (answered / unanswered) x feedback
  (thumbs up / thumbs down / unrated), proportional with at least one per non-empty stratum;
* ``unanswered`` — the bot gave no answer; ``thumbs_down`` — the user rated the answer 1;
* ``topic`` — the questions of one topic of the real-user topic analysis; ``coverage_gap`` — the
  questions of the top-ranked coverage-gap topics, taken in turn. Both take the topics of a recorded
  run: :func:`topics_plan` is run by the executor (cancellable, resumable) and
  :func:`topic_assignments` reads the topic of every question from its stored ``topics`` step.

Candidates go to a labelling pool (review rows of the target dataset with status ``pending``) with the
retriever's top hits stored as *suggestions*. :func:`label` turns one into a golden item — the relevant
chunks a person confirmed, or ``not_in_kb`` — and commits a new version of the realq dataset
(``question_source = "real"``). Suggestions are never saved as relevant: only the ids passed to
:func:`label` are. "Not in the knowledge base" labels are the confirmed gaps of the coverage-gap report
(:func:`voproshalych_eval.datasets.annotations.confirmed_gaps`).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.datasets import annotations as A
from voproshalych_eval.datasets import versions as dv
from voproshalych_eval.datasets.store import Dataset, content_hash, get_dataset, store, validate_records
from voproshalych_eval.generation.picker import picker_retriever, search_chunks
from voproshalych_eval.plans import Plan

STRATEGIES = ("random_stratified", "unanswered", "thumbs_down", "topic", "coverage_gap")
CANDIDATE_COLUMNS = ["log_id", "source", "question", "n_asked", "answer", "url", "score", "created_at", "stratum", "topic"]
_PUNCT = re.compile(r"[^\w\s]+", re.UNICODE)


def normalized(question: str) -> str:
    """Deduplication key: lower case, ``ё`` -> ``е``, punctuation dropped, whitespace collapsed."""
    # heavy: defers snowballstemmer (via analytics.text_ru)
    from voproshalych_eval.analytics.text_ru import normalize

    return " ".join(_PUNCT.sub(" ", normalize(question)).split())


def _stratum(row: Any) -> str:
    outcome = "answered" if row.answered else "unanswered"
    score = None if pd.isna(row.score) else int(row.score)
    fb = "up" if score == 5 else "down" if score == 1 else "unrated"
    return f"{outcome}/{fb}"


def log_questions(engine: Engine, *, source: str | None = None) -> pd.DataFrame:
    """The log's real questions, deduplicated (first occurrence kept, ``n_asked`` counted), with their stratum."""
    # heavy: defers snowballstemmer (via analytics.question_log)
    from voproshalych_eval.analytics.question_log import read_log

    # heavy: defers snowballstemmer (via analytics.text_ru)
    from voproshalych_eval.analytics.text_ru import classify_many

    df = read_log(engine, source=source)
    if df.empty:
        return pd.DataFrame(columns=CANDIDATE_COLUMNS)
    df = df[[c == "question" for c in classify_many(df["question"].tolist())]].copy()
    df["key"] = [normalized(q) for q in df["question"]]
    df = df[df["key"] != ""]
    counts = df.groupby("key").size()
    df = df.drop_duplicates("key", keep="first").copy()
    df["n_asked"] = df["key"].map(counts).astype(int)
    df["stratum"] = [_stratum(r) for r in df.itertuples(index=False)]
    df = df.rename(columns={"id": "log_id"})
    df["topic"] = None
    return df[[c for c in CANDIDATE_COLUMNS if c in df.columns] + ["answered", "key"]].reset_index(drop=True)


TOPIC_STRATEGIES = ("topic", "coverage_gap")
TOPIC_COLUMNS = ["log_id", "topic", "topic_name", "gap_rank"]


def topics_plan(engine: Engine, *, source: str | None = None, k_topics: int | None = None) -> Plan:
    """The real-user topic analysis of the log (a ``real_users`` plan with ``analyses=["topics"]``), for the
    executor to run as a recorded, cancellable, resumable run; its ``topics`` step stores the topic of every
    log question (read back with :func:`topic_assignments`)."""
    # heavy: defers snowballstemmer (via analytics.pipeline)
    from voproshalych_eval.analytics.pipeline import build_plan

    plan = build_plan(engine, {"analyses": ["topics"], "source": source, "k_topics": k_topics})
    plan.label = "realq: topics of the log"
    return plan


def topic_assignments(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Topic of every log question from the item records of a finished real-users run with the topics analysis
    (:func:`voproshalych_eval.engine.runs.item_records`): ``log_id, topic, topic_name, gap_rank`` (``gap_rank`` None
    for topics that are not ranked gaps)."""
    step = next((r for r in records if r["item_key"] == "topics"), None)
    if step is None or step["status"] != "done":
        raise LookupError("the run has no finished 'topics' step: run (or resume) the real-user topic analysis first")
    a = (step["result"] or {}).get("assignments")
    if a is None:
        raise LookupError("the run's 'topics' step has no topic assignments (a run from an older version): "
                          "run the topic analysis again")
    names, gaps = a.get("names") or {}, a.get("gap_rank") or {}
    topics = [int(x) for x in a["topic"]]
    return pd.DataFrame({
        "log_id": [int(x) for x in a["log_id"]],
        "topic": topics,
        "topic_name": [names.get(str(x), str(x)) for x in topics],
        "gap_rank": [gaps.get(str(x)) for x in topics],
    }, columns=TOPIC_COLUMNS)


def _stratified(df: pd.DataFrame, n: int, rng: random.Random) -> pd.DataFrame:
    groups = {k: list(g.index) for k, g in df.groupby("stratum")}
    if not groups:
        return df.head(0)
    keys = sorted(groups)
    n = min(n, len(df))
    alloc = {k: max(1, math.floor(n * len(groups[k]) / len(df))) for k in keys}
    while sum(alloc.values()) > n:  # more strata than n: drop from the largest allocations
        k = max(keys, key=lambda x: (alloc[x], x))
        alloc[k] -= 1
    rest = n - sum(alloc.values())
    order = sorted(keys, key=lambda k: -(n * len(groups[k]) / len(df) - alloc[k]))
    i = 0
    while rest > 0 and order:
        k = order[i % len(order)]
        if alloc[k] < len(groups[k]):
            alloc[k] += 1
            rest -= 1
        i += 1
        if i > 10 * len(order) * (n + 1):
            break
    picked: list[int] = []
    for k in keys:
        idx = list(groups[k])
        rng.shuffle(idx)
        picked += idx[: min(alloc[k], len(idx))]
    return df.loc[sorted(picked)]


def candidates(
    engine: Engine,
    *,
    strategy: str = "random_stratified",
    n: int = 20,
    source: str | None = None,
    topic: int | None = None,
    topics: pd.DataFrame | None = None,
    top_gaps: int = 3,
    seed: int = 0,
    exclude: Sequence[str] = (),
) -> pd.DataFrame:
    """Up to ``n`` real questions to label (see the module docstring); ``exclude``: questions already in the pool."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    df = log_questions(engine, source=source)
    skip = {normalized(q) for q in exclude}
    df = df[~df["key"].isin(skip)]
    rng = random.Random(seed)
    if strategy == "unanswered":
        out = df[~df["answered"]]
    elif strategy == "thumbs_down":
        out = df[df["score"].eq(1).fillna(False).astype(bool)]
    elif strategy == "random_stratified":
        out = _stratified(df.reset_index(drop=True), n, rng)
    else:
        if topics is None:
            raise ValueError(f"strategy {strategy!r} needs the log's topics: run the topic analysis (topics_plan) "
                             "and pass topic_assignments(...) of its run")
        m = df.merge(topics, on="log_id", how="inner", suffixes=("_x", ""))
        m = m.drop(columns=[c for c in m.columns if c.endswith("_x")])
        if strategy == "topic":
            if topic is None:
                raise ValueError("strategy 'topic' needs a topic id")
            out = m[m["topic"] == int(topic)]
        else:
            ranked = m[m["gap_rank"].notna()].copy()
            ranked = ranked[ranked["gap_rank"] <= int(top_gaps)]
            ranked["_i"] = ranked.groupby("gap_rank").cumcount()
            out = ranked.sort_values(["_i", "gap_rank"]).drop(columns="_i")
    out = out.head(n)
    return out[[c for c in CANDIDATE_COLUMNS if c in out.columns]].reset_index(drop=True)


# ---------------------------------------------------------------- the labelling pool


def item_key_for(source: str, log_id: int) -> str:
    return f"real_{re.sub(r'[^A-Za-z0-9]+', '_', source)}_{int(log_id)}"


def add_to_pool(engine: Engine, name: str, rows: pd.DataFrame, *, suggest_k: int = 5) -> list[str]:
    """Put candidate questions into the labelling pool of dataset ``name`` (already pooled ones are kept as they are).

    Each gets the retriever's top ``suggest_k`` hits as suggestions (never as relevance labels).
    """
    existing = A.reviews(engine, name)
    added: list[str] = []
    search = None  # the picker's retriever, built once, on the first question to suggest chunks for
    for r in rows.itertuples(index=False):
        key = item_key_for(str(r.source), int(r.log_id))
        if key in existing:
            continue
        search = search or picker_retriever(engine)
        hits = search_chunks(engine, str(r.question), k=suggest_k, search=search)
        item = {
            "id": key,
            "question": str(r.question),
            "question_source": "real",
            "log": {"source": str(r.source), "id": int(r.log_id), "answer": r.answer if isinstance(r.answer, str) else None,
                    "url": r.url if isinstance(r.url, str) else None,
                    "score": None if pd.isna(r.score) else int(r.score),
                    "created_at": None if pd.isna(r.created_at) else str(r.created_at),
                    "n_asked": int(getattr(r, "n_asked", 1) or 1)},
        }
        sugg = [{"chunk_id": int(h.chunk_id), "url": str(h.url), "fused_rank": int(h.fused_rank)} for h in hits.itertuples(index=False)]
        A.set_review(engine, name, key, status="pending", item=item, suggestions=sugg)
        added.append(key)
    return added


def pool(engine: Engine, name: str) -> pd.DataFrame:
    """The labelling pool of ``name``: every pooled question with its state (``pending`` / ``labelled`` / ``skipped``)."""
    revs = A.reviews(engine, name)
    try:
        head = get_dataset(engine, name, "golden")
        labelled = {k: r for k, r in zip(head.keys(), head.records, strict=True)}
    except LookupError:
        labelled = {}
    rows = []
    for key, rev in sorted(revs.items()):
        if not rev.item or rev.item.get("question_source") != "real":
            continue
        rec = labelled.get(key)
        state = "labelled" if rec is not None else ("skipped" if rev.status == "rejected" else "pending")
        rows.append({
            "item_key": key, "state": state, "question": rev.item.get("question"),
            "not_in_kb": bool(rec.get("not_in_kb")) if rec else None,
            "relevant_chunk_ids": rec.get("relevant_chunk_ids") if rec else None,
            "n_asked": (rev.item.get("log") or {}).get("n_asked"),
            "bot_url": (rev.item.get("log") or {}).get("url"),
            "notes": rev.notes, "reason": rev.reason,
        })
    return pd.DataFrame(rows, columns=["item_key", "state", "question", "not_in_kb", "relevant_chunk_ids", "n_asked",
                                       "bot_url", "notes", "reason"])


def label(
    engine: Engine,
    name: str,
    key: str,
    *,
    relevant_chunk_ids: Sequence[int] | None = None,
    not_in_kb: bool = False,
    answer: str | None = None,
    notes: str | None = None,
) -> Dataset:
    """Label a pooled question: the relevant chunks a person confirmed, or ``not_in_kb``; a new version of ``name``.

    Exactly one of a non-empty ``relevant_chunk_ids`` and ``not_in_kb`` must be given. Re-labelling replaces
    the item's earlier label.
    """
    ids = [int(i) for i in (relevant_chunk_ids or [])]
    if bool(ids) == bool(not_in_kb):
        raise ValueError("label with the relevant chunk(s) a person confirmed, or as 'not in the knowledge base' — one of the two")
    rev = A.reviews(engine, name).get(key)
    if rev is None or not rev.item:
        raise KeyError(f"{key!r} is not in the labelling pool of {name!r}")
    item = dict(rev.item)
    rec: dict[str, Any] = {
        "id": key,
        "question": item["question"],
        "ground_truth_answer": (answer or "").strip(),
        **dv.relevant_chunk_fields(engine, ids),
        "question_type": "unanswerable" if not_in_kb else "real",
        "question_source": "real",
        "not_in_kb": bool(not_in_kb),
        "log": item.get("log") or {},
    }
    try:
        head: Dataset | None = get_dataset(engine, name, "golden")
    except LookupError:
        head = None
    note = f"{key}: " + ("not in the knowledge base" if not_in_kb else f"relevant {ids}")
    if head is None:
        recs = validate_records([rec], "golden", file=f"{name} (label)")
        new = store(engine, Dataset(name, "golden", recs, content_hash(recs), source="realq: labelled real questions"),
                    action="label", note=note)
    else:
        records = [dict(r) for r in head.records]
        keys = head.keys()
        if key in keys:
            records[keys.index(key)] = rec
        else:
            records.append(rec)
        new = dv.commit(engine, head, records, action="label", note=note)
    values: dict[str, Any] = {"status": "accepted", "reason": None}
    if notes is not None:
        values["notes"] = notes
    A.set_review(engine, name, key, **values)
    return new


def skip(engine: Engine, name: str, key: str, reason: str) -> None:
    """Leave a pooled question out (kept with the reason; e.g. "not a question", "personal data")."""
    if not reason or not reason.strip():
        raise ValueError("skipping a question needs a reason")
    A.set_review(engine, name, key, status="rejected", reason=reason.strip())
