"""Wire-server replies that play the model's part in the keyless variants."""

from __future__ import annotations

import json

from dsh.testing.wire import Finish, Reply, tool_call


def bash_reply(call_id: str, command: str) -> Reply:
    """The model calls ``bash`` with ``command``."""
    arguments = json.dumps({"command": command, "description": f"Run {command}"})
    return Reply([*tool_call(0, call_id, "bash", arguments, pieces=3), Finish("tool_calls")])
