"""A person's classes for the bot's answer texts (``eval.answer_labels``): what the answer classifier learns from.

One row per normalised answer text (:func:`~voproshalych_eval.analytics.text_ru.normalize`): its class (a
decline class or ``answer``), who labelled it and when, and the log source it was labelled on. A text labelled
again is overwritten (the latest label wins; who and when are updated). Nothing is saved that a person did not
confirm: :func:`save_labels` takes only the rows the caller passes, and the page passes only the confirmed
ones.

Import and export use the one file reader (:func:`~voproshalych_eval.datasets.files.read_file`): a CSV / JSON /
JSONL file of ``{answer, class}`` records (``labelled_by`` optional); a bad row names the file, the row and the
field, and nothing is written unless every row is good.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval.analytics.answers import OVERRIDE_CLASSES
from voproshalych_eval.analytics.text_ru import normalize
from voproshalych_eval.datasets.files import FieldError, RecordFileError, as_text, read_file

LABEL_COLUMNS = ["answer", "class", "labelled_by", "labelled_at", "source"]


def load_labels(engine: Engine) -> dict[str, str]:
    """``{normalised text: class}`` of every stored label (what a run freezes as ``answer_labels``)."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT text_norm, class FROM eval.answer_labels ORDER BY text_norm")).all()
    return {str(t): str(c) for t, c in rows}


def labels_frame(engine: Engine) -> pd.DataFrame:
    """Every stored label with who labelled it and when (:data:`LABEL_COLUMNS`), newest first."""
    with engine.connect() as conn:
        df = pd.read_sql_query(text("SELECT answer, class, labelled_by, labelled_at, source FROM eval.answer_labels "
                                    "ORDER BY labelled_at DESC, text_norm"), conn)
    return df.reindex(columns=LABEL_COLUMNS)


def _checked(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for i, r in enumerate(rows, start=1):
        answer = r.get("answer")
        if not isinstance(answer, str) or not normalize(answer):
            raise FieldError("answer", f"label {i}: the answer text is empty")
        cls = r.get("class")
        if cls not in OVERRIDE_CLASSES:
            raise FieldError("class", f"label {i}: class {cls!r} is not one of {', '.join(OVERRIDE_CLASSES)}")
        out[normalize(answer)] = {"answer": answer, "class": str(cls)}
    return [{"text_norm": k, **v} for k, v in out.items()]


def save_labels(engine: Engine, rows: Iterable[Mapping[str, Any]], *, by: str, source: str | None = None) -> int:
    """Store ``rows`` (``{answer, class}`` each) labelled by ``by``; returns how many were written. All or
    nothing: a bad row raises :class:`FieldError` before anything is written."""
    who = (by or "").strip()
    if not who:
        raise FieldError("labelled_by", "say who labels the answers (a name)")
    good = _checked(rows)
    if not good:
        return 0
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO eval.answer_labels (text_norm, answer, class, labelled_by, labelled_at, source) "
            "VALUES (:text_norm, :answer, :class, :by, now(), :source) ON CONFLICT (text_norm) DO UPDATE SET "
            "answer = EXCLUDED.answer, class = EXCLUDED.class, labelled_by = EXCLUDED.labelled_by, "
            "labelled_at = EXCLUDED.labelled_at, source = EXCLUDED.source"),
            [{**g, "by": who, "source": source} for g in good])
    return len(good)


def delete_labels(engine: Engine, answers: Iterable[str] | None = None) -> int:
    """Delete the labels of ``answers`` (texts, normalised here), or every label when None."""
    with engine.begin() as conn:
        if answers is None:
            return int(conn.execute(text("DELETE FROM eval.answer_labels")).rowcount or 0)
        keys = [normalize(a) for a in answers]
        return int(conn.execute(text("DELETE FROM eval.answer_labels WHERE text_norm = ANY(:k)"), {"k": keys}).rowcount or 0)


@dataclass
class LabelImport:
    file: str
    n_rows: int
    n_saved: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def import_labels(engine: Engine, path: str | Path, *, by: str | None = None, data: bytes | None = None,
                  encoding: str | None = None) -> LabelImport:
    """Labels from a CSV / JSON / JSONL file of ``{answer, class[, labelled_by]}`` records; ``by`` names the
    person when the file does not. Errors name the file, the row and the field; nothing is written unless
    every row is good."""
    f = read_file(path, data=data, encoding=encoding)
    name = f.file
    groups: dict[str, list[dict[str, Any]]] = {}
    for row, rec in zip(f.rows, f.records, strict=True):
        try:
            answer = as_text(rec.get("answer"), "answer", required=True)
            who = (as_text(rec.get("labelled_by"), "labelled_by") or "").strip() or (by or "").strip()
            if not who:
                raise FieldError("labelled_by", "no labelled_by in the row and no --by given")
            _checked([{"answer": answer, "class": rec.get("class")}])
        except FieldError as exc:
            raise RecordFileError(name, row, exc.field, exc.message) from None
        groups.setdefault(str(who), []).append({"answer": answer, "class": rec.get("class")})
    if not f.records:
        raise RecordFileError(name, None, None, "no labels in the file")
    n = sum(save_labels(engine, rows, by=who, source=None) for who, rows in groups.items())
    return LabelImport(name, len(f.records), n)


def confirmed_labels(frequent: pd.DataFrame, classes: list[str], confirmed: list[bool]) -> list[dict[str, str]]:
    """The rows of the frequent-answers table a person confirmed, with the class they chose (what
    :func:`save_labels` stores); an unconfirmed row is never returned, whatever its class."""
    if not len(frequent) == len(classes) == len(confirmed):
        raise ValueError(f"{len(frequent)} answers, {len(classes)} classes, {len(confirmed)} confirmations")
    return [{"answer": str(a), "class": str(c)}
            for a, c, ok in zip(frequent["answer"], classes, confirmed, strict=True) if ok]
