"""A golden dataset of N answerable items made from the demo's, each question distinct (so no LLM cache hit):
the 200-item runs of the job-queue tests and benchmark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def golden_copies(engine: Any, path: Path, n: int, *, tag: str = "вариант") -> Path:
    """Write ``n`` golden records (ids ``w000``…, questions suffixed ``(tag i)``) to ``path``; returns it."""
    from voproshalych_eval.datasets.store import get_dataset

    base = [r for r in get_dataset(engine, "demo_golden", "golden").records if r.get("question_type") != "unanswerable"]
    records = []
    for i in range(n):
        r = dict(base[i % len(base)])
        r["id"] = f"w{i:03d}"
        r["question"] = f"{r['question']} ({tag} {i})"
        records.append(r)
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path
