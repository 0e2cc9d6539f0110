"""Coverage gaps as things a team works on (the only SQL on ``eval.gaps``, ``eval.gap_events``,
``eval.gap_numbers``, ``eval.gap_diagnoses`` and ``eval.gap_drafts``).

A gap is a topic of a real-users analysis (``kind = 'topic'``) that the topic ranking put among the top
coverage gaps. Its **identity survives re-runs** the way topic names do (:mod:`.topic_memory`): the gap
keeps the centroid of the topic it came from (unit mean of its questions' unit vectors, embedding model
recorded), and on every later analysis the topics are matched to the stored centroids with
:meth:`TopicMemory.match <voproshalych_eval.analytics.topic_memory.TopicMemory.match>` (cosine at least
:data:`MATCH_THRESHOLD`, one topic per gap, most similar pairs first).

Per analysis run a gap gets one row of numbers (:func:`record_numbers`): its questions (log ids), how
many, the raw and effective answered rates (the answer classes of
:func:`~voproshalych_eval.analytics.answers.classify_answers` with the run's rules), thumbs-down count and
share, gap rank and score. Status: ``open``, ``in_progress``, ``addressed``, ``dismissed`` (a reason is
required), with a note and an owner; every change is kept (``eval.gap_events``).

Re-check (:func:`recheck`): for an ``addressed`` gap, the questions of the latest analysis asked before the
change (``status_changed_at``) versus after it: effective answered rate of each side and the test of
the difference (:func:`voproshalych_eval.metrics.statistics.two_sample_permutation_test`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval.analytics.answers import AnswerRules, classify_answers
from voproshalych_eval.analytics.pipeline import filters_from
from voproshalych_eval.analytics.question_log import SCORE_DOWN, SCORE_UP, embed_log, read_log, text_rows
from voproshalych_eval.analytics.text_ru import normalize
from voproshalych_eval.analytics.topic_memory import StoredName, TopicMemory
from voproshalych_eval.datasets.files import (
    FieldError,
    RecordFileError,
    as_int,
    as_text,
    check_columns,
    read_file,
)
from voproshalych_eval.datasets.store import get_dataset, list_datasets
from voproshalych_eval.jsonable import jsonable
from voproshalych_eval.metrics.statistics import two_sample_permutation_test

STATUSES = ("open", "in_progress", "addressed", "dismissed")
STATUS_NAMES = {"open": ("открыт", "open"), "in_progress": ("в работе", "in progress"),
                "addressed": ("закрыт статьёй", "addressed"), "dismissed": ("отклонён", "dismissed")}
#: cosine similarity at which a new topic is the same gap as a stored centroid (a little looser than names')
MATCH_THRESHOLD = 0.85
#: new gaps come from the top of a run's gap ranking
TOP_N_NEW = 10


@dataclass
class Gap:
    id: int
    kind: str
    name: str
    model: str | None
    status: str
    note: str | None
    owner: str | None
    status_changed_at: datetime
    created_at: datetime
    #: the numbers of the latest analysis that found it (``{}`` before any)
    latest: dict[str, Any] = field(default_factory=dict)
    latest_run_id: int | None = None
    n_runs: int = 0
    category: str | None = None
    category_share: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["status_changed_at"] = self.status_changed_at.isoformat()
        out["created_at"] = self.created_at.isoformat()
        return out

    def row(self) -> dict[str, Any]:
        """The list's columns: id, name, n_questions, raw and effective answered rate, category, status."""
        m = self.latest
        return {"id": self.id, "name": self.name, "n_questions": m.get("n_questions"),
                "answered_rate": m.get("answered_rate"), "effective_answered_rate": m.get("effective_answered_rate"),
                "thumbs_down": m.get("thumbs_down"), "gap_rank": m.get("gap_rank"), "category": self.category,
                "category_share": self.category_share, "status": self.status, "owner": self.owner, "note": self.note,
                "n_runs": self.n_runs, "latest_run_id": self.latest_run_id}


_GAP_SQL = (
    "SELECT g.id, g.kind, g.name, g.model, g.status, g.note, g.owner, g.status_changed_at, g.created_at, "
    "n.numbers AS latest, n.run_id AS latest_run_id, (SELECT count(*) FROM eval.gap_numbers x WHERE x.gap_id = g.id) "
    "AS n_runs, d.result->>'category' AS category, (d.result->>'category_share')::float AS category_share "
    "FROM eval.gaps g "
    "LEFT JOIN LATERAL (SELECT numbers, run_id FROM eval.gap_numbers WHERE gap_id = g.id ORDER BY run_id DESC LIMIT 1) n "
    "ON true LEFT JOIN LATERAL (SELECT result FROM eval.gap_diagnoses WHERE gap_id = g.id ORDER BY id DESC LIMIT 1) d "
    "ON true"
)


def _gap(row: Any) -> Gap:
    d = dict(row._mapping)
    d["latest"] = d["latest"] or {}
    return Gap(**d)


def list_gaps(engine: Engine, *, status: Sequence[str] | None = None) -> list[Gap]:
    """Every gap (optionally of some statuses), the largest need first: open before the rest, then by the
    latest gap rank."""
    with engine.connect() as conn:
        rows = conn.execute(text(_GAP_SQL + " ORDER BY g.id")).all()
    gaps = [_gap(r) for r in rows]
    if status:
        gaps = [g for g in gaps if g.status in set(status)]
    order = {s: i for i, s in enumerate(("in_progress", "open", "addressed", "dismissed"))}
    return sorted(gaps, key=lambda g: (order.get(g.status, 9), g.latest.get("gap_rank") or 999, g.id))


def get_gap(engine: Engine, gap_id: int) -> Gap:
    """One gap; :class:`LookupError` naming the id when there is none."""
    with engine.connect() as conn:
        row = conn.execute(text(_GAP_SQL + " WHERE g.id = :i"), {"i": int(gap_id)}).first()
    if row is None:
        raise LookupError(f"There is no gap #{gap_id} (voproshalych-eval gaps list).")
    return _gap(row)


def history(engine: Engine, gap_id: int) -> list[dict[str, Any]]:
    """The gap's numbers per analysis run, oldest first (``run_id``, ``run_at``, ``topic``, ``name``,
    ``similarity`` and the numbers)."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT run_id, run_at, snapshot_id, topic, name, similarity, numbers FROM "
                                 "eval.gap_numbers WHERE gap_id = :g ORDER BY run_id"), {"g": int(gap_id)}).all()
    return [{"run_id": r.run_id, "run_at": r.run_at, "snapshot_id": r.snapshot_id, "topic": r.topic, "name": r.name,
             "similarity": r.similarity, **(r.numbers or {})} for r in rows]


def events(engine: Engine, gap_id: int) -> list[dict[str, Any]]:
    """The gap's status changes, oldest first."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT status, note, owner, at FROM eval.gap_events WHERE gap_id = :g ORDER BY id"),
                            {"g": int(gap_id)}).all()
    return [dict(r._mapping) for r in rows]


def set_status(engine: Engine, gap_id: int, status: str, *, note: str | None = None, owner: str | None = None,
               at: datetime | None = None) -> Gap:
    """Change a gap's status (``dismissed`` needs a reason in ``note``); the change is kept in its events.

    ``at``: when the change took effect (an article published earlier; default now) — the re-check of an
    addressed gap compares the questions asked before it with those asked after it."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    note = " ".join(str(note).split()) if note is not None else None
    if status == "dismissed" and not note:
        raise ValueError("dismissing a gap needs a reason: --note \"...\"")
    get_gap(engine, gap_id)
    with engine.begin() as conn:
        conn.execute(text("UPDATE eval.gaps SET status = :s, note = coalesce(:n, note), owner = coalesce(:o, owner), "
                          "status_changed_at = coalesce(:at, now()) WHERE id = :i"),
                     {"s": status, "n": note, "o": owner, "i": int(gap_id), "at": at})
        conn.execute(text("INSERT INTO eval.gap_events(gap_id, status, note, owner, at) VALUES (:g, :s, :n, :o, "
                          "coalesce(:at, now()))"), {"g": int(gap_id), "s": status, "n": note, "o": owner, "at": at})
    return get_gap(engine, gap_id)


def set_owner(engine: Engine, gap_id: int, owner: str | None, *, note: str | None = None) -> Gap:
    """Set a gap's owner (and note) without changing its status."""
    get_gap(engine, gap_id)
    with engine.begin() as conn:
        conn.execute(text("UPDATE eval.gaps SET owner = :o, note = coalesce(:n, note) WHERE id = :i"),
                     {"o": owner, "n": note, "i": int(gap_id)})
    return get_gap(engine, gap_id)


def synced_run_ids(engine: Engine) -> set[int]:
    """Analysis runs whose numbers are recorded (on any gap)."""
    with engine.connect() as conn:
        return {int(r[0]) for r in conn.execute(text("SELECT DISTINCT run_id FROM eval.gap_numbers")).all()}


def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in np.asarray(v).ravel()) + "]"


def _topic_gaps(engine: Engine, model: str) -> list[StoredName]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, centroid::text AS c, name FROM eval.gaps WHERE kind = 'topic' AND model = :m "
                                 "AND centroid IS NOT NULL ORDER BY id"), {"m": model}).all()
    return [StoredName(int(r.id), model, np.asarray([float(x) for x in r.c.strip("[]").split(",")]), r.name, str(r.id))
            for r in rows]


# ------------------------------------------------------------------------------------------------ sync


@dataclass
class RunTopics:
    """What :func:`record_numbers` needs of one real-users run (read by the caller from the run registry)."""

    run_id: int
    run_at: datetime | None
    snapshot_id: int | None
    params: dict[str, Any]
    #: the ``topics`` step's result: ``gaps`` (ranked), ``topics`` and ``assignments`` (log_id, topic)
    topics_step: dict[str, Any]


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


def _topic_centroids(X: np.ndarray, labels: np.ndarray, topics: Sequence[int]
                     ) -> tuple[list[int], np.ndarray, list[int]]:
    """Each topic's centroid (unit mean of its rows' unit vectors in ``X``). A topic with no rows (its log rows
    are gone from the log, filtered out or have no text) or a non-finite/zero mean has no centroid: it is left
    out and listed in the third value, never given a NaN centroid (pgvector refuses NaN, and it matches nothing).
    Returns ``(kept_topics, centroids (len(kept) x dim), skipped_topics)``."""
    kept: list[int] = []
    rows: list[np.ndarray] = []
    skipped: list[int] = []
    for t in topics:
        mask = labels == t
        mean = X[mask].mean(axis=0) if mask.any() else None
        if mean is None or not np.all(np.isfinite(mean)) or not np.linalg.norm(mean) > 0:
            skipped.append(int(t))
            continue
        kept.append(int(t))
        rows.append(_unit(mean))
    dim = X.shape[1] if X.ndim == 2 else 0
    return kept, (np.vstack(rows) if rows else np.zeros((0, dim))), skipped


def _log_for_run(engine: Engine, run: RunTopics) -> tuple[pd.DataFrame, np.ndarray]:
    """The run's filtered log (every row) and each row's effective-answered flag (the run's answer rules)."""
    p = run.params
    df = read_log(engine, source=p.get("source"), filters=filters_from(p.get("filters")), snapshot=run.snapshot_id)
    rules = AnswerRules.from_dict(dict(p.get("answer_rules") or {}))
    classes = classify_answers(df["answer"].tolist(), df["url"].tolist(), rules=rules)
    return df, classes.effective_answered


def numbers_for(df: pd.DataFrame, effective: np.ndarray, log_ids: Sequence[int]) -> dict[str, Any]:
    """A gap's numbers over the log rows ``log_ids`` of ``df`` (``effective`` aligned with ``df``)."""
    mask = df["id"].isin([int(i) for i in log_ids]).to_numpy(bool)
    n = int(mask.sum())
    score = df.loc[mask, "score"]
    up, down = int((score == SCORE_UP).sum()), int((score == SCORE_DOWN).sum())
    return {"n_questions": n,
            "answered_rate": float(df.loc[mask, "answered"].mean()) if n else None,
            "effective_answered_rate": float(effective[mask].mean()) if n else None,
            "thumbs_up": up, "thumbs_down": down, "down_share": down / (up + down) if up + down else None}


def record_numbers(engine: Engine, run: RunTopics, *, top_n: int = TOP_N_NEW,
                   threshold: float = MATCH_THRESHOLD) -> dict[str, Any]:
    """Match the run's topics to the stored gaps, create gaps for the unmatched top-``top_n`` ranked gap topics,
    and record every matched gap's numbers for this run. Returns ``{"matched", "created", "run_id"}``."""
    step = run.topics_step or {}
    assign = step.get("assignments") or {}
    ranked = [g for g in step.get("gaps") or [] if not g.get("off_topic")]
    has_picked = bool(_picked_gaps(engine))
    if (not assign.get("log_id") or not ranked) and not has_picked:
        return {"run_id": run.run_id, "matched": [], "created": [], "picked": [], "note": "no ranked gaps in this run"}
    model = str(run.params.get("embedder") or "")
    df, effective = _log_for_run(engine, run)
    picked = record_picked(engine, run, df, effective)
    if not assign.get("log_id") or not ranked:
        return {"run_id": run.run_id, "matched": [], "created": [], "picked": picked, "note": "no ranked gaps in this run"}
    tdf, _ = text_rows(df)
    log_ids = np.asarray(assign["log_id"], dtype=np.int64)
    topic_of = dict(zip(log_ids.tolist(), [int(t) for t in assign["topic"]], strict=True))
    tdf = tdf[tdf["id"].isin(log_ids)].reset_index(drop=True)
    emb = embed_log(engine, tdf, embedder_name=model, snapshot=run.snapshot_id)
    X = _unit(np.asarray(emb.vectors, dtype=np.float64))
    labels = np.asarray([topic_of[int(i)] for i in tdf["id"]], dtype=np.int64)
    by_topic = {int(g["topic"]): g for g in ranked}
    topics, cents, skipped = _topic_centroids(X, labels, sorted(by_topic))
    if not topics:
        return {"run_id": run.run_id, "matched": [], "created": [], "picked": picked, "skipped_topics": skipped,
                "note": "no ranked gap topic has embedded rows in this run's log"}
    memory = TopicMemory(_topic_gaps(engine, model), threshold=threshold)
    matched = {topics[i]: n for i, n in memory.match(cents).items()}
    created: list[int] = []
    with engine.begin() as conn:
        for t in sorted(topics, key=lambda t: int(by_topic[t]["gap_rank"])):
            if t in matched or int(by_topic[t]["gap_rank"]) > top_n:
                continue
            gid = int(conn.execute(text("INSERT INTO eval.gaps(kind, name, model, centroid) VALUES ('topic', :n, :m, "
                                        "CAST(:c AS vector)) RETURNING id"),
                                   {"n": str(by_topic[t]["name"]), "m": model, "c": _vec(cents[topics.index(t)])}).scalar_one())
            conn.execute(text("INSERT INTO eval.gap_events(gap_id, status, note) VALUES (:g, 'open', :n)"),
                         {"g": gid, "n": f"found by real-users run #{run.run_id}"})
            matched[t] = StoredName(gid, model, cents[topics.index(t)], str(by_topic[t]["name"]), str(gid))
            created.append(gid)
        for t, stored in matched.items():
            ids = [int(i) for i in log_ids[np.asarray([topic_of[int(i)] == t for i in log_ids])]]
            g = by_topic[t]
            nums = numbers_for(df, effective, ids)
            nums.update({"gap_rank": int(g["gap_rank"]), "gap_score": g.get("gap_score"),
                         "nearest_similarity": g.get("nearest_similarity"), "source": run.params.get("source"),
                         "examples": list(g.get("examples") or [])[:5]})
            id_set = set(ids)
            eff_ids = [int(i) for i, e in zip(df["id"], effective, strict=True) if e and int(i) in id_set]
            sim = float(_unit(cents[topics.index(t)]) @ _unit(stored.centroid))
            conn.execute(
                text("INSERT INTO eval.gap_numbers(gap_id, run_id, snapshot_id, topic, name, similarity, numbers, "
                     "log_ids, effective, run_at) VALUES (:g, :r, :s, :t, :n, :sim, CAST(:num AS jsonb), :ids, :eff, :at) "
                     "ON CONFLICT (gap_id, run_id) DO NOTHING"),
                {"g": stored.id, "r": run.run_id, "s": run.snapshot_id, "t": int(t), "n": str(g["name"]), "sim": sim,
                 "num": json.dumps(_plain(nums), ensure_ascii=False), "ids": ids, "eff": eff_ids, "at": run.run_at},
            )
    return {"run_id": run.run_id, "matched": sorted(int(s.id) for s in matched.values()), "created": created,
            "picked": picked, "skipped_topics": skipped}


# ------------------------------------------------------------------------------------------------ hand-picked gaps


def _picked_gaps(engine: Engine) -> list[tuple[int, list[int], list[str]]]:
    """``(id, log_ids, normalised question texts)`` of every hand-picked gap."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, log_ids, questions FROM eval.gaps WHERE kind = 'questions' ORDER BY id")).all()
    return [(int(r.id), [int(i) for i in r.log_ids or []], list(r.questions or [])) for r in rows]


def _picked_mask(df: pd.DataFrame, log_ids: Sequence[int], texts: Sequence[str]) -> np.ndarray:
    """Rows of ``df`` that are a hand-picked gap's questions: its log rows, and any row asking one of its
    questions again (the same normalised text: a later import's new rows)."""
    norm = df["question"].map(lambda q: normalize(q) if isinstance(q, str) else "")
    return (df["id"].isin([int(i) for i in log_ids]) | norm.isin(set(texts))).to_numpy(bool)


def _insert_numbers(conn: Any, gap_id: int, run: RunTopics, df: pd.DataFrame, effective: np.ndarray,
                    ids: list[int], extra: Mapping[str, Any]) -> None:
    nums = numbers_for(df, effective, ids)
    nums.update({"source": run.params.get("source"), **extra})
    id_set = set(ids)
    eff_ids = [int(i) for i, e in zip(df["id"], effective, strict=True) if e and int(i) in id_set]
    conn.execute(
        text("INSERT INTO eval.gap_numbers(gap_id, run_id, snapshot_id, topic, name, similarity, numbers, log_ids, "
             "effective, run_at) VALUES (:g, :r, :s, NULL, NULL, NULL, CAST(:num AS jsonb), :ids, :eff, :at) "
             "ON CONFLICT (gap_id, run_id) DO NOTHING"),
        {"g": gap_id, "r": run.run_id, "s": run.snapshot_id, "num": json.dumps(_plain(nums), ensure_ascii=False),
         "ids": ids, "eff": eff_ids, "at": run.run_at})


def record_picked(engine: Engine, run: RunTopics, df: pd.DataFrame, effective: np.ndarray) -> list[int]:
    """Record this run's numbers of every hand-picked gap whose questions are in its log; returns their ids."""
    done = []
    with engine.begin() as conn:
        for gid, log_ids, texts in _picked_gaps(engine):
            mask = _picked_mask(df, log_ids, texts)
            if mask.any():
                _insert_numbers(conn, gid, run, df, effective, [int(i) for i in df.loc[mask, "id"]],
                                {"gap_rank": None, "picked": True})
                done.append(gid)
    return done


def resolve_questions(df: pd.DataFrame, refs: Sequence[tuple[str, int | str]], *, where_log: str) -> list[int]:
    """Log ids of hand-picked questions: each ref is ``(where it came from, a log id or a question text)``; a
    text picks every log row asking it (normalised: case, ``ё``, spaces). A ref found nowhere is an error naming
    where it came from."""
    if not refs:
        raise ValueError("a gap needs questions: give log ids or question texts")
    ids: set[int] = set()
    known = set(int(i) for i in df["id"])
    norm = df["question"].map(lambda q: normalize(q) if isinstance(q, str) else "")
    for where, ref in refs:
        if isinstance(ref, int):
            if ref not in known:
                raise LookupError(f"{where}: log id {ref} is not in {where_log}")
            ids.add(ref)
            continue
        t = normalize(ref)
        if not t:
            raise ValueError(f"{where}: an empty question")
        hit = df.loc[(norm == t).to_numpy(bool), "id"]
        if hit.empty:
            raise LookupError(f"{where}: the question {ref[:80]!r} is not in {where_log} (the text must be a logged "
                              "question; case, ё and spaces do not matter)")
        ids.update(int(i) for i in hit)
    return sorted(ids)


#: the columns of a file of hand-picked questions (one of them per record)
PICK_COLUMNS = ("log_id", "question")


def refs_from_args(values: Sequence[str]) -> list[tuple[str, int | str]]:
    """``--questions`` values: an integer is a log id, anything else a question text."""
    out: list[tuple[str, int | str]] = []
    for i, v in enumerate(values, start=1):
        v = str(v)
        out.append((f"--questions value {i}", int(v.strip()) if v.strip().isdigit() else v))
    return out


def refs_from_file(path: str, *, data: bytes | None = None, name: str | None = None) -> list[tuple[str, int | str]]:
    """A CSV / JSON / JSONL file of hand-picked questions (read by :func:`voproshalych_eval.datasets.files.read_file`):
    each record has a ``log_id`` or a ``question`` (exactly one); a bad value names the file, row and field."""
    f = read_file(path, data=data, name=name)
    check_columns(f.file, f.columns, PICK_COLUMNS)
    out: list[tuple[str, int | str]] = []
    for rec, row in zip(f.records, f.rows, strict=True):
        try:
            log_id = as_int(rec.get("log_id"), "log_id", lo=1)
            q = as_text(rec.get("question"), "question")
            q = q if q and q.strip() else None
            if (log_id is None) == (q is None):
                raise FieldError("log_id" if log_id is None else "question",
                                 "give either a log_id or a question in each record" if log_id is None else
                                 "give either a log_id or a question, not both")
        except FieldError as exc:
            raise f.error(row, exc) from None
        out.append((f"{f.file}, row {row}", log_id if log_id is not None else str(q)))
    if not out:
        raise RecordFileError(f.file, None, None, "no questions in the file")
    return out


def create_picked(engine: Engine, run: RunTopics, refs: Sequence[tuple[str, int | str]], *,
                  name: str | None = None, owner: str | None = None) -> Gap:
    """A gap of hand-picked real questions (log ids or texts, :func:`resolve_questions`) of the run's log, with
    this run's numbers; later runs count its questions and any new row asking one of them again."""
    df, effective = _log_for_run(engine, run)
    ids = resolve_questions(df, refs, where_log=f"the question log of real-users run #{run.run_id}")
    rows = df[df["id"].isin(ids)]
    texts = sorted({normalize(q) for q in rows["question"] if isinstance(q, str) and q.strip()})
    first = str(rows["question"].iloc[0]).strip()
    name = " ".join(str(name).split()) if name and str(name).strip() else (
        (first[:60] + ("…" if len(first) > 60 else "")) + (f" (+{len(texts) - 1})" if len(texts) > 1 else ""))
    with engine.begin() as conn:
        gid = int(conn.execute(text("INSERT INTO eval.gaps(kind, name, model, log_ids, questions, owner) VALUES "
                                    "('questions', :n, :m, :ids, :q, :o) RETURNING id"),
                               {"n": name, "m": run.params.get("embedder"), "ids": ids, "q": texts, "o": owner}
                               ).scalar_one())
        conn.execute(text("INSERT INTO eval.gap_events(gap_id, status, note, owner) VALUES (:g, 'open', :n, :o)"),
                     {"g": gid, "n": f"hand-picked: {len(ids)} log row(s), {len(texts)} question(s)", "o": owner})
        mask = _picked_mask(df, ids, texts)
        _insert_numbers(conn, gid, run, df, effective, [int(i) for i in df.loc[mask, "id"]],
                        {"gap_rank": None, "picked": True})
    return get_gap(engine, gid)


def _plain(d: Mapping[str, Any]) -> dict[str, Any]:
    return jsonable(dict(d))


# ------------------------------------------------------------------------------------------------ questions


def realq_labels(engine: Engine) -> dict[int, dict[str, Any]]:
    """Log id -> the labels a person gave that real question in a realq dataset (head versions):
    ``relevant_urls``, ``relevant_chunk_ids``, ``not_in_kb``, ``dataset``."""
    out: dict[int, dict[str, Any]] = {}
    for d in sorted(list_datasets(engine, "golden", heads_only=True), key=lambda r: r["name"]):
        ds = get_dataset(engine, int(d["id"]))
        for rec in ds.records:
            log = rec.get("log") or {}
            if log.get("id") is None or int(log["id"]) in out:
                continue
            out[int(log["id"])] = {"relevant_urls": [str(u) for u in rec.get("relevant_urls") or []],
                                   "relevant_chunk_ids": [int(c) for c in rec.get("relevant_chunk_ids") or []],
                                   "not_in_kb": bool(rec.get("not_in_kb")), "dataset": ds.name}
    return out


def gap_questions(engine: Engine, gap_id: int, *, run_id: int | None = None) -> list[dict[str, Any]]:
    """The questions of a gap in its latest analysis (or ``run_id``): ``log_id``, ``question``, ``answer``,
    ``url`` (the page the bot answered from), ``score``, ``created_at``, ``effective`` (a real answer),
    and the realq labels when a person labelled it (``relevant_urls``, ``relevant_chunk_ids``, ``not_in_kb``)."""
    sql = "SELECT run_id, snapshot_id, numbers, log_ids, effective FROM eval.gap_numbers WHERE gap_id = :g"
    params: dict[str, Any] = {"g": int(gap_id)}
    if run_id is not None:
        sql += " AND run_id = :r"
        params["r"] = int(run_id)
    with engine.connect() as conn:
        row = conn.execute(text(sql + " ORDER BY run_id DESC LIMIT 1"), params).first()
    if row is None:
        get_gap(engine, gap_id)
        raise LookupError(f"Gap #{gap_id} has no analysed questions yet (run the real-users analysis).")
    df = read_log(engine, source=(row.numbers or {}).get("source"), snapshot=row.snapshot_id)
    df = df[df["id"].isin(list(row.log_ids))]
    eff = set(row.effective or [])
    labels = realq_labels(engine)
    out = []
    for r in df.itertuples(index=False):
        lab = labels.get(int(r.id)) or {}
        out.append({"log_id": int(r.id), "question": str(r.question), "answer": r.answer, "url": r.url,
                    "score": None if pd.isna(r.score) else int(r.score), "created_at": r.created_at,
                    "effective": int(r.id) in eff, "relevant_urls": lab.get("relevant_urls") or [],
                    "relevant_chunk_ids": lab.get("relevant_chunk_ids") or [], "not_in_kb": lab.get("not_in_kb")})
    return out


# ------------------------------------------------------------------------------------------------ re-check


def recheck(engine: Engine, gap_id: int, *, n_resamples: int = 2000) -> dict[str, Any] | None:
    """For an ``addressed`` gap: its questions in the latest analysis asked before the change vs after it —
    effective answered rate of each side and the test of the difference (None for other statuses)."""
    gap = get_gap(engine, gap_id)
    if gap.status != "addressed":
        return None
    qs = gap_questions(engine, gap_id)
    at = pd.Timestamp(gap.status_changed_at)
    before = [1.0 if q["effective"] else 0.0 for q in qs if q["created_at"] is not None and q["created_at"] < at]
    after = [1.0 if q["effective"] else 0.0 for q in qs if q["created_at"] is not None and q["created_at"] >= at]
    out: dict[str, Any] = {"addressed_at": gap.status_changed_at.isoformat(), "run_id": gap.latest_run_id,
                           "n_before": len(before), "n_after": len(after),
                           "effective_before": float(np.mean(before)) if before else None,
                           "effective_after": float(np.mean(after)) if after else None, "test": None}
    if before and after:
        out["test"] = two_sample_permutation_test(before, after, n_resamples=n_resamples).to_dict()
        out["verdict"] = ("better" if out["test"]["significant"] and out["test"]["mean_diff"] > 0 else
                          "worse" if out["test"]["significant"] else "no significant change")
    else:
        out["verdict"] = "no questions after the change yet" if before else "no questions before the change"
    return out


# ------------------------------------------------------------------------------------------------ diagnoses, drafts


def save_diagnosis(engine: Engine, gap_id: int, result: Mapping[str, Any]) -> int:
    """Keep a diagnosis of the gap (``result`` with ``method``, ``category``, ``counts``, ``items``)."""
    with engine.begin() as conn:
        return int(conn.execute(text("INSERT INTO eval.gap_diagnoses(gap_id, method, result) VALUES (:g, :m, "
                                     "CAST(:r AS jsonb)) RETURNING id"),
                                {"g": int(gap_id), "m": str(result.get("method")),
                                 "r": json.dumps(_plain(result), ensure_ascii=False)}).scalar_one())


def latest_diagnosis(engine: Engine, gap_id: int) -> dict[str, Any] | None:
    with engine.connect() as conn:
        row = conn.execute(text("SELECT id, result, created_at FROM eval.gap_diagnoses WHERE gap_id = :g "
                                "ORDER BY id DESC LIMIT 1"), {"g": int(gap_id)}).first()
    return {"id": row.id, "created_at": row.created_at, **row.result} if row is not None else None


def save_draft(engine: Engine, gap_id: int, body: str, *, source: str, model: str | None = None,
               checks: Mapping[str, Any] | None = None) -> int:
    """Keep a new version of the gap's draft (``source``: ``llm``, ``template``, ``edit``, ``upload``);
    returns its version number."""
    if not str(body).strip():
        raise ValueError("an empty draft is not kept")
    get_gap(engine, gap_id)
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(727290, :g)"), {"g": int(gap_id)})
        version = int(conn.execute(text("SELECT coalesce(max(version), 0) + 1 FROM eval.gap_drafts WHERE gap_id = :g"),
                                   {"g": int(gap_id)}).scalar_one())
        conn.execute(text("INSERT INTO eval.gap_drafts(gap_id, version, source, model, body, checks) VALUES "
                          "(:g, :v, :s, :m, :b, CAST(:c AS jsonb))"),
                     {"g": int(gap_id), "v": version, "s": source, "m": model, "b": str(body),
                      "c": json.dumps(_plain(checks or {}), ensure_ascii=False)})
    return version


def drafts(engine: Engine, gap_id: int) -> list[dict[str, Any]]:
    """Every version of the gap's draft, newest first."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT version, source, model, body, checks, created_at FROM eval.gap_drafts "
                                 "WHERE gap_id = :g ORDER BY version DESC"), {"g": int(gap_id)}).all()
    return [dict(r._mapping) for r in rows]
