"""A resumed run reports its progress, tokens and LLM usage over the whole run, not only the new part (issue 30)."""

from __future__ import annotations

import threading

from tests.support.scripted_openai import ScriptedOpenAI, scripted_openai  # noqa: F401,F811 (fixture)
from voproshalych_eval.engine import executor
from voproshalych_eval.llm import LLMClient, Provider, RetryPolicy


def test_resume_reports_totals_over_the_whole_run(engine, scripted_openai: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def] # noqa: F811
    client = LLMClient([Provider("p", scripted_openai.base_url, None, ["gpt-4o-mini"])], engine,
                       retry=RetryPolicy(max_attempts=2, initial=0.01))
    cancel = threading.Event()
    spent: list[int] = []

    def work(q: str) -> executor.ItemResult:
        r = client.complete([{"role": "user", "content": q}], model="gpt-4o-mini", use_cache=False)
        spent.append(int(r.prompt_tokens or 0) + int(r.completion_tokens or 0))
        if len(spent) == 2:
            cancel.set()  # the user cancels after two items
        return executor.ItemResult({"answer": r.text}, tokens=spent[-1])

    plan = executor.Plan(tier="judge", items=[(f"k{i}", f"вопрос {i}") for i in range(5)], work=work,
                         finalize=lambda records: {"n": len(records)}, concurrency=1)
    run_id, first = executor.run_plan(engine, plan, cancel=cancel)
    assert first.status == "cancelled" and first.finished == 2
    prog = executor.execute(engine, run_id, plan)
    assert prog.status == "done" and prog.finished == 5 and prog.skipped == 2
    # tokens and per-model calls cover the five items, the two of the first execution included
    assert prog.tokens == sum(spent) and len(spent) == 5
    assert prog.llm["gpt-4o-mini"]["calls"] == 5
    assert prog.metrics["cost_usd"]["total"]["prompt_tokens"] == prog.llm["gpt-4o-mini"]["prompt_tokens"]
