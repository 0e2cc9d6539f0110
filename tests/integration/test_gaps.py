"""Coverage gaps on the demo log: synced from real-users runs, identity across runs, status, re-check."""

from __future__ import annotations

import json

import pytest

from tests.support.plans import real_users as run_real_users
from tests.support.scripted_openai import scripted_openai, scripted_openai_env  # noqa: F401 (fixtures)
from voproshalych_eval.analytics import gaps


@pytest.fixture(scope="module")
def synced(demo_engine):  # type: ignore[no-untyped-def]
    from sqlalchemy import text

    from voproshalych_eval.gap_sync import sync

    # the session's store holds other modules' real-users runs (pages, journeys, other tests); `gaps list` syncs
    # every run, so this module starts from a store whose only analyses are its own
    with demo_engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.gaps"))
        conn.execute(text("DELETE FROM eval.runs WHERE tier = 'real_users'"))
    res = run_real_users(demo_engine, analyses=("utilization", "topics"), k_range=(8, 12))
    first = sync(demo_engine)
    return res, first


def test_gaps_list_from_the_demo_log(demo_engine, synced, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    res, first = synced
    assert first and first[-1]["run_id"] == res.run_id and first[-1]["created"]
    assert main(["gaps", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["gaps"]
    assert len(rows) == len(first[-1]["created"])
    top = res.topics.gaps.iloc[0]
    g = next(r for r in rows if r["gap_rank"] == 1)
    assert g["name"] == top["name"] and g["n_questions"] == int(top["size"])
    assert g["effective_answered_rate"] == pytest.approx(float(top["effective_answered_share"]))
    assert g["answered_rate"] == pytest.approx(float(top["answered_share"]))
    assert all(r["status"] == "open" for r in rows)
    qs = gaps.gap_questions(demo_engine, g["id"])
    assert len(qs) == g["n_questions"] and all(q["question"] for q in qs)


def test_identity_survives_a_rerun(demo_engine, synced) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.gap_sync import sync

    res, first = synced
    before = {g.id for g in gaps.list_gaps(demo_engine)}
    again = run_real_users(demo_engine, analyses=("utilization", "topics"), k_range=(8, 12), embedder=None,
                           near_threshold=0.93)  # another run of the same log
    out = sync(demo_engine)
    assert out and out[-1]["run_id"] == again.run_id
    assert out[-1]["created"] == [] and set(out[-1]["matched"]) == before
    for gid in before:
        assert [h["run_id"] for h in gaps.history(demo_engine, gid)] == [res.run_id, again.run_id]


def test_status_changes_and_recheck(demo_engine, synced, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    gid = gaps.list_gaps(demo_engine)[0].id
    assert main(["gaps", "status", str(gid), "dismissed"]) == 2  # a reason is required
    assert "reason" in capsys.readouterr().err
    assert main(["gaps", "status", str(gid), "in_progress", "--owner", "Анна", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["owner"] == "Анна"
    import pandas as pd

    qs = sorted((q for q in gaps.gap_questions(demo_engine, gid) if not pd.isna(q["created_at"])),
                key=lambda q: q["created_at"])
    mid = qs[len(qs) // 2]["created_at"]
    assert main(["gaps", "status", str(gid), "addressed", "--note", "статья опубликована", "--at", mid.isoformat()]) == 0
    capsys.readouterr()
    assert main(["gaps", "show", str(gid), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [e["status"] for e in shown["events"]][-2:] == ["in_progress", "addressed"]
    rc = shown["recheck"]
    n_before = sum(1 for q in qs if q["created_at"] < mid)
    assert rc["n_before"] == n_before and rc["n_after"] == len(qs) - n_before
    eff_after = [q["effective"] for q in qs if q["created_at"] >= mid]
    assert rc["effective_after"] == pytest.approx(sum(eff_after) / len(eff_after))
    assert rc["test"]["method"] == "two_sample_permutation" and 0 < rc["test"]["p_value"] <= 1
    assert main(["gaps", "status", str(gid), "open"]) == 0


def test_what_if_from_a_gap_counts_questions_reaching_the_new_page(demo_engine, synced, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    g = gaps.list_gaps(demo_engine)[0]
    qs = gaps.gap_questions(demo_engine, g.id)
    page = tmp_path / "gap.md"
    page.write_text("\n\n".join(q["question"] for q in qs[:40]), encoding="utf-8")  # a page made of the questions
    assert main(["what-if", "--gap", str(g.id), "--add", str(page), "--chunk-size", "500", "--chunk-overlap", "50",
                 "--regression", "demo_golden", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["per_question"]) == len(qs)
    assert all(q["relevant_urls"] == ["draft://gap"] for q in out["per_question"] if q["relevance"] == "edited pages")
    assert all(q["rank_before"] is None for q in out["per_question"] if q["relevance"] == "edited pages")
    assert out["after"]["n_at_rank"]["<=1"] > 0 and out["before"]["n_at_rank"]["<=5"] == 0
    assert out["regression"]["before"]["n"] > 100


def test_diagnosis_finds_answers_that_are_not_retrieved_top1(demo_engine, synced, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main
    from voproshalych_eval.db import retrieval as R
    from voproshalych_eval.embeddings import cached_embedder

    found, summary = [], []
    for g in gaps.list_gaps(demo_engine)[:4]:
        assert main(["gaps", "diagnose", str(g.id), "--sample", "15", "--json"]) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["method"] == "heuristic" and res["n_sampled"] == min(15, res["n_questions"])
        assert sum(res["counts"].values()) == res["n_sampled"] - res["n_failed"]
        assert res["category"] in res["counts"] and gaps.latest_diagnosis(demo_engine, g.id)["id"] == res["id"]
        summary.append((g.id, g.name, res["counts"], res["category"]))
        found += [it for it in res["items"] if it["category"] == "retrieval_miss"]
    assert found, "the demo has questions whose answer exists but is not retrieved top-1"
    emb = cached_embedder("use-multilingual", demo_engine)
    top1 = R.search_vectors(demo_engine, emb.encode_queries([it["question"] for it in found]), k=1)
    for it, hits in zip(found, top1, strict=True):
        assert it["production_rank"] != 1 and hits[0].chunk_id != it["chunk_id"] and it["chunk_text"]
    assert main(["gaps", "list", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["gaps"]}
    assert all(rows[g.id]["category"] for g in gaps.list_gaps(demo_engine)[:4])
    print(summary, [(it["question"], it["chunk_id"], it["production_rank"]) for it in found[:5]])


def test_draft_offline_and_scripted_llm_then_what_if_from_it(demo_engine, synced, tmp_path, capsys,  # type: ignore[no-untyped-def]
                                                             scripted_openai_env) -> None:  # noqa: F811
    from tests.support.scripted_openai import Reply
    from voproshalych_eval.cli import main

    g = gaps.list_gaps(demo_engine)[0]
    out_md, out_x = tmp_path / "d.md", tmp_path / "d.xhtml"
    assert main(["gaps", "draft", str(g.id), "--offline", "--out", str(out_md), "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert off["source"] == "template" and "офлайн" in off["label"] and off["checks"]["n_flags"] == 0
    assert out_md.read_text(encoding="utf-8") == off["body"]
    outline = ("# Оплата в столовой\n\n## Вопросы, на которые статья должна ответить\n- оплата картой (×5)\n\n"
               "## Где поесть\nСтоловая работает с 8:00 в корпусе на улице Выдуманной, 77. Сроки: [ДАТА]\n")
    scripted_openai_env.script(Reply.text(outline))
    assert main(["gaps", "draft", str(g.id), "--out", str(out_x), "--json"]) == 0
    llm = json.loads(capsys.readouterr().out)
    assert llm["source"] == "llm" and llm["version"] == off["version"] + 1 and llm["body"].startswith("# Оплата")
    flagged = {f["text"] for f in llm["checks"]["flags"]}
    assert "Выдуманной" in flagged and "77" in flagged
    assert "<h1>Оплата в столовой</h1>" in out_x.read_text(encoding="utf-8")
    assert [d["version"] for d in gaps.drafts(demo_engine, g.id)][:2] == [llm["version"], off["version"]]
    # "simulate this draft": the draft as a new page of a sandbox
    page = tmp_path / "draft.md"
    page.write_text(llm["body"], encoding="utf-8")
    assert main(["what-if", "--gap", str(g.id), "--add", f"draft://gap-{g.id}={page}", "--tier3-sample", "4",
                 "--json"]) == 0
    wi = json.loads(capsys.readouterr().out)
    assert wi["sandbox"]["edits"][0]["url"] == f"draft://gap-{g.id}" and len(wi["per_question"]) == g.latest["n_questions"]
    assert wi["tier3"]["n_sampled"] == 4 and not wi["tier3"]["offline"]  # an LLM is configured: the Tier 3 part runs


MARK = "[черновик статьи]"


def _scripted_bot(body: dict) -> str | None:  # type: ignore[type-arg]
    """The scripted generator answers when the retrieved fragment is the draft's text, else declines like the bot;
    judge prompts get the server's smart reply (a PASS at its default score 0.8)."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    if "Фрагмент базы знаний:" not in text:
        return None
    return "Ответ по статье из черновика." if MARK in text else "К сожалению, в предоставленном фрагменте нет ответа."


def test_what_if_tier3_answered_and_declined_before_and_after(demo_engine, synced, tmp_path, capsys,  # type: ignore[no-untyped-def]
                                                              scripted_openai_env) -> None:  # noqa: F811
    """The internal Tier 3 pipeline on the parent and on the sandbox, through a scripted LLM over real HTTP: a
    gap question is answered after the edit exactly when its production top-1 page is the new draft."""
    from voproshalych_eval.cli import main

    g = gaps.list_gaps(demo_engine)[1]
    qs = gaps.gap_questions(demo_engine, g.id)
    page = tmp_path / "t3.md"
    page.write_text("\n\n".join(f"{MARK} {q['question']}" for q in qs[:30]), encoding="utf-8")
    scripted_openai_env.responder = _scripted_bot
    n0 = scripted_openai_env.count
    assert main(["what-if", "--gap", str(g.id), "--add", f"draft://t3={page}", "--chunk-size", "500",
                 "--chunk-overlap", "50", "--tier3-sample", "12", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    t3 = out["tier3"]
    n = min(12, len(qs))
    assert t3["n_sampled"] == n == t3["n"] and t3["n_gap_questions"] == len(qs)
    assert t3["offline"] is False and t3["judged"] is True and t3["top_k"] == 1 and t3["label"] is None
    top1 = {q["id"]: q["top1_after"] for q in out["per_question"]}
    on_draft = sum(1 for q in t3["per_question"] if top1[q["id"]] == "draft://t3")
    assert on_draft > 0, "some gap questions retrieve the draft top-1"
    assert all(q["outcome_before"] == "declined" and q["answer_class_before"] == "not_found" for q in t3["per_question"])
    assert all((q["outcome_after"] == "answered") == (top1[q["id"]] == "draft://t3") for q in t3["per_question"])
    assert t3["before"]["n_answered"] == 0 and t3["before"]["n_declined"] == n
    assert t3["before"]["declines_by_class"] == {"not_found": n}
    assert t3["after"]["n_answered"] == on_draft and t3["after"]["n_declined"] == n - on_draft
    assert t3["after"]["n_judged"] == on_draft and t3["after"]["n_passed"] == on_draft  # the smart judge passes them
    tests = {t["metric"]: t for t in t3["paired_tests"]}
    assert tests["answered"]["mean_diff"] == pytest.approx(on_draft / n)
    assert tests["good"]["mean_diff"] == pytest.approx(on_draft / n)
    gen_calls = [r for r in scripted_openai_env.requests[n0:]
                 if "Фрагмент базы знаний:" in "\n".join(str(m.get("content", "")) for m in r.get("messages") or [])]
    prompts = [r["messages"][-1]["content"] for r in gen_calls]
    assert 0 < len(prompts) <= 2 * n and len(set(prompts)) == len(prompts)  # over HTTP; the LLM cache answers repeats
    print(f"what-if Tier 3 (scripted LLM): answered {t3['before']['n_answered']}/{n} -> {t3['after']['n_answered']}/{n}, "
          f"p = {tests['answered']['p_value']}")


def test_what_if_tier3_offline_is_labelled(demo_engine, synced, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    g = gaps.list_gaps(demo_engine)[1]
    page = tmp_path / "off.md"
    page.write_text("Столовая работает с 8 до 18.", encoding="utf-8")
    assert main(["what-if", "--gap", str(g.id), "--add", str(page), "--json"]) == 0  # no LLM: skipped by default
    assert json.loads(capsys.readouterr().out)["tier3"] == {"skipped": "no LLM configured"}
    assert main(["what-if", "--gap", str(g.id), "--add", str(page), "--tier3", "--tier3-sample", "3", "--json"]) == 0
    t3 = json.loads(capsys.readouterr().out)["tier3"]
    assert t3["offline"] is True and t3["judged"] is False and "offline" in t3["label"] and t3["n"] == 3
    assert t3["before"]["n_judged"] == 0 and t3["before"]["n_answered"] + t3["before"]["n_declined"] + t3["before"]["n_error"] == 3


def test_a_topic_without_rows_gets_no_centroid() -> None:
    """A ranked topic none of whose rows are in the log now (or with a zero mean) is skipped, never a NaN centroid."""
    import numpy as np

    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]])
    labels = np.array([0, 0, 2, 2])
    kept, cents, skipped = gaps._topic_centroids(X, labels, [0, 1, 2])
    assert kept == [0] and skipped == [1, 2] and cents.shape == (1, 2)
    assert np.all(np.isfinite(cents)) and np.allclose(cents[0], [2 ** -0.5, 2 ** -0.5])
    kept, cents, skipped = gaps._topic_centroids(X, labels, [5])
    assert kept == [] and skipped == [5] and cents.shape == (0, 2)


def test_diagnosis_through_the_llm_judge(demo_engine, synced, capsys, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """The LLM path of the diagnosis over real HTTP: the scripted judge names the third candidate for questions
    with an even number of letters and none for the others; one judgement fails (HTTP 400) and is counted."""
    import re

    from tests.support.scripted_openai import Reply
    from voproshalych_eval.cli import main

    picks: dict[str, int | None] = {}

    def judge(body: dict) -> str | None:  # type: ignore[type-arg]
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        if "Фрагменты:" not in text:
            return None
        question = text.split("Вопрос:\n", 1)[1].split("\n\nФрагменты:", 1)[0]
        ids = [int(x) for x in re.findall(r"^\[(\d+)\] ", text, flags=re.M)]
        picks[question] = ids[2] if len(ids) > 2 and len(question.replace(" ", "")) % 2 == 0 else None
        return json.dumps({"chunk_id": picks[question], "reason": "сценарий теста"}, ensure_ascii=False)

    scripted_openai_env.responder = judge
    scripted_openai_env.script(Reply.error(400))  # the first judgement fails
    g = gaps.list_gaps(demo_engine)[2]
    assert main(["gaps", "diagnose", str(g.id), "--sample", "12", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["method"] == "judge" and res["model"] and res["threshold"] is None
    failed = [it for it in res["items"] if it["category"] is None]
    assert res["n_failed"] == len(failed) == 1 and failed[0]["error"]
    judged = [it for it in res["items"] if it["category"] not in (None, "out_of_scope")]
    assert judged and all(it["question"] in picks for it in judged)
    for it in judged:
        pick = picks[it["question"]]
        if pick is None:
            assert it["category"] == "missing" and "chunk_id" not in it
        else:
            assert it["chunk_id"] == pick and it["why"] == "сценарий теста"
            want = "retrieval_miss" if it["production_rank"] != 1 else (
                "answered" if it["answer_effective"] else "declined_or_wrong")
            assert it["category"] == want or (want == "answered" and it["category"] == "declined_or_wrong")
    assert sum(res["counts"].values()) == res["n_sampled"] - 1
    assert any(picks[it["question"]] is not None for it in judged) and any(picks[it["question"]] is None for it in judged)
