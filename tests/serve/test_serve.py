"""`synartesis serve` as a process, on the engine: the mcp SDK's Streamable HTTP client against
it, gates through it, 32 sessions at once, and SIGTERM with calls in flight."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from importlib import resources
from pathlib import Path

import httpx2
import pytest
from helpers import open_journal, run, run_async, spawn, synartesis_argv

import netkit
from synartesis.demo.crm_server import SEED, dump_store


def _token() -> str:
    out = run(synartesis_argv("serve", "--show-token"), text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


class Serve(netkit.ServerProcess):
    """``synartesis serve --port 0 …``: its base URL is read from what it prints."""

    def __init__(self, policy: Path, *extra: str) -> None:
        self.token = _token()
        argv = synartesis_argv("serve", "--port", "0", "--manifest", str(policy), *extra)
        self.proc = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
        self.stderr_lines = []
        self.out: list[str] = []
        line = self.proc.stdout.readline().decode()
        while line and "/servers/" not in line:
            self.out.append(line)
            line = self.proc.stdout.readline().decode()
        m = re.search(r"(https?://\S+?)/servers/", line)
        assert m, "".join(self.out) + self.proc.stderr.read().decode()
        self.base = m.group(1)
        self.port = int(self.base.rsplit(":", 1)[1])
        threading.Thread(target=lambda: [self.out.append(x.decode()) for x in self.proc.stdout], daemon=True).start()
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()

    def url(self, name: str) -> str:
        return f"{self.base}/servers/{name}/mcp"


def crm_setup(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "crm.json"
    store.write_bytes(dump_store({"customers": SEED, "outbox": []}))
    text = (resources.files("synartesis.policies") / "crm.yaml").read_text(encoding="utf-8")
    text = text.replace("command: python3", f"command: {json.dumps(sys.executable)}")
    text = text.replace('"--state", "crm-store.json"', f'"--state", {json.dumps(str(store))}')
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(text, encoding="utf-8")
    return policy, store


@pytest.fixture
def crm_serve(tmp_path):
    policy, store = crm_setup(tmp_path)
    s = Serve(policy)
    yield s, policy, store
    s.stop()


def sdk(url: str, token: str, body):
    """Run ``body(session)`` in an SDK ClientSession over Streamable HTTP to ``url``."""
    async def main():
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        client = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60)
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)
    return run_async(main(), 120)


def cli(*args: str):
    return run(synartesis_argv(*args), text=True, timeout=120, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})


def test_nothing_is_forwarded_before_the_checks_pass(crm_serve, tmp_path):
    s, policy, store = crm_serve
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    auth = {"authorization": f"Bearer {s.token}"}
    assert httpx2.post(s.url("crm"), json=init, headers=h, timeout=20).status_code == 401
    assert httpx2.post(s.url("crm"), json=init, headers={**h, "authorization": "Bearer " + "x" * 43},
                       timeout=20).status_code == 401
    assert httpx2.post(s.url("crm"), json=init, headers={**h, **auth, "host": "evil.example"}, timeout=20).status_code == 403
    assert httpx2.post(s.url("crm"), json=init, headers={**h, **auth, "origin": "http://evil.example"},
                       timeout=20).status_code == 403
    assert httpx2.post(s.url("nope"), json=init, headers={**h, **auth}, timeout=20).status_code == 404
    big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {"p": "y" * (17 << 20)}}}
    assert httpx2.post(s.url("crm"), json=big, headers={**h, **auth}, timeout=60).status_code == 413
    assert httpx2.get(s.base + "/health", timeout=20).json() == {"status": "ok"}
    assert not (tmp_path / "journal.db").exists()  # no session was opened, no server started


def test_the_sdk_client_calls_through_serve_and_the_calls_are_journalled_and_gated(crm_serve, tmp_path):
    s, policy, store = crm_serve
    email = {"to": "a@example.com", "subject": "s", "body": "b"}

    async def calls(session):
        upd = await session.call_tool("update_customer", {"id": "c_001", "plan": "free"})
        held = await session.call_tool("send_email", email)
        return upd, held
    upd, held = sdk(s.url("crm"), s.token, calls)
    assert not upd.is_error and held.is_error
    text = held.content[0].text
    assert "holding this call for approval" in text
    action = text.split("synartesis approve ")[1].split()[0]
    where = ["--manifest", str(policy), "--journal", str(tmp_path / "journal.db")]
    assert cli("approve", action, *where).returncode == 0

    async def retry(session):
        return await session.call_tool("send_email", email)
    assert not sdk(s.url("crm"), s.token, retry).is_error
    assert len(json.loads(store.read_text())["outbox"]) == 1
    again = sdk(s.url("crm"), s.token, retry)  # spent: held anew, then denied
    assert again.is_error
    action2 = again.content[0].text.split("synartesis approve ")[1].split()[0]
    assert cli("deny", action2, "--reason", "enough mail", *where).returncode == 0
    denied = sdk(s.url("crm"), s.token, retry)
    assert denied.is_error and "enough mail" in denied.content[0].text
    assert len(json.loads(store.read_text())["outbox"]) == 1
    with open_journal(tmp_path / "journal.db") as j:
        runs = j.list_runs()
        statuses = sorted(a.status for r in runs for a in j.actions(r.id))
    assert len(runs) == 4 and "applied" in statuses and "denied" in statuses, statuses


@pytest.mark.slow
def test_32_sessions_of_25_writes_at_once_lose_nothing(tmp_path, fs_server):
    root = tmp_path / "files"
    root.mkdir()
    for k in range(32):  # overwriting is reversible; creating a file that was not there is held
        (root / f"s{k}.txt").write_text("before\n")
    policy = tmp_path / "synartesis.yaml"
    from helpers import FS_POLICY
    policy.write_text(FS_POLICY.replace("  files: {}", f"  files:\n    command: {json.dumps(fs_server[0])}\n"
                                        f"    args: {json.dumps([*fs_server[1:], str(root)])}"), encoding="utf-8")
    s = Serve(policy)
    try:
        async def one(k: int) -> int:
            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client
            client = httpx2.AsyncClient(headers={"authorization": f"Bearer {s.token}"}, timeout=300)
            async with client, streamable_http_client(s.url("files"), http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    ok = 0
                    for i in range(25):
                        r = await session.call_tool("write_file", {"path": str(root / f"s{k}.txt"),
                                                                   "content": f"session {k} write {i}\n"})
                        ok += not r.is_error
                    return ok

        async def all_of_them():
            return await asyncio.gather(*(one(k) for k in range(32)))
        results = run_async(all_of_them(), 600)
        assert results == [25] * 32
        for k in range(32):
            assert (root / f"s{k}.txt").read_text() == f"session {k} write 24\n"
    finally:
        s.stop()
    with open_journal(tmp_path / "journal.db") as j:
        runs = j.list_runs()
        actions = [a for r in runs for a in j.actions(r.id)]
    assert len(runs) == 32 and len(actions) == 800 and {a.status for a in actions} == {"applied"}


def test_sigterm_drains_every_call_is_answered_or_unknown(tmp_path):
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(
        "version: 1\nservers:\n  ev:\n"
        f"    command: node\n    args: [{json.dumps(str(netkit.EVERYTHING))}, stdio]\n"
        "tools:\n  - match: \"ev.trigger-long-running-operation\"\n    class: compensable\n"
        "    verify: {tool: ev.echo, args: {message: done}}\n"
        "    inverse: {tool: ev.echo, args: {message: undo}}\n"
        "  - match: \"ev.*\"\n    class: readonly\n    gate: never\n", encoding="utf-8")
    s = Serve(policy, "--drain", "1.5")
    outcomes: list = []
    try:
        started: list[asyncio.Event] = []

        async def one(duration: int):
            moving = asyncio.Event()
            started.append(moving)

            async def progress(done, total, message):
                moving.set()
            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client
            client = httpx2.AsyncClient(headers={"authorization": f"Bearer {s.token}"}, timeout=60)
            async with client, streamable_http_client(s.url("ev"), http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    try:
                        r = await session.call_tool("trigger-long-running-operation",
                                                    {"duration": duration, "steps": 4 * duration},
                                                    progress_callback=progress)
                        return ("answered", r.is_error)
                    except Exception as exc:  # noqa: BLE001 - the SDK raises on a JSON-RPC error
                        return ("error", str(exc))

        async def main():
            tasks = [asyncio.ensure_future(one(d)) for d in (1, 1, 6, 6)]
            while len(started) < 4:
                await asyncio.sleep(0.05)
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 60)  # every call in flight
            os.kill(s.proc.pid, signal.SIGTERM)
            return await asyncio.gather(*tasks)
        outcomes = run_async(main(), 120)
        assert s.proc.wait(30) == 0
    finally:
        s.stop()
    assert len(outcomes) == 4
    short, long_ = outcomes[:2], outcomes[2:]
    assert all(o == ("answered", False) for o in short), outcomes
    assert all(o[0] == "error" and "unknown" in o[1] for o in long_), outcomes
    with open_journal(tmp_path / "journal.db") as j:
        statuses = sorted(a.status for r in j.list_runs() for a in j.actions(r.id)
                          if a.tool == "trigger-long-running-operation")
        assert {r.status for r in j.list_runs()} == {"complete"}
    assert statuses == ["applied", "applied", "unknown", "unknown"], statuses


def test_saga_mode_rolls_a_session_back_through_serve(tmp_path):
    policy, store = crm_setup(tmp_path)
    text = policy.read_text(encoding="utf-8")
    policy.write_text(text.replace("\n  crm:\n", "\n  crm:\n    saga: true\n", 1), encoding="utf-8")
    assert "    saga: true\n" in policy.read_text(encoding="utf-8")
    original = store.read_bytes()
    s = Serve(policy)
    try:
        async def calls(session):
            made = await session.call_tool("create_customer", {"name": "Katherine Johnson", "plan": "pro"})
            upd = await session.call_tool("update_customer", {"id": "c_001", "plan": "free"})
            failed = await session.call_tool("update_customer", {"id": "c_002", "plan": "platinum"})
            return made, upd, failed
        made, upd, failed = sdk(s.url("crm"), s.token, calls)
    finally:
        s.stop()
    assert not made.is_error and not upd.is_error and failed.is_error
    told = " ".join(b.text for b in failed.content)
    assert told.startswith("invalid plan 'platinum'") and "saga mode" in told
    assert store.read_bytes() == original  # both earlier changes put back before the answer
    with open_journal(tmp_path / "journal.db") as j:
        (run,) = j.list_runs()
        assert [a.status for a in j.actions(run.id)][:3] == ["rolled_back", "rolled_back", "failed"]


def test_show_token_prints_the_token_made_on_first_use_and_off_loopback_serve_warns(tmp_path):
    import stat
    path = Path(os.environ["SYNARTESIS_HOME"]) / "serve-token"
    assert not path.exists()
    token = _token()  # made on first use
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text().strip() == token
    assert len(token) >= 43 and _token() == token  # 32 random bytes, url-safe; kept
    policy, _ = crm_setup(tmp_path)
    quiet = Serve(policy)
    try:
        assert httpx2.get(quiet.base + "/health", timeout=20).status_code == 200
    finally:
        quiet.stop()
    assert not [x for x in quiet.stderr_lines if "without TLS" in x]
    wide = Serve(policy, "--host", "0.0.0.0")
    try:
        loop = f"http://127.0.0.1:{wide.port}"
        assert httpx2.get(loop + "/health", timeout=20).status_code == 200
        assert httpx2.post(loop + "/servers/crm/mcp", json={}, timeout=20).status_code == 401
    finally:
        wide.stop()
    warned = " ".join(wide.stderr_lines)
    assert "serving on 0.0.0.0 without TLS" in warned and "in clear" in warned


def test_serve_starts_an_installed_remote_server_with_its_client_entrys_credentials(fake_home, tmp_path, monkeypatch):
    """A remote entry install wrapped: its policy starts `remote-relay --header-env
    Authorization=SYNARTESIS_HEADER_1`, a value only the client entry holds (`Bearer ${CRM_T}`).
    serve reads it from there, as undo does, for every session."""
    from installkit import make_env, place
    from synartesis.services.install import InstallOptions, apply_install, plan_install

    token = "crm-serve-token-0123456789abcdef"
    store = tmp_path / "crm.json"
    crm = netkit.crm_http(store, token)
    try:
        monkeypatch.setenv("CRM_T", token)
        place(fake_home, "claude-code", json.dumps({"mcpServers": {"crm": {
            "type": "http", "url": crm.url, "headers": {"Authorization": "Bearer ${CRM_T}"}}}}))
        env = make_env(fake_home)
        proxy = str(Path(sys.executable).parent / "synartesis")
        plan = plan_install(env, InstallOptions(client="claude-code", proxy_path=proxy, system_root=tmp_path / "s",
                                                start=True, timeout=60))
        assert [pp.policy_id for pp in plan.policy_plans] == ["crm"]  # recognised over the relay
        assert apply_install(env, plan).ok
        policy = fake_home / ".synartesis" / "synartesis.yaml"
        assert "SYNARTESIS_HEADER_1" in policy.read_text() and token not in policy.read_text()
        s = Serve(policy)
        try:
            async def calls(session):
                return await session.call_tool("update_customer", {"id": "c_002", "plan": "free"})
            assert not sdk(s.url("crm"), s.token, calls).is_error
        finally:
            s.stop()
        assert json.loads(store.read_text())["customers"]["c_002"]["plan"] == "free"
        journal = fake_home / ".synartesis" / "journal.db"
        undo = cli("undo", "--manifest", str(policy), "--journal", str(journal))
        assert undo.returncode == 0, undo.stdout + undo.stderr
        assert json.loads(store.read_text())["customers"]["c_002"]["plan"] == "enterprise"
        assert not [str(p) for p in fake_home.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
    finally:
        crm.stop()
