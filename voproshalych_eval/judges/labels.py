"""Human labels in one place: label files in and out, the existing label sources, each metric's label scale.

A label names a judge metric (a key of :data:`~voproshalych_eval.judges.judge_metrics.JUDGE_METRICS`, the
pipeline's ``show_no_show`` among them, or ``dataset_review`` — a reviewer's accept/reject of a dataset
item), the item as judged (question, answer, contexts, reference), the value on the metric's own scale, who
(``annotator``), when (stored) and why (``note``). Stored by :mod:`voproshalych_eval.db.labels`.

Label files (CSV / JSON / JSONL, read by the one reader :func:`voproshalych_eval.datasets.files.read_file`):

* a **labels file** — columns :data:`FILE_COLUMNS` (``metric``, ``question``, ``value`` and ``annotator``
  required unless given on the command line; ``contexts`` a JSON list or one text; ``context`` accepted);
* a **judge set** (the demo's ``judge_set.json``, the earlier benchmark's ``show_no_show_labels.json``):
  question, context, answer, ``label`` 1/0 or ``ground_truth_show`` true/false, rationale — read through
  :func:`voproshalych_eval.datasets.store.validate_records` and stored as ``show_no_show`` labels (rationale = note).

A bad row stops the import with an error naming the file, the row and the field; nothing is stored half-way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.datasets.files import (
    FieldError,
    RecordFileError,
    as_int,
    as_json_value,
    as_text,
    read_file,
    write_csv,
)
from voproshalych_eval.datasets.store import get_dataset, validate_records
from voproshalych_eval.db import labels as store
from voproshalych_eval.judges.judge_metrics import JUDGE_METRICS

__all__ = ["FILE_COLUMNS", "LabelScale", "export_labels", "import_demo_judge_set", "import_file",
           "import_review_decisions", "label_scale", "read_label_file"]

FILE_COLUMNS = ("metric", "item_id", "question", "answer", "contexts", "reference", "value", "annotator", "note",
                "topic", "run_id", "run_item_key")
#: label metrics that are not (yet) judge metrics: reviewers' decisions on dataset items (1 accept / 0 reject)
EXTRA_METRICS = {"dataset_review": ("binary", 0.0, 1.0)}
DEMO_ANNOTATOR = "demo_judge_set"


@dataclass(frozen=True)
class LabelScale:
    """How a metric's labels are compared: ``binary`` (kappa), ``ordinal`` (alpha, weighted kappa) or
    ``continuous`` (Spearman); values must lie within [low, high]."""

    kind: str
    low: float
    high: float


def label_scale(metric: str) -> LabelScale:
    """The label scale of ``metric`` (its default options' scale; ``ValueError`` for an unknown metric)."""
    if metric in EXTRA_METRICS:
        return LabelScale(*EXTRA_METRICS[metric])
    if metric not in JUDGE_METRICS:
        known = ", ".join([*JUDGE_METRICS, *EXTRA_METRICS])
        raise ValueError(f"unknown label metric {metric!r}; use one of {known}")
    spec = JUDGE_METRICS[metric]
    try:
        scale = spec.scale(spec.resolve({}))
    except ValueError:  # required options (a criterion, rubrics): any value on 0-1 or the levels given
        scale = None
    if scale is None:
        return LabelScale("binary" if metric == "aspect_critic" else "ordinal", float("-inf"), float("inf"))
    if "binary" in scale.label:
        return LabelScale("binary", scale.low, scale.high)
    return LabelScale("ordinal" if scale.integer else "continuous", scale.low, scale.high)


def _contexts(v: Any, err: Any) -> list[str]:
    try:
        v = as_json_value(v, "contexts")
    except FieldError as exc:
        raise err("contexts", exc.message) from None
    if v is None or (isinstance(v, str) and not v.strip()):
        return []
    if isinstance(v, str):
        return [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise err("contexts", "must be a list of strings or one text")
    return [x for x in v if x.strip()]


def _label_row(rec: Mapping[str, Any], err: Any, *, metric: str | None, annotator: str | None,
               source: str) -> dict[str, Any]:
    def text_field(name: str, required: bool = False) -> str | None:
        try:
            return as_text(rec.get(name), name, required=required, allow_blank=not required)
        except FieldError as exc:
            raise err(name, exc.message) from None

    m = metric or text_field("metric", True)
    assert m is not None
    try:
        scale = label_scale(m)
    except ValueError as exc:
        raise err("metric", str(exc)) from None
    raw = rec.get("value")
    try:
        value = float(raw) if not isinstance(raw, bool) and raw not in (None, "") else None
    except (TypeError, ValueError):
        value = None
    if value is None or value != value:
        raise err("value", f"must be a number on the {m} scale, got {raw!r}")
    if not scale.low <= value <= scale.high:
        raise err("value", f"{value:g} is outside the {m} scale [{scale.low:g}, {scale.high:g}]")
    if scale.kind == "binary" and value not in (scale.low, scale.high):
        raise err("value", f"{m} is binary: {scale.low:g} or {scale.high:g}, got {value:g}")
    who = annotator or text_field("annotator", True)
    ctx = _contexts(rec.get("contexts") if rec.get("contexts") not in (None, "") else rec.get("context"), err)
    try:
        run_id = as_int(rec.get("run_id"), "run_id")
    except FieldError as exc:
        raise err("run_id", exc.message) from None
    return {"metric": m, "item_id": text_field("item_id") or text_field("id"), "question": text_field("question", True),
            "answer": text_field("answer"), "contexts": ctx, "reference": text_field("reference"), "value": value,
            "annotator": who, "note": text_field("note"), "topic": text_field("topic"), "source": source,
            "run_id": run_id, "run_item_key": text_field("run_item_key")}


def _is_judge_set(columns: Sequence[str]) -> bool:
    cols = set(columns)
    return "value" not in cols and ("label" in cols or "ground_truth_show" in cols)


def read_label_file(path: str | Path, *, data: bytes | None = None, metric: str | None = None,
                    annotator: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
    """The labels of a label file or a judge set (see the module doc), validated; ``RecordFileError`` names
    the file, row and field of the first problem."""
    f = read_file(path, data=data, name=name)
    src = f"file:{Path(name or str(path)).name}"
    if not f.records:
        raise RecordFileError(f.file, None, None, "no labels in the file")
    if _is_judge_set(f.columns):
        if metric not in (None, "show_no_show"):
            raise RecordFileError(f.file, None, "metric", f"a judge set holds show_no_show labels, not {metric}")
        recs = validate_records(f.records, "judge", file=f.file, rows=f.rows)
        who = annotator or Path(name or str(path)).stem
        return [{"metric": "show_no_show", "item_id": str(r["id"]) if r.get("id") not in (None, "") else None,
                 "question": r["question"], "answer": r["answer"], "contexts": [r["context"]] if r["context"].strip() else [],
                 "reference": None, "value": float(r["label"]), "annotator": who, "note": r.get("rationale") or None,
                 "topic": r.get("topic"), "source": src, "run_id": None, "run_item_key": None} for r in recs]
    out = []
    for rec, row in zip(f.records, f.rows, strict=True):
        def err(field: str, msg: str, _row: int = row) -> RecordFileError:
            return RecordFileError(f.file, _row, field, msg)

        out.append(_label_row(rec, err, metric=metric, annotator=annotator, source=src))
    return out


def import_file(engine: Engine, path: str | Path, *, data: bytes | None = None, metric: str | None = None,
                annotator: str | None = None, name: str | None = None) -> int:
    """Read and store a label file; the number of labels stored."""
    return store.upsert_labels(engine, read_label_file(path, data=data, metric=metric, annotator=annotator, name=name))


def import_demo_judge_set(engine: Engine) -> int:
    """The demo's judge set (92 show/no-show labels, ``data/judge_set.json``) as labels of ``demo_judge_set``."""
    from voproshalych_eval.demo import DATA_DIR  # heavy: defers pandas (via demo)

    path = Path(DATA_DIR) / "judge_set.json"
    return import_file(engine, path, annotator=DEMO_ANNOTATOR)


def import_review_decisions(engine: Engine, dataset: str, kind: str = "golden") -> int:
    """A dataset's review decisions (accepted 1 / rejected 0, the reason as note) as ``dataset_review`` labels
    of the reviewer who made them."""
    from voproshalych_eval.datasets.annotations import reviews  # heavy: defers pandas (via annotations)
    ds = get_dataset(engine, dataset, kind)
    by_key = dict(zip(ds.keys(), ds.records, strict=True))
    labels = []
    for key, rev in reviews(engine, ds.name, kind).items():
        if rev.status not in ("accepted", "rejected"):
            continue
        item = by_key.get(key) or rev.item or {}
        question = item.get("question")
        if not question:
            continue
        labels.append({"metric": "dataset_review", "item_id": key, "question": question,
                       "answer": item.get("ground_truth_answer") or item.get("answer"),
                       "contexts": [item["chunk_text"]] if item.get("chunk_text") else [], "reference": None,
                       "value": 1.0 if rev.status == "accepted" else 0.0, "annotator": rev.updated_by or "reviewer",
                       "note": rev.reason or rev.notes, "source": f"dataset_review:{ds.name}", "topic": None})
    return store.upsert_labels(engine, labels)


def export_labels(engine: Engine, metric: str | None = None, fmt: str = "csv") -> str:
    """Stored labels as a label file (CSV or JSON) that :func:`read_label_file` reads back."""
    rows = []
    for lab in store.list_labels(engine, metric):
        rows.append({"metric": lab["metric"], "item_id": lab["item_id"], "question": lab["question"],
                     "answer": lab["answer"], "contexts": list(lab["contexts"] or []), "reference": lab["reference"],
                     "value": lab["value"], "annotator": lab["annotator"], "note": lab["note"], "topic": lab["topic"],
                     "run_id": lab["run_id"], "run_item_key": lab["run_item_key"],
                     "created_at": lab["updated_at"].isoformat() if lab.get("updated_at") else None})
    if fmt == "json":
        return json.dumps(rows, ensure_ascii=False, indent=1)
    if fmt != "csv":
        raise ValueError(f"unknown export format {fmt!r}; use csv or json")
    return write_csv([{**r, "contexts": json.dumps(r["contexts"], ensure_ascii=False)} for r in rows],
                     [*FILE_COLUMNS, "created_at"])


def save_label(engine: Engine, item: Mapping[str, Any], metric: str, value: float, annotator: str, *,
               note: str | None = None, source: str = "app") -> None:
    """Store one person's label of one judged item (``item``: question, answer, contexts, reference, and
    optionally item_id, topic, run_id, run_item_key), checked against the metric's scale."""
    def err(field: str, msg: str) -> RecordFileError:
        return RecordFileError(source, None, field, msg)

    row = _label_row({**item, "value": value, "note": note, "contexts": json.dumps(list(item.get("contexts") or []),
                                                                                   ensure_ascii=False)},
                     err, metric=metric, annotator=annotator.strip() or None, source=source)
    store.upsert_labels(engine, [row])


def stored_labels(engine: Engine, metric: str | None = None, *, annotator: str | None = None) -> list[dict[str, Any]]:
    """The stored labels (:func:`voproshalych_eval.db.labels.list_labels`)."""
    return store.list_labels(engine, metric, annotator=annotator)


def label_counts(engine: Engine) -> list[dict[str, Any]]:
    """Per metric: labels, items, annotators."""
    return store.label_counts(engine)


def item_key(item: Mapping[str, Any]) -> str:
    """The label key of a judged item (question, answer, contexts, reference)."""
    return store.item_key(item["question"], item.get("answer"), list(item.get("contexts") or []), item.get("reference"))
