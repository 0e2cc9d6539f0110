"""Price table in the store and every LLM run's tokens and money, so far (Progress) and in total (metrics)."""

from __future__ import annotations

import pytest

from tests.support.scripted_openai import ScriptedOpenAI, scripted_openai  # noqa: F401,F811 (fixture)
from voproshalych_eval.engine import executor
from voproshalych_eval.llm import LLMClient, Provider, RetryPolicy
from voproshalych_eval.llm import prices as P


def test_defaults_seeded_and_lookup(engine) -> None:  # type: ignore[no-untyped-def]
    table = P.stored_prices(engine)
    for model in ("google/gemini-2.5-flash", "openai/gpt-4o-mini", "deepseek/deepseek-v3.2", "anthropic/claude-4.5-sonnet"):
        assert model in table and table[model].output_per_1m > 0
    assert P.lookup("openrouter:openai/gpt-4o-mini", table).model == "openai/gpt-4o-mini"
    assert P.lookup("azure/gpt-4o", table).model == "gpt-4o"
    assert P.lookup("some/unknown-model", table) is None
    assert P.format_cost(None) == "unknown" and P.format_cost(None, "ru") == "неизвестно"
    assert P.format_cost(0.00123) == "$0.0012"


def test_save_price_table_is_all_or_nothing(fresh_engine) -> None:  # type: ignore[no-untyped-def]
    rows = [{"model": p.model, "input_per_1m": p.input_per_1m, "output_per_1m": p.output_per_1m}
            for p in P.stored_prices(fresh_engine).values()]
    bad = [*rows, {"model": "x", "input_per_1m": "дорого", "output_per_1m": 1}]
    with pytest.raises(ValueError, match=r"row \d+ \(x\), field input_per_1m"):
        P.save_price_table(fresh_engine, bad)
    with pytest.raises(ValueError, match="appears twice"):
        P.save_price_table(fresh_engine, [*rows, rows[0]])
    with pytest.raises(ValueError, match="must be >= 0"):
        P.save_price_table(fresh_engine, [{"model": "y", "input_per_1m": -1, "output_per_1m": 0}])
    assert "x" not in P.stored_prices(fresh_engine) and len(P.stored_prices(fresh_engine)) == len(rows)
    kept = [r for r in rows if r["model"] != "gpt-4o"] + [{"model": "my-model", "input_per_1m": 1, "output_per_1m": 2}]
    assert P.save_price_table(fresh_engine, kept) == {"changed": 1, "deleted": 1}
    after = P.stored_prices(fresh_engine)
    assert "gpt-4o" not in after and after["my-model"].source == "edited"


def test_secrets_override_the_store(engine) -> None:  # type: ignore[no-untyped-def]
    class S:
        secrets = {"llm": {"prices": {"gpt-4o-mini": {"input": 0.1, "output": 0.2}, "broken": {"input": "x"}}}}

    table = P.price_table(engine, S())
    assert (table["gpt-4o-mini"].input_per_1m, table["gpt-4o-mini"].source) == (0.1, "secrets")
    assert "broken" not in table


def test_run_progress_and_metrics_carry_cost_per_model(engine, scripted_openai: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def] # noqa: F811
    client = LLMClient([Provider("p", scripted_openai.base_url, None, ["gpt-4o-mini", "unpriced-model"])], engine,
                       retry=RetryPolicy(max_attempts=2, initial=0.01))

    def work(payload: tuple[str, str]) -> dict[str, object]:
        model, q = payload
        r = client.complete([{"role": "user", "content": q}], model=model, use_cache=False)
        return {"answer": r.text}

    def plan(models: list[str]) -> executor.Plan:
        return executor.Plan(tier="judge", items=[(f"{m}-{i}", (m, f"вопрос {i} {m}")) for m in models for i in range(3)],
                             work=work, finalize=lambda records: {"n": len(records)}, concurrency=2)

    snaps: list[executor.Progress] = []
    run_id, prog = executor.run_plan(engine, plan(["gpt-4o-mini"]), on_progress=snaps.append)
    assert prog.status == "done" and prog.llm["gpt-4o-mini"]["calls"] == 3
    inp, out = P.DEFAULT_PRICES["gpt-4o-mini"]
    u = prog.llm["gpt-4o-mini"]
    expected = (u["prompt_tokens"] * inp + u["completion_tokens"] * out) / 1e6
    assert prog.cost_usd == pytest.approx(expected) and expected > 0
    growing = [s.cost_usd for s in snaps if s.llm]
    assert growing == sorted(growing) and len(growing) >= 3
    cost = prog.metrics["cost_usd"]
    assert cost["gpt-4o-mini"]["value"] == pytest.approx(expected) and cost["total"]["value"] == pytest.approx(expected)
    assert "$" in executor.summary_line(prog)

    run2, prog2 = executor.run_plan(engine, plan(["gpt-4o-mini", "unpriced-model"]))
    assert prog2.llm["unpriced-model"]["cost_usd"] is None and prog2.cost_usd is None
    assert prog2.metrics["cost_usd"]["unpriced-model"]["value"] is None
    assert prog2.metrics["cost_usd"]["total"]["value"] is None  # unknown, never 0
    assert "unknown" in executor.summary_line(prog2)
    assert run2 != run_id
