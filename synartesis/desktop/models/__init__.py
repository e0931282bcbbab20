"""Model adapters behind one small interface.

An adapter turns the window's neutral conversation into one provider's wire format, streams the
answer back as :class:`TextDelta` / :class:`ToolCall` / :class:`Finished` events, and raises
:class:`ModelError` with a sentence a person can act on (a bad key, an unreachable endpoint, a
model without tool support). Two wire formats cover the field: OpenAI-compatible
``/chat/completions`` with ``tools`` (OpenAI, Gemini's and Mistral's compatible endpoints,
Ollama, LM Studio, vLLM) and Anthropic Messages with ``tool_use``. Both are plain httpx:
each needs one POST and a server-sent-events reader, which is smaller than either vendor SDK
and adds no dependency (httpx comes with mcp).

Neutral messages (plain dicts):
- ``{"role": "user", "content": str}``
- ``{"role": "assistant", "content": str, "tool_calls": [{"id", "name", "arguments": dict}]}``
- ``{"role": "tool", "tool_call_id": str, "name": str, "content": str, "is_error": bool}``

Tools: ``{"name", "description", "parameters": JSON Schema}``. Cancelling the task that
iterates :meth:`Adapter.stream` closes the HTTP stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Protocol

__all__ = ["TextDelta", "ToolCall", "Finished", "ModelError", "Profile", "PRESETS", "Adapter", "adapter_for",
           "preset"]


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    """A complete tool call. ``bad_arguments``: the raw text when it was not a JSON object."""

    id: str
    name: str
    arguments: dict
    bad_arguments: str | None = None


@dataclass(frozen=True)
class Finished:
    reason: str  # the provider's stop/finish reason, as given


class ModelError(Exception):
    """A model call failed. ``kind``: ``auth``, ``unreachable``, ``no_tools``, ``model``,
    ``rate_limit``, ``protocol`` or ``http``; ``message`` says what to do about it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Profile:
    """Where a model lives. ``kind``: ``openai`` (chat completions) or ``anthropic`` (Messages).

    ``id`` names the key in the keychain; ``needs_key`` False for local servers (Ollama, …).
    """

    id: str
    kind: str
    label: str
    base_url: str
    model: str
    needs_key: bool = True
    max_tokens: int = 4096
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "label": self.label, "baseUrl": self.base_url,
                "model": self.model, "needsKey": self.needs_key}


PRESETS: tuple[Profile, ...] = (
    Profile("anthropic", "anthropic", "Claude (Anthropic)", "https://api.anthropic.com", "claude-sonnet-4-5"),
    Profile("openai", "openai", "OpenAI", "https://api.openai.com/v1", "gpt-4.1-mini"),
    Profile("gemini", "openai", "Gemini (OpenAI-compatible)", "https://generativelanguage.googleapis.com/v1beta/openai",
            "gemini-2.5-flash"),
    Profile("mistral", "openai", "Mistral", "https://api.mistral.ai/v1", "mistral-small-latest"),
    Profile("ollama", "openai", "Ollama (this machine)", "http://127.0.0.1:11434/v1", "llama3.1", needs_key=False),
    Profile("lmstudio", "openai", "LM Studio (this machine)", "http://127.0.0.1:1234/v1", "local-model", needs_key=False),
    Profile("vllm", "openai", "vLLM (this machine)", "http://127.0.0.1:8000/v1", "local-model", needs_key=False),
    Profile("custom", "openai", "Other /v1/chat/completions endpoint", "", "", needs_key=False),
)


def preset(profile_id: str) -> Profile | None:
    return next((p for p in PRESETS if p.id == profile_id), None)


class Adapter(Protocol):
    """One provider's wire format."""

    def stream(self, messages: list[dict], tools: list[dict], system: str | None) -> AsyncIterator[Any]:
        """Stream one model turn: TextDelta*, ToolCall*, then Finished. Raises ModelError."""
        ...


def adapter_for(profile: Profile, key: str | None, **kw: Any) -> Adapter:
    """The adapter for ``profile`` with ``key`` (None when the endpoint needs none).

    Raises:
        ModelError: ``auth`` when the profile needs a key and none was saved; ``model`` when
            the endpoint or model name is missing.
    """
    if not profile.base_url:
        raise ModelError("model", "give the endpoint's base URL (e.g. http://127.0.0.1:11434/v1) in the model settings")
    if not profile.model:
        raise ModelError("model", "give the model's name in the model settings")
    if profile.needs_key and not key:
        raise ModelError("auth", f"{profile.label} needs an API key: paste it in the model settings")
    if profile.kind == "anthropic":
        from synartesis.desktop.models.anthropic import AnthropicMessages
        return AnthropicMessages(profile, key, **kw)
    from synartesis.desktop.models.openai import ChatCompletions
    return ChatCompletions(profile, key, **kw)

