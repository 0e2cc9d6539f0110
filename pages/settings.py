"""Settings: data source (no credentials), embedders, LLM providers with a connection test; how to configure."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.db import snapshots
from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS
from voproshalych_eval.embeddings.base import BUILTIN_DIMENSIONS
from voproshalych_eval.llm import prices as llm_prices
from voproshalych_eval.llm.client import LLMClient, RetryPolicy
from voproshalych_eval.llm.providers import configured_providers
from voproshalych_eval.ui import auth, state
from voproshalych_eval.ui.i18n import tr
from voproshalych_eval.ui.widgets import page_header


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Настройки", "Settings"),
        tr(
            "Источник данных, эмбеддеры и LLM-провайдеры. Секреты (пароли, ключи API) здесь никогда не показываются.",
            "Data source, embedders and LLM providers. Secrets (passwords, API keys) are never displayed here.",
        ),
        tr(
            "Настройки читаются из переменных окружения и `.streamlit/secrets.toml`. Ключи API хранятся только там; "
            "на этой странице видно лишь имя переменной и то, задана ли она. Подробности — `docs/LLM.md`.",
            "Settings come from environment variables and `.streamlit/secrets.toml`. API keys live only there; this page "
            "shows just the variable name and whether it is set. Details: `docs/LLM.md`.",
        ),
    )


def _render_source(s: Any) -> None:
    st.subheader(tr("Источник данных", "Data source"))
    if s.embedded:
        st.markdown(tr("Источник: демо-база (`voproshalych_demo`), читается только в транзакциях без права записи.",
                       "Source: the demo database (`voproshalych_demo`), read only through read-only transactions."))
    else:
        st.markdown(tr("Источник (только чтение): ", "Source (read only): ") + f"`{s.database_label}`")
    st.markdown(tr("Хранилище приложения: ", "The app's store: ")
                + (tr("встроенная PostgreSQL + pgvector (каталог данных приложения)",
                      "embedded PostgreSQL + pgvector (the app's data folder)") if s.embedded_store else f"`{s.store_label}`"))
    st.caption(tr("Логин и пароль базы данных не отображаются.", "Database user and password are not displayed."))


def _render_snapshot() -> None:
    with state.user_errors("Не удалось прочитать снимок базы знаний", "Could not read the knowledge-base snapshot"):
        snap = snapshots.current(state.engine())
        if snap is None:
            st.info(tr("Снимка базы знаний ещё нет.", "No knowledge-base snapshot yet."))
        else:
            st.markdown(
                tr("Текущий снимок: ", "Current snapshot: ")
                + f"**#{snap.id}** `{snap.short_hash}` · {snap.taken_at:%Y-%m-%d %H:%M} · "
                + tr(f"{snap.n_chunks} чанков, {snap.n_pages} страниц, {snap.n_questions} вопросов в логе",
                     f"{snap.n_chunks} chunks, {snap.n_pages} pages, {snap.n_questions} logged questions")
            )
        if auth.button("dataset", st, tr("Снять снимок сейчас", "Take a snapshot now"), key="settings_take_snapshot"):
            with auth.audited("dataset", "snapshot", {"op": "snapshot"}):
                taken = snapshots.take(state.engine())
            st.success(
                (tr("Источник не изменился: снимок ", "The source is unchanged: snapshot ") if taken.reused
                 else tr("Новый снимок ", "New snapshot ")) + f"#{taken.id} ({taken.short_hash})"
            )


def _render_embedders() -> None:
    st.subheader(tr("Эмбеддеры", "Embedders"))
    with state.user_errors("Не удалось прочитать сведения об эмбеддерах", "Could not read embedder information"):
        rows = [{tr("Имя", "Name"): k, tr("Описание", "Description"): v,
                 tr("Размерность", "Dimension"): BUILTIN_DIMENSIONS.get(k),
                 tr("Текущий", "Current"): "✓" if k == state.current_embedder_name() else ""}
                for k, v in BUILTIN_EMBEDDERS.items()]
        cur = state.current_embedder_name()
        if cur not in BUILTIN_EMBEDDERS:
            rows.append({tr("Имя", "Name"): cur, tr("Описание", "Description"): tr("внешняя модель", "external model"),
                         tr("Размерность", "Dimension"): None, tr("Текущий", "Current"): "✓"})
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        _stored_vectors_caption()
        st.caption(tr("Другие модели: `st:<каталог модели>` (sentence-transformers) или `openai:<модель>`; "
                      "переменная `VOPROSHALYCH_EVAL_EMBEDDER`.",
                      "Other models: `st:<model dir>` (sentence-transformers) or `openai:<model>`; variable "
                      "`VOPROSHALYCH_EVAL_EMBEDDER`."))


def _stored_vectors_caption() -> None:
    """Which model built the vectors in ``chunk.embedding`` (from the current snapshot), when known."""
    try:
        _snap = snapshots.current(state.engine())
        stored = {"model": _snap.stored_model, "dim": _snap.chunk_dim} if _snap and _snap.stored_model else None
    except Exception:  # noqa: BLE001
        stored = None
    if stored:
        st.caption(tr("Векторы в `chunk.embedding` построены моделью", "Vectors in `chunk.embedding` were built by")
                   + f" `{stored.get('model')}` ({stored.get('dim')}-d)")


def _render_providers(s: Any) -> None:
    st.subheader(tr("LLM-провайдеры", "LLM providers"))
    with state.user_errors("Не удалось прочитать настройки LLM", "Could not read the LLM settings"):
        providers = configured_providers(s)
        if not providers:
            st.info(tr(
                "LLM не настроен: судьи и генерация работают на офлайн-эвристиках (помечены «офлайн-эвристика»).",
                "No LLM configured: judges and generation run on offline heuristics (labelled \"offline heuristic\").",
            ))
            return
        desc = [p.describe() for p in providers]
        st.dataframe(pd.DataFrame([{
            tr("Имя", "Name"): d["name"], tr("Базовый URL", "Base URL"): d["base_url"] or "api.openai.com",
            tr("Переменная ключа", "Key variable"): d["api_key_env"] or "—",
            tr("Ключ задан", "Key set"): "✓" if d["api_key_set"] else "—",
            tr("Модели", "Models"): ", ".join(d["models"]),
        } for d in desc]), hide_index=True)
        _render_connection_test(s, providers)


def _render_connection_test(s: Any, providers: list) -> None:
    with st.form("llm_test", enter_to_submit=False):
        names = [p.name for p in providers]
        pname = st.selectbox(tr("Провайдер", "Provider"), names)
        models = next(p.models for p in providers if p.name == pname)
        model = st.selectbox(tr("Модель", "Model"), models)
        go = st.form_submit_button(tr("Проверить соединение", "Test connection"))
    if go:
        prov = next(p for p in providers if p.name == pname)
        client = LLMClient([prov], None, timeout=20, settings=s, retry=RetryPolicy(max_attempts=2, initial=1.0))
        with st.spinner(tr("Запрос к модели…", "Calling the model…")):
            res = client.test_connection(f"{prov.name}:{model}")
        if res["ok"]:
            st.success(tr("Соединение работает", "Connection works") + f": {res['latency_s']:.2f} s")
        else:
            st.error(tr("Ошибка соединения", "Connection failed") + f": {res['error']}")


def _render_prices(s: Any) -> None:
    st.subheader(tr("Цены моделей", "Model prices"))
    st.caption(tr(
        "USD за 1 млн входных / выходных токенов: по ним считается стоимость каждого запуска. Модель без цены — "
        "стоимость «неизвестно», а не 0. `[llm.prices]` в secrets.toml имеет приоритет над этой таблицей.",
        "USD per 1M input / output tokens: every run's cost is computed from them. A model without a price costs "
        "\"unknown\", never 0. `[llm.prices]` in secrets.toml takes precedence over this table.",
    ))
    with state.user_errors("Не удалось сохранить цены", "Could not save the prices"):
        table = llm_prices.stored_prices(state.engine())
        price_df = pd.DataFrame(
            [{"model": p.model, "input_per_1m": p.input_per_1m, "output_per_1m": p.output_per_1m, "source": p.source}
             for p in sorted(table.values(), key=lambda p: p.model)],
            columns=["model", "input_per_1m", "output_per_1m", "source"],
        )
        with st.form("llm_prices"):
            edited = st.data_editor(price_df, num_rows="dynamic", hide_index=True, disabled=["source"], key="prices_editor",
                                    column_config={
                                        "model": st.column_config.TextColumn(tr("Модель", "Model")),
                                        "input_per_1m": st.column_config.NumberColumn(
                                            tr("Вход, $ за 1 млн токенов", "Input, $ per 1M tokens"), min_value=0.0,
                                            format="%.4f"),
                                        "output_per_1m": st.column_config.NumberColumn(
                                            tr("Выход, $ за 1 млн токенов", "Output, $ per 1M tokens"), min_value=0.0,
                                            format="%.4f"),
                                        "source": st.column_config.TextColumn(tr("Откуда цена", "Price source"))})
            save = auth.submit("settings", st, tr("Сохранить цены", "Save prices"))
        if save:
            with auth.audited("settings", "llm prices", {"op": "save_prices"}):
                res = llm_prices.save_price_table(state.engine(), edited.to_dict(orient="records"))
            st.success(tr(f"Сохранено: изменено {res['changed']}, удалено {res['deleted']}",
                          f"Saved: {res['changed']} changed, {res['deleted']} deleted"))
        overrides = llm_prices.secrets_prices(s)
        if overrides:
            st.caption(tr("Из secrets.toml: ", "From secrets.toml: ") + ", ".join(sorted(overrides)))


def _render_how_to() -> None:
    st.subheader(tr("Как настроить", "How to configure"))
    st.code(
    """# .streamlit/secrets.toml
OPENROUTER_API_KEY = "sk-or-..."

[llm]
concurrency = 8

[[llm.providers]]
name = "openrouter"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
models = ["google/gemini-2.5-flash", "openai/gpt-4o-mini"]

# or, for one endpoint: OPENAI_BASE_URL / OPENAI_API_KEY / VOPROSHALYCH_EVAL_LLM_MODELS
""",
        language="toml",
    )
    st.caption(tr("Локальная модель (любой OpenAI-совместимый сервер, например llama.cpp) — см. `docs/LLM.md`.",
                  "A local model (any OpenAI-compatible server, e.g. llama.cpp) — see `docs/LLM.md`."))


def _render_page() -> None:
    s = state.settings()
    _render_source(s)
    _render_snapshot()
    _render_embedders()
    _render_providers(s)
    _render_prices(s)
    _render_how_to()


init_page_state()
_render_page()
