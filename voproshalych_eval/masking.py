"""Masking personal data in question texts: e-mail addresses, phone numbers, full names with patronymics.

Students' questions name people ("Здравствуйте, Иванов Иван Иванович, ...", "пишите на ivanov@utmn.ru",
"+7 (912) 345-67-89"). :func:`mask_personal_data` replaces each with a placeholder before a question text
leaves the app in an export or a report made for someone who should not read it (``team.masks_personal_data``:
viewers by default). It is the one masking function: every export and report that can mask calls it.

What is masked, and how:

* ``[email]`` — an RFC 5322-ish address ``local@domain.tld`` (Latin or Cyrillic domain);
* ``[phone]`` — a run of 10–15 digits written as a phone number (``+7 912 345-67-89``, ``8(912)3456789``,
  ``89123456789``, ``+44 20 7946 0958``): optional ``+``, digits in groups separated by spaces, dashes, dots or
  parentheses. Shorter numbers (years, room and group numbers) stay;
* ``[name]`` — a Russian full name with a patronymic: a first name followed by a patronymic
  (``Иван Петрович``, in any case: ``Ивану Петровичу``, ``Анны Сергеевны``), together with a surname right
  before or after it when it is one (``Иванов Иван Петрович``, ``Анна Сергеевна Смирнова``); and a surname with
  initials (``Иванов И. И.``, ``И.И. Иванов``). A patronymic is recognised by ``pymorphy3``'s ``Patr`` tag or,
  without its dictionaries, by the patronymic suffixes (-ович/-евич/-ич, -овна/-евна/-ична/-инична and their
  case endings); a surname by the ``Surn`` tag (or, without dictionaries, any capitalised word that is not the
  first of a sentence). A surname that is also a common noun (``Лебедь``) is kept; the name and patronymic next
  to it are masked.

Not masked: first names alone (``Анна``) and surnames alone (``Иванов``), which are too often ordinary words
or public names (a dean's surname in a question about a dean's office).
"""

from __future__ import annotations

import re
from functools import lru_cache

EMAIL = "[email]"
PHONE = "[phone]"
NAME = "[name]"

_EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}(?![\w-])")
# a phone: optional +, then digit groups joined by one separator (space, dash, dot, parentheses)
_PHONE_RE = re.compile(r"(?<![\w+])\+?\d(?:[\s.\-()]{0,2}\d){9,14}(?!\w)")
_WORD = r"[А-ЯЁ][а-яё]+(?:-[А-ЯЁ][а-яё]+)?"
_WORD_RE = re.compile(_WORD)
_PATR_SUFFIX = re.compile(r"(?:ович|евич|ьич|ич)(?:а|у|ем|е)?$|(?:овн|евн|ичн|иничн)(?:а|ы|е|у|ой|ою)$")
_INITIALS_RE = re.compile(
    rf"(?<![\w.])(?:{_WORD}\s+[А-ЯЁ]\.\s?[А-ЯЁ]\.|[А-ЯЁ]\.\s?[А-ЯЁ]\.\s?{_WORD})(?!\w)"
)


@lru_cache(maxsize=1)
def _morph():  # type: ignore[no-untyped-def]
    try:
        import pymorphy3  # heavy: defers pymorphy3 (CLI and app start)

        return pymorphy3.MorphAnalyzer(lang="ru")
    except (ImportError, ValueError, OSError):  # no dictionaries: the suffix rules decide
        return None


@lru_cache(maxsize=50_000)
def _tags(word: str) -> frozenset[str]:
    morph = _morph()
    if morph is None:
        return frozenset()
    tags: set[str] = set()
    for parse in morph.parse(word):
        tags |= {"Name", "Surn", "Patr"} & set(parse.tag.grammemes)
    return frozenset(tags)


def _is_patronymic(word: str) -> bool:
    if _morph() is not None:
        return "Patr" in _tags(word) or (bool(_PATR_SUFFIX.search(word)) and not _morph().word_is_known(word))
    return bool(_PATR_SUFFIX.search(word))


def _is_first_name(word: str) -> bool:
    return "Name" in _tags(word) if _morph() is not None else True


def _is_surname(word: str, text: str, start: int) -> bool:
    if _morph() is not None:
        return "Surn" in _tags(word) or not _morph().word_is_known(word)
    before = text[:start].rstrip()
    return bool(before) and before[-1] not in ".!?"  # not the first word of a sentence


def _name_spans(text: str) -> list[tuple[int, int]]:
    words = list(_WORD_RE.finditer(text))
    spans: list[tuple[int, int]] = []

    def adjacent(a: re.Match[str], b: re.Match[str]) -> bool:  # separated by spaces only
        return text[a.end():b.start()].strip() == "" and "\n" not in text[a.end():b.start()]

    for i, word in enumerate(words):
        if i == 0 or not _is_patronymic(word.group()):
            continue
        first = words[i - 1]
        if not adjacent(first, word) or not _is_first_name(first.group()) or _is_patronymic(first.group()):
            continue
        start, end = first.start(), word.end()
        if i >= 2 and adjacent(words[i - 2], first) and _is_surname(words[i - 2].group(), text, words[i - 2].start()):
            start = words[i - 2].start()
        elif i + 1 < len(words) and adjacent(word, words[i + 1]) and _is_surname(
                words[i + 1].group(), text, words[i + 1].start()):
            end = words[i + 1].end()
        spans.append((start, end))
    spans += [(m.start(), m.end()) for m in _INITIALS_RE.finditer(text)]
    return spans


def _replace_spans(text: str, spans: list[tuple[int, int]], placeholder: str) -> str:
    out, pos = [], 0
    for start, end in sorted(spans):
        if start < pos:  # overlapping: already masked
            continue
        out += [text[pos:start], placeholder]
        pos = end
    return "".join(out) + text[pos:]


def mask_personal_data(text: str) -> str:
    """``text`` with e-mail addresses, phone numbers and full names with patronymics replaced by
    ``[email]``, ``[phone]`` and ``[name]`` (see the module docstring for the rules).

    >>> mask_personal_data("Иванов Иван Иванович, ivanov@utmn.ru, +7 (912) 345-67-89")
    '[name], [email], [phone]'
    """
    if not text or not isinstance(text, str):
        return text
    text = _EMAIL_RE.sub(EMAIL, text)
    text = _PHONE_RE.sub(PHONE, text)
    return _replace_spans(text, _name_spans(text), NAME)


def mask_texts(values: list[str | None]) -> list[str | None]:
    """:func:`mask_personal_data` over a list (None and non-strings kept)."""
    return [mask_personal_data(v) if isinstance(v, str) else v for v in values]
