"""How a tool call's raw ``arguments`` string reaches the tool (SPEC §8.5)."""

from __future__ import annotations

import json
from typing import Any


def parse_arguments(raw: str) -> Any:
    """Tool arguments as the tool sees them: ``{}`` when empty, the raw string when not JSON."""
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw
