"""A draft to fill a gap: an article *outline* in Russian, checked for invented facts, versioned on the gap.

:func:`draft_outline`: with an LLM configured, the prompt ``gap_outline`` turns the gap's questions (grouped
by their content words, with counts) into an outline — the questions the article must answer, section
headings, and the facts the team must supply as visible placeholders (``[ДАТА]``, ``[АДРЕС]`` …). Offline,
:func:`template_outline` builds the same structure from the questions, labelled as an offline template.

:func:`check_draft` flags every number (with the word after it: "17 ноября") and every proper name (a
capitalised word that does not start a sentence, line or list item) of a draft that occurs neither in the
knowledge base nor in the gap's questions — the draft must never invent dates, addresses, amounts or
names. Placeholders in square brackets, counts written ``×N`` and list numbers are not checked.

Exports: Markdown as written, and Confluence storage format (XHTML) through ``markdown-it-py`` with raw
HTML disabled (:func:`to_confluence`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from voproshalych_eval.analytics import gaps, text_ru
from voproshalych_eval.db.production import read_chunks
from voproshalych_eval.llm.client import default_client
from voproshalych_eval.llm.prompts import render

OFFLINE_LABEL = "офлайн-шаблон (без LLM)"
_PLACEHOLDER = re.compile(r"\[[^\]\n]{1,80}\]")
_NUMBER = re.compile(r"(?<![\w])(\d+(?:[.,:/\-]\d+)*)(?:\s+([А-Яа-яЁёA-Za-z]+))?")
_WORD = re.compile(r"(?<![\w-])[А-ЯЁA-Z][А-Яа-яЁёA-Za-z]*[а-яёa-z][А-Яа-яЁёA-Za-z]*(?:-[А-Яа-яЁёA-Za-z]+)*")
_SENTENCE_START = re.compile(r"(^|[.!?:]\s+|^\s*(?:[#>]+|[-*+]|\d+[.)])\s+|[«\"(]\s*)$")


def group_questions(questions: Sequence[str], *, limit: int = 25) -> list[tuple[str, int]]:
    """Distinct questions by their content words (lemmas, sorted), most asked first: ``(example, count)``."""
    key_of: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for q in questions:
        key = " ".join(sorted(set(text_ru.terms(q)))) or q.strip().lower()
        key_of.setdefault(key, q.strip())
        counts[key] += 1
    return [(key_of[k], n) for k, n in counts.most_common(limit)]


def _listing(groups: Sequence[tuple[str, int]]) -> str:
    return "\n".join(f"- {q} (×{n})" for q, n in groups)


def template_outline(name: str, questions: Sequence[str]) -> str:
    """The offline outline: title and sections with placeholders, the questions grouped with counts."""
    groups = group_questions(questions)
    return "\n".join([
        f"# [НАЗВАНИЕ СТАТЬИ] — {name}",
        "",
        f"> Черновик: {OFFLINE_LABEL}. Заполните заполнители в квадратных скобках фактами из документов университета.",
        "",
        f"## Вопросы, на которые статья должна ответить (×{len(questions)})",
        _listing(groups),
        "",
        "## Кратко",
        "[ОДНО-ДВА ПРЕДЛОЖЕНИЯ: ЧТО ЭТО И КОМУ НУЖНО]",
        "",
        "## Порядок действий",
        "1. [ШАГ 1]",
        "2. [ШАГ 2]",
        "",
        "## Сроки и место",
        "- Сроки: [ДАТА]",
        "- Где: [АДРЕС, КАБИНЕТ]",
        "",
        "## Что должна предоставить команда",
        "- [ОТВЕТСТВЕННОЕ ПОДРАЗДЕЛЕНИЕ И КОНТАКТЫ]",
        "- [ДОКУМЕНТЫ И ССЫЛКИ]",
        "- [СУММЫ И СРОКИ, ЕСЛИ ЕСТЬ]",
    ]) + "\n"


def llm_outline(client: Any, model: str, name: str, questions: Sequence[str], *, max_tokens: int = 900) -> str:
    """The outline written by the LLM (prompt ``gap_outline``)."""
    prompt = render("gap_outline", lang="ru", topic=name, questions=_listing(group_questions(questions)))
    resp = client.complete([{"role": "user", "content": prompt}], model=model, temperature=0.0, max_tokens=max_tokens,
                           purpose="gap_outline")
    text = str(resp.text or "").strip()
    if not text:
        raise ValueError(f"the LLM ({model}) returned an empty outline")
    return text + "\n"


def _corpus_terms(texts: Iterable[str]) -> tuple[str, set[str]]:
    low = " ".join(" ".join(str(t).lower().split()) for t in texts)
    stems = {text_ru.stem(w) for w in re.findall(r"[а-яёa-z]+", low)}
    return low, stems


def check_draft(draft: str, *, kb_texts: Iterable[str], questions: Iterable[str]) -> list[dict[str, Any]]:
    """Numbers and proper names of ``draft`` found neither in the knowledge base nor in the questions:
    ``{"kind": "number"|"name", "text", "line"}`` each (placeholders in ``[...]`` are skipped)."""
    low, stems = _corpus_terms([*kb_texts, *questions])
    flags: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for lineno, line in enumerate(draft.splitlines(), start=1):
        clean = _PLACEHOLDER.sub(lambda m: " " * len(m.group(0)), line)
        for m in _NUMBER.finditer(clean):
            num, word = m.group(1), m.group(2)
            before = clean[: m.start()]
            if before.endswith("×") or (not before.strip() and re.match(r"\d+[.)]\s", clean[m.start():])):
                continue  # a count of questions (×3) or a list number, not a fact
            phrase = f"{num} {word.lower()}" if word else num
            found = (phrase in low) if word else bool(re.search(rf"(?<![\w]){re.escape(num)}(?![\w])", low))
            if word and not found:  # "17 ноября" vs "17 ноябре": the number with the word's stem
                found = bool(re.search(rf"(?<![\w]){re.escape(num)}\s+{re.escape(text_ru.stem(word.lower()))}", low))
            if not found and ("number", phrase) not in seen:
                seen.add(("number", phrase))
                flags.append({"kind": "number", "text": phrase, "line": lineno})
        for m in _WORD.finditer(clean):
            if _SENTENCE_START.search(clean[: m.start()]):
                continue
            w = m.group(0)
            if text_ru.stem(w.lower()) in stems or ("name", w) in seen:
                continue
            seen.add(("name", w))
            flags.append({"kind": "name", "text": w, "line": lineno})
    return flags


def to_confluence(markdown: str) -> str:
    """Confluence storage format (XHTML) of a Markdown draft: CommonMark rendered by ``markdown-it-py`` with raw
    HTML disabled (``<`` in the text is escaped) and XHTML void tags."""
    from markdown_it import MarkdownIt  # heavy: defers markdown_it

    return MarkdownIt("commonmark", {"html": False, "xhtmlOut": True}).render(markdown)


def draft_outline(engine: Any, gap_id: int, *, offline: bool | None = None, save: bool = True) -> dict[str, Any]:
    """Write (and keep, ``save``) a new outline version for a gap; returns ``version``, ``source`` (``llm`` or
    ``template``), ``model``, ``body`` and ``checks`` (the flags of :func:`check_draft`)."""
    gap = gaps.get_gap(engine, gap_id)
    qs = [q["question"] for q in gaps.gap_questions(engine, gap_id)]
    client = None if offline else default_client(engine=engine)
    model = client.models[0] if client is not None and client.models else None
    if model:
        body, source = llm_outline(client, model, gap.name, qs), "llm"
    else:
        body, source = template_outline(gap.name, qs), "template"
    kb = [v["text"] for v in kb_chunks(engine)]
    flags = check_draft(body, kb_texts=kb, questions=qs)
    checks = {"flags": flags, "n_flags": len(flags)}
    version = gaps.save_draft(engine, gap_id, body, source=source, model=model, checks=checks) if save else None
    return {"gap_id": gap.id, "version": version, "source": source, "model": model,
            "label": OFFLINE_LABEL if source == "template" else f"LLM: {model}", "body": body, "checks": checks}


def kb_chunks(engine: Any) -> list[dict[str, Any]]:
    """Every chunk text of the current snapshot (what a draft's facts are checked against)."""
    df = read_chunks(engine)
    return [{"id": int(r.id), "url": r.url, "text": r.text} for r in df.itertuples(index=False)]


def save_edit(engine: Any, gap_id: int, body: str, *, source: str = "edit") -> dict[str, Any]:
    """Keep an edited or uploaded draft as a new version (checked like a generated one)."""
    qs = [q["question"] for q in gaps.gap_questions(engine, gap_id)]
    flags = check_draft(body, kb_texts=[c["text"] for c in kb_chunks(engine)], questions=qs)
    checks = {"flags": flags, "n_flags": len(flags)}
    version = gaps.save_draft(engine, gap_id, body, source=source, checks=checks)
    return {"gap_id": gap_id, "version": version, "source": source, "body": body, "checks": checks}
