"""Question-log import under generated files (hypothesis, >= 200 files) and concurrent imports.

Every generated file is a question-log export in CSV, JSON or JSONL holding tricky but valid text
(quoted line breaks, ``\\r``, U+2028, form feeds, quotes, delimiters, emoji, whitespace-only questions)
and at most one defect: NUL, lone surrogate, int32 overflow, wrong type, bad score/time, a value over
the size limit, a CSV row with an extra cell, a broken CSV quote, truncated JSON, a cp1251 file; or a
valid twist (BOM, UTF-16, a 150,000-character cell, an empty question). Each file is imported into one
source, with or without ``skip_bad_rows``, and the test checks, against a model of what the file holds:

* success ⇒ the source holds exactly the file's good rows, every field equal to what was written;
* failure ⇒ the error names the file, and the row and field of the defect; the source is unchanged;
* no import of zero good rows replaces anything.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voproshalych_eval.analytics.question_log import QuestionLogImportError, import_file, read_log
from voproshalych_eval.datasets.files import INT32_MAX, INT32_MIN, MAX_FIELD_CHARS

COLUMNS = ["id", "question", "answer", "confluence_url", "score", "user_id", "stop_point", "created_at", "updated_at"]
ROW_DEFECTS = ["nul", "int_overflow", "bad_score", "bad_time", "bad_type", "surrogate", "too_long", "wrong_cells"]
FILE_DEFECTS = ["truncated", "cp1251", "bad_quote"]
VALID_TWISTS = ["none", "bom", "utf16", "huge", "empty_question"]
COMBOS = [(k, f) for k in ROW_DEFECTS + FILE_DEFECTS + VALID_TWISTS
          for f in {"wrong_cells": ["csv"], "bad_quote": ["csv"], "truncated": ["json", "jsonl"]}.get(k, ["csv", "json", "jsonl"])]
N_EXAMPLES = int(os.environ.get("IMPORT_FUZZ_EXAMPLES", "240"))

TRICKY = ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x0c", "\x0b", "\x85", "\x1e", '"', "'", ",", ";", "\t", " ",
          "ё", "🙂", "\\", "[", "{", "\ufeff"]
CYRILLIC = "абвгдежзийклмнопрстуфхцчшщъыьэюяАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ"
ASCII = "abcdefghijklmnopqrstuvwxyz0123456789 .,?!-:;()"


@dataclass
class Case:
    fmt: str
    kind: str
    rows: list[dict[str, Any]]
    data: bytes = b""
    bad_row: int | None = None  # 0-based index of the defective row
    bad_field: str | None = None
    file_level: bool = False
    expected_row: int | None = None  # the row number the error must name
    notes: dict[str, Any] = field(default_factory=dict)


def _text(draw: Any, *, cp1251: bool, min_size: int = 0) -> str:
    if cp1251:
        alphabet = st.sampled_from(list(CYRILLIC + ASCII))
    else:
        alphabet = st.one_of(st.sampled_from(TRICKY), st.sampled_from(list(CYRILLIC + ASCII)),
                             st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
    return "".join(draw(st.lists(alphabet, min_size=min_size, max_size=12)))


@st.composite
def cases(draw: Any, kind: str, fmt: str) -> Case:
    cp = kind == "cp1251"
    n = draw(st.integers(1, 5))
    ids = draw(st.lists(st.integers(INT32_MIN, INT32_MAX), min_size=n, max_size=n, unique=True))
    rows = []
    for i in range(n):
        q = _text(draw, cp1251=cp, min_size=1)
        rows.append({
            "id": ids[i],
            "question": q if q.strip() else q + "в",
            "answer": draw(st.one_of(st.none(), st.just(""))) if draw(st.booleans()) else _text(draw, cp1251=cp),
            "url": draw(st.sampled_from([None, "https://wiki.example.ru/display/STUD/Stipendii", "http://x/a;b|c"])),
            "score": draw(st.sampled_from([None, None, 1, 5, 3])),
            "user_id": draw(st.one_of(st.none(), st.integers(INT32_MIN, INT32_MAX))),
            "stop_point": draw(st.booleans()),
            "created_at": draw(st.one_of(st.none(), st.datetimes(
                min_value=datetime(2023, 1, 1), max_value=datetime(2026, 1, 1),
                timezones=st.sampled_from([UTC, timezone(timedelta(hours=5))])))),
        })
    c = Case(fmt, kind, rows)
    k = draw(st.integers(0, n - 1))
    if kind == "cp1251":
        rows[0]["question"] += "ж"
    elif kind == "empty_question":
        rows[k]["question"] = draw(st.sampled_from(["", " ", "\n", "\u2028", "\t \r\n"]))
    elif kind == "huge":
        rows[k]["answer"] = "я" * 150_000
    elif kind in ROW_DEFECTS or kind == "bad_quote":
        c.bad_row = k
        if kind == "nul":
            c.bad_field = draw(st.sampled_from(["question", "answer"]))
            rows[k][c.bad_field] = (rows[k][c.bad_field] or "") + "\x00" + "x"
        elif kind == "int_overflow":
            c.bad_field = draw(st.sampled_from(["id", "user_id"]))
            rows[k][c.bad_field] = draw(st.sampled_from([INT32_MAX + 1, 2**40, INT32_MIN - 1, 10**20]))
        elif kind == "bad_score":
            c.bad_field = "score"
            rows[k]["score"] = draw(st.sampled_from([0, 6, -1, 50]))
        elif kind == "bad_time":
            c.bad_field = "created_at"
            rows[k]["created_at"] = draw(st.sampled_from(["вчера", "2024-13-01", "31.12.2024 10:00"]))
        elif kind == "bad_type":
            options = ["user_id", "stop_point"] + (["question", "answer", "score"] if fmt != "csv" else [])
            c.bad_field = draw(st.sampled_from(options))
            rows[k][c.bad_field] = {"user_id": "abc", "stop_point": "maybe", "question": 123, "answer": ["x"],
                                    "score": True}[c.bad_field]
        elif kind == "surrogate":
            c.bad_field = "question"
            rows[k]["question"] += "\ud800"
            c.file_level = fmt == "csv"  # raw surrogate bytes are not UTF-8: the whole file is refused
        elif kind == "too_long":
            c.bad_field = "answer"
            rows[k]["answer"] = "ы" * (MAX_FIELD_CHARS + 1)
        elif kind == "wrong_cells":
            c.bad_field = None
        elif kind == "bad_quote":
            c.bad_field = "question"
            c.file_level = True
    c.notes["variants"] = {
        "bool": draw(st.sampled_from([("t", "f"), ("true", "false"), ("1", "0"), ("да", "нет"), ("TRUE", "FALSE")])),
        "delim": draw(st.sampled_from([",", ";"])),
        "eol": draw(st.sampled_from(["\n", "\r\n"])),
        "float_ints": draw(st.booleans()),
        "psql_time": draw(st.booleans()),
        "null_as_missing": draw(st.booleans()),
        "cut": draw(st.floats(0.05, 0.95)),
    }
    _serialise(c)
    return c


def _time_text(v: Any, psql: bool) -> str:
    if not isinstance(v, datetime):
        return "" if v is None else str(v)
    return v.isoformat(sep=" ") if psql else v.isoformat()


def _serialise(c: Case) -> None:
    var = c.notes["variants"]
    if c.fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=var["delim"], lineterminator=var["eol"])
        w.writerow(COLUMNS)
        for i, r in enumerate(c.rows):
            cells = []
            for col in COLUMNS:
                v = r.get("url" if col == "confluence_url" else col)
                if col == "updated_at":
                    v = r["created_at"]
                if isinstance(v, bool):
                    v = var["bool"][0] if v else var["bool"][1]
                elif isinstance(v, int) and var["float_ints"] and c.bad_field != col:
                    v = f"{v}.0"
                elif col in ("created_at", "updated_at"):
                    v = _time_text(v, var["psql_time"])
                cells.append("" if v is None else str(v))
            if c.kind == "wrong_cells" and i == c.bad_row:
                cells.append("лишнее")
            if c.kind == "bad_quote" and i == c.bad_row:
                line_buf = io.StringIO()
                csv.writer(line_buf, delimiter=var["delim"], lineterminator=var["eol"], quoting=csv.QUOTE_ALL).writerow(cells)
                raw = line_buf.getvalue()
                first_end = raw.index('"' + var["delim"], 1) + 1  # end of the quoted id cell
                q_start = first_end + 1
                q_end = q_start + 1 + len(cells[1].replace('"', '""')) + 1
                raw = raw[:q_end] + "z" + raw[q_end:]  # "question"z  — a stray character after the closing quote
                buf.write(raw)
                continue
            w.writerow(cells)
        text = buf.getvalue()
    else:
        objs = []
        for r in c.rows:
            o: dict[str, Any] = {}
            for col in COLUMNS[:-1]:
                v = r.get("url" if col == "confluence_url" else col)
                if col == "created_at" and isinstance(v, datetime):
                    v = _time_text(v, var["psql_time"])
                if v is None and var["null_as_missing"] and col not in ("question", "id"):
                    continue
                o[col] = v
            objs.append(o)
        dumped = [json.dumps(o, ensure_ascii=c.kind == "surrogate") for o in objs]
        if c.fmt == "jsonl":
            text = "\n".join(dumped) + "\n"
            starts = [sum(len(d) + 1 for d in dumped[:i]) for i in range(len(dumped))]
        else:
            text = "[\n" + ",\n".join(dumped) + "\n]"
            starts = [2 + sum(len(d) + 2 for d in dumped[:i]) for i in range(len(dumped))]
        if c.kind == "truncated":
            k = len(dumped) - 1 - int(var["cut"] * len(dumped)) % len(dumped)
            cut = starts[k] + 1 + int(var["cut"] * (len(dumped[k]) - 2))
            text = text[:cut]
            c.bad_row, c.file_level = k, c.fmt == "json"
    if c.kind == "cp1251":
        c.data = text.encode("cp1251")
        c.file_level = True
        c.bad_row, c.bad_field = 0, "question"
    elif c.kind == "utf16":
        c.data = text.encode("utf-16")
    elif c.kind == "surrogate" and c.fmt == "csv":
        c.data = text.encode("utf-8", "surrogatepass")
    else:
        c.data = (b"\xef\xbb\xbf" if c.kind == "bom" else b"") + text.encode("utf-8")
    if c.bad_row is not None:
        c.expected_row = c.bad_row + (2 if c.fmt == "csv" else 1)


def _expected(r: dict[str, Any], file_row: int) -> dict[str, Any]:
    ts = r["created_at"]
    return {
        "id": r["id"], "question": r["question"], "answer": r["answer"] or None, "url": r["url"] or None,
        "score": r["score"], "user_id": r["user_id"], "stop_point": r["stop_point"],
        "created_at": None if ts is None else pd.Timestamp(ts).tz_convert("UTC"),
    }


def _stored(engine: Any, source: str) -> list[dict[str, Any]]:
    try:
        df = read_log(engine, source=source)
    except LookupError:
        return []
    out = []
    for r in df.sort_values("id").to_dict("records"):
        out.append({
            "id": int(r["id"]), "question": r["question"],
            "answer": None if pd.isna(r["answer"]) else r["answer"], "url": None if pd.isna(r["url"]) else r["url"],
            "score": None if pd.isna(r["score"]) else int(r["score"]),
            "user_id": None if pd.isna(r["user_id"]) else int(r["user_id"]),
            "stop_point": bool(r["stop_point"]),
            "created_at": None if pd.isna(r["created_at"]) else r["created_at"],
        })
    return out


def test_generated_imports_never_partial_never_altered(engine) -> None:  # type: ignore[no-untyped-def]
    source = "fuzz_import"
    seen: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    tmp = Path(tempfile.mkdtemp(prefix="import-fuzz-"))

    def one(case: Case, skip: bool) -> None:
        state = _stored(engine, source)  # what the previous import left (examples are replayed while shrinking)
        seen[f"{case.kind}/{case.fmt}"] += 1
        name = f"export_{seen.total()}.{case.fmt}"
        path = tmp / name
        path.write_bytes(case.data)
        defect = case.bad_row is not None
        good = [_expected(r, i) for i, r in enumerate(case.rows) if i != case.bad_row or not defect]
        if case.kind == "truncated" and case.fmt == "jsonl":
            good = [_expected(r, i) for i, r in enumerate(case.rows) if i < (case.bad_row or 0)]
        must_fail = defect and (case.file_level or not skip or not good)
        try:
            rep = import_file(engine, path, source=source, skip_bad_rows=skip)
        except QuestionLogImportError as exc:
            assert must_fail, f"{case.kind}/{case.fmt}: unexpected error {exc}"
            assert exc.file == name and str(exc).startswith(name)
            if case.file_level or not skip:
                assert exc.row == case.expected_row, (case.kind, case.fmt, str(exc))
                assert exc.field == case.bad_field, (case.kind, case.fmt, str(exc))
            else:  # skip_bad_rows, and the only row was bad
                assert "no good rows" in exc.message and f"row {case.expected_row}" in exc.message
            assert _stored(engine, source) == state, f"{case.kind}: the source changed after a failed import"
            outcomes["refused"] += 1
            return
        assert not must_fail, f"{case.kind}/{case.fmt} (skip={skip}) was imported: {rep}"
        stored = _stored(engine, source)
        expected = sorted(good, key=lambda r: r["id"])
        assert stored == expected, f"{case.kind}/{case.fmt}: stored rows differ from the file"
        assert rep.n_imported == len(good) and rep.replaced == len(state)
        if defect:
            assert [(e["row"], e["field"]) for e in rep.errors] == [(case.expected_row, case.bad_field)]
        else:
            assert rep.errors == []
        assert rep.n_empty_questions == sum(1 for r in good if not r["question"].strip())
        outcomes["imported"] += 1

    per_pair = -(-N_EXAMPLES // len(COMBOS))
    for kind, fmt in COMBOS:  # every kind of defect in every format it applies to, hypothesis filling the rest
        run = settings(max_examples=per_pair, deadline=None, derandomize=True, database=None,
                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])(
            given(case=cases(kind, fmt), skip=st.booleans())(one))
        run()
    assert seen.total() >= 200
    missing = {f"{k}/{f}" for k, f in COMBOS} - set(seen)
    assert len(missing) <= len(COMBOS) // 10, f"kind/format pairs never generated: {sorted(missing)}"
    assert outcomes["imported"] >= 50 and outcomes["refused"] >= 50, outcomes
    print(f"\nimport fuzz: {seen.total()} files, {dict(outcomes)}, by kind/format: {dict(sorted(seen.items()))}")


def _export(ids: range, tag: str) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["id", "question", "user_id"])
    for i in ids:
        w.writerow([i, f"вопрос {tag} {i}", i % 97])
    return out.getvalue()


def test_concurrent_imports_into_one_source_end_with_one_file(engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(_export(range(1, 3001), "A"), encoding="utf-8")
    b.write_text(_export(range(3001, 6001), "B"), encoding="utf-8")
    for _round in range(3):
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def run(p: Path, barrier: threading.Barrier = barrier, errors: list[BaseException] = errors) -> None:
            try:
                barrier.wait()
                import_file(engine, p, source="concurrent")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(p,)) for p in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        ids = set(read_log(engine, source="concurrent")["id"].astype(int))
        assert ids in (set(range(1, 3001)), set(range(3001, 6001))), f"{len(ids)} rows: a mix of both files"


def test_zero_good_rows_replace_nothing(engine, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    good = tmp_path / "good.csv"
    good.write_text(_export(range(1, 21), "G"), encoding="utf-8")
    assert import_file(engine, good, source="keep_me").n_imported == 20
    bad = tmp_path / "bad.csv"
    bad.write_text("id,question,score\n1,а,9\n2,б,отлично\n3,в,0\n", encoding="utf-8")
    with pytest.raises(QuestionLogImportError, match="no good rows") as err:
        import_file(engine, bad, source="keep_me", skip_bad_rows=True)
    assert "left unchanged" in str(err.value) and "row 2, field 'score'" in str(err.value)
    assert len(read_log(engine, source="keep_me")) == 20
    assert main(["import-questions", str(bad), "--source", "keep_me", "--skip-bad-rows"]) == 2
    assert "no good rows" in capsys.readouterr().err
    assert len(read_log(engine, source="keep_me")) == 20
    empty = tmp_path / "empty.csv"
    empty.write_text("id,question\n", encoding="utf-8")
    with pytest.raises(QuestionLogImportError, match="no rows"):
        import_file(engine, empty, source="keep_me")


def test_judge_input_errors_name_the_row_and_start_no_run(engine, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import text

    from voproshalych_eval.cli import main

    def n_runs() -> int:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM eval.runs WHERE tier = 'judge_metrics'")).scalar_one())

    before = n_runs()
    for name, data in (("nul.jsonl", b'{"user_input": "a", "response": "b"}\n{"user_input": "c\\u0000", "response": "d"}\n'),
                       ("cp.json", json.dumps([{"user_input": "где общежитие"}], ensure_ascii=False).encode("cp1251")),
                       ("cut.json", b'[{"user_input": "a"}, {"user_inp')):
        p = tmp_path / name
        p.write_bytes(data)
        assert main(["judge", "--metric", "faithfulness", "--input", str(p), "--offline", "--json"]) == 2
        err = capsys.readouterr().err
        assert f"{name}, row " in err, err
    assert n_runs() == before
