"""Synthetic golden-set generation as a run: sampling plan -> one item per slot -> gates -> a stored dataset.

:func:`build_plan` (also used by ``resume``) reads the knowledge base, plans the slots
(:mod:`voproshalych_eval.generation.sampling`; frozen in the run's parameters with the knowledge-base
snapshot the run reads, so a resumed run writes exactly the slots it planned from the same chunks) and
returns an executor plan whose work, per slot:

1. writes a candidate — with the configured LLM (the type's prompt of :mod:`voproshalych_eval.llm.prompts`,
   structured JSON reply, temperature recorded) or, offline, with the labelled template generator
   (:mod:`voproshalych_eval.generation.templates`);
2. applies the per-item gates (:mod:`voproshalych_eval.generation.gates`): ``well_formed`` (a model's preamble
   parsed out, then a self-contained question); ``verbatim``; ``support``
   (the judge's faithfulness of the answer against its source chunks — an LLM judge, or offline the
   heuristic judge; the judge model defaults to the generator); ``qa_fit`` (the answer is not garbled and
   answers its question: the judge's answer relevance); for ``unanswerable`` items ``answerable``
   (the nearest chunk — ``answerability_k`` nearest — is asked whether it answers the question).

An LLM or judge call that fails after its retries fails the item (retried by ``resume``); a failure is
never a drop. :func:`finalize` reads all recorded items, drops near-duplicates (within the new set and
against the heads of the other stored golden sets), keeps at most ``size`` items honouring the type mix,
and stores the set as a new version of dataset ``name`` in the methodology's golden format with
``question_type``, ``question_source = "synthetic"`` and a ``generation`` block per item (generator
model, prompt name and version, temperature, source chunks, offline flag). Nothing is stored while slots
are missing (a cancelled or interrupted run): resume it first.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.datasets.store import (
    Dataset,
    content_hash,
    get_dataset,
    list_datasets,
    store,
    validate_records,
)
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.production import page_centroids, read_chunks
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.generation import gates as G
from voproshalych_eval.generation.sampling import ChunkInfo, Slot, parse_type_mix, plan_slots
from voproshalych_eval.judges import Sample, get_judge
from voproshalych_eval.llm.client import default_client
from voproshalych_eval.llm.prompts import SCHEMAS, prompt_versions, render
from voproshalych_eval.plans import ItemResult, Lazy, Plan, spec

log = logging.getLogger(__name__)

TIER = "dataset_generation"
OFFLINE_GENERATOR = "offline-templates"
PROMPTS = {
    "factual": "gen_factual",
    "paraphrase": "gen_paraphrase",
    "multi_chunk": "gen_multi_chunk",
    "conditional": "gen_conditional",
    "unanswerable": "gen_unanswerable",
    "follow_up": "gen_follow_up",
}
#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("dataset_generation").defaults()


def default_name() -> str:
    return "synthetic_" + datetime.now(UTC).strftime("%Y%m%d_%H%M%S")


def _chunks(engine: Engine, snapshot: Any) -> list[dict[str, Any]]:
    if not snapshot.has_chunk:
        raise LookupError("The knowledge-base snapshot has no chunks; load the demo or connect a database with a 'chunk' table.")
    df = read_chunks(engine, snapshot=snapshot)
    if df.empty:
        raise LookupError("The knowledge base is empty: there is nothing to generate questions from.")
    return [
        {"id": int(r.id), "url": str(r.url), "source_type": r.source_type if isinstance(r.source_type, str) else None,
         "text": str(r.text)}
        for r in df.itertuples(index=False)
    ]


def related_pages(engine: Engine, pages: list[str], snapshot: Any) -> dict[str, list[str]]:
    """For each page, the other pages by decreasing cosine of their centroids (mean of the stored chunk vectors)."""
    vecs = page_centroids(engine, snapshot=snapshot)
    keys = [p for p in pages if p in vecs]
    if len(keys) < 2:
        return {}
    m = np.vstack([vecs[k] for k in keys]).astype(np.float32)
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    sims = m @ m.T
    out: dict[str, list[str]] = {}
    for i, k in enumerate(keys):
        order = [int(j) for j in np.argsort(-sims[i]) if int(j) != i]
        out[k] = [keys[j] for j in order[:5]]
    return out


def _focus_text(text_: str, focus: int) -> str:
    # heavy: defers snowballstemmer, stop-words (via generation.templates)
    from voproshalych_eval.generation.templates import sentences

    sents = sentences(text_)
    if not sents:
        return text_.strip()[:300]
    return sents[focus % len(sents)]


def build_plan(engine: Engine, params: Mapping[str, Any]) -> GenerationPlan:
    """The generation plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return GenerationPlan(engine, params)


class GenerationPlan(Plan):
    """The generation run: slots planned (or read back from the parameters), one item per slot, the gates,
    then the stored dataset (see the module docstring)."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p: dict[str, Any] = spec("dataset_generation").resolve(params)
        p["thresholds"] = {**G.DEFAULT_THRESHOLDS, **dict(p.get("thresholds") or {})}
        self.engine = engine
        self.settings = settings = get_settings()
        self.lang = lang = "en" if p["lang"] == "en" else "ru"
        p["lang"] = lang
        mix = parse_type_mix(p["types"])
        p["types"] = mix
        # one knowledge-base snapshot per run (a resume reads the one the run started with)
        snap = snapshots.resolve(engine, int(p["snapshot_id"])) if p.get("snapshot_id") else snapshots.for_run(engine)
        self.snap = snap
        p["snapshot_id"] = snap.id
        chunks = _chunks(engine, snap)
        self.kb = {c["id"]: c for c in chunks}
        # no LLM configured -> the offline template generator; an LLM run rebuilt so (a resume without its
        # provider) differs in its frozen configuration and the engine refuses to mix it
        self.client = client = None if p["offline"] is True else default_client(settings, engine)
        offline = client is None
        p["offline"] = offline
        if client is not None:
            p["model"] = p["model"] or client.models[0]
        else:
            p["model"] = OFFLINE_GENERATOR
        p["embedder"] = p["embedder"] or settings.embedder
        if not p.get("name"):
            p["name"] = default_name()
        self.slots = _slots(engine, p, chunks, snap, mix)
        self.thresholds = p["thresholds"]
        name = str(p["name"])
        self.embedder = Lazy(self._embedder)
        self.judge = Lazy(self._judge)
        self.search = Lazy(self._retriever)
        prompt_names = ["gen_system", *dict.fromkeys(PROMPTS[t] for t in mix),
                        *(["gen_answerability"] if "unanswerable" in mix else []),
                        *(["answer_relevance"] if set(mix) - {"unanswerable"} else [])]  # the qa_fit judge's prompt
        super().__init__(
            tier=TIER,
            items=[(s.key, s.to_dict()) for s in self.slots],
            concurrency=int(p["concurrency"] or 8),
            params=p,
            models={"generator": p["model"], "judge": None if offline else (p["judge_models"] or [p["model"]]),
                    "embedder": p["embedder"]},
            prompts={} if offline else prompt_versions(prompt_names, lang),
            dataset_name=name,
            snapshot_id=snap.id,
            offline=offline,
            label=f"generate {name}",
        )

    # -- lazily built parts (the first worker thread needing one builds it)

    def _embedder(self) -> Any:
        return cached_embedder(self.params["embedder"], self.engine)

    def _judge(self) -> Any:
        p = self.params
        models = None if self.offline else list(p["judge_models"] or [p["model"]])
        return get_judge(self.settings, self.engine, models=models, offline=True if self.offline else None,
                         lang=self.lang, client=self.client, embedder=self.embedder.get())

    def _retriever(self) -> Retriever:
        """The answerability gate's retriever (exact vector search), the snapshot's vectors made ready first."""
        search = Retriever.open(self.engine, snapshot=self.snap, embedder=self.embedder.get())
        search.prepare()
        return search

    def llm_json(self, prompt: str, fields: dict[str, Any], *, temperature: float, salt: str) -> tuple[dict[str, Any], int]:
        assert self.client is not None
        msgs = [{"role": "system", "content": render("gen_system", lang=self.lang)},
                {"role": "user", "content": render(prompt, lang=self.lang, **fields)}]
        r = self.client.complete(msgs, model=self.params["model"], temperature=temperature,
                                 max_tokens=int(self.params["max_tokens"]), schema=SCHEMAS[prompt], purpose=TIER,
                                 cache_salt=salt)
        return dict(r.parsed or {}), int(r.prompt_tokens or 0) + int(r.completion_tokens or 0)

    # -- the work per slot

    def work(self, payload: dict[str, Any]) -> Any:
        slot = Slot.from_dict(payload)
        missing = [i for i in slot.chunk_ids if i not in self.kb]
        if missing:
            raise LookupError(f"chunk(s) {missing} are no longer in the knowledge base")
        texts = [self.kb[i]["text"] for i in slot.chunk_ids]
        qtype = slot.question_type
        cand, tokens, gen_meta = self._candidate(slot, texts)
        result: dict[str, Any] = {"slot": slot.to_dict(), "question_type": qtype, "generation": gen_meta, "gates": {},
                                  "kept": False, "dropped_by": None, "tokens": tokens}
        question = str((cand or {}).get("question") or "").strip()
        answer = str((cand or {}).get("answer") or "").strip()
        first = str((cand or {}).get("first_question") or "").strip()
        if not cand or not question or (qtype != "unanswerable" and not answer) or (qtype == "follow_up" and not first):
            result["dropped_by"] = "no_template" if self.offline else "generation"
            result["gates"]["generation"] = {"passed": False, "reason": "no usable question in the reply" if not self.offline
                                             else "no template applies to this chunk"}
            return ItemResult(result, tokens=tokens)
        # gate: a self-contained student question — a model's preamble is parsed out, what remains must be a question
        question, first = G.strip_preamble(question), (G.strip_preamble(first) if first else "")
        result.update(question=question, answer=answer, first_question=first or None)
        if not self._form_and_verbatim(result, question, first, texts):
            return ItemResult(result, tokens=tokens)
        if qtype != "unanswerable":
            tokens, passed = self._support_and_fit(result, question, first, answer, texts, tokens)
        else:
            tokens, passed = self._unanswerable(result, question, tokens)
        if not passed:
            result["tokens"] = tokens
            return ItemResult(result, tokens=tokens)
        result["kept"] = True
        result["tokens"] = tokens
        return ItemResult(result, tokens=tokens)

    def _candidate(self, slot: Slot, texts: list[str]) -> tuple[dict[str, Any] | None, int, dict[str, Any]]:
        """The slot's candidate (an LLM reply, or offline a template), the tokens it cost and its ``generation`` block."""
        p, qtype, tokens = self.params, slot.question_type, 0
        gen_meta: dict[str, Any] = {"offline": self.offline, "model": p["model"],
                                    "temperature": None if self.offline else float(p["temperature"]),
                                    "source_chunk_ids": list(slot.chunk_ids), "source_urls": list(slot.urls), "slot": slot.key}
        if self.offline:
            # heavy: defers snowballstemmer, stop-words (via generation.templates)
            from voproshalych_eval.generation.templates import template_item

            cand = template_item(qtype, texts, slot.focus, lang=self.lang)
            gen_meta.update(prompt=None, prompt_version=None, template=(cand or {}).get("template"))
            return cand, tokens, gen_meta
        prompt = PROMPTS[qtype]
        if qtype == "multi_chunk":
            fields = {"chunk_a": texts[0], "chunk_b": texts[1]}
        elif qtype == "unanswerable":
            fields = {"chunk": texts[0]}
        else:
            fields = {"chunk": texts[0], "focus": _focus_text(texts[0], slot.focus)}
        cand, tokens = self.llm_json(prompt, fields, temperature=float(p["temperature"]), salt=slot.key)
        gen_meta.update(prompt=prompt, prompt_version=prompt_versions([prompt], self.lang)[prompt])
        return cand, tokens, gen_meta

    def _form_and_verbatim(self, result: dict[str, Any], question: str, first: str, texts: list[str]) -> bool:
        """The ``well_formed`` and ``verbatim`` gates, recorded in ``result``; False when one drops the item."""
        checks = [G.well_formed_question(question)] + ([G.well_formed_question(first)] if result["question_type"] == "follow_up" else [])
        bad = next((why for ok, why in checks if not ok), None)
        result["gates"]["well_formed"] = {"passed": bad is None, "reason": bad}
        if bad is not None:
            result["dropped_by"] = "well_formed"
            return False
        # gate: the question does not copy its chunk(s)
        thresholds = self.thresholds
        ov = max(G.verbatim_overlap(question, t) for t in texts)
        result["gates"]["verbatim"] = {"value": round(ov, 4), "threshold": thresholds["verbatim"],
                                       "passed": ov < thresholds["verbatim"]}
        if ov >= thresholds["verbatim"]:
            result["dropped_by"] = "verbatim"
            return False
        return True

    def _support_and_fit(self, result: dict[str, Any], question: str, first: str, answer: str, texts: list[str],
                         tokens: int) -> tuple[int, bool]:
        """The ``support`` and ``qa_fit`` gates of an answerable item: (tokens so far, passed)."""
        thresholds = self.thresholds
        judge = self.judge.get()
        user_input = f"{first}\n{question}" if first else question
        res = judge.faithfulness(Sample(user_input=user_input, response=answer, reference=None, retrieved_contexts=texts))
        tokens += sum(int(v or 0) for v in (res.tokens or {}).values() if isinstance(v, int | float))
        if res.score is None:
            raise RuntimeError("support check failed: " + "; ".join(str(f.get("message") or f.get("kind") or f)
                                                                    for f in (res.failures or [])[:3]))
        result["gates"]["support"] = {"value": round(float(res.score), 4), "threshold": thresholds["support"],
                                      "passed": res.score >= thresholds["support"], "judge": judge.label,
                                      "offline": bool(res.offline), "explanation": (res.explanation or "")[:300]}
        if res.score < thresholds["support"]:
            result["dropped_by"] = "support"
            return tokens, False
        # gate: the answer answers its question (not garbled, then the judge's answer relevance)
        fit, t = self._qa_fit(user_input, answer)
        tokens += t
        result["gates"]["qa_fit"] = fit
        if not fit["passed"]:
            result["dropped_by"] = "qa_fit"
            return tokens, False
        return tokens, True

    def _unanswerable(self, result: dict[str, Any], question: str, tokens: int) -> tuple[int, bool]:
        """The ``answerable`` gate of an unanswerable item: (tokens so far, passed)."""
        verdicts, t = self._answerability(question)
        tokens += t
        answered = [v for v in verdicts if v["answers"]]
        result["gates"]["answerable"] = {"passed": not answered, "checked": verdicts}
        if answered:
            result["dropped_by"] = "answerable"
            return tokens, False
        return tokens, True

    def _qa_fit(self, question: str, answer: str) -> tuple[dict[str, Any], int]:
        garbled = G.garbled_answer(answer)
        if garbled is not None:
            return {"passed": False, "reason": garbled}, 0
        judge = self.judge.get()
        res = judge.answer_relevance(Sample(user_input=question, response=answer, reference=None, retrieved_contexts=[]))
        t = sum(int(v or 0) for v in (res.tokens or {}).values() if isinstance(v, int | float))
        if res.score is None:
            raise RuntimeError("question-answer fit check failed: " + "; ".join(
                str(f.get("message") or f.get("kind") or f) for f in (res.failures or [])[:3]))
        thr = float(self.thresholds["qa_fit_offline"] if res.offline else self.thresholds["qa_fit"])
        return {"value": round(float(res.score), 4), "threshold": thr,
                "passed": G.gate_passes("qa_fit", float(res.score), thr), "reason": None,
                "judge": judge.label, "offline": bool(res.offline),
                "explanation": (res.explanation or "")[:300]}, t

    def _answerability(self, question: str) -> tuple[list[dict[str, Any]], int]:
        hits = self.search.get().vector([question], int(self.params["answerability_k"]))[0]
        out, tokens = [], 0
        for h in hits:
            ctext = self.kb.get(h.chunk_id, {}).get("text") or ""
            if self.offline:
                cont = G.content_containment(question, ctext, _stop_words())
                cos = 1.0 - float(h.distance)
                out.append({"chunk_id": h.chunk_id, "answers": G.answered_offline(cont, cos), "containment": round(cont, 4),
                            "cosine": round(cos, 4), "offline": True})
            else:
                parsed, t = self.llm_json("gen_answerability", {"question": question, "chunk": ctext}, temperature=0.0,
                                          salt="answerability")
                tokens += t
                if not isinstance(parsed.get("answers"), bool):
                    raise RuntimeError(f"answerability check: no boolean 'answers' in the reply {parsed!r}")
                out.append({"chunk_id": h.chunk_id, "answers": parsed["answers"], "reason": str(parsed.get("reason") or "")[:300]})
        return out, tokens

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return finalize_records(self.engine, records, slots=self.slots, params=self.params, embedder=self.embedder.get)


def _slots(engine: Engine, p: dict[str, Any], chunks: list[dict[str, Any]], snap: Any, mix: dict[str, Any]) -> list[Slot]:
    """The run's slots: read back from ``p["slots"]`` (a resume), else planned and frozen into ``p``."""
    if p.get("slots"):
        return [Slot.from_dict(s) for s in p["slots"]]
    pages_all = sorted({c["url"] for c in chunks})
    related = related_pages(engine, pages_all, snap) if "multi_chunk" in mix else {}
    sp = plan_slots(
        [ChunkInfo(c["id"], c["url"], c["source_type"]) for c in chunks], size=int(p["size"]), types=mix,
        strategy=p["strategy"], pages=p["pages"], source_types=p["source_types"], oversample=float(p["oversample"]),
        seed=int(p["seed"]), related=related,
    )
    p["slots"] = [s.to_dict() for s in sp.slots]
    p["sampling"] = {"pages_total": sp.pages_total, "pages_planned": sp.pages_planned, "planned_by_type": sp.by_type,
                     "warnings": sp.warnings, "n_slots": len(sp.slots)}
    return sp.slots


def _stop_words() -> frozenset[str]:
    # heavy: defers snowballstemmer, stop-words (via analytics.text_ru)
    from voproshalych_eval.analytics.text_ru import STOP_WORDS

    return STOP_WORDS


def existing_questions(engine: Engine, *, exclude_name: str | None = None) -> list[str]:
    """Questions of the head version of every stored golden dataset (except ``exclude_name``)."""
    out: list[str] = []
    for d in list_datasets(engine, "golden", heads_only=True):
        if d["name"] == exclude_name:
            continue
        out += [str(r.get("question") or "") for r in get_dataset(engine, int(d["id"])).records]
    return [q for q in out if q.strip()]


def _record(res: Mapping[str, Any], kb_texts: Mapping[int, Mapping[str, Any]], lang: str) -> dict[str, Any]:
    qtype = res["question_type"]
    gen = dict(res["generation"])
    src = [int(i) for i in gen.get("source_chunk_ids") or []]
    if qtype == "unanswerable":
        rel: list[int] = []
    else:
        rel = src
    first = rel[0] if rel else None
    rec: dict[str, Any] = {
        "id": "syn_" + str(res["slot"]["key"]),
        "question": res["question"],
        "ground_truth_answer": res.get("answer") or "",
        "chunk_id": first,
        "chunk_text": str(kb_texts[first]["text"]) if first is not None and first in kb_texts else "",
        "confluence_url": str(kb_texts[first]["url"]) if first is not None and first in kb_texts else None,
        "relevant_chunk_ids": rel,
        "relevant_urls": list(dict.fromkeys(str(kb_texts[i]["url"]) for i in rel if i in kb_texts)),
        "question_type": qtype,
        "question_source": "synthetic",
        "generation": {**gen, "lang": lang},
    }
    if res.get("first_question"):
        rec["dialog_context"] = [res["first_question"]]
    return rec


def finalize_records(
    engine: Engine,
    records: list[dict[str, Any]],
    *,
    slots: list[Slot],
    params: Mapping[str, Any],
    embedder: Any,
) -> dict[str, Any]:
    """Near-duplicate gate, selection and storage of the dataset; the run's report (see the module docstring).

    The report's numbers are counts (catalogued in :mod:`voproshalych_eval.metrics.catalog`); the stored
    version is named by ``dataset_ref`` (``name@v3``) and ``dataset_hash``.
    """
    size = int(params["size"])
    mix = dict(params["types"])
    by_key = {r["item_key"]: r for r in records}
    missing = [s.key for s in slots if s.key not in by_key]
    done = [by_key[s.key] for s in slots if s.key in by_key and by_key[s.key]["status"] == "done"]
    failed = [by_key[s.key] for s in slots if s.key in by_key and by_key[s.key]["status"] != "done"]
    dropped: dict[str, int] = dict.fromkeys((*G.GATES, "no_template"), 0)
    for r in done:
        d = r["result"].get("dropped_by")
        if d:
            dropped[d] = dropped.get(d, 0) + 1
    report = _report(params, slots, done, dropped, n_failed=len(failed), n_missing=len(missing))
    if missing:
        report["status"] = "incomplete"
        report["warnings"].append({"code": "incomplete", "n": len(missing),
                                   "message": f"{len(missing)} slot(s) not generated yet: resume the run to store the dataset"})
        return report
    kept = [r["result"] for r in done if r["result"].get("kept")]
    if kept:
        kept = _without_near_duplicates(engine, kept, params, embedder, dropped)
    chosen = set(G.select_kept(
        [(k["slot"]["key"], k["question_type"], bool(k["slot"].get("spare")),
          () if k["question_type"] == "unanswerable" else tuple(k["slot"]["urls"])) for k in kept],
        size=size, mix=mix))
    report["n_surplus"] = len(kept) - len(chosen)
    kept = [k for k in kept if k["slot"]["key"] in chosen]
    if not kept:
        report["status"] = "empty"
        report["warnings"].append({"code": "empty", "message": "no item passed the gates; nothing was stored"})
        return report
    return _store_kept(engine, kept, params, slots, report)


def _report(params: Mapping[str, Any], slots: list[Slot], done: list[dict[str, Any]], dropped: dict[str, int], *,
            n_failed: int, n_missing: int) -> dict[str, Any]:
    """The run's report before anything is stored (``dropped`` is the live count the later gates add to)."""
    meta = dict(params.get("sampling") or {})
    return {
        "dataset": None,
        "dataset_ref": None,
        "dataset_hash": None,
        "n_items": 0,
        "size_requested": int(params["size"]),
        "n_slots": len(slots),
        "pages_total": meta.get("pages_total"),
        "pages_covered": 0,
        "by_type": {},
        "requested_by_type": meta.get("planned_by_type"),
        "dropped": dropped,
        "n_failed_items": n_failed,
        "n_missing_items": n_missing,
        "n_surplus": 0,
        "offline": bool(params.get("offline")),
        "generator": params.get("model"),
        "tokens": sum(int(r["result"].get("tokens") or 0) for r in done),
        "thresholds": dict(params["thresholds"]),
        "warnings": list(meta.get("warnings") or []),
    }


def _without_near_duplicates(engine: Engine, kept: list[dict[str, Any]], params: Mapping[str, Any], embedder: Any,
                             dropped: dict[str, int]) -> list[dict[str, Any]]:
    """The near-duplicate gate: ``kept`` without the items close to another new one or to a stored golden
    question (counted in ``dropped``)."""
    emb = embedder() if callable(embedder) else embedder
    vecs = np.asarray(emb.encode_queries([k["question"] for k in kept]), dtype=np.float32)
    existing = None
    if params.get("compare_existing", True):
        qs = existing_questions(engine, exclude_name=str(params["name"]))
        existing = np.asarray(emb.encode_queries(qs), dtype=np.float32) if qs else None
    dups = G.near_duplicates(vecs, threshold=float(dict(params["thresholds"])["near_duplicate"]), existing=existing)
    survivors = []
    for k, d in zip(kept, dups, strict=True):
        if d is None:
            survivors.append(k)
        else:
            dropped["near_duplicate_existing" if d.existing else "near_duplicate_new"] += 1
    return survivors


def _store_kept(engine: Engine, kept: list[dict[str, Any]], params: Mapping[str, Any], slots: list[Slot],
                report: dict[str, Any]) -> dict[str, Any]:
    """The selected items stored as a new version of dataset ``name``; ``report`` completed with it."""
    ids = sorted({int(i) for k in kept for i in k["generation"].get("source_chunk_ids") or []})
    df = read_chunks(engine, ids=ids, snapshot=params.get("snapshot_id"))
    kb_texts = {int(r.id): {"text": r.text, "url": r.url} for r in df.itertuples(index=False)}
    recs = validate_records([_record(k, kb_texts, str(params.get("lang") or "ru")) for k in kept], "golden",
                            file=f"generated {params['name']}")
    ds = store(engine, Dataset(str(params["name"]), "golden", recs, content_hash(recs),
                               source=f"generated ({'offline templates' if params.get('offline') else params.get('model')})"),
               action="generate", note=f"{len(recs)} items, {len(slots)} slots", snapshot_id=params.get("snapshot_id"))
    report.update(
        status="stored", dataset=ds.name, dataset_ref=f"{ds.name}@v{ds.version}", dataset_hash=ds.content_hash,
        n_items=len(recs),
        pages_covered=len({u for r in recs for u in r["relevant_urls"]}),
        by_type=dict(Counter(r["question_type"] for r in recs)),
    )
    if report["pages_total"] and report["pages_covered"] < report["pages_total"]:
        n_unc = report["pages_total"] - report["pages_covered"]
        report["warnings"].append({"code": "pages_uncovered", "n": n_unc, "message": f"{n_unc} page(s) got no question"})
    return report
