"""The ``tools`` service: the tool registry and the ``tools/execute`` seam (SPEC §6.2).

Tool plugins register :class:`ToolDefinition` objects through their own context
(``ctx[TOOLS].register(...)``); each registration is an effect of the calling
plugin's fiber, so unloading that plugin unregisters its tools. The registry feeds
its schemas into the system prompt, and runs every call through the
``tools/execute`` waterfall, where sandbox, permission and hook plugins sit.

Schemas and results are immutable values handed out as they are: each definition
builds its :class:`~dsh.core.llm.ToolSchema` once (:attr:`ToolDefinition.schema`),
and every caller shares it.
"""

from __future__ import annotations

import inspect
from collections.abc import Generator
from typing import Any, ClassVar

from dsh.core.errors import ToolNotFoundError
from dsh.core.llm.types import ToolSchema
from dsh.core.system_prompt import SYSTEM_PROMPT
from dsh.core.tools.events import TOOLS_CHANGE, TOOLS_EXECUTE
from dsh.core.tools.failure import tool_error_result
from dsh.core.tools.types import ToolDefinition, ToolExecution, ToolExecutionResult
from dsh.kernel import Context, Disposer, Effect, Service, ServiceKey


class ToolRegistry(Service):
    """Class plugin providing :data:`TOOLS`; needs ``system_prompt``, no config.

    On construction it announces its tools' schemas to the system prompt as a tool
    provider owned by the registry's own fiber.
    """

    inject: ClassVar[list[str]] = ["system_prompt"]

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, TOOLS)
        self._tools: dict[str, ToolDefinition] = {}
        ctx[SYSTEM_PROMPT].tools(self.schemas)

    def register(self, definition: ToolDefinition) -> Effect:
        """Register ``definition`` until the returned effect (or the caller's fiber) is disposed.

        Raises ``ValueError`` if the name is taken, before changing anything. Emits
        ``tools/change``; if a listener raises, the tool is unregistered again and
        the error propagates (the name stays free).
        """
        name = definition.name
        tools = self._tools
        notify = self.own_ctx

        def body() -> Generator[Disposer, None, None]:
            if name in tools:
                raise ValueError(f'tool "{name}" is already registered')
            tools[name] = definition

            def unregister() -> None:
                del tools[name]
                notify.emit(TOOLS_CHANGE)

            yield unregister
            notify.emit(TOOLS_CHANGE)

        return self.ctx.effect(body, f"tool {name}")

    def get(self, name: str) -> ToolDefinition | None:
        """The registered definition named ``name``, or None."""
        return self._tools.get(name)

    def schemas(self) -> list[ToolSchema]:
        """Model-facing schemas in registration order (a new list, shared values).

        Each is ``{name, description, parameters[, strict]}`` (see
        :attr:`ToolDefinition.schema`); presenters and ``execute`` never reach the model.
        """
        return [tool.schema for tool in self._tools.values()]

    async def execute(self, execution: ToolExecution) -> ToolExecutionResult:
        """Run one call through the ``tools/execute`` waterfall; never raises ``Exception``.

        An unknown tool, a raising tool and a raising listener all become an
        ``isError`` result (see :mod:`dsh.core.tools.failure`). Cancellation
        (``asyncio.CancelledError``) propagates untouched.
        """

        try:
            result: Any = self.ctx.waterfall(TOOLS_EXECUTE, execution, inner=lambda: self._run(execution))
            if inspect.isawaitable(result):
                result = await result
        except Exception as error:
            return tool_error_result(execution.call_id, error)
        return result  # type: ignore[no-any-return]

    async def _run(self, execution: ToolExecution) -> ToolExecutionResult:
        """The end of the waterfall: look the tool up and run it; any failure becomes an error result."""
        try:
            tool = self._tools.get(execution.name)
            if tool is None:
                raise ToolNotFoundError(execution.name)
            content = await tool.execute(execution.arguments, execution)
        except Exception as error:
            return tool_error_result(execution.call_id, error)
        return ToolExecutionResult(
            call_id=execution.call_id,
            content=content if type(content) is tuple else tuple(content),
            is_error=False,
        )


TOOLS: ServiceKey[ToolRegistry] = ServiceKey("tools")
