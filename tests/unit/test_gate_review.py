"""The dataset gates against reviewers' decisions: the question–answer fit gate's garbled-answer rule, threshold
calibration, each gate's agreement with the decisions and the share of kept items rejected — hand-computed."""

from __future__ import annotations

import math

import pytest

from voproshalych_eval.generation import gates as G
from voproshalych_eval.generation.gate_review import ReviewedItem, gate_agreement, share_of_rejected
from voproshalych_eval.metrics.agreement import best_threshold


def test_garbled_answer() -> None:
    # 10 letters, 4 of them CJK: 4/10 > 0.05
    assert G.garbled_answer("оплата 支付 支付") == "foreign_script"
    # one foreign letter in 30 Cyrillic/Latin ones: 1/31 ≈ 0.032 <= 0.05 — not garbled
    assert G.garbled_answer("Пересдача платная стоит ровно å") is None
    # 8 tokens, "да" 4 times: 4/8 = 0.5 > 0.4
    assert G.garbled_answer("да да да да стоит пятьсот рублей всего") == "repetition"
    # 8 tokens, the top one 3 times: 3/8 = 0.375 <= 0.4
    assert G.garbled_answer("да да да стоит пятьсот рублей всего раз") is None
    # fewer than 8 tokens: the repetition rule does not apply
    assert G.garbled_answer("да да да да") is None
    assert G.garbled_answer("Пересдача стоит 500 рублей, оплата в кассе.") is None


def test_gate_passes_sides() -> None:
    assert G.gate_passes("verbatim", 0.79, 0.8) and not G.gate_passes("verbatim", 0.8, 0.8)
    assert G.gate_passes("qa_fit", 0.5, 0.5) and not G.gate_passes("qa_fit", 0.49, 0.5)
    assert "qa_fit" in G.GATES and G.DEFAULT_THRESHOLDS["qa_fit"] == 0.5


def test_best_threshold_hand_computed() -> None:
    assert best_threshold([0, 0, 1, 1], [0.1, 0.4, 0.6, 0.9]) == (0.6, 1.0)
    # below (verbatim): pass when value < c. c=0.9 -> [1,1,1,0]: po=3/4, pe=.5*.75+.5*.25=.5, kappa=.5;
    # c=0.85 -> [1,1,0,0]: kappa 1 (the best); c=0.5 -> [1,0,0,0]: .5; c=0.2 -> all 0: kappa 0
    assert best_threshold([1, 1, 0, 0], [0.2, 0.5, 0.85, 0.9], side="below") == (0.85, 1.0)
    # ties go to the most lenient cut: human [0,1,1], scores [.2,.5,.5] -> c=.5 (kappa 1); c=.2 -> all pass, kappa 0
    assert best_threshold([0, 1, 1], [0.2, 0.5, 0.5]) == (0.5, 1.0)
    # no cut beats chance: the higher score goes with the reject -> (None, best kappa 0)
    cut, k = best_threshold([1, 0], [0.2, 0.9])
    assert cut is None and k == pytest.approx(0.0)
    with pytest.raises(ValueError, match="side"):
        best_threshold([1], [0.2], side="above")


def test_share_of_rejected_hand_computed() -> None:
    s = share_of_rejected(10, 8, 2)
    assert s["rejected_share"] == 0.2 and s["rejected_share_reviewed"] == 0.25 and s["n_accepted"] == 6
    # Wilson 95% for 2/8: centre (p + z²/2n)/(1 + z²/n) = (.25 + .2401)/1.4802 = .3311;
    # half-width z·sqrt(p(1−p)/n + z²/4n²)/(1 + z²/n) = 1.96·sqrt(.0234375 + .0150063)/1.4802 = .2596
    assert s["ci"] == pytest.approx([0.0715, 0.5907], abs=1e-3)
    empty = share_of_rejected(4, 0, 0)
    assert empty["rejected_share"] == 0.0 and empty["rejected_share_reviewed"] is None and empty["ci"] is None
    assert share_of_rejected(0, 0, 0)["rejected_share"] is None
    with pytest.raises(ValueError):
        share_of_rejected(2, 3, 1)


def _item(i: int, decision: float, support: float | None, qtype: str = "factual", question: str | None = None
          ) -> ReviewedItem:
    gates = {"well_formed": {"passed": True, "reason": None}, "verbatim": {"value": 0.3, "threshold": 0.8, "passed": True}}
    if support is not None:
        gates["support"] = {"value": support, "threshold": 0.7, "passed": support >= 0.7}
        gates["qa_fit"] = {"value": 0.9, "threshold": 0.5, "passed": True}
    else:
        gates["answerable"] = {"passed": True, "checked": []}
    return ReviewedItem(f"syn_{i:02d}", decision, question or f"Когда выплачивают стипендию номер {i}?", qtype, gates)


def test_gate_agreement_and_calibration_hand_computed() -> None:
    # 20 kept answerable items: the 6 rejected have support 0.7, the 14 accepted 0.9; one unanswerable (accepted)
    items = [_item(i, 0.0, 0.7) for i in range(6)] + [_item(i, 1.0, 0.9) for i in range(6, 20)]
    items.append(_item(20, 1.0, None, "unanswerable"))
    rep = gate_agreement(items, folds=5, n_resamples=300)
    assert list(rep) == ["well_formed", "verbatim", "support", "qa_fit", "answerable"]
    sup = rep["support"]
    # at the run's threshold 0.7 every kept item passes: kappa 0 (po = pe = 0.7), bias = mean(1 − h) = 6/20
    assert sup["n"] == 20 and sup["kappa"]["value"] == pytest.approx(0.0)
    assert sup["bias"]["mean"] == pytest.approx(0.3)
    assert sup["confusion"]["matrix"] == [[0, 6], [0, 14]]  # rows: rejected/accepted; columns: dropped/passed
    cal = sup["calibration"]
    assert cal["threshold"] == 0.7 and cal["calibrated"] == 0.9 and cal["calibrated_kappa_in_sample"] == 1.0
    # every fold's training items hold rejects (0.7) and accepts (0.9): cut 0.9, so every held-out item is
    # decided right: held-out kappa 1, paired difference 1 − 0; a resample without a reject (0.7^20 < 0.1 %)
    # is too rare to move the 2.5 % quantile: CI [1, 1]
    assert [f["threshold"] for f in cal["folds"]] == [0.9] * 5
    assert cal["held_out"]["kappa"]["value"] == 1.0 and cal["held_out"]["n"] == 20
    assert cal["difference"]["delta"] == 1.0 and cal["difference"]["ci"] == [1.0, 1.0] and cal["adopt"] is True
    # the folds are disjoint and cover every item once: no item is decided by a threshold chosen with it
    held = [k for f in cal["folds"] for k in f["held_out"]]
    assert sorted(held) == sorted(it.key for it in items[:20])
    # the unanswerable item has no support gate; the answerable gate saw only it (no calibration: no threshold)
    assert rep["answerable"]["n"] == 1 and "calibration" not in rep["answerable"]
    # well-formed: every question passes; verbatim 0.3 < 0.8 on all: kappa 0 with 21 items
    assert rep["well_formed"]["n"] == 21 and rep["verbatim"]["confusion"]["matrix"] == [[0, 6], [0, 15]]
    assert "calibration" not in rep["verbatim"] or rep["verbatim"]["calibration"]["calibrated"] is None


def test_gate_agreement_no_signal_adopts_nothing() -> None:
    # decisions unrelated to the support value: alternate accept/reject over the same values
    vals = [0.72, 0.75, 0.8, 0.85, 0.9, 0.95, 0.72, 0.75, 0.8, 0.85, 0.9, 0.95]
    items = [_item(i, float(i % 2), v) for i, v in enumerate(vals)]
    cal = gate_agreement(items, folds=4, n_resamples=300)["support"]["calibration"]
    assert cal["adopt"] is False
    assert cal["difference"]["ci"] is None or cal["difference"]["ci"][0] <= 0


def test_well_formed_gate_catches_a_preamble_question() -> None:
    # a kept item of an older run whose question is the model's preamble: the gate now drops it, the reviewer rejected
    items = [_item(0, 0.0, 0.9, question="Вот несколько вопросов, которые могут быть заданы студентом:"),
             _item(1, 1.0, 0.9), _item(2, 1.0, 0.9)]
    wf = gate_agreement(items, folds=5, n_resamples=200)["well_formed"]
    # judged [0, 1, 1] = human: kappa 1
    assert wf["kappa"]["value"] == 1.0 and wf["confusion"]["matrix"] == [[1, 0], [0, 2]]
    assert not math.isnan(wf["bias"]["mean"]) and wf["bias"]["mean"] == 0.0
