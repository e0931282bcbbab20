"""The model adapters against a scripted endpoint in the real wire formats: Anthropic Messages
(streamed ``tool_use`` in, ``tool_result`` back) through the whole window and the real proxy,
the OpenAI-compatible adapter's clear errors, and cancellation."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest
from desktopkit import ScriptedModel, cards

from synartesis.desktop.models import ModelError, Profile, TextDelta, ToolCall, adapter_for
from synartesis.desktop.models.anthropic import API_VERSION


def _collect(profile: Profile, key: str | None, messages=None, tools=None) -> list:
    async def go():
        adapter = adapter_for(profile, key)
        return [ev async for ev in adapter.stream(messages or [{"role": "user", "content": "hi"}], tools or [], "sys")]
    return asyncio.run(go())


def _profile(base: str, kind: str = "openai", needs_key: bool = False) -> Profile:
    return Profile("custom", kind, "Scripted", base, "scripted-1", needs_key=needs_key)


def test_claude_calls_a_real_tool_through_the_proxy_and_gets_a_tool_result_back(files_root, open_window):
    target = files_root / "claude.txt"
    target.write_text("old")
    desk, model = open_window([
        {"text": "Let me write that.", "tool_calls": [{"name": "write_file", "arguments": {"path": str(target), "content": "new"}}]},
        {"text": "Done."},
    ], profile="anthropic")
    desk.post("/api/keys/anthropic", {"key": "sk-ant-test-key-0123456789"})
    conv = desk.post("/api/conversations", {"profile": "anthropic"})
    desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "write new"})
    conv = desk.wait(conv["id"], lambda c: not c["busy"] and cards(c) and cards(c)[0]["action"])
    assert target.read_text() == "new"
    [card] = cards(conv)
    assert (card["action"]["class"], card["action"]["prior"]) == ("reversible", "captured")
    assert [i["text"] for i in conv["items"] if i["kind"] == "assistant"] == ["Let me write that.", "Done."]

    first, second = model.requests
    assert first["_path"] == "/v1/messages" and first["stream"] is True and first["system"]
    assert first["_headers"]["x-api-key"] == "sk-ant-test-key-0123456789"
    assert first["_headers"]["anthropic-version"] == API_VERSION
    tool = next(t for t in first["tools"] if t["name"] == "files__write_file")
    assert tool["input_schema"]["type"] == "object"
    assistant, results = second["messages"][1], second["messages"][2]
    use = next(b for b in assistant["content"] if b["type"] == "tool_use")
    assert use["name"] == "files__write_file" and use["input"] == {"path": str(target), "content": "new"}
    [res] = results["content"]
    assert results["role"] == "user" and res["type"] == "tool_result" and res["tool_use_id"] == use["id"]
    assert res["is_error"] is False and "Successfully wrote" in res["content"][0]["text"]


def test_the_anthropic_stream_yields_text_and_complete_tool_calls():
    model = ScriptedModel([{"text": "abc", "tool_calls": [{"name": "t", "arguments": {"a": [1, 2], "b": "ü"}}]}])
    try:
        events = _collect(_profile(model.root, "anthropic"), "k")
    finally:
        model.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "abc"
    [call] = [e for e in events if isinstance(e, ToolCall)]
    assert call.name == "t" and call.arguments == {"a": [1, 2], "b": "ü"} and call.id.startswith("toolu_")
    assert events[-1].reason == "tool_use"


def test_an_error_event_mid_stream_is_a_clear_error():
    model = ScriptedModel([{"text": "par", "error_event": {"type": "overloaded_error", "message": "Overloaded"}}])
    try:
        with pytest.raises(ModelError) as e:
            _collect(_profile(model.root, "anthropic"), "k")
    finally:
        model.close()
    assert e.value.kind == "rate_limit" and "Overloaded" in e.value.message


def test_the_openai_stream_joins_argument_fragments_into_tool_calls():
    model = ScriptedModel([{"text": "hello there", "tool_calls": [
        {"name": "one", "arguments": {"x": "a" * 50}}, {"name": "two", "arguments": {}}]}])
    try:
        events = _collect(_profile(model.base), None, tools=[{"name": "one"}, {"name": "two"}])
    finally:
        model.close()
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [("one", {"x": "a" * 50}), ("two", {})]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hello there"
    assert model.requests[0]["tools"][0] == {"type": "function", "function": {"name": "one", "description": "",
                                                                              "parameters": {"type": "object"}}}


@pytest.mark.parametrize("status, error, kind, words", [
    (401, {"error": {"message": "Incorrect API key provided: sk-bad-123"}}, "auth", "refused the API key"),
    (400, {"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools"}}, "no_tools",
     "does not support tool calls"),
    (400, {"error": {"message": "\"auto\" tool choice requires --enable-auto-tool-choice"}}, "no_tools", "tool calls"),
    (404, {"error": {"message": "model 'nope' not found"}}, "model", "no model"),
    (429, {"error": {"message": "slow down"}}, "rate_limit", "rate-limiting"),
    (500, {"error": {"message": "boom"}}, "http", "HTTP 500"),
])
def test_an_endpoint_refusal_becomes_a_clear_error(status, error, kind, words):
    model = ScriptedModel([{"status": status, "error": error}])
    try:
        with pytest.raises(ModelError) as e:
            _collect(_profile(model.base), "sk-bad-123", tools=[{"name": "t"}])
    finally:
        model.close()
    assert e.value.kind == kind and words in e.value.message
    assert "sk-bad-123" not in e.value.message  # a provider echoing the key does not make us repeat it


def test_an_unreachable_endpoint_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    with pytest.raises(ModelError) as e:
        _collect(_profile(f"http://127.0.0.1:{port}/v1"), None)
    assert e.value.kind == "unreachable" and "cannot reach" in e.value.message


def test_arguments_that_are_not_json_are_reported_and_nothing_is_sent(files_root, open_window):
    desk, model = open_window([{"text": "x", "tool_calls": [{"name": "write_file", "raw_arguments": '{"path": '}]},
                               {"text": "sorry"}])
    conv = desk.post("/api/conversations", {"profile": "custom"})
    desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "go"})
    conv = desk.wait(conv["id"], lambda c: not c["busy"])
    [card] = cards(conv)
    assert card["state"] == "error" and "not a JSON object" in card["error"] and card["action"] is None
    told = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "not a JSON object" in told[0]["content"]
    # nothing reached the proxy: a proxy makes its run at the first tools/call, so there is none
    assert not any(r["actions"] for r in desk.get("/api/history")["runs"])


def test_stop_cancels_a_streaming_answer(files_root, open_window):
    release = threading.Event()
    desk, model = open_window([{"text": "thinking very slowly", "wait": release}, {"text": "next"}])
    try:
        conv = desk.post("/api/conversations", {"profile": "custom"})
        desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "go"})
        desk.wait(conv["id"], lambda c: any(i["kind"] == "assistant" and i["text"] for i in c["items"]))
        assert desk.post(f"/api/conversations/{conv['id']}/stop") == {"stopped": True}
        conv = desk.wait(conv["id"], lambda c: not c["busy"])
        assert conv["items"][-1] == {**conv["items"][-1], "kind": "notice", "text": "stopped"}
        desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "again"})  # the conversation goes on
        conv = desk.wait(conv["id"], lambda c: not c["busy"] and c["items"][-1].get("text") == "next")
    finally:
        release.set()
