"""Why is a gap a gap? Each question of a gap (or a sample of at most N, stated) gets one category:

* ``out_of_scope`` — not a question for this bot (the rule classifier :func:`text_ru.classify` says greeting,
  thanks, off-topic or jailbreak);
* ``missing`` — nothing in the knowledge base answers it;
* ``retrieval_miss`` — a chunk answers it but production retrieval (top-1 by cosine, the stored vectors'
  model) does not return it: the fix is chunking, the embedder or the wording, not a new article; the
  answering chunk and its rank are shown;
* ``declined_or_wrong`` — the top-1 chunk answers it but the bot declined (the log's answer class) or was
  thumbed down;
* ``answered`` — the top-1 chunk answers it and the bot gave a real, not thumbed-down answer.

Where an answer could be is searched in the top :data:`CANDIDATES` chunks of vector + full-text search
(reciprocal rank fusion, :class:`voproshalych_eval.db.retriever.Retriever` ``hybrid``). Which candidate answers:

* with an LLM configured, the judge reads the question and the candidates (prompt ``gap_answer_judge``)
  and names the answering chunk id, or none;
* offline, a labelled heuristic (``method = "heuristic"``): ``support(q, c) = 0.5·coverage + 0.5·cos`` where
  ``coverage`` is the share of the question's content lemmas found in the chunk and ``cos`` the cosine
  similarity of their embeddings; the best candidate answers when ``support >= threshold`` (0.5).

The gap's category is the most frequent one among its sampled questions, with its share, and the fix it
calls for (:data:`FIXES`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.analytics import gaps, text_ru
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.llm.client import default_client
from voproshalych_eval.llm.prompts import render
from voproshalych_eval.tiers import tier1
from voproshalych_eval.tiers.inputs import chunk_texts

CATEGORIES = ("missing", "retrieval_miss", "declined_or_wrong", "out_of_scope", "answered")
CATEGORY_NAMES = {
    "missing": ("нет в базе знаний", "missing from the knowledge base"),
    "retrieval_miss": ("ответ есть, но поиск не находит его первым", "answer exists but is not retrieved top-1"),
    "declined_or_wrong": ("ответ найден, но бот отказал или ответил плохо", "retrieved, but the bot declined or answered badly"),
    "out_of_scope": ("не вопрос для бота", "out of scope"),
    "answered": ("бот отвечает", "answered"),
}
FIXES = {
    "missing": ("написать новую статью (черновик ниже)", "write a new article (draft below)"),
    "retrieval_miss": ("исправить нарезку, эмбеддер или формулировки, а не писать статью",
                       "fix chunking, the embedder or the wording — not a new article"),
    "declined_or_wrong": ("проверить генерацию и фильтр показа ответа", "check generation and the show/no-show filter"),
    "out_of_scope": ("закрыть пробел с причиной «не по теме»", "dismiss the gap as out of scope"),
    "answered": ("пробела нет: бот отвечает", "no gap: the bot answers"),
}
CANDIDATES = 50
THRESHOLD = 0.5
DEFAULT_SAMPLE = 30
OUT_OF_SCOPE = ("greeting", "thanks", "off_topic", "jailbreak")
SCORE_DOWN = 1

Progress = Callable[[str], None]


def support(q_terms: Sequence[str], c_terms: set[str], cos: float) -> float:
    """``0.5 · |terms(q) ∩ terms(c)| / |terms(q)| + 0.5 · cos(q, c)`` (0 coverage for a question without terms)."""
    coverage = (sum(1 for t in set(q_terms) if t in c_terms) / len(set(q_terms))) if q_terms else 0.0
    return 0.5 * coverage + 0.5 * float(cos)


def _judge(client: Any, model: str, question: str, cands: list[dict[str, Any]], lang: str) -> tuple[int | None, str]:
    listing = "\n\n".join(f"[{c['id']}] {c['text'][:600]}" for c in cands)
    prompt = render("gap_answer_judge", lang=lang, question=question, chunks=listing)
    schema = {"type": "object", "properties": {"chunk_id": {"type": ["integer", "null"]}, "reason": {"type": "string"}},
              "required": ["chunk_id"]}
    resp = client.complete([{"role": "user", "content": prompt}], model=model, max_tokens=200, schema=schema,
                           purpose="gap_answer_judge")
    parsed = resp.parsed or {}
    cid = parsed.get("chunk_id")
    ids = {c["id"] for c in cands}
    return (int(cid) if cid is not None and int(cid) in ids else None), str(parsed.get("reason") or "")


def diagnose(
    engine: Engine,
    gap_id: int,
    *,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
    offline: bool | None = None,
    threshold: float = THRESHOLD,
    progress: Progress | None = None,
    questions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Diagnose a gap's questions (a seeded sample of at most ``sample``); returns ``method`` (``judge`` or
    ``heuristic``), ``n_questions``, ``n_sampled``, ``counts``, ``category``, ``category_share``, ``fix`` and
    ``items`` (per question: category, the answering chunk, its production rank, why)."""
    say = progress or (lambda _m: None)
    qs = questions if questions is not None else gaps.gap_questions(engine, gap_id)
    if not qs:
        raise LookupError(f"gap #{gap_id} has no questions to diagnose")
    picked = sorted(random.Random(seed).sample(range(len(qs)), min(int(sample), len(qs))))
    qs_s = [qs[i] for i in picked]
    client = None if offline else default_client(engine=engine)
    model = client.models[0] if client is not None and client.models else None
    method = "judge" if model else "heuristic"
    snap = snapshots.current(engine)
    emb = cached_embedder(tier1.default_embedder_name(engine, snapshot=snap), engine)
    texts = [q["question"] for q in qs_s]
    say(f"diagnosing {len(texts)} of {len(qs)} question(s) ({method})")
    search = Retriever.open(engine, snapshot=snap, method="hybrid", embedder=emb)
    search.prepare()
    cands = search.search(texts, CANDIDATES)
    vec = search.vector(texts, tier1.URL_CHUNK_CAP)

    kb = chunk_texts(engine, {h.chunk_id for row in cands for h in row}, snapshot=snap)
    qv = emb.encode_queries(texts)
    cache_terms: dict[int, set[str]] = {}
    items = []
    for q, row, vrow, v in zip(qs_s, cands, vec, qv, strict=True):
        item: dict[str, Any] = {"log_id": q["log_id"], "question": q["question"], "answer_effective": q["effective"],
                                "bot_url": q["url"]}
        kind = text_ru.classify(q["question"])
        if kind in OUT_OF_SCOPE:
            items.append({**item, "category": "out_of_scope", "why": kind})
            continue
        vrank = {h.chunk_id: h.rank for h in vrow}
        cl = [{"id": h.chunk_id, "url": h.url, "text": kb.get(h.chunk_id, {}).get("text", "")} for h in row]
        best: dict[str, Any] | None = None
        if method == "judge":
            try:
                cid, why = _judge(client, model, q["question"], cl, "ru")
            except Exception as exc:  # noqa: BLE001 - a failed judgement is counted, not guessed
                items.append({**item, "category": None, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            if cid is not None:
                best = {**next(c for c in cl if c["id"] == cid), "why": why}
        else:
            q_terms = list(text_ru.terms(q["question"]))
            if cl:
                cv = emb.encode_passages([c["text"] for c in cl])
                cos = (cv @ v) / (np.linalg.norm(cv, axis=1) * max(float(np.linalg.norm(v)), 1e-12))
                scored = []
                for c, s in zip(cl, cos, strict=True):
                    if c["id"] not in cache_terms:
                        cache_terms[c["id"]] = set(text_ru.terms(c["text"]))
                    scored.append((support(q_terms, cache_terms[c["id"]], float(s)), c))
                sup, c = max(scored, key=lambda x: x[0])
                if sup >= threshold:
                    best = {**c, "why": f"support {sup:.2f} >= {threshold}"}
                item["best_support"] = round(float(sup), 4)
        if best is None:
            items.append({**item, "category": "missing"})
            continue
        rank = vrank.get(best["id"])
        item.update({"chunk_id": best["id"], "chunk_url": best["url"], "chunk_text": best["text"][:1000],
                     "production_rank": rank, "why": best["why"]})
        if rank != 1:
            items.append({**item, "category": "retrieval_miss"})
        elif not q["effective"] or q.get("score") == SCORE_DOWN:
            items.append({**item, "category": "declined_or_wrong"})
        else:
            items.append({**item, "category": "answered"})
    decided = [it["category"] for it in items if it["category"] is not None]
    counts = {c: decided.count(c) for c in CATEGORIES}
    top = Counter(decided).most_common(1)
    category = top[0][0] if top else None
    return {"gap_id": int(gap_id), "method": method, "model": model, "threshold": threshold if method == "heuristic" else None,
            "n_questions": len(qs), "n_sampled": len(qs_s), "n_failed": len(items) - len(decided), "seed": seed,
            "snapshot_id": snap.id if snap else None, "embedder": emb.name, "candidates": CANDIDATES,
            "counts": counts, "category": category,
            "category_share": (top[0][1] / len(decided)) if top else None,
            "fix": FIXES.get(category or "", (None, None)), "items": items}
