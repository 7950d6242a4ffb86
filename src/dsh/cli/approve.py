"""The ``dsh chat`` answerer of ``approval/request``: ask on the terminal, y / n / always.

:class:`InlineApprover` answers for the chat's own agent only (any other agent's
request is delegated with ``next()``). On a terminal it prints the request (the
tool, what and why) and :data:`QUESTION`, and takes the next line typed as the
answer: ``y``/``yes`` allows the call once, ``a``/``always`` allows it and grants
the request's scope for the rest of the session (offered only when the request has
one), ``n``/``no`` rejects it, and whatever follows the ``n`` is the user's message
to the model (``n use the test database``). Anything else asks again. The lines
reach it through :meth:`InlineApprover.route`, which wraps the chat's input: while a
question is open the next line answers it instead of steering the agent.

Requests are asked one at a time, in order. Ctrl-C at the question cancels the turn
(the chat's interrupt handler does that), whose signal settles the open question
``cancelled`` and the call does not run; end of input rejects it. When stdin is not
a terminal nothing is asked: the answerer says on stderr that it could not ask and
how to allow such calls, then delegates, so the request fails closed unless another
answerer owns it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Final, TextIO

from dsh.core.approval import ApprovalDecision, ApprovalRequest

QUESTION: Final = "allow? [y]es / [n]o / [a]lways "
QUESTION_ONCE: Final = "allow? [y]es / [n]o "
AGAIN: Final = "answer y (allow once), n (reject; add a message for the model after it) or a (always)"
AGAIN_ONCE: Final = "answer y (allow once) or n (reject; add a message for the model after it)"
ARGUMENTS_PREVIEW: Final = 400
"""How many characters of a call's arguments the question shows."""

REJECTED_AT_END: Final = ApprovalDecision(outcome="rejected", message="the user closed the input without answering")


def parse_answer(line: str, *, always: bool) -> ApprovalDecision | None:
    """The decision a typed answer stands for; None when it is not an answer (ask again)."""
    word, _, rest = line.strip().partition(" ")
    word = word.lower()
    if word in ("y", "yes"):
        return ApprovalDecision(outcome="allowed-once")
    if always and word in ("a", "always"):
        return ApprovalDecision(outcome="allowed-always")
    if word in ("n", "no"):
        message = rest.strip()
        return (
            ApprovalDecision(outcome="rejected", message=message) if message else ApprovalDecision(outcome="rejected")
        )
    return None


def describe(request: ApprovalRequest) -> str:
    """The request as the user reads it: the tool, what and why, the arguments (shortened)."""
    try:
        arguments = json.dumps(request.arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        arguments = repr(request.arguments)
    if len(arguments) > ARGUMENTS_PREVIEW:
        arguments = arguments[:ARGUMENTS_PREVIEW] + "…"
    lines = [f"{request.tool_name} needs your approval: {request.reason}", f"  {arguments}"]
    if request.grant:
        lines.append(f"  (always allows {request.grant} for the rest of this session)")
    return "\n".join(lines)


def unattended_line(request: ApprovalRequest) -> str:
    """What the chat says on stderr for a request it cannot ask (stdin is not a terminal)."""
    return (
        f"dsh: {request.tool_name} needs approval ({request.reason}) and stdin is not a terminal to ask on: "
        "it is not allowed; run with --yes to allow what would be asked, or pick a --permission-mode that covers it"
    )


class InlineApprover:
    """See the module docstring. ``show`` prints a question (no newline added) on the chat's output.

    ``interactive`` says whether stdin is a terminal; ``errors`` receives the line of
    an unattended request (default: ``sys.stderr``, looked up when used).
    """

    def __init__(
        self,
        agent: object,
        show: Callable[[str], None],
        *,
        interactive: bool,
        errors: TextIO | None = None,
    ) -> None:
        self._agent = agent
        self._show = show
        self._interactive = interactive
        self._errors = errors
        self._turn = asyncio.Lock()
        self._answer: asyncio.Future[str | None] | None = None
        self._ended = False

    @property
    def asking(self) -> bool:
        """True while a question waits for its answer."""
        return self._answer is not None

    async def route(self, lines: AsyncIterable[str]) -> AsyncIterator[str]:
        """The chat's input: every line, except those that answer a question."""
        try:
            async for line in lines:
                if self._answer is not None and not self._answer.done():
                    self._answer.set_result(line)
                    continue
                yield line
        finally:
            self._ended = True
            if self._answer is not None and not self._answer.done():
                self._answer.set_result(None)

    def on_request(
        self, request: ApprovalRequest, next: Callable[[], Awaitable[ApprovalDecision]]
    ) -> Awaitable[ApprovalDecision]:
        """The ``approval/request`` listener."""
        if request.agent is not self._agent:
            return next()
        if not self._interactive:
            self._unattended(request)
            return next()
        return self._ask(request)

    def _unattended(self, request: ApprovalRequest) -> None:
        errors = self._errors if self._errors is not None else sys.stderr
        print(unattended_line(request), file=errors, flush=True)

    async def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        always = bool(request.grant)
        async with self._turn:
            self._show(f"\n{describe(request)}\n")
            while True:
                line = await self._line(QUESTION if always else QUESTION_ONCE)
                if line is None:
                    return REJECTED_AT_END
                decision = parse_answer(line, always=always)
                if decision is not None:
                    return decision
                self._show(f"{AGAIN if always else AGAIN_ONCE}\n")

    async def _line(self, question: str) -> str | None:
        """Show ``question`` and wait for the next line (None at end of input)."""
        if self._ended:
            return None
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._answer = answer
        self._show(question)
        try:
            await asyncio.wait({answer})
        finally:
            self._answer = None
        return answer.result()
