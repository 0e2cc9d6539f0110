"""Tier 3 — end to end (seed 000, section 6; seed 003).

Two ways to obtain the system's answer and the chunks it used:

* ``mode="internal"`` — the production path rebuilt here: embed the question, pgvector top-k
  (``db.retrieval.search_vectors``, top-1 like production by default), generate from the retrieved
  chunks;
* ``mode="api"`` — the bot's own HTTP API (seed 003): ``GET`` on ``api_url`` — a template with
  ``{question}`` (URL-encoded) or a base URL to which ``/llm/search-rag?questions=<text>`` is added.
  ``answer_path`` and ``chunks_path`` are dotted JSON paths (``*`` maps over a list, e.g.
  ``chunks.*.text``) to the answer and to the returned chunk texts.

Every answer is scored with:

* the seed-003 judge (``rag_judge``): answer correctness + groundedness on the returned chunks,
  PASS/FAIL against ``threshold``, ``error_message`` on FAIL -> ``pass_rate``;
* ``e2e_score`` (0–1) and, against the reference answer, semantic similarity (cosine of the
  embeddings, −1..1), Euclidean distance of the same unit vectors (0..2, lower is better), ROUGE,
  BLEU, chrF;
* with ``repeats >= 2``: self-consistency of the answers over identical requests
  (``response_exact_match_rate``, ``response_semantic_consistency``).

The deployment gate: ``gate_pass_rate`` = PASS verdicts / ALL items (an API error or a judge failure
counts as not passing — a gate must not pass because the system failed to answer);
``gate_passed`` = ``gate_pass_rate >= min_pass_rate``.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.plans import ItemResult, Lazy, Plan
from voproshalych_eval.tiers import aggregation, inputs, llm_calls, overlap
from voproshalych_eval.tiers.json_path import json_path

TIER = "tier3"
API_SUFFIX = "/llm/search-rag?questions={question}"
DEFAULTS: dict[str, Any] = {
    "dataset": "demo_golden",
    "limit": None,
    "mode": "internal",
    "api_url": None,
    "answer_path": "answer",
    "chunks_path": "chunks",
    "http_timeout": 60.0,
    "top_k": 1,
    "embedder": None,
    "generator_model": None,
    "system_prompt": None,
    "judge_models": None,
    "judge_aggregate": "average",
    "threshold": 0.5,
    "min_pass_rate": None,
    "repeats": 1,
    "stem": False,
    "concurrency": 4,
    "offline": None,
}
OVERLAP = overlap.OVERLAP_KEYS


def api_request_url(api_url: str, question: str) -> str:
    """The request URL for one question: ``{question}`` in the template, or the seed-003 path added."""
    template = api_url if "{question}" in api_url else api_url.rstrip("/") + API_SUFFIX
    return template.replace("{question}", urllib.parse.quote(question, safe=""))


def _as_texts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        out: list[str] = []
        for v in value:
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, Mapping):
                t = v.get("text") or v.get("content") or v.get("page_content") or v.get("chunk")
                if t:
                    out.append(str(t))
            elif isinstance(v, list):
                out.extend(_as_texts(v))
        return out
    if isinstance(value, Mapping):
        return _as_texts([value])
    return [str(value)]


def call_api(client: Any, api_url: str, question: str, *, answer_path: str, chunks_path: str) -> dict[str, Any]:
    """One request to the bot's API: answer, chunk texts, latency. Raises on HTTP or JSON errors."""
    url = api_request_url(api_url, question)
    t0 = time.perf_counter()
    resp = client.get(url)
    latency = time.perf_counter() - t0
    resp.raise_for_status()
    data = resp.json()
    answer = json_path(data, answer_path)
    if isinstance(answer, list):
        answer = "\n".join(str(a) for a in answer if a)
    if answer is not None and not isinstance(answer, str):
        answer = str(answer)
    if answer is None:
        raise ValueError(f"the API reply has no answer at '{answer_path}'")
    return {"text": answer, "contexts": _as_texts(json_path(data, chunks_path)), "latency_s": latency, "tokens": 0, "error": None}


def build_plan(engine: Engine, params: Mapping[str, Any]) -> Plan:
    """The Tier 3 plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    p = {**DEFAULTS, **{k: v for k, v in params.items() if v is not None}}
    if p["mode"] not in ("internal", "api"):
        raise ValueError(f"mode must be 'internal' or 'api', got {p['mode']!r}")
    if p["mode"] == "api" and not p["api_url"]:
        raise ValueError("API mode needs the bot's URL (api_url), e.g. http://localhost:8080")
    ds = inputs.load_dataset(engine, p["dataset"], "golden")
    pairs = inputs.select_items(ds, limit=p["limit"])
    repeats = max(1, int(p["repeats"] or 1))
    threshold = float(p["threshold"])
    from voproshalych_eval.config import get_settings

    embedder_name = p["embedder"] or get_settings().embedder
    embedder = Lazy(lambda: cached_embedder(embedder_name, engine))
    judge = llm_calls.make_judge(engine, models=p["judge_models"], aggregate=p["judge_aggregate"], offline=p["offline"])
    generator = None
    http = None
    if p["mode"] == "internal":
        generator = llm_calls.make_generator(engine, model=p["generator_model"], system_prompt=p["system_prompt"], offline=p["offline"])
    else:
        import httpx

        http = httpx.Client(timeout=float(p["http_timeout"]), follow_redirects=True)
    top_k = int(p["top_k"])

    def answer_once(question: str, i: int = 0) -> dict[str, Any]:
        if p["mode"] == "api":
            try:
                return call_api(http, p["api_url"], question, answer_path=p["answer_path"], chunks_path=p["chunks_path"])
            except Exception as exc:  # noqa: BLE001 - recorded per repeat, the item fails if none succeeds
                return {"text": None, "contexts": [], "latency_s": None, "tokens": 0, "error": f"{type(exc).__name__}: {exc}"}
        from voproshalych_eval.db.retrieval import search_vectors

        vec = embedder.get().encode_queries([question])
        t0 = time.perf_counter()
        hits = search_vectors(engine, vec, k=top_k, model=embedder_name)[0]
        retrieval_s = time.perf_counter() - t0
        kb = inputs.chunk_texts(engine, [h.chunk_id for h in hits])
        contexts = [kb[h.chunk_id]["text"] for h in hits if h.chunk_id in kb]
        gen = llm_calls.generation_dict(generator.generate(question, contexts, cache_salt=f"repeat{i}" if repeats > 1 else None))
        gen["contexts"] = contexts
        gen["retrieved_chunk_ids"] = [int(h.chunk_id) for h in hits]
        gen["retrieved_urls"] = [h.url for h in hits]
        gen["retrieval_latency_s"] = retrieval_s
        return gen

    def work(record: dict[str, Any]) -> ItemResult:
        question = record["question"]
        reference = record.get("ground_truth_answer") or ""
        outs = [answer_once(question, i) for i in range(repeats)]
        ok = [o for o in outs if not o["error"] and o["text"] is not None]
        if not ok:
            raise RuntimeError(f"no answer: {outs[0]['error']}")
        first = ok[0]
        answer, contexts = first["text"], first["contexts"]
        sample = llm_calls.make_sample(question, answer, reference, contexts)
        rag = llm_calls.judge_call(judge.rag_judge, sample, threshold=threshold)
        e2e = llm_calls.judge_call(judge.e2e_score, sample)
        vecs = embedder.get().encode_passages([answer, reference]) if answer.strip() and reference else None
        from voproshalych_eval.metrics.similarity import cosine_similarity, euclidean_distance

        # an empty answer shares no meaning with the reference: cosine 0 (orthogonal), distance √2 of unit vectors
        empty = reference and not answer.strip()
        relevant = {int(i) for i in (record.get("relevant_chunk_ids") or [])}
        retrieved = first.get("retrieved_chunk_ids")
        out: dict[str, Any] = {
            "question": question,
            "question_type": record.get("question_type"),
            "reference": reference,
            "answer": answer,
            "contexts": contexts,
            "retrieved_chunk_ids": retrieved,
            "retrieved_urls": first.get("retrieved_urls"),
            "retrieval_hit": (bool(set(retrieved) & relevant) if retrieved is not None and relevant else None),
            "latency_s": first.get("latency_s"),
            "generation_model": first.get("model"),
            "answer_failures": [o["error"] for o in outs if o["error"]],
            "judges": {"rag_judge": rag, "e2e_score": e2e},
            "rag_score": rag.get("score"),
            "passed": rag.get("passed"),
            "error_message": rag.get("explanation") if rag.get("passed") is False else "",
            "e2e_score": e2e.get("score"),
            "semantic_similarity": cosine_similarity(vecs[0], vecs[1]) if vecs is not None else (0.0 if empty else None),
            "euclidean_distance": euclidean_distance(vecs[0], vecs[1]) if vecs is not None else (
                2 ** 0.5 if empty else None),
            **overlap.overlap_scores(answer, reference, stem=bool(p["stem"])),
        }
        if repeats >= 2 and len(ok) >= 2:
            from voproshalych_eval.metrics.consistency import exact_match_rate, mean_pairwise_cosine

            texts = [o["text"] for o in ok]
            out["repeats"] = texts
            out["response_exact_match"] = exact_match_rate([texts])
            out["response_semantic_consistency"] = mean_pairwise_cosine([embedder.get().encode_passages(texts)])
        tokens = sum(int(o.get("tokens") or 0) for o in outs) + llm_calls.tokens_of(rag, e2e)
        return ItemResult(out, tokens=tokens)

    offline = bool(getattr(judge, "offline", False) or getattr(generator, "offline", False))
    min_pass = p["min_pass_rate"]
    params_out = {**p, "offline": True if offline else p["offline"], "embedder": embedder_name, "n_items": len(pairs)}
    return Plan(
        tier=TIER,
        items=pairs,
        work=work,
        finalize=lambda records: aggregate(records, repeats=repeats, min_pass_rate=min_pass),
        concurrency=int(p["concurrency"] or 4),
        params=params_out,
        models={
            "mode": p["mode"],
            "generator": getattr(generator, "model", None) if generator else "bot API",
            "judges": list(getattr(judge, "models", []) or []),
            "embedder": embedder_name,
        },
        prompts={**llm_calls.generator_prompts(generator), "system_prompt": getattr(generator, "system_prompt", None)} if generator else {},
        dataset_id=ds.id,
        dataset_name=ds.name,
        dataset_hash=ds.content_hash,
        offline=offline,
        providers=llm_calls.providers_of(generator, judge),
    )



def aggregate(records: list[dict[str, Any]], *, repeats: int = 1, min_pass_rate: float | None = None) -> dict[str, Any]:
    """Seed-named aggregates over all recorded items, plus the pass rate and the gate."""
    res = aggregation.done_results(records)
    nf = aggregation.n_failed_items(records)
    sim_kinds = [aggregation.overlap_kind(r) for r in res] + aggregation.failed_item_kinds(records)
    m: dict[str, Any] = {
        "pass_rate": aggregation.judged_agg(res, records, "rag_judge", "passed"),
        "avg_e2e_score": aggregation.judged_agg(res, records, "e2e_score"),
        "avg_rag_judge_score": aggregation.judged_agg(res, records, "rag_judge", "rag_score"),
        "avg_semantic_similarity": aggregation.agg(aggregation.column(res, "semantic_similarity", nf), kinds=sim_kinds),
        "avg_euclidean_distance": aggregation.agg(aggregation.column(res, "euclidean_distance", nf), kinds=sim_kinds),
    }
    m.update(aggregation.overlap_aggs(res, records))
    m.update(aggregation.item_outcomes(res, records, ("rag_judge", "e2e_score")))
    hits = aggregation.column(res, "retrieval_hit")
    if any(h is not None for h in hits):
        m["retrieval_hit_rate"] = aggregation.agg(hits)
    if repeats >= 2:
        m["response_exact_match_rate"] = aggregation.agg(aggregation.column(res, "response_exact_match", nf))
        m["response_semantic_consistency"] = aggregation.agg(aggregation.column(res, "response_semantic_consistency", nf))
    m.update(aggregation.latency_percentiles([r.get("latency_s") for r in res], "latency"))
    n_all = len(records)
    passes = sum(1 for r in res if r.get("passed") is True)
    m["n_items"] = n_all
    m["n_failed_items"] = nf
    m["gate_pass_rate"] = passes / n_all if n_all else None
    if min_pass_rate is not None:
        m["min_pass_rate"] = float(min_pass_rate)
        m["gate_passed"] = bool(n_all and passes / n_all >= float(min_pass_rate))
    return m
