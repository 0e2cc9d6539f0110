"""Gap drafts: the invented-fact check, the offline outline, the Confluence export."""

from __future__ import annotations

from voproshalych_eval.generation.gap_drafts import (
    OFFLINE_LABEL,
    check_draft,
    template_outline,
    to_confluence,
)

KB = ["Пересдача проводится по графику кафедры. Заявление подаётся в деканат до 10 февраля.",
      "Общежитие № 3 находится на улице Студенческой, 5."]
QS = ["когда пересдача по матану?", "где взять направление на пересдачу"]


def test_check_flags_an_invented_date_and_address() -> None:
    draft = ("# Пересдачи\n\nПересдача пройдёт 17 ноября 2031 года в корпусе на улице Тестовой, 148.\n"
             "Заявление подаётся в деканат до 10 февраля.\n- Сроки: [ДАТА]\n")
    flags = check_draft(draft, kb_texts=KB, questions=QS)
    got = {(f["kind"], f["text"]) for f in flags}
    assert ("number", "17 ноября") in got and ("number", "2031 года") in got
    assert ("number", "148") in got and ("name", "Тестовой") in got
    assert not any(f["text"].startswith("10") for f in flags)  # "10 февраля" is in the knowledge base
    assert all(f["line"] == 3 for f in flags)


def test_check_passes_known_facts_and_placeholders() -> None:
    draft = "# [НАЗВАНИЕ]\n\nОбщежитие № 3 на улице Студенческой, 5. Адрес: [АДРЕС 12]. Пересдача в [ДАТА 2030].\n"
    assert check_draft(draft, kb_texts=KB, questions=QS) == []


def test_template_outline_is_labelled_and_grouped() -> None:
    body = template_outline("пересдачи", QS + ["когда пересдача по матану"])
    assert OFFLINE_LABEL in body and "(×2)" in body and "[ДАТА]" in body
    assert check_draft(body, kb_texts=KB, questions=QS) == []  # the template invents nothing


def test_confluence_export_is_xhtml_without_live_html() -> None:
    xhtml = to_confluence("# Заголовок\n\n- пункт <script>alert(1)</script>\n\nтекст  \nстрока")
    assert "<h1>Заголовок</h1>" in xhtml and "<li>" in xhtml and "<br />" in xhtml
    assert "<script>" not in xhtml and "&lt;script&gt;" in xhtml
