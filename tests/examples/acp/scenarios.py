"""The registered snapshot scenarios and where their fixtures live (SPEC §16.5).

The recorded cases of the reference implementation live in
``tests/examples/acp/reference/`` (a copy kept in the repository; they are read-only
data: record and update never rewrite them, and a missing folder fails the suite
rather than skipping it); the cases authored here live in
``tests/examples/acp/snapshots/``. Each registered name must be found in exactly one
of the two roots.

A case directory holds ``input.json`` (the client steps), ``session.jsonl`` (the
recorded log, whose ``assistant/chunk`` events are the model script; a header-only
placeholder when the case has no model turn or is authored with an override),
``stdout.golden.jsonl``, ``session.golden.jsonl`` (cases with a model turn) and,
optionally, ``replay.override.json`` and ``workspace/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REFERENCE_ROOT = Path(__file__).resolve().parent / "reference"
LOCAL_ROOT = Path(__file__).resolve().parent / "snapshots"
ROOTS = (REFERENCE_ROOT, LOCAL_ROOT)
REQUIRED_FILES = ("input.json", "session.jsonl", "stdout.golden.jsonl")


@dataclass(frozen=True)
class Scenario:
    """One registered case: does it run a model turn, was it recorded against the real API."""

    name: str
    model_turn: bool
    recorded: bool

    def directory(self) -> Path:
        """The one case directory holding this scenario (AssertionError when none or both)."""
        found = [root / self.name for root in ROOTS if (root / self.name).is_dir()]
        assert len(found) == 1, f"scenario {self.name!r} must be in exactly one of {[str(r) for r in ROOTS]}: {found}"
        return found[0]

    def steps(self) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = json.loads((self.directory() / "input.json").read_text(encoding="utf-8"))["steps"]
        return steps


SCENARIOS = (
    Scenario("handshake", model_turn=False, recorded=False),
    Scenario("reject-extra-dirs", model_turn=False, recorded=False),
    Scenario("text-turn", model_turn=True, recorded=True),
    Scenario("tool-call-turn", model_turn=True, recorded=True),
    Scenario("workspace-edit", model_turn=True, recorded=True),
    Scenario("multi-turn", model_turn=True, recorded=True),
    Scenario("error-finish", model_turn=True, recorded=False),
    Scenario("cancel", model_turn=True, recorded=False),
)
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


def case_directories() -> list[Path]:
    """Every case directory found under both roots (a missing reference root raises)."""
    if not REFERENCE_ROOT.is_dir():
        raise AssertionError(
            f"the reference conformance folder {REFERENCE_ROOT} is missing: restore "
            "tests/examples/acp/reference/ from the repository"
        )
    return sorted(path for root in ROOTS if root.is_dir() for path in root.iterdir() if path.is_dir())
