"""The stdio ↔ remote bridge (`synartesis proxy --server NAME --url URL`) end to end: the SDK's
stdio client through the bridge against server-everything and the toy CRM over HTTP, the
whole undo loop through a remote upstream, a connection cut after a write, and gates.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path

import pytest
from helpers import RawSession, crm_agent, open_journal, run, run_async, stdio_client, synartesis_argv

import netkit
from synartesis.demo.crm_server import SEED, dump_store

TOKEN = "crm-bridge-token-0123456789abcdef"


def bridge_argv(server: str, url: str, manifest: Path, journal: Path, *flags: str) -> list[str]:
    return synartesis_argv("proxy", "--server", server, "--manifest", str(manifest), "--journal", str(journal),
                           "--url", url, *flags)


def crm_policy(tmp_path: Path) -> Path:
    from importlib import resources
    text = (resources.files("synartesis.policies") / "crm.yaml").read_text(encoding="utf-8")
    path = tmp_path / "synartesis.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def crm(tmp_path):
    store = tmp_path / "crm.json"
    store.write_bytes(dump_store({"customers": SEED, "outbox": []}))
    server = netkit.crm_http(store, TOKEN)
    yield server, store
    server.stop()


def cli(*args: str, env: dict | None = None):
    return run(synartesis_argv(*args), text=True, timeout=300,
               env={**(env or os.environ), "NO_COLOR": "1", "COLUMNS": "200"})


# -- transparency ------------------------------------------------------------------------------

SCRIPT = [
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"message": "héllo ✓"}}),
    ("tools/call", {"name": "get-sum", "arguments": {"a": 2, "b": 40}}),
    ("tools/call", {"name": "get-structured-content", "arguments": {"location": "New York"}}),
    ("tools/call", {"name": "get-annotated-message", "arguments": {"messageType": "error", "includeImage": True}}),
    ("resources/list", {}),
    ("resources/read", {"uri": "demo://resource/static/document/architecture.md"}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "simple-prompt", "arguments": {}}),
    ("ping", {}),
]


async def _script(read, write, received: list) -> list:
    """[what the SDK made of each answer, every answer's JSON as it came off the transport]."""
    import anyio
    from mcp_types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

    async def sampling(ctx, params):
        received.append("sampling")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="sampled"), model="m")

    async def elicit(ctx, params):
        received.append("elicitation")
        return ElicitResult(action="accept", content={"color": "red", "number": 3, "pets": "cats"})

    async def roots(ctx):
        received.append("roots")
        return ListRootsResult(roots=[Root(uri="file:///tmp/x", name="x")])

    async def logging_cb(params):
        received.append("log")

    wire: list = []  # every answer as it came off the transport, before the SDK's models drop anything
    tap_send, tap_read = anyio.create_memory_object_stream(1000)

    async def tap() -> None:
        async with tap_send:
            async for item in read:
                message = getattr(item, "message", None)
                if message is not None and hasattr(message, "result"):
                    wire.append(message.model_dump(mode="json", by_alias=True))
                elif message is not None and hasattr(message, "error"):
                    wire.append(message.model_dump(mode="json", by_alias=True, exclude_none=True))
                await tap_send.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tap)
        out = await _session(tap_read, write, sampling, elicit, roots, logging_cb, received)
        tg.cancel_scope.cancel()
    return [out, wire]


async def _session(read, write, sampling, elicit, roots, logging_cb, received: list) -> list:
    from mcp import ClientSession
    out = []
    async with ClientSession(read, write, sampling_callback=sampling, elicitation_callback=elicit,
                             list_roots_callback=roots, logging_callback=logging_cb) as session:
        init = await session.initialize()
        out.append(init.server_info.name)
        for method, params in SCRIPT:
            result = await session.send_request_raw(method, params) if hasattr(session, "send_request_raw") \
                else await _raw(session, method, params)
            out.append(result)
        for tool, args in (("trigger-sampling-request", {"prompt": "p", "maxTokens": 5}),
                           ("trigger-elicitation-request", {}), ("get-roots-list", {})):
            result = await session.call_tool(tool, args)
            out.append(json.loads(result.model_dump_json(exclude_none=True)))
        await session.call_tool("toggle-simulated-logging", {})
        for _ in range(100):
            if "log" in received:
                break
            await asyncio.sleep(0.05)
    return out


async def _raw(session, method: str, params: dict):
    """A request by method name with the result as plain JSON (what was on the wire)."""
    import mcp_types as types
    table = {"tools/list": (types.ListToolsRequest, types.ListToolsResult),
             "tools/call": (types.CallToolRequest, types.CallToolResult),
             "resources/list": (types.ListResourcesRequest, types.ListResourcesResult),
             "resources/read": (types.ReadResourceRequest, types.ReadResourceResult),
             "prompts/list": (types.ListPromptsRequest, types.ListPromptsResult),
             "prompts/get": (types.GetPromptRequest, types.GetPromptResult),
             "ping": (types.PingRequest, types.EmptyResult)}
    req_cls, res_cls = table[method]
    req = req_cls(method=method, params=params or None) if params else req_cls(method=method)
    result = await session.send_request(req, res_cls)
    return json.loads(result.model_dump_json(by_alias=True, exclude_none=True))


def test_a_scripted_session_is_the_same_direct_and_through_the_bridge(tmp_path):
    import httpx2
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    server = netkit.everything("streamableHttp")
    url = f"http://127.0.0.1:{server.port}/mcp"
    policy = tmp_path / "synartesis.yaml"
    policy.write_text("version: 1\nservers:\n  ev: {}\ntools:\n  - match: \"ev.*\"\n    class: readonly\n"
                      "    gate: never\n", encoding="utf-8")
    try:
        async def direct() -> tuple[list, list]:
            got: list = []
            client = httpx2.AsyncClient(timeout=30)
            async with client, streamable_http_client(url, http_client=client) as (read, write):
                return await _script(read, write, got), got

        async def bridged() -> tuple[list, list]:
            got: list = []
            argv = bridge_argv("ev", url, policy, tmp_path / "journal.db")
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
            async with stdio_client(params) as (read, write):
                return await _script(read, write, got), got

        a, a_seen = run_async(direct(), 120)
        b, b_seen = run_async(bridged(), 120)
        assert a[0] == b[0]  # what the SDK made of each answer
        # and every answer's JSON, key for key: the proxy adds its guidance before the server's
        # instructions (as over stdio), and server-everything names its own session in one text
        direct_init, bridged_init = a[1][0]["result"], b[1][0]["result"]
        assert bridged_init.pop("instructions").endswith(direct_init.pop("instructions"))
        uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        wire_a, wire_b = (uuid.sub("UUID", json.dumps(w, sort_keys=True)) for w in (a[1], b[1]))
        assert len(a[1]) >= len(SCRIPT) + 5 and wire_a == wire_b
        assert {"sampling", "elicitation", "roots", "log"} <= set(a_seen) and set(a_seen) == set(b_seen)
    finally:
        server.stop()


# -- the undo loop over HTTP -------------------------------------------------------------------

def _run_id(journal: Path) -> str:
    with open_journal(journal) as j:
        for _ in range(100):
            (run,) = j.list_runs()
            if run.status != "active":
                return run.id
            time.sleep(0.1)
    raise AssertionError("the run stayed active")


def test_twenty_mutations_over_http_are_undone_to_a_byte_identical_store(tmp_path, crm):
    server, store = crm
    original = store.read_bytes()
    policy, journal = crm_policy(tmp_path), tmp_path / "journal.db"
    env = dict(os.environ, CRM_KEY=TOKEN)
    seen = run_async(crm_agent(bridge_argv("crm", server.url, policy, journal, "--bearer-env", "CRM_KEY"), env), 300)
    assert len([t for t, err in seen if not err and t not in ("list_customers", "get_customer")]) >= 20
    assert store.read_bytes() != original
    run = _run_id(journal)
    where = ["--manifest", str(policy), "--journal", str(journal)]
    undo = cli("undo", run, *where, env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert store.read_bytes() == original
    with open_journal(journal) as j:
        line = j.find_run(run).servers["crm"]
    assert "remote-relay" in line["args"] and TOKEN not in json.dumps(line)


def test_a_connection_cut_after_a_write_is_unknown_and_undo_halts_there(tmp_path, crm):
    server, store = crm
    relay = netkit.Relay(server.port)
    policy, journal = crm_policy(tmp_path), tmp_path / "journal.db"
    env = dict(os.environ, CRM_KEY=TOKEN)
    argv = bridge_argv("crm", f"http://127.0.0.1:{relay.port}/mcp", policy, journal, "--bearer-env", "CRM_KEY")
    try:
        with RawSession(argv, env=env) as s:
            s.handshake()
            assert not s.call(2, "update_customer", {"id": "c_001", "plan": "free"}).get("isError")
            relay.mode, relay.swallow_if = "swallow", b'"update_customer"'  # the write's answer is lost
            s.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "update_customer", "arguments": {"id": "c_002", "plan": "free"}}})
            _, msg = s.wait_for(3, timeout=60)
            assert "unknown" in json.dumps(msg)
            relay.mode = "pass"
            s.close()
        run = _run_id(journal)
        with open_journal(journal) as j:
            statuses = [(a.tool, a.status) for a in j.actions(run)]
        assert statuses[-1] == ("update_customer", "unknown"), statuses
        undo = cli("undo", run, "--manifest", str(policy), "--journal", str(journal), env=env)
        assert undo.returncode == 1 and "unknown" in (undo.stdout + undo.stderr).lower()
        assert json.loads(store.read_text())["customers"]["c_001"]["plan"] == "free"  # nothing walked past it
    finally:
        relay.close()


def test_gates_denials_and_approvals_through_the_bridge(tmp_path, crm):
    server, store = crm
    policy, journal = crm_policy(tmp_path), tmp_path / "journal.db"
    env = dict(os.environ, CRM_KEY=TOKEN)
    argv = bridge_argv("crm", server.url, policy, journal, "--bearer-env", "CRM_KEY")
    email = {"to": "a@example.com", "subject": "hi", "body": "x"}
    where = ["--manifest", str(policy), "--journal", str(journal)]
    with RawSession(argv, env=env) as s:
        s.handshake()
        held = s.call(2, "send_email", email)
        assert held["isError"] and "holding this call for approval" in held["content"][0]["text"]
        action = held["content"][0]["text"].split("synartesis approve ")[1].split()[0]
        assert json.loads(store.read_text())["outbox"] == []
        assert cli("approve", action, *where, env=env).returncode == 0
        sent = s.call(3, "send_email", email)
        assert not sent.get("isError") and len(json.loads(store.read_text())["outbox"]) == 1
        again = s.call(4, "send_email", email)
        assert again["isError"]
        action2 = again["content"][0]["text"].split("synartesis approve ")[1].split()[0]
        assert cli("deny", action2, "--reason", "no more mail", *where, env=env).returncode == 0
        denied = s.call(5, "send_email", email)
        assert denied["isError"] and "no more mail" in denied["content"][0]["text"]
    assert len(json.loads(store.read_text())["outbox"]) == 1


def test_an_unset_header_variable_or_url_is_a_clear_usage_error(tmp_path):
    policy, journal = tmp_path / "p.yaml", tmp_path / "j.db"
    policy.write_text("version: 1\nservers:\n  r: {}\ntools: []\n")
    env = {k: v for k, v in os.environ.items() if k != "NOPE_KEY"}
    for flags, why in ((["--url", "http://127.0.0.1:1/mcp", "--bearer-env", "NOPE_KEY"], "$NOPE_KEY"),
                       (["--url", "ftp://x/mcp"], "http:// or https://"),
                       (["--url", "http://x/mcp", "--header", "no colon"], "NAME: VALUE"),
                       (["--url", "http://x/mcp", "--", "npx", "x"], "not both")):
        out = run(synartesis_argv("proxy", "--server", "r", "--manifest", str(policy), "--journal",
                                  str(journal), *flags), text=True, timeout=60, env=env)
        assert out.returncode == 2 and why in out.stderr and "Traceback" not in out.stderr



# -- saga mode through the bridge ----------------------------------------------------------------

@pytest.mark.parametrize("how", ["policy", "flag"])
def test_saga_mode_rolls_a_remote_run_back_before_the_error_reaches_the_agent(tmp_path, crm, how):
    server, store = crm
    original = store.read_bytes()
    policy, journal = crm_policy(tmp_path), tmp_path / "journal.db"
    text = policy.read_text(encoding="utf-8")
    if how == "policy":  # servers.crm.saga: true
        text, n = re.subn(r"(?m)^(  crm:\n)", r"\1    saga: true\n", text, count=1)
        assert n == 1
        policy.write_text(text, encoding="utf-8")
    flags = ["--bearer-env", "CRM_KEY", *(["--saga"] if how == "flag" else [])]
    env = dict(os.environ, CRM_KEY=TOKEN)
    with RawSession(bridge_argv("crm", server.url, policy, journal, *flags), env=env) as s:
        s.handshake()
        assert not s.call(1, "create_customer", {"name": "Katherine Johnson", "plan": "pro"}).get("isError")
        assert not s.call(2, "update_customer", {"id": "c_001", "plan": "free"}).get("isError")
        failed = s.call(3, "update_customer", {"id": "c_002", "plan": "platinum"})
        after = s.call(4, "get_customer", {"id": "c_001"})
        s.close()
    assert failed["isError"] and failed["content"][0]["text"].startswith("invalid plan 'platinum'")
    assert "rolled back" in json.dumps(failed).lower()
    assert store.read_bytes() == original  # put back over HTTP before the agent heard of the error
    assert json.loads(after["content"][0]["text"])["plan"] == SEED["c_001"]["plan"]
    with open_journal(journal) as j:
        (run,) = j.list_runs()
        assert [(a.tool, a.status) for a in j.actions(run.id)][:3] == [
            ("create_customer", "rolled_back"), ("update_customer", "rolled_back"), ("update_customer", "failed")]
        (saga,) = j.undos(run.id)
        assert (saga.kind, saga.status) == ("saga", "compensated")


# -- the command line reaches the remote server through remote-relay -------------------------------

def test_check_pin_init_and_show_live_reach_a_remote_server_through_the_relay(tmp_path, crm):
    server, store = crm
    relay = synartesis_argv("remote-relay", "--server", "crm", "--url", server.url, "--bearer-env", "CRM_KEY")
    policy, journal = crm_policy(tmp_path), tmp_path / "journal.db"
    text, n = re.subn(r"(?m)^    command:.*\n    args:.*$",
                      f"    command: {json.dumps(relay[0])}\n    args: {json.dumps(relay[1:])}",
                      policy.read_text(encoding="utf-8"), count=1)
    assert n == 1
    policy.write_text(text, encoding="utf-8")
    env = dict(os.environ, CRM_KEY=TOKEN)
    where = ["--manifest", str(policy)]
    checked = cli("check", "--server", "crm", *where, env=env)
    assert checked.returncode == 0 and "toy-crm 0.1.0, 7 tools advertised" in checked.stdout, checked.stdout
    pinned = cli("pin", "--server", "crm", *where, env=env)
    assert pinned.returncode == 0 and pinned.stdout.count('"sha256:') == 7, pinned.stdout
    made = cli("init", "crm2", "--manifest", str(tmp_path / "p2.yaml"), "--", *relay, env=env)
    assert made.returncode == 0 and "Recognised as crm" in made.stdout, made.stdout + made.stderr
    hint = f"--manifest {tmp_path / 'p2.yaml'} --url {server.url} --bearer-env CRM_KEY"  # the bridge, not a relay in a proxy
    assert "".join(hint.split()) in "".join(made.stdout.split()), made.stdout
    with RawSession(bridge_argv("crm", server.url, policy, journal, "--bearer-env", "CRM_KEY"), env=env) as s:
        s.handshake()
        assert not s.call(1, "update_customer", {"id": "c_001", "plan": "free"}).get("isError")
        s.close()
    live = cli("show", "--live", *where, "--journal", str(journal), env=env)
    assert live.returncode == 0 and "still as this run left it" in live.stdout, live.stdout + live.stderr
    assert not [o for o in (checked, pinned, made, live) if TOKEN in o.stdout + o.stderr]


def test_a_headers_helper_signs_the_bridge_in_and_is_run_again_after_a_401(tmp_path, crm):
    """Claude Code's ``headersHelper``: run through the shell with the server's name and URL at
    connect; its first token here is stale, the server says 401, and the helper's second answer
    is used for the same request."""
    server, store = crm
    count = tmp_path / "runs"
    helper = tmp_path / "helper.sh"
    helper.write_text("#!/bin/sh\n"
                      f'n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}\n'
                      '[ "$CLAUDE_CODE_MCP_SERVER_NAME" = crm ] || exit 3\n'
                      f'if [ "$n" = 0 ]; then t=stale; else t={TOKEN}; fi\n'
                      'printf \'{"Authorization": "Bearer %s"}\' "$t"\n')
    helper.chmod(0o755)
    policy, journal = crm_policy(tmp_path), tmp_path / "journal.db"
    with RawSession(bridge_argv("crm", server.url, policy, journal, "--headers-helper", str(helper))) as s:
        assert s.handshake()["result"]["serverInfo"]["name"] == "toy-crm"
        assert not s.call(2, "update_customer", {"id": "c_001", "plan": "free"}).get("isError")
        s.close()
    assert count.read_text().strip() == "2"  # at connect, then once after the 401
    assert json.loads(store.read_text())["customers"]["c_001"]["plan"] == "free"
    with open_journal(journal) as j:
        (run,) = j.list_runs()
        line = run.servers["crm"]
    assert "--headers-helper" in line["args"] and TOKEN not in json.dumps(line)
