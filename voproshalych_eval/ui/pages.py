"""The page registry: file, section and bilingual title of every page.

``app.py`` builds ``st.navigation`` from this list, keeping only files that exist, so a page is added by
creating its file and (once) listing it here.
"""

from __future__ import annotations

from dataclasses import dataclass

from voproshalych_eval.config import PROJECT_ROOT


@dataclass(frozen=True)
class PageSpec:
    file: str
    section: tuple[str, str]
    title: tuple[str, str]
    icon: str


OVERVIEW = ("Обзор", "Overview")
QUALITY = ("Качество", "Quality")
USERS = ("Пользователи", "Users")
DATA = ("Данные", "Data")
RUNS = ("Запуски", "Runs")

PAGES: list[PageSpec] = [
    PageSpec("pages/overview.py", OVERVIEW, ("Обзор", "Overview"), ":material/dashboard:"),
    PageSpec("pages/tier0_embeddings.py", QUALITY, ("Пространство эмбеддингов", "Embedding space"), ":material/scatter_plot:"),
    PageSpec("pages/tier1_retrieval.py", QUALITY, ("Поиск", "Retrieval"), ":material/search:"),
    PageSpec("pages/tier2_generation.py", QUALITY, ("Генерация", "Generation"), ":material/edit_note:"),
    PageSpec("pages/tier3_end_to_end.py", QUALITY, ("Сквозная оценка", "End to end"), ":material/route:"),
    PageSpec("pages/judges.py", QUALITY, ("Судьи", "Judges"), ":material/gavel:"),
    PageSpec("pages/judge_metrics.py", QUALITY, ("Метрики судей", "Judge metrics"), ":material/rule:"),
    PageSpec("pages/ux.py", QUALITY, ("UX", "UX"), ":material/forum:"),
    PageSpec("pages/real_users.py", USERS, ("Реальные пользователи", "Real users"), ":material/groups:"),
    PageSpec("pages/datasets.py", DATA, ("Наборы данных", "Datasets"), ":material/dataset:"),
    PageSpec("pages/dataset_review.py", DATA, ("Разметка наборов", "Dataset review"), ":material/fact_check:"),
    PageSpec("pages/realq.py", DATA, ("Реальные вопросы", "Real questions"), ":material/label:"),
    PageSpec("pages/runs.py", RUNS, ("Запуски", "Runs"), ":material/history:"),
    PageSpec("pages/baselines.py", RUNS, ("Базовые уровни", "Baselines"), ":material/flag:"),
    PageSpec("pages/settings.py", RUNS, ("Настройки", "Settings"), ":material/settings:"),
]


def existing_pages() -> list[PageSpec]:
    return [p for p in PAGES if (PROJECT_ROOT / p.file).is_file()]
