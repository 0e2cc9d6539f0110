"""Judge stability and the show/no-show judge pipeline: offline on the demo and against the scripted server."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # ``tests.support`` importable

from tests.support.scripted_openai import Reply, scripted_openai, scripted_openai_env  # noqa: E402,F401
from voproshalych_eval.engine import runs  # noqa: E402
from voproshalych_eval.engine.executor import run_plan  # noqa: E402


def test_stability_offline(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.judge_stability import build_plan

    plan = build_plan(demo_engine, {"limit": 4, "repeats": 3, "offline": True})
    run_id, prog = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert prog.status == "done" and m["n_calls"] == 12
    # the heuristic judge is deterministic
    assert m["consistency_score"]["value"] == 1.0 and m["flip_rate"] == 0.0 and m["exact_agreement_rate"] == 1.0
    assert m["error_rate"] == 0.0 and m["parse_failure_rate"] == 0.0 and m["latency_p99"] is not None


def test_stability_scripted_two_models_parse_failures(demo_engine, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from voproshalych_eval.tiers.judge_stability import build_plan

    srv = scripted_openai_env
    srv.model_scores = {"m1": 0.9, "m2": 0.2}
    srv.script(Reply.garbage(), model="m2")  # one unparseable reply: a counted failure, not a score
    plan = build_plan(demo_engine, {"limit": 3, "repeats": 2, "judge_models": ["m1", "m2"], "concurrency": 1})
    assert not plan.offline
    run_id, _ = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert set(m["per_model"]) == {"m1", "m2"}
    assert m["per_model"]["m1"]["n_calls"] == 6 and m["per_model"]["m1"]["parse_failure_rate"] == 0.0
    assert m["per_model"]["m2"]["n_parse_failures"] == 1
    assert m["per_model"]["m2"]["avg_score"]["n_failed"] == 1
    assert "inter_judge_cohen_kappa" in m and "inter_judge_fleiss_kappa" in m
    assert srv.count == 12  # cache off: every repeat is a real call


def test_pipeline_offline(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    plan = build_plan(demo_engine, {"offline": True, "limit": 24})
    run_id, prog = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert prog.done == 24
    cm = m["confusion_matrix"]
    assert cm["tp"] + cm["fp"] + cm["tn"] + cm["fn"] == m["n_valid"] == 24
    for k in ("accuracy", "precision", "recall", "f1_score", "cohen_kappa", "benchmark_accuracy"):
        assert m[k] is not None, k
    assert len(m["accuracy_by_kind"]) >= 2


def test_pipeline_strict_parse(demo_engine, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    srv = scripted_openai_env
    srv.script(Reply.text("Yes"), Reply.text("yesterday"), Reply.text("No: нет в контексте"), Reply.text("No, yes"))
    plan = build_plan(demo_engine, {"limit": 4, "calibrate": False, "concurrency": 1})
    run_id, _ = run_plan(demo_engine, plan)
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["n_valid"] == 2 and m["n_failed"] == 2 and m["parse_failure_rate"] == 0.5
    items = runs.run_items(demo_engine, run_id).set_index("item_key")
    assert items["verdict"].isna().sum() == 2


def test_pipeline_custom_prompt(demo_engine, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    import pytest

    from voproshalych_eval.tiers.judge_pipeline import build_plan

    with pytest.raises(ValueError, match="missing"):
        build_plan(demo_engine, {"limit": 2, "prompt": "Вопрос: {question}. Ответ: {answer}."})
    srv = scripted_openai_env
    srv.script(Reply.text("No: нет"), Reply.text("Yes"))
    prompt = "Контекст: {context}\nВопрос: {question}\nОтвет: {answer}\nПоказать? Ответь Yes или No: причина."
    run_id, _ = run_plan(demo_engine, build_plan(demo_engine, {"limit": 2, "prompt": prompt, "calibrate": False, "concurrency": 1}))
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["n_valid"] == 2
    sent = srv.requests[-1]["messages"][0]["content"]
    assert sent.startswith("Контекст: ") and "{question}" not in sent
