"""Tier 3 — end to end (the benchmark metrics description, section 6; the bot team's QA method).

Two ways to obtain the system's answer and the chunks it used:

* ``mode="internal"`` — the production path rebuilt here: embed the question, pgvector top-k
  (a :class:`~voproshalych_eval.db.retriever.Retriever`, exact vector search, top-1 like production by
  default), generate from the retrieved chunks;
* ``mode="api"`` — the bot's own HTTP API, described by a :class:`~voproshalych_eval.bot_api.BotApiSpec`
  (method, URL and JSON body templates, headers with ``${VARIABLE}`` references, JSON paths of the
  answer / page URL / chunk texts, timeout, retries, requests-per-second limit, outcome rules). It comes
  from a preset (``api_preset``: ``voproshalych`` — the production ``POST /qa/``; ``search-rag`` —
  the bot team's QA method's ``GET /llm/search-rag?questions=``), a saved bot profile (``api_profile``) or explicit
  settings; the resolved spec is stored in the run's parameters as ``api`` (templates only, never a
  header's value), so a resume talks to the bot exactly as the run started.

Every item gets an **outcome**: ``answered``, ``not_found`` / ``banned`` (the bot declined — an outcome,
not an error) or ``error`` (transport failure after retries, a malformed reply, a failed generation;
the item is recorded as failed and retried by a resume). The run reports ``answered_rate``,
``not_found_rate``, ``banned_rate`` and ``error_rate`` over all items, the errors by kind and the
transport failures met (including retried ones).

Answered items are scored with:

* the bot team's QA method judge (``rag_judge``): answer correctness + groundedness on the context, PASS/FAIL against
  ``threshold``, ``error_message`` on FAIL -> ``pass_rate``;
* ``e2e_score`` (0–1) and, against the reference answer, semantic similarity (cosine of the
  embeddings, −1..1), Euclidean distance of the same unit vectors (0..2, lower is better), ROUGE,
  BLEU, chrF;
* with ``repeats >= 2``: self-consistency of the answers over identical requests
  (``response_exact_match_rate``, ``response_semantic_consistency``).

These judge and overlap metrics are means over the **answered** items only (``n`` says how many); the
outcome rates stand beside them. The context is the chunk texts the API returned; when it returned only
a page URL, the context is *reconstructed* from the knowledge base (``context_from``: ``page`` — all
chunks of that page, ``nearest`` — the ``context_k`` chunks of the page nearest to the question, ``none``)
and the item says so (``context_source``; the run counts ``n_context_reconstructed``). The context given to the
judge is cut to fit the judge model's context window (whole chunks first, the last one cut at a word); the item
records the cut (``context_cut``) and the run counts them (``n_context_cut``); an item whose prompt cannot fit
even without context is a ``context_overflow`` failure of its judges — counted, and still in ``gate_pass_rate``'s
denominator like every item.

The deployment gate: ``gate_pass_rate`` = items passing / ALL items, where an answered item passes on
a PASS verdict, a decline passes on an *unanswerable* question (a golden item with no relevant chunk ids
and no relevant URLs) and fails on an answerable one, and an error never passes;
``gate_passed`` = ``gate_pass_rate >= min_pass_rate`` (``gate``: ``PASS`` / ``FAIL``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.bot_api.client import BotApiClient, error_message
from voproshalych_eval.bot_api.profiles import require_profile
from voproshalych_eval.bot_api.spec import BotApiSpec, spec_from_options
from voproshalych_eval.config import get_settings
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.metrics.consistency import exact_match_rate, mean_pairwise_cosine
from voproshalych_eval.metrics.similarity import cosine_similarity, euclidean_distance
from voproshalych_eval.plans import ItemResult, Lazy, Plan
from voproshalych_eval.plans import spec as plan_spec
from voproshalych_eval.tiers import aggregation, inputs, llm_calls, overlap
from voproshalych_eval.tiers.page_context import PageContext

TIER = "tier3"
#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = plan_spec("tier3").defaults()
OUTCOME_RATES = ("answered", "not_found", "banned", "error")
#: flat parameters -> BotApiSpec fields (overrides of a preset or a profile)
SPEC_OPTIONS = {
    "api_method": "method",
    "api_body": "body",
    "api_headers": "headers",
    "answer_path": "answer_path",
    "url_path": "url_path",
    "chunks_path": "chunks_path",
    "http_timeout": "timeout_s",
    "api_rps": "rps",
    "api_retries": "retries",
    "api_backoff": "retry_backoff_s",
    "api_outcomes": "outcomes",
}


def api_spec(engine: Engine, p: Mapping[str, Any]) -> Any:
    """The bot API spec of a run's parameters: ``api`` as stored, else a profile / a preset plus overrides."""
    if p.get("api"):
        return BotApiSpec.from_dict(p["api"]).validate()
    base = None
    if p.get("api_profile"):
        base = require_profile(engine, p["api_profile"]).spec
    elif not p.get("api_url"):
        raise ValueError("API mode needs the bot's URL (api_url, e.g. http://localhost:8080) or a saved bot profile")
    options = {field: p.get(key) for key, field in SPEC_OPTIONS.items()}
    return spec_from_options(p.get("api_url"), preset=p.get("api_preset"), base=base, **options)


def is_answerable(record: Mapping[str, Any]) -> bool:
    """A golden item is answerable when it names a relevant chunk or URL (unanswerable items have neither)."""
    return bool(record.get("relevant_chunk_ids") or record.get("relevant_urls"))


def _same_url(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


#: the judge metrics every answered item is scored with (their prompt versions are frozen in the run)
JUDGE_METRICS = ("rag_judge", "e2e_score")


def build_plan(engine: Engine, params: Mapping[str, Any]) -> Tier3Plan:
    """The Tier 3 plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return Tier3Plan(engine, params)


class Tier3Plan(Plan):
    """Tier 3: one item per golden question — the answer (the internal pipeline or the bot's API), its outcome,
    then the judges and the overlap metrics of an answered item (see the module docstring)."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        given = {k: v for k, v in params.items() if v is not None}
        p = plan_spec("tier3").resolve(given)
        if p["mode"] not in ("internal", "api"):
            raise ValueError(f"mode must be 'internal' or 'api', got {p['mode']!r}")
        ds = inputs.load_dataset(engine, p["dataset"], "golden")
        pairs = inputs.select_items(ds, limit=p["limit"])
        self.engine = engine
        # one knowledge-base snapshot per run (retrieval, reference texts, reconstructed contexts); a resume keeps it
        self.snap = snap = snapshots.for_run(engine, p.get("snapshot"))
        self.repeats = max(1, int(p["repeats"] or 1))
        self.threshold = float(p["threshold"])
        self.stem = bool(p["stem"])
        self.min_pass = p["min_pass_rate"]
        embedder_name = p["embedder"] or get_settings().embedder
        self.embedder = Lazy(lambda: cached_embedder(embedder_name, engine))
        self.judge = judge = llm_calls.tier_judge(engine, p)
        self.generator: Any = None
        self.client: Any = None
        self.pages: Any = None
        self.api: Any = None
        if p["mode"] == "internal":
            self.generator = llm_calls.make_generator(engine, model=p["generator_model"], system_prompt=p["system_prompt"],
                                                      offline=p["offline"])
        else:
            self._open_api(p, given)
        generator, api = self.generator, self.api
        self.top_k = int(p["top_k"])
        #: the internal pipeline's retriever (exact vector search like production), built on first use
        self.search = Lazy(lambda: Retriever.open(engine, snapshot=snap, embedder=self.embedder.get()))
        offline = bool(getattr(judge, "offline", False) or getattr(generator, "offline", False))
        params_out = {**p, "offline": True if offline else p["offline"], "embedder": embedder_name, "n_items": len(pairs),
                      "snapshot": snap.id}
        if api is not None:
            params_out["api"] = api.to_dict()  # templates only: header values are resolved at call time
            params_out.update(dict.fromkeys(SPEC_OPTIONS))
        super().__init__(
            tier=TIER,
            items=pairs,
            concurrency=int(p["concurrency"] or 4),
            params=params_out,
            models={
                "mode": p["mode"],
                "generator": getattr(generator, "model", None) if generator else "bot API",
                "bot_api": {"url": api.url, "method": api.method, "preset": api.preset, "profile": p["api_profile"]}
                if api else None,
                "judges": list(getattr(judge, "models", []) or []),
                "embedder": embedder_name,
            },
            prompts={**({**llm_calls.generator_prompts(generator), "system_prompt": getattr(generator, "system_prompt", None)}
                        if generator else {}), **llm_calls.judge_prompts(JUDGE_METRICS, judge)},
            dataset_id=ds.id,
            dataset_name=ds.name,
            dataset_hash=ds.content_hash,
            offline=offline,
            snapshot_id=snap.id,
            label=p["api_profile"] or None,
            providers=llm_calls.providers_of(generator, judge),
        )

    def _open_api(self, p: dict[str, Any], given: Mapping[str, Any]) -> None:
        """API mode: the bot's spec and client, and how a context the bot did not return is rebuilt."""
        self.api = api_spec(self.engine, p)
        if p.get("api_profile") and not p.get("api"):  # the profile's judge context unless given

            ctx = require_profile(self.engine, p["api_profile"]).judge_context
            p["context_from"] = given.get("context_from", ctx.context_from)
            p["context_k"] = given.get("context_k", ctx.context_k)
        self.client = BotApiClient(self.api)
        self.client.check_variables()  # a missing ${VARIABLE} stops the run before its first request
        self.pages = PageContext(self.engine, mode=str(p["context_from"]), k=int(p["context_k"]),
                                 embedder=self.embedder.get, snapshot=self.snap)

    def _internal_once(self, question: str, i: int) -> dict[str, Any]:
        vec = self.search.get().embed([question])
        t0 = time.perf_counter()
        hits = self.search.get().by_vectors(vec, self.top_k)[0]
        retrieval_s = time.perf_counter() - t0
        gen = generate_from_chunks(self.engine, self.generator, question, [int(h.chunk_id) for h in hits],
                                   snapshot=self.snap, cache_salt=f"repeat{i}" if self.repeats > 1 else None)
        return {**gen, "retrieved_urls": [h.url for h in hits], "retrieval_latency_s": retrieval_s}

    def _api_once(self, question: str, record: Mapping[str, Any]) -> dict[str, Any]:
        reply = self.client.ask(question, [str(t) for t in (record.get("dialog_context") or [])])
        d = reply.to_dict()
        d["returned_url"] = d.pop("url")
        d["retrieved_urls"] = [reply.url] if reply.url else None
        d["context_source"] = "api" if reply.contexts else None
        if reply.outcome == "answered" and not reply.contexts:
            ctx = self.pages.build(question, reply.url)
            d.update(contexts=ctx["contexts"], context_source=ctx["source"], context_chunk_ids=ctx["chunk_ids"],
                     context_page_chunks=ctx["page_chunks"])
        return d

    def work(self, record: dict[str, Any]) -> ItemResult:
        question = record["question"]
        answerable = is_answerable(record)
        outs = [self._api_once(question, record) if self.client else self._internal_once(question, i)
                for i in range(self.repeats)]
        first = next((o for o in outs if o["outcome"] != "error"), outs[0])
        base: dict[str, Any] = {
            "question": question,
            "question_type": record.get("question_type"),
            "reference": record.get("ground_truth_answer") or "",
            "answerable": answerable,
            "outcome": first["outcome"],
            "reason": first.get("reason"),
            "error_kind": first.get("error_kind"),
            "http_status": first.get("status"),
            "attempts": sum(int(o.get("attempts") or 0) for o in outs) or None,
            "transport_failures": _sum_counts(o.get("transport_failures") for o in outs),
            "rate_limit_wait_s": sum(float(o.get("waited_s") or 0.0) for o in outs) if self.client else None,
            "latency_s": first.get("latency_s"),
            "returned_url": first.get("returned_url"),
            "repeat_outcomes": [o["outcome"] for o in outs] if self.repeats > 1 else None,
        }
        tokens = sum(int(o.get("tokens") or 0) for o in outs)
        if first["outcome"] == "error":
            base["gate_pass"] = False

            return ItemResult(base, status="failed", error=error_message(first.get("error_kind"), first.get("reason")),
                              tokens=tokens)
        if first["outcome"] != "answered":  # a decline: right on an unanswerable question, wrong on an answerable one
            base["gate_pass"] = not answerable
            return ItemResult(base, tokens=tokens)
        return self._scored(record, base, first, outs, tokens)

    def _scored(self, record: Mapping[str, Any], base: dict[str, Any], first: dict[str, Any],
                outs: list[dict[str, Any]], tokens: int) -> ItemResult:
        """An answered item: the judges (context cut to their window), similarity, overlap, self-consistency."""
        question, reference = base["question"], base["reference"]
        answer, contexts = first["answer"], first.get("contexts") or []
        sample = llm_calls.make_sample(question, answer, reference, contexts)
        # the judge prompt must fit the model's window: the context is cut to fit (recorded), and an item that
        # cannot fit at all is a counted context_overflow failure, still in every denominator
        sample, fit, judged = judge_sample(self.judge, sample, JUDGE_METRICS, threshold=self.threshold)
        rag, e2e = judged["rag_judge"], judged["e2e_score"]
        vecs = self.embedder.get().encode_passages([answer, reference]) if answer.strip() and reference else None
        # an empty answer shares no meaning with the reference: cosine 0 (orthogonal), distance √2 of unit vectors
        empty = reference and not answer.strip()
        relevant = {int(i) for i in (record.get("relevant_chunk_ids") or [])}
        retrieved = first.get("retrieved_chunk_ids")
        relevant_urls = [str(u) for u in (record.get("relevant_urls") or [])]
        returned_url = first.get("returned_url")
        out: dict[str, Any] = {
            **base,
            "answer": answer,
            "contexts": list(sample.retrieved_contexts),  # what the judge saw (cut to its window: context_cut)
            "context_source": first.get("context_source"),
            "context_reconstructed": first.get("context_source") in ("page", "nearest"),
            "context_chunk_ids": first.get("context_chunk_ids"),
            "context_cut": (fit or {}).get("cut"),
            "context_overflow": (fit or {}).get("overflow"),
            "retrieved_chunk_ids": retrieved,
            "retrieved_urls": first.get("retrieved_urls"),
            "retrieval_hit": (bool(set(retrieved) & relevant) if retrieved is not None and relevant else None),
            "url_hit": (any(_same_url(returned_url, u) for u in relevant_urls) if returned_url and relevant_urls else None),
            "generation_model": first.get("generation_model"),
            "answer_failures": [o.get("reason") for o in outs if o["outcome"] == "error"],
            "judges": {"rag_judge": rag, "e2e_score": e2e},
            "rag_score": rag.get("score"),
            "passed": rag.get("passed"),
            "gate_pass": rag.get("passed") is True,
            "error_message": rag.get("explanation") if rag.get("passed") is False else "",
            "e2e_score": e2e.get("score"),
            "semantic_similarity": cosine_similarity(vecs[0], vecs[1]) if vecs is not None else (0.0 if empty else None),
            "euclidean_distance": euclidean_distance(vecs[0], vecs[1]) if vecs is not None else (
                2 ** 0.5 if empty else None),
            **overlap.overlap_scores(answer, reference, stem=self.stem),
        }
        answered = [o for o in outs if o["outcome"] == "answered"]
        if self.repeats >= 2 and len(answered) >= 2:
            texts = [o["answer"] for o in answered]
            out["repeats"] = texts
            out["response_exact_match"] = exact_match_rate([texts])
            out["response_semantic_consistency"] = mean_pairwise_cosine([self.embedder.get().encode_passages(texts)])
        return ItemResult(out, tokens=tokens + llm_calls.tokens_of(rag, e2e))

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(records, repeats=self.repeats, min_pass_rate=self.min_pass)


def generate_from_chunks(engine: Engine, generator: Any, question: str, chunk_ids: list[int], *, snapshot: Any,
                         cache_salt: str | None = None) -> dict[str, Any]:
    """The internal pipeline after retrieval: the texts of ``chunk_ids`` in ``snapshot`` (in that order) are the
    context the generator answers from. ``outcome`` is ``answered`` or ``error`` (a failed generation, its reason
    kept); the what-if (:mod:`voproshalych_eval.tiers.whatif`) runs it on a sandbox and on its parent."""
    kb = inputs.chunk_texts(engine, chunk_ids, snapshot=snapshot)
    contexts = [kb[c]["text"] for c in chunk_ids if c in kb]
    gen = llm_calls.generation_dict(generator.generate(question, contexts, cache_salt=cache_salt))
    ok = not gen["error"] and gen["text"] is not None
    return {
        "outcome": "answered" if ok else "error",
        "answer": gen["text"],
        "contexts": contexts,
        "context_source": "retrieval",
        "retrieved_chunk_ids": [int(c) for c in chunk_ids],
        "latency_s": gen["latency_s"],
        "generation_model": gen["model"],
        "tokens": gen["tokens"],
        "error_kind": None if ok else "generation",
        "reason": None if ok else gen["error"],
    }


def judge_sample(judge: Any, sample: Any, metrics: tuple[str, ...], *, threshold: float
                 ) -> tuple[Any, dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """Judge an answered sample with ``metrics`` (``rag_judge`` at ``threshold``, others plain): the context is cut
    to the judge's window first (``fit``: the cut, or ``overflow`` — then every metric is a counted
    ``context_overflow`` failure). Returns ``(sample as judged, fit, {metric: result})``."""
    sample, fit = llm_calls.fit_judge_contexts(judge, metrics, sample)
    if fit is not None and "overflow" in fit:
        return sample, fit, dict.fromkeys(metrics, llm_calls.overflow_result(fit))
    out = {m: (llm_calls.judge_call(judge.rag_judge, sample, threshold=threshold) if m == "rag_judge"
               else llm_calls.judge_call(getattr(judge, m), sample)) for m in metrics}
    return sample, fit, out


def _sum_counts(counters: Any) -> dict[str, int]:
    total: Counter[str] = Counter()
    for c in counters:
        total.update(c or {})
    return dict(sorted(total.items()))


def item_outcome(record: Mapping[str, Any]) -> str:
    """An item's outcome; items recorded without one (an exception in the work) count as errors."""
    res = record.get("result") or {}
    o = res.get("outcome")
    if o in OUTCOME_RATES:
        return str(o)
    return "answered" if record.get("status") == "done" else "error"


def outcomes_by_answerability(records: list[dict[str, Any]], outcomes: list[str]) -> dict[str, dict[str, int]]:
    """Outcome counts of the answerable and of the unanswerable questions (what the gate weighs differently:
    a decline fails on the first and passes on the second); items recorded without the flag under ``unknown``."""
    out: dict[str, Counter[str]] = {}
    for rec, o in zip(records, outcomes, strict=True):
        flag = (rec.get("result") or {}).get("answerable")
        group = "unknown" if flag is None else ("answerable" if flag else "unanswerable")
        out.setdefault(group, Counter())[o] += 1
    return {g: {o: c[o] for o in OUTCOME_RATES if c[o]} for g, c in sorted(out.items())}


def aggregate(records: list[dict[str, Any]], *, repeats: int = 1, min_pass_rate: float | None = None) -> dict[str, Any]:
    """Outcome rates over all items, seed-named judge/overlap means over the answered items, the gate."""
    n_all = len(records)
    outcomes = [item_outcome(r) for r in records]
    counts = Counter(outcomes)
    answered_records = [r for r, o in zip(records, outcomes, strict=True) if o == "answered" and r["status"] == "done"]
    answered = [dict(r["result"]) for r in answered_records]
    m: dict[str, Any] = {f"{o}_rate": aggregation.agg([1.0 if x == o else 0.0 for x in outcomes]) for o in OUTCOME_RATES}
    m.update({f"n_{o}": counts.get(o, 0) for o in OUTCOME_RATES})
    # judge, similarity and overlap means over the answered items only: a decline or a request error is in the
    # outcome rates, never a judge failure (an empty answer is an answer, scored as the bad answer it is)
    sim_kinds = [aggregation.overlap_kind(r) for r in answered]
    m["pass_rate"] = aggregation.judged_agg(answered, answered_records, "rag_judge", "passed")
    m["avg_e2e_score"] = aggregation.judged_agg(answered, answered_records, "e2e_score")
    m["avg_rag_judge_score"] = aggregation.judged_agg(answered, answered_records, "rag_judge", "rag_score")
    m["avg_semantic_similarity"] = aggregation.agg(aggregation.column(answered, "semantic_similarity"), kinds=sim_kinds)
    m["avg_euclidean_distance"] = aggregation.agg(aggregation.column(answered, "euclidean_distance"), kinds=sim_kinds)
    m.update(aggregation.overlap_aggs(answered, answered_records))
    # failure kinds: failed (error) items by category, empty answers and unscored judge results of the answered
    m.update(aggregation.item_outcomes(answered, records, ("rag_judge", "e2e_score")))
    for key, name in (("retrieval_hit", "retrieval_hit_rate"), ("url_hit", "url_hit_rate")):
        hits = aggregation.column(answered, key)
        if any(h is not None for h in hits):
            m[name] = aggregation.agg(hits)
    if repeats >= 2:
        m["response_exact_match_rate"] = aggregation.agg(aggregation.column(answered, "response_exact_match"))
        m["response_semantic_consistency"] = aggregation.agg(aggregation.column(answered, "response_semantic_consistency"))
    results = [r.get("result") or {} for r in records]
    m.update(aggregation.latency_percentiles([res.get("latency_s") for res in results], "latency"))
    m["errors_by_kind"] = dict(sorted(Counter(
        (res.get("error_kind") or "internal") for res, o in zip(results, outcomes, strict=True) if o == "error").items()))
    m["declines_by_reason"] = dict(sorted(Counter(
        (res.get("reason") or o) for res, o in zip(results, outcomes, strict=True) if o in ("not_found", "banned")).items()))
    m["transport_failures"] = _sum_counts(res.get("transport_failures") for res in results)
    m["n_context_reconstructed"] = sum(1 for res in answered if res.get("context_reconstructed"))
    m["n_context_cut"] = sum(1 for res in answered if res.get("context_cut"))
    m["context_sources"] = dict(sorted(Counter(res.get("context_source") or "—" for res in answered).items()))
    m["n_answered_unanswerable"] = sum(1 for res in answered if res.get("answerable") is False)
    m["outcomes_by_answerability"] = outcomes_by_answerability(records, outcomes)
    m["n_undecided"] = sum(1 for r in answered if ((r.get("judges") or {}).get("rag_judge") or {}).get("undecided"))
    calls = aggregation.jury_calls([j for r in answered for j in (r.get("judges") or {}).values()])
    if calls is not None:
        m["judge_calls"] = calls
    m["n_items"] = n_all
    m["n_failed_items"] = sum(1 for r in records if r["status"] != "done")
    # answered items with a judge score / answered items (declines and errors are outcomes, not judgements)
    m["judged_share"] = aggregation.judged_share(
        sum(1 for r in answered if r.get("rag_score") is not None or r.get("e2e_score") is not None), len(answered))
    passes = sum(1 for r, o in zip(records, outcomes, strict=True) if o != "error" and (r.get("result") or {}).get("gate_pass"))
    m["gate_pass_rate"] = passes / n_all if n_all else None
    if min_pass_rate is not None:
        m["min_pass_rate"] = float(min_pass_rate)
        m["gate_passed"] = bool(n_all and passes / n_all >= float(min_pass_rate))
        m["gate"] = "PASS" if m["gate_passed"] else "FAIL"
    return m
