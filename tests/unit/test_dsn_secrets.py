"""Database URLs in both forms (``postgresql://…`` and libpq ``host=… password=…``) are shown without
credentials: the one rendering (``endpoints.public_dsn``) behind ``status``, every page's sidebar and Settings,
and the redaction of free text (log lines, errors)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from voproshalych_eval import config
from voproshalych_eval.config import Settings, describe_database_url
from voproshalych_eval.endpoints import public_dsn
from voproshalych_eval.redaction import configured_secrets, redact

SECRET = "s3cr3t-Pa55word"
KV = f"host=db.internal port=5433 user=reader password={SECRET} dbname=bot sslmode=require"
KV_QUOTED = f"host=db.internal password='{SECRET} with space' dbname=bot"
URL = f"postgresql://reader:{SECRET}@db.internal:5433/bot?sslmode=require"


@pytest.mark.parametrize("dsn", [KV, KV_QUOTED, URL, f"postgresql://db.internal/bot?password={SECRET}"])
def test_public_dsn_has_host_and_database_but_no_credentials(dsn: str) -> None:
    shown = public_dsn(dsn)
    assert SECRET not in shown and "reader" not in shown and "password" not in shown
    assert shown.startswith("db.internal") and shown.endswith("/bot")
    assert describe_database_url(dsn) == shown


def test_settings_labels_hide_a_key_value_password(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = Settings(home=tmp_path, database_url=KV, store_url=KV)
    for label in (s.database_label, s.source_label, s.store_label):
        assert SECRET not in label and label == "db.internal:5433/bot"


@pytest.mark.parametrize("text", [
    f"connection failed: {KV}",
    f"could not connect ({KV_QUOTED})",
    f"dsn='host=x password={SECRET}'",
])
def test_redact_masks_key_value_passwords_in_free_text(text: str) -> None:
    out = redact(text, values=[])
    assert SECRET not in out and "password=***" in out


def test_configured_key_value_dsn_password_is_a_known_secret() -> None:
    found = configured_secrets({"DATABASE_URL": KV, "VOPROSHALYCH_EVAL_STORE_URL": KV_QUOTED}, secrets={})
    assert SECRET in found and f"{SECRET} with space" in found


def test_sidebar_shows_the_key_value_source_without_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", KV)
    config.get_settings.cache_clear()
    try:
        def app() -> None:
            from voproshalych_eval.ui.sidebar import render_sidebar

            render_sidebar()

        at = AppTest.from_function(app, default_timeout=60)
        at.run()
        shown = " ".join(m.value for m in at.sidebar.markdown)
        assert "db.internal:5433/bot" in shown
        assert SECRET not in shown and "password" not in shown
    finally:
        monkeypatch.delenv("DATABASE_URL")
        config.get_settings.cache_clear()


def test_status_source_info_hides_a_key_value_password(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.commands.core import _source_info

    info = _source_info(Settings(home=tmp_path, database_url=KV))
    assert SECRET not in repr(info)
    assert info["host"] == "db.internal" and info["database"] == "db.internal:5433/bot"
