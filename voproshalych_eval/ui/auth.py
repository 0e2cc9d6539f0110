"""Sign-in, roles and the audit trail in the app: the one place every page action is authorised.

Team mode (:mod:`voproshalych_eval.team`) signs people in with Streamlit's own OpenID Connect support
(``st.login`` / ``st.user`` / ``st.logout``, on Authlib; configured by the ``[auth]`` section Streamlit reads,
which ``serve --team`` writes into a private file). Without team mode everyone is an admin named by the OS user.

Pages use three things:

* :func:`can` — whether to draw an action's controls at all (a viewer sees no run button);
* :func:`require` — the server-side check at the start of the action itself: a refused action is written to
  the audit log, shown as one sentence, and the script stops. It does not trust that a button was hidden;
* :func:`audited` — ``with audited("label", target): ...``: :func:`require`, then the action, then one audit
  entry when the action finished without an error.

Runs are authorised in :func:`voproshalych_eval.ui.jobs.start` (every page starts its runs there) and record
their actor on the run itself (``runs.create_run``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import streamlit as st

from voproshalych_eval import team
from voproshalych_eval.team import Identity, PermissionDenied
from voproshalych_eval.ui import state
from voproshalych_eval.ui.i18n import tr

log = logging.getLogger(__name__)


def team_settings() -> team.TeamSettings:
    return team.team_settings(state.settings())


def team_mode() -> bool:
    """True when the app requires sign-in (``serve --team`` / ``VOPROSHALYCH_EVAL_TEAM=1``)."""
    return team_settings().enabled


def _claims() -> dict[str, Any]:
    try:
        return dict(st.user.to_dict())
    except Exception:  # noqa: BLE001 - no script context (a helper called outside a page)
        return {}


def identity() -> Identity:
    """Who is using this session: the signed-in user with their role (team mode), an anonymous identity
    without a role (team mode, not signed in), or the local admin (single-user mode)."""
    ts = team_settings()
    if not ts.enabled:
        return team.local_identity()
    claims = _claims()
    if not claims.get("is_logged_in"):
        return Identity(name="anonymous", role=None)
    return team.identity_from_claims(claims, ts)


def can(action: str) -> bool:
    """Whether the current user may do ``action`` (draw its controls only then)."""
    return team.allows(identity().role, action)


def role_label(role: str | None) -> str:
    return tr(*team.ROLE_LABELS.get(role or "", ("нет роли", "no role")))


def refusal_text(ident: Identity, action: str) -> str:
    need = team.ACTIONS.get(action, "admin")
    what = tr(*team.ACTION_LABELS.get(action, (action, action)))
    return tr(
        f"Недоступно ({what}): нужна роль «{role_label(need)}», у вас — «{role_label(ident.role)}».",
        f"Not allowed ({what}): it needs the {role_label(need)} role; yours is {role_label(ident.role)}.",
    )


def not_allowed_note(action: str) -> None:
    """A caption where an action's controls would be, for a role that may not use them."""
    st.caption("🔒 " + refusal_text(identity(), action))


def _record(ident: Identity, action: str, target: str | None, *, outcome: str = "done",
            details: Mapping[str, Any] | None = None) -> None:
    from voproshalych_eval.db import audit  # heavy: keeps db.audit out of app start (+6 ms)

    try:
        audit.record(state.engine(), actor=ident.name, role=ident.role, action=action, target=target,
                     outcome=outcome, details=details)
    except Exception:  # noqa: BLE001 - the action itself already happened; the log says why the entry is missing
        log.exception("could not write the audit entry for %s", action)


def require(action: str, target: str | None = None) -> Identity:
    """The server-side check of an action: the identity when allowed; otherwise the refusal is written to the
    audit log, shown as one sentence, and the script run stops (nothing after this call runs)."""
    ident = identity()
    try:
        return team.check(ident, action)
    except PermissionDenied:
        log.warning("refused %s on %s for %s (%s)", action, target, ident.name, ident.role)
        _record(ident, action, target, outcome="refused")
        st.error("🔒 " + refusal_text(ident, action))
        st.stop()
        raise  # st.stop() raises; for type checkers


@contextmanager
def audited(action: str, target: str | None = None, details: Mapping[str, Any] | None = None) -> Iterator[Identity]:
    """``with audited("dataset", name): ...`` — :func:`require`, the body, then one audit entry (not written
    when the body raised)."""
    ident = require(action, target)
    try:
        yield ident
    except Exception:
        raise  # the action failed: nothing to record
    except BaseException:  # st.rerun() / st.stop() after the action: it finished
        _record(ident, action, target, details=details)
        raise
    _record(ident, action, target, details=details)


def record(action: str, target: str | None = None, details: Mapping[str, Any] | None = None) -> None:
    """Write one audit entry for an action the current user just finished (after :func:`require`)."""
    _record(identity(), action, target, details=details)


def masks_personal_data() -> bool:
    """Whether exports and reports made in this session mask personal data (viewers by default)."""
    return team.masks_personal_data(identity(), team_settings())


def _has_auth_config() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all
        return False


def signed_out_page() -> None:
    """The only page before sign-in (the sign-in screen itself is drawn by :func:`sign_in_gate`)."""


def sign_in_gate() -> bool:
    """In team mode: a sign-in screen until the user is signed in with a role, then who they are and a
    sign-out button in the sidebar. True when the app may be drawn (always in single-user mode)."""
    if not team_mode():
        return True
    if not _has_auth_config():
        st.error(tr(
            "Командный режим включён, но вход не настроен: нет раздела [auth] в secrets.toml. "
            "Запустите приложение командой `voproshalych-eval serve --team` (см. README, «Team deployment»).",
            "Team mode is on but sign-in is not configured: secrets.toml has no [auth] section. "
            "Start the app with `voproshalych-eval serve --team` (see the README, \"Team deployment\").",
        ))
        return False
    ident = identity()
    if not ident.signed_in:
        st.title(tr("Вопрошалыч · оценка", "Voproshalych · eval"))
        st.markdown(tr("Войдите через учётную запись организации, чтобы продолжить.",
                    "Sign in with your organisation account to continue."))
        st.button(tr("Войти", "Sign in"), key="auth_login", type="primary", on_click=st.login)
        return False
    if ident.role is None:
        st.error(tr(f"У пользователя {ident.name} нет доступа к приложению: обратитесь к администратору.",
                    f"{ident.name} has no access to this app: ask an administrator."))
        st.button(tr("Выйти", "Sign out"), key="auth_logout_norole", on_click=st.logout)
        return False
    with st.sidebar:
        st.markdown(f"👤 **{ident.label}** · {role_label(ident.role)}", help=ident.name)
        st.button(tr("Выйти", "Sign out"), key="auth_logout", on_click=st.logout)
    return True


def button(action: str, where: Any, label: str, **kwargs: Any) -> bool:
    """``where.button(label, **kwargs)`` (``where``: ``st`` or a column) for a user who may do ``action``; otherwise no button, a caption saying
    why, and False. Hiding is not the check: the action itself calls :func:`require` (or ``jobs.start``)."""
    if not can(action):
        where.caption("🔒 " + refusal_text(identity(), action))
        return False
    return bool(where.button(label, **kwargs))


def submit(action: str, where: Any, label: str, **kwargs: Any) -> bool:
    """A form's submit button, disabled (with a caption saying why) for a user who may not do ``action`` (a
    form needs its submit button). The action itself still calls :func:`require` (or ``jobs.start``)."""
    allowed = can(action)
    kwargs["disabled"] = bool(kwargs.get("disabled")) or not allowed
    pressed = bool(where.form_submit_button(label, **kwargs))
    if not allowed:
        where.caption("🔒 " + refusal_text(identity(), action))
    return pressed


def export_text(text: str, *, masked: bool | None = None) -> str:
    """The text of an export or report for this session: personal data masked when the session masks it
    (:func:`masks_personal_data`, or ``masked`` when decided earlier; the one masking function is
    :func:`voproshalych_eval.masking.mask_personal_data`)."""
    from voproshalych_eval.masking import mask_personal_data  # heavy: keeps masking out of app start (+8 ms)

    return mask_personal_data(text) if (masks_personal_data() if masked is None else masked) else text


def export_bytes(text: str, *, masked: bool | None = None) -> bytes:
    """:func:`export_text` encoded as UTF-8 (what download buttons take)."""
    return export_text(text, masked=masked).encode("utf-8")


AUDIT_COLUMNS = ("at", "actor", "role", "action", "target", "outcome", "details")


def audit_frame(*, limit: int = 5000) -> Any:
    """The newest audit entries as a DataFrame (columns :data:`AUDIT_COLUMNS`), for the Audit page."""
    import pandas as pd  # heavy: defers pandas

    from voproshalych_eval.db import audit  # heavy: keeps db.audit out of app start (+6 ms)

    rows = audit.entries(state.engine(), limit=limit)
    return pd.DataFrame([{c: getattr(r, c) for c in AUDIT_COLUMNS} for r in rows], columns=list(AUDIT_COLUMNS))
