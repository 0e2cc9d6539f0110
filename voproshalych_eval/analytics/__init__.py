"""Real-user analytics of the question log: chunk utilization, topic coverage (gaps), domain analysis.

Real-user logs are an analytics source, not a gold benchmark (seed, section 7): nothing here computes
retrieval "accuracy" against the page the bot itself chose. Every analysis uses the whole filtered log
(questions without a stored embedding are embedded, cached) and reports the ``n`` it used.
"""

from voproshalych_eval.analytics.pipeline import ANALYSES, RealUsersResult, build_plan, filters_from
from voproshalych_eval.analytics.question_log import (
    PRODUCTION_SOURCE,
    ImportReport,
    LogFilters,
    QuestionLogImportError,
    embed_log,
    import_file,
    list_sources,
    read_log,
)

__all__ = [
    "ANALYSES",
    "PRODUCTION_SOURCE",
    "ImportReport",
    "LogFilters",
    "QuestionLogImportError",
    "RealUsersResult",
    "build_plan",
    "embed_log",
    "import_file",
    "list_sources",
    "filters_from",
    "read_log",
]
