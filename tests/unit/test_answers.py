"""Classification of the bot's answers: declines in disguise, templates, real answers, effective answered rate."""

from __future__ import annotations

import json

import pytest

from voproshalych_eval.analytics.answers import AnswerRules, classify_answers

PAGE = "https://wiki/x/"
ROWS = [
    ("Ответ не найден.", PAGE + "A"),
    ("Что-то в вашем вопросе меня смущает. Попробуйте переформулировать вопрос.", PAGE + "B"),
    ("Извините, но в предоставленном фрагменте нет информации, чтобы ответить на ваш вопрос.", PAGE + "A"),
    ("К сожалению, в предоставленном фрагменте нет ответа на этот вопрос.", PAGE + "C"),
    ("Извините, я отвечаю только на вопросы, связанные с учёбой.", None),
    ("Здравствуйте! Чем могу помочь?", None),
    ("Рад был помочь! Если появятся ещё вопросы — пишите.", None),
    ("Стипендия перечисляется не позднее 25 числа на карту «Мир».", PAGE + "Stipendii"),
    ("В предоставленном фрагменте сказано: отработки по субботам с 10:00.", PAGE + "Fizkultura"),
    ("Здравствуйте! " + "Отработки проходят по субботам с 10:00 до 14:00 в зале № 2 спорткомплекса. " * 4,
     PAGE + "Fizkultura"),
    ("", None),
    (None, None),
]


def test_declines_templates_and_real_answers_are_told_apart() -> None:
    res = classify_answers([a for a, _ in ROWS], [u for _, u in ROWS])
    assert list(res.classes) == ["not_found", "refusal", "not_found", "not_found", "refusal", "template", "template",
                                 "answer", "answer", "answer", "empty", "empty"]
    assert res.rule[0].startswith("pattern") and res.rule[7] == "default" and res.rule[10] == "empty"


def test_effective_rate_is_raw_minus_exactly_the_declines() -> None:
    res = classify_answers([a for a, _ in ROWS], [u for _, u in ROWS])
    m = res.metrics()
    n = len(ROWS)
    assert m["answered_rate"] == pytest.approx(10 / n)
    assert m["effective_answered_rate"] == pytest.approx(3 / n)
    assert m["n_declined"] == 7
    assert m["answered_rate"] - m["effective_answered_rate"] == pytest.approx(m["n_declined"] / n)
    assert m["declined_share_of_answered"] == pytest.approx(7 / 10)
    assert res.table()["rows"].sum() == n


def test_no_class_depends_on_the_page_urls() -> None:
    # the old "frequent template" rule called every frequent text without a page a template: a log exported
    # without URLs lost its real answers (0.502 -> 0.037 on the demo); now the URLs only fill the pages column
    canned = "Мы ценим ваш интерес к университету."
    answers = [canned] * 6 + ["Общежитие выдаётся по заявлению."] * 6 + [a for a, _ in ROWS]
    urls = [PAGE + p for p in "ABCABC"] + [PAGE + "Obshchezhitiya"] * 6 + [u for _, u in ROWS]
    labels = {canned: "template", "Общежитие выдаётся по заявлению.": "answer"}
    for lab in (None, labels):
        with_urls = classify_answers(answers, urls, labels=lab)
        without = classify_answers(answers, None, labels=lab)
        assert list(with_urls.classes) == list(without.classes)
        assert with_urls.metrics()["effective_answered_rate"] == without.metrics()["effective_answered_rate"]
    assert set(with_urls.classes[:6]) == {"template"} and set(with_urls.rule[:6]) == {"label"}
    top = with_urls.frequent.set_index("answer")
    assert top.loc[canned, "count"] == 6 and top.loc[canned, "pages"] == 3 and bool(top.loc[canned, "labelled"])


def test_overrides_and_patterns_are_editable() -> None:
    rules = AnswerRules(overrides={"  ОТВЕТ не найден. ": "answer"})  # normalised like the texts
    res = classify_answers(["Ответ не найден.", "Стипендия 3 100 руб."], rules=rules)
    assert list(res.classes) == ["answer", "answer"] and res.rule[0] == "label"  # an override is a person's label
    rules = AnswerRules(patterns=[{"class": "refusal", "pattern": r"руб\."}])
    assert list(classify_answers(["Ответ не найден.", "Стипендия 3 100 руб."], rules=rules).classes) == [
        "answer", "refusal"]
    again = AnswerRules.from_dict(json.loads(json.dumps(rules.to_dict())))
    assert again.to_dict() == rules.to_dict()


def test_bad_rules_are_rejected_with_the_place(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="rule 1.*regular expression"):
        AnswerRules(patterns=[{"class": "refusal", "pattern": "("}])
    with pytest.raises(ValueError, match="class 'nope'"):
        AnswerRules(patterns=[{"class": "nope", "pattern": "x"}])
    p = tmp_path / "rules.json"
    p.write_text(json.dumps({"overrides": {"x": "maybe"}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"rules\.json.*override 'x'"):
        AnswerRules.from_file(p)
    p.write_text(json.dumps({"patterns": [], "colour": 1}), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown keys"):
        AnswerRules.from_file(p)


def test_no_override_can_break_raw_minus_effective_equals_declines() -> None:
    # "empty" means no text at all: a non-empty answer mapped to it would leave the raw rate, not the declines
    with pytest.raises(ValueError, match="class 'empty'.*never 'empty'"):
        AnswerRules(overrides={"Ответ не найден.": "empty"})
    with pytest.raises(ValueError, match="class 'empty'"):
        AnswerRules(patterns=[{"class": "empty", "pattern": "x"}])
    # every allowed override keeps the identity exactly
    for cls in ("answer", "not_found", "refusal", "template"):
        rules = AnswerRules(overrides={"Стипендия перечисляется не позднее 25 числа на карту «Мир».": cls,
                                       "Ответ не найден.": "answer"})
        m = classify_answers([a for a, _ in ROWS], [u for _, u in ROWS], rules=rules).metrics()
        assert m["answered_rate"] == pytest.approx(10 / len(ROWS))
        assert m["answered_rate"] - m["effective_answered_rate"] == pytest.approx(m["n_declined"] / len(ROWS))


def test_rules_file_is_read_like_every_input_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.datasets.files import RecordFileError

    p = tmp_path / "rules.json"
    # min_template_count: a key of the removed URL-based rule, still read (and checked) in older files, ignored
    body = json.dumps({"overrides": {"Ответ не найден.": "answer"}, "min_template_count": 7}, ensure_ascii=False)
    p.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))  # a BOM, as Windows editors write it
    rules = AnswerRules.from_file(p)
    assert rules.overrides == {"ответ не найден.": "answer"} and rules.to_dict() == {
        "patterns": AnswerRules().patterns, "overrides": {"ответ не найден.": "answer"}}
    p.write_bytes(body.encode("cp1251"))  # not UTF-8: the reader's clear sentence, not a UnicodeDecodeError
    with pytest.raises(RecordFileError, match="rules.json.*cp1251"):
        AnswerRules.from_file(p)
    cases = [({"patterns": [{"class": "refusal", "pattern": "x"}, {"class": "refusal", "pattern": "("}]},
              "patterns[2].pattern", "regular expression"),
             ({"overrides": {"x": "empty"}}, "overrides", "never 'empty'"),
             ({"min_template_count": "many"}, "min_template_count", "must be an integer"),
             ({"patterns": "x"}, "patterns", "list of objects")]
    for data, field_name, message in cases:
        p.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(RecordFileError, match=message) as err:
            AnswerRules.from_file(p)
        assert err.value.file == str(p) and err.value.field == field_name
        assert f"rules.json, field '{field_name}'" in str(err.value)
    p.write_text("{\"overrides\": ", encoding="utf-8")
    with pytest.raises(RecordFileError, match="rules.json"):
        AnswerRules.from_file(p)


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="2 answers but 1 urls"):
        classify_answers(["a", "b"], ["u"])
    assert classify_answers([]).classes.size == 0
