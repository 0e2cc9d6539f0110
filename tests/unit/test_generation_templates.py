"""Offline template generator: cloze / wh / student register / conditional, deterministic."""

from __future__ import annotations

from voproshalych_eval.generation import templates as T
from voproshalych_eval.generation.gates import verbatim_overlap

CHUNK = (
    "Академическая стипендия составляет 3 100 рублей в месяц для отличников и хорошистов. "
    "Если студент получил оценку удовлетворительно, стипендия не назначается до следующей сессии. "
    "Заявление на общежитие подаётся через личный кабинет студента."
)


def test_cloze_blanks_the_number() -> None:
    blanked, span = T.cloze("Размер выплаты составляет 3 100 рублей в месяц.")
    assert span == "3 100" and blanked == "Размер выплаты составляет ___ рублей в месяц."


def test_types_and_determinism() -> None:
    f0 = T.template_item("factual", [CHUNK], 0)
    assert f0 is not None and f0["template"] == "cloze" and "___" in f0["question"] and f0["answer"] in CHUNK
    f1 = T.template_item("factual", [CHUNK], 1)
    assert f1 is not None and f1["template"] == "wh" and f1["question"].startswith("Что сказано о «")
    cond = T.template_item("conditional", [CHUNK], 0)
    assert cond is not None and cond["template"] == "condition" and cond["question"].startswith("Что будет, если ")
    assert "удовлетворительно" in cond["answer"]
    para = T.template_item("paraphrase", [CHUNK], 2)
    assert para is not None and para["question"] == para["question"].lower() and "?" not in para["question"]
    assert para == T.template_item("paraphrase", [CHUNK], 2)  # deterministic
    fu = T.template_item("follow_up", [CHUNK], 0)
    assert fu is not None and fu["first_question"] and fu["question"].startswith("А «")
    mc = T.template_item("multi_chunk", [CHUNK, "Общежитие номер 2 находится на улице Ленина, дом 5."], 0)
    assert mc is not None and "И ещё:" in mc["question"] and "Ленина" in mc["answer"]
    un = T.template_item("unanswerable", [CHUNK], 0)
    assert un is not None and un["answer"] == "В базе знаний нет этой информации."
    en = T.template_item("factual", [CHUNK], 1, lang="en")
    assert en is not None and en["question"].startswith("What does the knowledge base say")
    assert T.template_item("factual", ["Коротко."], 0) is None  # no sentence of five words
    assert T.template_item("multi_chunk", [CHUNK], 0) is None


def test_student_register_uses_slang_and_a_typo() -> None:
    q = T.student_register("Когда выплачивают стипендия в университет?", seed=0)
    assert "стипа" in q or "стипуха" in q or "стипендуха" in q
    assert "универ" in q
    assert q == q.lower() and "?" not in q


def test_conditional_clause_is_cut_so_it_does_not_copy() -> None:
    long = "Если студент не сдал зачёт по физической культуре в течение весеннего семестра текущего года, его отчисляют."
    item = T.template_item("conditional", [long], 0)
    assert item is not None and verbatim_overlap(item["question"], long) < 0.8
