"""The Judge agreement page's measurement as a background run (tiers/judge_agreement.py) on the LLM path: a
scripted judge biased in a known way (says "show" whenever the answer is long) over real HTTP, started the way
the app starts runs (executor.start_background with a plan factory)."""

from __future__ import annotations

import pytest

from tests.support.scripted_judges import LengthBiasedJudge, judge_set_labels
from tests.support.scripted_openai import scripted_openai, scripted_openai_env  # noqa: F401
from voproshalych_eval.config import PROJECT_ROOT

JUDGE_SET = PROJECT_ROOT / "data" / "judge_set.json"


def test_background_agreement_run_finds_the_bias(fresh_engine, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from voproshalych_eval.db import labels as store
    from voproshalych_eval.engine import executor, runs
    from voproshalych_eval.judges.agreement import labelled_items
    from voproshalych_eval.judges.labels import import_demo_judge_set
    from voproshalych_eval.tiers.judge_agreement import build_plan

    srv = scripted_openai_env
    labels = judge_set_labels(JUDGE_SET)
    srv.responder = LengthBiasedJudge(labels, long_at=120)
    assert import_demo_judge_set(fresh_engine) == 92
    items = labelled_items(fresh_engine, "show_no_show")[:92]
    job = executor.start_background(fresh_engine, lambda: build_plan(
        fresh_engine, {"metric": "show_no_show", "limit": 92, "n_resamples": 300, "concurrency": 2}))
    job.wait(300)
    assert job.error is None and job.run_id is not None, job.error
    run = runs.get_run(fresh_engine, job.run_id)
    assert run.tier == "judge_agreement" and run.status == "done" and not run.offline and run.n_items_total == 92
    assert run.prompts.get("show_no_show") and run.models["judge"]  # the judge's prompt version frozen in the run
    # hand-computed from the labels: the judge says "show" on every long answer, else what people said
    n_long_no = sum(1 for it in items if len(it.answer or "") >= 120 and labels[(it.question, it.answer)] == 0)
    assert n_long_no >= 1
    m = run.metrics
    assert m["n"] == 92 and m["n_failed"] == 0
    assert m["judge_bias"]["value"] == pytest.approx(n_long_no / 92) and m["judge_bias"]["ci_low"] > 0
    # the run stored its measurement, with the confusion the bias makes: no-show labels judged "show"
    rep = store.list_agreements(fresh_engine, "show_no_show")[0]["report"]
    assert rep["confusion"]["matrix"][0][1] == n_long_no and rep["confusion"]["matrix"][1][0] == 0
    assert rep["kappa"]["value"] == pytest.approx(m["judge_kappa"]["value"]) and rep["tokens"]["calls"] >= 92
    # resuming the finished run asks the judge nothing more
    calls = len(srv.requests)
    assert executor.resume(fresh_engine, run.id).status == "done" and len(srv.requests) == calls
