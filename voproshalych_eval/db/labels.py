"""``eval.human_labels``, ``eval.judge_versions`` and ``eval.judge_agreements``: read and written here only (migration ``0037_human_labels``).

A label is one person's value for one judged item on one judge metric; an item is identified by
:func:`item_key` (a hash of the content as judged), so two people labelling the same item, or a run item
and a label file holding the same question/answer/context, meet on the same key. Storing a label for a
(metric, item, annotator) that exists replaces its value, note and source (the newest judgement counts).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Engine, text

LABEL_FIELDS = ("metric", "item_key", "item_id", "question", "answer", "contexts", "reference", "value",
                "annotator", "note", "source", "run_id", "run_item_key", "topic")


def item_key(question: str, answer: str | None, contexts: Sequence[str] = (), reference: str | None = None) -> str:
    """sha256 (first 16 hex digits) of the judged content: question, answer, contexts, reference."""
    canon = json.dumps([question.strip(), (answer or "").strip(), [c.strip() for c in contexts if c and c.strip()],
                        (reference or "").strip()], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


def upsert_labels(engine: Engine, labels: Iterable[Mapping[str, Any]]) -> int:
    """Store labels (dicts with :data:`LABEL_FIELDS`; ``item_key`` computed when absent) in one transaction."""
    rows = []
    for lab in labels:
        ctx = list(lab.get("contexts") or [])
        key = lab.get("item_key") or item_key(lab["question"], lab.get("answer"), ctx, lab.get("reference"))
        rows.append({**{f: lab.get(f) for f in LABEL_FIELDS}, "item_key": key,
                     "contexts": json.dumps(ctx, ensure_ascii=False), "value": float(lab["value"])})
    if not rows:
        return 0
    sql = text(
        "INSERT INTO eval.human_labels (metric, item_key, item_id, question, answer, contexts, reference, value, "
        "annotator, note, source, run_id, run_item_key, topic) VALUES (:metric, :item_key, :item_id, :question, "
        ":answer, CAST(:contexts AS jsonb), :reference, :value, :annotator, :note, :source, :run_id, :run_item_key, "
        ":topic) ON CONFLICT (metric, item_key, annotator) DO UPDATE SET value = excluded.value, "
        "note = excluded.note, source = excluded.source, item_id = coalesce(excluded.item_id, eval.human_labels.item_id), "
        "run_id = coalesce(excluded.run_id, eval.human_labels.run_id), "
        "run_item_key = coalesce(excluded.run_item_key, eval.human_labels.run_item_key), "
        "topic = coalesce(excluded.topic, eval.human_labels.topic), updated_at = now()")
    with engine.begin() as conn:
        conn.execute(sql, rows)
    return len(rows)


def list_labels(engine: Engine, metric: str | None = None, *, annotator: str | None = None) -> list[dict[str, Any]]:
    """Every stored label (of ``metric`` / ``annotator`` when given), oldest first."""
    where, params = [], {}
    if metric:
        where.append("metric = :m")
        params["m"] = metric
    if annotator:
        where.append("annotator = :a")
        params["a"] = annotator
    sql = ("SELECT id, metric, item_key, item_id, question, answer, contexts, reference, value, annotator, note, "
           "source, run_id, run_item_key, topic, created_at, updated_at FROM eval.human_labels"
           + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id")
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(sql), params)]


def label_counts(engine: Engine) -> list[dict[str, Any]]:
    """Per metric: labels, distinct items, annotators."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT metric, count(*) AS n_labels, count(DISTINCT item_key) AS n_items, "
            "count(DISTINCT annotator) AS n_annotators FROM eval.human_labels GROUP BY metric ORDER BY metric"))
        return [dict(r._mapping) for r in rows]


def delete_label(engine: Engine, metric: str, key: str, annotator: str) -> int:
    with engine.begin() as conn:
        return conn.execute(text("DELETE FROM eval.human_labels WHERE metric = :m AND item_key = :k AND annotator = :a"),
                            {"m": metric, "k": key, "a": annotator}).rowcount


# ------------------------------------------------------------------------------------ judge versions


def save_version(engine: Engine, metric: str, version: str, spec: Mapping[str, Any], lineage: Mapping[str, Any], *,
                 adopted: bool, created_by: str | None = None) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO eval.judge_versions (metric, version, spec, lineage, adopted, created_by) VALUES "
            "(:m, :v, CAST(:s AS jsonb), CAST(:l AS jsonb), :a, :u) ON CONFLICT (version) DO UPDATE SET "
            "lineage = excluded.lineage, adopted = excluded.adopted"),
            {"m": metric, "v": version, "s": json.dumps(spec, ensure_ascii=False),
             "l": json.dumps(lineage, ensure_ascii=False, default=str), "a": adopted, "u": created_by})


def get_version(engine: Engine, version: str) -> dict[str, Any] | None:
    with engine.connect() as conn:
        r = conn.execute(text("SELECT id, metric, version, spec, lineage, adopted, created_by, created_at "
                              "FROM eval.judge_versions WHERE version = :v"), {"v": version}).first()
    return dict(r._mapping) if r else None


def list_versions(engine: Engine, metric: str | None = None) -> list[dict[str, Any]]:
    sql = ("SELECT id, metric, version, spec, lineage, adopted, created_by, created_at FROM eval.judge_versions"
           + (" WHERE metric = :m" if metric else "") + " ORDER BY id")
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(sql), {"m": metric} if metric else {})]


def default_version(engine: Engine, metric: str) -> dict[str, Any] | None:
    """The newest adopted version of ``metric`` (None: the built-in prompt is the default)."""
    with engine.connect() as conn:
        r = conn.execute(text("SELECT id, metric, version, spec, lineage, adopted, created_by, created_at "
                              "FROM eval.judge_versions WHERE metric = :m AND adopted ORDER BY id DESC LIMIT 1"),
                         {"m": metric}).first()
    return dict(r._mapping) if r else None


# ------------------------------------------------------------------------------------ agreement measurements


def save_agreement(engine: Engine, report: Mapping[str, Any]) -> None:
    """Store one agreement report (:func:`voproshalych_eval.judges.agreement.measure`)."""
    main = report.get("main")
    stat = report.get(main) or {} if main else {}
    slim = {k: v for k, v in report.items() if k != "items"}
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO eval.judge_agreements (metric, models, version, statistic, value, ci, n, poor, report) VALUES "
            "(:m, CAST(:models AS jsonb), :v, :s, :val, CAST(:ci AS jsonb), :n, :poor, CAST(:r AS jsonb))"),
            {"m": report["metric"], "models": json.dumps(list(report.get("models") or [])), "v": report["version"],
             "s": main or "", "val": stat.get("value"), "ci": json.dumps(stat.get("ci")), "n": int(report.get("n") or 0),
             "poor": report.get("poor"), "r": json.dumps(slim, ensure_ascii=False, default=str)})


def list_agreements(engine: Engine, metric: str | None = None) -> list[dict[str, Any]]:
    """Stored agreement measurements (of ``metric``), newest first."""
    sql = ("SELECT id, metric, models, version, statistic, value, ci, n, poor, report, created_at "
           "FROM eval.judge_agreements" + (" WHERE metric = :m" if metric else "") + " ORDER BY id DESC")
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(sql), {"m": metric} if metric else {})]
