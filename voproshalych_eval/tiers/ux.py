"""Tier UX — the similar-question cache, context preservation and multi-turn consistency.

Two sources:

``source="log"`` — real sessions from the question log (``analytics.question_log.read_log``): each
user's rows in time order, split by the app's one session rule (``analytics.domain.sessions``): after a
row with ``stop_point`` (the user reset the dialog after it), at pauses longer than ``pause_minutes``
(default 30), and where the pause is unknown (a row without a timestamp).

``source="dialogs"`` — a dialog dataset: scripted follow-up dialogs (each turn with its
``expected_url``) and labelled cache pairs (``paraphrase_of`` = ``same`` / ``different``).

Definitions (``d(a, b)`` is the cosine distance ``1 − cos`` of the question embeddings):

``cache_hit_rate``
    Share of questions the production similar-question cache would answer: a question is a hit when
    an EARLIER question within ``d ≤ cache_distance`` (production: 0.6) had a cached answer. Log:
    earlier in time, by any user, answered and rated thumbs-up (score 5) — production caches only
    those. Dialogs: an earlier turn of the same dialog (assumed answered and liked); turn 1 cannot hit.
    With labelled cache pairs also ``cache_precision`` (hits on ``same`` pairs / all hits),
    ``cache_recall`` (``same`` pairs hit / ``same`` pairs) and ``cache_false_hit_rate`` (``different``
    pairs hit / ``different`` pairs — a user would get the answer to another question).

``context_preservation``
    About FOLLOW-UPS — a new question on the topic of the previous turn ("а если я много
    пропустил?"): share of follow-up turns for which the system stays on the conversation's page.
    Dialogs: over turns t ≥ 2 whose ``expected_url`` equals turn t−1's, the share whose top-1
    retrieved page (the bare question, as the stateless production bot sees it) is the expected page;
    ``first_turn_hit_rate`` gives the same hit rate on first turns for comparison. Log (no labels, a
    proxy): over consecutive answered turns in a session whose questions are related
    (``d ≤ followup_distance``, default 0.8), the share answered from the same page as the previous one.

``multi_turn_consistency``
    About RE-ASKS — the same information need asked again in one conversation (a paraphrase): the
    mean cosine similarity of the two ANSWERS' embeddings (−1..1; 1 = the same answer again). Dialogs:
    the ``same`` cache pairs, both turns answered by the internal pipeline (top-1 chunk → generator).
    Log: pairs of turns in a session with ``d ≤ cache_distance`` that both have an answer.
    ``multi_turn_source_agreement`` is the share of those pairs answered from the same page.

The two are not aliases: context preservation looks at *different* questions on one topic and at the
retrieved page; multi-turn consistency at *equivalent* questions and at the answer text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.jsonable import scalar
from voproshalych_eval.metrics.failures import count
from voproshalych_eval.metrics.similarity import cosine_similarity
from voproshalych_eval.plans import ItemResult, Lazy, Plan, spec
from voproshalych_eval.tiers import aggregation, inputs, llm_calls

TIER = "ux"
#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("ux").defaults()


# ----------------------------------------------------------------------------- sessions from the log


def split_sessions(log: pd.DataFrame | Sequence[Mapping[str, Any]], *, pause_minutes: float = 30) -> list[list[dict[str, Any]]]:
    """Sessions as lists of rows in time order, by the one session rule of
    :func:`voproshalych_eval.analytics.domain.sessions` (per user; a new session after a ``stop_point`` row,
    after a pause longer than ``pause_minutes``, or when the pause is unknown). Rows without a user are
    skipped: the UX tier is per user."""
    # heavy: defers the analytics package (snowballstemmer, stop-words)
    from voproshalych_eval.analytics.domain import sessions

    df = log.copy() if isinstance(log, pd.DataFrame) else pd.DataFrame([dict(r) for r in log])
    if df.empty:
        return []
    df = df[df["user_id"].notna()].copy()
    df["created_at"] = pd.to_datetime(df["created_at"], utc=True)
    df["stop_point"] = df["stop_point"].fillna(False).astype(bool)
    df["_session"] = sessions(df, pause_minutes=pause_minutes)
    df = df.sort_values(["_session", "created_at", "id"], na_position="last", kind="stable")
    out = []
    for _, group in df.groupby("_session", sort=True):
        out.append([{k: scalar(v, keep_datetimes=True) for k, v in row.items()} for row in group.drop(columns="_session").to_dict("records")])
    return out


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    return 1.0 - cosine_similarity(a, b)


def build_plan(engine: Engine, params: Mapping[str, Any]) -> Plan:
    """The UX plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    p = spec("ux").resolve(params)

    embedder_name = p["embedder"] or get_settings().embedder
    emb = Lazy(lambda: cached_embedder(embedder_name, engine))
    thr = float(p["cache_distance"])
    if p["source"] not in ("log", "dialogs"):
        raise ValueError("source must be 'log' or 'dialogs'")
    snap = snapshots.for_run(engine, p["snapshot"])
    p["snapshot"] = snap.id
    if p["source"] == "log":
        return UxLogPlan(engine, p, emb, embedder_name, thr, snap)
    return UxDialogPlan(engine, p, emb, embedder_name, thr, snap)


class UxLogPlan(Plan):
    """UX on the bot's question log: one item per session (cache hits, follow-ups, re-asks)."""

    def __init__(self, engine: Engine, p: dict[str, Any], emb: Lazy, embedder_name: str, thr: float,
                 snap: snapshots.Snapshot) -> None:
        # heavy: defers the analytics package (snowballstemmer, stop-words)
        from voproshalych_eval.analytics.question_log import is_empty_question, read_log

        self._is_empty = is_empty_question
        self.emb, self.thr = emb, thr
        log_df = read_log(engine, snapshot=snap)
        sessions = split_sessions(log_df, pause_minutes=float(p["pause_minutes"]))
        rows = [{k: scalar(v, keep_datetimes=True) for k, v in r.items()} for r in log_df.to_dict("records")]
        items = [(f"u{s[0]['user_id']}-{s[0]['id']}", s) for s in sessions]
        if p["limit"]:
            items = items[: int(p["limit"])]
        self.cached = [r for r in rows if r.get("score") == 5 and (r.get("answer") or "").strip() and self._has_text(r)]
        self.qvecs = Lazy(self._question_vectors)
        self.index = Lazy(self._cache_index)
        self.followup = float(p["followup_distance"])
        params_out = {**p, "embedder": embedder_name, "n_items": len(items), "n_log_rows": len(rows),
                      "n_empty_questions": sum(1 for r in rows if not self._has_text(r))}
        super().__init__(
            tier=TIER, items=items,
            concurrency=int(p["concurrency"] or 4), params=params_out,
            models={"embedder": embedder_name}, dataset_name="question_log", offline=False, snapshot_id=snap.id,
        )

    def _has_text(self, r: dict[str, Any]) -> bool:
        # rows without question text (a sticker) stay turns of their session but are never embedded, matched
        # against the cache or paired: their cache_hit is None (not evaluable)
        return not self._is_empty(r.get("question"))

    def _question_vectors(self) -> dict[Any, np.ndarray]:
        # one batched (cached) embedding call for every question the run needs, not one per session
        texts = {r["id"]: r["question"] for _, s in self.items for r in s if self._has_text(r)}
        texts.update({r["id"]: r["question"] for r in self.cached})
        ids = list(texts)
        vecs = np.asarray(self.emb.get().encode_queries([texts[i] for i in ids]), dtype=float) if ids else np.zeros((0, 1))
        return dict(zip(ids, vecs, strict=True))

    def _cache_index(self) -> tuple[list[dict[str, Any]], np.ndarray]:
        cached = self.cached
        vecs = np.vstack([self.qvecs.get()[r["id"]] for r in cached]) if cached else np.zeros((0, 1))
        return cached, vecs

    def work(self, session: list[dict[str, Any]]) -> ItemResult:
        vectors = self.qvecs.get()
        dim = len(next(iter(vectors.values()))) if vectors else 1
        qv = np.vstack([vectors.get(r["id"], np.zeros(dim)) for r in session])
        out = {
            "user_id": session[0]["user_id"],
            "n_turns": len(session),
            "turns": self._turns(session, qv),
            "followup_pairs": self._followup_pairs(session, qv),
            "reask_pairs": self._reask_pairs(session, qv),
        }
        return ItemResult(out)

    def _turns(self, session: list[dict[str, Any]], qv: np.ndarray) -> list[dict[str, Any]]:
        """Each turn and whether an earlier well-rated answer to a near question could have served it (cache)."""
        c_rows, c_vecs = self.index.get()
        turns = []
        for r, v in zip(session, qv, strict=True):
            hit, src, dist = False, None, None
            if len(c_rows) and r.get("created_at") is not None and self._has_text(r):
                d = 1.0 - c_vecs @ v
                earlier = np.array([cr.get("created_at") is not None and cr["created_at"] < r["created_at"] for cr in c_rows])
                if earlier.any():
                    d_e = np.where(earlier, d, np.inf)
                    j = int(np.argmin(d_e))
                    dist = float(d_e[j])
                    hit, src = dist <= self.thr, c_rows[j]["id"]
            turns.append({
                "id": r["id"], "question": r["question"], "answer": r.get("answer"), "url": r.get("url"),
                "score": r.get("score"), "created_at": r.get("created_at"), "stop_point": bool(r.get("stop_point")),
                "cache_hit": hit if r.get("created_at") is not None and self._has_text(r) else None,
                "cache_source_id": src if hit else None, "cache_distance": dist,
            })
        return turns

    def _followup_pairs(self, session: list[dict[str, Any]], qv: np.ndarray) -> list[dict[str, Any]]:
        follow_pairs = []
        for i in range(1, len(session)):
            a, b = session[i - 1], session[i]
            if a.get("url") and b.get("url") and self._has_text(a) and self._has_text(b):
                d = _cosine_distance(qv[i - 1], qv[i])
                if d <= self.followup:
                    follow_pairs.append({"turn": i + 1, "distance": d, "same_page": a["url"] == b["url"]})
        return follow_pairs

    def _reask_pairs(self, session: list[dict[str, Any]], qv: np.ndarray) -> list[dict[str, Any]]:
        reask = []
        answered = [i for i, r in enumerate(session) if (r.get("answer") or "").strip() and self._has_text(r)]
        pairs = [(i, j) for i, j in combinations(answered, 2) if _cosine_distance(qv[i], qv[j]) <= self.thr]
        if pairs:
            idx = sorted({k for ij in pairs for k in ij})
            av = dict(zip(idx, self.emb.get().encode_passages([session[k]["answer"] for k in idx]), strict=True))

            for i, j in pairs:
                reask.append({
                    "turns": [i + 1, j + 1],
                    "answer_similarity": cosine_similarity(av[i], av[j]),
                    "same_page": bool(session[i].get("url")) and session[i].get("url") == session[j].get("url"),
                })
        return reask

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(records, source="log")


class UxDialogPlan(Plan):
    """UX on a dialogs dataset: one item per scripted dialog (top-1 retrieval per turn, follow-ups, re-asks)."""

    def __init__(self, engine: Engine, p: dict[str, Any], emb: Lazy, embedder_name: str, thr: float,
                 snap: snapshots.Snapshot) -> None:
        ds = inputs.load_dataset(engine, p["dataset"], "dialogs")
        pairs = inputs.select_items(ds, limit=p["limit"])
        needs_gen = any(r.get("paraphrase_of") == "same" for _, r in pairs)
        self.generator = generator = llm_calls.make_generator(
            engine, model=p["generator_model"], system_prompt=p["system_prompt"], offline=p["offline"]) if needs_gen else None
        self.engine, self.emb, self.thr, self.snap = engine, emb, thr, snap
        #: top-1 retrieval of each turn (exact vector search of the run's snapshot), built on first use
        self.search = Lazy(lambda: Retriever.open(engine, snapshot=snap, embedder=emb.get()))
        offline = bool(getattr(generator, "offline", False)) if generator else False
        params_out = {**p, "embedder": embedder_name, "offline": True if offline else p["offline"], "n_items": len(pairs)}
        super().__init__(
            tier=TIER, items=pairs,
            concurrency=int(p["concurrency"] or 4), params=params_out,
            models={"embedder": embedder_name, "generator": getattr(generator, "model", None) if generator else None},
            prompts={**llm_calls.generator_prompts(generator), "system_prompt": p["system_prompt"]},
            dataset_id=ds.id, dataset_name=ds.name, dataset_hash=ds.content_hash, snapshot_id=snap.id, offline=offline,
            providers=llm_calls.providers_of(generator),
        )

    def work(self, dialog: dict[str, Any]) -> ItemResult:
        qs = [t["question"] for t in dialog["turns"]]
        qv = np.asarray(self.emb.get().encode_queries(qs), dtype=float)
        hits = self.search.get().by_vectors(qv, 1)
        kb = inputs.chunk_texts(self.engine, [h[0].chunk_id for h in hits if h], snapshot=self.snap)
        turns = []
        tokens = 0
        for i, (t, v, h) in enumerate(zip(dialog["turns"], qv, hits, strict=True)):
            top = h[0] if h else None
            dists = [_cosine_distance(qv[j], v) for j in range(i)]
            turn: dict[str, Any] = {
                "question": t["question"],
                "expected_url": t.get("expected_url"),
                "retrieved_url": top.url if top else None,
                "retrieved_chunk_id": int(top.chunk_id) if top else None,
                "retrieval_hit": (top.url == t["expected_url"]) if top and t.get("expected_url") else None,
                "cache_distance": min(dists) if dists else None,
                "cache_hit": (min(dists) <= self.thr) if dists else None,
            }
            if self.generator is not None and dialog.get("paraphrase_of") == "same":
                ctx = [kb[top.chunk_id]["text"]] if top and top.chunk_id in kb else []
                g = llm_calls.generation_dict(self.generator.generate(t["question"], ctx))
                if g["error"]:
                    raise RuntimeError(f"generation failed: {g['error']}")
                turn["answer"] = g["text"]
                tokens += g["tokens"]
            turns.append(turn)
        out = {
            "paraphrase_of": dialog.get("paraphrase_of"),
            "n_turns": len(turns),
            "turns": turns,
            "followup_pairs": [{"turn": i + 1, "preserved": bool(turns[i]["retrieval_hit"])} for i in range(1, len(turns))
                               if turns[i - 1]["expected_url"] and turns[i - 1]["expected_url"] == turns[i]["expected_url"]],
            "reask_pairs": self._reask_pairs(dialog, turns),
        }
        return ItemResult(out, tokens=tokens)

    def _reask_pairs(self, dialog: dict[str, Any], turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A paraphrase dialog's consecutive answers and how similar they are."""
        reask = []
        if dialog.get("paraphrase_of") == "same" and all(t.get("answer") for t in turns):
            av = self.emb.get().encode_passages([t["answer"] for t in turns])
            for i in range(1, len(turns)):
                reask.append({
                    "turns": [i, i + 1],
                    "answer_similarity": cosine_similarity(av[i - 1], av[i]),
                    "same_page": turns[i - 1]["retrieved_url"] == turns[i]["retrieved_url"],
                })
        return reask

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(records, source="dialogs")


def _rate(values: Sequence[bool | None]) -> dict[str, Any]:
    return aggregation.agg([None if v is None else float(bool(v)) for v in values])


def aggregate(records: list[dict[str, Any]], *, source: str) -> dict[str, Any]:
    res = aggregation.done_results(records)
    turns = [t for r in res for t in r.get("turns", [])]
    cache_vals = [t.get("cache_hit") for t in turns if t.get("cache_hit") is not None]
    m: dict[str, Any] = {
        "cache_hit_rate": _rate(cache_vals),
        "context_preservation": _rate(
            [fp["preserved"] if "preserved" in fp else fp["same_page"] for r in res for fp in r.get("followup_pairs", [])]
        ),
        "multi_turn_consistency": aggregation.agg([rp["answer_similarity"] for r in res for rp in r.get("reask_pairs", [])]),
        "multi_turn_source_agreement": _rate([rp["same_page"] for r in res for rp in r.get("reask_pairs", [])]),
        "n_items": len(records),
        "n_failed_items": aggregation.n_failed_items(records),
        "failure_kinds": count(aggregation.failed_item_kinds(records)),
        "n_turns": len(turns),
        "source": source,
    }
    if source == "log":
        lengths = [r.get("n_turns", 0) for r in res]
        m["n_sessions"] = len(res)
        m["avg_session_length"] = aggregation.agg([float(x) for x in lengths])
        m["single_question_session_rate"] = _rate([x == 1 for x in lengths])
    else:
        m["first_turn_hit_rate"] = _rate([r["turns"][0].get("retrieval_hit") for r in res if r.get("turns") and r["turns"][0].get("retrieval_hit") is not None])
        labelled = [r for r in res if r.get("paraphrase_of") in ("same", "different") and len(r.get("turns", [])) >= 2]
        if labelled:
            hits = [(r["paraphrase_of"] == "same", bool(r["turns"][1].get("cache_hit"))) for r in labelled]
            n_hit = sum(1 for _, h in hits if h)
            n_same = sum(1 for s, _ in hits if s)
            n_diff = len(hits) - n_same
            m["cache_precision"] = (sum(1 for s, h in hits if s and h) / n_hit) if n_hit else None
            m["cache_recall"] = (sum(1 for s, h in hits if s and h) / n_same) if n_same else None
            m["cache_false_hit_rate"] = (sum(1 for s, h in hits if not s and h) / n_diff) if n_diff else None
            m["n_cache_pairs"] = len(hits)
    return m
