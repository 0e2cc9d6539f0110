"""The judge-metrics run: one judge metric (faithfulness, AspectCritic, rubrics…) over a stored set of
samples, on one or several judge models with an aggregator — a plan run by the engine (tool
``judge_metrics``).

Samples are a dataset of kind ``samples`` (the Ragas general-purpose metrics' Sample: user_input, response, reference,
retrieved_contexts), stored before the run starts, so a resume reads the same samples by id. Each sample
is an item: its :class:`~voproshalych_eval.judges.EvaluationResult` (score, verdict, explanation,
per-model scores, raw replies, failures); a sample without a score is a *failed* item (its failures and
raw replies kept, never turned into a score). The aggregate is the mean score with its 95% CI and, for
thresholded metrics, the pass rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.datasets.files import (
    FieldError,
    RecordFileError,
    as_json_value,
    parse_json_object,
    read_file,
    read_json_object,
)
from voproshalych_eval.judges import JUDGE_METRICS, METRIC_KEYS, Sample, get_judge
from voproshalych_eval.metrics.failures import from_message
from voproshalych_eval.metrics.statistics import summarize
from voproshalych_eval.plans import ItemResult, Plan, spec
from voproshalych_eval.tiers import aggregation, inputs, llm_calls

TIER = "judge_metrics"
#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("judge_metrics").defaults()


def samples_from_judge_set(ds: datasets.Dataset) -> list[dict[str, Any]]:
    """A labelled show/no-show set (kind ``judge``) as samples: question, answer, its one context."""
    return [{"id": r.get("id", key), "user_input": r["question"], "response": r["answer"], "reference": None,
             "retrieved_contexts": [r["context"]]} for key, r in zip(ds.keys(), ds.records, strict=True)]


def store_samples(engine: Engine, records: Sequence[Mapping[str, Any]], name: str) -> datasets.Dataset:
    """Validate ``records`` as samples and store them as a dataset (idempotent by name + content)."""
    valid = datasets.validate_records([dict(r) for r in records], "samples", file=name)
    return datasets.store(engine, datasets.Dataset(name, "samples", valid, datasets.content_hash(valid), "app"))


def build_plan(engine: Engine, params: Mapping[str, Any]) -> JudgeMetricsPlan:
    """The judge-metrics plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``.

    ``dataset``: a stored samples dataset (name or id) or a samples file (JSON, JSONL, CSV; stored first);
    ``metric``: a key of the judge-metric table (:data:`voproshalych_eval.judges.JUDGE_METRICS`); ``config``:
    the metric's options as the table resolves them (threshold, definition, rubrics…); ``models`` /
    ``aggregate`` / ``quorum`` / ``vote_quorum``: the judges and how they are combined (for a metric without
    a prompt, e.g. semantic similarity, ``models`` are embedding models passed in ``config``).
    """
    return JudgeMetricsPlan(engine, params)


class JudgeMetricsPlan(Plan):
    """One judge metric on every sample of a samples dataset (see :func:`build_plan`)."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("judge_metrics").resolve(params)
        self.metric = metric = str(p["metric"])
        if metric not in JUDGE_METRICS:
            raise ValueError(f"unknown judge metric {metric!r}; use one of {', '.join(JUDGE_METRICS)}")
        if p["dataset"] is None:
            raise ValueError("judge metrics need a samples dataset (a file or a stored name)")
        ds = inputs.load_dataset(engine, p["dataset"], "samples")
        pairs = inputs.select_items(ds, limit=p["limit"])
        settings = get_settings()
        lang = p["lang"] or (settings.language if settings.language in ("ru", "en") else "ru")
        llm_models = list(p["models"]) if p["models"] and JUDGE_METRICS[metric].prompt is not None else None
        versions = llm_calls.judge_versions(engine, {"judge_versions": [p["judge_version"]] if p.get("judge_version") else None})
        self.judge = judge = get_judge(settings, engine, models=llm_models, aggregate=str(p["aggregate"]), offline=p["offline"],
                                       use_cache=bool(p["use_cache"]), lang=lang, quorum=p["quorum"],
                                       vote_quorum=p["vote_quorum"], versions=versions)
        self.cfg = cfg = dict(p["config"] or {})
        if p["concurrency"] and not judge.offline and judge.client is not None:
            # one setting: samples in flight and requests in flight to the provider are what was asked (the client's
            # own default never caps it)
            judge.client.set_concurrency(int(p["concurrency"]))
        concurrency = 1 if judge.offline else int(p["concurrency"] or getattr(judge.client, "concurrency", 4) or 4)
        super().__init__(
            tier=TIER,
            items=pairs,
            concurrency=concurrency,
            params={"dataset": p["dataset"], "metric": metric, "models": list(p["models"]) if p["models"] else None,
                    "aggregate": judge.aggregate, "quorum": p["quorum"], "vote_quorum": p["vote_quorum"],
                    "use_cache": judge.use_cache, "lang": lang, "config": cfg,
                    "limit": p["limit"], "offline": True if judge.offline else p["offline"],
                    "judge_version": p.get("judge_version")},
            models={"judge": list(judge.models), "offline": judge.offline},
            prompts=judge.prompts(metric),
            providers=llm_calls.providers_of(judge),
            dataset_id=ds.id,
            dataset_name=ds.name,
            dataset_hash=ds.content_hash,
            offline=bool(judge.offline),
        )

    def prepare(self) -> None:
        self.judge.run_id = self.run_id  # the judge's call log names the run

    def work(self, sample: dict[str, Any]) -> ItemResult:
        res = self.judge.evaluate(self.metric, sample, **self.cfg)
        out = res.to_dict() | {"user_input": sample["user_input"]}
        tokens = llm_calls.tokens_of(out)
        if res.score is None and res.failure_kind != "not_applicable":  # not applicable: nothing to retry
            why = "; ".join(str(f.get("message", f.get("kind", ""))) for f in res.failures) or "no score"
            return ItemResult(out, status="failed", error=f"{res.failure_kind}: {why}"[:500], tokens=tokens)
        return ItemResult(out, tokens=tokens)

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(records, self.metric)


def aggregate(records: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    """Run-level aggregates of a judge metric over its recorded items: ``avg_<metric>`` on the metric's own
    scale (failure kinds, not-applicable and partial counts; a failed item counts with its kind), its 0–1
    twin for RubricsScore (``avg_rubrics_score_norm``), the ``pass_rate`` of the results with a verdict and
    ``n_partial``."""
    def kind(r: Mapping[str, Any]) -> str | None:
        res = r["result"] or {}
        if res.get("empty_answer"):
            return "empty_answer"
        if res.get("undecided") and res.get("score") is None:
            return "undecided"
        if res.get("failure_kind"):
            return str(res["failure_kind"])
        return from_message(r.get("error")) if r["status"] != "done" else None

    results = [r.get("result") or {} for r in records]
    kinds = [kind(r) for r in records]
    partial = [bool(res.get("partial")) for res in results]
    key = METRIC_KEYS[metric]
    out: dict[str, Any] = {key: summarize([res.get("score") for res in results], kinds=kinds, partial=partial).to_dict()}
    if metric == "rubrics_score":
        out[f"{key}_norm"] = summarize([res.get("score_norm") for res in results], kinds=kinds, partial=partial).to_dict()
    passed = [res.get("passed") for res in results if res.get("passed") is not None]
    if passed:
        out["pass_rate"] = summarize([float(x) for x in passed]).to_dict()
    out["n_partial"] = sum(partial)
    out["failure_kinds"] = out[key]["failure_kinds"]
    out["n_undecided"] = sum(bool(res.get("undecided")) for res in results)
    calls = aggregation.jury_calls(results)
    if calls is not None:
        out["judge_calls"] = calls
    # samples with a score / samples the metric applies to (every sample when it applies to none)
    n_app = sum(1 for k in kinds if k != "not_applicable")
    out["judged_share"] = aggregation.judged_share(sum(1 for res in results if res.get("score") is not None),
                                                   n_app or len(records))
    return out


def run_summary(run: Any, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A judge-metrics run (``runs.Run`` + ``runs.item_records``) as the CLI prints it and the page shows it:
    the metric, judges, aggregator, offline label, options, every sample's result and the aggregate."""
    params, models = run.params or {}, run.models or {}
    metric = str(params.get("metric"))
    key = METRIC_KEYS.get(metric, f"avg_{metric}")
    agg = dict((run.metrics or {}).get(key) or {})
    return {
        "run_id": run.id,
        "status": run.status,
        "metric": metric,
        "models": list(models.get("judge") or []),
        "aggregate_method": params.get("aggregate"),
        "offline": bool(run.offline),
        "label": "offline heuristic" if run.offline else None,
        "config": params.get("config") or {},
        "results": [dict(r["result"]) | {"item_key": r["item_key"]} for r in records],
        "aggregate": {**agg, "key": key, "n_failures": agg.get("n_failed")},
        "metrics": dict(run.metrics or {}),
    }


_SAMPLE_FIELDS = {"user_input": "user_input", "retrieved_contexts": "retrieved_contexts", "response": "response",
                  "reference": "reference"}


def read_samples(path: str | Path, *, data: bytes | None = None, encoding: str | None = None,
                 name: str | None = None, metric: str | None = None) -> list[dict[str, Any]]:
    """Samples from a JSON array (or {"samples": [...]}), JSONL or CSV file, read by the one file reader
    (:func:`datasets.files.read_file`); every problem is a ``RecordFileError`` naming the file, row and field.
    A CSV ``retrieved_contexts`` cell holds a JSON array of strings (or one context). With ``metric`` a sample
    needs a question only when that metric does (Semantic Similarity compares response and reference)."""
    f = read_file(path, data=data, encoding=encoding, name=name or Path(path).name)
    out = []
    for rec, row in zip(f.records, f.rows, strict=True):
        r = dict(rec)
        try:
            for k in ("retrieved_contexts", "retrievedContexts", "contexts"):
                if k in r:
                    r[k] = as_json_value(r[k], k)
            if "id" in r and (isinstance(r["id"], bool) or not isinstance(r["id"], (str, int))):
                raise FieldError("id", f"must be a string or an integer, got {type(r['id']).__name__}")
            spec = JUDGE_METRICS.get(metric) if metric else None
            # the question is needed by every metric with a prompt; Semantic Similarity (no prompt) needs none
            sample = Sample.from_dict(r, require_question=spec is None or spec.prompt is not None)
        except FieldError as exc:
            raise f.error(row, exc) from None
        except ValueError as exc:
            first = str(exc).split(" ", 1)[0]
            raise RecordFileError(f.file, row, _SAMPLE_FIELDS.get(first), str(exc)) from None
        out.append(sample.to_dict() | ({"id": r["id"]} if r.get("id") not in (None, "") else {}))
    if not out:
        raise RecordFileError(f.file, None, None, "no samples")
    return out


def read_rubrics(src: str) -> dict[str, str]:
    """Rubrics from a JSON file or inline JSON: ``{"score1_description": "...", ...}`` (string values)."""
    inline = src.lstrip().startswith("{")
    name = "--rubrics" if inline else Path(src).name
    obj = parse_json_object(src, name) if inline else read_json_object(src, name=name)
    for k, v in obj.items():
        if not isinstance(v, str) or not v.strip():
            raise RecordFileError(name, None, k, "a rubric description must be non-empty text")
    return obj
