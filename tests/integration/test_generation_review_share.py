"""Per generation run, the share of kept items later rejected in review, and the gates' agreement with the
reviewers' decisions — from the store, by CLI (offline generation on the demo knowledge base)."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.cli import main


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc = main([*args, "--json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.out + cap.err
    return json.loads(cap.out)


def test_rejected_share_and_gate_agreement_from_the_store(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.datasets import annotations
    from voproshalych_eval.datasets.store import get_dataset
    from voproshalych_eval.generation.gate_review import run_review

    name = "rev_" + uuid.uuid4().hex[:6]
    pages = "https://wiki.sevgu-demo.ru/display/STUD/Stipendii,https://wiki.sevgu-demo.ru/display/STUD/Sport"
    gen = _cli(capsys, "dataset", "generate", "--size", "8", "--types", "factual,paraphrase,conditional,follow_up",
               "--offline", "--pages", pages, "--name", name, "--no-compare-existing", "--seed", "5")
    run_id = gen["run_id"]
    ds = get_dataset(demo_engine, name, "golden")
    keys = ds.keys()
    n = len(keys)
    assert n == gen["n_items"] >= 6
    # nothing reviewed yet: 0 rejected of n kept
    rep = _cli(capsys, "dataset", "review-share", "--run", str(run_id))["runs"][0]
    assert (rep["n_kept"], rep["n_reviewed"], rep["n_rejected"], rep["rejected_share"]) == (n, 0, 0, 0.0)
    # the reviewer rejects the two items whose answer fits its question worst (qa_fit value), accepts three others
    from voproshalych_eval.engine import runs

    values = {}
    for rec in runs.item_records(demo_engine, run_id):
        res = rec["result"] or {}
        if res.get("kept") and "syn_" + res["slot"]["key"] in keys:
            values["syn_" + res["slot"]["key"]] = res["gates"]["qa_fit"]["value"]
    order = sorted(values, key=lambda k: values[k])
    for k in order[:2]:
        annotations.reject(demo_engine, name, k, "ответ не по вопросу")
    for k in order[2:5]:
        annotations.accept(demo_engine, name, k)
    rep = _cli(capsys, "dataset", "review-share", "--run", str(run_id))["runs"][0]
    # hand-computed: 2 of n kept rejected; 2 of 5 reviewed
    assert (rep["n_kept"], rep["n_reviewed"], rep["n_rejected"], rep["n_accepted"]) == (n, 5, 2, 3)
    assert rep["rejected_share"] == pytest.approx(2 / n) and rep["rejected_share_reviewed"] == pytest.approx(0.4)
    assert sorted(i["key"] for i in rep["items"] if i["decision"] == 0.0) == sorted(order[:2])
    # the list of runs has the same numbers for this run
    listed = [r for r in _cli(capsys, "dataset", "review-share")["runs"] if r["run_id"] == run_id]
    assert listed and listed[0]["n_rejected"] == 2 and "items" not in listed[0]
    # the gates against the decisions: at the run's thresholds every kept item passed (kappa 0, bias 2/5);
    # the question–answer fit threshold calibrated on the 5 reviewed items is the lowest accepted value
    out = _cli(capsys, "judge-agreement", "--metric", "dataset_review", "--run", str(run_id), "--folds", "2",
               "--resamples", "200")
    assert out["n_reviewed"] == 5 and set(out["gates"]) >= {"well_formed", "verbatim", "support", "qa_fit"}
    qf = out["gates"]["qa_fit"]
    assert qf["n"] == 5 and qf["kappa"]["value"] == pytest.approx(0.0) and qf["bias"]["mean"] == pytest.approx(0.4)
    assert qf["confusion"]["matrix"] == [[0, 2], [0, 3]]
    cal = qf["calibration"]
    if values[order[2]] > values[order[1]]:  # the rejects score strictly lower: a cut separates them
        assert cal["calibrated"] == pytest.approx(values[order[2]]) and cal["calibrated_kappa_in_sample"] == 1.0
    assert sorted(k for f in cal["folds"] for k in f["held_out"]) == sorted(order[:5])
    # each gate's measurement is stored like a judge's
    from voproshalych_eval.db import labels as store

    stored = [m for m in store.list_agreements(demo_engine, "dataset_review") if m["version"] == "qa_fit@gate"]
    assert stored and stored[0]["n"] == 5 and stored[0]["report"]["run_id"] == run_id
    # without the run's item records the decisions are still counted (the gates' values are not read)
    bare = run_review(demo_engine, runs.get_run(demo_engine, run_id))
    assert bare["n_reviewed"] == 5 and all(not it.gates for it in bare["items"])


def test_generate_takes_a_calibrated_threshold(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    """``dataset generate --threshold qa_fit_offline=1.0``: no template answer fits perfectly, the fit gate drops all."""
    main(["dataset", "generate", "--size", "2", "--types", "factual", "--offline", "--pages",
          "https://wiki.sevgu-demo.ru/display/STUD/Sport", "--name", "thr_" + uuid.uuid4().hex[:6],
          "--no-compare-existing", "--threshold", "qa_fit_offline=1.0", "--json"])
    out = json.loads(capsys.readouterr().out)  # nothing kept: the run reports an empty set (a non-zero exit)
    assert out["n_items"] == 0 and out["dropped"]["qa_fit"] >= 1
    from voproshalych_eval.engine.runs import get_run

    assert get_run(demo_engine, out["run_id"]).params["thresholds"]["qa_fit_offline"] == 1.0
    rc = main(["dataset", "generate", "--size", "2", "--offline", "--threshold", "qa_fit"])
    assert rc != 0 and "GATE=VALUE" in capsys.readouterr().err


def test_qa_fit_gate_drops_misfits_on_the_llm_path(demo_engine, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """A scripted generator (real HTTP) that sometimes answers beside the question or garbles the answer: the
    question–answer fit gate drops those (garbled ones without asking the judge), and keeps none of them."""
    from tests.support.scripted_generation import GenerationLLM
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.datasets.store import get_dataset
    from voproshalych_eval.engine import runs

    with GenerationLLM(misfit_every=3) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        get_settings.cache_clear()
        name = "fit_" + uuid.uuid4().hex[:6]
        main(["dataset", "generate", "--size", "12", "--types", "factual,conditional", "--oversample", "1.0",
              "--name", name, "--model", "gen-" + uuid.uuid4().hex[:6], "--no-compare-existing", "--json"])
        out = json.loads(capsys.readouterr().out)
        misfits = dict(srv.misfits)
        n_injected = srv.injected.get("qa_fit", 0)
        n_relevance = srv.kinds.get("answer_relevance", 0)
    get_settings.cache_clear()
    assert n_injected >= 2 and set(misfits.values()) == {"misfit", "garbled"}, misfits
    assert out["dropped"]["qa_fit"] == n_injected  # every injected misfit, and nothing else
    recs = {r["item_key"]: r["result"] for r in runs.item_records(demo_engine, out["run_id"])}
    fit = [r["gates"]["qa_fit"] for r in recs.values() if "qa_fit" in (r.get("gates") or {})]
    garbled = [g for g in fit if g.get("reason") == "foreign_script"]
    assert 1 <= len(garbled) <= n_injected
    assert all("value" not in g for g in garbled)  # refused before the judge is asked
    assert n_relevance == len(fit) - len(garbled)  # the judge was asked once per other item reaching the gate
    assert all(g["value"] == 0.1 and g["threshold"] == 0.5 for g in fit if g.get("reason") is None and not g["passed"])
    ds = get_dataset(demo_engine, name, "golden")
    assert not [r for r in ds.records if r["ground_truth_answer"] in misfits]
