"""How far a judge is from its people: judge the labelled items of a metric and compare.

:func:`labelled_items` gathers a metric's labels by item (several annotators of one item meet on its
``item_key``); :func:`judge_items` asks a ``Judge`` (optionally an aligned version) about them — items a
stored run already judged with the same model and prompt are answered from the LLM cache, so only the
labelled items no run covers cost calls; :func:`agreement` compares, with the pure functions of
:mod:`voproshalych_eval.metrics.agreement`. A failed judgement (transport, unparsable reply) is counted by
kind and left out of the statistics, never turned into a value. :func:`human_ceiling` is the agreement of
two annotators on the items both labelled.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.db import labels as store
from voproshalych_eval.judges.base import EvaluationResult, Sample
from voproshalych_eval.judges.judge_metrics import JUDGE_METRICS
from voproshalych_eval.judges.labels import label_scale
from voproshalych_eval.metrics import agreement as am

__all__ = ["POOR", "LabelledItem", "agreement", "assemble_report", "human_ceiling", "judge_items", "judged_value", "labelled_items",
           "measure"]

#: below these the judge "agrees poorly" with people (kappa: Landis & Koch's "moderate" starts at 0.41;
#: alpha: Krippendorff's lowest acceptable 0.667; Spearman: a moderate correlation 0.4)
POOR = {"kappa": 0.4, "alpha": 0.667, "spearman": 0.4}


@dataclass
class LabelledItem:
    key: str
    question: str
    answer: str | None
    contexts: list[str]
    reference: str | None
    values: dict[str, float] = field(default_factory=dict)  # annotator -> value
    notes: dict[str, str] = field(default_factory=dict)
    item_id: str | None = None
    topic: str | None = None

    @property
    def sample(self) -> Sample:
        return Sample(self.question, self.answer, self.reference, list(self.contexts))

    def human(self, kind: str) -> float:
        """The people's value: the mean (continuous) or the lower median (binary, ordinal) of the annotators."""
        vals = list(self.values.values())
        return float(statistics.fmean(vals)) if kind == "continuous" else float(statistics.median_low(vals))

    @property
    def note(self) -> str | None:
        return next((n for n in self.notes.values() if n), None)


def labelled_items(engine: Engine, metric: str, *, annotators: Sequence[str] | None = None) -> list[LabelledItem]:
    """The labelled items of ``metric`` (only the labels of ``annotators`` when given), in label order."""
    items: dict[str, LabelledItem] = {}
    for lab in store.list_labels(engine, metric):
        if annotators and lab["annotator"] not in annotators:
            continue
        it = items.setdefault(lab["item_key"], LabelledItem(lab["item_key"], lab["question"], lab["answer"],
                                                            list(lab["contexts"] or []), lab["reference"],
                                                            item_id=lab["item_id"], topic=lab["topic"]))
        it.values[lab["annotator"]] = float(lab["value"])
        if lab["note"]:
            it.notes[lab["annotator"]] = lab["note"]
        it.topic = it.topic or lab["topic"]
        it.item_id = it.item_id or lab["item_id"]
    return list(items.values())


def judged_value(res: EvaluationResult | None, kind: str, threshold: float | None = None) -> float | None:
    """The judge's value on the labels' scale: the score, or (binary labels) the verdict 1/0 — at
    ``threshold`` when one is calibrated, else the metric's own pass rule. None when the judgement failed."""
    if res is None or res.score is None:
        return None
    if kind == "binary":
        if threshold is not None:
            return 1.0 if res.score >= threshold else 0.0
        if res.passed is not None:
            return 1.0 if res.passed else 0.0
        lo, hi = res.score_range
        return 1.0 if res.score >= lo + (hi - lo) / 2 else 0.0
    return float(res.score)


def judge_items(judge: Any, metric: str, items: Sequence[LabelledItem], *, cfg: Mapping[str, Any] | None = None,
                concurrency: int | None = None) -> list[EvaluationResult | None]:
    """The judge's results on ``items`` (order kept)."""
    return judge.evaluate_many(metric, [it.sample for it in items], concurrency=concurrency, **dict(cfg or {}))


def _failure_kinds(results: Sequence[EvaluationResult | None]) -> dict[str, int]:
    return dict(Counter((r.failure_kind or "error") if r is not None else "not_evaluated"
                        for r in results if r is None or r.score is None))


def agreement(humans: Sequence[float], judged: Sequence[float | None], *, kind: str,
              topics: Sequence[str | None] | None = None, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """:func:`voproshalych_eval.metrics.agreement.agreement_report` over the items with a judged value, plus
    ``n_failed`` and ``poor`` (the headline statistic below :data:`POOR`, or undefined)."""
    idx = [i for i, v in enumerate(judged) if v is not None]
    out: dict[str, Any] = {"n": len(idx), "n_failed": len(judged) - len(idx), "kind": kind}
    if not idx:
        out.update({"main": am.main_statistic(kind), "poor": None})
        return out
    rep = am.agreement_report([humans[i] for i in idx], [judged[i] for i in idx], kind=kind,  # type: ignore[misc]
                              topics=[topics[i] for i in idx] if topics is not None else None,
                              n_resamples=n_resamples, seed=seed)
    rep["n_failed"] = out["n_failed"]
    main = rep[rep["main"]]["value"]
    rep["poor"] = None if main is None else bool(main < POOR[rep["main"]])
    return rep


def human_ceiling(items: Sequence[LabelledItem], kind: str, *, n_resamples: int = 1000) -> dict[str, Any] | None:
    """Agreement of the two annotators who labelled the most items in common (None when no item has two)."""
    pairs: Counter[tuple[str, str]] = Counter()
    for it in items:
        names = sorted(it.values)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                pairs[(a, b)] += 1
    if not pairs:
        return None
    (a, b), n = pairs.most_common(1)[0]
    common = [it for it in items if a in it.values and b in it.values]
    rep = agreement([it.values[a] for it in common], [it.values[b] for it in common], kind=kind,
                    n_resamples=n_resamples)
    rep["annotators"] = [a, b]
    return rep


def measure(judge: Any, metric: str, items: Sequence[LabelledItem], *, cfg: Mapping[str, Any] | None = None,
            threshold: float | None = None, concurrency: int | None = None, n_resamples: int = 1000,
            seed: int = 0) -> dict[str, Any]:
    """Judge ``items`` and report agreement with their labels: the :func:`agreement` keys plus
    ``failure_kinds``, ``tokens``, ``models``, ``version``, ``human_ceiling`` and per-item ``items``."""
    kind = label_scale(metric).kind
    results = judge_items(judge, metric, items, cfg=cfg, concurrency=concurrency)
    version = getattr(judge, "versions", {}).get(metric)
    thr = threshold if threshold is not None else (version.threshold if version is not None else None)
    judged = [judged_value(r, kind, thr) for r in results]
    tokens: Counter[str] = Counter()
    for r in results:
        if r is not None:
            tokens.update({k: int(v) for k, v in (r.tokens or {}).items()})
    return assemble_report(
        metric, items, judged, failure_kinds=_failure_kinds(results), tokens=dict(tokens),
        models=list(getattr(judge, "models", [])), offline=bool(getattr(judge, "offline", False)),
        version=version.version if version is not None else f"{metric}@builtin",
        duration_s=sum(r.duration_s for r in results if r is not None),
        item_failures=[None if r is None else r.failure_kind for r in results], n_resamples=n_resamples, seed=seed)


def assemble_report(metric: str, items: Sequence[LabelledItem], judged: Sequence[float | None], *,
                    failure_kinds: Mapping[str, int], tokens: Mapping[str, int], models: Sequence[str], offline: bool,
                    version: str, duration_s: float = 0.0, item_failures: Sequence[str | None] | None = None,
                    n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The agreement report of the judge's values ``judged`` (None: not judged) on ``items`` — what
    :func:`measure` returns and a background agreement run (``tiers/judge_agreement.py``) stores."""
    kind = label_scale(metric).kind
    humans = [it.human(kind) for it in items]
    rep = agreement(humans, judged, kind=kind, topics=[it.topic for it in items], n_resamples=n_resamples, seed=seed)
    fails = list(item_failures) if item_failures is not None else [None] * len(items)
    rep.update({
        "metric": metric, "n_labelled": len(items), "failure_kinds": dict(failure_kinds),
        "models": list(models), "offline": offline, "version": version, "tokens": dict(tokens),
        "n_cached": int(tokens.get("cached", 0)),  # calls answered from the LLM cache (items a stored run judged)
        "duration_s": round(duration_s, 3),
        "human_ceiling": human_ceiling(items, kind, n_resamples=n_resamples),
        "items": [{"item_key": it.key, "item_id": it.item_id, "human": h, "judge": j, "failure_kind": f}
                  for it, h, j, f in zip(items, humans, judged, fails, strict=True)],
    })
    return rep


def judge_warnings(engine: Engine, metric_keys: Sequence[str], models: Mapping[str, Any] | None,
                   prompts: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """For a run's metric keys (``avg_<metric>``, prefixed or not), the latest stored agreement of that judge
    metric × one of the run's judge models × the run's prompt version when it is poor: ``{key: measurement}``."""
    run_models = {str(x) for v in (models or {}).values() for x in (v if isinstance(v, list) else [v]) if x}
    aligned = (prompts or {}).get("aligned_version")
    out: dict[str, dict[str, Any]] = {}
    latest: dict[str, list[dict[str, Any]]] = {}
    for key in metric_keys:
        name = str(key).split(".")[-1].removeprefix("avg_")
        if name not in JUDGE_METRICS:
            continue
        if name not in latest:
            latest[name] = store.list_agreements(engine, name)
        version = aligned if aligned and str(aligned).startswith(f"{name}@") else f"{name}@builtin"
        for m in latest[name]:
            if m["version"] == version and set(m["models"] or []) & run_models:
                if m["poor"]:
                    out[key] = {k: m[k] for k in ("metric", "models", "version", "statistic", "value", "ci", "n",
                                                  "created_at")}
                break
    return out


def stored_measurements(engine: Engine, metric: str | None = None) -> list[dict[str, Any]]:
    """Every stored agreement measurement (of ``metric``), newest first."""
    return store.list_agreements(engine, metric)


def save_measurement(engine: Engine, report: Mapping[str, Any]) -> None:
    """Store an agreement report of :func:`measure` (run reports warn next to a poorly agreeing judge)."""
    store.save_agreement(engine, report)


def annotator_agreement(items: Sequence[LabelledItem], kind: str, annotator: str, *, n_resamples: int = 500
                        ) -> list[dict[str, Any]]:
    """The agreement of ``annotator`` with every other annotator on the items both labelled (most items first):
    ``{"annotator", "n", "main", "value", "ci"}`` each."""
    others: Counter[str] = Counter(o for it in items if annotator in it.values for o in it.values if o != annotator)
    out = []
    for other, _n in others.most_common():
        common = [it for it in items if annotator in it.values and other in it.values]
        rep = agreement([it.values[annotator] for it in common], [it.values[other] for it in common], kind=kind,
                        n_resamples=n_resamples)
        stat = rep.get(rep["main"]) or {}
        out.append({"annotator": other, "n": rep["n"], "main": rep["main"], "value": stat.get("value"),
                    "ci": stat.get("ci")})
    return out
