"""Bilingual text for messages the core produces (progress lines, notes) and the UI shows.

The core never knows the UI language. A progress message is written once in both languages —
``say(text("Поиск top-10 для 136 вопросов…", "Retrieving top-10 for 136 questions…"))`` — and travels as
a :class:`Text`: a ``str`` whose value is the English text (so the CLI, logs and any code expecting a plain
string keep working) that also carries the Russian one. The app renders it with :func:`render` in the
current language; a plain ``str`` is shown as it is.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Text", "render", "text"]


class Text(str):
    """A string in English that also knows its Russian text (:attr:`ru`)."""

    ru: str

    def __new__(cls, ru: str, en: str) -> Text:
        obj = super().__new__(cls, en)
        obj.ru = ru
        return obj

    @property
    def en(self) -> str:
        return str.__str__(self)

    def in_lang(self, lang: str) -> str:
        return self.ru if lang == "ru" else self.en

    def __reduce__(self) -> tuple[Any, ...]:  # pickling / deepcopy keep both texts
        return (Text, (self.ru, self.en))

    def __deepcopy__(self, memo: dict[int, Any]) -> Text:
        return self

    def __copy__(self) -> Text:
        return self

    def __add__(self, other: object) -> Text | str:  # type: ignore[override]
        if isinstance(other, Text):
            return Text(self.ru + other.ru, self.en + other.en)
        return str.__add__(self, other)  # type: ignore[operator]


def text(ru: str, en: str) -> Text:
    """A message in both languages (the value is the English one)."""
    return Text(ru, en)


def render(value: object, lang: str) -> str:
    """``value`` in ``lang`` when it is a :class:`Text`, else ``str(value)``; ``None`` gives ``""``."""
    if value is None:
        return ""
    if isinstance(value, Text):
        return value.in_lang(lang)
    return str(value)
