"""The bundled toy CRM server (synartesis.demo.crm_server), driven as a real subprocess.

Every test talks to it over stdio with the mcp SDK's own ClientSession (an independent
client), except the EOF test, which writes raw frames to check the wire byte for byte.
Semantics: reference-spec §8.5.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import helpers
import pytest
from mcp import ClientSession, StdioServerParameters

SERVER = [sys.executable, "-m", "synartesis.demo.crm_server"]

SEED_IDS = ["c_001", "c_002", "c_003"]


@asynccontextmanager
async def crm(state: Path | None, *extra: str) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession on a fresh toy CRM process."""
    args = [*SERVER[1:], *(["--state", str(state)] if state else []), *extra]
    params = StdioServerParameters(command=SERVER[0], args=args, env=dict(os.environ))
    async with helpers.stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def payload(result: Any) -> Any:
    """structuredContent, which must equal the JSON of the single text block."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    text_json = json.loads(result.content[0].text)
    assert result.structured_content == text_json
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error is True, result
    assert len(result.content) == 1
    return result.content[0].text


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_handshake_and_tools() -> None:
    async def go() -> tuple[Any, Any, Any]:
        async with crm(None) as s:
            tools = (await s.list_tools()).tools
            templates = (await s.list_resource_templates()).resource_templates
            return s.initialize_result, tools, templates

    init, tools, templates = run(go())
    assert init.server_info.name == "toy-crm"
    assert init.instructions == "A toy CRM. Customer ids look like c_001."
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == sorted(["get_customer", "list_customers", "update_customer",
                                      "create_customer", "delete_customer",
                                      "restore_customer", "send_email"])
    for name, tool in by_name.items():
        assert tool.description, name
        assert tool.input_schema["type"] == "object", name
        read_only = bool(tool.annotations and tool.annotations.read_only_hint)
        assert read_only == (name in ("get_customer", "list_customers")), name
    assert [t.uri_template for t in templates] == ["crm://customers/{id}"]


def test_seed_is_deterministic(tmp_path: Path) -> None:
    async def go() -> Any:
        async with crm(None) as s:
            return payload(await s.call_tool("list_customers", {}))

    listed = run(go())["customers"]
    assert [c["id"] for c in listed] == SEED_IDS
    assert [(c["name"], c["plan"], c["notes"]) for c in listed] == [
        ("Ada Lovelace", "pro", "founding customer"),
        ("Grace Hopper", "enterprise", "renewal in March"),
        ("Alan Turing", "free", ""),
    ]
    # Two fresh stores have the same bytes.
    a, b = tmp_path / "a.json", tmp_path / "b.json"

    async def touch(p: Path) -> None:
        async with crm(p) as s:
            await s.call_tool("get_customer", {"id": "c_001"})

    run(touch(a))
    run(touch(b))
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_bytes())["outbox"] == []


def test_patch_keeps_other_fields(tmp_path: Path) -> None:
    async def go() -> tuple[Any, Any, Any]:
        async with crm(tmp_path / "s.json") as s:
            before = payload(await s.call_tool("get_customer", {"id": "c_002"}))
            updated = payload(await s.call_tool("update_customer",
                                                {"id": "c_002", "notes": "churn risk"}))
            nulls = payload(await s.call_tool("update_customer",
                                              {"id": "c_002", "plan": None, "name": None}))
            return before, updated, nulls

    before, updated, nulls = run(go())
    assert updated == {**before, "notes": "churn risk"}
    assert nulls == updated  # null means "leave it", like an absent field


def test_ids_never_reused_even_across_restarts(tmp_path: Path) -> None:
    state = tmp_path / "s.json"

    async def first() -> list[str]:
        async with crm(state) as s:
            a = payload(await s.call_tool("create_customer", {"name": "Katherine Johnson"}))
            b = payload(await s.call_tool("create_customer",
                                          {"name": "Edsger Dijkstra", "plan": "pro"}))
            await s.call_tool("delete_customer", {"id": b["id"]})
            c = payload(await s.call_tool("create_customer", {"name": "Barbara Liskov"}))
            return [a["id"], b["id"], c["id"]]

    async def second() -> str:
        async with crm(state) as s:
            await s.call_tool("delete_customer", {"id": "c_006"})
            return payload(await s.call_tool("create_customer", {"name": "Frances Allen"}))["id"]

    assert run(first()) == ["c_004", "c_005", "c_006"]
    # c_006 was the highest id and is deleted now; a restart still does not hand it out.
    assert run(second()) == "c_007"


def test_tool_errors(tmp_path: Path) -> None:
    state = tmp_path / "s.json"

    async def go() -> dict[str, Any]:
        async with crm(state) as s:
            out = {
                "get": await s.call_tool("get_customer", {"id": "c_999"}),
                "update": await s.call_tool("update_customer", {"id": "c_999", "notes": "x"}),
                "delete": await s.call_tool("delete_customer", {"id": "c_999"}),
                "plan": await s.call_tool("update_customer", {"id": "c_001", "plan": "platinum"}),
                "create_plan": await s.call_tool("create_customer",
                                                 {"name": "X", "plan": "gold"}),
                "restore_taken": await s.call_tool("restore_customer", {
                    "id": "c_001", "name": "X", "email": "", "plan": "free", "notes": ""}),
                "restore_bad_id": await s.call_tool("restore_customer", {
                    "id": "42", "name": "X", "email": "", "plan": "free", "notes": ""}),
            }
            out["after"] = payload(await s.call_tool("list_customers", {}))
            out["next"] = payload(await s.call_tool("create_customer", {"name": "Y"}))
            return out

    out = run(go())
    assert error_text(out["get"]) == "no customer with id c_999"
    assert error_text(out["update"]) == "no customer with id c_999"
    assert error_text(out["delete"]) == "no customer with id c_999"
    assert "invalid plan 'platinum'" in error_text(out["plan"])
    assert "free, pro, enterprise" in error_text(out["plan"])
    assert "invalid plan 'gold'" in error_text(out["create_plan"])
    assert "already exists" in error_text(out["restore_taken"])
    assert "invalid customer id" in error_text(out["restore_bad_id"])
    # Refused calls changed nothing, and a refused create did not use up an id.
    assert out["after"]["customers"][0]["plan"] == "pro"
    assert [c["id"] for c in out["after"]["customers"]] == SEED_IDS
    assert out["next"]["id"] == "c_004"


def test_state_persisted_and_reloaded_byte_deterministically(tmp_path: Path) -> None:
    state = tmp_path / "s.json"

    async def write() -> Any:
        async with crm(state, "--now", "2026-01-02T03:04:05Z") as s:
            await s.call_tool("update_customer", {"id": "c_001", "notes": "Ελληνικά\t\"q\"\\"})
            await s.call_tool("create_customer", {"name": "Katherine Johnson", "plan": "pro"})
            await s.call_tool("delete_customer", {"id": "c_003"})
            await s.call_tool("send_email", {"to": "ada@example.com", "subject": "Hi",
                                             "body": "line1\nline2"})
            return payload(await s.call_tool("list_customers", {}))

    listed = run(write())
    written = state.read_bytes()
    data = json.loads(written)
    # The file is the data, in the fixed format: sorted keys, 2-space indent, final newline.
    assert written == (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)
                       + "\n").encode()
    assert sorted(data["customers"]) == ["c_001", "c_002", "c_004"]
    assert data["outbox"] == [{"id": "m_001", "to": "ada@example.com", "subject": "Hi",
                               "body": "line1\nline2", "sent_at": "2026-01-02T03:04:05Z"}]

    async def reload() -> Any:
        async with crm(state) as s:
            return payload(await s.call_tool("list_customers", {}))

    assert run(reload()) == listed
    assert state.read_bytes() == written  # reading does not rewrite


def test_restore_returns_store_to_prior_bytes(tmp_path: Path) -> None:
    state = tmp_path / "s.json"

    async def go() -> tuple[bytes, bytes, bytes, Any]:
        async with crm(state) as s:
            await s.call_tool("get_customer", {"id": "c_002"})
            prior = state.read_bytes()
            record = payload(await s.call_tool("get_customer", {"id": "c_002"}))
            deleted = payload(await s.call_tool("delete_customer", {"id": "c_002"}))
            gone = state.read_bytes()
            restored = payload(await s.call_tool("restore_customer", record))
            return prior, gone, state.read_bytes(), (record, deleted, restored)

    prior, gone, after, (record, deleted, restored) = run(go())
    assert gone != prior
    assert after == prior
    assert deleted == {"id": "c_002", "deleted": True, "customer": record}
    assert restored == record


def test_bad_state_file_is_refused_not_replaced(tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    state.write_text("not json", encoding="utf-8")
    proc = helpers.run([*SERVER, "--state", str(state)], input=b"", capture_output=True,
                          timeout=60)
    assert proc.returncode == 2
    assert b"not a toy CRM store" in proc.stderr
    assert proc.stdout == b""
    assert state.read_text(encoding="utf-8") == "not json"


def test_answers_everything_then_exits_at_eof_with_only_frames_on_stdout(tmp_path: Path) -> None:
    """Frames and EOF arrive together: every request is still answered, then exit 0."""
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "create_customer", "arguments": {"name": "A"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "update_customer", "arguments": {"id": "c_001", "plan": "free"}}},
        {"jsonrpc": "2.0", "id": "s-4", "method": "tools/call",
         "params": {"name": "get_customer", "arguments": {"id": "c_404"}}},
    ]
    data = "".join(json.dumps(f) + "\n" for f in frames).encode()
    proc = helpers.run([*SERVER, "--state", str(tmp_path / "s.json")], input=data,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    replies = [json.loads(line) for line in lines]  # every stdout line is a JSON-RPC frame
    assert all(r.get("jsonrpc") == "2.0" for r in replies)
    assert sorted(str(r["id"]) for r in replies) == ["1", "2", "3", "s-4"]
    by_id = {r["id"]: r["result"] for r in replies}
    assert by_id[2]["structuredContent"]["id"] == "c_004"
    assert by_id[3]["structuredContent"]["plan"] == "free"
    assert by_id["s-4"]["isError"] is True
    stored = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert stored["customers"]["c_001"]["plan"] == "free"


@pytest.mark.parametrize("uri,expect", [("crm://customers/c_003", "Alan Turing"),
                                        ("crm://customers", "Grace Hopper")])
def test_resources(uri: str, expect: str) -> None:
    async def go() -> str:
        async with crm(None) as s:
            res = await s.read_resource(uri)
            return res.contents[0].text

    assert expect in run(go())


def test_missing_customer_resource_is_a_protocol_error() -> None:
    from mcp import MCPError

    async def go() -> str:
        async with crm(None) as s:
            try:
                await s.read_resource("crm://customers/c_404")
            except MCPError as exc:
                return str(exc)
            return "no error"

    assert "no customer with id c_404" in run(go())


def test_edit_of_the_store_file_under_a_running_server_is_seen(tmp_path: Path) -> None:
    """The file is the truth: a person's edit (or another process's) is read before the next call."""
    state = tmp_path / "s.json"

    async def go() -> tuple[Any, Any, Any, bytes]:
        async with crm(state) as s:
            await s.call_tool("get_customer", {"id": "c_001"})
            data = json.loads(state.read_text(encoding="utf-8"))
            data["customers"]["c_001"]["notes"] = "edited by hand"
            state.write_text(json.dumps(data), encoding="utf-8")  # not our format, on purpose
            seen = payload(await s.call_tool("get_customer", {"id": "c_001"}))
            updated = payload(await s.call_tool("update_customer",
                                                {"id": "c_002", "plan": "pro"}))
            state.write_text("{broken", encoding="utf-8")
            refused = await s.call_tool("get_customer", {"id": "c_001"})
            return seen, updated, refused, state.read_bytes()

    seen, updated, refused, left = run(go())
    assert seen["notes"] == "edited by hand"
    assert updated["plan"] == "pro"
    assert "not a toy CRM store" in error_text(refused)
    assert left == b"{broken"  # a store it cannot read is never overwritten
