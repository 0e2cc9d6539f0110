"""The parameter table of every plan (one :class:`~voproshalych_eval.parameters.Param` per line).

``plans.PLANS`` hangs each table on its :class:`~voproshalych_eval.plans.PlanSpec`; the plan module reads
its defaults from it (``DEFAULTS = spec(key).defaults()``) and resolves the given values with it, the CLI
builds the command's flags and the page its form from it. A parameter used by several plans is declared
once below (``DATASET``, ``LIMIT``…) and adjusted per plan with :func:`dataclasses.replace`, so one name
keeps one label and one role everywhere (a test checks it).

Roles: ``config`` makes the run's configuration, ``result`` changes results, ``speed`` only how fast.
"""

from __future__ import annotations

from dataclasses import replace

from voproshalych_eval.parameters import Param

#: the judge aggregators and quorum words (``judges.base.AGGREGATORS`` / ``QUORUMS``; a test keeps them equal)
AGGREGATORS = ("average", "median", "majority_voting", "min", "max", "consensus")
QUORUMS = ("all", "majority", "any")
#: bot API presets (``bot_api.spec.PRESETS``) and the judge-context modes (``bot_api.profiles.CONTEXT_MODES``)
API_PRESETS = ("custom", "search-rag", "voproshalych")
CONTEXT_MODES = ("page", "nearest", "none")
LANGS = ("ru", "en")

# ------------------------------------------------------------------------------------------ shared parameters

DATASET = Param("dataset", "any", "demo_golden", "набор данных", "dataset",
                "имя или id сохранённого набора, или файл", "golden dataset name, id or file", widget="dataset")
LIMIT = Param("limit", "int", None, "первые N", "first N", "только первые N элементов", "only the first N items",
              low=1, advanced=True)
CONCURRENCY = Param("concurrency", "int", 4, "параллельно", "concurrency", "элементов в работе одновременно",
                    "items in flight at once", low=1, high=64, role="speed", advanced=True)
OFFLINE = Param("offline", "bool", None, "офлайн", "offline",
                "офлайн-заменители, даже если LLM настроена", "use the offline substitutes even if an LLM is configured",
                widget="offline")
EMBEDDER = Param("embedder", "str", None, "эмбеддер", "embedder",
                 "эмбеддер (по умолчанию — модель сохранённых векторов)",
                 "embedder name (default: the model of the stored vectors)", widget="embedder")
SNAPSHOT = Param("snapshot", "int", None, "снимок базы знаний", "knowledge-base snapshot",
                 "id снимка базы знаний (по умолчанию — текущее содержимое источника)",
                 "knowledge-base snapshot id to read (default: the source's present content)", low=1, widget="")
REPEATS = Param("repeats", "int", 1, "повторов", "repeats", "повторов на элемент", "repeats per item", low=1,
                high=20, role="config", words=True)
GENERATOR_MODEL = Param("generator_model", "str", None, "модель генератора", "generator model",
                        "модель генератора (по умолчанию — первая настроенная)",
                        "generator model (default: the first configured)", flag="--model", widget="generator_model")
SYSTEM_PROMPT = Param("system_prompt", "str", None, "системный промпт", "system prompt",
                      "системный промпт генератора (по умолчанию — промпт бота)",
                      "generator system prompt (default: the production bot's)", role="config", widget="")
TEMPERATURE = Param("temperature", "float", None, "температура", "temperature", "температура генерации",
                    "generation temperature", low=0.0, high=2.0, advanced=True)
JUDGE_MODELS = Param("judge_models", "strs", None, "модели-судьи", "judge models",
                     "модель-судья (можно несколько)", "judge model (repeatable)", flag="--judge-model", repeat=True,
                     widget="judge_models")
JUDGE_AGGREGATE = Param("judge_aggregate", "choice", "average", "агрегатор судей", "judge aggregator",
                        "как объединить оценки нескольких моделей-судей", "how the judge models' scores are combined",
                        choices=AGGREGATORS, role="config", words=True, advanced=True)
JUDGE_QUORUM = Param("judge_quorum", "quorum", None, "кворум моделей судьи", "judge model quorum",
                     "сколько моделей-судей должны ответить: all, majority, any или число",
                     "judge models that must answer: all, majority, any or a number (default: all for "
                     "min/max/consensus, a strict majority otherwise)", choices=QUORUMS, role="config", advanced=True)
JUDGE_VOTE_QUORUM = Param("judge_vote_quorum", "quorum", None, "кворум голосов судьи", "judge vote quorum",
                          "сколько голосов одной модели-судьи должны ответить",
                          "strictness votes of one judge model that must answer (default: a strict majority)",
                          choices=QUORUMS, role="config", advanced=True)
JUDGE = (JUDGE_MODELS, JUDGE_AGGREGATE, JUDGE_QUORUM, JUDGE_VOTE_QUORUM)
STEM = Param("stem", "bool", False, "стемминг", "stemming", "русский стемминг для ROUGE", "Russian stemming for ROUGE",
             role="config")
THRESHOLD = Param("threshold", "float", 0.5, "порог PASS", "PASS threshold", "PASS, когда оценка судьи не ниже порога",
                  "PASS when the judge score >= this", low=0.0, role="config")
TOP_K = Param("top_k", "int", 1, "top-k", "top-k", "чанков извлекается", "chunks retrieved", low=1, high=100,
              role="config", words=True)
METRIC = Param("metric", "str", "faithfulness", "метрика", "metric", "метрика", "metric", role="config", words=True)
SOURCE = Param("source", "str", None, "источник", "source", "источник", "source", role="config", words=True)
PAUSE_MINUTES = Param("pause_minutes", "float", 30.0, "пауза сессии, мин", "session pause, min",
                      "более долгая пауза начинает новую сессию", "a longer pause starts a new session", low=0.0)
LANG = Param("lang", "choice", "ru", "язык", "language", "язык", "language", choices=LANGS)
FILTERS = Param("filters", "any", {}, "фильтры", "filters", flag="", widget="")
N_RESAMPLES = Param("n_resamples", "int", 2000, "бутстреп-выборок", "bootstrap resamples",
                    "выборок для 95% бутстреп-интервалов", "bootstrap resamples of the 95% intervals", low=10,
                    high=100_000, advanced=True)

# ------------------------------------------------------------------------------------------ the plans

TIER0 = (
    replace(SOURCE, default="chunks", kind="choice", choices=("chunks", "questions", "both", "golden"), widget=None,
            help_ru="что измеряется: чанки, вопросы журнала, оба или золотой набор",
            help_en="what is measured: chunks, logged questions, both or a golden set"),
    replace(EMBEDDER, help_en="embedder name (default: the stored vectors / the model that filled chunk.embedding)"),
    replace(DATASET, default=None, help_en="golden dataset name or id (--source golden; default: newest)"),
    replace(METRIC, kind="choice", default="cosine", choices=("cosine", "euclidean"), help_ru="расстояние",
            help_en="distance"),
    Param("k", "int", 5, "k", "k", "соседей на точку (без самой точки)", "neighbours per point (self excluded)",
          low=1, high=200, role="config", words=True),
    FILTERS,
    Param("n_clusters", "int", 8, "кластеров", "clusters", "кластеров KMeans", "KMeans clusters", low=2, high=100,
          advanced=True),
    Param("top_outliers", "int", 20, "выбросов в списке", "outliers listed", "выбросов в списке", "outliers to list",
          low=0, high=500, flag="--top", advanced=True),
    SNAPSHOT,
)

TIER1 = (
    DATASET,
    Param("retriever", "choice", "vector", "поиск", "retriever", "способ поиска", "retrieval method",
          choices=("vector", "fts", "hybrid"), role="config", words=True),
    EMBEDDER,
    Param("k", "int", 10, "k", "k", "глубина ответа: top-k чанков для генератора; чанки всегда извлекаются не "
          "меньше самой большой отсечки", "answer depth: the top-k the generator gets; chunks are always retrieved "
          "to at least the largest cut-off", low=1, high=1000, role="config", words=True),
    Param("cutoffs", "ints", [1, 3, 5, 10], "отсечки", "cut-offs", "K метрик @K через запятую",
          "the K of the @K metrics, comma-separated", low=1, high=1000, role="config"),
    Param("use_index", "bool", False, "HNSW-индекс", "HNSW index",
          "искать по HNSW-индексу (строится в служебной схеме) и сообщить его полноту",
          "search an HNSW index (built in the eval schema) and report its recall", role="config", words=True,
          flag="--hnsw"),
    replace(REPEATS, help_ru="повторов для согласованности поиска (HNSW / внешний API)",
            help_en="repeats for the retrieval consistency metric (HNSW / external API)", high=5),
    Param("ef_search", "int", None, "HNSW ef_search", "HNSW ef_search", "HNSW ef_search (по умолчанию 40)",
          "HNSW ef_search (default 40)", low=1, high=10_000, role="config", advanced=True),
    Param("hnsw_m", "int", 16, "HNSW m", "HNSW m", "связей на вершину HNSW-индекса",
          "links per node of the HNSW index", low=2, high=100, role="config", advanced=True),
    Param("hnsw_ef_construction", "int", 64, "HNSW ef_construction", "HNSW ef_construction",
          "ширина поиска при построении HNSW-индекса", "search width while building the HNSW index", low=4,
          high=1000, role="config", advanced=True),
    Param("rrf_k", "int", 60, "RRF k", "RRF k", "константа слияния RRF (гибридный поиск)",
          "the RRF fusion constant (hybrid search)", low=1, high=1000, role="config", advanced=True),
    N_RESAMPLES,
    Param("url_chunk_cap", "int", 200, "предел чанков для страниц", "chunk cap for pages",
          "URL-уровень @K — по первым K разным страницам: вопросы с меньшим числом страниц ищутся глубже, до "
          "стольких чанков", "URL-level @K is over the first K distinct pages: questions whose chunks hold fewer "
          "pages are retrieved deeper, up to this many chunks", low=1, high=10_000, advanced=True),
    replace(SNAPSHOT, help_en="knowledge-base snapshot id to search (default: the source's present content)"),
    Param("batch_size", "int", 500, "вопросов в пакете", "questions per batch",
          "вопросов, которые эмбеддятся и ищутся вместе", "questions embedded and retrieved together", low=1,
          high=10_000, role="speed", advanced=True),
    # recorded by the plan about itself
    Param("retrieved_depth", "int", ru="глубина поиска", en="retrieval depth", given=False),
    Param("distance", "str", ru="расстояние", en="distance", given=False),
    Param("fts_config", "str", ru="полнотекстовый поиск", en="full-text search", given=False),
    Param("hnsw", "json", ru="параметры HNSW", en="HNSW parameters", given=False),
    Param("fusion_depth", "int", ru="глубина слияния", en="fusion depth", given=False),
)

TIER2 = (
    DATASET, LIMIT,
    replace(REPEATS, help_ru="ответов на элемент (от 2 — самосогласованность)",
            help_en="answers per item (>= 2 adds self-consistency)"),
    TEMPERATURE, GENERATOR_MODEL, SYSTEM_PROMPT, *JUDGE,
    Param("max_context_chars", "int", None, "обрезка контекста, симв.", "context cut, chars",
          "обрезать контекст (по умолчанию — полный, без обрезки)", "cut the context (default: full, never cut)",
          low=1, role="config", advanced=True),
    STEM, replace(EMBEDDER, help_en="embedder for semantic self-consistency"), CONCURRENCY, OFFLINE,
    # Tier 2 needs a reference context: unanswerable items have none, so they are left out (and counted)
    Param("skip_unanswerable", "bool", True, "без вопросов без ответа", "skip unanswerable", flag="", widget=""),
    replace(SNAPSHOT, help_en="knowledge-base snapshot id the reference contexts are read from (default: the "
            "source's present content)"),
)

_API = "bot API (API mode)"
TIER3 = (
    DATASET, LIMIT,
    Param("mode", "choice", "internal", "режим", "mode", choices=("internal", "api"), role="config", words=True,
          flag="", widget="bot_profile"),
    # API mode: a full spec (``api``, as stored by a run), or a profile, or a URL with a preset + overrides
    Param("api", "json", None, "запрос к API бота", "bot API request", role="config", flag="", widget=""),
    Param("api_profile", "str", None, "профиль API", "API profile", "сохранённый профиль бота",
          "a saved bot profile (settings of one bot)", role="config", group=_API, widget="bot_profile", metavar="NAME"),
    Param("api_url", "str", None, "URL бота", "bot URL", "базовый URL бота или шаблон с {question}",
          "the bot's base URL (the preset adds its path) or a full URL template with {question}", flag="--api",
          group=_API, widget="bot_profile", metavar="URL"),
    Param("api_preset", "choice", None, "пресет API", "API preset", "пресет API бота",
          "voproshalych: POST /qa/ of the production QA service; search-rag: GET /llm/search-rag?questions=; "
          "custom: the URL as given (default: search-rag, or custom when the URL holds {question} or a body/POST "
          "is given)", choices=API_PRESETS, group=_API, widget="bot_profile"),
    Param("api_method", "choice", None, "HTTP-метод", "HTTP method", choices=("GET", "POST"), group=_API,
          widget="bot_profile"),
    Param("api_body", "json", None, "тело запроса", "request body", "шаблон JSON-тела",
          "JSON body template, e.g. '{\"question\": \"{question}\", \"dialog_context\": \"{dialog_context}\"}'",
          group=_API, widget="bot_profile", metavar="JSON"),
    Param("api_headers", "any", None, "заголовки запроса", "request headers", "дополнительный заголовок",
          "extra header (repeatable); values may use ${VARIABLE}, read from the environment or secrets.toml at "
          "call time, e.g. 'Authorization: Bearer ${BOT_TOKEN}'", flag="--api-header", repeat=True, group=_API,
          widget="bot_profile", metavar="'NAME: VALUE'"),
    Param("answer_path", "str", None, "путь к ответу", "answer path", "JSON-путь ответа",
          "JSON path of the answer in the reply (default: answer)", group=_API, widget="bot_profile"),
    Param("url_path", "str", None, "путь к URL", "URL path", "JSON-путь URL страницы",
          "JSON path of the page URL (voproshalych: confluence_url)", group=_API, widget="bot_profile"),
    Param("chunks_path", "str", None, "путь к чанкам", "chunks path", "JSON-путь текстов чанков",
          "JSON path of the chunk texts (e.g. chunks.*.text)", group=_API, widget="bot_profile"),
    Param("http_timeout", "float", None, "тайм-аут HTTP, с", "HTTP timeout, s", "секунд на запрос",
          "seconds per request (default 60)", low=0.1, group=_API, widget="bot_profile", metavar="SECONDS"),
    Param("api_rps", "float", None, "запросов в секунду", "requests per second", "не больше стольких запросов в секунду",
          "at most this many requests per second over all workers (voproshalych preset: 1)", low=0.001, group=_API,
          widget="bot_profile"),
    Param("api_retries", "int", None, "повторов запроса", "request retries", "повторов тайм-аутов и ошибок",
          "retries of timeouts, connection errors, 5xx and 429 (default 3)", low=0, high=20, group=_API,
          widget="bot_profile"),
    Param("api_backoff", "float", None, "пауза между повторами, с", "retry backoff, s", "первая пауза перед повтором",
          "first pause before a retry, doubled each time (default 1; a 429's Retry-After wins)", low=0.0,
          group=_API, widget="bot_profile", metavar="SECONDS"),
    Param("api_outcomes", "any", None, "исходы API", "API outcomes", "правило ответ -> исход",
          "reply -> outcome rule STATUS[:REGEX]=OUTCOME, checked before the preset's (repeatable), e.g. "
          "'404:^Answer banned=banned'; outcomes: answered, not_found, banned, error", flag="--api-outcome",
          repeat=True, group=_API, widget="bot_profile", metavar="STATUS[:REGEX]=OUTCOME"),
    Param("context_from", "choice", "page", "контекст из", "context from", "откуда контекст для судьи",
          "when the API returns only a page URL: judge on all chunks of that page (page), on the nearest ones to "
          "the question (nearest), or on none (default: the bot profile's, else page)", choices=CONTEXT_MODES,
          role="config", group=_API, widget="bot_profile"),
    Param("context_k", "int", 3, "чанков контекста", "context chunks", "чанков для режима nearest",
          "chunks kept by --context-from nearest (default: the bot profile's, else 3)", low=1, high=100,
          role="config", group=_API, widget="bot_profile"),
    SNAPSHOT,
    replace(TOP_K, help_en="chunks retrieved (production: 1)", group="internal pipeline"),
    EMBEDDER,
    replace(GENERATOR_MODEL, group="internal pipeline"),
    replace(SYSTEM_PROMPT, group="internal pipeline"),
    REPEATS, *JUDGE,
    replace(THRESHOLD, help_en="PASS when the end-to-end judge score >= this"),
    Param("min_pass_rate", "float", None, "ворота: мин. доля PASS", "gate: min pass rate",
          "ворота: код 1, если доля PASS ниже",
          "gate: exit with status 1 when the gate pass rate is below this (answered items need a PASS; a decline "
          "passes only on an unanswerable question; errors never pass)", low=0.0, high=1.0),
    replace(STEM, flag=""), CONCURRENCY, OFFLINE,
)

_JUDGE_DATASET = replace(DATASET, default="demo_judge", help_en="dataset name, id or file")
JUDGE_STABILITY = (
    _JUDGE_DATASET,
    Param("dataset_kind", "choice", "judge", "вид набора", "dataset kind", "вид набора", "dataset kind",
          choices=("judge", "golden", "samples"), flag="--kind"),
    LIMIT,
    replace(METRIC, kind="choice", choices=("faithfulness", "answer_relevance", "answer_correctness", "e2e_score",
                                            "rag_judge")),
    replace(REPEATS, default=5),
    replace(JUDGE_MODELS, help_en="judge model (repeatable: inter-judge kappa)"),
    replace(THRESHOLD, default=None, help_en="pass/fail threshold (default: scale midpoint)"),
    CONCURRENCY, OFFLINE,
)

JUDGE_PIPELINE = (
    replace(_JUDGE_DATASET, help_en="labelled judge dataset name, id or file"), LIMIT,
    replace(JUDGE_MODELS, help_en="judge model (repeatable)"), JUDGE_QUORUM, JUDGE_VOTE_QUORUM,
    Param("prompt", "str", None, "промпт показа", "show/no-show prompt", "свой промпт показа/непоказа",
          "custom show/no-show prompt (default: production)", widget=""),
    Param("calibrate", "bool", True, "калибровка", "calibration", "калибровать эталонного судью",
          "the benchmark-judge calibration"),
    replace(THRESHOLD, help_en="benchmark judge PASS threshold"),
    CONCURRENCY, OFFLINE,
)

JUDGE_METRICS = (
    replace(DATASET, default=None, flag="", widget="judge_samples"),  # the CLI's --input file, stored
    replace(METRIC, widget="judge_metric", help_ru="метрика судьи (faithfulness, aspect_critic, …)",
            help_en="the judge metric (faithfulness, aspect_critic, ...)"),
    Param("models", "strs", None, "модели", "models", "модели-судьи через запятую",
          "comma-separated judge models (default: first configured); for semantic_similarity: the embedding models",
          widget="judge_models"),
    Param("aggregate", "choice", "average", "агрегатор", "aggregator", "как объединить оценки моделей",
          "multi-model aggregator", choices=AGGREGATORS, role="config", words=True),
    Param("quorum", "quorum", None, "кворум моделей", "model quorum", "сколько моделей должны ответить",
          "models that must answer: all, majority, any or a number (default: all for min/max/consensus, a strict "
          "majority otherwise)", choices=QUORUMS, role="config"),
    Param("vote_quorum", "quorum", None, "кворум голосов", "vote quorum", "сколько голосов одной модели нужно",
          "strictness votes of one model that must answer (default: a strict majority)", choices=QUORUMS,
          role="config"),
    Param("config", "json", {}, "настройки метрики", "metric settings", role="config", flag="", widget="judge_metric"),
    Param("use_cache", "bool", True, "кэш ответов", "response cache", "кэш ответов LLM",
          "cached LLM replies (off: fresh calls, for stability runs)", flag="--no-cache"),
    replace(OFFLINE, help_en="use the offline heuristic judge"),
    replace(LANG, default=None, help_en="prompt/explanation language"),
    replace(LIMIT, help_en="only the first N samples"),
    replace(CONCURRENCY, default=None, help_en="samples in flight at once (default: the LLM's)"),
    # an aligned version (judges/versions.py); None: the metric's adopted default, if any
    Param("judge_version", "any", None, "версия судьи", "judge version", "выровненная версия метрики",
          "an aligned version of the metric (judge-align; default: its adopted one; METRIC@builtin for the built-in "
          "prompt)", widget=""),
)

UX = (
    replace(SOURCE, kind="choice", default="dialogs", choices=("dialogs", "log"), widget=None,
            help_ru="набор диалогов или реальные сессии журнала",
            help_en="a dialog dataset, or real sessions from the question log"),
    replace(DATASET, default="demo_dialogs", help_en="dialog dataset (with --source dialogs)"),
    LIMIT,
    Param("cache_distance", "float", 0.6, "порог кэша", "cache threshold", "порог кэша, косинусное расстояние",
          "cache threshold, cosine distance (production 0.6)", low=0.0, high=2.0),
    Param("followup_distance", "float", 0.8, "порог уточнения", "follow-up threshold",
          "журнал: связанные соседние вопросы", "log: related consecutive questions", low=0.0, high=2.0),
    replace(PAUSE_MINUTES, default=30, help_en="log: a longer pause starts a new session"),
    EMBEDDER,
    replace(GENERATOR_MODEL, help_en="generator for the paraphrase answers (dialogs)"),
    SYSTEM_PROMPT, CONCURRENCY, OFFLINE,
    replace(SNAPSHOT, help_en="snapshot id of the knowledge base and log (default: the source's present content)"),
)

REAL_USERS = (
    # None: every analysis the inputs allow (no chunk utilization without a knowledge base); the CLI's --analysis
    Param("analyses", "strs", None, "анализы", "analyses", flag=""),
    replace(SOURCE, help_en="log source: question_answer (default) or an imported name"),
    replace(FILTERS, widget=""),
    replace(TOP_K, default=5, help_en="chunks retrieved per question"),
    Param("k_topics", "int", None, "тем", "topics", "число тем (по умолчанию — по силуэту)",
          "number of topics (default: chosen by silhouette)", low=2, high=200),
    Param("k_range", "ints", [4, 30], "диапазон числа тем", "range of topic counts", low=2, flag="", advanced=True),
    replace(EMBEDDER, help_en="embedder (default: the model that filled chunk.embedding)"),
    replace(PAUSE_MINUTES, help_en="session split at pauses longer than this"),
    Param("near_threshold", "float", 0.92, "порог почти-дубликатов", "near-duplicate threshold",
          "косинусное сходство почти-дубликатов", "cosine similarity of near-duplicate questions", low=0.0, high=1.0,
          advanced=True),
    Param("slang", "any", None, "словарь сленга", "slang dictionary", flag="", widget=""),
    Param("answer_rules", "any", None, "правила ответов бота", "bot answer rules", flag="", widget=""),
    # {normalised answer text: class}; None: the labels stored in eval.answer_labels
    Param("answer_labels", "any", None, "разметка ответов бота", "bot answer labels", role="config", flag="",
          widget=""),
    # ClassifierSettings as a dict; None: the defaults
    Param("answer_classifier", "any", None, "классификатор ответов бота", "bot answer classifier", role="config",
          flag="", widget=""),
    # pair an imported log with the knowledge base's present snapshot (they belong together)
    Param("link_kb", "bool", False, "журнал связан с базой знаний", "log linked to the knowledge base",
          "импортированный журнал относится к загруженной базе знаний",
          "an imported log belongs to the knowledge base loaded now: pair it with the KB's present snapshot "
          "(chunk utilization and distances to the KB)"),
    Param("k_stability_runs", "int", 0, "выборок для устойчивости числа тем",
          "samples for the topic-count stability", "выбрать k по силуэту ещё на стольких выборках",
          "also choose k by silhouette on this many other random samples (stability of k)", low=0, high=50,
          flag="--k-stability", advanced=True),
    replace(LANG, help_en="language of the report and of the topic labels"),
    replace(SNAPSHOT, help_en="snapshot id of the knowledge base and log (default: the source's present content; "
            "an imported log reads no knowledge base unless linked with --snapshot or --link-kb)"),
)

DATASET_GENERATION = (
    Param("size", "int", 50, "элементов", "items", "сколько элементов нужно", "number of items wanted", low=1,
          high=100_000),
    Param("types", "any", None, "типы вопросов", "question types",
          "типы вопросов через запятую, с весами (factual:2,unanswerable:1)",
          "question types, comma-separated, optional weights (factual:2,unanswerable:1); default: all six "
          "(factual, paraphrase, multi_chunk, conditional, unanswerable, follow_up)"),
    Param("strategy", "choice", "uniform", "распределение по страницам", "questions per page",
          "вопросов на страницу: поровну или пропорционально чанкам",
          "questions per page: uniform (every page) or proportional to its chunks", choices=("uniform", "proportional")),
    Param("pages", "strs", None, "страницы", "pages", "только эти страницы (URL через запятую)",
          "only these pages (comma-separated URLs)"),
    Param("source_types", "strs", None, "типы источников", "source types", "только чанки этих типов источников",
          "only chunks of these source types (comma-separated)"),
    Param("oversample", "float", 0.2, "запас", "oversample", "запасные слоты как доля размера",
          "spare slots as a share of --size", low=0.0, high=5.0),
    Param("seed", "int", 0, "зерно случайности", "random state", "зерно случайного выбора", "random state of the sampling"),
    Param("name", "str", None, "имя набора", "dataset name", "имя сохраняемого набора",
          "stored dataset name (default synthetic_<UTC time>); an existing name gets a new version"),
    replace(LANG, help_en="prompt language"),
    replace(OFFLINE, help_en="labelled template generator, no LLM (not a substitute for an LLM set)"),
    Param("model", "str", None, "модель генератора", "generator model", "модель генератора",
          "generator model (default: the first configured)", widget="generator_model"),
    replace(TEMPERATURE, default=0.7),
    replace(JUDGE_MODELS, flag="--judge-models", repeat=False,
            help_en="models of the support check (comma-separated; default: the generator)"),
    EMBEDDER,
    replace(CONCURRENCY, default=8, help_en="items in flight"),
    Param("thresholds", "json", None, "пороги проверок", "check thresholds", flag="", widget=""),
    Param("compare_existing", "bool", True, "сверка с существующими", "compare with existing sets",
          "отбрасывать почти-дубликаты существующих золотых наборов",
          "drop near-duplicates of existing golden sets"),
    Param("answerability_k", "int", 1, "k проверки ответимости", "answerability k",
          "чанков в проверке ответимости", "chunks of the answerability check", low=1, high=50, advanced=True),
    Param("max_tokens", "int", 600, "макс. токенов", "max tokens", "токенов на ответ генератора",
          "tokens per generator reply", low=16, high=32_000, advanced=True),
)

WHATIF = (
    Param("sandbox", "any", None, "песочница", "sandbox", flag="", widget=""),
    Param("datasets", "any", [], "наборы данных", "datasets", flag="", widget=""),
    Param("gaps", "any", [], "пробелы", "gaps", flag="", widget=""),
    Param("regression", "any", None, "регрессия", "regression", flag="", widget=""),
    replace(EMBEDDER, flag="", widget=""),
    replace(N_RESAMPLES, flag="", widget=""),
    Param("batch_size", "int", 200, "вопросов в пакете", "questions per batch", low=1, role="speed", flag="",
          widget=""),
    # the Tier 3 part (tiers/whatif.py): set by the what-if command's own flags
    Param("tier3", "bool", None, "часть Tier 3", "Tier 3 part", "прогнать вопросы пробела через внутренний Tier 3",
          "run the gap questions through the internal Tier 3", role="config", flag="", widget=""),
    Param("tier3_sample", "int", None, "выборка Tier 3", "Tier 3 sample", "вопросов пробела в части Tier 3",
          "gap questions in the Tier 3 part", low=1, role="config", flag="", widget=""),
    replace(TOP_K, flag="", widget=""),
    replace(GENERATOR_MODEL, flag="", widget=""),
    replace(THRESHOLD, flag="", widget=""),
    replace(OFFLINE, flag="", widget=""),
    Param("seed", "int", 0, "зерно случайности", "random state", "зерно случайного выбора", "random state of the sampling", flag="", widget=""),
    *(replace(j, flag="", widget="") for j in JUDGE),
)

JUDGE_AGREEMENT = (
    replace(METRIC, default=None, flag="", widget=""),
    replace(LIMIT, flag="", widget=""),
    replace(OFFLINE, flag="", widget=""),
    Param("version", "str", None, "версия судьи", "judge version", "выровненная версия судьи (по умолчанию — принятая)",
          "aligned judge version (default: the adopted one)", role="config", flag="", widget=""),
    replace(LANG, flag="", widget=""),
    Param("annotators", "strs", None, "разметчики", "annotators", "только метки этих людей", "only these people's labels",
          role="config", flag="", widget=""),
    replace(N_RESAMPLES, default=500, flag="", widget=""),
    replace(CONCURRENCY, default=None, flag="", widget=""),
    Param("models", "strs", None, "модели", "models", flag="", widget=""),
)

#: entries every run may carry beside its plan's table: set by the engine or the caller, never by a plan
RUN = (
    Param("max_failure_share", "float", None, "допустимая доля сбоев", "allowed failed share", role="speed",
          given=False),
    Param("label", "str", None, "метка", "label", role="speed", given=False),
)

#: plan key -> its table (``plans.PLANS`` reads it)
TABLES: dict[str, tuple[Param, ...]] = {
    "tier0": TIER0, "tier1": TIER1, "tier2": TIER2, "tier3": TIER3, "judge": JUDGE_STABILITY,
    "judge_pipeline": JUDGE_PIPELINE, "judge_metrics": JUDGE_METRICS, "ux": UX, "real_users": REAL_USERS,
    "dataset_generation": DATASET_GENERATION, "whatif": WHATIF, "judge_agreement": JUDGE_AGREEMENT,
}
