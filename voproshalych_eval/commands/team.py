"""Team deployment from the command line: how ``serve --team`` configures sign-in, and ``audit``.

``serve --team`` serves the app with sign-in through the organisation's OpenID Connect provider, by
Streamlit's own ``st.login`` (Authlib underneath). Streamlit reads its provider settings from an ``[auth]``
section of a ``secrets.toml``; there are two ways to give them:

1. ``VOPROSHALYCH_EVAL_OIDC_METADATA_URL``, ``..._CLIENT_ID``, ``..._CLIENT_SECRET`` (and optionally
   ``..._REDIRECT_URI``, ``..._COOKIE_SECRET``, ``..._SCOPE``, ``..._PROMPT``) in the environment: ``serve --team`` writes the
   ``[auth]`` section into ``<home>/team/streamlit-auth.toml`` — a folder only the app's user can enter, a
   file only it can read (0700 / 0600), outside the project tree — and passes that file to Streamlit with
   ``--secrets.files``. The cookie-signing secret, unless given, is generated once into the same folder so
   that sign-ins survive a restart. The child process does not get the client secret in its environment.
2. An ``[auth]`` section already in the project's ``.streamlit/secrets.toml`` (Streamlit's documented way).

Nothing here prints a secret: the log line names the provider's host and the client id only.
"""

from __future__ import annotations

import json
import logging
import os
import secrets as pysecrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from voproshalych_eval.commands.output import add_json_flag, emit, engine
from voproshalych_eval.config import PROJECT_ROOT, Settings, env, load_secrets, secret_value
from voproshalych_eval.db import audit

AUTH_FILE = "streamlit-auth.toml"
COOKIE_FILE = "cookie_secret"
#: variables a team-mode child process does not need (they are in the private auth file)
CHILD_DROPS = ("VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET", "VOPROSHALYCH_EVAL_OIDC_COOKIE_SECRET")


def register(sub: Any) -> None:
    p = sub.add_parser("audit", help="who started runs, labelled items, edited datasets and changed settings")
    p.add_argument("--actor", default=None, help="only this actor (an e-mail, or the OS user)")
    p.add_argument("--action", default=None, help="only this kind: run, label, dataset, settings, baseline, bot, …")
    p.add_argument("--refused", action="store_true", help="only refused actions")
    p.add_argument("--limit", type=int, default=50)
    add_json_flag(p)
    p.set_defaults(func=cmd_audit)


def cmd_audit(args: Any) -> int:
    rows = audit.entries(engine(), actor=args.actor, action=args.action,
                         outcome="refused" if args.refused else None, limit=args.limit)
    data = [{"id": r.id, "at": r.at.isoformat(), "actor": r.actor, "role": r.role, "action": r.action,
             "target": r.target, "outcome": r.outcome, "details": r.details} for r in rows]
    human = "\n".join(f"{d['at'][:19]}  {d['actor']} ({d['role'] or '—'})  {d['action']}  {d['target'] or ''}"
                      f"{'  REFUSED' if d['outcome'] == 'refused' else ''}" for d in data) or "no entries"
    emit({"entries": data}, args.json, human)
    return 0


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (created 0600, never world-readable meanwhile)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _cookie_secret(folder: Path) -> str:
    given = secret_value("VOPROSHALYCH_EVAL_OIDC_COOKIE_SECRET")
    if given:
        return given
    path = folder / COOKIE_FILE
    if path.is_file() and path.read_text(encoding="utf-8").strip():
        return path.read_text(encoding="utf-8").strip()
    value = pysecrets.token_urlsafe(32)
    _write_private(path, value)
    return value


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def auth_section_text(*, metadata_url: str, client_id: str, client_secret: str, redirect_uri: str,
                      cookie_secret: str, scope: str, prompt: str | None = None) -> str:
    """The ``[auth]`` section Streamlit's ``st.login`` reads (one provider, no name); ``prompt`` replaces
    Streamlit's default ``select_account`` (a provider that does not support it wants ``login``)."""
    return "\n".join([
        "# Written by `voproshalych-eval serve --team`; private to the app's user. Do not commit.",
        "[auth]",
        f"redirect_uri = {_toml_string(redirect_uri)}",
        f"cookie_secret = {_toml_string(cookie_secret)}",
        f"client_id = {_toml_string(client_id)}",
        f"client_secret = {_toml_string(client_secret)}",
        f"server_metadata_url = {_toml_string(metadata_url)}",
        "",
        "[auth.client_kwargs]",
        f"scope = {_toml_string(scope)}",
        *([f"prompt = {_toml_string(prompt)}"] if prompt else []),
        "",
    ])


def _default_secrets_files() -> list[Path]:
    explicit = env("VOPROSHALYCH_EVAL_SECRETS")
    paths = [Path.home() / ".streamlit" / "secrets.toml", PROJECT_ROOT / ".streamlit" / "secrets.toml"]
    if explicit:
        paths.append(Path(explicit))
    return [p for p in dict.fromkeys(paths) if p.is_file()]


def team_launch(settings: Settings, *, address: str, port: int) -> tuple[list[str], dict[str, str], str]:
    """What ``serve --team`` adds to the ``streamlit run`` command: extra arguments, environment changes (a
    value of ``""`` removes the variable) and one line to print (no secret). Raises ``RuntimeError`` with what
    to set when no provider is configured."""
    metadata_url = env("VOPROSHALYCH_EVAL_OIDC_METADATA_URL")
    changes = {"VOPROSHALYCH_EVAL_TEAM": "1", **{name: "" for name in CHILD_DROPS}}
    files = _default_secrets_files()
    if metadata_url:
        client_id = env("VOPROSHALYCH_EVAL_OIDC_CLIENT_ID")
        client_secret = secret_value("VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET")
        if not client_id or not client_secret:
            raise RuntimeError("serve --team: VOPROSHALYCH_EVAL_OIDC_METADATA_URL is set, but "
                               "VOPROSHALYCH_EVAL_OIDC_CLIENT_ID and VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET are needed too.")
        host = "localhost" if address in ("0.0.0.0", "::", "") else address
        redirect_uri = env("VOPROSHALYCH_EVAL_OIDC_REDIRECT_URI") or f"http://{host}:{port}/oauth2callback"
        if not redirect_uri.rstrip("/").endswith("/oauth2callback"):
            raise RuntimeError(f"VOPROSHALYCH_EVAL_OIDC_REDIRECT_URI must end with /oauth2callback, got {redirect_uri}")
        folder = _private_dir(settings.home / "team")
        path = folder / AUTH_FILE
        _write_private(path, auth_section_text(
            metadata_url=metadata_url, client_id=client_id, client_secret=client_secret, redirect_uri=redirect_uri,
            cookie_secret=_cookie_secret(folder), scope=env("VOPROSHALYCH_EVAL_OIDC_SCOPE") or "openid email profile",
            prompt=env("VOPROSHALYCH_EVAL_OIDC_PROMPT"),
        ))
        files.append(path)
        where = f"provider {urlsplit(metadata_url).netloc}, client {client_id}; sign-in settings in {path} (private)"
    elif isinstance(load_secrets().get("auth"), dict):
        where = "sign-in settings from the [auth] section of secrets.toml"
    else:
        raise RuntimeError(
            "serve --team needs an OpenID Connect provider: set VOPROSHALYCH_EVAL_OIDC_METADATA_URL, "
            "VOPROSHALYCH_EVAL_OIDC_CLIENT_ID and VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET (or an [auth] section in "
            ".streamlit/secrets.toml); see the README, \"Team deployment\"."
        )
    args: list[str] = []
    for f in files:
        args += ["--secrets.files", str(f)]
    return args, changes, f"Team mode: sign-in required ({where})"


#: (command, action) of the CLI's writing commands → the audit action kind (runs are recorded by the run registry)
WRITE_COMMANDS: dict[tuple[str, str], str] = {
    ("dataset", "import"): "dataset",
    ("dataset", "annotate-import"): "label",
    ("dataset", "realq-pick"): "label",
    ("dataset", "label"): "label",
    ("snapshot", "take"): "dataset",
    ("snapshot", "use"): "dataset",
    ("snapshot", "delete"): "dataset",
}


def audit_command(args: Any) -> None:
    """Record a finished writing command in the audit log, by the OS user (never fails the command)."""
    sub = getattr(args, f"{args.command}_command", None) if getattr(args, "command", None) else None
    action = WRITE_COMMANDS.get((args.command, sub)) if sub else None
    if action is None:
        return
    from voproshalych_eval.team import local_actor  # heavy: keeps team out of --help (+2 ms)

    target = next((str(getattr(args, name)) for name in ("name", "dataset", "file", "snapshot", "id")
                   if getattr(args, name, None) not in (None, "")), None)
    try:
        audit.record(engine(), actor=local_actor(), role="admin", action=action, target=target,
                     details={"command": f"{args.command} {sub}"})
    except Exception:  # noqa: BLE001 - the command itself succeeded
        logging.getLogger(__name__).warning("could not write the audit entry of %s %s", args.command, sub,
                                            exc_info=True)
