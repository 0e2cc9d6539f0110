"""Issue 22 §3, the audit's smaller points that need the store: "answered" means the same in SQL and in Python."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: every whitespace Python's ``str.strip`` removes, and a few that are not whitespace
WHITESPACE_ANSWERS = [" ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\xa0", "\u2003", "\u3000", "\u2028", "\u202f", "\x85",
                      " \t\xa0 "]
REAL_ANSWERS = ["ok", "\u200bzero-width", " 42 "]


def test_answered_filter_in_sql_matches_python(engine: Any, tmp_path: Path) -> None:
    from voproshalych_eval.analytics.question_log import LogFilters, delete_source, import_file, read_log

    rows = [{"id": i, "question": f"вопрос {i}", "answer": a}
            for i, a in enumerate(WHITESPACE_ANSWERS + REAL_ANSWERS, start=1)]
    f = tmp_path / "ws.jsonl"
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    source = "whitespace-audit"
    import_file(engine, f, source=source)
    try:
        everything = read_log(engine, source=source)
        assert len(everything) == len(rows)
        py = set(everything.loc[everything["answered"], "id"])
        assert py == set(range(len(WHITESPACE_ANSWERS) + 1, len(rows) + 1))
        sql_yes = set(read_log(engine, source=source, filters=LogFilters(answered=True))["id"])
        sql_no = set(read_log(engine, source=source, filters=LogFilters(answered=False))["id"])
        assert sql_yes == py and sql_no == set(everything["id"]) - py
    finally:
        delete_source(engine, source)
