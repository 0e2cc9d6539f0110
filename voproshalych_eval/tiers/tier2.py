"""Tier 2 — generation on a fixed context (the benchmark metrics description, section 5).

For every golden item the generator answers the question from the item's FULL reference context
(the texts of all its relevant chunks, read from the knowledge base; cut only when
``max_context_chars`` is set, and then the cut is recorded per item and in the run's parameters).
Each answer is scored by the LLM judges — faithfulness (0–1), answer relevance (0–1), answer
correctness (the judge's scale, 1–5 in the seed) — and against the reference answer with ROUGE-1/2/L
F (Unicode tokenizer, optional Russian stemming), BLEU and chrF (sacrebleu, 0–100).

With ``repeats >= 2`` the generator is called R times per item and two SELF-consistency metrics are
reported — they compare repeats with each other, never with the reference:

* ``response_exact_match_rate`` — mean over items of the share of identical repeat pairs;
* ``response_semantic_consistency`` — mean over items of the mean pairwise cosine of the repeats'
  embeddings.

Scores are computed on the first successful repeat. A generation error on every repeat fails the
item (retried on resume); a judge failure is a counted failure of that metric only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.db import snapshots
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.metrics.consistency import exact_match_rate, mean_pairwise_cosine
from voproshalych_eval.plans import ItemResult, Lazy, Plan, spec
from voproshalych_eval.tiers import aggregation, inputs, llm_calls, overlap

TIER = "tier2"
#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("tier2").defaults()

JUDGE_METRICS = ("faithfulness", "answer_relevance", "answer_correctness")
OVERLAP = overlap.OVERLAP_KEYS


def build_plan(engine: Engine, params: Mapping[str, Any]) -> Tier2Plan:
    """The Tier 2 plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return Tier2Plan(engine, params)


class Tier2Plan(Plan):
    """Tier 2: one item per golden question — the answer generated from its full reference context (``repeats``
    times), judged and compared with the reference."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("tier2").resolve(params)
        ds = inputs.load_dataset(engine, p["dataset"], "golden")
        pairs = inputs.select_items(ds, limit=p["limit"])
        n_all = len(pairs)
        if p["skip_unanswerable"]:
            pairs = [(k, r) for k, r in pairs if r.get("question_type") != "unanswerable"]
        n_skipped = n_all - len(pairs)
        snap = snapshots.for_run(engine, p["snapshot"])
        p["snapshot"] = snap.id
        self.kb = inputs.chunk_texts(
            engine, [i for _, r in pairs for i in (r.get("relevant_chunk_ids") or [r.get("chunk_id")]) if i is not None],
            snapshot=snap)
        self.repeats = repeats = max(1, int(p["repeats"] or 1))
        self.stem = bool(p["stem"])
        self.generator = generator = llm_calls.make_generator(
            engine, model=p["generator_model"], system_prompt=p["system_prompt"], offline=p["offline"],
            temperature=p["temperature"]
        )
        self.judge = judge = llm_calls.tier_judge(engine, p)
        embedder_name = p["embedder"]
        if repeats >= 2 and not embedder_name:
            embedder_name = get_settings().embedder
        self.embedder = Lazy(lambda: cached_embedder(embedder_name, engine)) if repeats >= 2 else None
        self.max_chars = max_chars = int(p["max_context_chars"]) if p["max_context_chars"] else None
        offline = bool(getattr(judge, "offline", False) or getattr(generator, "offline", False))
        params_out = {**p, "offline": True if offline else p["offline"], "n_items": len(pairs),
                      "n_skipped_unanswerable": n_skipped,
                      "context": "full reference context" if not max_chars else f"cut at {max_chars} chars"}
        super().__init__(
            tier=TIER,
            items=pairs,
            concurrency=int(p["concurrency"] or 4),
            params=params_out,
            models={"generator": getattr(generator, "model", None), "judges": list(getattr(judge, "models", []) or []),
                    "embedder": embedder_name},
            prompts={**llm_calls.generator_prompts(generator), **llm_calls.judge_prompts(JUDGE_METRICS, judge),
                     "system_prompt": getattr(generator, "system_prompt", None) or p["system_prompt"]},
            dataset_id=ds.id,
            dataset_name=ds.name,
            dataset_hash=ds.content_hash,
            snapshot_id=snap.id,
            offline=offline,
            providers=llm_calls.providers_of(generator, judge),
        )

    def work(self, record: dict[str, Any]) -> ItemResult:
        ctx = inputs.full_reference_context(record, self.kb, max_chars=self.max_chars)
        question = record["question"]
        reference = record.get("ground_truth_answer") or ""
        repeats = self.repeats
        # each repeat is its own call (a distinct cache entry: a resume reuses it, repeats never coincide by cache)
        gens = [
            llm_calls.generation_dict(self.generator.generate(question, ctx["contexts"],
                                                              cache_salt=f"repeat{i}" if repeats > 1 else None))
            for i in range(repeats)
        ]
        ok = [g for g in gens if not g["error"] and g["text"] is not None]
        if not ok:
            raise RuntimeError(f"generation failed on every repeat: {gens[0]['error']}")
        answer = ok[0]["text"]
        sample = llm_calls.make_sample(question, answer, reference, ctx["contexts"])
        # the judge prompts must fit the judge model's window: cut (recorded) or a counted context_overflow
        sample, fit = llm_calls.fit_judge_contexts(self.judge, JUDGE_METRICS, sample)
        if fit is not None and "overflow" in fit:
            judged = {m: llm_calls.overflow_result(fit) for m in JUDGE_METRICS}
        else:
            judged = {m: llm_calls.judge_call(getattr(self.judge, m), sample) for m in JUDGE_METRICS}
        out: dict[str, Any] = {
            "question": question,
            "question_type": record.get("question_type"),
            "reference": reference,
            "answer": answer,
            "contexts": ctx["contexts"],
            "context_chunk_ids": ctx["chunk_ids"],
            "context_missing_chunk_ids": ctx["missing_chunk_ids"],
            "context_truncated": ctx["truncated"],
            "context_chars_full": ctx["chars_full"],
            "context_chars_used": ctx["chars_used"],
            "judge_context_cut": (fit or {}).get("cut"),
            "generation": {k: v for k, v in ok[0].items() if k != "text"},
            "generation_failures": [g["error"] for g in gens if g["error"]],
            "judges": judged,
            **{m: judged[m].get("score") for m in JUDGE_METRICS},
            **overlap.overlap_scores(answer, reference, stem=self.stem),
        }
        if repeats >= 2:
            self._consistency(out, [g["text"] for g in ok])
        tokens = sum(g["tokens"] for g in gens) + llm_calls.tokens_of(*judged.values())
        return ItemResult(out, tokens=tokens)

    def _consistency(self, out: dict[str, Any], texts: list[str]) -> None:
        """The repeats' answers and their self-consistency, into ``out``."""
        out["repeats"] = texts
        if len(texts) >= 2:
            out["response_exact_match"] = exact_match_rate([texts])
            vecs = self.embedder.get().encode_passages(texts) if self.embedder else None
            out["response_semantic_consistency"] = mean_pairwise_cosine([vecs]) if vecs is not None else None

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(records, repeats=self.repeats)


def aggregate(records: list[dict[str, Any]], *, repeats: int = 1) -> dict[str, Any]:
    """Aggregates named as in the methodology over all recorded items on the methodology's scales (answer correctness 1–5, BLEU
    0–100): failed items count as failures of every metric, by kind; an empty answer is scored (judges:
    the scale's lowest by rule; overlap: 0), never left out; ``corpus_bleu`` beside the mean sentence BLEU."""
    res = aggregation.done_results(records)
    nf = aggregation.n_failed_items(records)
    m: dict[str, Any] = {f"avg_{k}": aggregation.judged_agg(res, records, k) for k in JUDGE_METRICS}
    m.update(aggregation.overlap_aggs(res, records))
    m.update(aggregation.item_outcomes(res, records, JUDGE_METRICS))
    if repeats >= 2:
        m["response_exact_match_rate"] = aggregation.agg(aggregation.column(res, "response_exact_match", nf))
        m["response_semantic_consistency"] = aggregation.agg(aggregation.column(res, "response_semantic_consistency", nf))
    calls = aggregation.jury_calls([j for r in res for j in (r.get("judges") or {}).values()])
    if calls is not None:
        m["judge_calls"] = calls
    m["n_items"] = len(records)
    m["n_failed_items"] = nf
    # items with at least one judge score (an empty answer scored by rule included) / every recorded item
    m["judged_share"] = aggregation.judged_share(
        sum(1 for r in res if any(r.get(k) is not None for k in JUDGE_METRICS)), len(records))
    m["n_context_truncated"] = sum(1 for r in res if r.get("context_truncated"))
    m["n_context_cut"] = sum(1 for r in res if r.get("judge_context_cut"))  # cut to the judge model's window
    gen_lat = [r.get("generation", {}).get("latency_s") for r in res]
    m.update(aggregation.latency_percentiles(gen_lat, "generation_latency"))
    by_type: dict[str, dict[str, Any]] = {}
    for t in sorted({r.get("question_type") or "—" for r in res}):
        sub = [r for r in res if (r.get("question_type") or "—") == t]
        by_type[t] = {f"avg_{k}": aggregation.agg(aggregation.column(sub, k))["value"] for k in (*JUDGE_METRICS, "rougeL_f")} | {"n": len(sub)}
    m["by_question_type"] = by_type
    return m
