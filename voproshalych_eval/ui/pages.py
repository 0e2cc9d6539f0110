"""The page registry: file, section and bilingual title of every page, in navigation order.

Plan pages (each tier, real users, judge metrics, tools) come from the plan registry
(:data:`voproshalych_eval.plans.PLANS`); :data:`OTHER_PAGES` lists the pages that show no plan of their
own (Overview, Runs, Baselines, Settings, …). ``app.py`` builds ``st.navigation`` from :func:`existing_pages`.
"""

from __future__ import annotations

from dataclasses import dataclass

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.plans import PLANS


@dataclass(frozen=True)
class PageSpec:
    file: str
    section: tuple[str, str]
    title: tuple[str, str]
    icon: str


#: navigation sections, in order: key -> (ru, en)
SECTIONS: dict[str, tuple[str, str]] = {
    "overview": ("Обзор", "Overview"),
    "quality": ("Качество", "Quality"),
    "users": ("Пользователи", "Users"),
    "data": ("Данные", "Data"),
    "runs": ("Запуски", "Runs"),
}

#: pages that are not the page of a plan: (section key, file, title, icon)
OTHER_PAGES: list[tuple[str, str, tuple[str, str], str]] = [
    ("overview", "pages/overview.py", ("Обзор", "Overview"), ":material/dashboard:"),
    ("data", "pages/dataset_review.py", ("Разметка наборов", "Dataset review"), ":material/fact_check:"),
    ("data", "pages/realq.py", ("Реальные вопросы", "Real questions"), ":material/label:"),
    ("runs", "pages/runs.py", ("Запуски", "Runs"), ":material/history:"),
    ("runs", "pages/baselines.py", ("Базовые уровни", "Baselines"), ":material/flag:"),
    ("runs", "pages/settings.py", ("Настройки", "Settings"), ":material/settings:"),
    ("runs", "pages/schedules.py", ("Расписания", "Schedules"), ":material/schedule:"),
    ("runs", "pages/alerts.py", ("Оповещения", "Alerts"), ":material/notifications:"),
    ("quality", "pages/judge_agreement.py", ("Согласие судей с людьми", "Judge agreement"), ":material/handshake:"),
    ("data", "pages/annotation_queue.py", ("Очередь разметки", "Annotation queue"), ":material/keyboard:"),
    ("runs", "pages/audit.py", ("Журнал действий", "Audit"), ":material/policy:"),
]


def _build() -> list[PageSpec]:
    entries: list[tuple[str, str, tuple[str, str], str]] = []
    seen: set[str] = set()
    for spec in PLANS:
        if spec.page and spec.page not in seen:
            seen.add(spec.page)
            entries.append((spec.section, spec.page, spec.page_title or spec.title, spec.icon))
    entries += [e for e in OTHER_PAGES if e[1] not in seen]
    order = list(SECTIONS)
    entries.sort(key=lambda e: order.index(e[0]))  # stable: registry order within a section
    return [PageSpec(file, SECTIONS[section], title, icon) for section, file, title, icon in entries]


PAGES: list[PageSpec] = _build()


def existing_pages() -> list[PageSpec]:
    return [p for p in PAGES if (PROJECT_ROOT / p.file).is_file()]
