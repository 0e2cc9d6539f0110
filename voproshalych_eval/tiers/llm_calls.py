"""The LLM layer as the tiers use it: generator and judge from the settings, judge calls whose failures
are counted (never scores), generation results and token counts as JSON, and the provider endpoints a
plan calls (frozen with the run)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.jsonable import jsonable
from voproshalych_eval.llm.context_window import TokenEstimate, fit_contexts
from voproshalych_eval.llm.generation import get_generator


def make_generator(
    engine: Engine, *, model: str | None = None, system_prompt: str | None = None, offline: bool | None = None, **kwargs: Any
) -> Any:
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return get_generator(get_settings(), engine, model=model, system_prompt=system_prompt, offline=offline, **kwargs)


def generator_prompts(generator: Any) -> dict[str, Any]:
    fn = getattr(generator, "prompts", None)
    try:
        return dict(fn()) if callable(fn) else {}
    except Exception:  # noqa: BLE001
        return {}


def judge_prompts(metrics: Sequence[str], *judges: Any) -> dict[str, str]:
    """``{prompt name: version}`` of the judge prompts ``metrics`` send, frozen in a run's configuration so a
    resume after a prompt edit is refused, naming the prompt. Offline judges send none."""
    out: dict[str, str] = {}
    for judge in judges:
        if judge is not None and not getattr(judge, "offline", False):
            for metric in metrics:
                out.update(judge.prompts(metric))
    return out


def make_judge(
    engine: Engine,
    *,
    models: Sequence[str] | None = None,
    aggregate: str = "average",
    offline: bool | None = None,
    use_cache: bool = True,
    quorum: str | int | None = None,
    vote_quorum: str | int | None = None,
    versions: Mapping[str, Any] | None = None,
) -> Any:
    from voproshalych_eval.judges import get_judge  # heavy: defers numpy (via judges)

    return get_judge(
        get_settings(), engine, models=list(models) if models else None, aggregate=aggregate, offline=offline,
        use_cache=use_cache, quorum=quorum, vote_quorum=vote_quorum, versions=versions,
    )


def judge_versions(engine: Engine, p: Mapping[str, Any]) -> dict[str, Any]:
    """The aligned judge versions a tier's judge uses: those named in ``p["judge_versions"]`` (``METRIC@builtin``
    = the built-in prompt), else each metric's adopted default (:mod:`voproshalych_eval.judges.versions`). Their
    names reach the run's frozen prompts through ``Judge.prompts``, so ``resume`` refuses a different one."""
    from voproshalych_eval.judges import JUDGE_METRICS  # heavy: defers numpy (via judges)
    from voproshalych_eval.judges.versions import resolve_versions  # heavy: defers numpy (via judges)

    return resolve_versions(engine, p.get("judge_versions"), defaults_for=list(JUDGE_METRICS))


def tier_judge(engine: Engine, p: Mapping[str, Any], **kw: Any) -> Any:
    """The judge of a tier from its parameters (``judge_models``, ``judge_aggregate``, ``judge_quorum``: models
    that must answer, ``judge_vote_quorum``: strictness votes — ``plan_parameters.JUDGE`` — and ``offline``)."""
    return make_judge(engine, models=p.get("judge_models"), aggregate=p.get("judge_aggregate") or "average",
                      offline=p.get("offline"), quorum=p.get("judge_quorum"), vote_quorum=p.get("judge_vote_quorum"),
                      versions=judge_versions(engine, p), **kw)


def make_sample(question: str, response: str | None, reference: str | None, contexts: Sequence[str]) -> Any:
    from voproshalych_eval.judges import Sample  # heavy: defers numpy (via judges)

    return Sample(user_input=question, response=response, reference=reference, retrieved_contexts=list(contexts))


def eval_dict(res: Any) -> dict[str, Any]:
    """An ``EvaluationResult`` as a JSON-ready dict (score None on failure, raw replies kept)."""
    if res is None:
        return {"score": None, "failures": ["not evaluated"]}
    return jsonable(res.to_dict() if hasattr(res, "to_dict") else dict(res))


def judge_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call one judge metric; an exception becomes a counted failure (never a score)."""
    try:
        return eval_dict(fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the failure is kept with the item and counted
        return {"score": None, "passed": None, "failures": [f"{type(exc).__name__}: {exc}"], "error": True}


def generation_dict(gen: Any) -> dict[str, Any]:
    return {
        "text": getattr(gen, "text", None),
        "model": getattr(gen, "model", None),
        "offline": bool(getattr(gen, "offline", False)),
        "latency_s": getattr(gen, "latency_s", None),
        "tokens": _tokens(getattr(gen, "tokens", None)),
        "error": getattr(gen, "error", None),
    }


def _tokens(t: Any) -> int:
    if t is None:
        return 0
    if isinstance(t, int | float):
        return int(t)
    if isinstance(t, Mapping):
        if t.get("total") or t.get("total_tokens"):
            return int(t.get("total") or t.get("total_tokens") or 0)
        return int(t.get("prompt") or 0) + int(t.get("completion") or 0)
    return 0


def tokens_of(*dicts: Mapping[str, Any]) -> int:
    return sum(_tokens(d.get("tokens")) for d in dicts if d)


def providers_of(*parts: Any) -> list[dict[str, Any]]:
    """The LLM endpoints a generator / judge calls: ``[{"name", "host", "models"}]`` sorted by name (no key,
    no path: enough to tell whether a resume would call the same service). Offline parts call none."""
    found: dict[str, dict[str, Any]] = {}
    for part in parts:
        if part is None or getattr(part, "offline", False):
            continue
        client = getattr(part, "client", None)
        models = list(getattr(part, "models", None) or [getattr(part, "model", None)])
        if client is None:
            continue
        for model in models:
            if not model:
                continue
            provider, model_id = client.route(str(model))
            host = urlsplit(provider.base_url).netloc.rsplit("@", 1)[-1] if provider.base_url else None
            entry = found.setdefault(provider.name, {"name": provider.name, "host": host, "models": []})
            if model_id not in entry["models"]:
                entry["models"].append(model_id)
    return [found[k] | {"models": sorted(found[k]["models"])} for k in sorted(found)]


def fit_judge_contexts(judge: Any, metrics: Sequence[str], sample: Any) -> tuple[Any, dict[str, Any] | None]:
    """``sample`` with its retrieved (or page) context cut to fit the context window of every model of ``judge``
    for every metric in ``metrics``, and what happened: None when nothing was cut (or the window is unknown),
    else ``{"cut": {...}}`` (:func:`voproshalych_eval.llm.context_window.fit_contexts`) or, when even an empty
    context leaves no room, ``{"overflow": {...}}`` — the caller counts that item as a ``context_overflow``
    failure, never drops it."""

    client = getattr(judge, "client", None)
    contexts = list(getattr(sample, "retrieved_contexts", None) or [])
    if client is None or getattr(judge, "offline", False) or not contexts:
        return sample, None
    from voproshalych_eval.judges import JUDGE_METRICS  # heavy: defers numpy (via judges)

    bare = dataclasses.replace(sample, retrieved_contexts=[])
    budget: int | None = None
    estimate: TokenEstimate | None = None
    for metric in metrics:
        spec = JUDGE_METRICS.get(metric)
        if spec is None or spec.prompt is None:
            continue
        try:
            messages = judge._messages(spec, bare, spec.resolve({}))
        except Exception:  # noqa: BLE001 - a prompt that needs options: its fields stand in for it
            messages = [{"content": " ".join(str(x or "") for x in (bare.user_input, bare.response, bare.reference))}]
        for model in getattr(judge, "models", None) or []:
            b = client.context_budget(model, messages, int(getattr(judge, "max_tokens", 1000)))
            if b is not None and (budget is None or b < budget):
                budget, estimate = b, client.token_estimate(model)
    if budget is None:
        return sample, None
    fit = fit_contexts(contexts, budget, estimate)
    if not fit.fits:
        return sample, {"overflow": {"window_budget_tokens": budget, "chars": sum(map(len, contexts))}}
    if fit.cut is None:
        return sample, None
    return dataclasses.replace(sample, retrieved_contexts=fit.contexts), {"cut": fit.cut}


def overflow_result(info: Mapping[str, Any], lang: str = "en") -> dict[str, Any]:
    """The judge result of an item whose prompt cannot fit the model's window: a counted ``context_overflow``
    failure (never a score, never left out of a denominator)."""
    budget = (info.get("overflow") or {}).get("window_budget_tokens")
    msg = ("context_overflow: the question, answer and reference alone leave no room for the context in the model's "
           f"window (budget {budget} tokens)")
    return {"score": None, "passed": None, "failure_kind": "context_overflow",
            "failures": [{"kind": "context_overflow", "message": msg, "raw_text": None}], "error": True}
