"""Team mode: roles from a claim or an allow-list, the permission table, the mask setting, and what
``serve --team`` hands to Streamlit (a private [auth] file, no secret printed or passed on)."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest

from voproshalych_eval import team
from voproshalych_eval.config import Settings
from voproshalych_eval.team import Identity, PermissionDenied, TeamSettings

TEAM_VARS = ("VOPROSHALYCH_EVAL_TEAM", "VOPROSHALYCH_EVAL_TEAM_ROLES", "VOPROSHALYCH_EVAL_TEAM_ROLE_CLAIM",
             "VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE", "VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in TEAM_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _settings(tmp_path: Path, secrets: dict | None = None) -> Settings:
    return Settings(home=tmp_path, secrets=secrets or {})


def test_roles_allow_what_the_issue_says() -> None:
    assert team.allows("viewer", "view") and not team.allows("viewer", "run")
    for action in ("run", "label", "dataset"):
        assert team.allows("analyst", action) and not team.allows("viewer", action)
    for action in ("settings", "baseline", "bot", "schedule", "alert"):
        assert team.allows("admin", action) and not team.allows("analyst", action)
    assert not team.allows(None, "view")
    assert not team.allows("analyst", "something new")  # an unknown action needs admin


def test_check_raises_a_sentence_naming_role_and_action() -> None:
    viewer = Identity(name="vera@example.org", role="viewer")
    with pytest.raises(PermissionDenied, match=r"vera@example.org \(viewer\) may not do runs: it needs the analyst role"):
        team.check(viewer, "run")
    assert team.check(Identity(name="a", role="admin"), "run").role == "admin"


def test_role_from_a_claim_a_group_map_an_allow_list_and_the_default() -> None:
    ts = TeamSettings(enabled=True, allow_list={"boss@example.org": "admin"}, groups={"eval-analysts": "analyst"})
    assert team.resolve_role({"email": "x@example.org", "roles": ["analyst"]}, ts) == "analyst"
    assert team.resolve_role({"email": "x@example.org", "roles": "viewer analyst"}, ts) == "analyst"  # highest wins
    assert team.resolve_role({"email": "x@example.org", "groups": ["staff", "eval-analysts"]}, ts) == "analyst"
    assert team.resolve_role({"email": "Boss@Example.org", "roles": ["viewer"]}, ts) == "admin"  # the allow-list wins
    assert team.resolve_role({"email": "x@example.org", "roles": ["Admin"]}, ts) == "admin"
    assert team.resolve_role({"email": "x@example.org"}, ts) == "viewer"  # the default role
    assert team.resolve_role({"email": "x@example.org"}, TeamSettings(default_role=None)) is None
    ident = team.identity_from_claims({"email": "anna@example.org", "name": "Анна", "roles": ["analyst"]}, ts)
    assert (ident.name, ident.role, ident.label, ident.signed_in) == ("anna@example.org", "analyst", "Анна", True)


def test_team_settings_from_the_environment(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert team.team_settings(_settings(tmp_path)) == TeamSettings()  # single-user by default
    clean_env.setenv("VOPROSHALYCH_EVAL_TEAM", "1")
    clean_env.setenv("VOPROSHALYCH_EVAL_TEAM_ROLES", "a@x.org=admin, b@x.org=analyst")
    clean_env.setenv("VOPROSHALYCH_EVAL_TEAM_ROLE_CLAIM", "groups")
    clean_env.setenv("VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE", "none")
    clean_env.setenv("VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA", "on")
    ts = team.team_settings(_settings(tmp_path))
    assert ts.enabled and ts.role_claims == ("groups",) and ts.default_role is None and ts.mask == "on"
    assert ts.allow_list == {"a@x.org": "admin", "b@x.org": "analyst"}


def test_team_settings_from_secrets_toml(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secrets = {"voproshalych_eval": {"team": {"enabled": True, "roles": {"A@x.org": "analyst"},
                                              "groups": {"eval-admins": "admin"}}}}
    ts = team.team_settings(_settings(tmp_path, secrets))
    assert ts.enabled and ts.allow_list == {"a@x.org": "analyst"} and ts.groups == {"eval-admins": "admin"}


@pytest.mark.parametrize(("var", "value", "message"), [
    ("VOPROSHALYCH_EVAL_TEAM_ROLES", "a@x.org=owner", "unknown role 'owner'"),
    ("VOPROSHALYCH_EVAL_TEAM_ROLES", "a@x.org", "expected NAME=ROLE"),
    ("VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA", "sometimes", "must be one of auto, on, off"),
])
def test_bad_team_settings_are_named(clean_env: pytest.MonkeyPatch, tmp_path: Path, var: str, value: str,
                                     message: str) -> None:
    clean_env.setenv(var, value)
    with pytest.raises(ValueError, match=message):
        team.team_settings(_settings(tmp_path))


def test_masking_is_on_by_default_for_viewers_only() -> None:
    viewer, analyst = Identity("v", "viewer"), Identity("a", "analyst")
    assert team.masks_personal_data(viewer, TeamSettings()) and not team.masks_personal_data(analyst, TeamSettings())
    assert team.masks_personal_data(analyst, TeamSettings(mask="on"))
    assert not team.masks_personal_data(viewer, TeamSettings(mask="off"))


def test_single_user_identity_is_a_local_admin() -> None:
    ident = team.local_identity()
    assert ident.role == "admin" and ident.name and not ident.signed_in


# ------------------------------------------------------------------------------------------ serve --team

OIDC = {"VOPROSHALYCH_EVAL_OIDC_METADATA_URL": "https://id.example.org/.well-known/openid-configuration",
        "VOPROSHALYCH_EVAL_OIDC_CLIENT_ID": "eval-app",
        "VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET": "client-secret-value-123456"}


def test_serve_team_writes_a_private_auth_file_and_prints_no_secret(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    from voproshalych_eval.commands.team import team_launch

    for k, v in OIDC.items():
        monkeypatch.setenv(k, v)
    for k in ("VOPROSHALYCH_EVAL_OIDC_REDIRECT_URI", "VOPROSHALYCH_EVAL_OIDC_COOKIE_SECRET", "VOPROSHALYCH_EVAL_OIDC_SCOPE",
              "VOPROSHALYCH_EVAL_OIDC_PROMPT"):
        monkeypatch.delenv(k, raising=False)
    args, changes, line = team_launch(_settings(tmp_path), address="127.0.0.1", port=8600)
    path = Path(args[args.index("--secrets.files", len(args) - 2) + 1])
    assert path.parent == tmp_path / "team" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    auth = tomllib.loads(path.read_text())["auth"]
    assert auth["client_secret"] == OIDC["VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET"]
    assert auth["redirect_uri"] == "http://127.0.0.1:8600/oauth2callback"
    assert auth["server_metadata_url"] == OIDC["VOPROSHALYCH_EVAL_OIDC_METADATA_URL"]
    assert len(auth["cookie_secret"]) >= 32 and auth["client_kwargs"] == {"scope": "openid email profile"}
    assert changes["VOPROSHALYCH_EVAL_TEAM"] == "1" and changes["VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET"] == ""
    assert "client-secret" not in line and auth["cookie_secret"] not in line and "id.example.org" in line
    # the cookie secret survives a restart (sign-ins stay valid); a prompt replaces Streamlit's select_account
    monkeypatch.setenv("VOPROSHALYCH_EVAL_OIDC_PROMPT", "login")
    team_launch(_settings(tmp_path), address="127.0.0.1", port=8600)
    again = tomllib.loads(path.read_text())["auth"]
    assert again["cookie_secret"] == auth["cookie_secret"] and again["client_kwargs"]["prompt"] == "login"


def test_serve_team_without_a_provider_says_what_to_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from voproshalych_eval.commands import team as team_cmd

    monkeypatch.delenv("VOPROSHALYCH_EVAL_OIDC_METADATA_URL", raising=False)
    monkeypatch.setattr(team_cmd, "load_secrets", lambda: {})
    with pytest.raises(RuntimeError, match="VOPROSHALYCH_EVAL_OIDC_METADATA_URL"):
        team_cmd.team_launch(_settings(tmp_path), address="127.0.0.1", port=8600)
    monkeypatch.setenv("VOPROSHALYCH_EVAL_OIDC_METADATA_URL", OIDC["VOPROSHALYCH_EVAL_OIDC_METADATA_URL"])
    monkeypatch.delenv("VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET", raising=False)
    monkeypatch.setenv("VOPROSHALYCH_EVAL_OIDC_CLIENT_ID", "eval-app")
    with pytest.raises(RuntimeError, match="CLIENT_SECRET are needed"):
        team_cmd.team_launch(_settings(tmp_path), address="127.0.0.1", port=8600)
