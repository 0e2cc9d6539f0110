"""Hand-picked gaps and the re-check of addressed gaps after a real new log import (demo, embedded PostgreSQL).

The demo log is exported to a CSV file and imported through the normal import path (``import-questions``); the
analysis runs on it; a topic gap and a hand-picked gap are marked addressed; then a newer export — the same rows
plus the gaps' questions asked again after the change, now answered — is imported into the same source and the
analysis runs again: the re-check compares the effective answered rate before vs after the change."""

from __future__ import annotations

import csv
import json
from datetime import timedelta

import pandas as pd
import pytest

from tests.support.plans import real_users as run_real_users
from voproshalych_eval.analytics import gaps

SOURCE = "gaps_recheck_log"
ANSWER = "Пересдача проходит по графику кафедры: запишитесь у преподавателя и возьмите направление в деканате."
COLUMNS = ["id", "question", "answer", "url", "score", "user_id", "created_at"]


def _write(path, rows: list[dict]) -> None:  # type: ignore[no-untyped-def, type-arg]
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None or (isinstance(r.get(k), float) and pd.isna(r.get(k))) else r[k])
                        for k in COLUMNS})


def _import(path, capsys) -> dict:  # type: ignore[no-untyped-def, type-arg]
    from voproshalych_eval.cli import main

    assert main(["import-questions", str(path), "--source", SOURCE, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def first_log(demo_engine, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The demo log exported as a file (production column names) and analysed once as an imported source."""
    from sqlalchemy import text

    from voproshalych_eval.analytics.question_log import read_log

    with demo_engine.begin() as conn:  # this module's analyses are the only ones the gaps sync sees
        conn.execute(text("DELETE FROM eval.gaps"))
        conn.execute(text("DELETE FROM eval.runs WHERE tier = 'real_users'"))
    df = read_log(demo_engine, source="question_answer")
    df = df[df["created_at"].notna()]
    rows = [{"id": int(r.id), "question": r.question, "answer": r.answer, "url": r.url,
             "score": None if pd.isna(r.score) else int(r.score), "user_id": r.user_id,
             "created_at": pd.Timestamp(r.created_at).isoformat()} for r in df.itertuples(index=False)]
    path = tmp_path_factory.mktemp("logs") / "log_v1.csv"
    _write(path, rows)
    return rows, path


def test_create_a_gap_from_hand_picked_questions(demo_engine, first_log, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    rows, path = first_log
    rep = _import(path, capsys)
    assert rep["n_imported"] == len(rows)
    run_real_users(demo_engine, source=SOURCE, analyses=("topics",), k_range=(8, 12), link_kb=True)
    by_text: dict[str, list[int]] = {}
    for r in rows:
        by_text.setdefault(" ".join(str(r["question"]).lower().replace("ё", "е").split()), []).append(r["id"])
    text_q = next(r["question"] for r in rows if len(by_text[" ".join(str(r["question"]).lower().replace("ё", "е")
                                                                     .split())]) >= 2)
    id_q = rows[5]["id"]
    assert main(["gaps", "create", "--questions", str(id_q), "  " + text_q.upper() + " ", "--name", "Выбранные",
                 "--json"]) == 0
    g = json.loads(capsys.readouterr().out)
    want = {id_q, *by_text[" ".join(text_q.lower().replace("ё", "е").split())]}
    assert g["kind"] == "questions" and g["name"] == "Выбранные" and set(g["log_ids"]) >= want
    assert g["latest"]["n_questions"] == len(g["log_ids"]) and g["latest"]["picked"] is True
    # from a file, through the one record reader; and errors name where the bad question came from
    f = tmp_path / "picked.csv"
    f.write_text(f"log_id,question\n{rows[7]['id']},\n,{rows[9]['question']}\n", encoding="utf-8")
    assert main(["gaps", "create", "--file", str(f), "--json"]) == 0
    g2 = json.loads(capsys.readouterr().out)
    assert {rows[7]["id"], rows[9]["id"]} <= set(g2["log_ids"]) and g2["name"]
    assert main(["gaps", "create", "--questions", "999999999"]) == 2
    assert "--questions value 1: log id 999999999 is not in" in capsys.readouterr().err
    assert main(["gaps", "create", "--questions", "такого вопроса в журнале нет совсем"]) == 2
    assert "is not in the question log" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text(f"log_id,question\n{rows[7]['id']},{rows[9]['question']}\nабв,\n", encoding="utf-8")
    assert main(["gaps", "create", "--file", str(bad)]) == 2
    assert "bad.csv, row 2, field 'question': give either a log_id or a question, not both" in capsys.readouterr().err
    bad.write_text("id,question\n1,x\n", encoding="utf-8")
    assert main(["gaps", "create", "--file", str(bad)]) == 2
    assert "unknown column" in capsys.readouterr().err


def test_recheck_after_a_new_log_import(demo_engine, first_log, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    rows, _ = first_log
    all_gaps = gaps.list_gaps(demo_engine)
    picked = next(g for g in all_gaps if g.kind == "questions")
    topic = next(g for g in all_gaps if g.kind == "topic" and (g.latest.get("effective_answered_rate") or 1) < 0.9)
    last = max(pd.Timestamp(r["created_at"]) for r in rows)
    at = last + timedelta(days=1)
    for g in (picked, topic):
        assert main(["gaps", "status", str(g.id), "addressed", "--note", "статья опубликована", "--at",
                     at.isoformat()]) == 0
    capsys.readouterr()
    assert gaps.recheck(demo_engine, picked.id)["verdict"] == "no questions after the change yet"
    # the newer export: every row of the first one, plus the gaps' questions asked again after the change, answered
    again = [q["question"] for q in gaps.gap_questions(demo_engine, picked.id)]
    again += [q["question"] for q in gaps.gap_questions(demo_engine, topic.id)][:25]
    next_id = max(r["id"] for r in rows) + 1
    new = [{"id": next_id + i, "question": q, "answer": ANSWER, "url": None, "score": 5, "user_id": 900000 + i,
            "created_at": (at + timedelta(days=2, minutes=i)).isoformat()} for i, q in enumerate(again)]
    path = tmp_path / "log_v2.csv"
    _write(path, rows + new)
    rep = _import(path, capsys)
    assert rep["n_imported"] == len(rows) + len(new) and rep["replaced"] == len(rows)
    res = run_real_users(demo_engine, source=SOURCE, analyses=("topics",), k_range=(8, 12), link_kb=True)
    assert main(["gaps", "show", str(picked.id), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [h["run_id"] for h in shown["history"]][-1] == res.run_id
    rc = shown["recheck"]
    n_picked_new = len(gaps.gap_questions(demo_engine, picked.id, run_id=shown["history"][0]["run_id"]))
    new_ids = {r["id"] for r in new}
    latest_ids = {q["log_id"] for q in gaps.gap_questions(demo_engine, picked.id)}
    assert rc["n_after"] == len(latest_ids & new_ids) >= n_picked_new > 0
    assert rc["effective_after"] == 1.0  # every new row is a real answer
    before = [q["effective"] for q in gaps.gap_questions(demo_engine, picked.id) if q["log_id"] not in new_ids]
    assert rc["n_before"] == len(before) and rc["effective_before"] == pytest.approx(sum(before) / len(before))
    assert rc["test"]["method"] == "two_sample_permutation" and 0 < rc["test"]["p_value"] <= 1
    assert rc["verdict"] in ("better", "no significant change")
    assert (rc["verdict"] == "better") == (rc["test"]["significant"] and rc["test"]["mean_diff"] > 0)
    # the topic gap is found again in the new analysis (its centroid) and its new questions count after the change
    trc = gaps.recheck(demo_engine, topic.id)
    assert trc["run_id"] == res.run_id
    tq = gaps.gap_questions(demo_engine, topic.id)
    assert trc["n_after"] == sum(1 for q in tq if q["log_id"] in new_ids) > 0
    print(f"re-check picked #{picked.id}: effective {rc['effective_before']:.3f} (n={rc['n_before']}) -> "
          f"{rc['effective_after']:.3f} (n={rc['n_after']}), p={rc['test']['p_value']:.4f}, {rc['verdict']}; topic "
          f"#{topic.id}: {trc['effective_before']:.3f} (n={trc['n_before']}) -> {trc['effective_after']} "
          f"(n={trc['n_after']}), {trc['verdict']}")
