"""The earlier benchmark's and production's own files load as they are (issue 14, section 2).

Fixtures (invented Russian content, the real formats) in ``tests/fixtures/earlier_benchmark/``:
``question_answer_export.csv`` (psql ``\\copy … csv header`` of the production log: t/f booleans, psql
timestamps, rows without timestamps, three rows without question text), ``golden_syn.json`` (``syn_`` ids,
``question_source``, ``chunk_text`` cut to 500 characters) and ``show_no_show_labels.json``
(``ground_truth_show``, ``rationale``, four items with an empty context, as production judges cached answers).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # ``tests.support`` importable

from tests.support.plans import real_users as run_real_users  # noqa: E402
from tests.support.scripted_openai import Reply, scripted_openai, scripted_openai_env  # noqa: E402,F401
from voproshalych_eval.analytics import import_file, read_log  # noqa: E402
from voproshalych_eval.datasets import store as datasets  # noqa: E402
from voproshalych_eval.engine import runs
from voproshalych_eval.engine.executor import run_plan  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "earlier_benchmark"
EXPORT = FIXTURES / "question_answer_export.csv"
GOLDEN = FIXTURES / "golden_syn.json"
LABELS = FIXTURES / "show_no_show_labels.json"


# ------------------------------------------------------------------ the production question-log export


def test_production_export_imports_without_edits(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    rep = import_file(demo_engine, EXPORT, source="prod_export")
    assert (rep.n_rows, rep.n_imported, rep.n_skipped, rep.n_empty_questions) == (18, 18, 0, 3)
    df = read_log(demo_engine, source="prod_export").set_index("id")
    assert sorted(df.index[df["is_empty_question"]]) == [3, 7, 14]
    assert df.loc[7, "question"] == "   "  # kept as written, flagged
    assert df.loc[5, "answer"].count("\n") == 1  # a quoted line break inside the answer survives
    assert df.loc[13, "question"] == '"ПГАС" — это сколько?'
    assert df.loc[[9, 10], "created_at"].isna().all()  # rows without timestamps
    ts = df.loc[13, "created_at"]
    assert ts == pd.Timestamp("2025-02-14 07:30:00.5", tz="UTC")  # psql's "+05" offset, fractional seconds
    assert sorted(df.index[df["stop_point"]]) == [4, 14]
    assert df.loc[2, "score"] == 5 and pd.isna(df.loc[1, "answer"]) and df.loc[12, "answer"] == "Ответ не найден."

    from voproshalych_eval.cli import main

    assert main(["import-questions", str(EXPORT), "--source", "prod_export_cli", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_imported"] == 18 and out["n_empty_questions"] == 3 and out["errors"] == []


def test_empty_questions_are_events_not_text(demo_engine) -> None:  # type: ignore[no-untyped-def]
    import_file(demo_engine, EXPORT, source="prod_export_an")
    # the export is of the demo bot: linked to its knowledge base on purpose (utilization needs one)
    res = run_real_users(demo_engine, source="prod_export_an", analyses=("utilization", "domain"), link_kb=True)
    assert res.n_used == 18 and res.n_empty_questions == 3 and len(res.text_log) == 15
    assert res.embeddings is not None and res.embeddings.n_used == 15  # nothing embedded for the empty rows
    assert res.utilization is not None
    m, T = res.domain.metrics, res.domain.tables  # type: ignore[union-attr]
    assert (m["n_questions_used"], m["n_text_questions"], m["n_empty_questions"]) == (18, 15, 3)
    assert T["score_distribution"]["questions"].sum() == 18  # events count everywhere but in text tables
    assert T["categories"]["questions"].sum() == 15 and len(T["lengths"]) == 15
    assert m["unique_users"] == 11
    # user 108's empty row (id 14) ends a session (stop_point) — it is part of the sessions
    assert m["n_sessions"] == len(set(_sessions(res.log)))
    assert "" not in set(T["exact_repeats"]["question"])
    stored = runs.get_run(demo_engine, res.run_id).metrics
    assert stored["n_empty_questions"] == 3 and stored["n_questions_used"] == 18


def _sessions(log: pd.DataFrame) -> list[int]:
    from voproshalych_eval.analytics.domain import sessions

    return sessions(log).tolist()


# ------------------------------------------------------------------ the earlier golden set


def test_earlier_golden_file_loads_as_is() -> None:
    ds = datasets.load_file(GOLDEN, "golden")
    assert ds.keys() == ["syn_0001", "syn_0002", "syn_0003", "syn_0004", "syn_0005"]
    by = {r["id"]: r for r in ds.records}
    assert {r["question_source"] for r in ds.records} == {"synthetic_from_chunk", "synthetic_paraphrase", "real_log_rewritten"}
    assert [r.get("chunk_text_truncated", False) for r in ds.records] == [True, True, False, False, False]
    assert by["syn_0002"]["relevant_chunk_ids"] == [57]  # absent: the chunk itself
    assert by["syn_0005"]["relevant_chunk_ids"] == [70]  # empty list: the chunk itself
    assert by["syn_0003"]["relevant_chunk_ids"] == [63, 64]
    assert by["syn_0001"]["relevant_urls"] == [by["syn_0001"]["confluence_url"]]


def test_chunk_text_shorter_than_the_knowledge_base_is_flagged(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.db.production import read_chunks

    kb = read_chunks(demo_engine)
    kb = kb[kb["text"].str.len() > 400].head(2)
    (cut_id, cut_text), (full_id, full_text) = zip(kb["id"].astype(int), kb["text"], strict=True)
    items = [
        {"id": "syn_a", "question": "Вопрос про обрезанный фрагмент?", "ground_truth_answer": "…", "chunk_id": cut_id,
         "chunk_text": cut_text[:300], "question_source": "synthetic_from_chunk"},
        {"id": "syn_b", "question": "Вопрос про целый фрагмент?", "ground_truth_answer": "…", "chunk_id": full_id,
         "chunk_text": full_text, "question_source": "synthetic_from_chunk"},
    ]
    p = tmp_path / "golden_prefix.json"
    p.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    ds = datasets.resolve(demo_engine, str(p), "golden")
    flags = {r["id"]: r.get("chunk_text_truncated", False) for r in ds.records}
    assert flags == {"syn_a": True, "syn_b": False}
    assert datasets.get_dataset(demo_engine, ds.id).records[0]["chunk_text_truncated"] is True


# ------------------------------------------------------------------ the show/no-show label set


def test_label_file_loads_with_ground_truth_show_and_empty_context() -> None:
    ds = datasets.load_file(LABELS, "judge")
    assert len(ds) == 10 and [r["label"] for r in ds.records] == [1, 0, 1, 0, 1, 0, 1, 1, 0, 0]
    assert sum(1 for r in ds.records if not r["context"]) == 4
    assert all(r["rationale"] for r in ds.records)
    bad = [{"question": "q", "answer": "a", "context": "", "label": 1, "ground_truth_show": False}]
    with pytest.raises(datasets.DatasetError) as err:
        datasets.validate_records(bad, "judge", file="x.json")
    assert err.value.field == "ground_truth_show" and "disagrees" in err.value.message
    with pytest.raises(datasets.DatasetError, match="ground_truth_show true/false"):
        datasets.validate_records([{"question": "q", "answer": "a"}], "judge", file="x.json")


def test_pipeline_judges_empty_context_without_it_and_splits_metrics(demo_engine, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    srv = scripted_openai_env
    # items are judged in file order (concurrency 1): six with a context, then four without
    srv.script(*[Reply.text("Yes")] * 6, *[Reply.text("No: из кэша")] * 4)
    run_id, prog = run_plan(demo_engine, build_plan(demo_engine, {"dataset": str(LABELS), "calibrate": False,
                                                                  "concurrency": 1}))
    assert prog.status == "done"
    sent = [r["messages"][0]["content"] for r in srv.requests[-10:]]
    with_ctx, without_ctx = sent[:6], sent[6:]
    assert all("Фрагмент базы знаний" in s for s in with_ctx)
    assert not any("Фрагмент базы знаний" in s or "{context}" in s for s in without_ctx)
    assert "как взломать личный кабинет преподавателя" in without_ctx[2]
    m = runs.get_run(demo_engine, run_id).metrics
    # hand-computed: labels 1,0,1,0,1,0 | 1,1,0,0 ; verdicts 1×6 | 0×4
    assert m["with_context"]["n_items"] == 6 and m["without_context"]["n_items"] == 4
    assert m["with_context"]["accuracy"] == pytest.approx(0.5) and m["with_context"]["recall"] == 1.0
    assert m["with_context"]["precision"] == pytest.approx(0.5)
    assert m["without_context"]["accuracy"] == pytest.approx(0.5) and m["without_context"]["recall"] == 0.0
    assert m["without_context"]["f1_score"] == 0.0
    # overall TP 3, FP 3, FN 2, TN 2
    assert m["precision"] == pytest.approx(0.5) and m["recall"] == pytest.approx(0.6)
    assert m["f1_score"] == pytest.approx(2 * 0.5 * 0.6 / 1.1)
    items = runs.run_items(demo_engine, run_id)
    assert items["with_context"].tolist().count(False) == 4 and items["rationale"].notna().all()


def test_benchmark_judge_only_where_there_is_a_context(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    run_id, _ = run_plan(demo_engine, build_plan(demo_engine, {"dataset": str(LABELS), "offline": True}))
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["benchmark_n_valid"] + m["benchmark_n_failed"] == 6
    assert m["n_valid"] + m["n_failed"] == 10 and m["without_context"]["n_valid"] == 4
