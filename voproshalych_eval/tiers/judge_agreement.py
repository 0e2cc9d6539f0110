"""Measuring a judge's agreement with its human labels as a run: one item per labelled item, so the app runs it
in the background with progress, cancel and resume like any other run (the Judge agreement page's "Measure
agreement"; the CLI's ``judge-agreement`` measures in the foreground with the same report).

Per item the judge (its built-in prompt, the metric's adopted aligned version, or a named one) scores the
labelled item; a failed judgement fails the item (counted by kind, retried by ``resume``), never a value.
:func:`finalize` builds the report with :func:`voproshalych_eval.judges.agreement.assemble_report` from every
recorded item, stores it as a measurement (``eval.judge_agreements``, what run reports' warnings read) and
returns the run's aggregates: ``n``, ``n_failed``, the headline statistic (``judge_kappa`` binary,
``judge_alpha`` ordinal, ``judge_spearman`` continuous) and ``judge_bias``, each with its CI.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.plans import ItemResult, Plan, spec

TIER = "judge_agreement"
DEFAULTS: dict[str, Any] = spec(TIER).defaults()
#: the headline statistic of a label scale -> the run's aggregate key (metrics/catalog.py)
KEYS = {"kappa": "judge_kappa", "alpha": "judge_alpha", "spearman": "judge_spearman"}


def build_plan(engine: Engine, params: Mapping[str, Any]) -> JudgeAgreementPlan:
    """The agreement run of ``params["metric"]`` on its labelled items (the first ``limit``); ``version``: an
    aligned version name, ``METRIC@builtin``, or None for the metric's default; also used by ``resume``."""
    return JudgeAgreementPlan(engine, params)


class JudgeAgreementPlan(Plan):
    """The judge on every human-labelled item of one metric, then its agreement with the people."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        from voproshalych_eval.judges import get_judge  # heavy: defers numpy (via judges)
        from voproshalych_eval.judges.agreement import labelled_items  # heavy: defers numpy (via judges)
        from voproshalych_eval.judges.labels import label_scale  # heavy: defers numpy (via judges)
        from voproshalych_eval.judges.versions import resolve_versions  # heavy: defers numpy (via judges)

        p = spec(TIER).resolve(params)
        self.engine = engine
        self.metric = metric = str(p["metric"] or "")
        self.kind = label_scale(metric).kind  # ValueError naming the known metrics
        labelled = labelled_items(engine, metric, annotators=p["annotators"])
        if p["limit"]:
            labelled = labelled[: int(p["limit"])]
        if not labelled:
            raise ValueError(f"no labels for {metric}; import some with `labels import` (e.g. --demo)")
        self.labelled = labelled
        self.by_key = {it.key: it for it in labelled}
        version = resolve_versions(engine, [p["version"]] if p["version"] else None, defaults_for=[metric]).get(metric)
        self.judge = judge = get_judge(get_settings(), engine, models=p["models"], offline=True if p["offline"] else None,
                                       lang=str(p["lang"]), versions={metric: version} if version is not None else None)
        self.thr = version.threshold if version is not None else None
        self.version_name = version_name = version.version if version is not None else f"{metric}@builtin"
        self.n_resamples = int(p["n_resamples"])
        offline = bool(judge.offline)
        super().__init__(
            tier=TIER,
            items=[(it.key, it.key) for it in labelled],
            concurrency=1 if offline else int(p["concurrency"] or getattr(judge.client, "concurrency", 4) or 4),
            params={**p, "metric": metric, "offline": True if offline else p["offline"], "version": p["version"]},
            models={"judge": list(judge.models), "offline": offline},
            prompts=judge.prompts(metric),
            offline=offline,
            label=f"agreement {metric} · {version_name}",
        )

    def prepare(self) -> None:
        self.judge.run_id = self.run_id  # the judge's call log names the run

    def work(self, key: str) -> ItemResult:
        from voproshalych_eval.judges.agreement import judged_value  # heavy: defers numpy (via judges)

        it = self.by_key[key]
        res = self.judge.evaluate(self.metric, it.sample)
        value = judged_value(res, self.kind, self.thr)
        tokens = {k: int(v) for k, v in (res.tokens or {}).items() if isinstance(v, int | float)}
        out = {"item_key": key, "item_id": it.item_id, "human": it.human(self.kind), "judge": value, "score": res.score,
               "failure_kind": res.failure_kind, "explanation": (res.explanation or "")[:300], "tokens": tokens,
               "duration_s": res.duration_s}
        spent = sum(v for k, v in tokens.items() if k != "cached")
        if value is None:
            why = "; ".join(str(f.get("message", f.get("kind", ""))) for f in res.failures or []) or "no score"
            return ItemResult(out, status="failed", error=f"{res.failure_kind or 'error'}: {why}"[:500], tokens=spent)
        return ItemResult(out, tokens=spent)

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return finalize_records(self.engine, self.metric, self.labelled, records, models=list(self.judge.models),
                                offline=bool(self.judge.offline), version=self.version_name, n_resamples=self.n_resamples)


def finalize_records(engine: Engine, metric: str, items: list[Any], records: list[dict[str, Any]], *,
                     models: list[str], offline: bool, version: str, n_resamples: int = 500) -> dict[str, Any]:
    """The report from every recorded item (a missing or failed item is not judged), stored as a measurement;
    the run's aggregates (see the module doc)."""
    # heavy: defers numpy (via judges)
    from voproshalych_eval.judges.agreement import assemble_report, save_measurement

    by_key = {r["item_key"]: r for r in records}
    judged: list[float | None] = []
    fails: list[str | None] = []
    kinds: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    duration = 0.0
    for it in items:
        rec = by_key.get(it.key)
        res = (rec or {}).get("result") or {}
        value = res.get("judge") if rec is not None and rec.get("status") == "done" else None
        judged.append(None if value is None else float(value))
        if value is None:
            kind = res.get("failure_kind") or ("not_evaluated" if rec is None else "error")
            kinds[kind] += 1
            fails.append(kind)
        else:
            fails.append(None)
        tokens.update({k: int(v) for k, v in (res.get("tokens") or {}).items()})
        duration += float(res.get("duration_s") or 0.0)
    rep = assemble_report(metric, items, judged, failure_kinds=dict(kinds), tokens=dict(tokens), models=models,
                          offline=offline, version=version, duration_s=duration, item_failures=fails,
                          n_resamples=n_resamples)
    save_measurement(engine, rep)
    main = rep["main"]
    out: dict[str, Any] = {"n": rep["n"], "n_failed": rep["n_failed"], "version": version, "poor": rep.get("poor")}
    stat = rep.get(main) or {}
    if "value" in stat:
        ci = stat.get("ci") or [None, None]
        out[KEYS[main]] = {"value": stat["value"], "n": rep["n"], "n_failed": rep["n_failed"], "ci_low": ci[0],
                           "ci_high": ci[1]}
    b = rep.get("bias") or {}
    if "mean" in b:
        ci = b.get("ci") or [None, None]
        out["judge_bias"] = {"value": b["mean"], "n": rep["n"], "n_failed": rep["n_failed"], "ci_low": ci[0],
                             "ci_high": ci[1]}
    return out
