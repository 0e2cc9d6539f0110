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
