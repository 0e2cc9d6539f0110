"""One verdict per run (issue 29 item 7): the deployment gate is part of the baseline verdict, so the card, the
gate and the report never disagree; a run whose judgements all failed reads as a failure, not "insufficient data"."""

from __future__ import annotations

from voproshalych_eval.engine import baselines as bl

BASE = [bl.Baseline("tier3", "pass_rate", 0.80, 0.05), bl.Baseline("tier3", "avg_e2e_score", 0.70, 0.05)]


def _m(value: float | None, n: int, n_failed: int = 0) -> dict[str, float | int | None]:
    return {"value": value, "n": n, "n_failed": n_failed, "ci_low": None, "ci_high": None}


def test_a_passed_gate_does_not_hide_a_critical_metric_and_is_one_row_of_the_verdict() -> None:
    metrics = {"pass_rate": _m(1.0, 9), "avg_e2e_score": _m(0.30, 9), "gate_pass_rate": 0.9, "gate_passed": True,
               "min_pass_rate": 0.5, "n_items": 10}
    res = bl.evaluate_run(BASE, "tier3", "done", metrics)
    assert res.status == "critical"  # one verdict: the worst of the baselines and the gate
    gate = [r for r in res.metrics if r.get("gate")]
    assert len(gate) == 1 and gate[0]["status"] == "good" and gate[0]["value"] == 0.9 and gate[0]["baseline"] == 0.5
    # the two pass shares carry different names (among the judged answers vs of all questions)
    assert gate[0]["label_en"] != next(r for r in res.metrics if r["metric"] == "pass_rate")["label_en"]


def test_a_failed_gate_makes_the_run_critical_even_when_every_baseline_is_met() -> None:
    metrics = {"pass_rate": _m(0.95, 9), "avg_e2e_score": _m(0.90, 9), "gate_pass_rate": 0.4, "gate_passed": False,
               "min_pass_rate": 0.8, "n_items": 10}
    assert bl.evaluate_run(BASE, "tier3", "done", metrics).status == "critical"
    metrics["gate_passed"], metrics["gate_pass_rate"] = True, 0.9
    assert bl.evaluate_run(BASE, "tier3", "done", metrics).status == "good"


def test_all_failed_judgements_read_as_failure_not_insufficient_data() -> None:
    metrics = {"pass_rate": _m(None, 0, 10), "avg_e2e_score": _m(None, 0, 10)}
    res = bl.evaluate_run(BASE, "tier3", "done", metrics)
    assert res.status == "failed" and bl.STATUS_LABELS["failed"][1].startswith("failed")
    assert bl.evaluate_run(BASE, "tier3", "failed", {}).status == "failed"  # every item failed
    # too few items (not failures) is still "insufficient data"
    assert bl.evaluate_run(BASE, "tier3", "done", {"pass_rate": _m(1.0, 2)}).status == "insufficient"
    # offline runs stay "offline — not compared" whatever failed
    assert bl.evaluate_run(BASE, "tier3", "done", metrics, offline=True).status == "offline"


def test_the_report_states_the_gate_inside_its_verdict() -> None:
    from voproshalych_eval.reports import _gate_line

    metrics = {"pass_rate": _m(1.0, 9), "gate_pass_rate": 0.9, "gate_passed": True, "min_pass_rate": 0.5, "n_items": 10}
    status = bl.evaluate_run(BASE, "tier3", "done", metrics).to_dict()
    ((label, line),) = _gate_line(status, "en")
    assert label.startswith("Deployment gate") and line == "PASS — 0.900 ≥ 0.500"
    assert _gate_line(bl.evaluate_run(BASE, "tier3", "done", {"pass_rate": _m(1.0, 9)}).to_dict(), "ru") == []
