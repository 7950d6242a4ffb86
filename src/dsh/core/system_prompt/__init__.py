"""The ``system_prompt`` core service: ordered prompt sections plus tool schemas (SPEC §5)."""

from dsh.core.system_prompt.assembly import PromptAssembly, PromptSection, render_prompt
from dsh.core.system_prompt.events import SYSTEM_PROMPT_ASSEMBLE, SYSTEM_PROMPT_CHANGE
from dsh.core.system_prompt.service import SYSTEM_PROMPT, SystemPrompt, ToolProvider

__all__ = [
    "SYSTEM_PROMPT",
    "SYSTEM_PROMPT_ASSEMBLE",
    "SYSTEM_PROMPT_CHANGE",
    "PromptAssembly",
    "PromptSection",
    "SystemPrompt",
    "ToolProvider",
    "render_prompt",
]
