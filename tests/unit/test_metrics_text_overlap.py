"""Tests of voproshalych_eval.metrics.text_overlap."""

from __future__ import annotations

import math
import threading

import pytest

from voproshalych_eval.metrics.text_overlap import bleu, chrf, rouge_scores, tokenize

ALL_KEYS = {f"{t}_{s}" for t in ("rouge1", "rouge2", "rougeL") for s in ("p", "r", "f")}
ANSWER = "Стипендия выплачивается ежемесячно, до 25-го числа; ёлка — 2024 год."


def test_tokenize_unicode_lower_yo_digits() -> None:
    assert tokenize("Ёлка и ЁЖ: 25-го числа, 2024 г.") == ["елка", "и", "еж", "25", "го", "числа", "2024", "г"]
    assert tokenize("") == []
    assert tokenize(" ,.!? ") == []
    assert tokenize("Hello МИР") == ["hello", "мир"]


def test_tokenize_stemming() -> None:
    assert tokenize("стипендии", stem=True) == tokenize("Стипендия", stem=True) == ["стипенд"]
    assert tokenize("стипендии") != tokenize("стипендия")


def test_pitfall_identical_russian_texts_score_one() -> None:
    # The default rouge_score tokenizer drops Cyrillic and scores this 0.
    scores = rouge_scores(ANSWER, ANSWER)
    assert set(scores) == ALL_KEYS
    assert all(v == pytest.approx(1.0) for v in scores.values())
    assert all(v == pytest.approx(1.0) for v in rouge_scores(ANSWER, ANSWER, stem=True).values())
    assert bleu(ANSWER, ANSWER) == pytest.approx(100.0)
    assert chrf(ANSWER, ANSWER) == pytest.approx(100.0)


def test_rouge_partial_overlap_hand_computed() -> None:
    pred = "Мама мыла раму"
    ref = "мама мыла пол вчера"
    s = rouge_scores(pred, ref)
    # ROUGE-1: overlap 2, |pred| 3, |ref| 4.
    assert s["rouge1_p"] == pytest.approx(2 / 3)
    assert s["rouge1_r"] == pytest.approx(2 / 4)
    assert s["rouge1_f"] == pytest.approx(4 / 7)
    # ROUGE-2: bigram overlap 1 ("мама мыла"), 2 pred bigrams, 3 ref bigrams.
    assert s["rouge2_p"] == pytest.approx(1 / 2)
    assert s["rouge2_r"] == pytest.approx(1 / 3)
    assert s["rouge2_f"] == pytest.approx(2 / 5)
    # ROUGE-L: LCS = 2.
    assert s["rougeL_f"] == pytest.approx(4 / 7)
    assert all(0.0 <= v <= 1.0 for v in s.values())


def test_rouge_l_order_matters() -> None:
    s = rouge_scores("в б а", "а б в")
    assert s["rouge1_f"] == pytest.approx(1.0)
    assert s["rouge2_f"] == 0.0
    assert s["rougeL_f"] == pytest.approx(1 / 3)


def test_rouge_stemming_matches_inflections() -> None:
    pred = "размер стипендии"
    ref = "размер стипендия"
    assert rouge_scores(pred, ref)["rouge1_f"] == pytest.approx(0.5)
    assert rouge_scores(pred, ref, stem=True)["rouge1_f"] == pytest.approx(1.0)


def test_rouge_yo_and_case_insensitive() -> None:
    assert rouge_scores("ЕЩЁ РАЗ", "еще раз")["rouge1_f"] == pytest.approx(1.0)


def test_rouge_empty_texts() -> None:
    for pred, ref in (("", "текст"), ("текст", ""), ("", ""), ("...", "текст")):
        s = rouge_scores(pred, ref)
        assert set(s) == ALL_KEYS
        assert all(v == 0.0 for v in s.values())


def test_rouge_agrees_with_rouge_score_on_ascii() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    pred = "the cat sat on the mat near 2 dogs"
    ref = "a cat was sitting on the mat with 2 dogs"
    ref_scores = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"]).score(ref, pred)
    ours = rouge_scores(pred, ref)
    for t in ("rouge1", "rouge2", "rougeL"):
        assert ours[f"{t}_p"] == pytest.approx(ref_scores[t].precision)
        assert ours[f"{t}_r"] == pytest.approx(ref_scores[t].recall)
        assert ours[f"{t}_f"] == pytest.approx(ref_scores[t].fmeasure)


def test_bleu_brevity_penalty_hand_computed() -> None:
    # All n-gram precisions are 1; hypothesis 5 tokens, reference 6: BP = exp(1 - 6/5).
    assert bleu("один два три четыре пять", "один два три четыре пять шесть") == pytest.approx(
        100 * math.exp(1 - 6 / 5), abs=1e-6
    )


def test_bleu_short_identical_and_range() -> None:
    assert bleu("Да", "Да") == pytest.approx(100.0)
    assert bleu("", "Да") == 0.0
    assert bleu("Да", "") == 0.0
    value = bleu("Стипендия выплачивается раз в месяц", "Стипендию платят ежемесячно")
    assert 0.0 <= value < 100.0


def test_bleu_case_option() -> None:
    assert bleu("СТИПЕНДИЯ ВЫПЛАЧИВАЕТСЯ", "стипендия выплачивается") < 100.0
    assert bleu("СТИПЕНДИЯ ВЫПЛАЧИВАЕТСЯ", "стипендия выплачивается", lowercase=True) == pytest.approx(100.0)


def test_chrf_partial_and_empty() -> None:
    value = chrf("стипендии", "стипендия")
    assert 0.0 < value < 100.0
    assert chrf("", "текст") == 0.0
    assert chrf("абв", "где") < value


def test_stemming_is_thread_safe() -> None:
    words = "стипендии студентов общежития расписание экзаменов " * 50
    expected = tokenize(words, stem=True)
    results: list[list[str]] = []

    def work() -> None:
        for _ in range(20):
            results.append(tokenize(words, stem=True))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80
    assert all(r == expected for r in results)
