"""Every frame the goldens pin is a typed model of the official ACP SDK (``acp.schema``).

The snapshot tests prove the bridge writes exactly these frames; here each
``session/update`` notification and each ``initialize`` / ``session/new`` /
``session/prompt`` answer must validate as the SDK's model and dump back to the same
JSON value (aliases, unset fields left out), so the wire stays what the SDK speaks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from acp import schema
from tests.examples.acp.scenarios import SCENARIOS


def _model_of(frame: dict[str, Any]) -> tuple[type[BaseModel], Any] | None:
    if frame.get("method") == "session/update":
        return schema.SessionNotification, frame["params"]
    result = frame.get("result")
    if not isinstance(result, dict):
        return None
    for key, model in (
        ("protocolVersion", schema.InitializeResponse),
        ("sessionId", schema.NewSessionResponse),
        ("stopReason", schema.PromptResponse),
    ):
        if key in result:
            return model, result
    return None


def _goldens() -> list[Path]:
    return [scenario.directory() / "stdout.golden.jsonl" for scenario in SCENARIOS]


@pytest.mark.parametrize("golden", _goldens(), ids=lambda path: path.parent.name)
def test_every_golden_frame_is_an_sdk_schema_model_and_round_trips(golden: Path) -> None:
    """each pinned notification and answer validates as acp.schema and dumps back unchanged"""
    checked = 0
    for line in golden.read_text(encoding="utf-8").splitlines():
        frame = json.loads(line)
        typed = _model_of(frame)
        if typed is None:
            continue
        model, value = typed
        parsed = model.model_validate(value)
        assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == value, line
        checked += 1
    assert checked > 0


def test_the_models_are_chosen_by_shape() -> None:
    """(harness) results that are no typed answer (``{}``, ``null``) and errors are skipped"""
    assert _model_of({"jsonrpc": "2.0", "id": 1, "result": {}}) is None
    assert _model_of({"jsonrpc": "2.0", "id": 1, "result": None}) is None
    assert _model_of({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}}) is None
