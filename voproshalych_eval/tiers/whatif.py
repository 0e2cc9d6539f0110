"""What if: the effect of a knowledge-base edit on retrieval, measured before anything is published.

The plan (``whatif``) runs Tier 1's retrieval and metrics — a :class:`voproshalych_eval.db.retriever.Retriever` per side,
:func:`~voproshalych_eval.tiers.tier1.deepen_for_pages`, :func:`~voproshalych_eval.tiers.tier1.question_items`
and :func:`~voproshalych_eval.tiers.tier1.aggregate` — on a sandbox (:mod:`voproshalych_eval.tiers.sandbox`)
and on its parent, for the same questions, with the same embedder:

* the **questions** of golden datasets (``datasets``) and of coverage gaps (``gaps``: the gap's real
  questions; a question labelled in a realq dataset keeps its relevant pages, the others count the pages
  the sandbox added or replaced as relevant — "does the question now retrieve the new text?");
* a **regression** dataset (``regression``): the golden set whose other answers the edit must not push
  out of the top (every question whose top-1 page changed is listed).

Page level is the primary level, since chunk ids change in a sandbox: ``url`` metrics (``hit_rate@K`` for
K in 1, 3, 5 — 1 is production's top-1 —, ``mrr``) over each question's distinct pages; per question the
page rank of the first relevant page before and after (None when not retrieved). The chunk level is
reported only for questions whose relevant chunks exist unchanged in the sandbox. The difference of the
paired per-question values is tested with :func:`voproshalych_eval.metrics.statistics.paired_permutation_test`.

**Tier 3 part** (``tier3``): the gaps' questions (a seeded sample of at most ``tier3_sample``, stated) go through
the internal Tier 3 pipeline on both snapshots — production's top-``top_k`` (1) chunks of the same retrieval,
generation from them (:func:`voproshalych_eval.tiers.tier3.generate_from_chunks`, the production bot prompt) and,
when the judge is an LLM, RAG judge of the bot team's QA method (:func:`~voproshalych_eval.tiers.tier3.judge_sample`). A
generated text is *declined* when the real-users answer patterns
(:data:`voproshalych_eval.analytics.answers.DEFAULT_PATTERNS`) class it as anything but an answer ("не знаю",
"в предоставленном фрагменте нет…"). Reported: answered / declined / errors (by kind) before and after, judged
PASS before and after, and the paired tests of ``answered`` (1 = a real answer) and ``good`` (1 = answered and
PASS; a decline is 0) over the questions with no error on either side. ``tier3 = None`` runs it when an LLM is
configured; ``True`` runs it anyway with the offline extractive generator (labelled offline: it never declines,
so only the judge-free outcome counts are shown); ``False`` skips it.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.db import sandboxes, snapshots
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.metrics.statistics import paired_permutation_test
from voproshalych_eval.plan_parameters import JUDGE
from voproshalych_eval.plans import Plan, spec
from voproshalych_eval.tiers import inputs, llm_calls, tier1, tier3

TIER = "whatif"
CUTOFFS = (1, 3, 5)
#: the page-level keys of the CLI's ``before`` / ``after`` metrics (``url_`` + Tier 1's URL-level key)
KEY_METRICS = ("hit_rate@1", "hit_rate@3", "hit_rate@5", "mrr")
TESTED = ("hit_rate@1", "hit_rate@5", "mrr")
GROUPS = ("main", "regression")

DEFAULTS: dict[str, Any] = spec("whatif").defaults()
#: the judge metric of the Tier 3 part (gap questions have no reference answer: correctness + groundedness on
#: the context, the bot team's QA method)
TIER3_JUDGE = ("rag_judge",)
TIER3_TESTED = ("answered", "good")


def _question_rows(engine: Engine, p: Mapping[str, Any], edited_urls: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every question of the run: ``key``, ``group``, ``source``, ``question``, relevant URLs / chunk ids, and
    ``relevance`` (``labelled`` or ``edited pages``); plus the dataset hashes the results depend on."""
    rows: list[dict[str, Any]] = []
    hashes: list[str] = []

    def add_dataset(ref: Any, group: str) -> None:
        ds = inputs.load_dataset(engine, ref, "golden")
        hashes.append(f"{ds.name}:{ds.content_hash}")
        for key, rec in zip(ds.keys(), ds.records, strict=True):
            rows.append({"key": f"{group}:{ds.name}:{key}", "id": str(key), "group": group, "source": ds.name,
                         "question": str(rec["question"]), "relevant_urls": [str(u) for u in rec.get("relevant_urls") or []],
                         "relevant_chunk_ids": [int(c) for c in rec.get("relevant_chunk_ids") or []],
                         "question_type": rec.get("question_type"), "relevance": "labelled"})

    for ref in p["datasets"] or []:
        add_dataset(ref, "main")
    for gap_id in p["gaps"] or []:
        # heavy: defers the analytics package (snowballstemmer, stop-words)
        from voproshalych_eval.analytics.gaps import gap_questions

        qs = gap_questions(engine, int(gap_id))
        hashes.append(f"gap{gap_id}:" + hashlib.sha256(repr([(q["log_id"], q["question"]) for q in qs]).encode()).hexdigest())
        for q in qs:
            labelled = bool(q.get("relevant_urls"))
            rows.append({"key": f"main:gap{gap_id}:{q['log_id']}", "id": f"gap{gap_id}:{q['log_id']}", "group": "main",
                         "source": f"gap {gap_id}", "question": str(q["question"]),
                         "relevant_urls": list(q["relevant_urls"]) if labelled else list(edited_urls),
                         "relevant_chunk_ids": [int(c) for c in q.get("relevant_chunk_ids") or []] if labelled else [],
                         "question_type": None, "relevance": "labelled" if labelled else "edited pages"})
    if p["regression"]:
        add_dataset(p["regression"], "regression")
    if not rows:
        raise ValueError("what-if needs questions: --dataset NAME and/or --gap ID")
    keys = [r["key"] for r in rows]
    if len(set(keys)) != len(keys):
        raise ValueError("a dataset or gap is given twice")
    return rows, hashes


def build_plan(engine: Engine, params: Mapping[str, Any]) -> WhatIfPlan:
    """The what-if plan: ``sandbox`` (a sandbox snapshot id, made by :func:`tiers.sandbox.create`),
    ``datasets`` (golden dataset names / ids), ``gaps`` (gap ids), ``regression`` (a golden dataset),
    ``embedder`` (default: the one the sandbox was embedded with)."""
    return WhatIfPlan(engine, params)


class WhatIfPlan(Plan):
    """The what-if run: every question retrieved before and after a sandbox's edit (and, for a sample of gap
    questions, answered and judged on both sides: Tier 3), then the paired comparison."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("whatif").resolve(params)
        if p["sandbox"] is None:
            raise ValueError("what-if needs a sandbox (edits: --add, --replace-page, --remove-page)")
        info = sandboxes.get(engine, int(p["sandbox"]))
        if info is None:
            raise LookupError(f"snapshot #{p['sandbox']} is not a sandbox")
        if info.parent_id is None:
            raise LookupError(f"the parent of sandbox #{info.snapshot_id} was deleted: nothing to compare with")
        self.engine = engine
        self.after = after = snapshots.get(engine, info.snapshot_id)
        self.before = before = snapshots.get(engine, info.parent_id)
        edited_urls = [e["url"] for e in info.edits if e["op"] in ("add", "replace")]
        rows, hashes = _question_rows(engine, p, edited_urls)
        self.rows = rows
        self.t3 = t3 = _tier3_setup(engine, p, rows)
        self.tier3_param = p["tier3"]
        self.n_resamples = int(p["n_resamples"])
        emb = cached_embedder(str(p["embedder"] or info.embedder or tier1.default_embedder_name(engine, snapshot=before)),
                              engine)
        #: one retriever per side of the edit (Tier 1's default: exact vector search)
        self.searches = {snap.id: Retriever.open(engine, snapshot=snap, embedder=emb) for snap in (before, after)}
        self.changed = snapshots.diff(engine, before, after).changed_chunks
        self.depth = max(CUTOFFS)
        self.cutoffs = cutoffs = list(CUTOFFS)
        self.by_key = {r["key"]: r for r in rows}
        super().__init__(
            tier=TIER,
            items=[(r["key"], r["key"]) for r in rows],
            batch_size=int(p["batch_size"]),
            concurrency=1,
            params={**_tier3_params(p, t3), "sandbox": after.id, "parent": before.id, "edits": info.edits,
                    "chunk_size": info.chunk_size, "chunk_overlap": info.chunk_overlap,
                    "datasets": [str(d) for d in p["datasets"] or []], "gaps": [int(g) for g in p["gaps"] or []],
                    "regression": p["regression"], "cutoffs": cutoffs, "n_resamples": int(p["n_resamples"]),
                    "batch_size": int(p["batch_size"]), "inputs": hashes, "distance": "cosine (pgvector <=>)",
                    "level": "url (page); chunk where the relevant chunks are unchanged"},
            models={"embedder": emb.name, "dim": emb.dim,
                    **({"generator": t3["generator"].model, "judges": t3["judges"]} if t3 else {})},
            prompts=({**llm_calls.generator_prompts(t3["generator"]),
                      **llm_calls.judge_prompts(TIER3_JUDGE, t3["judge"] if t3["judged"] else None)} if t3 else {}),
            providers=llm_calls.providers_of(t3["generator"], t3["judge"] if t3["judged"] else None) if t3 else [],
            offline=bool(t3 and t3["offline"]),
            dataset_name=", ".join(h.split(":")[0] for h in hashes),
            dataset_hash=hashlib.sha256("|".join(hashes).encode()).hexdigest(),
            snapshot_id=after.id,
            label=f"#{after.id} ← #{before.id}",  # sandbox ← parent snapshot (the tier's title says "what-if")
        )

    def prepare(self) -> None:
        before, after = self.before, self.after
        self.say(bi(f"Песочница {after.label} от снимка {before.label}.", f"Sandbox {after.label} of snapshot {before.label}."))
        for search in self.searches.values():
            search.prepare(self.say)

    def _ranked(self, snap: Any, qs: list[str], recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        search, depth = self.searches[snap.id], self.depth
        hits = search.search(qs, depth)
        url_hits, _ = tier1.deepen_for_pages(qs, hits, search.search, pages=depth, cap=tier1.URL_CHUNK_CAP)
        return tier1.question_items(recs, qs, hits, cutoffs=self.cutoffs, depth=depth, url_hits=url_hits)

    def work_batch(self, keys: list[str]) -> list[dict[str, Any]]:
        batch = [self.by_key[k] for k in keys]
        qs = [r["question"] for r in batch]
        self.say(bi(f"Поиск до и после правки для {len(qs)} вопросов…",
                    f"Retrieving {len(qs)} question(s) before and after the edit…"))
        b = self._ranked(self.before, qs, batch)
        a = self._ranked(self.after, qs, batch)
        depth = self.depth
        out = []
        for r, ib, ia in zip(batch, b, a, strict=True):
            comparable = bool(r["relevant_chunk_ids"]) and not (set(r["relevant_chunk_ids"]) & self.changed)
            out.append({
                "id": r["id"], "group": r["group"], "source": r["source"], "question": r["question"],
                "relevance": r["relevance"], "relevant_urls": r["relevant_urls"],
                "answerable": bool(r["relevant_urls"]),
                "rank_before": ib["first_relevant_rank_url"], "rank_after": ia["first_relevant_rank_url"],
                "top1_before": (ib["url_ranking"] or [None])[0], "top1_after": (ia["url_ranking"] or [None])[0],
                "top_pages_before": ib["url_ranking"][:depth], "top_pages_after": ia["url_ranking"][:depth],
                "top1_chunk_before": (ib["retrieved_ids"] or [None])[0], "top1_chunk_after": (ia["retrieved_ids"] or [None])[0],
                "distance_before": ib["top_distance"], "distance_after": ia["top_distance"],
                "url_before": ib["metrics_url"], "url_after": ia["metrics_url"],
                "chunk_comparable": comparable,
                "chunk_before": ib["metrics_chunk"] if comparable else None,
                "chunk_after": ia["metrics_chunk"] if comparable else None,
                "tier3": None,
            })
        self._tier3_sides(batch, b, a, out)
        return out

    def _tier3_sides(self, batch: list[dict[str, Any]], b: list[dict[str, Any]], a: list[dict[str, Any]],
                     out: list[dict[str, Any]]) -> None:
        """The sampled gap questions of the batch answered (and judged) before and after the edit, into ``out``."""
        t3 = self.t3
        todo = [(i, r) for i, r in enumerate(batch) if t3 is not None and r["key"] in t3["keys"]]
        if todo:
            self.say(bi(f"Tier 3 до и после правки для {len(todo)} вопросов…",
                        f"Tier 3 before and after the edit for {len(todo)} question(s)…"))
        for i, r in todo:
            assert t3 is not None
            out[i]["tier3"] = {side: _tier3_side(self.engine, t3, r["question"], ids, snap)
                               for side, ids, snap in (("before", b[i]["retrieved_ids"], self.before),
                                                       ("after", a[i]["retrieved_ids"], self.after))}

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        t3, rows = self.t3, self.rows
        out = aggregate(records, n_resamples=self.n_resamples)
        if t3 is None:
            out["tier3"] = {"skipped": "off" if self.tier3_param is False else (
                "no gap questions" if not any(r["source"].startswith("gap ") for r in rows) else "no LLM configured")}
        else:
            out.setdefault("tier3", {"n": 0})
            out["tier3"].update(
                offline=t3["offline"], judged=t3["judged"], generator=t3["generator"].model, judges=t3["judges"],
                n_gap_questions=t3["n_questions"], n_sampled=len(t3["keys"]), top_k=t3["top_k"],
                label=bi("офлайн: экстрактивный генератор без LLM, отказов не бывает, судьи нет",
                         "offline: extractive generator without an LLM, never declines, no judge")
                if t3["offline"] else None)
        return out


def _tier3_setup(engine: Engine, p: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Tier 3 part's generator, judge and questions (None when it is skipped: ``tier3`` False, no gap
    question, or ``tier3`` None without an LLM)."""
    gap_keys = sorted(r["key"] for r in rows if r["group"] == "main" and r["source"].startswith("gap "))
    if p["tier3"] is False or not gap_keys:
        return None
    if not 1 <= int(p["top_k"]) <= max(CUTOFFS):
        raise ValueError(f"top_k must be between 1 and {max(CUTOFFS)}, got {p['top_k']}")
    generator = llm_calls.make_generator(engine, model=p["generator_model"], offline=p["offline"])
    if p["tier3"] is None and getattr(generator, "offline", False):
        return None
    judge = llm_calls.tier_judge(engine, p)
    n = len(gap_keys) if p["tier3_sample"] is None else max(1, min(int(p["tier3_sample"]), len(gap_keys)))

    keys = set(gap_keys if n == len(gap_keys) else random.Random(int(p["seed"])).sample(gap_keys, n))
    judged = not getattr(judge, "offline", False)
    return {"generator": generator, "judge": judge, "judged": judged, "keys": keys, "top_k": int(p["top_k"]), "n_questions": len(gap_keys),
            "offline": bool(getattr(generator, "offline", False)), "threshold": float(p["threshold"]),
            "judges": list(getattr(judge, "models", []) or []) if judged else []}


def _tier3_params(p: Mapping[str, Any], t3: dict[str, Any] | None) -> dict[str, Any]:
    """The Tier 3 part's parameters as frozen in the run (``tier3`` resolved to True / False, so a resume
    neither starts nor drops it when the LLM settings change)."""
    out = {k: p[k] for k in ("tier3_sample", "top_k", "generator_model", "threshold", "seed", *(j.name for j in JUDGE))}
    out["tier3"] = t3 is not None
    out["offline"] = True if t3 is not None and t3["offline"] else p["offline"]
    return out


def _tier3_side(engine: Engine, t3: dict[str, Any], question: str, retrieved: list[Any], snap: Any) -> dict[str, Any]:
    """One question on one snapshot through the internal Tier 3 pipeline (top-k of the what-if's retrieval)."""
    ids = [int(c) for c in retrieved[: t3["top_k"]]]
    gen = tier3.generate_from_chunks(engine, t3["generator"], question, ids, snapshot=snap)
    out = {"outcome": gen["outcome"], "answer": gen["answer"], "chunk_ids": ids, "error_kind": gen["error_kind"],
           "reason": gen["reason"], "tokens": gen["tokens"], "answer_class": None, "passed": None, "rag_score": None,
           "judge_failures": None}
    if gen["outcome"] == "answered":  # a decline is an outcome, not an answer: classed like the real users' log
        # heavy: defers the analytics package (snowballstemmer, stop-words)
        from voproshalych_eval.analytics.answers import classify_answers

        out["answer_class"] = str(classify_answers([gen["answer"] or ""]).classes[0])
        if out["answer_class"] != "answer":
            out["outcome"] = "declined"
    if out["outcome"] == "answered" and t3["judged"]:
        sample = llm_calls.make_sample(question, gen["answer"], None, gen["contexts"])
        _, _, res = tier3.judge_sample(t3["judge"], sample, TIER3_JUDGE, threshold=t3["threshold"])
        rag = res["rag_judge"]
        out.update(passed=rag.get("passed"), rag_score=rag.get("score"), judge_failures=rag.get("failures") or None)
    return out


def _tier3_summary(items: Sequence[Mapping[str, Any]], n_resamples: int) -> dict[str, Any] | None:
    """Answered / declined / errors and judged PASS per side, and the paired tests of ``answered`` and ``good``."""
    done = [it["tier3"] for it in items if it.get("tier3")]
    if not done:
        return None
    out: dict[str, Any] = {"n": len(done)}
    for side in ("before", "after"):
        ds = [d[side] for d in done]
        n_ans = sum(1 for d in ds if d["outcome"] == "answered")
        judged = [d for d in ds if d["outcome"] == "answered" and d["passed"] is not None]
        out[side] = {
            "n_answered": n_ans, "n_declined": sum(1 for d in ds if d["outcome"] == "declined"),
            "n_error": sum(1 for d in ds if d["outcome"] == "error"),
            "errors_by_kind": dict(sorted(Counter(d["error_kind"] or "internal" for d in ds
                                                  if d["outcome"] == "error").items())),
            "declines_by_class": dict(sorted(Counter(d["answer_class"] for d in ds if d["outcome"] == "declined").items())),
            "answered_rate": n_ans / len(ds),
            "n_judged": len(judged), "n_passed": sum(1 for d in judged if d["passed"]),
            "n_judge_failures": sum(1 for d in ds if d["outcome"] == "answered" and d["passed"] is None and d["judge_failures"]),
            "pass_rate": (sum(1 for d in judged if d["passed"]) / len(judged)) if judged else None,
        }

    def value(d: Mapping[str, Any], metric: str) -> float | None:
        if metric == "answered":
            return 1.0 if d["outcome"] == "answered" else 0.0
        if d["outcome"] == "declined":
            return 0.0
        return None if d["passed"] is None else (1.0 if d["passed"] else 0.0)

    tests = []
    for metric in TIER3_TESTED:
        pairs = [(value(d["before"], metric), value(d["after"], metric)) for d in done
                 if "error" not in (d["before"]["outcome"], d["after"]["outcome"])]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        if pairs:
            t = paired_permutation_test([x for x, _ in pairs], [y for _, y in pairs], n_resamples=n_resamples)
            tests.append({"metric": metric, **t.to_dict()})
    out["paired_tests"] = tests
    return out


def _block(items: Sequence[Mapping[str, Any]], side: str, n_resamples: int) -> dict[str, Any]:
    """Tier 1's aggregate of one side (``before`` / ``after``) of the given items (both levels)."""
    recs = [{"item_key": str(i), "status": "done", "error": None,
             "result": {"answerable": it["answerable"], "metrics_url": it[f"url_{side}"],
                        "metrics_chunk": it[f"chunk_{side}"], "top_distance": it[f"distance_{side}"],
                        "retrieved_ids": []}}
            for i, it in enumerate(items)]
    agg = tier1.aggregate(recs, keys=[str(i) for i in range(len(items))], k=max(CUTOFFS), n_resamples=n_resamples)
    return {"url": agg["url"], "chunk": agg["chunk"]}


def aggregate(records: Sequence[Mapping[str, Any]], *, n_resamples: int = 2000) -> dict[str, Any]:
    """Before / after aggregates of the main questions and of the regression set, the paired tests of the
    page-level differences and the number of regression questions whose top-1 page changed."""
    done = [r["result"] for r in records if r["status"] == "done"]
    out: dict[str, Any] = {"n_failed_items": sum(1 for r in records if r["status"] != "done")}
    tests: list[dict[str, Any]] = []
    for group in GROUPS:
        items = [it for it in done if it["group"] == group]
        if not items:
            continue
        prefix = "" if group == "main" else "regression_"
        out[f"{prefix}before"] = _block(items, "before", n_resamples)
        out[f"{prefix}after"] = _block(items, "after", n_resamples)
        evaluated = [it for it in items if it["url_before"] is not None and it["url_after"] is not None]
        for key in TESTED:
            if len(evaluated) < 1:
                break
            t = paired_permutation_test([it["url_before"][key] for it in evaluated],
                                        [it["url_after"][key] for it in evaluated], n_resamples=n_resamples)
            tests.append({"group": group, "level": "url", "metric": key, **t.to_dict()})
        if group == "regression":
            out["n_top1_changed"] = sum(1 for it in items if it["top1_before"] != it["top1_after"])
        else:
            summary = _tier3_summary(items, n_resamples)
            if summary is not None:
                out["tier3"] = summary
    out["paired_tests"] = tests
    return out


def report(records: Sequence[Mapping[str, Any]], metrics: Mapping[str, Any], *, sandbox: Mapping[str, Any]) -> dict[str, Any]:
    """The CLI's JSON: ``sandbox``, ``before`` / ``after`` (``metrics`` with ``url_hit_rate@K``, ``url_mrr`` and
    the chunk level as ``chunk_*``; ``n``; counts of questions at page rank <= K), ``per_question`` (``id``,
    ``rank_before``, ``rank_after``, …) and ``regression`` (the same, plus the questions whose top-1 changed)."""
    done = [r["result"] for r in records if r["status"] == "done"]

    def side(block: Mapping[str, Any] | None, items: list[Mapping[str, Any]], which: str) -> dict[str, Any]:
        block = block or {}
        m: dict[str, Any] = {}
        for level in ("url", "chunk"):
            for key, agg in (block.get(level) or {}).items():
                if level == "url" or key in KEY_METRICS:
                    m[f"{level}_{key}"] = agg.get("value")
        ranks = [it[f"rank_{which}"] for it in items if it["answerable"]]
        return {"metrics": m, "n": len(ranks),
                "n_chunk_level": sum(1 for it in items if it["chunk_comparable"]),
                "n_at_rank": {f"<={k}": sum(1 for r in ranks if r is not None and r <= k) for k in CUTOFFS}}

    def per_question(items: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [{"id": it["id"], "source": it["source"], "question": it["question"], "relevance": it["relevance"],
                 "relevant_urls": it["relevant_urls"], "rank_before": it["rank_before"], "rank_after": it["rank_after"],
                 "top1_before": it["top1_before"], "top1_after": it["top1_after"]} for it in items]

    main = [it for it in done if it["group"] == "main"]
    reg = [it for it in done if it["group"] == "regression"]
    tests = list(metrics.get("paired_tests") or [])
    out: dict[str, Any] = {
        "sandbox": dict(sandbox),
        "before": side(metrics.get("before"), main, "before"),
        "after": side(metrics.get("after"), main, "after"),
        "paired_tests": [t for t in tests if t["group"] == "main"],
        "per_question": per_question(main),
        "regression": None,
        "tier3": _tier3_report(metrics.get("tier3"), main),
    }
    if reg:
        out["regression"] = {
            "before": side(metrics.get("regression_before"), reg, "before"),
            "after": side(metrics.get("regression_after"), reg, "after"),
            "paired_tests": [t for t in tests if t["group"] == "regression"],
            "top1_changed": [{"id": it["id"], "question": it["question"], "top1_before": it["top1_before"],
                              "top1_after": it["top1_after"]} for it in reg if it["top1_before"] != it["top1_after"]],
            "per_question": per_question(reg),
        }
    return out


def _tier3_report(summary: Mapping[str, Any] | None, items: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The CLI's ``tier3``: the summary (answered / declined / errors and judged PASS before and after, the paired
    tests, ``offline`` with its label, the sample stated) and every sampled question's outcome on each side."""
    if summary is None:
        return None
    out = dict(summary)
    if "skipped" not in out:
        out["per_question"] = [
            {"id": it["id"], "question": it["question"],
             **{f"{k}_{side}": it["tier3"][side][k] for side in ("before", "after")
                for k in ("outcome", "answer_class", "passed", "answer")}}
            for it in items if it.get("tier3")]
    return out
