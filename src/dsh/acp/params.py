"""The request params the bridge accepts, checked at the wire edge (ACP v1 schema subset).

A failure raises pydantic's ``ValidationError``, which the connection answers with
``-32602 Invalid params`` and the problems under ``data``. Unknown keys are ignored
(the protocol grows by adding fields). The bridge reads the validated models, never
the raw JSON: a prompt's blocks are :data:`PromptBlock` values, told apart by class.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class ClientCapabilities(_Params):
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    fs: dict[str, Any] | None = None


class InitializeParams(_Params):
    protocolVersion: int
    clientCapabilities: ClientCapabilities | None = None


class AuthenticateParams(_Params):
    methodId: str


class NewSessionParams(_Params):
    cwd: str
    mcpServers: list[Any]
    additionalDirectories: list[str] | None = None


class LoadSessionParams(NewSessionParams):
    sessionId: str


class TextPromptBlock(_Params):
    type: Literal["text"]
    text: str


class ImagePromptBlock(_Params):
    type: Literal["image"]
    data: str
    mimeType: str


class AudioPromptBlock(_Params):
    type: Literal["audio"]
    data: str
    mimeType: str


class ResourceLinkPromptBlock(_Params):
    type: Literal["resource_link"]
    name: str
    uri: str


class EmbeddedResourcePromptBlock(_Params):
    type: Literal["resource"]
    resource: dict[str, Any]


PromptBlock = Annotated[
    TextPromptBlock | ImagePromptBlock | AudioPromptBlock | ResourceLinkPromptBlock | EmbeddedResourcePromptBlock,
    Field(discriminator="type"),
]


class PromptParams(_Params):
    sessionId: str
    prompt: list[PromptBlock]


class CancelParams(_Params):
    sessionId: str


class SetConfigOptionParams(_Params):
    sessionId: str
    configId: str
    value: str


class SetModelParams(_Params):
    sessionId: str
    modelId: str


class ForkSessionParams(NewSessionParams):
    sessionId: str
    mcpServers: list[Any] = Field(default_factory=list)


class ListSessionsParams(_Params):
    cwd: str | None = None
    cursor: str | None = None
