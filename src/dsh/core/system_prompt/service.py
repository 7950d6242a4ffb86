"""The ``system_prompt`` service: a registry of sections and tool-schema providers (SPEC §5).

Plugins contribute through their own context (``ctx[SYSTEM_PROMPT].section(...)``);
each contribution is an effect of the *calling* plugin's fiber, so unloading that
plugin removes it. The agent loop calls :meth:`SystemPrompt.assemble` once per step.
Sections and schemas are immutable and handed out as they are; each assembly gets
lists of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TypeVar

from dsh.core.llm.types import ToolSchema
from dsh.core.system_prompt.assembly import PromptAssembly, PromptSection
from dsh.core.system_prompt.events import SYSTEM_PROMPT_ASSEMBLE, SYSTEM_PROMPT_CHANGE
from dsh.kernel import Context, Disposer, Effect, Service, ServiceKey

T = TypeVar("T")

ToolProvider = Callable[[], list[ToolSchema]]
"""Returns the tool schemas to announce; called lazily at every assembly."""


def _remove_identical(items: list[T], item: T) -> None:
    """Remove ``item`` (which must be present) by identity, not equality."""
    del items[next(index for index, candidate in enumerate(items) if candidate is item)]


def _order(section: PromptSection) -> float:
    return section.order


async def _resolved(assembly: PromptAssembly) -> PromptAssembly:
    return assembly


class SystemPrompt(Service):
    """Class plugin providing :data:`SYSTEM_PROMPT` (no config)."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, SYSTEM_PROMPT)
        self._sections: list[PromptSection] = []
        self._providers: list[ToolProvider] = []

    def _contribute(self, items: list[T], item: T, label: str) -> Effect:
        """Add ``item`` as an effect of the caller; a raising change listener rolls it back."""
        notify = self.own_ctx

        def body() -> Generator[Disposer, None, None]:
            items.append(item)

            def remove() -> None:
                _remove_identical(items, item)
                notify.emit(SYSTEM_PROMPT_CHANGE)

            yield remove
            notify.emit(SYSTEM_PROMPT_CHANGE)

        return self.ctx.effect(body, label)

    def section(self, section: PromptSection) -> Effect:
        """Add ``section`` until the returned effect (or the caller's fiber) is disposed.

        Emits ``system-prompt/change``; if a listener raises, the section is removed
        again and the error propagates. Removal is by identity.
        """
        return self._contribute(self._sections, section, f"system prompt section {section.name}")

    def tools(self, provider: ToolProvider) -> Effect:
        """Add a tool-schema provider; same ownership and rollback rules as :meth:`section`."""
        return self._contribute(self._providers, provider, "system prompt tool provider")

    async def assemble(self) -> PromptAssembly:
        """Build a fresh snapshot and pass it through the ``system-prompt/assemble`` waterfall.

        The sections are sorted stably by ``order``; the tool schemas are every
        provider's, concatenated in provider registration order (every provider is
        called on every assembly). Both lists are new; the values in them are shared.
        A raise from a provider or a listener propagates.
        """
        sections = sorted(self._sections, key=_order)
        tools = [schema for provider in tuple(self._providers) for schema in provider()]
        assembly = PromptAssembly(sections=sections, tools=tools)
        return await self.ctx.waterfall(SYSTEM_PROMPT_ASSEMBLE, assembly, inner=lambda: _resolved(assembly))


SYSTEM_PROMPT: ServiceKey[SystemPrompt] = ServiceKey("system_prompt")
