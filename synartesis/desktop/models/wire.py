"""What both adapters share: one streamed POST, a server-sent-events reader, and error texts a
person can act on (the provider's own message is kept, cut, with the key never echoed)."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import httpx

from synartesis.desktop.models import ModelError, Profile

__all__ = ["HttpAdapter", "post_stream", "sse_events", "parse_arguments"]

_TOOL_WORDS = ("does not support tools", "tool use is not supported", "tools is not supported",
               "tool choice", "tool_choice", "function calling", "does not support function", "tools are not supported",
               "enable-auto-tool-choice", "tool calling")


class HttpAdapter:
    """What every adapter holds: its profile, the key (None when the endpoint needs none) and
    the read timeout in seconds."""

    def __init__(self, profile: Profile, key: str | None, timeout: float = 120.0) -> None:
        self.profile = profile
        self.key = key
        self.timeout = timeout


def _provider_message(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300]
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        msg = err.get("message") or err.get("type") or json.dumps(err)
    elif isinstance(err, str):
        msg = err
    elif isinstance(data, dict) and isinstance(data.get("message"), str):
        msg = data["message"]
    else:
        msg = text
    return str(msg)[:300]


def http_error(profile: Profile, status: int, body: bytes, key: str | None, sent_tools: bool) -> ModelError:
    """The ModelError for a non-2xx answer."""
    said = _provider_message(body)
    if key:
        said = said.replace(key, "…")
    where = f"{profile.label} ({profile.base_url})"
    if status in (401, 403):
        return ModelError("auth", f"{where} refused the API key (HTTP {status}: {said}); paste a valid key in the model settings")
    if sent_tools and status in (400, 404, 422, 500, 501) and any(w in said.lower() for w in _TOOL_WORDS):
        return ModelError("no_tools", f"the model {profile.model} at {where} does not support tool calls ({said}); "
                          "pick a model that does, or switch every server off for a plain conversation")
    if status == 404:
        return ModelError("model", f"{where} has no model {profile.model!r} or no such endpoint (HTTP 404: {said})")
    if status == 429:
        return ModelError("rate_limit", f"{where} is rate-limiting this key (HTTP 429: {said}); wait and try again")
    return ModelError("http", f"{where} answered HTTP {status}: {said}")


@asynccontextmanager
async def post_stream(profile: Profile, url: str, headers: dict[str, str], body: dict, key: str | None,
                      sent_tools: bool, timeout: float = 120.0) -> AsyncIterator[httpx.Response]:
    """POST ``body`` and yield the streaming response once it is 2xx.

    Raises:
        ModelError: unreachable (connect error, timeout), or a non-2xx answer (see :func:`http_error`).
    """
    limits = httpx.Timeout(timeout, connect=10.0)
    try:
        async with httpx.AsyncClient(timeout=limits) as client:
            async with client.stream("POST", url, headers=headers, json=body) as resp:
                if resp.status_code >= 400:
                    raise http_error(profile, resp.status_code, await resp.aread(), key, sent_tools)
                yield resp
    except httpx.TimeoutException as exc:
        raise ModelError("unreachable", f"{profile.label} at {profile.base_url} did not answer in time ({type(exc).__name__})") from None
    except httpx.TransportError as exc:  # connect refused, DNS, TLS, dropped connection
        raise ModelError("unreachable", f"cannot reach {profile.label} at {profile.base_url}: {exc or type(exc).__name__}") from None


async def sse_events(resp: httpx.Response) -> AsyncIterator[tuple[str | None, str]]:
    """Server-sent events as ``(event name or None, data)``; multi-line data joined by newlines."""
    event: str | None = None
    data: list[str] = []
    async for line in resp.aiter_lines():
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event, "\n".join(data)


def parse_arguments(raw: str) -> tuple[dict, str | None]:
    """A tool call's streamed argument text as a dict; ``(dict, None)`` or ``({}, raw)`` when it
    is not a JSON object (the window then tells the model instead of calling the tool)."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    return (value, None) if isinstance(value, dict) else ({}, raw)


def loads(data: str, profile: Profile) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ModelError("protocol", f"{profile.label} sent a stream event that is not JSON: {data[:120]!r}") from None
