"""ACP model selection: the ``model`` session config option and the ``model/select`` event.

The models a session may switch to are the ones the tree's ``llm`` service serves
(``llm.models()``: the adapters' registered names, which is also what ``--model``
chooses among); the current one is the agent's ``AgentOptions.model``. Both are
advertised in the ``session/new`` / ``session/load`` / ``session/fork`` answers as one
``configOptions`` entry (ACP schema: ``type: "select"``, ``category: "model"``, id
``model``), and changed with ``session/set_config_option`` (``configId: "model"``) or
the older ``session/set_model`` (``modelId``). A name the ``llm`` service does not serve
is ``-32602`` naming the available ones.

**Durability.** A switch takes effect at once (the next model request of the session
uses it, a turn already running included) and is logged as ``model/select``
(:class:`~dsh.core.session.ModelSelectEvent`) at the start of the next turn: session
events belong inside a turn, and a choice no request used never became part of the
conversation. A resumed session (``session/load``, a fork, ``dsh run --resume``) takes
the last logged ``model/select``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

CONFIG_ID: Final = "model"
"""The ``configId`` of the model option."""


def model_option(models: Sequence[str], current: str | None) -> dict[str, Any]:
    """The ``configOptions`` entry for ``models`` with ``current`` selected.

    A current model the ``llm`` service does not list (a pass-through name) is offered
    too, first, so the selector always shows what the session uses.
    """
    names = list(models)
    if current is not None and current not in names:
        names.insert(0, current)
    return {
        "id": CONFIG_ID,
        "name": "Model",
        "description": "The model this session's requests use",
        "category": "model",
        "type": "select",
        "currentValue": current if current is not None else (names[0] if names else ""),
        "options": [{"value": name, "name": name} for name in names],
    }


def unknown_model_message(model: str, models: Sequence[str]) -> str:
    """The ``-32602`` text for a model nobody serves."""
    available = ", ".join(models) if models else "none (the tree serves no model)"
    return f'unknown model "{model}": choose one of the available models: {available}'
