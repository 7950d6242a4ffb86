"""dsh core: the interface services every plugin speaks (llm, sessions, persistence, system prompt,
tools, agents, bash) and their vocabulary. No concrete loop logic lives here.

Import from the subpackages (``from dsh.core.llm import LLM``).
"""

__all__: list[str] = []
