"""Scripted show/no-show judges for agreement and alignment tests (served by ``ScriptedOpenAI.responder``).

Both read the judged item out of the production prompt (the last "Вопрос пользователя:" / "Ответ бота:"
blocks) and know the people's labels of the judge set:

* :class:`LengthBiasedJudge` says "Yes" whenever the answer is long (``len(answer) >= long_at``), and the
  people's verdict otherwise — unless the prompt carries an expert example of a *long* answer the experts
  refused (an in-context correction: then it stops trusting length);
* :class:`NoisyJudge` gives the people's verdict except on a fixed fifth of the items (chosen by a hash,
  independent of length and of anything in the prompt), where it gives the opposite.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

_Q = re.compile(r"Вопрос пользователя:\n(.*?)\n\n", re.DOTALL)
_A = re.compile(r"Ответ бота:\n(.*?)\n\n", re.DOTALL)
_EXAMPLE = re.compile(r"Ответ бота: (.*?)\nРешение эксперта: (Yes|No)", re.DOTALL)


def judge_set_labels(path: Path) -> dict[tuple[str, str], int]:
    return {(r["question"], r["answer"]): int(r["label"]) for r in json.loads(path.read_text(encoding="utf-8"))}


def _text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])


def judged_item(body: dict[str, Any]) -> tuple[str, str] | None:
    text = _text(body)
    qs, ans = _Q.findall(text), _A.findall(text)
    return (qs[-1], ans[-1]) if qs and ans else None


def examples_in(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(answer, decision) of every expert example in the prompt."""
    return _EXAMPLE.findall(_text(body))


class LengthBiasedJudge:
    def __init__(self, labels: dict[tuple[str, str], int], long_at: int = 120) -> None:
        self.labels, self.long_at = labels, long_at

    def __call__(self, body: dict[str, Any]) -> str | None:
        item = judged_item(body)
        if item is None or item not in self.labels:
            return None
        corrected = any(len(a) >= self.long_at and d == "No" for a, d in examples_in(body))
        if len(item[1]) >= self.long_at and not corrected:
            return "Yes"
        return "Yes" if self.labels[item] else "No: ответ не опирается на фрагмент"


class NoisyJudge:
    def __init__(self, labels: dict[tuple[str, str], int], flip_every: int = 5) -> None:
        self.labels, self.flip_every = labels, flip_every

    def __call__(self, body: dict[str, Any]) -> str | None:
        item = judged_item(body)
        if item is None or item not in self.labels:
            return None
        flip = int(hashlib.sha256("|".join(item).encode("utf-8")).hexdigest(), 16) % self.flip_every == 0
        show = bool(self.labels[item]) != flip
        return "Yes" if show else "No: ответ не отвечает на вопрос"
