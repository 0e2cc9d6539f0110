"""Tier 3 against a stand-in of the production QA service (``POST /qa/``, 404 text declines).

The CLI runs ``tier3 --api URL --api-preset voproshalych`` on seven golden items scripted to cover every
outcome: answered (two, one after a 429 and a dropped connection), answered on an unanswerable question,
``Answer not found`` and ``Answer banned`` on answerable questions, ``Chunk not found`` on an unanswerable
one, and a 5xx that outlasts the retries. The run must report the four outcome rates, the errors by kind,
judge metrics over the answered items only and a gate that counts declines by answerability.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.production_qa import ProductionQA
from tests.support.scripted_openai import scripted_openai, scripted_openai_env  # noqa: F401 (fixtures)
from voproshalych_eval.cli import main
from voproshalych_eval.engine import runs

FAST = ["--api-rps", "200", "--api-retries", "3", "--api-backoff", "0"]


def _page_texts(engine: Any, url: str) -> list[str]:
    from voproshalych_eval.db.production import read_chunks

    df = read_chunks(engine)  # the current knowledge-base snapshot
    return df[df["url"] == url].sort_values("id")["text"].tolist()


@pytest.fixture
def scenario(demo_engine, tmp_path: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A 7-item golden file from the demo set and the stand-in's script for it."""
    from voproshalych_eval.datasets.store import get_dataset

    recs = get_dataset(demo_engine, "demo_golden", "golden").records
    answerable = [r for r in recs if r["relevant_urls"]][:5]
    unanswerable = [r for r in recs if not r["relevant_chunk_ids"] and not r["relevant_urls"]][:2]
    items = [dict(r) for r in answerable + unanswerable]
    items[2]["dialog_context"] = ["Здравствуйте", "Я студент первого курса"]  # a3: sent with its earlier turns
    path = tmp_path / "golden7.json"
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    a1, a2, a3, a4, a5 = (r["question"] for r in answerable)
    u1, u2 = (r["question"] for r in unanswerable)
    page = answerable[0]["relevant_urls"][0]
    return {
        "file": str(path), "page": page, "a1": a1, "a2": a2, "a3": a3, "a4": a4, "a5": a5, "u1": u1, "u2": u2,
        "answers": {a1: (answerable[0]["ground_truth_answer"], page),
                    a2: (answerable[1]["ground_truth_answer"], answerable[1]["relevant_urls"][0]),
                    u2: ("Наверное, да.", page)},
        "declines": {a3: "Answer not found", a4: "Answer banned"},  # u1 unscripted: Chunk not found
        "faults": {a2: [429, "drop"], a5: [500, 500, 500, 500]},
    }


def _serve(sc: dict[str, Any]) -> ProductionQA:
    srv = ProductionQA()
    srv.answers.update(sc["answers"])
    srv.declines.update(sc["declines"])
    srv.faults.update({k: list(v) for k, v in sc["faults"].items()})
    return srv


def _run(capsys: Any, args: list[str]) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["tier3", *args, "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def _check_outcomes(engine: Any, sc: dict[str, Any], out: dict[str, Any], srv: ProductionQA) -> Any:
    m = out["metrics"]
    assert (m["n_answered"], m["n_not_found"], m["n_banned"], m["n_error"], m["n_items"]) == (3, 2, 1, 1, 7)
    for key, n in (("answered_rate", 3), ("not_found_rate", 2), ("banned_rate", 1), ("error_rate", 1)):
        assert m[key]["value"] == pytest.approx(n / 7) and m[key]["n"] == 7, key
    assert m["errors_by_kind"] == {"http_5xx": 1} and m["failure_kinds"]["server"] == 1
    assert m["declines_by_reason"] == {"Answer banned": 1, "Answer not found": 1, "Chunk not found": 1}
    # every transport failure met is counted by kind, the recovered ones included (a2: 429 then a drop)
    assert m["transport_failures"] == {"connect": 1, "http_429": 1, "http_5xx": 4}
    # judge and overlap metrics over the answered items only
    for key in ("pass_rate", "avg_e2e_score", "avg_rag_judge_score"):
        assert m[key]["n"] + m[key]["n_failed"] == 3, key
    assert m["avg_rougeL_f"]["n"] == 3
    # the API returned only a URL: the context is the page's knowledge-base text, and the run says so
    assert m["n_context_reconstructed"] == 3 and m["context_sources"] == {"page": 3}
    items = runs.run_items(engine, out["run_id"]).set_index("question")
    assert _page_texts(engine, sc["page"]) and items.loc[sc["a1"], "contexts"] == _page_texts(engine, sc["page"]) and items.loc[sc["a1"], "context_reconstructed"]
    assert items.loc[sc["a5"], "status"] == "failed" and items.loc[sc["a5"], "error_kind"] == "http_5xx"
    # the gate: a decline fails on an answerable question and passes on an unanswerable one; errors never pass
    assert not items.loc[sc["a3"], "gate_pass"] and not items.loc[sc["a4"], "gate_pass"]
    assert items.loc[sc["u1"], "gate_pass"] and not items.loc[sc["a5"], "gate_pass"]
    for q in (sc["a1"], sc["a2"], sc["u2"]):
        assert items.loc[q, "gate_pass"] == (items.loc[q, "passed"] is True or items.loc[q, "passed"] == True)  # noqa: E712
    assert m["gate_pass_rate"] == pytest.approx(items["gate_pass"].fillna(False).astype(bool).sum() / 7)
    # exactly the production contract on the wire
    posts = srv.posts()
    assert len(posts) == len(srv.requests) == 7 + 2 + 3  # seven items, a2 retried twice, a5 retried three times
    assert all(r.path == "/qa/" and r.headers["Content-Type"].startswith("application/json") for r in posts)
    assert {r.body["question"] for r in posts} == {sc[k] for k in ("a1", "a2", "a3", "a4", "a5", "u1", "u2")}
    assert all(r.body["dialog_context"] == ([] if r.body["question"] != sc["a3"] else
                                            ["Здравствуйте", "Я студент первого курса"]) for r in posts)
    return items


def test_production_preset_offline_judge(demo_engine, scenario, capsys) -> None:  # type: ignore[no-untyped-def]
    with _serve(scenario) as srv:
        code, out, err = _run(capsys, ["--dataset", scenario["file"], "--api", srv.base_url, "--api-preset",
                                       "voproshalych", *FAST, "--offline", "--min-pass-rate", "0.0"])
        _check_outcomes(demo_engine, scenario, out, srv)
        # a resume rebuilds the request from the stored settings and retries only the failed item
        from voproshalych_eval.engine.executor import resume

        srv.faults.clear()
        n_before = len(srv.posts())
        # one error of seven items is above the default failure share (0.1): done_with_failures, exit status 3
        assert out["status"] == "done_with_failures" and code == 3
        prog = resume(demo_engine, out["run_id"])
        assert len(srv.posts()) == n_before + 1 and srv.posts()[-1].body["question"] == scenario["a5"]
        assert prog.metrics["n_error"] == 0 and prog.metrics["n_not_found"] == 3 and prog.status == "done"
    assert out["metrics"]["gate"] == "PASS" and out["offline"] is True
    assert "answered 3, not found 2, banned 1, error 1" in err and "context reconstructed" in err
    run = runs.get_run(demo_engine, out["run_id"])
    assert run.params["api"]["url"].endswith("/qa/") and run.params["api"]["method"] == "POST"
    assert run.params["api"]["preset"] == "voproshalych"
    # the run's report says how it was scored and that the contexts were reconstructed
    from voproshalych_eval.reports import run_report

    report = run_report(demo_engine, out["run_id"], "md")
    assert "over the 3 answered items of 7; declines (not found 3, banned 1) and request errors (0)" in report
    assert "Context reconstructed from the knowledge base for 3 answered items" in report
    assert "Контекст восстановлен из базы знаний для 3 ответов" in run_report(demo_engine, out["run_id"], "html", lang="ru")


def test_production_preset_scripted_llm_and_gate_exit_code(demo_engine, scenario, capsys,  # type: ignore[no-untyped-def]
                                                           scripted_openai_env) -> None:  # noqa: F811
    with _serve(scenario) as srv:
        code, out, err = _run(capsys, ["--dataset", scenario["file"], "--api", srv.base_url, "--api-preset",
                                       "voproshalych", *FAST, "--min-pass-rate", "0.6", "--max-failure-share", "0.5"])
        items = _check_outcomes(demo_engine, scenario, out, srv)
    m = out["metrics"]
    assert out["offline"] is False and m["pass_rate"]["value"] == 1.0  # the scripted judge scores 0.8 >= 0.5
    # a1, a2, u2 answered and PASS, u1 declined rightly: 4 of 7 < 0.6 -> the gate fails, exit status 1
    assert m["gate_pass_rate"] == pytest.approx(4 / 7) and m["gate"] == "FAIL" and code == 1
    assert "GATE FAIL" in err
    # the judge saw only answered questions, with the page text as context
    prompts = [json.dumps(r, ensure_ascii=False) for r in scripted_openai_env.requests]
    for q in (scenario["a3"], scenario["a4"], scenario["a5"], scenario["u1"]):
        assert not any(q in p for p in prompts), q
    assert any(scenario["a1"] in p for p in prompts)
    assert items.loc[scenario["a1"], "judges"]["rag_judge"]["score"] == pytest.approx(0.8)


def test_nearest_chunks_of_the_page(demo_engine, scenario) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.engine.executor import run_plan
    from voproshalych_eval.tiers.tier3 import build_plan

    with _serve(scenario) as srv:
        plan = build_plan(demo_engine, {"dataset": scenario["file"], "mode": "api", "api_url": srv.base_url,
                                        "api_preset": "voproshalych", "api_rps": 200, "offline": True,
                                        "context_from": "nearest", "context_k": 1, "limit": 1})
        run_id, prog = run_plan(demo_engine, plan)
    row = runs.run_items(demo_engine, run_id).iloc[0]
    page = _page_texts(demo_engine, scenario["page"])
    assert prog.status == "done" and row["context_source"] == "nearest"
    assert len(row["contexts"]) == 1 and row["contexts"][0] in page


def test_profile_keeps_backoff_and_judge_context(demo_engine, scenario, capsys) -> None:  # type: ignore[no-untyped-def]
    """A bot profile saves the retry backoff and how the judge's context is rebuilt (per bot); a run by the
    profile uses them unless the flags say otherwise."""
    from voproshalych_eval.bot_api.profiles import get_profile

    profile = f"ctx-{uuid.uuid4().hex[:6]}"
    base = ["--dataset", scenario["file"], "--limit", "1", "--offline", "--api-rps", "200"]  # the backoff: the profile's
    with _serve({**scenario, "faults": {}}) as srv:
        code, _out, _err = _run(capsys, [*base, "--api", srv.base_url, "--api-preset", "voproshalych",
                                         "--api-backoff", "0.5", "--context-from", "nearest", "--context-k", "1",
                                         "--save-api-profile", profile])
        assert code == 0
        saved = get_profile(demo_engine, profile)
        assert saved.spec.retry_backoff_s == 0.5
        assert (saved.judge_context.context_from, saved.judge_context.context_k) == ("nearest", 1)
        code2, out2, _ = _run(capsys, [*base, "--api-profile", profile])
        code3, out3, _ = _run(capsys, [*base, "--api-profile", profile, "--context-from", "page"])
    assert code2 == code3 == 0
    by_profile, overridden = runs.get_run(demo_engine, out2["run_id"]), runs.get_run(demo_engine, out3["run_id"])
    assert (by_profile.params["context_from"], by_profile.params["context_k"]) == ("nearest", 1)
    assert by_profile.params["api"]["retry_backoff_s"] == 0.5
    assert runs.run_items(demo_engine, by_profile.id).iloc[0]["context_source"] == "nearest"
    assert overridden.params["context_from"] == "page"


def _rows_containing(engine: Any, needle: str) -> list[str]:
    """Every row of every eval.* table whose text form contains ``needle`` (table names)."""
    hits = []
    with engine.connect() as conn:
        tables = [r[0] for r in conn.execute(text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'eval' AND table_type = 'BASE TABLE'"))]
        for t in tables:
            n = conn.execute(text(f'SELECT count(*) FROM eval."{t}" x WHERE x::text LIKE :p'), {"p": f"%{needle}%"}).scalar()
            if n:
                hits.append(t)
    return hits


def test_header_variables_never_stored_or_shown(demo_engine, scenario, capsys, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import logging

    caplog.set_level(logging.DEBUG)
    token = f"tok-{uuid.uuid4().hex}"
    monkeypatch.setenv("BOT_TOKEN", token)
    profile = f"prod-{uuid.uuid4().hex[:6]}"
    base = ["--dataset", scenario["file"], "--limit", "2", "--offline", *FAST]
    with _serve({**scenario, "faults": {}}) as srv:
        code, out, err = _run(capsys, [*base, "--api", srv.base_url, "--api-preset",
                                       "voproshalych", "--api-header", "Authorization: Bearer ${BOT_TOKEN}",
                                       "--save-api-profile", profile])
        assert code == 0 and out["n_done"] == 2
        assert {r.headers.get("Authorization") for r in srv.posts()} == {f"Bearer {token}"}
        # the saved profile runs the same bot again; it holds the variable's name only
        code2, out2, err2 = _run(capsys, [*base, "--api-profile", profile])
        assert code2 == 0 and len(srv.posts()) == 4
        assert all(r.headers.get("Authorization") == f"Bearer {token}" for r in srv.posts())
        # a literal credential is refused before anything is stored or sent
        before = len(runs.list_runs(demo_engine, tier="tier3", limit=1000))
        capsys.readouterr()
        assert main(["tier3", *base, "--api", srv.base_url, "--api-preset", "voproshalych",
                     "--api-header", "Authorization: Bearer literal-secret-abc"]) == 2
        assert "looks like a credential" in capsys.readouterr().err
        # an unset variable stops the run before its first request, naming the variable
        monkeypatch.delenv("BOT_TOKEN")
        assert main(["tier3", *base, "--api-profile", profile]) == 2
        assert "BOT_TOKEN" in capsys.readouterr().err
        assert len(srv.posts()) == 4 and len(runs.list_runs(demo_engine, tier="tier3", limit=1000)) == before
    run = runs.get_run(demo_engine, out2["run_id"])
    assert run.params["api"]["headers"] == ["Authorization: Bearer ${BOT_TOKEN}"] and run.label == profile
    from voproshalych_eval.bot_api.profiles import get_profile

    assert get_profile(demo_engine, profile).spec.headers == {"Authorization": "Bearer ${BOT_TOKEN}"}
    assert _rows_containing(demo_engine, token) == []
    assert _rows_containing(demo_engine, "literal-secret-abc") == []
    assert "bot_profiles" in _rows_containing(demo_engine, "${BOT_TOKEN}")
    for shown in (json.dumps(out), err, json.dumps(out2), err2, caplog.text):
        assert token not in shown


def test_requests_per_second_limit(demo_engine, scenario, capsys) -> None:  # type: ignore[no-untyped-def]
    """The server's arrival times: with a 5 rps limit and 4 workers no two requests come closer than 0.2 s
    (checked with a wide margin: >= 0.05 s; without the limit four workers arrive within milliseconds)."""
    sc = {**scenario, "faults": {}}
    with _serve(sc) as srv:
        code, out, _ = _run(capsys, ["--dataset", scenario["file"], "--limit", "6", "--offline", "--concurrency", "4",
                                     "--api", srv.base_url, "--api-preset", "voproshalych", "--api-rps", "5"])
        times = sorted(r.at for r in srv.posts())
    assert code == 0 and len(times) == 6
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) >= 0.05
    assert runs.get_run(demo_engine, out["run_id"]).params["api"]["rps"] == 5.0


def test_page_context_is_cut_to_the_judge_window(demo_engine, scenario, capsys, monkeypatch,  # type: ignore[no-untyped-def]
                                                 scripted_openai_env) -> None:  # noqa: F811
    """Issue 30: the whole page no longer goes into the judge prompt. With a 1,900-token window (and the judge's
    1,000-token reply) the page text is cut to fit, the cut is recorded on the item and counted, and every
    judge prompt sent fits the window by the client's own estimate."""
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW", "1900")
    with _serve({**scenario, "faults": {}}) as srv:
        code, out, _err = _run(capsys, ["--dataset", scenario["file"], "--api", srv.base_url, "--api-preset",
                                        "voproshalych", *FAST, "--min-pass-rate", "0.0"])
    assert code == 0
    m = out["metrics"]
    items = runs.run_items(demo_engine, out["run_id"]).set_index("question")
    page = _page_texts(demo_engine, scenario["page"])
    cut = items.loc[scenario["a1"], "context_cut"]
    assert cut and cut["chars_before"] == sum(map(len, page)) and cut["chars_after"] < cut["chars_before"]
    assert sum(map(len, items.loc[scenario["a1"], "contexts"])) == cut["chars_after"]
    assert m["n_context_cut"] >= 1 and m["n_context_cut"] == int(items["context_cut"].notna().sum())
    # every judge prompt fits: at 2.5 characters per token, prompt + the 1,000-token reply <= 1,900 tokens
    for req in scripted_openai_env.requests:
        chars = sum(len(str(msg.get("content") or "")) for msg in req["messages"])
        assert chars / 2.5 + req["max_tokens"] <= 1900, chars
    # all three answered items were judged (none silently dropped)
    assert m["pass_rate"]["n"] == 3 and m["pass_rate"]["n_failed"] == 0


def test_an_item_that_cannot_fit_is_a_counted_context_overflow(demo_engine, scenario, capsys,  # type: ignore[no-untyped-def]
                                                               monkeypatch, scripted_openai_env) -> None:  # noqa: F811
    """A window too small even for the question and answer: the judge is not called, each answered item's judges
    fail as ``context_overflow`` (counted, shown) and the gate's denominator still holds every item."""
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW", "1200")
    with _serve({**scenario, "faults": {}}) as srv:
        _code, out, _err = _run(capsys, ["--dataset", scenario["file"], "--api", srv.base_url, "--api-preset",
                                         "voproshalych", *FAST, "--min-pass-rate", "0.5", "--max-failure-share", "1"])
    m = out["metrics"]
    assert scripted_openai_env.count == 0  # nothing sent that the server would refuse
    assert m["pass_rate"]["n"] == 0 and m["pass_rate"]["n_failed"] == 3
    assert m["pass_rate"]["failure_kinds"]["context_overflow"] == 3
    assert m["failure_kinds"]["context_overflow"] == 6  # rag_judge and e2e_score of the three answered items
    # the gate: passes over ALL seven items (only u1's rightful decline passes), never over the judged ones
    assert m["n_items"] == 7 and m["gate_pass_rate"] == pytest.approx(1 / 7) and m["gate"] == "FAIL"
