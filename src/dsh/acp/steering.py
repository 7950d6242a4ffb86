"""Steering a running turn from the editor (the ecosystem's ACP extension, and an opt-in).

Two ways in, both ending in ``agent.steer`` (the text joins the running turn between
two model steps, logged as ``steering/message``):

* **``_session/steering``** (the extension method the Claude and Codex ACP agents ship,
  advertised as ``_meta.steering.supported: true`` in the ``initialize`` answer):
  ``{sessionId, prompt}`` answers ``{"outcome": "injected"}`` while a turn runs. With no
  turn running it starts one with the text (``startedNewTurn``; its output streams as
  usual and no prompt waits for it), unless the request says
  ``_meta.steering.idleBehavior: "promptRequired"``: then nothing is consumed and the
  answer is ``promptRequired`` (send it with ``session/prompt``).
* **A concurrent ``session/prompt``**, when the client opted in with
  ``clientCapabilities._meta.steering.sessionPrompt: true`` in ``initialize``: a prompt
  sent while the session's prompt is in flight steers that turn instead of being
  refused (``-32602``, the default). Its response comes when the turn it joined ends,
  with that turn's stop reason (``cancelled`` too when that turn is cancelled).
"""

from __future__ import annotations

from typing import Any, Final

STEERING_METHOD: Final = "_session/steering"
"""The extension method name on the wire."""

INITIALIZE_META: Final = {"steering": {"supported": True}}
"""What ``initialize`` adds under ``_meta``."""


def _steering(meta: Any) -> dict[str, Any]:
    value = meta.get("steering") if isinstance(meta, dict) else None
    return value if isinstance(value, dict) else {}


def steers_prompts(client_meta: Any) -> bool:
    """True when ``clientCapabilities._meta`` opts concurrent prompts into steering."""
    return _steering(client_meta).get("sessionPrompt") is True


def prompt_required(request_meta: Any) -> bool:
    """True when a ``_session/steering`` request must not start a turn of its own."""
    return _steering(request_meta).get("idleBehavior") == "promptRequired"
