"""The Judge: every judge metric of :data:`~voproshalych_eval.judges.judge_metrics.JUDGE_METRICS`, on one or
several models, with an offline fallback.

``get_judge()`` returns an LLM judge when a provider is configured, otherwise (or with ``offline=True``)
a judge backed by :class:`voproshalych_eval.llm.offline.OfflineJudge` whose results carry
``offline=True`` and the label "offline heuristic".

One path for every metric (:meth:`Judge.evaluate`): options checked against the metric's table entry;
a missing required field -> *not applicable* (``failure_kind="not_applicable"``, no score, not a
failure); an empty response -> the scale's lowest value by rule (``empty_answer=True``, never left
out); otherwise every model (× ``strictness`` runs) is asked concurrently, each reply parsed strictly —
a reply that cannot be parsed is a ``parse`` failure (raw text kept), a call that never returned one a
``transport`` failure, never a score. The runs of a model are combined by the metric's run aggregator and
the models by the judge's aggregator, each only when its quorum answered
(:mod:`voproshalych_eval.judges.base`). With a verdict (a threshold, or a binary metric) and several models under
a vote aggregator (average, median, majority_voting) ``passed`` is the models' majority, a tie *undecided*
(``passed=None``, ``undecided=True``). Every call is counted per model in ``details["calls"]`` (asked, failed by
kind), so a jury's failures show even when the quorum still gave a score. Scores are on the metric's own scale (``score_range``): the
methodology's 1–5 for answer correctness, the integer level for RubricsScore, 0–1 otherwise (−1–1 for a
cosine); ``score_norm`` gives 0–1.

Every metric is also a method of the same name (``judge.faithfulness(sample, threshold=0.7)``,
``judge.aspect_critic(sample, "definition", strictness=3)``; positional options in table order) and an
async ``a<metric>`` variant.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.judges.base import (
    AGGREGATORS,
    VOTE_AGGREGATORS,
    EvaluationResult,
    Sample,
    combine,
    vote,
)
from voproshalych_eval.judges.judge_metrics import (
    JUDGE_METRICS,
    JudgeMetric,
    ScoreScale,
    contexts_text,
    metric_key,
    parse_verdict,
)
from voproshalych_eval.llm.client import Cancelled, LLMCallError, LLMClient, default_client, map_concurrent
from voproshalych_eval.llm.offline import OFFLINE_LABEL, OfflineJudge, default_embedder
from voproshalych_eval.llm.prompts import SCHEMAS, prompt_versions, render
from voproshalych_eval.metrics.failures import category, item_kind
from voproshalych_eval.metrics.similarity import cosine_similarity

__all__ = ["METRICS", "METRIC_KEYS", "Judge", "get_judge", "parse_verdict"]

#: the judge metrics by key (the table; see :mod:`voproshalych_eval.judges.judge_metrics`)
METRICS: dict[str, JudgeMetric] = JUDGE_METRICS
#: run-level aggregate keys (the methodology's naming style)
METRIC_KEYS = {m: metric_key(m) for m in METRICS}


class _Failure(VoproshalychEvalError):
    def __init__(self, kind: str, message: str, raw_text: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.raw_text = kind, message, raw_text


class Judge:
    """Every judge metric. Build with :func:`get_judge`. ``offline`` and ``models`` say what judges.

    ``quorum`` / ``vote_quorum``: how many models / ``strictness`` votes must answer (``"all"``,
    ``"majority"``, ``"any"`` or a number; default per aggregator, see :mod:`voproshalych_eval.judges.base`).
    ``embedder_loader(name)`` loads the extra embedding models Semantic Similarity may be asked for.
    """

    def __init__(self, client: LLMClient | None, *, models: list[str] | None = None, aggregate: str = "average",
                 offline: bool = False, use_cache: bool = True, lang: str = "ru", embedder: Any = None,
                 embedder_factory: Callable[[], Any] | None = None, temperature: float = 0.0,
                 max_tokens: int = 1000, run_id: int | None = None, quorum: str | int | None = None,
                 vote_quorum: str | int | None = None,
                 embedder_loader: Callable[[str], Any] | None = None,
                 versions: Mapping[str, Any] | None = None) -> None:
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
        self.quorum = quorum
        self.vote_quorum = vote_quorum
        self._embedder = embedder
        self._embedder_factory = embedder_factory
        self._embedder_loader = embedder_loader
        self._embedders: dict[str, Any] = {}
        self._emb_lock = threading.RLock()
        if offline:
            self.models = [OfflineJudge.name]
        else:
            assert client is not None
            self.models = list(models) if models else client.models[:1] or ["gpt-4o-mini"]
        self._offline_judge: OfflineJudge | None = None
        #: aligned versions by metric (:mod:`voproshalych_eval.judges.versions`): their block goes in front of the prompt
        self.versions: dict[str, Any] = dict(versions or {})

    # ------------------------------------------------------------------ helpers
    @property
    def embedder(self) -> Any:
        with self._emb_lock:
            if self._embedder is None:
                self._embedder = self._embedder_factory() if self._embedder_factory else default_embedder()
            return self._embedder

    def embedder_named(self, name: str) -> Any:
        """The judge's embedder when ``name`` is its name, else one loaded by ``embedder_loader`` (cached)."""
        with self._emb_lock:
            if name == getattr(self.embedder, "name", None):
                return self.embedder
            if name not in self._embedders:
                if self._embedder_loader is None:
                    # heavy: defers pandas (via embeddings)
                    from voproshalych_eval.embeddings import get_embedder

                    self._embedders[name] = get_embedder(name)
                else:
                    self._embedders[name] = self._embedder_loader(name)
            return self._embedders[name]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._emb_lock:
            return np.asarray(self.embedder.encode_queries(list(texts)), dtype=np.float32)

    @property
    def heuristic(self) -> OfflineJudge:
        if self._offline_judge is None:
            self._offline_judge = OfflineJudge(self.embedder, lang=self.lang)
        return self._offline_judge

    @property
    def label(self) -> str:
        return OFFLINE_LABEL if self.offline else ", ".join(self.models)

    def prompts(self, metric: str) -> dict[str, str]:
        spec = METRICS[metric]
        names = ([spec.prompt] if spec.prompt else []) + list(spec.other_prompts)
        names += ["judge_system"] if spec.prompt and spec.system_prompt else []
        out = prompt_versions(names, self.lang)
        if metric in self.versions:
            out["aligned_version"] = self.versions[metric].version
        return out

    def t(self, ru: str, en: str) -> str:
        return en if self.lang == "en" else ru

    def _result(self, spec: JudgeMetric, scale: ScoreScale, cfg: Mapping[str, Any], t0: float, score: float | None,
                explanation: str, **kw: Any) -> EvaluationResult:
        threshold = cfg.get("threshold")
        passed = None
        if score is not None and threshold is not None:
            passed = score >= threshold
        elif score is not None and spec.passes_at is not None:
            passed = score >= spec.passes_at
        cut = threshold if threshold is not None else spec.passes_at
        per_model = kw.get("per_model") or {}
        if cut is not None and self.aggregate in VOTE_AGGREGATORS and sum(v is not None for v in per_model.values()) >= 2:
            # a jury's verdict is its majority under every aggregator that is a vote; a tie is undecided
            verdict, undecided = vote(list(per_model.values()), float(cut))
            if score is not None or undecided:
                passed = verdict
                kw["undecided"] = kw.get("undecided") or undecided
        return EvaluationResult(
            spec.key, score, passed, threshold, explanation, duration_s=time.perf_counter() - t0, scale=scale.label,
            offline=kw.pop("offline", self.offline), aggregate=self.aggregate, score_range=(scale.low, scale.high), **kw)

    # ------------------------------------------------------------------ the one path
    def evaluate(self, metric: str, sample: Sample | dict[str, Any], *args: Any, **cfg: Any) -> EvaluationResult:
        """Run ``metric`` (a key of :data:`METRICS`) on one sample with metric options ``cfg`` (positional
        ``args`` fill the options in table order)."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric '{metric}'; use one of {', '.join(METRICS)}")
        spec = METRICS[metric]
        if len(args) > len(spec.options):
            raise TypeError(f"{metric} takes at most {len(spec.options)} positional option(s)")
        for opt, value in zip(spec.options, args, strict=False):
            if opt.name in cfg:
                raise TypeError(f"{metric}: option {opt.name} given twice")
            cfg[opt.name] = value
        s = sample if isinstance(sample, Sample) else Sample.from_dict(
            sample, require_question=spec.prompt is not None)
        t0 = time.perf_counter()
        opts = spec.resolve(cfg)
        scale = spec.scale(opts)
        details = {k: v for k, v in opts.items() if v is not None and k != "threshold"}
        for f in spec.required:
            v = getattr(s, f)
            if v is None or (f != "response" and ((isinstance(v, str) and not v.strip()) or (isinstance(v, list) and not v))):
                return self._result(
                    spec, scale, opts, t0, None, self.t(f"нет поля {f}", f"field {f} is missing"), details=details,
                    failures=[{"kind": "missing_field", "field": f, "message": f"{f} is required for {metric}"}],
                    failure_kind="not_applicable")
        if "response" in spec.required and not (s.response or "").strip():
            return self._result(
                spec, scale, opts, t0, spec.empty_score(scale), self.t(
                    "пустой ответ — наименьшая оценка шкалы по правилу", "empty answer — the scale's lowest score by rule"),
                details={**details, "rule": "empty answer"}, empty_answer=True,
                offline=self.offline and spec.prompt is not None)
        if spec.prompt is None:
            return self._semantic_similarity(spec, s, opts, scale, t0, details)
        if self.offline:
            if spec.offline is None:
                msg = self.t(
                    f"[{OFFLINE_LABEL}] метрика со свободным критерием требует LLM; подключите провайдера в настройках",
                    f"[{OFFLINE_LABEL}] a free-form criterion needs an LLM; configure a provider in Settings")
                return self._result(spec, scale, opts, t0, None, msg, details=details,
                                    per_model={OfflineJudge.name: None}, failure_kind="not_applicable",
                                    failures=[{"model": OfflineJudge.name, "kind": "unsupported_offline",
                                               "message": msg, "raw_text": None}])
            score, expl, det = spec.offline(self.heuristic, s, opts)
            res = self._result(
                spec, scale, opts, t0, score, expl, details={**details, **det}, per_model={OfflineJudge.name: score},
                failure_kind=None if score is not None else "error", n_asked=1, n_answered=int(score is not None),
                failures=[] if score is not None else [{"model": OfflineJudge.name, "kind": "no_score",
                                                        "message": expl, "raw_text": None}])
        else:
            res = self._run_llm(spec, s, opts, scale, t0, details)
        if spec.post is not None:
            spec.post(res, opts, self)
        return res

    def _messages(self, spec: JudgeMetric, s: Sample, cfg: Mapping[str, Any]) -> list[dict[str, str]]:
        assert spec.prompt is not None and spec.fields is not None
        prompt = spec.pick_prompt(s) if spec.pick_prompt is not None else spec.prompt
        user = {"role": "user", "content": render(prompt, lang=self.lang, **spec.fields(s, cfg, self))}
        if spec.key in self.versions:
            user["content"] = self.versions[spec.key].apply(user["content"], self.lang)
        if not spec.system_prompt:
            return [user]
        return [{"role": "system", "content": render("judge_system", lang=self.lang)}, user]

    def _run_llm(self, spec: JudgeMetric, s: Sample, cfg: Mapping[str, Any], scale: ScoreScale, t0: float,
                 details_in: dict[str, Any]) -> EvaluationResult:
        """Ask every model ``runs`` times concurrently, parse, combine with quorums."""
        assert self.client is not None and spec.extract is not None
        messages = self._messages(spec, s, cfg)
        schema = None
        if spec.schema is not None:
            schema = SCHEMAS[spec.schema]
            schema = spec.schema_override(schema, cfg) if spec.schema_override else schema
        runs = max(1, int(cfg.get(spec.runs_option) or 1)) if spec.runs_option else 1
        ctx: dict[str, Any] = {"judge": self, "sample": s, **(spec.prepare(self, s, cfg) if spec.prepare else {})}
        tasks = [(m, i) for m in self.models for i in range(runs)]
        extract = spec.extract

        def one(task: tuple[str, int]) -> tuple[Any, Any]:
            model, i = task
            r = self.client.complete(  # type: ignore[union-attr]
                messages, model=model, temperature=self.temperature, max_tokens=self.max_tokens, schema=schema,
                use_cache=self.use_cache, purpose=spec.key, run_id=self.run_id, cache_salt=f"run{i}" if i else None,
            )
            try:
                return r, extract(r.parsed if schema is not None else r.text, cfg, ctx)
            except (ValueError, TypeError, KeyError) as exc:
                f = _Failure("parse_error", str(exc), r.text)
                f.prompt_tokens, f.completion_tokens = r.prompt_tokens, r.completion_tokens  # type: ignore[attr-defined]
                raise f from None

        outcomes = map_concurrent(one, tasks, concurrency=min(len(tasks), self.client.concurrency))
        per_run: dict[str, list[float | None]] = {m: [] for m in self.models}
        explanations: dict[str, str] = {}
        details: dict[str, Any] = {**details_in, "per_model": {}}
        raw: list[str] = []
        failures: list[dict[str, Any]] = []
        tokens = {"prompt": 0, "completion": 0, "calls": 0, "cached": 0}
        for (model, i), out in zip(tasks, outcomes, strict=True):
            tokens["calls"] += 1
            if isinstance(out, BaseException):
                per_run[model].append(None)
                if isinstance(out, LLMCallError | _Failure):
                    failures.append({"model": model, "run": i, "kind": out.kind, "message": out.message,
                                     "raw_text": out.raw_text})
                    # a reply that came back unusable still spent tokens
                    tokens["prompt"] += getattr(out, "prompt_tokens", None) or 0
                    tokens["completion"] += getattr(out, "completion_tokens", None) or 0
                    if out.raw_text is not None and out.kind == "parse_error":
                        raw.append(out.raw_text)
                else:
                    failures.append({"model": model, "run": i, "kind": "error", "message": str(out), "raw_text": None})
                continue
            resp, ext = out
            raw.append(resp.text)
            tokens["prompt"] += resp.prompt_tokens or 0
            tokens["completion"] += resp.completion_tokens or 0
            tokens["cached"] += int(resp.cached)
            per_run[model].append(ext.score)
            explanations.setdefault(model, ext.explanation)
            details["per_model"].setdefault(model, []).append(ext.details)
        rng = (scale.low, scale.high)
        per_model: dict[str, float | None] = {}
        for m in self.models:
            c = combine(per_run[m], spec.run_aggregate, quorum=self.vote_quorum, scale=rng)
            per_model[m] = c.score
            if c.kind is not None:
                failures.append({"model": m, "kind": c.kind, "message": c.reason, "raw_text": None})
        total = combine(list(per_model.values()), self.aggregate, quorum=self.quorum, scale=rng)
        if total.kind is not None:
            failures.append({"model": None, "kind": total.kind, "message": total.reason, "raw_text": None})
        if runs > 1:
            details["per_run"] = per_run
        # every call counted per model: how many were asked and why those without a reply failed (by category),
        # so a jury's per-call failures show even when the quorum still gave a score
        details["calls"] = {m: {"n_calls": runs, "failure_kinds": {}} for m in self.models}
        for f in failures:
            if "run" in f and f.get("model") in details["calls"]:
                kinds = details["calls"][f["model"]]["failure_kinds"]
                kinds[category(f["kind"])] = kinds.get(category(f["kind"]), 0) + 1
        n_answered = sum(1 for v in per_run.values() for x in v if x is not None)
        details["models_asked"], details["models_answered"] = total.n_asked, total.n_answered
        if len(self.models) == 1:
            explanation = next(iter(explanations.values()), "")
        else:
            explanation = "\n".join(f"[{m}] {e}" for m, e in explanations.items())
        undecided = total.kind == "undecided" or (
            len(self.models) == 1 and total.score is None and any(f.get("kind") == "undecided" for f in failures))
        return self._result(
            spec, scale, cfg, t0, total.score, explanation, per_model=per_model, raw_replies=raw, failures=failures,
            tokens=tokens, details=details, n_asked=len(tasks), n_answered=n_answered,
            partial=total.score is not None and n_answered < len(tasks), undecided=undecided,
            failure_kind=None if total.score is not None else (
                "undecided" if undecided else item_kind(failures, n_answered=n_answered)))

    def _semantic_similarity(self, spec: JudgeMetric, s: Sample, cfg: Mapping[str, Any], scale: ScoreScale, t0: float,
                             details: dict[str, Any]) -> EvaluationResult:
        """Ragas Semantic Similarity: embedding cosine of response and reference (no LLM, not a heuristic) over one or several
        embedding models (``embedders``), combined by the judge's aggregator; with a threshold each model's
        score becomes 1.0 / 0.0 (raw cosines kept in ``details``)."""
        names = list(cfg.get("embedders") or [getattr(self.embedder, "name", "embedder")])
        threshold = cfg.get("threshold")
        per_model: dict[str, float | None] = {}
        raw_cos: dict[str, float | None] = {}
        failures: list[dict[str, Any]] = []
        for name in names:
            try:
                emb = self.embedder_named(name)
                with self._emb_lock:
                    a = np.asarray(emb.encode_passages([s.response]), dtype=np.float32)[0]
                    b = np.asarray(emb.encode_passages([s.reference]), dtype=np.float32)[0]
                raw = cosine_similarity(a, b)
            except Exception as exc:  # noqa: BLE001 - one embedder failing is a counted failure of that model
                per_model[name] = raw_cos[name] = None
                failures.append({"model": name, "kind": "error", "message": f"{type(exc).__name__}: {exc}",
                                 "raw_text": None})
                continue
            raw_cos[name] = raw
            per_model[name] = raw if threshold is None else (1.0 if raw >= threshold else 0.0)
        total = combine(list(per_model.values()), self.aggregate, quorum=self.quorum, scale=(scale.low, scale.high))
        if total.kind is not None:
            failures.append({"model": None, "kind": total.kind, "message": total.reason, "raw_text": None})
        shown = ", ".join(f"{n} {v:.3f}" for n, v in raw_cos.items() if v is not None)
        return EvaluationResult(
            spec.key, total.score, None if threshold is None or total.score is None else total.score >= 0.5, threshold,
            self.t(f"косинус эмбеддингов ({shown})", f"embedding cosine ({shown})"), per_model, [], failures,
            time.perf_counter() - t0, {}, scale.label, False, self.aggregate,
            {**details, "raw_score": raw_cos[names[0]] if len(names) == 1 else None, "raw_cosines": raw_cos,
             "embedders": names, "embedder": names[0] if len(names) == 1 else None},
            (scale.low, scale.high), len(names), sum(1 for v in per_model.values() if v is not None), total.partial,
            None if total.score is not None else item_kind(failures, n_answered=total.n_answered),
        )

    # ------------------------------------------------------------------ production show/no-show
    def show_no_show(self, question: str, context: str, answer: str) -> EvaluationResult:
        """The production judge: ``Yes`` (1.0, show) or ``No: reason`` (0.0); anything else is a parse failure.

        An empty ``context`` uses the production prompt without a context (``show_no_show_no_context``), as
        production does for cached answers; ``details["with_context"]`` says which was used."""
        return self.evaluate("show_no_show", Sample(question, answer, None, [context] if (context or "").strip() else []))

    # ------------------------------------------------------------------ batches
    def evaluate_many(self, metric: str, samples: Sequence[Sample | dict[str, Any]], *,
                      progress: Callable[[int, int], None] | None = None, cancel: threading.Event | None = None,
                      concurrency: int | None = None, **cfg: Any) -> list[EvaluationResult | None]:
        """``evaluate`` over samples concurrently (order kept). An item that raised becomes a result with
        score None and the error as failure; items skipped by ``cancel`` are None."""
        METRICS[metric].resolve(cfg) if metric in METRICS else None  # bad options fail once, before any call
        conc = 1 if self.offline else (concurrency or (self.client.concurrency if self.client else 1))
        outs = map_concurrent(lambda s: self.evaluate(metric, s, **cfg), list(samples), concurrency=conc,
                              progress=progress, cancel=cancel, spare_threads=0 if self.offline else conc)
        results: list[EvaluationResult | None] = []
        for o in outs:
            if isinstance(o, Cancelled):
                results.append(None)
            elif isinstance(o, BaseException):
                results.append(EvaluationResult(metric, None, failures=[{"kind": "error", "message": str(o)}],
                                                offline=self.offline, aggregate=self.aggregate, failure_kind="error"))
            else:
                results.append(o)
        return results

    async def aevaluate(self, metric: str, sample: Sample | dict[str, Any], **cfg: Any) -> EvaluationResult:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(self.evaluate, metric, sample, **cfg))


def _metric_method(key: str) -> Callable[..., EvaluationResult]:
    spec = METRICS[key]

    def method(self: Judge, sample: Sample | dict[str, Any], *args: Any, **cfg: Any) -> EvaluationResult:
        return self.evaluate(key, sample, *args, **cfg)

    opts = ", ".join(o.name for o in spec.options) or "none"
    method.__name__ = key
    method.__doc__ = f"{spec.en}: {spec.description_en}. Options: {opts}."
    return method


def _async_variant(name: str) -> Callable[..., Any]:
    async def method(self: Judge, *args: Any, **kwargs: Any) -> EvaluationResult:
        return await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(getattr(self, name), *args, **kwargs))

    method.__name__ = f"a{name}"
    method.__doc__ = f"Async :meth:`{name}`."
    return method


for _name in METRICS:
    if _name != "show_no_show":
        setattr(Judge, _name, _metric_method(_name))
    setattr(Judge, f"a{_name}", _async_variant(_name))


def _ctx(contexts: Sequence[str]) -> str:
    return contexts_text(contexts)


def get_judge(settings: Any = None, engine: Engine | None = None, *, models: list[str] | None = None,
              aggregate: str = "average", offline: bool | None = None, use_cache: bool = True, lang: str = "ru",
              embedder: Any = None, client: LLMClient | None = None, run_id: int | None = None,
              quorum: str | int | None = None, vote_quorum: str | int | None = None,
              versions: Mapping[str, Any] | None = None, **client_kwargs: Any) -> Judge:
    """An LLM judge over the configured providers, or the offline heuristic judge when none is configured
    (or ``offline=True``). ``models=None`` -> the first configured model."""
    if settings is None:
        settings = get_settings()
    factory = functools.partial(default_embedder, settings, engine)
    loader = None
    if engine is not None:
        from voproshalych_eval.embeddings import cached_embedder  # heavy: defers pandas (via embeddings)

        loader = functools.partial(_cached, engine=engine, make=cached_embedder)
    common = {"aggregate": aggregate, "use_cache": use_cache, "lang": lang, "embedder": embedder,
              "embedder_factory": factory, "run_id": run_id, "quorum": quorum, "vote_quorum": vote_quorum,
              "embedder_loader": loader, "versions": versions}
    if offline is not True:
        client = client or default_client(settings, engine, **client_kwargs)
        if client is not None:
            return Judge(client, models=models, **common)
        if offline is False:
            raise RuntimeError("No LLM provider is configured (see docs/LLM.md); use the offline judge instead.")
    return Judge(None, offline=True, **common)


def _cached(name: str, *, engine: Engine, make: Callable[[str, Engine], Any]) -> Any:
    return make(name, engine)
