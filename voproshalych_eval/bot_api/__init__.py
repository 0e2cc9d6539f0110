"""Talking to a bot's own HTTP API (Tier 3's API mode).

* :mod:`.spec` — what a request looks like (:class:`BotApiSpec`: method, URL and JSON body templates,
  headers with ``${ENV}`` references, JSON paths, timeout, rate limit, outcome rules) and the named
  presets (``voproshalych`` — the production QA service, ``search-rag`` — the bot team's QA method's ``GET`` form);
* :mod:`.client` — one question in, one :class:`BotReply` out (answered / not_found / banned / error),
  with retries of transport failures counted by kind and a requests-per-second limit;
* :mod:`.profiles` — named bot profiles in ``eval.bot_profiles`` (never a secret: only variable names).
"""

from voproshalych_eval.bot_api.spec import OUTCOMES, PRESETS, BotApiSpec, OutcomeRule, spec_from_options

__all__ = ["OUTCOMES", "PRESETS", "BotApiSpec", "OutcomeRule", "spec_from_options"]
