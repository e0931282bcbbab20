"""Anthropic Messages with ``tool_use``, streamed (``POST {base}/v1/messages``, ``stream: true``).

Wire format: named server-sent events. ``content_block_start`` opens a ``text`` or a
``tool_use`` block (with ``id`` and ``name``); ``content_block_delta`` carries ``text_delta``
or ``input_json_delta.partial_json``; ``content_block_stop`` closes it; ``message_delta``
carries ``stop_reason``; ``error`` reports a failure mid-stream. Tool results go back as a user
message of ``tool_result`` blocks (one message for all results of a turn).
"""

from __future__ import annotations

from typing import Any, AsyncIterator

from synartesis.desktop.models import Finished, ModelError, TextDelta, ToolCall
from synartesis.desktop.models.wire import HttpAdapter, loads, parse_arguments, post_stream, sse_events

__all__ = ["AnthropicMessages", "to_anthropic", "API_VERSION"]

API_VERSION = "2023-06-01"


def to_anthropic(messages: list[dict]) -> list[dict]:
    """Neutral messages → Messages API messages (tool results merged into one user turn)."""
    out: list[dict] = []
    for m in messages:
        role = m["role"]
        if role == "user":
            out.append({"role": "user", "content": [{"type": "text", "text": m["content"]}]})
        elif role == "assistant":
            blocks: list[dict] = []
            if m.get("content"):
                blocks.append({"type": "text", "text": m["content"]})
            for c in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]})
            out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": ""}]})
        elif role == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"],
                     "content": [{"type": "text", "text": m["content"]}], "is_error": bool(m.get("is_error"))}
            if out and out[-1]["role"] == "user" and all(b.get("type") == "tool_result" for b in out[-1]["content"]):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
    return out


class AnthropicMessages(HttpAdapter):
    """The adapter (see module docstring)."""

    async def stream(self, messages: list[dict], tools: list[dict], system: str | None) -> AsyncIterator[Any]:
        p = self.profile
        body: dict[str, Any] = {"model": p.model, "max_tokens": p.max_tokens, "messages": to_anthropic(messages),
                                "stream": True}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [{"name": t["name"], "description": t.get("description") or "",
                              "input_schema": t.get("parameters") or {"type": "object"}} for t in tools]
        headers = {"anthropic-version": API_VERSION, "Accept": "text/event-stream"}
        if self.key:
            headers["x-api-key"] = self.key
        base = p.base_url.rstrip("/")
        url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")
        blocks: dict[int, dict] = {}
        calls: list[ToolCall] = []
        stop = None
        async with post_stream(p, url, headers, body, self.key, bool(tools), self.timeout) as resp:
            async for event, data in sse_events(resp):
                msg = loads(data, p)
                kind = event or (msg.get("type") if isinstance(msg, dict) else None)
                if kind == "error":
                    err = msg.get("error") or {}
                    etype = err.get("type", "")
                    text = err.get("message") or etype or "unknown error"
                    if etype == "authentication_error":
                        raise ModelError("auth", f"{p.label} refused the API key: {text}")
                    if etype in ("overloaded_error", "rate_limit_error"):
                        raise ModelError("rate_limit", f"{p.label} is busy ({etype}): {text}; try again shortly")
                    raise ModelError("http", f"{p.label} reported an error mid-answer ({etype}): {text}")
                if kind == "content_block_start":
                    block = msg.get("content_block") or {}
                    blocks[int(msg.get("index", 0))] = {"type": block.get("type"), "id": block.get("id", ""),
                                                        "name": block.get("name", ""), "json": ""}
                elif kind == "content_block_delta":
                    delta = msg.get("delta") or {}
                    slot = blocks.get(int(msg.get("index", 0)))
                    if delta.get("type") == "text_delta" and delta.get("text"):
                        yield TextDelta(delta["text"])
                    elif delta.get("type") == "input_json_delta" and slot is not None:
                        slot["json"] += delta.get("partial_json") or ""
                elif kind == "content_block_stop":
                    slot = blocks.pop(int(msg.get("index", 0)), None)
                    if slot and slot["type"] == "tool_use":
                        args, bad = parse_arguments(slot["json"])
                        calls.append(ToolCall(slot["id"], slot["name"], args, bad))
                elif kind == "message_delta":
                    stop = (msg.get("delta") or {}).get("stop_reason") or stop
                elif kind == "message_stop":
                    break
        for c in calls:
            yield c
        yield Finished(stop or "end_turn")
