"""A plan's parameters declared once: :class:`Param` and what is derived from a table of them.

Each plan of the registry (``plans.PLANS``) carries its parameter table (``PlanSpec.params``, the tables are
in ``plan_parameters``). From one table come:

* the defaults and the validation — :func:`resolve` fills the defaults and coerces every given value with
  one rule per type, raising ``ValueError`` that names the plan and the parameter;
* the CLI flags of the plan's command (``commands.plan_flags``: the flag, its type, choices, help in English)
  and the run form of its page (``ui.param_form``: a widget per parameter with its bounds and choices);
* the words a person reads — the parameter's label (:func:`labels`, behind ``describe.param_label``) and the
  parameters shown in a run's one-line description (:func:`words_order`);
* the configuration identity — the parameters that make a configuration (:func:`config_names`: history
  lines and trends never join runs that differ in one of them) and those that only change how fast or how
  a run is labelled (:func:`speed_names`: a resume does not compare them).

Adding a parameter to a plan is one :class:`Param` line in its table (and the plan reading it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "ROLES", "Param", "resolve"]

#: value types: ``int``, ``float``, ``bool``, ``str``, ``choice`` (one of ``choices``), ``ints`` / ``strs`` (a
#: list; the CLI takes a comma-separated value or, with ``repeat``, a repeatable flag), ``quorum`` (a word of
#: ``choices`` or a positive count), ``json`` (a mapping or a list, JSON text accepted), ``any`` (as it is)
KINDS = ("int", "float", "bool", "str", "choice", "ints", "strs", "quorum", "json", "any")
#: ``config``: makes the run's configuration (compared on resume, named in history lines); ``result``:
#: changes the results but is not a configuration of its own (the dataset, a limit, the resamples); ``speed``:
#: only how fast or how labelled (workers, batch size) — a resume does not compare it
ROLES = ("config", "result", "speed")


@dataclass(frozen=True)
class Param:
    """One parameter of a plan: its type, default, bounds or choices, words, and where it appears.

    ``flag``: the CLI flag (default ``--<name with dashes>``; ``""``: no flag — set by the command's own code,
    or not settable from the CLI). ``widget``: ``None`` the widget of the type, a key of the page's custom
    renderers (an escape hatch such as ``"dataset"`` or ``"bot_profile"``), ``""`` not on the form.
    ``given``: ``False`` for an entry the plan records about itself (a derived depth, a stored request spec)
    rather than one a person sets: no flag, no widget, a label only. ``words``: shown in the run's one-line
    description (``describe.config_words``). ``repeat``: a list flag given once per value
    (``--judge-model A --judge-model B``) instead of comma-separated. ``group``: the CLI argument group,
    ``metavar`` the name of its value in the CLI help.
    ``advanced``: on the form, inside the "more settings" expander.
    """

    name: str
    kind: str
    default: Any = None
    ru: str = ""
    en: str = ""
    help_ru: str = ""
    help_en: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    role: str = "result"
    words: bool = False
    flag: str | None = None
    widget: str | None = None
    given: bool = True
    repeat: bool = False
    group: str | None = None
    advanced: bool = False
    metavar: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"parameter {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.role not in ROLES:
            raise ValueError(f"parameter {self.name}: role must be one of {ROLES}, got {self.role!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"parameter {self.name}: a choice needs its choices")

    # ---------------------------------------------------------------- words
    def label(self, lang: str = "ru") -> str:
        return (self.en if lang == "en" else self.ru) or self.name.replace("_", " ")

    def help(self, lang: str = "en") -> str:
        return self.help_en if lang == "en" else (self.help_ru or self.help_en)

    # ---------------------------------------------------------------- where it appears
    @property
    def cli_flag(self) -> str | None:
        """The CLI flag: the table's ``flag``, ``--no-<name>`` for a yes/no that defaults to yes, else
        ``--<name-with-dashes>``; ``None`` when the parameter has none."""
        if not self.given or self.flag == "":
            return None
        if self.flag:
            return self.flag
        return ("--no-" if self.kind == "bool" and self.default is True else "--") + self.name.replace("_", "-")

    @property
    def dest(self) -> str | None:
        """The attribute of the parsed arguments holding this parameter (``--no-calibrate`` -> ``no_calibrate``)."""
        flag = self.cli_flag
        return flag[2:].replace("-", "_") if flag else None

    @property
    def on_form(self) -> bool:
        return self.given and self.widget != ""

    # ---------------------------------------------------------------- validation
    def coerce(self, value: Any, plan: str = "") -> Any:
        """``value`` converted to the parameter's type and checked against its bounds or choices.

        ``None`` stays ``None`` (the default applies before). ``ValueError`` names the plan and the parameter.
        """
        if value is None:
            return None
        where = f"{plan}: parameter {self.name!r}" if plan else f"parameter {self.name!r}"
        try:
            out = _convert(self, value)
        except (TypeError, ValueError, json.JSONDecodeError) as exc:
            detail = f" ({exc})" if str(exc) else ""
            raise ValueError(f"{where} must be {_describe_kind(self)}, got {value!r}{detail}") from None
        for v in (out if isinstance(out, list) and self.kind in ("ints",) else [out]):
            if isinstance(v, int | float) and not isinstance(v, bool):
                if self.low is not None and v < self.low:
                    raise ValueError(f"{where} must be at least {self.low:g}, got {v!r}")
                if self.high is not None and v > self.high:
                    raise ValueError(f"{where} must be at most {self.high:g}, got {v!r}")
        return out


def _describe_kind(p: Param) -> str:
    if p.kind in ("choice", "quorum") and p.choices:
        return "one of " + ", ".join(map(str, p.choices)) + (" or a positive number" if p.kind == "quorum" else "")
    return {"int": "an integer", "float": "a number", "bool": "true or false", "str": "text",
            "ints": "a list of integers", "strs": "a list of texts", "json": "a JSON object"}.get(p.kind, p.kind)


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a yes/no is not a number")
    if isinstance(value, str):
        value = value.strip()
    f = float(value)
    if f != int(f):
        raise ValueError("not a whole number")
    return int(f)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise ValueError("not a yes/no")


def _items(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, Iterable) and not isinstance(value, Mapping | bytes):
        return list(value)
    raise ValueError("not a list")


def _convert(p: Param, value: Any) -> Any:
    kind = p.kind
    if kind == "int":
        return _int(value)
    if kind == "float":
        if isinstance(value, bool):
            raise ValueError("a yes/no is not a number")
        return float(value)
    if kind == "bool":
        return _bool(value)
    if kind == "str":
        return str(value)
    if kind == "choice":
        if value not in p.choices:
            raise ValueError("not one of the choices")
        return value
    if kind == "ints":
        return [_int(v) for v in _items(value)]
    if kind == "strs":
        return [str(v) for v in _items(value)]
    if kind == "quorum":
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        if isinstance(value, str) and value in p.choices:
            return value
        raise ValueError("not a quorum")
    if kind == "json":
        value = json.loads(value) if isinstance(value, str) else value
        if not isinstance(value, Mapping | list):
            raise ValueError("not a JSON object or list")
        return dict(value) if isinstance(value, Mapping) else list(value)
    return value


# ------------------------------------------------------------------------------------------ one table


def defaults(table: Sequence[Param]) -> dict[str, Any]:
    """``{name: default}`` of the parameters a person sets (a fresh copy: lists and dicts are not shared)."""
    return {p.name: _copy(p.default) for p in table if p.given}


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value)) if isinstance(value, list | dict) else value


def resolve(table: Sequence[Param], params: Mapping[str, Any], plan: str = "") -> dict[str, Any]:
    """The defaults overlaid with the given values that are not ``None``, each coerced by its parameter.

    Names the table does not declare pass through unchanged: a resume rebuilds a plan from the parameters the
    run stored, which also hold what the plan recorded about itself.
    """
    by_name = {p.name: p for p in table}
    out = defaults(table)
    for name, value in params.items():
        if value is None:
            continue
        param = by_name.get(name)
        out[name] = param.coerce(value, plan) if param is not None else value
    return out


def words_order(table: Sequence[Param]) -> tuple[str, ...]:
    return tuple(p.name for p in table if p.words)


def config_names(table: Sequence[Param]) -> tuple[str, ...]:
    return tuple(p.name for p in table if p.role == "config")


def speed_names(table: Sequence[Param]) -> tuple[str, ...]:
    return tuple(p.name for p in table if p.role == "speed")


# ------------------------------------------------------------------------------------------ every table


def union(tables: Iterable[Sequence[Param]], select: Any) -> tuple[str, ...]:
    """The names ``select(table)`` gives over several tables, in order, without repeats."""
    return tuple(dict.fromkeys(n for t in tables for n in select(t)))


def labels(tables: Iterable[Sequence[Param]]) -> dict[str, tuple[str, str]]:
    """``{name: (ru, en)}`` over several tables; one name must carry one label everywhere (``ValueError``)."""
    out: dict[str, tuple[str, str]] = {}
    for table in tables:
        for p in table:
            if not (p.ru or p.en):
                continue
            pair = (p.ru or p.en, p.en or p.ru)
            if out.setdefault(p.name, pair) != pair:
                raise ValueError(f"parameter {p.name!r} is labelled {out[p.name]} in one plan and {pair} in another")
    return out
