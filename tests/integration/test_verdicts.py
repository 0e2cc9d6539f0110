"""Issue 22 §3 against the scripted OpenAI-compatible server (real HTTP): an empty generated answer is an answer
(scored, counted as ``empty_answer``), per-call failures of a jury are counted per call, a tie between judges is
undecided, and a run in which nothing got a usable judgement ends ``failed``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # ``tests.support`` importable

from tests.support.scripted_openai import Reply, scripted_openai, scripted_openai_env  # noqa: E402,F401 (fixtures)
from voproshalych_eval.engine import runs  # noqa: E402
from voproshalych_eval.engine.executor import run_plan  # noqa: E402


# ---------------------------------------------------------------- 1. an empty generated answer is an answer
def test_tier2_empty_generation_is_scored_not_a_parse_failure(demo_engine: Any, scripted_openai_env: Any) -> None:  # noqa: F811
    from voproshalych_eval.tiers.tier2 import build_plan

    srv = scripted_openai_env
    srv.script(Reply.empty(), Reply.empty(), model="gen")  # the first two answers are empty, the rest smart
    plan = build_plan(demo_engine, {"limit": 4, "generator_model": "gen", "judge_models": ["judge-a"],
                                    "concurrency": 1})
    run_id, prog = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert prog.status == "done" and m["n_failed_items"] == 0
    assert m["failure_kinds"]["empty_answer"] == 2 and m["failure_kinds"]["parse"] == 0
    faith = m["avg_faithfulness"]
    assert faith["n"] == 4 and faith["n_failed"] == 0 and faith["failure_kinds"]["empty_answer"] == 2
    items = runs.item_records(demo_engine, run_id)
    empty = [r["result"] for r in items if not r["result"]["answer"]]
    assert len(empty) == 2
    for r in empty:  # the scale's lowest value: 0 on faithfulness / relevance, 1 on the seed's 1–5 correctness
        assert r["faithfulness"] == 0.0 and r["answer_relevance"] == 0.0 and r["answer_correctness"] == 1.0
    # the mean includes the two zeros: at most half of the two real answers' mean
    real = [r["result"]["faithfulness"] for r in items if r["result"]["answer"]]
    assert faith["value"] == pytest.approx(sum(real) / 4)


def test_tier3_internal_empty_generation_is_an_answered_bad_answer(demo_engine: Any, scripted_openai_env: Any) -> None:  # noqa: F811
    from voproshalych_eval.tiers.tier3 import build_plan

    srv = scripted_openai_env
    srv.script(*[Reply.empty()] * 3, model="gen")
    plan = build_plan(demo_engine, {"limit": 3, "generator_model": "gen", "judge_models": ["judge-a"],
                                    "concurrency": 1})
    run_id, prog = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["n_answered"] == 3 and m["n_error"] == 0 and m["n_failed_items"] == 0
    assert m["failure_kinds"]["empty_answer"] == 3 and m["failure_kinds"]["parse"] == 0
    assert m["avg_e2e_score"]["value"] == 0.0 and m["avg_e2e_score"]["n"] == 3
    assert m["pass_rate"]["value"] == 0.0


def test_judge_cli_empty_response_scored(demo_engine: Any, scripted_openai_env: Any, tmp_path: Path, capsys: Any) -> None:  # noqa: F811,E501
    from voproshalych_eval.cli import main

    f = tmp_path / "samples.json"
    f.write_text(json.dumps([{"user_input": "Где деканат?", "response": "", "retrieved_contexts": ["Деканат в корпусе 5."]},
                             {"user_input": "Где библиотека?", "response": "В корпусе 2.",
                              "retrieved_contexts": ["Библиотека в корпусе 2."]}], ensure_ascii=False), encoding="utf-8")
    code = main(["judge", "--input", str(f), "--metric", "faithfulness", "--models", "judge-a", "--json"])
    out = json.loads(capsys.readouterr().out)
    agg = out["aggregate"]
    assert code == 0 and agg["n"] == 2 and agg["n_failed"] == 0 and agg["failure_kinds"]["empty_answer"] == 1
    assert out["metrics"]["failure_kinds"]["empty_answer"] == 1
    empty = [r for r in out["results"] if r.get("empty_answer")]
    assert len(empty) == 1 and empty[0]["score"] == 0.0


# ---------------------------------------------------------------- 4. a run that judged nothing fails
def test_tier2_judge_never_parses_run_failed(demo_engine: Any, scripted_openai_env: Any) -> None:  # noqa: F811
    from voproshalych_eval.tiers.tier2 import build_plan

    scripted_openai_env.script(*[Reply.garbage()] * 100, model="judge-x")
    plan = build_plan(demo_engine, {"limit": 2, "judge_models": ["judge-x"], "concurrency": 1})
    run_id, prog = run_plan(demo_engine, plan)
    run = runs.get_run(demo_engine, run_id)
    assert prog.status == "failed" and run.status == "failed"
    assert "usable judgement" in (run.error or "")
    assert run.metrics["judged_share"]["value"] == 0.0 and run.metrics["judged_share"]["n"] == 2


def test_pipeline_no_verdict_run_failed(demo_engine: Any, scripted_openai_env: Any) -> None:  # noqa: F811
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    scripted_openai_env.script(*[Reply.text("maybe")] * 20)
    plan = build_plan(demo_engine, {"limit": 4, "calibrate": False, "concurrency": 1})
    run_id, prog = run_plan(demo_engine, plan)
    run = runs.get_run(demo_engine, run_id)
    assert prog.status == "failed" and run.metrics["n_valid"] == 0
    assert run.metrics["judged_share"]["value"] == 0.0


def test_stability_all_transport_errors_run_failed(demo_engine: Any, scripted_openai_env: Any) -> None:  # noqa: F811
    from voproshalych_eval.tiers.judge_stability import build_plan

    scripted_openai_env.script(*[Reply.error(400)] * 50)
    plan = build_plan(demo_engine, {"limit": 2, "repeats": 2, "concurrency": 1})
    run_id, prog = run_plan(demo_engine, plan)
    run = runs.get_run(demo_engine, run_id)
    assert run.metrics["error_rate"] == 1.0
    assert prog.status == "failed" and run.status == "failed"


def test_judge_cli_all_not_applicable_exits_1(demo_engine: Any, tmp_path: Path, capsys: Any) -> None:
    from voproshalych_eval.cli import main

    f = tmp_path / "samples.json"  # answer correctness needs a reference: none has one
    f.write_text(json.dumps([{"user_input": "Где деканат?", "response": "В корпусе 5.", "retrieved_contexts": ["x"]}],
                            ensure_ascii=False), encoding="utf-8")
    code = main(["judge", "--input", str(f), "--metric", "answer_correctness", "--offline", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "failed" and code == 1
    assert out["metrics"]["judged_share"]["value"] == 0.0


def test_min_judged_share_setting(demo_engine: Any, scripted_openai_env: Any, monkeypatch: Any) -> None:  # noqa: F811
    """Half the items judged: failed under a minimum share of 0.75, done under the default."""
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    srv = scripted_openai_env
    for share, status in (("0.75", "failed"), (None, "done")):
        if share:
            monkeypatch.setenv("VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE", share)
        else:
            monkeypatch.delenv("VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE", raising=False)
        get_settings.cache_clear()
        srv.reset()
        srv.script(Reply.text("Yes"), Reply.text("maybe"), Reply.text("No: нет"), Reply.text("perhaps"))
        plan = build_plan(demo_engine, {"limit": 4, "calibrate": False, "concurrency": 1, "prompt":
                                        "Контекст: {context}\nВопрос: {question}\nОтвет: {answer}\nYes или No: причина."})
        run_id, prog = run_plan(demo_engine, plan)
        assert runs.get_run(demo_engine, run_id).metrics["judged_share"]["value"] == 0.5
        assert prog.status == status, share
    get_settings.cache_clear()


# ---------------------------------------------------------------- 2. per-call failures of a jury
def test_tier2_jury_counts_failures_per_call(demo_engine: Any, scripted_openai_env: Any) -> None:  # noqa: F811
    from voproshalych_eval import reports
    from voproshalych_eval.tiers.tier2 import build_plan

    scripted_openai_env.script(*[Reply.garbage()] * 200, model="judge-b")  # judge-b never gives a readable reply
    plan = build_plan(demo_engine, {"limit": 2, "judge_models": ["judge-a", "judge-b"], "judge_quorum": "any",
                                    "concurrency": 1})
    run_id, prog = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert prog.status == "done" and m["failure_kinds"]["parse"] == 0  # every item scored (partially)
    calls = m["judge_calls"]
    assert calls["denominator"] == "calls" and calls["n_calls"] == 12  # 2 items × 3 metrics × 2 models
    assert calls["failure_kinds"]["parse"] == 6 and calls["parse_failure_rate_calls"] == 0.5
    assert calls["per_model"]["judge-b"]["parse_failure_rate_calls"] == 1.0
    assert calls["per_model"]["judge-a"]["n_failed_calls"] == 0
    assert calls["failing_models"] == ["judge-b"]
    notes = reports.notes({"raw_metrics": m}, lang="en")
    assert any("judge-b" in n and "6 of 6" in n for n in notes), notes
    # the run's page names the model too (AppTest of the Tier 2 page showing this run)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/tier2_generation.py")
    at.session_state["tier2_run_id"] = run_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = " ".join(w.value for w in at.warning)
    assert "judge-b" in warnings and "6" in warnings, warnings


def test_pipeline_jury_transport_failures_per_call(demo_engine: Any, scripted_openai_env: Any) -> None:  # noqa: F811
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    scripted_openai_env.script(*[Reply.error(400)] * 50, model="judge-b")  # every call of judge-b is refused (HTTP 400)
    plan = build_plan(demo_engine, {"limit": 4, "calibrate": False, "judge_models": ["judge-a", "judge-b"],
                                    "judge_quorum": "any", "concurrency": 1})
    run_id, _ = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["n_valid"] == 4 and m["error_rate"] == 0.0  # per item: every item got a verdict
    assert m["judge_calls"]["error_rate_calls"] == 0.5 and m["judge_calls"]["n_calls"] == 8
    assert m["judge_calls"]["failure_kinds"]["bad_request"] == 4  # a request failure, named by what it is
    assert m["judge_calls"]["failing_models"] == ["judge-b"]


def test_tier3_bot_api_empty_answer_is_an_answered_bad_answer(demo_engine: Any, scripted_openai_env: Any, capsys: Any) -> None:  # noqa: F811,E501
    from tests.integration.test_tier2_3 import FakeBot
    from voproshalych_eval.cli import main

    args = ["tier3", "--limit", "2", "--judge-model", "judge-a", "--answer-path", "data.answer",
            "--chunks-path", "data.chunks.*.text", "--json"]
    with FakeBot(answer="", chunks=["Стипендию выплачивают 25 числа."]) as bot:
        code = main([*args, "--api", bot.url])
    out = json.loads(capsys.readouterr().out)
    m = out.get("metrics", out)
    assert m["n_answered"] == 2 and m["failure_kinds"]["empty_answer"] == 2 and m["failure_kinds"]["parse"] == 0
    assert m["avg_e2e_score"]["value"] == 0.0 and m["pass_rate"]["value"] == 0.0
    assert code == 0
