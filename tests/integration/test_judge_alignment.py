"""Human labels, judge agreement and alignment end to end: the CLI against scripted judges over real HTTP.

A judge biased in a known way (says "show" whenever the answer is long) must be caught by the agreement
report and corrected by alignment on the demo judge set (92 labels), with every "after" number from items
the aligned version never saw; a judge whose errors have nothing to learn from must come out unchanged and
nothing adopted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.scripted_judges import (
    LengthBiasedJudge,
    NoisyJudge,
    examples_in,
    judge_set_labels,
    judged_item,
)
from tests.support.scripted_openai import scripted_openai, scripted_openai_env  # noqa: F401
from voproshalych_eval.cli import main
from voproshalych_eval.config import PROJECT_ROOT

JUDGE_SET = PROJECT_ROOT / "data" / "judge_set.json"


@pytest.fixture
def labelled(fresh_engine, monkeypatch):  # type: ignore[no-untyped-def]
    import voproshalych_eval.commands.labels as labels_command

    monkeypatch.setattr(labels_command, "engine", lambda: fresh_engine)
    return fresh_engine


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc = main([*args, "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def test_labels_import_export_list_roundtrip(labelled, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert _cli(capsys, "labels", "import", "--demo")["imported"] == 92
    earlier = PROJECT_ROOT / "tests" / "fixtures" / "earlier_benchmark" / "show_no_show_labels.json"
    n_earlier = _cli(capsys, "labels", "import", str(earlier))["imported"]
    assert n_earlier == len(json.loads(earlier.read_text(encoding="utf-8")))
    counts = {r["metric"]: r for r in _cli(capsys, "labels", "list")["metrics"]}
    assert counts["show_no_show"]["n_labels"] == 92 + n_earlier and counts["show_no_show"]["n_annotators"] == 2
    out = tmp_path / "labels.csv"
    assert main(["labels", "export", "--metric", "show_no_show", "--output", str(out)]) == 0
    # a second annotator re-labels the exported items: same items (keys), another person
    assert _cli(capsys, "labels", "import", str(out), "--annotator", "second")["imported"] == 92 + n_earlier
    again = {r["metric"]: r for r in _cli(capsys, "labels", "list")["metrics"]}["show_no_show"]
    assert again["n_items"] == counts["show_no_show"]["n_items"] and again["n_annotators"] == 3


def test_bad_label_file_names_file_row_and_field(labelled, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.csv"
    bad.write_text("metric,question,answer,value,annotator\nshow_no_show,q1,a1,1,ann\nshow_no_show,q2,a2,3,ann\n",
                   encoding="utf-8")
    assert main(["labels", "import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "row 3" in err and "value" in err
    assert _cli(capsys, "labels", "list")["metrics"] == []  # nothing stored half-way


def test_biased_judge_found_and_aligned(labelled, scripted_openai_env, capsys) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    srv = scripted_openai_env
    labels = judge_set_labels(JUDGE_SET)
    srv.responder = LengthBiasedJudge(labels, long_at=120)
    _cli(capsys, "labels", "import", "--demo")
    rep = _cli(capsys, "judge-agreement", "--metric", "show_no_show", "--resamples", "300")
    assert rep["n"] == 92 and rep["n_failed"] == 0 and rep["main"] == "kappa"
    n_long_no = sum(1 for (q, a), y in labels.items() if len(a) >= 120 and y == 0)
    assert rep["confusion"]["matrix"][0][1] == n_long_no  # people said no-show, the judge said show
    assert rep["confusion"]["matrix"][1][0] == 0
    assert rep["bias"]["mean"] == pytest.approx(n_long_no / 92) and rep["bias"]["ci"][0] > 0  # the bias is found
    assert rep["kappa"]["ci"][0] < rep["kappa"]["value"] < rep["kappa"]["ci"][1] < 1

    srv.requests.clear()
    out = _cli(capsys, "judge-align", "--metric", "show_no_show", "--folds", "5", "--resamples", "300")
    assert out["after"]["kappa"]["value"] > out["before"]["kappa"]["value"]
    assert out["difference"]["ci"][0] > 0 and out["adopted"] is True
    assert out["before"]["kappa"]["value"] == pytest.approx(rep["kappa"]["value"])
    _check_folds(out, srv.requests)
    # the adopted version is now the metric's default: agreement without --version uses it
    again = _cli(capsys, "judge-agreement", "--metric", "show_no_show", "--resamples", "200")
    assert again["version"] == out["version"]
    builtin = _cli(capsys, "judge-agreement", "--metric", "show_no_show", "--version", "show_no_show@builtin",
                   "--resamples", "200")
    assert builtin["version"] == "show_no_show@builtin" and builtin["kappa"]["value"] == rep["kappa"]["value"]
    assert builtin["n_cached"] == 92  # items already judged with this model and prompt cost no call


def _check_folds(out: dict, requests: list[dict]) -> None:
    """Folds are disjoint, cover every item, and no item is judged by a version whose examples include it."""
    held = [k for f in out["folds"] for k in f["held_out"]]
    assert len(held) == len(set(held)) == out["n_items"] == 92
    ids = sorted(i for f in out["folds"] for i in f["held_out_ids"])
    assert ids == sorted(r["id"] for r in json.loads(JUDGE_SET.read_text(encoding="utf-8")))
    for f in out["folds"]:
        assert not set(f["examples"]) & set(f["held_out"]) and not set(f["train"]) & set(f["held_out"])
    aligned = [r for r in requests if examples_in(r)]
    assert len(aligned) == 92  # every item judged once by its fold's version
    for r in aligned:
        item = judged_item(r)
        shown = {a for a, _ in examples_in(r)}
        assert item is not None and item[1] not in shown


def test_unbiased_judge_changes_nothing_and_adopts_nothing(labelled, scripted_openai_env, capsys) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    srv = scripted_openai_env
    srv.responder = NoisyJudge(judge_set_labels(JUDGE_SET))
    _cli(capsys, "labels", "import", "--demo")
    out = _cli(capsys, "judge-align", "--metric", "show_no_show", "--folds", "5", "--resamples", "300")
    assert out["adopted"] is False and not out["difference"]["significant"]
    assert out["difference"]["ci"][0] <= 0 <= out["difference"]["ci"][1]
    assert out["after"]["kappa"]["value"] == pytest.approx(out["before"]["kappa"]["value"])
    rep = _cli(capsys, "judge-agreement", "--metric", "show_no_show", "--resamples", "200")
    assert rep["version"] == "show_no_show@builtin"  # the old version stays the default


def test_aligned_version_is_selectable_per_run_and_frozen(fresh_engine, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """A run names its judge version in its frozen prompts; adopting another default afterwards makes its resume
    refuse, naming the version."""
    from voproshalych_eval.db import labels as store
    from voproshalych_eval.engine import executor
    from voproshalych_eval.judges.versions import JudgeVersion
    from voproshalych_eval.tiers.judge_metrics import build_plan, store_samples

    srv = scripted_openai_env
    ds = store_samples(fresh_engine, [{"id": "s1", "user_input": "Сколько стоит общежитие?", "response": "1 100 руб.",
                                       "retrieved_contexts": ["Плата — 1 100 руб. в месяц."]}], "align_samples")
    v1 = JudgeVersion("show_no_show", ("Эксперты строже.",), ({"question": "q", "answer": "длинный ответ",
                                                             "contexts": [], "value": 0.0, "note": "не по фрагменту"},))
    v2 = JudgeVersion("show_no_show", ("Эксперты мягче.",))
    store.save_version(fresh_engine, "show_no_show", v1.version, v1.spec(), {"test": True}, adopted=False)
    store.save_version(fresh_engine, "show_no_show", v2.version, v2.spec(), {"test": True}, adopted=False)
    builtin = build_plan(fresh_engine, {"dataset": ds.id, "metric": "show_no_show"})
    assert "aligned_version" not in builtin.prompts  # nothing adopted: the built-in prompt
    plan = build_plan(fresh_engine, {"dataset": ds.id, "metric": "show_no_show", "judge_version": v1.version})
    assert plan.prompts["aligned_version"] == v1.version
    plan.work(plan.items[0][1])
    assert "Эксперты строже." in srv.requests[-1]["messages"][-1]["content"]
    assert examples_in(srv.requests[-1]) == [("длинный ответ", "No")]
    run_id = executor.create_run(fresh_engine, builtin)
    assert executor.prepare_resume(fresh_engine, run_id)[1] is None
    store.save_version(fresh_engine, "show_no_show", v2.version, v2.spec(), {"test": True}, adopted=True)
    with pytest.raises(executor.ResumeRefused, match="aligned_version"):
        executor.prepare_resume(fresh_engine, run_id)


def test_poor_agreement_is_warned_next_to_the_metric_in_run_reports(labelled, scripted_openai_env, capsys) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """A judge that always says "show" agrees with people by chance only (kappa 0): the measurement is stored
    and a run report of that judge metric and model carries the warning next to its number."""
    from tests.support.plans import run as run_plan
    from voproshalych_eval.reports import run_report
    from voproshalych_eval.tiers.judge_metrics import store_samples

    _cli(capsys, "labels", "import", "--demo")
    rep = _cli(capsys, "judge-agreement", "--metric", "show_no_show", "--resamples", "200")
    assert rep["kappa"]["value"] == 0 and rep["poor"] is True and rep["bias"]["mean"] == pytest.approx(48 / 92)
    ds = store_samples(labelled, [{"id": "s1", "user_input": "Сколько стоит общежитие?", "response": "1 100 руб.",
                                   "retrieved_contexts": ["Плата — 1 100 руб. в месяц."]}], "poor_samples")
    ran = run_plan(labelled, "judge_metrics", {"dataset": ds.id, "metric": "show_no_show"})
    for lang, words in (("en", "agrees poorly with people"), ("ru", "плохо согласуется с людьми")):
        md = run_report(labelled, ran.run.id, "md", lang=lang)
        assert f"⚠️ avg_show_no_show: {'its judge' if lang == 'en' else 'судья'}" in md and words in md
        assert "⚠️ |" in md or "⚠️" in md.split("avg_show_no_show", 2)[-1]


def test_review_decisions_become_dataset_review_labels(demo_engine) -> None:  # type: ignore[no-untyped-def]
    """A reviewer's accept/reject of dataset items are labels (1 / 0, the reason as note) of ``dataset_review``."""
    import uuid

    from voproshalych_eval.datasets import annotations as A
    from voproshalych_eval.datasets.store import Dataset, content_hash, get_dataset, store
    from voproshalych_eval.db import labels as label_store
    from voproshalych_eval.judges.labels import import_review_decisions

    demo = get_dataset(demo_engine, "demo_golden", "golden")
    recs = [dict(r) for r in demo.records[:4]]
    ds = store(demo_engine, Dataset("t_" + uuid.uuid4().hex[:8], "golden", recs, content_hash(recs), source="test"))
    k0, k1 = ds.keys()[0], ds.keys()[1]
    after = A.reject(demo_engine, ds, k1, "вопрос не о том")
    A.accept(demo_engine, after, k0)
    assert import_review_decisions(demo_engine, ds.name) == 2
    mine = [lab for lab in label_store.list_labels(demo_engine, "dataset_review") if lab["source"] == f"dataset_review:{ds.name}"]
    try:
        by_id = {lab["item_id"]: lab for lab in mine}
        assert by_id[k0]["value"] == 1.0 and by_id[k1]["value"] == 0.0 and by_id[k1]["note"] == "вопрос не о том"
        assert by_id[k1]["question"] == recs[1]["question"]
    finally:
        for lab in mine:
            label_store.delete_label(demo_engine, "dataset_review", lab["item_key"], lab["annotator"])


def test_gate_agreement_with_reviewers(labelled, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Reviewers' accept/reject decisions are the labels of the well-formed question gate: its agreement with them
    is reported like any judge's."""
    rows = [("Когда выплачивают стипендию?", 1), ("Вот несколько вопросов, которые могут быть заданы студентом:", 0),
            ("Ваш ответ на вопрос о стоимости пересдач?", 0), ("Где находится деканат?", 1),
            ("Сколько стоит общежитие?", 0)]  # the last: rejected for another reason (the gate lets it pass)
    f = tmp_path / "review.json"
    f.write_text(json.dumps([{"metric": "dataset_review", "question": q, "answer": "…", "value": v, "annotator": "rev",
                              "note": None if v else "не вопрос студента"} for q, v in rows], ensure_ascii=False),
                 encoding="utf-8")
    _cli(capsys, "labels", "import", str(f))
    rep = _cli(capsys, "judge-agreement", "--metric", "dataset_review", "--resamples", "200")
    assert rep["n"] == 5 and rep["version"] == "well_formed@gate"
    assert rep["confusion"]["matrix"] == [[2, 1], [0, 2]]  # rows: reviewers reject/accept; columns: the gate
    assert rep["bias"]["mean"] == pytest.approx(0.2)
