"""The context on whose behalf code is running (caller attribution, SPEC §1.2).

The kernel sets this while it runs a plugin's ``apply``, a listener, or a method
called through a service handle (``ctx[KEY].method()``); tasks started meanwhile
inherit it. :attr:`Service.ctx` reads it, so every effect or listener a service
registers on a caller's behalf is owned by that caller's fiber, transitively.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh.kernel.context import Context

current_context: ContextVar[Context | None] = ContextVar("dsh_current_context", default=None)
