"""The Judge: every LLM-judged metric, on one or several models, with an offline fallback.

``get_judge()`` returns an LLM judge when a provider is configured, otherwise (or with ``offline=True``)
a judge backed by :class:`voproshalych_eval.llm.offline.OfflineJudge` whose results carry
``offline=True`` and the label "offline heuristic".

Per metric and sample: every model (x ``strictness`` runs) is asked concurrently; each reply is parsed
strictly — a reply that cannot be parsed is a *failure* (kept with its raw text), never a score; the
runs of a model are combined (majority vote for AspectCritic, median for SimpleCriteriaScore, mean
otherwise) and the models by the chosen aggregator (``average`` by default, see
:mod:`voproshalych_eval.judges.base`). Scores are on 0–1; 1–5 answers are normalised ``(s - 1) / 4``.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.judges.base import AGGREGATORS, EvaluationResult, Sample, aggregate_scores
from voproshalych_eval.llm.client import LLMCallError, LLMClient, default_client, map_concurrent
from voproshalych_eval.llm.offline import OFFLINE_LABEL, OfflineJudge, default_embedder
from voproshalych_eval.llm.prompts import SCHEMAS, prompt_versions, render

#: metric name -> (fields required on the Sample, prompts used)
METRICS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "faithfulness": (("response", "retrieved_contexts"), ("faithfulness",)),
    "answer_relevance": (("response",), ("answer_relevance",)),
    "answer_correctness": (("response", "reference"), ("answer_correctness",)),
    "e2e_score": (("response", "reference"), ("e2e",)),
    "rag_judge": (("response", "retrieved_contexts"), ("rag_judge",)),
    "aspect_critic": (("response",), ("aspect_critic",)),
    "simple_criteria_score": (("response",), ("simple_criteria",)),
    "rubrics_score": (("response",), ("rubrics",)),
    "response_relevancy": (("response",), ("response_relevancy",)),
    "semantic_similarity": (("response", "reference"), ()),
    # an empty context is legitimate here: production judges cached answers without one
    "show_no_show": (("response",), ("show_no_show", "show_no_show_no_context")),
}

#: run-level aggregate keys (the seed's naming style)
METRIC_KEYS = {m: f"avg_{m}" for m in METRICS}

_VERDICT_RE = re.compile(r"^\s*[\"'«]?\s*(?:(yes)\.?|no\s*:\s*(\S.*?))\s*[\"'»]?\s*$", re.IGNORECASE | re.DOTALL)


def parse_verdict(text: str | None) -> tuple[bool, str] | None:
    """Strict production verdict: ``Yes`` -> (True, ""), ``No: reason`` -> (False, reason); else None.

    Nothing else is accepted ("yesterday", "No, yes…", a bare "No", prose around the verdict)."""
    if text is None:
        return None
    m = _VERDICT_RE.match(text)
    if not m:
        return None
    if m.group(1):
        return True, ""
    return False, m.group(2).strip()


class _Failure(Exception):
    def __init__(self, kind: str, message: str, raw_text: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.raw_text = kind, message, raw_text


def _norm15(s: float, lo: float = 1, hi: float = 5) -> float:
    return (float(s) - lo) / (hi - lo)


class Judge:
    """Every judge metric. Build with :func:`get_judge`. ``offline`` and ``models`` say what judges."""

    def __init__(self, client: LLMClient | None, *, models: list[str] | None = None, aggregate: str = "average",
                 offline: bool = False, use_cache: bool = True, lang: str = "ru", embedder: Any = None,
                 embedder_factory: Callable[[], Any] | None = None, temperature: float = 0.0,
                 max_tokens: int = 1000, run_id: int | None = None) -> None:
        if aggregate.lower() not in AGGREGATORS:
            raise ValueError(f"unknown aggregator '{aggregate}'; use one of {', '.join(AGGREGATORS)}")
        if not offline and client is None:
            raise ValueError("an LLM judge needs a client; use offline=True")
        self.client = client
        self.offline = offline
        self.aggregate = aggregate.lower()
        self.use_cache = use_cache
        self.lang = lang
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.run_id = run_id
        self._embedder = embedder
        self._embedder_factory = embedder_factory
        self._emb_lock = threading.RLock()
        if offline:
            self.models = [OfflineJudge.name]
        else:
            assert client is not None
            self.models = list(models) if models else client.models[:1] or ["gpt-4o-mini"]
        self._offline_judge: OfflineJudge | None = None

    # ------------------------------------------------------------------ helpers
    @property
    def embedder(self) -> Any:
        with self._emb_lock:
            if self._embedder is None:
                self._embedder = self._embedder_factory() if self._embedder_factory else default_embedder()
            return self._embedder

    @property
    def heuristic(self) -> OfflineJudge:
        if self._offline_judge is None:
            self._offline_judge = OfflineJudge(self.embedder, lang=self.lang)
        return self._offline_judge

    @property
    def label(self) -> str:
        return OFFLINE_LABEL if self.offline else ", ".join(self.models)

    def prompts(self, metric: str) -> dict[str, str]:
        names = list(METRICS[metric][1]) + (["judge_system"] if METRICS[metric][1] and metric != "show_no_show" else [])
        return prompt_versions(names, self.lang)

    def _t(self, ru: str, en: str) -> str:
        return en if self.lang == "en" else ru

    def _missing(self, metric: str, sample: Sample, t0: float, scale: str = "0–1",
                 threshold: float | None = None) -> EvaluationResult | None:
        for f in METRICS[metric][0]:
            v = getattr(sample, f)
            if v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, list) and not v):
                return EvaluationResult(
                    metric, None, None, threshold, self._t(f"нет поля {f}", f"field {f} is missing"),
                    failures=[{"kind": "missing_field", "field": f, "message": f"{f} is required for {metric}"}],
                    duration_s=time.perf_counter() - t0, scale=scale, offline=self.offline, aggregate=self.aggregate,
                )
        return None

    def _messages(self, prompt: str, fields: dict[str, Any]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": render("judge_system", lang=self.lang)},
            {"role": "user", "content": render(prompt, lang=self.lang, **fields)},
        ]

    def _extra(self, sample: Sample, with_context: bool = True) -> str:
        parts = []
        if with_context and sample.retrieved_contexts:
            parts.append(render("extra_context", lang=self.lang, context=_ctx(sample.retrieved_contexts)))
        if sample.reference:
            parts.append(render("extra_reference", lang=self.lang, reference=sample.reference))
        return "".join(parts)

    def _run_llm(
        self,
        metric: str,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any] | None,
        extract: Callable[[Any], tuple[float, str, dict[str, Any]]],
        runs: int = 1,
        run_aggregate: str = "average",
        threshold: float | None = None,
        scale: str = "0–1",
        t0: float,
    ) -> EvaluationResult:
        """Ask every model ``runs`` times concurrently, parse, aggregate. ``extract`` gets ``parsed`` (schema) or
        the text and returns (score 0–1, explanation, details) or raises ``_Failure``/``ValueError``."""
        assert self.client is not None
        tasks = [(m, i) for m in self.models for i in range(runs)]

        def one(task: tuple[str, int]) -> tuple[Any, Any]:
            model, i = task
            r = self.client.complete(  # type: ignore[union-attr]
                messages, model=model, temperature=self.temperature, max_tokens=self.max_tokens, schema=schema,
                use_cache=self.use_cache, purpose=metric, run_id=self.run_id, cache_salt=f"run{i}" if i else None,
            )
            try:
                return r, extract(r.parsed if schema is not None else r.text)
            except _Failure as f:
                f.raw_text = f.raw_text if f.raw_text is not None else r.text
                raise f from None
            except (ValueError, TypeError, KeyError) as exc:
                raise _Failure("parse_error", str(exc), r.text) from None

        outcomes = map_concurrent(one, tasks, concurrency=min(len(tasks), self.client.concurrency))
        per_run: dict[str, list[float | None]] = {m: [] for m in self.models}
        explanations: dict[str, str] = {}
        details: dict[str, Any] = {"per_model": {}}
        raw: list[str] = []
        failures: list[dict[str, Any]] = []
        tokens = {"prompt": 0, "completion": 0, "calls": 0, "cached": 0}
        for (model, i), out in zip(tasks, outcomes, strict=True):
            tokens["calls"] += 1
            if isinstance(out, BaseException):
                per_run[model].append(None)
                if isinstance(out, LLMCallError):
                    failures.append({"model": model, "run": i, "kind": out.kind, "message": out.message,
                                     "raw_text": out.raw_text})
                    if out.raw_text is not None and out.kind == "parse_error":
                        raw.append(out.raw_text)
                elif isinstance(out, _Failure):
                    failures.append({"model": model, "run": i, "kind": out.kind, "message": out.message,
                                     "raw_text": out.raw_text})
                    if out.raw_text is not None:
                        raw.append(out.raw_text)
                else:
                    failures.append({"model": model, "run": i, "kind": "error", "message": str(out), "raw_text": None})
                continue
            resp, (score, expl, det) = out
            raw.append(resp.text)
            tokens["prompt"] += resp.prompt_tokens or 0
            tokens["completion"] += resp.completion_tokens or 0
            tokens["cached"] += int(resp.cached)
            per_run[model].append(score)
            explanations.setdefault(model, expl)
            details["per_model"].setdefault(model, []).append(det)
        per_model: dict[str, float | None] = {}
        for m in self.models:
            per_model[m], _ = aggregate_scores(per_run[m], run_aggregate)
        score, why = aggregate_scores(list(per_model.values()), self.aggregate)
        if why and why.startswith("no consensus"):
            failures.append({"model": None, "kind": "no_consensus", "message": why, "raw_text": None})
        if runs > 1:
            details["per_run"] = per_run
        if len(self.models) == 1:
            explanation = next(iter(explanations.values()), "")
        else:
            explanation = "\n".join(f"[{m}] {e}" for m, e in explanations.items())
        return EvaluationResult(
            metric, score, (score >= threshold) if (threshold is not None and score is not None) else None, threshold,
            explanation, per_model, raw, failures, time.perf_counter() - t0, tokens, scale, False, self.aggregate,
            details,
        )

    def _offline_result(self, metric: str, t0: float, score: float | None, explanation: str, *,
                        threshold: float | None = None, scale: str = "0–1", details: dict[str, Any] | None = None,
                        failure: str | None = None) -> EvaluationResult:
        failures = []
        if score is None:
            failures.append({"model": OfflineJudge.name, "kind": failure or "no_score", "message": explanation,
                             "raw_text": None})
        return EvaluationResult(
            metric, score, (score >= threshold) if (threshold is not None and score is not None) else None, threshold,
            explanation, {OfflineJudge.name: score}, [], failures, time.perf_counter() - t0, {}, scale, True,
            self.aggregate, details or {},
        )

    def _unsupported_offline(self, metric: str, t0: float, threshold: float | None = None, scale: str = "0–1"
                             ) -> EvaluationResult:
        msg = self._t(
            f"[{OFFLINE_LABEL}] метрика со свободным критерием требует LLM; подключите провайдера в настройках",
            f"[{OFFLINE_LABEL}] a free-form criterion needs an LLM; configure a provider in Settings",
        )
        return self._offline_result(metric, t0, None, msg, threshold=threshold, scale=scale,
                                    failure="unsupported_offline")

    # ------------------------------------------------------------------ Tier 2/3 metrics
    def faithfulness(self, sample: Sample, threshold: float | None = None) -> EvaluationResult:
        """Share of the response supported by the retrieved contexts (0–1)."""
        t0 = time.perf_counter()
        if (m := self._missing("faithfulness", sample, t0, threshold=threshold)) is not None:
            return m
        if self.offline:
            r = self.heuristic.faithfulness(sample.response or "", sample.retrieved_contexts)
            return self._offline_result("faithfulness", t0, r.score, r.explanation, threshold=threshold, details=r.details)
        msgs = self._messages("faithfulness", {"question": sample.user_input, "context": _ctx(sample.retrieved_contexts),
                                               "answer": sample.response})
        return self._run_llm("faithfulness", msgs, schema=SCHEMAS["faithfulness"], extract=_score_expl,
                             threshold=threshold, t0=t0)

    def answer_relevance(self, sample: Sample, threshold: float | None = None) -> EvaluationResult:
        """How directly and fully the response addresses the question (0–1)."""
        t0 = time.perf_counter()
        if (m := self._missing("answer_relevance", sample, t0, threshold=threshold)) is not None:
            return m
        if self.offline:
            r = self.heuristic.answer_relevance(sample.user_input, sample.response or "")
            return self._offline_result("answer_relevance", t0, r.score, r.explanation, threshold=threshold,
                                        details=r.details)
        msgs = self._messages("answer_relevance", {"question": sample.user_input, "answer": sample.response})
        return self._run_llm("answer_relevance", msgs, schema=SCHEMAS["answer_relevance"], extract=_score_expl,
                             threshold=threshold, t0=t0)

    def answer_correctness(self, sample: Sample, threshold: float | None = None) -> EvaluationResult:
        """Correctness against the reference: the model answers 1–5, normalised ``(s - 1) / 4``."""
        t0 = time.perf_counter()
        scale = "1–5 → 0–1"
        if (m := self._missing("answer_correctness", sample, t0, scale, threshold)) is not None:
            return m
        if self.offline:
            r = self.heuristic.answer_correctness(sample.response or "", sample.reference or "")
            return self._offline_result("answer_correctness", t0, r.score, r.explanation, threshold=threshold,
                                        details=r.details)
        msgs = self._messages("answer_correctness", {"question": sample.user_input, "answer": sample.response,
                                                     "reference": sample.reference})
        return self._run_llm("answer_correctness", msgs, schema=SCHEMAS["answer_correctness"], extract=_score15_expl,
                             threshold=threshold, scale=scale, t0=t0)

    def e2e_score(self, sample: Sample, threshold: float | None = None) -> EvaluationResult:
        """End-to-end user-facing quality: 1–5, normalised to 0–1."""
        t0 = time.perf_counter()
        scale = "1–5 → 0–1"
        if (m := self._missing("e2e_score", sample, t0, scale, threshold)) is not None:
            return m
        if self.offline:
            r = self.heuristic.e2e(sample.user_input, sample.response or "", sample.reference, sample.retrieved_contexts)
            return self._offline_result("e2e_score", t0, r.score, r.explanation, threshold=threshold, details=r.details)
        msgs = self._messages("e2e", {"question": sample.user_input, "answer": sample.response,
                                      "reference": sample.reference})
        return self._run_llm("e2e_score", msgs, schema=SCHEMAS["e2e"], extract=_score15_expl, threshold=threshold,
                             scale=scale, t0=t0)

    def rag_judge(self, sample: Sample, threshold: float = 0.5) -> EvaluationResult:
        """Seed 003: answer_correctness and groundedness (0–1) judged strictly from the chunks, plus an
        error_message. ``score = min(answer_correctness, groundedness)`` — PASS when ``score >= threshold``
        (both criteria must clear the threshold)."""
        t0 = time.perf_counter()
        if (m := self._missing("rag_judge", sample, t0, threshold=threshold)) is not None:
            return m
        if self.offline:
            g = self.heuristic.faithfulness(sample.response or "", sample.retrieved_contexts)
            c = self.heuristic.answer_relevance(sample.user_input, sample.response or "")
            score = None if g.score is None or c.score is None else min(g.score, c.score)
            det = {"answer_correctness": c.score, "groundedness": g.score,
                   "error_message": "" if score is not None and score >= threshold else g.explanation}
            return self._offline_result("rag_judge", t0, score, f"{c.explanation}; {g.explanation}",
                                        threshold=threshold, details=det)
        msgs = [{"role": "user", "content": render("rag_judge", lang=self.lang, question=sample.user_input,
                                                   context=_ctx(sample.retrieved_contexts), answer=sample.response)}]

        def extract(p: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
            ac, gr = float(p["answer_correctness"]), float(p["groundedness"])
            return min(ac, gr), p.get("error_message") or "", {"answer_correctness": ac, "groundedness": gr,
                                                                "error_message": p.get("error_message") or ""}

        res = self._run_llm("rag_judge", msgs, schema=SCHEMAS["rag_judge"], extract=extract, threshold=threshold, t0=t0)
        per = res.details.get("per_model", {})
        for key in ("answer_correctness", "groundedness"):
            vals = [d[0][key] for d in per.values() if d]
            res.details[key], _ = aggregate_scores(vals, self.aggregate if self.aggregate != "consensus" else "average")
        res.details["error_message"] = "; ".join(d[0]["error_message"] for d in per.values() if d and d[0]["error_message"])
        res.details["verdict"] = None if res.passed is None else ("PASS" if res.passed else "FAIL")
        return res

    # ------------------------------------------------------------------ seed 004: general purpose
    def aspect_critic(self, sample: Sample, definition: str, strictness: int = 1) -> EvaluationResult:
        """Binary verdict on a free-form criterion; ``strictness`` runs per model, majority vote (1.0 / 0.0)."""
        t0 = time.perf_counter()
        scale = "binary (0/1)"
        if (m := self._missing("aspect_critic", sample, t0, scale)) is not None:
            return m
        if self.offline:
            return self._unsupported_offline("aspect_critic", t0, scale=scale)
        msgs = self._messages("aspect_critic", {"definition": definition, "question": sample.user_input,
                                                "answer": sample.response, "extra": self._extra(sample)})

        def extract(p: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
            return (1.0 if p["verdict"] else 0.0), p.get("reason", ""), {"verdict": bool(p["verdict"])}

        res = self._run_llm("aspect_critic", msgs, schema=SCHEMAS["aspect_critic"], extract=extract,
                            runs=max(1, strictness), run_aggregate="majority_voting", scale=scale, t0=t0)
        res.details.update({"definition": definition, "strictness": strictness})
        return res

    def simple_criteria_score(self, sample: Sample, definition: str, min_score: float = 0, max_score: float = 5,
                              strictness: int = 1) -> EvaluationResult:
        """Score in [min_score, max_score] normalised ``(s - min) / (max - min)``; median over ``strictness`` runs.
        A score outside the range is a parse failure (not clamped)."""
        t0 = time.perf_counter()
        if max_score <= min_score:
            raise ValueError("max_score must be greater than min_score")
        scale = f"{_num(min_score)}–{_num(max_score)} → 0–1"
        if (m := self._missing("simple_criteria_score", sample, t0, scale)) is not None:
            return m
        if self.offline:
            return self._unsupported_offline("simple_criteria_score", t0, scale=scale)
        schema = {**SCHEMAS["simple_criteria"], "properties": {
            "score": {"type": "number", "minimum": min_score, "maximum": max_score}, "reason": {"type": "string"}}}
        msgs = self._messages("simple_criteria", {"definition": definition, "min_score": _num(min_score),
                                                  "max_score": _num(max_score), "question": sample.user_input,
                                                  "answer": sample.response, "extra": self._extra(sample)})

        def extract(p: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
            s = float(p["score"])
            return (s - min_score) / (max_score - min_score), p.get("reason", ""), {"raw_score": s}

        res = self._run_llm("simple_criteria_score", msgs, schema=schema, extract=extract, runs=max(1, strictness),
                            run_aggregate="median", scale=scale, t0=t0)
        res.details.update({"definition": definition, "min_score": min_score, "max_score": max_score,
                            "strictness": strictness})
        return res

    def rubrics_score(self, sample: Sample, rubrics: dict[str, str]) -> EvaluationResult:
        """The model picks the rubric level (``score1_description`` ... ``scoreN_description``); normalised
        ``(level - lowest) / (highest - lowest)``."""
        t0 = time.perf_counter()
        levels = sorted((int(re.sub(r"\D", "", k) or 0), v) for k, v in rubrics.items())
        if len(levels) < 2:
            raise ValueError("rubrics need at least two levels (score1_description, score2_description, ...)")
        lo, hi = levels[0][0], levels[-1][0]
        scale = f"{lo}–{hi} → 0–1"
        if (m := self._missing("rubrics_score", sample, t0, scale)) is not None:
            return m
        if self.offline:
            return self._unsupported_offline("rubrics_score", t0, scale=scale)
        text = "\n".join(f"Score {n}: {d}" for n, d in levels)
        schema = {**SCHEMAS["rubrics"], "properties": {
            "score": {"type": "integer", "minimum": lo, "maximum": hi}, "reason": {"type": "string"}}}
        msgs = self._messages("rubrics", {"rubrics": text, "question": sample.user_input, "answer": sample.response,
                                          "extra": self._extra(sample)})

        def extract(p: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
            s = int(p["score"])
            return (s - lo) / (hi - lo), p.get("reason", ""), {"level": s}

        return self._run_llm("rubrics_score", msgs, schema=schema, extract=extract, scale=scale, t0=t0)

    def response_relevancy(self, sample: Sample, n_questions: int = 3) -> EvaluationResult:
        """Seed 001: questions generated from the response; score = mean cosine of their embeddings with the
        user input (clipped at 0); a noncommittal response scores 0."""
        t0 = time.perf_counter()
        if (m := self._missing("response_relevancy", sample, t0)) is not None:
            return m
        if self.offline:
            r = self.heuristic.response_relevancy(sample.user_input, sample.response or "")
            return self._offline_result("response_relevancy", t0, r.score, r.explanation, details=r.details)
        msgs = self._messages("response_relevancy", {"answer": sample.response, "n_questions": n_questions})
        q = np.asarray(self.embedder.encode_queries([sample.user_input]), dtype=np.float32)[0]

        def extract(p: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
            qs = [s for s in p["questions"] if isinstance(s, str) and s.strip()]
            if not qs:
                raise ValueError("no generated questions")
            with self._emb_lock:
                E = np.asarray(self.embedder.encode_queries(qs), dtype=np.float32)
            cos = [float(x) for x in (E @ q) / (np.linalg.norm(E, axis=1) * (np.linalg.norm(q) or 1.0) + 1e-12)]
            mean = float(np.mean(np.clip(cos, 0.0, 1.0)))
            score = 0.0 if p["noncommittal"] else mean
            expl = self._t("уклончивый ответ — 0", "noncommittal answer — 0") if p["noncommittal"] else self._t(
                f"средний косинус {mean:.3f}", f"mean cosine {mean:.3f}")
            return score, expl, {"questions": qs, "cosines": cos, "noncommittal": bool(p["noncommittal"])}

        res = self._run_llm("response_relevancy", msgs, schema=SCHEMAS["response_relevancy"], extract=extract, t0=t0)
        res.details["embedder"] = getattr(self.embedder, "name", None)
        return res

    def semantic_similarity(self, sample: Sample, threshold: float | None = None) -> EvaluationResult:
        """Seed 002: embedding cosine of response and reference (no LLM, not a heuristic). With a threshold the
        score becomes 1.0 / 0.0 (raw cosine kept in ``details``)."""
        from voproshalych_eval.metrics.similarity import cosine_similarity

        t0 = time.perf_counter()
        scale = "cosine (−1…1)" if threshold is None else "binary (cosine ≥ threshold)"
        if (m := self._missing("semantic_similarity", sample, t0, scale, threshold)) is not None:
            return m
        with self._emb_lock:
            a = np.asarray(self.embedder.encode_passages([sample.response]), dtype=np.float32)[0]
            b = np.asarray(self.embedder.encode_passages([sample.reference]), dtype=np.float32)[0]
        raw = cosine_similarity(a, b)
        score = raw if threshold is None else (1.0 if raw >= threshold else 0.0)
        name = getattr(self.embedder, "name", "embedder")
        return EvaluationResult(
            "semantic_similarity", score, None if threshold is None else raw >= threshold, threshold,
            self._t(f"косинус эмбеддингов ({name}) {raw:.3f}", f"embedding cosine ({name}) {raw:.3f}"),
            {name: score}, [], [], time.perf_counter() - t0, {}, scale, False, self.aggregate,
            {"raw_score": raw, "embedder": name},
        )

    # ------------------------------------------------------------------ production show/no-show
    def show_no_show(self, question: str, context: str, answer: str) -> EvaluationResult:
        """The production judge: ``Yes`` (1.0, show) or ``No: reason`` (0.0); anything else is a parse failure.

        An empty ``context`` uses the production prompt without a context (``show_no_show_no_context``), as
        production does for cached answers; ``details["with_context"]`` says which was used."""
        t0 = time.perf_counter()
        scale = "binary (Yes=1 / No=0)"
        with_context = bool(context and context.strip())
        if self.offline:
            text = self.heuristic.show_no_show(question, context, answer)
            v = parse_verdict(text)
            assert v is not None
            return self._offline_result("show_no_show", t0, 1.0 if v[0] else 0.0, f"[{OFFLINE_LABEL}] {text}",
                                        scale=scale, details={"verdict": "Yes" if v[0] else "No", "reason": v[1],
                                                              "with_context": with_context})
        if with_context:
            content = render("show_no_show", lang=self.lang, question=question, context=context, answer=answer)
        else:
            content = render("show_no_show_no_context", lang=self.lang, question=question, answer=answer)
        msgs = [{"role": "user", "content": content}]

        def extract(text: str) -> tuple[float, str, dict[str, Any]]:
            v = parse_verdict(text)
            if v is None:
                raise _Failure("parse_error", "reply is neither 'Yes' nor 'No: reason'", text)
            return (1.0 if v[0] else 0.0), v[1], {"verdict": "Yes" if v[0] else "No", "reason": v[1],
                                                  "with_context": with_context}

        res = self._run_llm("show_no_show", msgs, schema=None, extract=extract, scale=scale, t0=t0)
        res.passed = None if res.score is None else res.score >= 0.5
        return res

    # ------------------------------------------------------------------ dispatch and batches
    def evaluate(self, metric: str, sample: Sample | dict[str, Any], **cfg: Any) -> EvaluationResult:
        """Run ``metric`` (a key of :data:`METRICS`) on one sample with metric options ``cfg``."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric '{metric}'; use one of {', '.join(METRICS)}")
        s = sample if isinstance(sample, Sample) else Sample.from_dict(sample)
        if metric == "show_no_show":
            t0 = time.perf_counter()
            if (m := self._missing("show_no_show", s, t0)) is not None:
                return m
            return self.show_no_show(s.user_input, _ctx(s.retrieved_contexts), s.response or "")
        return getattr(self, metric)(s, **cfg)

    def evaluate_many(self, metric: str, samples: Sequence[Sample | dict[str, Any]], *,
                      progress: Callable[[int, int], None] | None = None, cancel: threading.Event | None = None,
                      concurrency: int | None = None, **cfg: Any) -> list[EvaluationResult | None]:
        """``evaluate`` over samples concurrently (order kept). An item that raised becomes a result with
        score None and the error as failure; items skipped by ``cancel`` are None."""
        from voproshalych_eval.llm.client import Cancelled

        conc = 1 if self.offline else (concurrency or (self.client.concurrency if self.client else 1))
        outs = map_concurrent(lambda s: self.evaluate(metric, s, **cfg), list(samples), concurrency=conc,
                              progress=progress, cancel=cancel)
        results: list[EvaluationResult | None] = []
        for o in outs:
            if isinstance(o, Cancelled):
                results.append(None)
            elif isinstance(o, BaseException):
                results.append(EvaluationResult(metric, None, failures=[{"kind": "error", "message": str(o)}],
                                                offline=self.offline, aggregate=self.aggregate))
            else:
                results.append(o)
        return results

    async def aevaluate(self, metric: str, sample: Sample | dict[str, Any], **cfg: Any) -> EvaluationResult:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(self.evaluate, metric, sample, **cfg))


def _async_variant(name: str) -> Callable[..., Any]:
    async def method(self: Judge, *args: Any, **kwargs: Any) -> EvaluationResult:
        return await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(getattr(self, name), *args, **kwargs))

    method.__name__ = f"a{name}"
    method.__doc__ = f"Async :meth:`{name}`."
    return method


for _name in (*[m for m in METRICS if m != "show_no_show"], "show_no_show"):
    setattr(Judge, f"a{_name}", _async_variant(_name))


def _ctx(contexts: Sequence[str]) -> str:
    if len(contexts) == 1:
        return contexts[0]
    return "\n\n".join(f"[{i + 1}] {c}" for i, c in enumerate(contexts))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _score_expl(p: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
    return float(p["score"]), p.get("explanation", ""), {"raw_score": p["score"]}


def _score15_expl(p: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
    return _norm15(p["score"]), p.get("explanation", ""), {"raw_score": p["score"]}


def get_judge(settings: Any = None, engine: Engine | None = None, *, models: list[str] | None = None,
              aggregate: str = "average", offline: bool | None = None, use_cache: bool = True, lang: str = "ru",
              embedder: Any = None, client: LLMClient | None = None, run_id: int | None = None,
              **client_kwargs: Any) -> Judge:
    """An LLM judge over the configured providers, or the offline heuristic judge when none is configured
    (or ``offline=True``). ``models=None`` -> the first configured model."""
    if settings is None:
        from voproshalych_eval.config import get_settings

        settings = get_settings()
    factory = functools.partial(default_embedder, settings, engine)
    if offline is not True:
        client = client or default_client(settings, engine, **client_kwargs)
        if client is not None:
            return Judge(client, models=models, aggregate=aggregate, use_cache=use_cache, lang=lang,
                         embedder=embedder, embedder_factory=factory, run_id=run_id)
        if offline is False:
            raise RuntimeError("No LLM provider is configured (see docs/LLM.md); use the offline judge instead.")
    return Judge(None, aggregate=aggregate, offline=True, use_cache=use_cache, lang=lang, embedder=embedder,
                 embedder_factory=factory, run_id=run_id)
