"""What a request to a bot's API looks like, and how its replies map to outcomes.

A :class:`BotApiSpec` is plain data (it goes into a run's parameters and into bot profiles as JSON):

* ``method`` — ``GET`` or ``POST``;
* ``url`` — a template; ``{question}`` in it is replaced by the URL-encoded question;
* ``body`` — a JSON *value* used as a template (POST): a string that is exactly ``"{question}"`` becomes
  the question, exactly ``"{dialog_context}"`` becomes the dialog context (a list of strings); a string
  containing ``{question}`` among other text gets the question inserted. The body is then serialised
  with ``json.dumps`` — values are JSON-encoded, never pasted into JSON text;
* ``headers`` — extra headers; values may reference ``${VARIABLE}``, resolved at call time from the
  environment or the top level of ``.streamlit/secrets.toml`` (:func:`voproshalych_eval.config.secret_value`).
  Only the template (the variable's *name*) is ever stored or shown. The app's own configuration is
  never readable this way (:func:`reserved_variable`: :data:`voproshalych_eval.config.ENV_VARS`, ``VOPROSHALYCH_EVAL_*``,
  ``OPENAI_*``, libpq's ``PG*``, every provider's ``api_key_env``): a shared profile cannot send the runner's
  ``DATABASE_URL`` or LLM key to the bot's host — refused when the spec is validated and again at each call. A credential-like header
  (``Authorization``, ``Cookie``, ``*token*``, ``*key*``, ``*secret*``, ``*password*``) must take its value from
  a variable: a literal value there is refused (:meth:`BotApiSpec.validate`);
* the ``url`` carries no credentials: user-info and credential-like query parameters (``?token=``,
  ``?api_key=`` …, :func:`voproshalych_eval.redaction.url_secrets`) are refused — send them in a header;
* ``answer_path`` / ``url_path`` / ``chunks_path`` — dotted JSON paths into the reply (``*`` maps over a
  list: ``chunks.*.text``);
* ``timeout_s``, ``retries`` (transport failures: timeouts, connection errors, 5xx, 429), ``retry_backoff_s``
  (first pause, doubled per attempt; a 429's ``Retry-After`` wins), ``rps`` (requests per second, shared by
  all workers of a run; ``None`` = no limit);
* ``outcomes`` — :class:`OutcomeRule` list: the first rule whose status and body pattern match decides
  the outcome (one of :data:`OUTCOMES`). Unmatched replies: 2xx -> ``answered`` (an empty answer too: it is
  scored as the bad answer it is), 429/5xx -> retried, then ``error``; anything else -> ``error``.

Presets (:data:`PRESETS`): ``voproshalych`` is the production QA service (``POST /qa/``, body
``{"question": "{question}", "dialog_context": "{dialog_context}"}`` — an empty list unless the item
has a dialog context, answer at ``answer``, URL at ``confluence_url``, no chunk texts; ``404`` bodies
``Answer not found`` / ``Chunk not found`` -> ``not_found``, ``Answer banned`` -> ``banned``);
``search-rag`` is the bot team's QA method's ``GET /llm/search-rag?questions={question}``.
"""

from __future__ import annotations

import copy
import json
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from voproshalych_eval.config import ENV_VARS, load_secrets
from voproshalych_eval.redaction import redact_url, url_secrets

OUTCOMES = ("answered", "not_found", "banned", "error")
METHODS = ("GET", "POST")
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SENSITIVE = ("authorization", "auth", "cookie", "token", "key", "secret", "password")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


@dataclass(frozen=True)
class OutcomeRule:
    """Reply -> outcome: ``status`` is ``"404"``, a class ``"4xx"`` or ``"*"``; ``pattern`` a regex searched in the body."""

    outcome: str
    status: str = "*"
    pattern: str | None = None

    def matches(self, status: int, body: str) -> bool:
        s = self.status.strip().lower()
        if s != "*":
            if s.endswith("xx"):
                if str(status)[0] != s[0]:
                    return False
            elif str(status) != s:
                return False
        return self.pattern is None or re.search(self.pattern, body or "") is not None

    def validate(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome rule {self.describe()!r}: outcome must be one of {', '.join(OUTCOMES)}")
        s = self.status.strip().lower()
        if not (s == "*" or re.fullmatch(r"[1-5]\d\d", s) or re.fullmatch(r"[1-5]xx", s)):
            raise ValueError(f"outcome rule {self.describe()!r}: status must be a code (404), a class (4xx) or *")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"outcome rule {self.describe()!r}: bad regular expression: {exc}") from None

    def describe(self) -> str:
        return f"{self.status}{':' + self.pattern if self.pattern is not None else ''}={self.outcome}"

    @classmethod
    def parse(cls, text: str) -> OutcomeRule:
        """``STATUS[:REGEX]=OUTCOME``, e.g. ``404:^Answer banned=banned``, ``5xx=error``, ``*:Ответ не найден=not_found``."""
        head, sep, outcome = str(text).rpartition("=")
        if not sep or not head:
            raise ValueError(f"outcome rule {text!r}: expected STATUS[:REGEX]=OUTCOME, e.g. 404:^Answer banned=banned")
        status, colon, pattern = head.partition(":")
        rule = cls(outcome=outcome.strip(), status=status.strip() or "*", pattern=pattern if colon else None)
        rule.validate()
        return rule

    @classmethod
    def from_obj(cls, obj: Any) -> OutcomeRule:
        if isinstance(obj, OutcomeRule):
            return obj
        if isinstance(obj, str):
            return cls.parse(obj)
        if isinstance(obj, Mapping):
            rule = cls(outcome=str(obj.get("outcome", "")), status=str(obj.get("status") or "*"), pattern=obj.get("pattern"))
            rule.validate()
            return rule
        raise ValueError(f"outcome rule must be a string STATUS[:REGEX]=OUTCOME or an object, got {obj!r}")


def classify(status: int, body: str, rules: Sequence[OutcomeRule]) -> OutcomeRule | None:
    """The first rule matching ``(status, body)``, or None."""
    for r in rules:
        if r.matches(status, body):
            return r
    return None


@dataclass(frozen=True)
class BotApiSpec:
    """One bot API's request and reply shape (see the module docstring)."""

    url: str
    method: str = "GET"
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    answer_path: str = "answer"
    url_path: str | None = None
    chunks_path: str | None = None
    timeout_s: float = 60.0
    rps: float | None = None
    retries: int = 3
    retry_backoff_s: float = 1.0
    outcomes: tuple[OutcomeRule, ...] = ()
    preset: str | None = None

    # ------------------------------------------------------------------ validation and (de)serialisation

    def validate(self) -> BotApiSpec:
        """Raise ``ValueError`` naming the bad field; returns ``self``."""
        if self.method not in METHODS:
            raise ValueError(f"method must be GET or POST, got {self.method!r}")
        parts = urllib.parse.urlsplit(self.url.replace("{question}", "q"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the bot's URL must start with http:// or https:// and name a host, got {self.url!r}")
        if parts.username or parts.password:
            raise ValueError("the bot's URL must not carry credentials (user:password@); use a header with ${VARIABLE}")
        if url_secrets(self.url.replace("{question}", "q")):
            raise ValueError("the bot's URL must not carry credentials in its query (?token=…, ?api_key=…): send "
                             "them in a header with ${VARIABLE}, e.g. 'Authorization: Bearer ${BOT_TOKEN}'")
        if ENV_REF.search(self.url):
            raise ValueError("${VARIABLE} references are supported in header values only, not in the URL")
        if self.method == "GET" and self.body is not None:
            raise ValueError("a GET request has no body: choose POST or drop the body template")
        try:
            json.dumps(self.body)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the body template must be a JSON value: {exc}") from None
        if not self.answer_path:
            raise ValueError("answer_path is required (the JSON path of the answer in the reply)")
        if not (self.timeout_s and self.timeout_s > 0):
            raise ValueError(f"timeout must be positive, got {self.timeout_s!r}")
        if self.rps is not None and not self.rps > 0:
            raise ValueError(f"the requests-per-second limit must be positive (or empty for none), got {self.rps!r}")
        if self.retries < 0 or self.retry_backoff_s < 0:
            raise ValueError("retries and retry backoff must not be negative")
        for name, value in self.headers.items():
            check_header(name, value)
        check_variables(self.headers)
        for r in self.outcomes:
            r.validate()
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; headers as ``"Name: template"`` lines (variable names, never values).

        Headers are a list, not an object: run parameters drop keys that look secret (``Authorization``),
        and the template must survive for a resume to send the same request.
        """
        d = asdict(self)
        d["outcomes"] = [asdict(r) for r in self.outcomes]
        d["body"] = copy.deepcopy(self.body)
        d["headers"] = [f"{k}: {v}" for k, v in self.headers.items()]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BotApiSpec:
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown bot API setting(s): {', '.join(unknown)}")
        kw = dict(d)
        kw["outcomes"] = tuple(OutcomeRule.from_obj(o) for o in (d.get("outcomes") or ()))
        kw["headers"] = _header_dict(d.get("headers"))
        if "method" in kw:
            kw["method"] = str(kw["method"]).upper()
        for k in ("timeout_s", "retry_backoff_s"):
            if kw.get(k) is not None:
                kw[k] = float(kw[k])
        if kw.get("rps") is not None:
            kw["rps"] = float(kw["rps"])
        if kw.get("retries") is not None:
            kw["retries"] = int(kw["retries"])
        return cls(**kw)

    def public(self) -> dict[str, Any]:
        """What a page or report shows: the settings with header templates and the variables they need."""
        d = self.to_dict()
        d["url"] = redact_url(self.url)  # a profile saved before credentials in the query were refused
        d["header_variables"] = header_variables(self.headers)
        return d

    # ------------------------------------------------------------------ building one request

    def request_url(self, question: str) -> str:
        return self.url.replace("{question}", urllib.parse.quote(question, safe=""))

    def request_body(self, question: str, dialog_context: Sequence[str] = ()) -> bytes | None:
        if self.body is None:
            return None
        value = render_template(self.body, question=question, dialog_context=list(dialog_context))
        return json.dumps(value, ensure_ascii=False).encode("utf-8")


def render_template(template: Any, *, question: str, dialog_context: list[str]) -> Any:
    """The body template with the placeholders filled (values, not text: JSON-encoding happens later)."""
    if isinstance(template, str):
        if template == "{question}":
            return question
        if template == "{dialog_context}":
            return list(dialog_context)
        return template.replace("{question}", question).replace("{dialog_context}", "\n".join(dialog_context))
    if isinstance(template, Mapping):
        return {k: render_template(v, question=question, dialog_context=dialog_context) for k, v in template.items()}
    if isinstance(template, list | tuple):
        return [render_template(v, question=question, dialog_context=dialog_context) for v in template]
    return template


def _header_dict(headers: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """Headers given as a mapping or as ``"Name: value"`` lines -> a dict."""
    if not headers:
        return {}
    pairs = headers.items() if isinstance(headers, Mapping) else (parse_header(h) for h in headers)
    return {str(k): str(v) for k, v in pairs}


def header_variables(headers: Mapping[str, str]) -> list[str]:
    """Names of the ``${VARIABLE}`` references in header values (sorted, unique)."""
    return sorted({m for v in headers.values() for m in ENV_REF.findall(str(v))})


_RESERVED_PREFIXES = ("VOPROSHALYCH_EVAL_", "OPENAI_", "PG")


def reserved_variable(name: str) -> bool:
    """Whether ``name`` is one of the app's own configuration variables, which a header template may never read:
    :data:`voproshalych_eval.config.ENV_VARS`, anything starting with ``VOPROSHALYCH_EVAL_``, ``OPENAI_`` or
    libpq's ``PG`` (``PGPASSWORD``), ``DATABASE_URL``-like names, and every LLM provider's ``api_key_env``
    named in ``secrets.toml``."""
    upper = name.upper()
    if name in ENV_VARS or upper.startswith(_RESERVED_PREFIXES) or upper.endswith("DATABASE_URL"):
        return True
    try:
        llm = load_secrets().get("llm")
    except Exception:  # noqa: BLE001 - an unreadable secrets file: the app cannot use its providers either
        return False
    entries = llm.get("providers") if isinstance(llm, Mapping) else None
    if isinstance(entries, Mapping):
        entries = list(entries.values())
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, Mapping) and name in (e.get("api_key_env"), e.get("api-key-env")):
            return True
    return False


def check_variables(headers: Mapping[str, str]) -> None:
    """Refuse a header template that reads one of the app's configuration variables (:func:`reserved_variable`)."""
    for header, value in headers.items():
        for var in ENV_REF.findall(str(value)):
            if reserved_variable(var):
                raise ValueError(f"header {header!r} reads ${{{var}}}, one of the app's own configuration variables: "
                                 "a bot profile may read only variables of its own (e.g. ${BOT_TOKEN})")


def is_sensitive_header(name: str) -> bool:
    low = name.lower()
    return any(s in low for s in _SENSITIVE)


def check_header(name: str, value: str) -> None:
    """A header name is a token; a credential-like header's value is ``[Scheme ]${VARIABLE}``, never a literal."""
    if not _HEADER_NAME.match(name or ""):
        raise ValueError(f"header name {name!r} is not a valid HTTP header name")
    if "\n" in value or "\r" in value:
        raise ValueError(f"header {name!r}: the value must be one line")
    if is_sensitive_header(name):
        rest = ENV_REF.sub("", value)
        if not ENV_REF.search(value) or not re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9-]*\s+)?", rest):
            raise ValueError(
                f"header {name!r} looks like a credential: give its value as ${{VARIABLE}} "
                f"(e.g. 'Bearer ${{BOT_TOKEN}}') so that the secret stays in the environment or secrets.toml, "
                "out of runs, profiles and logs"
            )


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` -> ``(name, value)``."""
    name, sep, value = str(text).partition(":")
    if not sep or not name.strip():
        raise ValueError(f"header {text!r}: expected 'Name: value', e.g. 'Authorization: Bearer ${{BOT_TOKEN}}'")
    return name.strip(), value.strip()


# ---------------------------------------------------------------------- presets

PRODUCTION_DECLINES = (
    OutcomeRule("not_found", "404", "^Answer not found"),
    OutcomeRule("not_found", "404", "^Chunk not found"),
    OutcomeRule("banned", "404", "^Answer banned"),
)

#: name -> (path added to the base URL, spec fields). ``custom`` uses the URL as given.
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "voproshalych": (
        "/qa/",
        {
            "method": "POST",
            "body": {"question": "{question}", "dialog_context": "{dialog_context}"},
            "answer_path": "answer",
            "url_path": "confluence_url",
            "chunks_path": None,
            "outcomes": PRODUCTION_DECLINES,
            # the production service sleeps ~1.1 s around each LLM call: one request per second by default
            "rps": 1.0,
        },
    ),
    "search-rag": (
        "/llm/search-rag?questions={question}",
        {"method": "GET", "body": None, "answer_path": "answer", "url_path": None, "chunks_path": "chunks"},
    ),
    "custom": ("", {}),
}


def preset_url(base_url: str, preset: str) -> str:
    """The preset's path added to a base URL (unless the URL already has it or a ``{question}`` template)."""
    path = PRESETS[preset][0]
    if not path or "{question}" in base_url:
        return base_url
    plain_path = path.split("?", 1)[0]
    if urllib.parse.urlsplit(base_url).path.rstrip("/") == plain_path.rstrip("/"):
        return base_url
    return base_url.rstrip("/") + path


def spec_from_options(
    url: str | None = None,
    *,
    preset: str | None = None,
    base: BotApiSpec | Mapping[str, Any] | None = None,
    **options: Any,
) -> BotApiSpec:
    """Build and validate a spec: a saved ``base`` (a profile) or a ``preset``, then the non-None ``options``.

    ``options`` are :class:`BotApiSpec` fields; ``headers`` may be a mapping or ``"Name: value"`` strings,
    ``outcomes`` rule objects or ``STATUS[:REGEX]=OUTCOME`` strings (they replace the preset's rules;
    pass ``extra_outcomes`` to add rules before them). Without a preset: ``custom`` when the URL holds
    ``{question}`` or a POST/body is asked for, else ``search-rag`` (the bot team's QA method's form).
    """
    extra = options.pop("extra_outcomes", None)
    opts = {k: v for k, v in options.items() if v is not None}
    if base is not None:
        fields = (base if isinstance(base, BotApiSpec) else BotApiSpec.from_dict(base)).to_dict()
        if url:
            fields["url"] = url
        if preset:
            raise ValueError("give either a saved bot profile or a preset, not both")
    else:
        if not url:
            raise ValueError("the bot's URL is required, e.g. http://localhost:8080")
        if preset is None:
            custom = "{question}" in url or str(opts.get("method", "")).upper() == "POST" or "body" in opts
            preset = "custom" if custom else "search-rag"
        if preset not in PRESETS:
            raise ValueError(f"unknown API preset {preset!r}; known: {', '.join(PRESETS)}")
        fields = {**copy.deepcopy(PRESETS[preset][1]), "url": preset_url(url, preset), "preset": preset}
    if "headers" in opts:
        h = opts.pop("headers")
        pairs = list(h.items()) if isinstance(h, Mapping) else [parse_header(x) for x in h]
        fields["headers"] = {**_header_dict(fields.get("headers")), **dict(pairs)}
    if "method" in opts:
        opts["method"] = str(opts["method"]).upper()
    fields.update(opts)
    rules = [OutcomeRule.from_obj(o) for o in (fields.get("outcomes") or ())]
    if extra:
        rules = [OutcomeRule.from_obj(o) for o in extra] + rules
    fields["outcomes"] = tuple(rules)
    return BotApiSpec.from_dict(fields).validate()

