"""Aligned versions of a judge metric: the metric's own prompt with instructions refined from disagreements
with people, few-shot examples chosen from labelled items, and a calibrated threshold where the score is
turned into a verdict.

A version is data (:class:`JudgeVersion`), named ``<metric>@aligned-<hash of its content>``; a ``Judge``
built with ``versions={metric: version}`` renders the metric's prompt as usual and puts the version's block
(instructions, then examples) in front of it, and names the version in :meth:`Judge.prompts` — so the
version is frozen in the configuration of every run that uses it and ``resume`` refuses a different one.
Stored with its lineage (labels used, folds, optimizer, model, before/after) by
:mod:`voproshalych_eval.db.labels`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.db import labels as store

__all__ = ["JudgeVersion", "load_version", "resolve_versions"]


@dataclass(frozen=True)
class JudgeVersion:
    """``instructions``: refined rules (one per line); ``examples``: ``{question, answer, contexts, value, note}``
    labelled items shown to the judge; ``threshold``: the score at or above which the verdict is "pass" (None:
    the metric's own rule)."""

    metric: str
    instructions: tuple[str, ...] = ()
    examples: tuple[Mapping[str, Any], ...] = ()
    threshold: float | None = None
    base: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def version(self) -> str:
        body = json.dumps({"metric": self.metric, "instructions": list(self.instructions),
                           "examples": [dict(e) for e in self.examples], "threshold": self.threshold,
                           "base": self.base}, ensure_ascii=False, sort_keys=True)
        return f"{self.metric}@aligned-{hashlib.sha256(body.encode('utf-8')).hexdigest()[:10]}"

    @property
    def example_keys(self) -> list[str]:
        return [str(e.get("item_key")) for e in self.examples if e.get("item_key")]

    def spec(self) -> dict[str, Any]:
        d = asdict(self)
        d["instructions"], d["examples"] = list(self.instructions), [dict(e) for e in self.examples]
        d["meta"] = dict(self.meta)
        return d

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> JudgeVersion:
        return cls(spec["metric"], tuple(spec.get("instructions") or ()), tuple(spec.get("examples") or ()),
                   spec.get("threshold"), spec.get("base"), dict(spec.get("meta") or {}))

    def block(self, lang: str = "ru") -> str:
        """The text put in front of the metric's prompt (empty for a version without instructions/examples)."""
        ru = lang != "en"
        parts: list[str] = []
        if self.instructions:
            head = "Указания, уточнённые по разметке экспертов:" if ru else "Guidance refined from the experts' labels:"
            parts.append(head + "\n" + "\n".join(f"- {x}" for x in self.instructions))
        if self.examples:
            head = "Примеры решений экспертов:" if ru else "Examples of the experts' decisions:"
            lines = [head]
            for i, e in enumerate(self.examples, 1):
                lines.append(f"\n{'Пример' if ru else 'Example'} {i}.")
                lines.append(f"{'Вопрос' if ru else 'Question'}: {e['question']}")
                ctx = [c for c in (e.get("contexts") or []) if c]
                if ctx:
                    lines.append(f"{'Фрагмент' if ru else 'Fragment'}: {' '.join(ctx)}")
                lines.append(f"{'Ответ бота' if ru else 'Bot answer'}: {e.get('answer') or ''}")
                lines.append(f"{'Решение эксперта' if ru else 'Expert decision'}: {self._decision(e, ru)}")
            parts.append("\n".join(lines))
        return "\n\n".join(parts) + ("\n\n---\n\n" if parts else "")

    def _decision(self, e: Mapping[str, Any], ru: bool) -> str:
        note = (e.get("note") or "").strip()
        if self.metric == "show_no_show":
            if float(e["value"]) >= 0.5:
                return "Yes"
            return "No: " + (note or ("ответ нельзя показывать" if ru else "the answer must not be shown"))
        v = float(e["value"])
        shown = str(int(v)) if v.is_integer() else f"{v:g}"
        return shown + (f" ({note})" if note else "")

    def apply(self, content: str, lang: str = "ru") -> str:
        """The judge's rendered prompt with this version's block in front."""
        return self.block(lang) + content


def load_version(engine: Engine, version: str) -> JudgeVersion:
    """A stored version by name; ``ValueError`` naming the known ones when absent."""
    row = store.get_version(engine, version)
    if row is None:
        known = ", ".join(v["version"] for v in store.list_versions(engine)) or "none"
        raise ValueError(f"unknown judge version {version!r}; stored: {known}")
    return JudgeVersion.from_spec(row["spec"])


def resolve_versions(engine: Engine, names: Sequence[str] | None, *, defaults_for: Sequence[str] = ()
                     ) -> dict[str, JudgeVersion]:
    """``{metric: version}`` from version names (``builtin`` = the metric's own prompt); metrics of
    ``defaults_for`` not named get their adopted default version, when one exists."""
    out: dict[str, JudgeVersion] = {}
    builtin: set[str] = set()
    for name in names or ():
        if name.endswith("@builtin"):
            builtin.add(name.split("@", 1)[0])
            continue
        v = load_version(engine, name)
        out[v.metric] = v
    for metric in defaults_for:
        if metric in out or metric in builtin:
            continue
        row = store.default_version(engine, metric)
        if row is not None:
            out[metric] = JudgeVersion.from_spec(row["spec"])
    return out


def stored_versions(engine: Engine, metric: str | None = None) -> list[dict[str, Any]]:
    """Every stored aligned version (of ``metric``) with its lineage, oldest first."""
    return store.list_versions(engine, metric)
