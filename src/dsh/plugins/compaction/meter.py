"""The token meter: how big the next request of a session is, cheaply, before each step.

The provider measured the previous request: its ``usage`` (input, cached input and
output tokens) is logged after the step's answer. The next request is that request,
plus the answer, plus what was logged since (tool results, steering, a new prompt):
the meter adds a chars/4 estimate (:func:`~.history.estimate`) of the messages
past the ones the previous request had. A provider that reports no usage gets the
previous request's measure plus the estimate of the messages added since. Only the
first request in this process and the first after a compaction are estimated whole.
Per step it reads only the events logged since the previous request, from the end,
and encodes only the new messages.
"""

from __future__ import annotations

from dsh.core.llm import GenerateOptions
from dsh.core.session import Session, UsageEvent
from dsh.plugins.compaction.history import estimate, estimate_request


class Meter:
    """One session's meter: the previous request's message count and log position."""

    __slots__ = ("count", "seq", "tokens")

    def __init__(self) -> None:
        self.count = 0
        self.seq: int | None = None  # the log position of the previous request, None: measure afresh
        self.tokens: int | None = None  # the previous request's measure

    def reset(self) -> None:
        """Forget the previous request (the history was rebuilt): the next measure estimates everything."""
        self.seq = None
        self.tokens = None

    def sent(self, session: Session, request: GenerateOptions, tokens: int | None) -> None:
        """Note that ``request``, measured ``tokens`` (None: not measured), goes out now."""
        self.count = len(request.messages)
        self.seq = session.seq
        self.tokens = tokens

    def measure(self, session: Session, request: GenerateOptions) -> int:
        """The estimated size of ``request`` in tokens (see the module docstring)."""
        messages = request.messages
        since = self.seq
        if since is not None and self.count < len(messages):
            for event in reversed(session.events):
                if event.seq < since:
                    break
                if type(event) is UsageEvent:
                    usage = event.data.usage
                    measured = (
                        usage.input_tokens
                        + (usage.cache_read_tokens or 0)
                        + (usage.cache_write_tokens or 0)
                        + usage.output_tokens
                    )
                    return measured + estimate(messages[self.count + 1 :])
            if self.tokens is not None:
                return self.tokens + estimate(messages[self.count :])
        return estimate_request(request.system, request.tools, messages)
