"""The learned answer classifier: trained on a person's labels plus the rules' seeds, cross-validated, its errors
carried into the CI of the effective answered rate."""

from __future__ import annotations

import numpy as np
import pytest

from voproshalych_eval.analytics.answer_classifier import ClassifierSettings, fit_predict
from voproshalych_eval.analytics.answers import classify_answers
from voproshalych_eval.analytics.text_ru import normalize
from voproshalych_eval.metrics.classification import misclassification_adjusted_rate
from voproshalych_eval.metrics.statistics import proportion_ci

ANSWERS = [
    "Стипендия перечисляется не позднее 25 числа на карту «Мир».",
    "Пересдача проходит с 10 по 28 февраля, направление выдаёт деканат.",
    "Общежитие стоит 1 100 руб. в месяц для бюджетников.",
    "Отработки по физкультуре проходят по субботам с 10:00 до 14:00.",
    "Студенческий билет продлевается ежегодно в деканате до 1 октября.",
    "Академический отпуск оформляется по заявлению и медицинской справке.",
    "Справку об обучении можно заказать в личном кабинете, готовность 1 день.",
    "Библиотека работает с 9:00 до 18:00, в субботу до 15:00.",
]
DECLINES = {
    "Ответ не найден.": "not_found",
    "Вибачте, я не можу відповісти на це питання.": "refusal",  # a Ukrainian refusal no pattern knows
    "Вибачте, я не можу відповісти на ваше питання.": "refusal",
    "Здравствуйте! Я бот-помощник, задайте вопрос.": "template",
    "Произошла ошибка, попробуйте позже.": "error",
}


def test_labels_teach_what_no_rule_knows() -> None:
    texts = ANSWERS + list(DECLINES) + ["Вибачте, я не можу відповісти на це запитання."]  # unlabelled variant
    labels = {**{a: "answer" for a in ANSWERS[:6]}, **{k: v for k, v in DECLINES.items()}}
    res = classify_answers(texts, labels=labels)
    assert res.classes[-1] == "refusal" and res.rule[-1] in {"classifier", "uncertain"}
    assert list(res.classes[6:8]) == ["answer", "answer"]  # unlabelled real answers stay answers
    rep = res.report
    assert rep is not None and rep.n_labels == len(labels) and rep.cv_folds >= 2
    acc = rep.accuracy
    assert acc["n"] == len(labels) and 0 <= acc["ci_low"] <= acc["value"] <= acc["ci_high"] <= 1
    cm = np.asarray(rep.confusion["matrix"])
    assert rep.confusion["labels"][0] == "answer" and cm.shape == (len(rep.classes), len(rep.classes))
    assert cm.sum() == len(labels) and np.trace(cm) == round(acc["value"] * len(labels))
    m = res.metrics()
    assert m["n_answer_labels"] == len(labels) and m["answer_classifier_accuracy"] == acc
    ci = m["effective_answered_rate_ci"]
    assert ci["ci_low"] <= ci["value"] <= ci["ci_high"] and ci["classified"] == m["effective_answered_rate"]


def test_without_a_labelled_answer_the_patterns_decide_and_no_accuracy_is_claimed() -> None:
    res = classify_answers(ANSWERS + ["Ответ не найден."], labels={"Ответ не найден.": "not_found"})
    assert res.report is None and res.classes[-1] == "not_found" and set(res.classes[:-1]) == {"answer"}
    m = res.metrics()
    assert "answer_classifier_accuracy" not in m and m["n_answer_labels"] == 0


def test_cross_validation_scores_labels_only_and_can_fail() -> None:
    # a person contradicts the obvious: a real-looking answer labelled a refusal; the CV must count the miss
    texts = [normalize(t) for t in ANSWERS + list(DECLINES)]
    labels = {t: "answer" for t in texts[:8]} | {normalize(k): v for k, v in DECLINES.items()}
    labels[texts[0]] = "refusal"
    out = fit_predict(texts, [None] * len(texts), labels, settings=ClassifierSettings(cv_folds=3))
    assert out is not None
    pred, rep = out
    assert pred[0] == "refusal"  # a labelled text keeps its label
    assert rep.accuracy["value"] < 1.0 and rep.n_seeds == 0
    assert rep.answer_confusion["tp"] + rep.answer_confusion["fn"] == 7


def test_settings_are_checked_and_frozen() -> None:
    s = ClassifierSettings()
    assert ClassifierSettings.from_dict(s.to_dict()) == s
    with pytest.raises(ValueError, match="version"):
        ClassifierSettings.from_dict({"version": "other"})
    with pytest.raises(ValueError, match="unknown"):
        ClassifierSettings.from_dict({"colour": 1})
    with pytest.raises(ValueError, match="invalid"):
        ClassifierSettings.from_dict({"cv_folds": 1})


def test_wilson_interval() -> None:
    # reference values: statsmodels proportion_confint(…, method="wilson") / the closed form
    lo, hi = proportion_ci(30, 30)
    assert lo == pytest.approx(0.8865, abs=1e-4) and hi == 1.0
    lo, hi = proportion_ci(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert proportion_ci(0, 0) == (None, None)
    with pytest.raises(ValueError):
        proportion_ci(3, 2)


def test_misclassification_adjusted_rate() -> None:
    # a perfect, large labelled sample: the interval hugs the classified share
    r = misclassification_adjusted_rate(n_total=1000, n_known_positive=300, n_predicted_positive=200,
                                        n_predicted_negative=100, tp=5000, fp=0, fn=0, tn=5000)
    assert r["classified"] == 0.5 and r["ci_low"] == pytest.approx(0.5, abs=2e-3)
    assert r["ci_high"] == pytest.approx(0.5, abs=2e-3)
    # a model that calls half its declines answers: the estimate drops below the classified share
    r = misclassification_adjusted_rate(n_total=1000, n_known_positive=0, n_predicted_positive=600,
                                        n_predicted_negative=400, tp=40, fp=40, fn=0, tn=40)
    assert r["classified"] == 0.6 and r["ci_high"] < 0.6 and r["value"] == pytest.approx(0.3, abs=0.03)
    assert r["n"] == 120
    # few labels: a wide interval
    small = misclassification_adjusted_rate(n_total=100, n_known_positive=0, n_predicted_positive=50,
                                            n_predicted_negative=50, tp=3, fp=0, fn=0, tn=3)
    assert small["ci_high"] - small["ci_low"] > 0.2
    with pytest.raises(ValueError):
        misclassification_adjusted_rate(n_total=1, n_known_positive=2, n_predicted_positive=0,
                                        n_predicted_negative=0, tp=0, fp=0, fn=0, tn=0)
