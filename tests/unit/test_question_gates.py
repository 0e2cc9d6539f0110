"""The well-formed question gate: a model's preamble parsed out, non-questions refused (issue 27 §4)."""

from __future__ import annotations

import pytest

from voproshalych_eval.generation.gates import GATES, strip_preamble, well_formed_question


@pytest.mark.parametrize(("raw", "question"), [
    ("Вот несколько вопросов, которые могут быть заданы студентом:\n1. Когда выплачивают стипендию?",
     "Когда выплачивают стипендию?"),
    ("Вот вопрос: Когда сессия?", "Когда сессия?"),
    ("«Где находится деканат?»", "Где находится деканат?"),
    ("Here are some questions:\n- Where is the dean's office?", "Where is the dean's office?"),
    ("Сколько стоит общага для бюджетников", "Сколько стоит общага для бюджетников"),
    ("Вот где деканат?", "Вот где деканат?"),  # a question that opens with "Вот" is not a preamble
])
def test_preamble_is_parsed_out(raw: str, question: str) -> None:
    assert strip_preamble(raw) == question
    assert well_formed_question(strip_preamble(raw)) == (True, None)


@pytest.mark.parametrize(("raw", "reason"), [
    ("Вот несколько вопросов, которые могут быть заданы студентом…", "empty"),
    ("Вопросы:", "empty"),
    ("Ваш ответ на вопрос о стоимости пересдач?", "asks_for_an_answer"),
    ("Ответ: стипендия выплачивается до 25 числа", "asks_for_an_answer"),
    ("Стипендия?", "too_short"),
])
def test_non_questions_are_refused(raw: str, reason: str) -> None:
    assert well_formed_question(strip_preamble(raw)) == (False, reason)


def test_gate_is_counted_before_verbatim() -> None:
    assert GATES.index("well_formed") == GATES.index("generation") + 1 < GATES.index("verbatim")
