from __future__ import annotations

from pathlib import Path

from voproshalych_eval.config import Settings, describe_database_url


def test_database_label_never_shows_credentials() -> None:
    label = describe_database_url("postgresql://bot:s3cret@db.example.org:5433/voproshalych")
    assert label == "db.example.org:5433/voproshalych"
    assert "s3cret" not in label and "bot" not in label
    assert describe_database_url(None) == "embedded"


def test_settings_repr_hides_secrets(tmp_path: Path) -> None:
    s = Settings(home=tmp_path, database_url="postgresql://u:topsecret@h/db", secrets={"k": "sk-xyz"})
    assert "topsecret" not in repr(s) and "sk-xyz" not in repr(s)


def test_home_from_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("VOPROSHALYCH_EVAL_HOME", str(tmp_path / "inst1"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    s = Settings.from_env()
    assert s.home == (tmp_path / "inst1").resolve()
    assert s.pgdata == s.home / "pgdata"
    assert s.embedded
