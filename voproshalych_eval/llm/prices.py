"""LLM prices (USD per 1M input / output tokens) and what a set of calls cost.

The table lives in the store (``eval.llm_prices``), seeded with list prices of the models the methodology names
(see :data:`DEFAULT_PRICES`, with the date they were read); it is edited on the Settings page or with
:func:`set_price` / :func:`delete_price`. ``[llm.prices]`` in ``.streamlit/secrets.toml`` overrides it
(a contract price)::

    [llm.prices."google/gemini-2.5-flash"]
    input = 0.30      # USD per 1M prompt tokens
    output = 2.50     # USD per 1M completion tokens

A model is looked up as given (``provider:model`` too), then without the ``provider:`` prefix, then by
its last path part (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``). A model with no price has cost
``None`` — shown as "unknown", never as 0. Cached replies cost nothing (no request was made).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval.config import get_settings
from voproshalych_eval.llm.cache import run_call_rows

log = logging.getLogger(__name__)

#: When the default list prices were read (provider price pages / OpenRouter listing).
PRICES_AS_OF = "2025-10"
#: model -> (USD per 1M input tokens, USD per 1M output tokens). Models named by the methodology, their plain
#: OpenAI ids, the production bot's Mistral models, and the local llama.cpp model of ``make local-llm``.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "google/gemini-2.5-flash": (0.30, 2.50),
    "anthropic/claude-3.5-sonnet": (3.00, 15.00),
    "anthropic/claude-4.5-sonnet": (3.00, 15.00),
    "anthropic/claude-sonnet-4.5": (3.00, 15.00),
    "openai/gpt-4o-mini": (0.15, 0.60),
    "openai/gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "deepseek/deepseek-v3.2": (0.28, 0.42),
    "mistral-small-latest": (0.10, 0.30),
    "mistral-large-latest": (2.00, 6.00),
    "qwen2.5-1.5b": (0.0, 0.0),  # the local llama.cpp server: no money spent
}


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens; ``source``: default | edited | secrets."""

    model: str
    input_per_1m: float
    output_per_1m: float
    source: str = "default"

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call's tokens; None when the server reported no usage."""
        if prompt_tokens is None and completion_tokens is None:
            return None
        return ((prompt_tokens or 0) * self.input_per_1m + (completion_tokens or 0) * self.output_per_1m) / 1e6


def secrets_prices(settings: Any) -> dict[str, Price]:
    sec = getattr(settings, "secrets", None)
    llm = sec.get("llm") if isinstance(sec, Mapping) else None
    table = llm.get("prices") if isinstance(llm, Mapping) else None
    out: dict[str, Price] = {}
    if not isinstance(table, Mapping):
        return out
    for model, entry in table.items():
        if not isinstance(entry, Mapping):
            continue
        try:
            inp = float(entry.get("input", entry.get("input_per_1m")))
            outp = float(entry.get("output", entry.get("output_per_1m")))
        except (TypeError, ValueError):
            log.warning("secrets.toml [llm.prices.%s]: 'input' and 'output' must be numbers; ignored", model)
            continue
        if inp < 0 or outp < 0:
            log.warning("secrets.toml [llm.prices.%s]: negative price ignored", model)
            continue
        out[str(model)] = Price(str(model), inp, outp, "secrets")
    return out


def stored_prices(engine: Engine | None) -> dict[str, Price]:
    """The store's table (the defaults when there is no store or no table yet)."""
    if engine is None:
        return {m: Price(m, i, o) for m, (i, o) in DEFAULT_PRICES.items()}
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT model, input_per_1m, output_per_1m, source FROM eval.llm_prices")).all()
    except Exception:  # noqa: BLE001 - a store without the table: the defaults
        log.warning("eval.llm_prices unreadable; using the default prices", exc_info=True)
        return {m: Price(m, i, o) for m, (i, o) in DEFAULT_PRICES.items()}
    return {r[0]: Price(r[0], float(r[1]), float(r[2]), r[3]) for r in rows}


def price_table(engine: Engine | None = None, settings: Any = None) -> dict[str, Price]:
    """Prices in force: the store's table with ``[llm.prices]`` from secrets.toml on top."""
    if settings is None:
        settings = get_settings()
    return stored_prices(engine) | secrets_prices(settings)


def lookup(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model`` (exact, without ``provider:``, then by the last ``/`` part); None if unknown."""
    candidates = [model]
    if ":" in model:
        candidates.append(model.split(":", 1)[1])
    candidates += [c.rsplit("/", 1)[1] for c in list(candidates) if "/" in c]
    for c in candidates:
        if c in prices:
            return prices[c]
    return None


def set_price(engine: Engine, model: str, input_per_1m: float, output_per_1m: float) -> None:
    """Insert or change a model's price (source ``edited``)."""
    model = model.strip()
    if not model:
        raise ValueError("price table: the model name is empty")
    for name, v in (("input", input_per_1m), ("output", output_per_1m)):
        if v is None or not float(v) >= 0:
            raise ValueError(f"price table, model {model!r}, field {name}: must be a number >= 0, got {v!r}")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO eval.llm_prices(model, input_per_1m, output_per_1m, source) VALUES (:m, :i, :o, 'edited') "
                "ON CONFLICT (model) DO UPDATE SET input_per_1m = EXCLUDED.input_per_1m, "
                "output_per_1m = EXCLUDED.output_per_1m, source = 'edited', updated_at = now()"
            ),
            {"m": model, "i": float(input_per_1m), "o": float(output_per_1m)},
        )


def delete_price(engine: Engine, model: str) -> bool:
    """Remove a model's price (its cost becomes "unknown"); True if a row was removed."""
    with engine.begin() as conn:
        return bool(conn.execute(text("DELETE FROM eval.llm_prices WHERE model = :m"), {"m": model}).rowcount)


def save_price_table(engine: Engine, rows: list[Mapping[str, Any]]) -> dict[str, int]:
    """Replace the stored table by ``rows`` (``model``, ``input_per_1m``, ``output_per_1m``), all or nothing.

    Every row is validated first (a clear ``row N, field F`` error, nothing written); then changed rows are
    upserted (source ``edited``), unchanged ones kept, and models missing from ``rows`` deleted.
    Returns ``{"changed", "deleted"}``.
    """
    clean: dict[str, tuple[float, float]] = {}
    for i, r in enumerate(rows, 1):
        model = str(r.get("model") or "").strip()
        if not model:
            raise ValueError(f"price table, row {i}, field model: empty")
        if model in clean:
            raise ValueError(f"price table, row {i}, field model: {model!r} appears twice")
        vals = []
        for f in ("input_per_1m", "output_per_1m"):
            v = r.get(f)
            try:
                x = float(v)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise ValueError(f"price table, row {i} ({model}), field {f}: not a number ({v!r})") from None
            if not x >= 0 or x == float("inf"):
                raise ValueError(f"price table, row {i} ({model}), field {f}: must be >= 0, got {v!r}")
            vals.append(x)
        clean[model] = (vals[0], vals[1])
    current = stored_prices(engine)
    changed = {m: v for m, v in clean.items()
               if m not in current or (current[m].input_per_1m, current[m].output_per_1m) != v}
    deleted = [m for m in current if m not in clean]
    with engine.begin() as conn:
        for m, (i_, o_) in changed.items():
            conn.execute(
                text(
                    "INSERT INTO eval.llm_prices(model, input_per_1m, output_per_1m, source) VALUES (:m, :i, :o, 'edited') "
                    "ON CONFLICT (model) DO UPDATE SET input_per_1m = EXCLUDED.input_per_1m, "
                    "output_per_1m = EXCLUDED.output_per_1m, source = 'edited', updated_at = now()"
                ),
                {"m": m, "i": i_, "o": o_},
            )
        if deleted:
            conn.execute(text("DELETE FROM eval.llm_prices WHERE model = ANY(:ms)"), {"ms": deleted})
    return {"changed": len(changed), "deleted": len(deleted)}


def summarize_usage(per_model: Mapping[str, Mapping[str, Any]], prices: Mapping[str, Price]) -> dict[str, Any]:
    """Per-model tokens and money, and the total.

    ``per_model``: model -> ``{calls, cached, prompt_tokens, completion_tokens, no_usage}`` where ``no_usage``
    counts uncached calls whose reply carried no ``usage``. A model's ``cost_usd`` is None ("unknown")
    when it has no price or when some of its calls reported no usage; the total is None when any model's
    is. Returns ``{"per_model": {model: {..., cost_usd, price}}, "prompt_tokens", "completion_tokens",
    "cost_usd"}``.
    """
    out: dict[str, Any] = {}
    total_cost: float | None = 0.0
    tp = tc = 0
    for model, u in per_model.items():
        p = lookup(model, prices)
        pt, ct = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
        cost = None if p is None or u.get("no_usage") else p.cost(pt, ct)
        out[model] = {
            "calls": int(u.get("calls") or 0), "cached": int(u.get("cached") or 0), "prompt_tokens": pt,
            "completion_tokens": ct, "no_usage": int(u.get("no_usage") or 0), "cost_usd": cost,
            "price": None if p is None else {"input_per_1m": p.input_per_1m, "output_per_1m": p.output_per_1m,
                                             "source": p.source},
        }
        tp += pt
        tc += ct
        total_cost = None if total_cost is None or cost is None else total_cost + cost
    return {"per_model": out, "prompt_tokens": tp, "completion_tokens": tc,
            "cost_usd": total_cost if per_model else 0.0}


def format_cost(cost: float | None, lang: str = "en") -> str:
    """``$0.0123`` or "unknown" / "неизвестно" (never 0 for an unknown price)."""
    if cost is None:
        return "неизвестно" if lang == "ru" else "unknown"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"


def run_usage(engine: Engine, run_id: int, settings: Any = None) -> dict[str, Any]:
    """Tokens and money of one run, per model, from its logged calls (``eval.llm_calls``); every execution
    of the run (resumes included) counts. Also ``retries`` (requests repeated after an error), ``recovered``
    (calls that succeeded after one) and ``failed_calls``."""
    rows = run_call_rows(engine, run_id)  # eval.llm_calls is llm.cache's table
    per_model = {r[0]: {"calls": r[1], "cached": r[2], "prompt_tokens": r[3], "completion_tokens": r[4],
                        "no_usage": r[5]} for r in rows}
    out = summarize_usage(per_model, price_table(engine, settings))
    # repeated requests (retries and refused response formats) and calls that succeeded only after one
    out["retries"] = int(sum(r[6] for r in rows))
    out["recovered"] = int(sum(r[7] for r in rows))
    out["failed_calls"] = int(sum(r[8] for r in rows))
    return out
