"""A paid LLM run starts only after a confirmation that shows its estimated calls, tokens and cost (issue 29
item 4): the dataset generation form with an LLM configured (the scripted server)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.support.scripted_openai import ScriptedOpenAI
from voproshalych_eval.llm.estimate import estimate_run
from voproshalych_eval.llm.prices import Price

KEY = "datasets_gen_run_id"


def test_generation_with_an_llm_asks_before_it_spends(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/datasets.py").run()
    assert not at.exception, [e.value for e in at.exception]
    next(n for n in at.number_input if n.label == "Number of questions").set_value(5)
    next(b for b in at.button if b.label == "Generate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert KEY not in at.session_state, "a paid generation started without a confirmation"
    notice = " ".join(str(w.value) for w in at.warning)
    assert "A paid LLM run" in notice and "LLM calls" in notice and "tokens" in notice, notice
    assert "≈ 12 LLM calls" in notice  # 5 questions + 20% spare slots = 6 slots, a generation and a gate call each
    # cancel: nothing started, the notice is gone
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert KEY not in at.session_state
    assert "A paid LLM run" not in " ".join(str(w.value) for w in at.warning)


def test_the_estimate_counts_calls_tokens_and_an_unknown_price_as_unknown() -> None:
    prices = {"gpt-4o-mini": Price("gpt-4o-mini", 0.15, 0.60)}
    e = estimate_run({"gpt-4o-mini": 10, "openai/gpt-4o-mini": 10}, prices=prices, prompt_tokens_per_call=1000,
                     completion_tokens_per_call=100)
    assert (e.calls, e.prompt_tokens, e.completion_tokens) == (20, 20_000, 2_000)
    assert abs(e.cost_usd - (20_000 * 0.15 + 2_000 * 0.60) / 1e6) < 1e-12
    unknown = estimate_run({"gpt-4o-mini": 10, "mystery-model": 1}, prices=prices)
    assert unknown.cost_usd is None and unknown.unpriced == ("mystery-model",)


def test_tier2_with_an_llm_asks_before_it_spends(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/tier2_generation.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.checkbox(key="t2_offline").value is False  # an LLM is configured
    next(n for n in at.number_input if n.label.startswith("First N")).set_value(3)
    at.button(key="t2_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "tier2_run_id" not in at.session_state, "a paid Tier 2 run started without a confirmation"
    notice = " ".join(str(w.value) for w in at.warning)
    assert "A paid LLM run" in notice and "≈ 12 LLM calls" in notice, notice  # 3 items × (1 generation + 3 judges)
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert "tier2_run_id" not in at.session_state


def _started(at: AppTest, key: str) -> bool:
    from voproshalych_eval.ui.jobs import building_key

    return key in at.session_state or building_key(key) in at.session_state


def _paid_notice(at: AppTest) -> str:
    return " ".join(str(w.value) for w in at.warning if "A paid LLM run" in str(w.value))


def _page(path: str) -> AppTest:
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_tier3_with_an_llm_asks_before_it_spends_and_starts_on_confirm(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    at = _page("pages/tier3_end_to_end.py")
    assert at.checkbox(key="t3_offline").value is False  # an LLM is configured
    next(n for n in at.number_input if n.label.startswith("First N")).set_value(3)
    at.button(key="t3_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not _started(at, "tier3_run_id"), "a paid Tier 3 run started without a confirmation"
    notice = _paid_notice(at)
    assert "≈ 9 LLM calls" in notice, notice  # 3 items × (1 generation + 2 judge metrics) in the internal pipeline
    at.run()  # another rerun (any widget) keeps the confirmation and still starts nothing
    assert not _started(at, "tier3_run_id") and _paid_notice(at)
    next(b for b in at.button if b.label == "Start the paid run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _started(at, "tier3_run_id"), "the confirmed run did not start"
    assert not _paid_notice(at)


def test_judges_with_an_llm_ask_before_they_spend(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    at = _page("pages/judges.py")
    at.number_input(key="js_lim").set_value(2)
    at.number_input(key="js_rep").set_value(3)
    at.button(key="js_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not _started(at, "judge_run_id"), "a paid judge-stability run started without a confirmation"
    assert "≈ 6 LLM calls" in _paid_notice(at), _paid_notice(at)  # 2 items × 3 repeats × 1 judge model
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert not _started(at, "judge_run_id") and not _paid_notice(at)
    # the show/no-show tab: per item the production verdict and the benchmark judge (calibration on)
    at.number_input(key="jp_lim").set_value(4)
    at.button(key="jp_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not _started(at, "judge_pipeline_run_id"), "a paid show/no-show run started without a confirmation"
    assert "≈ 8 LLM calls" in _paid_notice(at), _paid_notice(at)


def test_judge_metrics_with_an_llm_ask_before_they_spend(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    at = _page("pages/judge_metrics.py")
    at.number_input(key="jm_limit").set_value(5)
    at.button(key="jm_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not _started(at, "jm_run_id"), "a paid judge-metrics run started without a confirmation"
    notice = _paid_notice(at)
    assert "LLM calls" in notice and "tokens" in notice, notice
    assert "≈ 5 LLM calls" in notice, notice  # 5 samples × 1 model × 1 vote


def test_ux_with_an_llm_asks_before_it_spends(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    at = _page("pages/ux.py")
    assert at.checkbox(key="ux_offline").value is False
    at.button(key="ux_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not _started(at, "ux_run_id"), "a paid UX run started without a confirmation"
    # the demo dialogs: 10 re-asked ("same") dialogs of 2 turns, one generation per turn; the rest call no LLM
    assert "≈ 20 LLM calls" in _paid_notice(at), _paid_notice(at)
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert not _started(at, "ux_run_id") and not _paid_notice(at)
