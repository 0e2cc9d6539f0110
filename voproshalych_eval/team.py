"""Team deployment: who is using the app, which role they have, and what each role may do.

Without team mode (the single-user ``make run``) everyone is an ``admin`` named by the OS user (or
``local``) and nothing is asked. In team mode (``serve --team`` or ``VOPROSHALYCH_EVAL_TEAM=1``) the app
requires sign-in through the organisation's OpenID Connect provider (Streamlit's ``st.login``; see
:mod:`voproshalych_eval.ui.auth`) and each signed-in user gets one of three roles:

========  ======================================================================================
role      may
========  ======================================================================================
viewer    see every page, report and download (question texts masked by default)
analyst   also start runs, label items, edit and import datasets
admin     also change providers, baselines, bots, schedules, alerts and the other settings
========  ======================================================================================

The role comes from an allow-list in the settings (e-mail → role; it wins) or from a claim of the ID token
(``roles`` or ``groups`` by default; values naming a role, or mapped to one by the ``groups`` table of the
settings); the highest role found counts. Nobody matched gets the default role (``viewer``; ``none`` refuses
access to people the organisation did not list).

This module holds the pure rules (no Streamlit, no database): :func:`allows` is the one permission check
every page action goes through (``ui.auth.require``).
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from voproshalych_eval.config import Settings, env, get_settings
from voproshalych_eval.errors import VoproshalychEvalError

ROLES: tuple[str, ...] = ("viewer", "analyst", "admin")

#: every guarded action → the least role that may do it
ACTIONS: dict[str, str] = {
    "view": "viewer",
    "run": "analyst",  # start, resume or cancel a run
    "label": "analyst",  # accept / reject / annotate items
    "dataset": "analyst",  # create, import, edit, restore datasets; take snapshots
    "settings": "admin",  # providers, prices, data source
    "baseline": "admin",
    "bot": "admin",
    "schedule": "admin",
    "alert": "admin",
}

#: action → (ru, en) wording for refusals and the audit view
ACTION_LABELS: dict[str, tuple[str, str]] = {
    "view": ("просмотр", "viewing"),
    "run": ("запуски", "runs"),
    "label": ("разметка", "labelling"),
    "dataset": ("изменение наборов данных", "dataset changes"),
    "settings": ("изменение настроек", "settings changes"),
    "baseline": ("изменение базовых значений", "baseline changes"),
    "bot": ("профили ботов", "bot profiles"),
    "schedule": ("расписания", "schedules"),
    "alert": ("оповещения", "alerts"),
}

ROLE_LABELS: dict[str, tuple[str, str]] = {
    "viewer": ("наблюдатель", "viewer"),
    "analyst": ("аналитик", "analyst"),
    "admin": ("администратор", "admin"),
}

DEFAULT_ROLE_CLAIMS: tuple[str, ...] = ("roles", "groups")
MASK_MODES: tuple[str, ...] = ("auto", "on", "off")
_TRUE = {"1", "true", "yes", "on"}


class PermissionDenied(VoproshalychEvalError, PermissionError):
    """An action refused for the user's role (the message is one sentence naming role and action)."""

    def __init__(self, identity: Identity, action: str) -> None:
        self.identity = identity
        self.action = action
        need = ACTIONS.get(action, "admin")
        super().__init__(
            f"{identity.name} ({identity.role or 'no role'}) may not do {ACTION_LABELS.get(action, (action, action))[1]}: "
            f"it needs the {need} role."
        )


@dataclass(frozen=True)
class Identity:
    """Who is acting: ``name`` is what the audit log and ``runs.actor`` record (the e-mail when signed in)."""

    name: str
    role: str | None
    display_name: str | None = None
    email: str | None = None
    signed_in: bool = False  # through the OpenID Connect provider (False in single-user mode)

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True)
class TeamSettings:
    """The team-mode settings (environment first, then ``[voproshalych_eval.team]`` in ``secrets.toml``)."""

    enabled: bool = False
    role_claims: tuple[str, ...] = DEFAULT_ROLE_CLAIMS
    #: e-mail (lower case) → role; wins over the claim
    allow_list: Mapping[str, str] = field(default_factory=dict)
    #: claim value (a group name) → role; a value that is itself a role name needs no entry
    groups: Mapping[str, str] = field(default_factory=dict)
    #: the role of a signed-in user nobody matched; None refuses access
    default_role: str | None = "viewer"
    #: mask personal data in exports and reports: ``auto`` (viewers only), ``on`` (everyone), ``off``
    mask: str = "auto"


def _role(value: Any, where: str) -> str:
    role = str(value).strip().lower()
    if role not in ROLES:
        raise ValueError(f"{where}: unknown role {value!r} (one of {', '.join(ROLES)})")
    return role


def parse_role_map(text: str, where: str) -> dict[str, str]:
    """``"a@x.org=admin, b@x.org=analyst"`` → ``{"a@x.org": "admin", ...}`` (keys lower-cased)."""
    out: dict[str, str] = {}
    for part in re.split(r"[,;\n]", text or ""):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"{where}: expected NAME=ROLE, got {part.strip()!r}")
        name, role = part.split("=", 1)
        out[name.strip().lower()] = _role(role, where)
    return out


def team_settings(settings: Settings | None = None) -> TeamSettings:
    """Read the team settings: ``VOPROSHALYCH_EVAL_TEAM*`` variables, else ``[voproshalych_eval.team]``."""
    settings = settings or get_settings()
    general = settings.secrets.get("voproshalych_eval", {})
    section = general.get("team", {}) if isinstance(general, dict) else {}
    section = section if isinstance(section, dict) else {}

    def pick(var: str, key: str) -> Any:
        value = env(var)
        return value if value not in (None, "") else section.get(key)

    enabled = pick("VOPROSHALYCH_EVAL_TEAM", "enabled")
    claims = pick("VOPROSHALYCH_EVAL_TEAM_ROLE_CLAIM", "role_claim")
    roles = pick("VOPROSHALYCH_EVAL_TEAM_ROLES", "roles")
    groups = section.get("groups", {})
    default = pick("VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE", "default_role")
    mask = str(pick("VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA", "mask_personal_data") or "auto").strip().lower()
    mask = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}.get(mask, mask)
    if mask not in MASK_MODES:
        raise ValueError(f"VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA must be one of {', '.join(MASK_MODES)}, got {mask!r}")
    if isinstance(roles, dict):
        allow = {str(k).strip().lower(): _role(v, "[voproshalych_eval.team.roles]") for k, v in roles.items()}
    else:
        allow = parse_role_map(str(roles or ""), "VOPROSHALYCH_EVAL_TEAM_ROLES")
    if isinstance(claims, str):
        claim_names = tuple(c.strip() for c in claims.split(",") if c.strip())
    elif isinstance(claims, list):
        claim_names = tuple(str(c) for c in claims)
    else:
        claim_names = DEFAULT_ROLE_CLAIMS
    default_text = str(default).strip().lower() if default not in (None, "") else "viewer"
    return TeamSettings(
        enabled=(enabled is True) or str(enabled or "").strip().lower() in _TRUE,
        role_claims=claim_names or DEFAULT_ROLE_CLAIMS,
        allow_list=allow,
        groups={str(k): _role(v, "[voproshalych_eval.team.groups]") for k, v in (groups or {}).items()},
        default_role=None if default_text == "none" else _role(default_text, "VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE"),
        mask=mask,
    )


def rank(role: str | None) -> int:
    """0 for no role, then viewer < analyst < admin."""
    return ROLES.index(role) + 1 if role in ROLES else 0


def highest(roles: Iterable[str | None]) -> str | None:
    best = max(roles, key=rank, default=None)
    return best if rank(best) else None


def _claim_values(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[\s,]+", value) if v]
    if isinstance(value, Mapping):  # e.g. Keycloak's {"roles": [...]} under realm_access
        return _claim_values(value.get("roles"))
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return [str(value)]


def resolve_role(claims: Mapping[str, Any], team: TeamSettings) -> str | None:
    """The role of a signed-in user from the ID token's claims: the allow-list by e-mail first, else the
    highest role named by (or mapped from) the role claims, else the default role (None: no access)."""
    email = str(claims.get("email") or "").strip().lower()
    if email and email in team.allow_list:
        return team.allow_list[email]
    found: list[str | None] = []
    for claim in team.role_claims:
        for value in _claim_values(claims.get(claim)):
            found.append(team.groups.get(value) or (value.lower() if value.lower() in ROLES else None))
    return highest(found) or team.default_role


def identity_from_claims(claims: Mapping[str, Any], team: TeamSettings) -> Identity:
    """The :class:`Identity` of a signed-in user (``name``: e-mail, else ``sub``)."""
    email = str(claims.get("email") or "").strip() or None
    name = email or str(claims.get("preferred_username") or claims.get("sub") or "unknown")
    return Identity(name=name, role=resolve_role(claims, team), display_name=claims.get("name") or None,
                    email=email, signed_in=True)


def local_actor() -> str:
    """The OS user of this process, or ``local``."""
    try:
        return getpass.getuser() or "local"
    except Exception:  # noqa: BLE001 - no user database entry in a container
        return "local"


def local_identity() -> Identity:
    """The single-user identity: an admin named by the OS user."""
    return Identity(name=local_actor(), role="admin")


def allows(role: str | None, action: str) -> bool:
    """True when ``role`` may do ``action`` (an unknown action needs ``admin``)."""
    return rank(role) >= rank(ACTIONS.get(action, "admin"))


def check(identity: Identity, action: str) -> Identity:
    """Return ``identity`` when it may do ``action``; raise :class:`PermissionDenied` otherwise."""
    if not allows(identity.role, action):
        raise PermissionDenied(identity, action)
    return identity


def masks_personal_data(identity: Identity, team: TeamSettings) -> bool:
    """Whether exports and reports made for ``identity`` mask personal data (``auto``: viewers only)."""
    if team.mask == "on":
        return True
    if team.mask == "off":
        return False
    return rank(identity.role) < rank("analyst")
