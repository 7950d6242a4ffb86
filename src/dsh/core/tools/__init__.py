"""The ``tools`` core service: the tool registry, the ``tools/execute`` seam, the schema DSL,
Pythonic tool authoring and the presentation vocabulary (SPEC §6).

``ToolErrorInfo`` is the session's (:mod:`dsh.core.session.types`), re-exported here
for tool authors: one definition, two addresses.
"""

from dsh.core.session.types import ToolErrorInfo
from dsh.core.tools.arguments import parse_arguments
from dsh.core.tools.define import define_tool
from dsh.core.tools.events import TOOLS_CHANGE, TOOLS_EXECUTE
from dsh.core.tools.failure import failure_message, tool_error_result
from dsh.core.tools.model_tool import (
    ToolReturn,
    as_content,
    define_model_tool,
    model_parameters,
    parse_model_args,
    tool_from_function,
)
from dsh.core.tools.presentation import (
    ToolCallKind,
    ToolCallPresentation,
    ToolDiff,
    ToolLocation,
    ToolResultPresentation,
    ToolTerminal,
)
from dsh.core.tools.registry import TOOLS, ToolRegistry
from dsh.core.tools.schema import (
    SchemaProp,
    SchemaSpec,
    SchemaType,
    schema_spec_to_json_schema,
    validate_args,
)
from dsh.core.tools.types import (
    PresentCall,
    PresentResult,
    ToolDefinition,
    ToolExecute,
    ToolExecution,
    ToolExecutionResult,
    ToolResult,
)

__all__ = [
    "TOOLS",
    "TOOLS_CHANGE",
    "TOOLS_EXECUTE",
    "PresentCall",
    "PresentResult",
    "SchemaProp",
    "SchemaSpec",
    "SchemaType",
    "ToolCallKind",
    "ToolCallPresentation",
    "ToolDefinition",
    "ToolDiff",
    "ToolErrorInfo",
    "ToolExecute",
    "ToolExecution",
    "ToolExecutionResult",
    "ToolLocation",
    "ToolRegistry",
    "ToolResult",
    "ToolResultPresentation",
    "ToolReturn",
    "ToolTerminal",
    "as_content",
    "define_model_tool",
    "define_tool",
    "failure_message",
    "model_parameters",
    "parse_arguments",
    "parse_model_args",
    "schema_spec_to_json_schema",
    "tool_error_result",
    "tool_from_function",
    "validate_args",
]
