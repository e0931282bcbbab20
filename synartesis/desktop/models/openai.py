"""OpenAI-compatible chat completions with tools, streamed (``POST {base}/chat/completions``,
``stream: true``). Covers OpenAI, Gemini's and Mistral's OpenAI-compatible endpoints, Ollama,
LM Studio and vLLM.

Wire format: each ``data:`` line is a ``chat.completion.chunk``; ``choices[0].delta.content``
carries text; ``choices[0].delta.tool_calls[]`` carries tool calls by ``index``, the first
fragment with ``id`` and ``function.name``, later ones appending to ``function.arguments``;
``finish_reason`` ends the choice; ``data: [DONE]`` ends the stream.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

from synartesis.desktop.models import Finished, ModelError, TextDelta, ToolCall
from synartesis.desktop.models.wire import HttpAdapter, loads, parse_arguments, post_stream, sse_events

__all__ = ["ChatCompletions", "to_openai"]


def to_openai(messages: list[dict], system: str | None) -> list[dict]:
    """Neutral messages → chat-completions messages."""
    out: list[dict] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        role = m["role"]
        if role == "user":
            out.append({"role": "user", "content": m["content"]})
        elif role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.get("content") or None}
            if m.get("tool_calls"):
                msg["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                                     for c in m["tool_calls"]]
            out.append(msg)
        elif role == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
    return out


class ChatCompletions(HttpAdapter):
    """The adapter (see module docstring)."""

    async def stream(self, messages: list[dict], tools: list[dict], system: str | None) -> AsyncIterator[Any]:
        p = self.profile
        body: dict[str, Any] = {"model": p.model, "messages": to_openai(messages, system), "stream": True}
        if tools:
            body["tools"] = [{"type": "function", "function": {"name": t["name"], "description": t.get("description") or "",
                                                               "parameters": t.get("parameters") or {"type": "object"}}}
                             for t in tools]
        headers = {"Accept": "text/event-stream"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        calls: dict[int, dict] = {}
        finish = None
        url = p.base_url.rstrip("/") + "/chat/completions"
        async with post_stream(p, url, headers, body, self.key, bool(tools), self.timeout) as resp:
            async for _event, data in sse_events(resp):
                if data.strip() == "[DONE]":
                    break
                chunk = loads(data, p)
                if isinstance(chunk, dict) and chunk.get("error"):
                    err = chunk["error"]
                    raise ModelError("http", f"{p.label} reported an error mid-answer: "
                                     f"{err.get('message') if isinstance(err, dict) else err}")
                for choice in (chunk.get("choices") or []) if isinstance(chunk, dict) else []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        yield TextDelta(delta["content"])
                    for tc in delta.get("tool_calls") or []:
                        slot = calls.setdefault(int(tc.get("index", len(calls))), {"id": "", "name": "", "arguments": ""})
                        slot["id"] = tc.get("id") or slot["id"]
                        fn = tc.get("function") or {}
                        if fn.get("name") and not slot["name"]:  # sent once, with the first fragment
                            slot["name"] = fn["name"]
                        slot["arguments"] += fn.get("arguments") or ""
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
        for i in sorted(calls):
            c = calls[i]
            args, bad = parse_arguments(c["arguments"])
            yield ToolCall(c["id"] or f"call_{i}", c["name"], args, bad)
        yield Finished(finish or "stop")
