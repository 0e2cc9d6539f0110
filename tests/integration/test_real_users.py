"""Real-user analytics on the demo log: utilization, topics and gaps, domain, whole-log embedding, import, CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sqlalchemy import text

from tests.support.plans import real_users as run_real_users
from voproshalych_eval.analytics import (
    LogFilters,
    QuestionLogImportError,
    import_file,
    list_sources,
    read_log,
)
from voproshalych_eval.analytics.report import coverage_gap_html, coverage_gap_markdown
from voproshalych_eval.engine import runs


@pytest.fixture(scope="module")
def result(demo_engine):  # type: ignore[no-untyped-def]
    return run_real_users(demo_engine, k_range=(6, 14))


def test_whole_log_is_used(demo_source, result) -> None:  # type: ignore[no-untyped-def]
    with demo_source.connect() as conn:
        n_rows = conn.execute(text("SELECT count(*) FROM public.question_answer")).scalar()
        n_stored = conn.execute(text("SELECT count(*) FROM public.question_answer WHERE embedding IS NOT NULL")).scalar()
    assert result.snapshot["n_questions"] == n_rows and result.snapshot["n_questions_with_embedding"] == n_stored
    assert n_stored < n_rows / 5  # like production: only a minority had stored embeddings
    assert result.n_used == n_rows
    assert result.embeddings.n_used == n_rows
    assert result.embeddings.n_stored + result.embeddings.n_embedded == n_rows
    assert result.metrics["n_questions_used"] == n_rows
    assert result.utilization.metrics["n_questions_used"] == n_rows
    assert result.topics.metrics["n_questions_used"] == n_rows
    assert result.domain.metrics["n_questions_used"] == n_rows
    assert len(result.topics.labels) == n_rows and (result.topics.labels >= 0).all()


def test_utilization(result) -> None:  # type: ignore[no-untyped-def]
    u = result.utilization
    for key in ("chunk_coverage", "chunk_coverage@1", "page_coverage", "page_coverage@1"):
        assert 0.0 <= u.metrics[key] <= 1.0
    assert u.metrics["chunk_coverage@1"] <= u.metrics["chunk_coverage"]
    assert u.metrics["n_chunks"] == len(u.per_chunk) >= 150
    never = set(u.never_retrieved["chunk_id"])
    assert never == set(u.per_chunk.loc[u.per_chunk["retrieved_topk"] == 0, "chunk_id"])
    assert u.metrics["n_never_retrieved"] == len(never)
    assert {"chunk_id", "url", "text"} <= set(u.never_retrieved.columns)
    assert u.per_chunk["retrieved_top1"].sum() == result.n_used  # every question has a top-1
    assert u.per_chunk["retrieved_topk"].sum() == result.n_used * u.params["top_k"]
    assert u.per_page["retrieved_topk"].sum() == u.per_chunk["retrieved_topk"].sum()


def test_topics_and_gaps(result) -> None:  # type: ignore[no-untyped-def]
    t = result.topics
    assert 6 <= t.metrics["n_topics"] <= 14
    assert len(t.k_scores) >= 2 and t.params["k_chosen_by"] == "silhouette"
    best = t.k_scores.sort_values("silhouette").iloc[-1]
    assert int(best["k"]) == t.metrics["n_topics"]
    clusters = t.topics[t.topics["kind"] == "cluster"]
    assert len(clusters) == t.metrics["n_topics"]
    assert t.topics["size"].sum() == result.n_used
    for terms in clusters["terms"]:
        assert terms and all(any("а" <= ch <= "я" for ch in term) or term.isascii() for term in terms)
    assert any(any("а" <= ch <= "я" for ch in name) for name in clusters["name"])
    assert t.metrics["seed_ari_mean"] is not None and -1 <= t.metrics["seed_ari_mean"] <= 1
    gaps = t.gaps
    assert list(gaps["gap_rank"]) == list(range(1, len(gaps) + 1))
    ranked = gaps[~gaps["off_topic"]]
    # clean topics first, then mixed ones (a mixed cluster is not one gap), each by falling gap score
    assert (np.diff(ranked["mixed"].astype(int).to_numpy()) >= 0).all()
    for mixed in (False, True):
        assert (np.diff(ranked[ranked["mixed"] == mixed]["gap_score"].to_numpy()) <= 1e-12).all()
    assert ((gaps["gap_score"] >= 0) & (gaps["gap_score"] <= 1)).all()
    assert all(len(ex) >= 1 for ex in gaps["examples"])


def test_topic_names_have_no_stop_words_or_filler(result) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.analytics import text_ru

    clusters = result.topics.topics[result.topics.topics["kind"] == "cluster"]
    for name, terms in zip(clusters["name"], clusters["terms"], strict=True):
        # a name is a keyphrase (an agreed adjective + noun) or a shortened central question, not a term list
        words = [w.strip() for w in name.split(",")]
        assert name.strip() and not (len(words) > 1 and words == terms[: len(words)]), (name, terms)
        for w in terms:
            assert w not in text_ru.STOP_WORDS, (name, w)
            assert w not in text_ru.FILLER_WORDS, (name, w)
            assert text_ru.lemma(w) not in text_ru.STOP_WORDS | text_ru.FILLER_WORDS, (name, w)
        assert len(set(terms)) == len(terms)
    # how far a name covers its topic: share of the topic's questions with a word of the name
    from voproshalych_eval.analytics.topics import MIXED_NAME_COVERAGE

    cov = clusters["name_coverage"].astype(float)
    assert ((cov > 0) & (cov <= 1)).all() and cov.median() >= 0.5
    assert (clusters["mixed"] == (cov < MIXED_NAME_COVERAGE)).all()


def test_examples_are_pairwise_below_the_near_duplicate_threshold(result) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.analytics.topics import NEAR_THRESHOLD

    t = result.topics
    X = result.embeddings.vectors / np.linalg.norm(result.embeddings.vectors, axis=1, keepdims=True)
    questions = result.text_log["question"].astype(str).to_numpy()
    n_checked = 0
    for _, r in t.topics.iterrows():
        assert len(r["examples"]) == len(r["example_counts"]) >= 1
        assert sum(r["example_counts"]) <= r["size"] and min(r["example_counts"]) >= 1
        rows = [int(np.flatnonzero((questions == e) & (t.labels == r["topic"]))[0]) for e in r["examples"]]
        E = X[rows]
        S = E @ E.T
        off = S[~np.eye(len(rows), dtype=bool)]
        assert (off < NEAR_THRESHOLD).all(), (r["name"], r["examples"])
        n_checked += len(rows) > 1
    assert n_checked >= 5


def test_effective_answered_rate_removes_exactly_the_declines(result) -> None:  # type: ignore[no-untyped-def]
    a = result.answers
    n = result.n_used
    m = result.metrics
    declined = int(a.declined.sum())
    assert m["n_declined"] == declined > 0
    assert m["answered_rate"] - m["effective_answered_rate"] == pytest.approx(declined / n, abs=1e-12)
    assert result.topics.metrics["effective_answered_rate"] == pytest.approx(m["effective_answered_rate"])
    assert result.domain.metrics["effective_answered_rate"] == pytest.approx(m["effective_answered_rate"])
    # the demo log holds disguised declines like the production one (~8% of answered rows + templates)
    answers = result.log["answer"].fillna("")
    for decline in ("Ответ не найден.", "Что-то в вашем вопросе меня смущает", "Извините, но в предоставленном фрагменте"):
        hit = answers.str.startswith(decline).to_numpy()
        assert hit.any() and set(a.classes[hit]) <= {"not_found", "refusal"}, decline
    topics = result.topics.topics
    assert np.allclose(topics["declined"], topics["size"] * (topics["answered_share"] - topics["effective_answered_share"]))
    assert topics["declined"].sum() == declined
    gaps = result.topics.gaps
    assert {"answered_share", "effective_answered_share"} <= set(gaps.columns)


def test_topics_k_override(demo_engine, result) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.analytics.topics import topic_coverage

    t = topic_coverage(result.text_log, result.embeddings.vectors, result.retrieval, k_topics=5,
                       categories=result.categories)
    assert t.metrics["n_topics"] == 5 and t.params["k_chosen_by"] == "override"

    # names a person gives are kept for later runs, matched by centroid: rename topic 0, merge topics 1 and 2
    from voproshalych_eval.analytics import topic_memory as tm

    model = result.embeddings.model
    sizes = t.topics.set_index("topic")["size"]
    g_rename = tm.remember(demo_engine, model, [t.centroids[0]], "  Мои  стипендии ")
    tm.remember(demo_engine, model, [t.centroids[1], t.centroids[2]], "Объединённая тема")
    try:
        again = topic_coverage(result.text_log, result.embeddings.vectors, result.retrieval, k_topics=5,
                               categories=result.categories, memory=tm.TopicMemory.load(demo_engine, model))
        assert again.metrics["n_topics"] == 4 and again.metrics["n_user_named"] == 2
        named = again.topics[again.topics["user_named"]].set_index("name")
        assert named.loc["Мои стипендии", "size"] == sizes[0] and named.loc["Мои стипендии", "merged_from"] == 1
        assert named.loc["Объединённая тема", "size"] == sizes[1] + sizes[2]
        assert named.loc["Объединённая тема", "merged_from"] == 2
        assert again.topics["size"].sum() == result.n_used
        # a rename of a stored group updates every row of it; forgetting removes it
        ids = list(named.loc["Объединённая тема", "stored_ids"])
        assert tm.rename_group(demo_engine, ids[:1], "Новое имя") == 2
        assert {n.name for n in tm.list_names(demo_engine, model)} == {"Мои стипендии", "Новое имя"}
        assert {n.group_key for n in tm.list_names(demo_engine, model) if n.name == "Мои стипендии"} == {g_rename}
    finally:
        tm.forget(demo_engine, [n.id for n in tm.list_names(demo_engine, model)])
    assert tm.list_names(demo_engine, model) == []


def test_domain_counts_add_up(result) -> None:  # type: ignore[no-untyped-def]
    d = result.domain
    n = result.n_used
    T = d.tables
    assert T["categories"]["questions"].sum() == n
    assert T["score_distribution"]["questions"].sum() == n
    assert T["volume_month"]["questions"].sum() + d.metrics["n_without_time"] == n
    assert T["volume_day"]["questions"].sum() == T["volume_week"]["questions"].sum() == T["by_hour"]["questions"].sum()
    assert T["by_weekday"]["questions"].sum() + d.metrics["n_without_time"] == n
    assert T["questions_per_user"]["users"].sum() == d.metrics["unique_users"]
    assert T["turns_per_session"]["sessions"].sum() == d.metrics["n_sessions"]
    assert len(T["lengths"]) == n
    assert 0 < d.metrics["n_sessions"] <= n
    assert 0.0 <= d.metrics["answered_rate"] <= 1.0
    assert d.metrics["slang_share"] > 0 and len(T["slang_usage"]) > 0
    assert set(T["top_terms"]["subset"]) == {"all", "answered", "unanswered"}
    assert d.metrics["n_near_duplicate_clusters"] is not None


def test_run_recorded(demo_engine, result) -> None:  # type: ignore[no-untyped-def]
    run = runs.get_run(demo_engine, result.run_id)
    assert run.tier == "real_users" and run.status == "done"
    # the run names the snapshot of the knowledge base and log it analysed (a resume reads the same one)
    assert run.snapshot_id is not None
    assert run.snapshot_id == run.params["snapshot"] == run.config["snapshot_id"] == result.snapshot["id"]
    for key in ("chunk_coverage", "chunk_coverage@1", "n_topics", "n_questions_used", "answered_rate"):
        assert key in run.metrics
    assert run.metrics["n_questions_used"] == result.n_used
    # the steps are the run's items, each with its JSON result
    items = runs.run_items(demo_engine, result.run_id).set_index("item_key")
    assert list(runs.get_run(demo_engine, result.run_id).params["analyses"]) == ["utilization", "topics", "domain"]
    assert set(items.index) == {"log", "embeddings", "retrieval", "utilization", "topics", "domain"}
    assert items.loc["topics", "metrics"]["n_topics"] == result.topics.metrics["n_topics"] == run.metrics["n_topics"]
    assert len(items.loc["topics", "topics"]) == min(30, len(result.topics.topics))
    assert items.loc["embeddings", "n_used"] == result.n_used
    # the answer rules are frozen with the run (a resume classifies the same way); both rates are recorded
    from voproshalych_eval.analytics.answers import AnswerRules

    assert run.params["answer_rules"] == AnswerRules().to_dict() == result.answers.rules.to_dict()
    assert run.metrics["effective_answered_rate"] == pytest.approx(result.metrics["effective_answered_rate"])
    assert items.loc["log", "n_declined"] == run.metrics["n_declined"] == int(result.answers.declined.sum())
    assert run.metrics["seed_ari_mean"] == pytest.approx(result.topics.metrics["seed_ari_mean"])


def test_filters(demo_engine, result) -> None:  # type: ignore[no-untyped-def]
    ans = read_log(demo_engine, filters=LogFilters(answered=True))
    una = read_log(demo_engine, filters=LogFilters(answered=False))
    assert len(ans) + len(una) == result.n_used and ans["answered"].all() and not una["answered"].any()
    down = read_log(demo_engine, filters=LogFilters(scores=(1,)))
    assert len(down) > 0 and (down["score"] == 1).all()
    unrated = read_log(demo_engine, filters=LogFilters(scores=(None,)))
    assert unrated["score"].isna().all()
    from datetime import date

    jan = read_log(demo_engine, filters=LogFilters(start=date(2026, 1, 1), end=date(2026, 1, 31)))
    assert len(jan) > 0 and jan["created_at"].notna().all()
    res = run_real_users(demo_engine, analyses=("domain",), filters=LogFilters(answered=False))
    assert res.n_used == len(una) == res.domain.metrics["n_questions_used"]


def test_report(result) -> None:  # type: ignore[no-untyped-def]
    md = coverage_gap_markdown(result)
    assert f"n = {result.n_used}" in md and str(result.topics.gaps.iloc[0]["name"]) in md
    assert "фактически" in md
    page = coverage_gap_html(result)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http" not in page.split("<body>")[0]
    # what changed: topics over time and the emerging/growing topics of the latest month vs the one before
    trends = result.topics.trends
    assert trends is not None and trends.period == ["2026-05"] and trends.previous == ["2026-04"]
    assert "## Что изменилось" in md and "Темы по месяцам" in md and "<h2>Что изменилось</h2>" in page
    assert f"2026-05: {trends.totals['n_now']} вопросов против {trends.totals['n_prev']}" in md
    moved_up = trends.changes[trends.changes["status"].isin(["emerging", "growing"])]
    assert len(moved_up) >= 1, trends.changes  # the demo's May 2026 shows at least one emerging or growing topic
    for _, r in moved_up.iterrows():
        assert str(r["name"]) in md
    assert result.metrics["n_emerging_topics"] == len(trends.status_of("emerging"))
    # the demo's new subject (the mobile app, May 2026) shows as emerging words, in the page's and report's summary
    assert "приложение" in set(trends.terms["term"]) and result.metrics["n_emerging_terms"] == len(trends.terms)
    assert "Новые слова в вопросах" in md and "`приложение`" in md


CSV_EXTRA = (
    "id,question,answer,confluence_url,score,user_id,created_at,stop_point,extra\n"
    "1,когда стипендия,25 числа,https://x/Stipendii,5,10,2025-09-01T10:00:00+05:00,false,zzz\n"
    "2,где общага,,,,10,2025-09-01T10:05:00+05:00,true,\n"
    "3,привет,,,,,,,\n"
)
#: the same rows without the unknown column (imports refuse unknown columns unless --ignore-columns names them)
CSV_GOOD = "".join(line.rsplit(",", 1)[0] + "\n" for line in CSV_EXTRA.splitlines())


def test_import_good_file(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "export.csv"
    p.write_text(CSV_EXTRA, encoding="utf-8")
    with pytest.raises(QuestionLogImportError, match="--ignore-columns extra"):  # never dropped without a word
        import_file(demo_engine, p, source="t_import_good")
    rep = import_file(demo_engine, p, source="t_import_good", ignore_columns=["extra"])
    assert (rep.n_rows, rep.n_imported, rep.n_skipped) == (3, 3, 0)
    assert "t_import_good" in list_sources(demo_engine)
    df = read_log(demo_engine, source="t_import_good")
    assert len(df) == 3 and df.loc[df["id"] == 1, "url"].iloc[0] == "https://x/Stipendii"
    assert df["stop_point"].tolist().count(True) == 1
    # JSONL with `url` instead of confluence_url; re-import replaces the source
    j = tmp_path / "export.jsonl"
    j.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"question": "как закрыть физру", "url": "https://x/Fizkultura", "score": 1},
        {"question": "спасибо"},
    ]), encoding="utf-8")
    rep = import_file(demo_engine, j, source="t_import_good")
    assert rep.n_imported == 2 and rep.replaced == 3
    assert read_log(demo_engine, source="t_import_good")["url"].tolist().count("https://x/Fizkultura") == 1


def test_import_bad_row_writes_nothing(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = CSV_GOOD.replace("2,где общага,,,,10", "2,где общага,,,отлично,10")
    p = tmp_path / "bad.csv"
    p.write_text(bad, encoding="utf-8")
    with pytest.raises(QuestionLogImportError) as err:
        import_file(demo_engine, p, source="t_import_bad")
    # rows are spreadsheet rows: the header is row 1, the second data row is row 3
    assert err.value.row == 3 and err.value.field == "score"
    assert "bad.csv" in str(err.value) and "row 3" in str(err.value)
    assert "t_import_bad" not in list_sources(demo_engine)
    rep = import_file(demo_engine, p, source="t_import_bad", skip_bad_rows=True)
    assert (rep.n_imported, rep.n_skipped) == (2, 1)
    assert rep.errors == [{"row": 3, "field": "score", "message": rep.errors[0]["message"]}]
    missing_q = tmp_path / "noq.csv"
    missing_q.write_text("id,answer\n1,x\n", encoding="utf-8")
    with pytest.raises(QuestionLogImportError) as err2:
        import_file(demo_engine, missing_q, source="t_import_noq")
    assert err2.value.field == "question"


def test_imported_source_analysed_with_whole_log(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "small.csv"
    p.write_text(CSV_GOOD, encoding="utf-8")
    import_file(demo_engine, p, source="t_import_small")
    # utilization reads the knowledge base: the imported log is linked to it explicitly (issue 22)
    res = run_real_users(demo_engine, source="t_import_small", analyses=("utilization", "domain"), link_kb=True)
    assert res.n_used == 3 and res.embeddings.n_embedded == 3


def test_cli_real_users_and_import(demo_engine, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"overrides": {"Ответ не найден.": "answer"}}, ensure_ascii=False), encoding="utf-8")
    assert main(["real-users", "--analysis", "domain", "--json", "--answer-rules", str(rules)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_questions_used"] > 3000 and out["domain"]["metrics"]["n_questions_used"] == out["n_questions_used"]
    assert out["run_id"]
    m = out["metrics"]
    assert m["answered_rate"] - m["effective_answered_rate"] == pytest.approx(m["n_declined"] / out["n_questions_used"])
    assert out["answers"]["rules"]["overrides"] == {"ответ не найден.": "answer"}
    assert out["answers"]["metrics"]["n_answer_not_found"] > 0  # the other not-found wordings still count
    rules.write_text("{\"patterns\": [{\"class\": \"refusal\", \"pattern\": \"(\"}]}", encoding="utf-8")
    assert main(["real-users", "--analysis", "domain", "--answer-rules", str(rules)]) == 2
    assert "rules.json" in capsys.readouterr().err

    p = tmp_path / "cli.csv"
    p.write_text(CSV_GOOD, encoding="utf-8")
    assert main(["import-questions", str(p), "--source", "t_cli", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_imported"] == 3 and rep["source"] == "t_cli"
    bad = tmp_path / "cli_bad.csv"
    bad.write_text(CSV_GOOD.replace("2025-09-01T10:05:00+05:00", "вчера"), encoding="utf-8")
    assert main(["import-questions", str(bad), "--source", "t_cli_bad"]) == 2
    err = capsys.readouterr().err
    assert "row 3" in err and "created_at" in err
    assert main(["import-questions", str(bad), "--source", "t_cli_bad", "--skip-bad-rows", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_skipped"] == 1


def test_cli_human_output_k_stability_and_english_report(demo_engine, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.analytics.topics import silhouette_verdict
    from voproshalych_eval.cli import main

    report = tmp_path / "gaps.md"
    assert main(["real-users", "--analysis", "topics", "--k-stability", "2", "--report", str(report),
                 "--lang", "en"]) == 0
    out = capsys.readouterr().out
    snap = re.search(r"snapshot #(\d+) \(([0-9a-f]{12}), ", out)
    assert snap, out  # the snapshot the run read
    sil = float(re.search(r"best_silhouette: ([0-9.]+)", out).group(1))
    assert f"silhouette means: {silhouette_verdict(sil, 'en')}" in out and "topic stability ARI" in out
    ks = re.search(r"k stability: k = (\d+) on the log; silhouette picks k = ([\d, ]+) on 2 other random samples", out)
    assert ks, out
    assert len(ks.group(2).split(", ")) == 2
    body = report.read_text(encoding="utf-8")
    assert body.startswith("# Voproshalych: knowledge-base coverage gaps") and f"#{snap.group(1)} ({snap.group(2)}" in body
    assert silhouette_verdict(sil, "en") in body and "What changed" in body and "Что изменилось" not in body
