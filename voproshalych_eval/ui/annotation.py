"""What the annotation queue page labels: the judged items of a stored run, as queue items.

Runs that judged items one by one with a judge metric: ``judge_metrics`` (its metric; the sample read from the
run's stored dataset) and ``judge_pipeline`` (the production ``show_no_show`` judge). A queue item holds the
item as judged (question, answer, contexts, reference), its label key, the judge's score and the jury's
per-model scores (for the queue's order, :mod:`voproshalych_eval.judges.queue`) and a topic when the run has one.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.datasets.store import get_dataset
from voproshalych_eval.engine import runs
from voproshalych_eval.judges.labels import item_key, label_scale

JUDGED_TIERS = ("judge_metrics", "judge_pipeline")


def judged_runs(engine: Engine) -> list[runs.Run]:
    """Finished runs whose items were judged one by one with a judge metric, newest first."""
    return runs.list_runs(engine, tier=list(JUDGED_TIERS), status=("done", "done_with_failures"), limit=100)


def run_metric(run: runs.Run) -> str:
    """The judge metric a run's items were judged with."""
    return "show_no_show" if run.tier == "judge_pipeline" else str((run.params or {}).get("metric"))


def _scores(res: dict[str, Any]) -> tuple[float | None, dict[str, Any]]:
    return res.get("score"), dict(res.get("per_model") or {})


def queue_items(engine: Engine, run: runs.Run) -> list[dict[str, Any]]:
    """The run's judged items as queue items (items without a judged answer are left out)."""
    metric = run_metric(run)
    scale = label_scale(metric)
    samples: dict[str, dict[str, Any]] = {}
    if run.tier == "judge_metrics" and run.dataset_id is not None:
        ds = get_dataset(engine, run.dataset_id)
        samples = dict(zip(ds.keys(), ds.records, strict=True))
    out = []
    for rec in runs.item_records(engine, run.id):
        r = rec["result"] or {}
        if run.tier == "judge_pipeline":
            item = {"question": r.get("question"), "answer": r.get("answer"),
                    "contexts": [r["context"]] if str(r.get("context") or "").strip() else [], "reference": None,
                    "topic": r.get("topic") or r.get("kind")}
            score, per_model = _scores(r.get("show_no_show") or {})
        else:
            s = samples.get(rec["item_key"]) or {}
            item = {"question": s.get("user_input") or r.get("user_input"), "answer": s.get("response"),
                    "contexts": list(s.get("retrieved_contexts") or []), "reference": s.get("reference"),
                    "topic": s.get("topic")}
            score, per_model = _scores(r)
        if not item["question"] or item["answer"] is None:
            continue
        lo, hi = (scale.low, scale.high) if scale.low > float("-inf") else (0.0, 1.0)
        out.append({**item, "key": item_key(item), "run_id": run.id, "run_item_key": rec["item_key"],
                    "item_id": rec["item_key"], "judge": score, "per_model": per_model, "low": lo, "high": hi})
    return out
