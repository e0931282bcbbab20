"""OAuth end to end: `synartesis login` against a local authorization server + protected MCP
server built from the SDK's server-side auth pieces (tests/remote/oauth_server.py). Only the
person's click is simulated: the test follows the authorize redirect to the consent page and
posts the form, over HTTP, as a browser would.
"""

from __future__ import annotations

import json
import os
import queue
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import netkit
import pytest
from helpers import run, spawn, synartesis_argv

from synartesis.paths import Env
from synartesis.proxy.transport import RequestFailed
from synartesis.remote.http import SIGN_IN_CODE, HttpUpstream
from synartesis.remote.oauth import OAuthBearer
from synartesis.remote.tokens import TokenStore

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def click(auth_url: str) -> int:
    """What a person's browser does: open the authorize URL, approve on the consent page,
    land on the loopback callback. Returns the callback's HTTP status."""
    with httpx2.Client(follow_redirects=False, timeout=20) as browser:
        r = browser.get(auth_url)
        assert r.status_code == 302, r.text
        consent = r.headers["location"]
        page = browser.get(consent)
        assert "Allow" in page.text
        request = parse_qs(urlsplit(consent).query)["request"][0]
        r = browser.post(consent.split("?")[0], data={"request": request})
        assert r.status_code == 302
        return browser.get(r.headers["location"]).status_code


def login(url: str | None, name: str = "notes") -> subprocess.CompletedProcess:
    """`synartesis login NAME --url URL --no-browser` (without ``url``: NAME is found in the client
    configs), with the person clicking the URL it prints."""
    where = ["--url", url] if url else []
    proc = spawn(synartesis_argv("login", name, *where, "--no-browser", "--timeout", "60"),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
        auth_url = lines.get(timeout=60).strip()
        assert auth_url.startswith("http://127.0.0.1:") and "code_challenge=" in auth_url and "S256" in auth_url
        assert click(auth_url) == 200
        proc.wait(60)
        rest = []
        while not lines.empty():
            rest.append(lines.get())
        return subprocess.CompletedProcess(proc.args, proc.returncode, auth_url + "\n" + "".join(rest),
                                           proc.stderr.read())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


@pytest.fixture
def issued(tmp_path) -> Path:
    return tmp_path / "issued.jsonl"


def start(issued: Path, *args: str) -> netkit.ServerProcess:
    return netkit.oauth_server("--state", str(issued), *args)


@pytest.fixture
def store() -> TokenStore:
    return TokenStore(Env.current())


def upstream(store: TokenStore, url: str, name: str = "notes") -> HttpUpstream:
    up = HttpUpstream(url, label=name, auth=OAuthBearer(store, name, url))
    up.start(None, None)
    return up


def test_login_stores_tokens_in_a_0600_file_and_the_upstream_uses_them(issued, store):
    server = start(issued)
    try:
        done = login(server.url)
        assert done.returncode == 0, done.stderr
        assert "Signed in to notes" in done.stdout
        path = store.path("notes")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        record = store.get("notes")
        assert record.url == server.url and record.refresh_token and record.client.get("client_id")
        up = upstream(store, server.url)
        try:
            up.request("initialize", INIT, timeout=20)
            who = up.request("tools/call", {"name": "whoami", "arguments": {}}, timeout=20)
            assert record.client["client_id"] in json.dumps(who)
        finally:
            up.close()
    finally:
        server.stop()


def test_an_expired_access_token_is_refreshed_before_use_and_after_a_401(issued, store):
    server = start(issued, "--access-ttl", "2")
    try:
        assert login(server.url).returncode == 0
        first = store.get("notes")
        # our record says it expired: refreshed before the first request
        first.expires_at = time.time() - 10
        store.put(first)
        up = upstream(store, server.url)
        try:
            up.request("initialize", INIT, timeout=20)
            second = store.get("notes")
            assert second.access_token != first.access_token and second.refresh_token != first.refresh_token
            # the server's clock says it expired while ours does not: its 401 makes us refresh
            second.expires_at = time.time() + 3600
            store.put(second)
            up2 = upstream(store, server.url)
            try:
                time.sleep(2.5)
                assert up2.request("initialize", INIT, timeout=20)["serverInfo"]["name"] == "oauth-notes"
                assert store.get("notes").access_token not in (first.access_token, second.access_token)
            finally:
                up2.close()
        finally:
            up.close()
    finally:
        server.stop()


def test_an_expired_refresh_token_fails_the_handshake_naming_synartesis_login(issued, store):
    # tokens that outlive the login itself (on a loaded machine a 1 s token expired while login
    # was still at it, the SDK began a second authorization and this stand-in for the browser
    # answered the first: "state parameter mismatch", CI of stop 30), then both expire
    server = start(issued, "--access-ttl", "4", "--refresh-ttl", "4")
    try:
        assert login(server.url).returncode == 0
        time.sleep(5.2)
        inbox: queue.Queue = queue.Queue()
        up = HttpUpstream(server.url, label="notes", auth=OAuthBearer(store, "notes", server.url))
        up.start(lambda raw, msg: inbox.put(netkit.plain(msg)), None)
        try:
            up.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}).encode())
            msg = inbox.get(timeout=20)
            assert msg["id"] == 0 and msg["error"]["code"] == SIGN_IN_CODE
            assert "synartesis login notes" in msg["error"]["message"]
            assert "expired" in msg["error"]["message"]
        finally:
            up.close()
    finally:
        server.stop()


def test_a_sign_in_is_never_sent_to_another_origin(issued, store, tmp_path):
    server = start(issued)
    other = netkit.crm_http(tmp_path / "crm.json", "crm-token-0123456789")
    relay = netkit.Relay(other.port)
    try:
        assert login(server.url).returncode == 0
        up = upstream(store, f"http://127.0.0.1:{relay.port}/mcp")
        try:
            with pytest.raises(RequestFailed) as err:
                up.request("initialize", INIT, timeout=20)
            assert err.value.kind == "error" and "synartesis login notes" in err.value.message
        finally:
            up.close()
        assert store.get("notes").access_token.encode() not in bytes(relay.up)
    finally:
        relay.close()
        other.stop()
        server.stop()


def test_logout_removes_the_tokens_and_no_token_appears_anywhere_else(issued, store):
    server = start(issued)
    try:
        done = login(server.url)
        assert done.returncode == 0
        up = upstream(store, server.url)
        try:
            up.request("initialize", INIT, timeout=20)
        finally:
            up.close()
        secrets = [json.loads(line)["token"] for line in issued.read_text().splitlines()]
        assert len(secrets) >= 3  # client secret, access and refresh token
        home = Path(os.environ["HOME"])
        leaks = []
        for path in home.rglob("*"):
            if path.is_file() and path != store.path("notes"):
                data = path.read_bytes()
                leaks += [str(path) for s in secrets if s.encode() in data]
        assert not leaks
        assert not [s for s in secrets if s in done.stdout + done.stderr]
        out = run(synartesis_argv("logout", "notes"), text=True, timeout=60)
        assert out.returncode == 0 and "Signed out of notes" in out.stdout
        assert not store.path("notes").exists() and store.get("notes") is None
        again = run(synartesis_argv("logout", "notes"), text=True, timeout=60)
        assert again.returncode == 1 and "no sign-in" in again.stderr
    finally:
        server.stop()


def test_login_fails_clearly_when_the_server_has_no_oauth_or_is_unreachable(tmp_path):
    crm = netkit.crm_http(tmp_path / "crm.json", "crm-token-0123456789")
    try:
        for url, why in ((crm.url, "signing in to crm failed"), ("http://127.0.0.1:1/mcp", "cannot reach")):
            out = run(synartesis_argv("login", "crm", "--url", url, "--no-browser", "--timeout", "5"),
                      text=True, timeout=60)
            assert out.returncode == 1, out
            assert why in out.stderr and "Traceback" not in out.stderr
    finally:
        crm.stop()


# -- through the bridge (synartesis proxy --url) -------------------------------------------------

NOTES_POLICY = "version: 1\nservers:\n  notes: {}\ntools:\n  - match: \"notes.*\"\n    class: readonly\n    gate: never\n"


def _bridge(tmp_path: Path, url: str) -> list[str]:
    from helpers import synartesis_argv as argv
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(NOTES_POLICY, encoding="utf-8")
    return argv("proxy", "--server", "notes", "--manifest", str(policy), "--journal", str(tmp_path / "journal.db"),
                "--url", url)


def test_the_bridge_without_a_sign_in_fails_its_handshake_naming_login_then_works_after_it(issued, store, tmp_path):
    from helpers import RawSession
    server = start(issued, "--access-ttl", "2")
    try:
        with RawSession(_bridge(tmp_path, server.url)) as s:
            init = s.request(0, "initialize", INIT)
            assert init["error"]["code"] == SIGN_IN_CODE and "synartesis login notes" in init["error"]["message"]
            s.close()
            assert "synartesis login notes" in s.stderr_text()
        assert login(server.url).returncode == 0
        time.sleep(2.5)  # the access token expires: the bridge refreshes it
        with RawSession(_bridge(tmp_path, server.url)) as s:
            assert s.handshake()["result"]["serverInfo"]["name"] == "oauth-notes"
            assert "count" in s.call(2, "add_note", {"text": "hello"})["content"][0]["text"]
            s.close()
            stderr = s.stderr_text()
        assert "refreshed the sign-in" in stderr
        secrets = [json.loads(line)["token"] for line in issued.read_text().splitlines()]
        blobs = [stderr.encode(), (tmp_path / "journal.db").read_bytes()]
        blobs += [p.read_bytes() for p in tmp_path.glob("journal.db-*")]
        assert not [t for t in secrets for b in blobs if t.encode() in b]
        # and nowhere under HOME ($SYNARTESIS_HOME, the policy cache, configs) but the token store
        home = Path(os.environ["HOME"])
        leaks = [str(p) for p in home.rglob("*") if p.is_file() and p != store.path("notes")
                 for t in secrets if t.encode() in p.read_bytes()]
        assert not leaks, leaks
    finally:
        server.stop()



def test_an_oauth_server_installed_before_its_sign_in_is_drafted_from_its_tools_after_it(issued, tmp_path):
    """install --include-oauth cannot list the tools of a server that wants a sign-in: it says so
    and writes a placeholder that holds every call; `login` then names the `init` that drafts
    real rules, which reaches the server through the relay with the stored sign-in."""
    import shlex

    from installkit import make_env, place
    from synartesis.services.install import InstallOptions, apply_install, plan_install

    server = start(issued)
    try:
        home = Path(os.environ["HOME"])
        place(home, "claude-code", json.dumps({"mcpServers": {"notes": {"type": "http", "url": server.url}}}))
        env = make_env(home)
        proxy = str(Path(sys.executable).parent / "synartesis")
        plan = plan_install(env, InstallOptions(client="claude-code", proxy_path=proxy, system_root=tmp_path / "s",
                                                include_oauth=True, start=True, timeout=60))
        (err,) = plan.start_errors.values()
        assert "synartesis login notes" in str(err) and '{"ts"' not in str(err)  # the relay's log is quiet
        assert plan.logins == ["synartesis login notes"] and apply_install(env, plan).ok
        done = login(None)  # found in ~/.claude.json
        assert done.returncode == 0, done.stderr
        hint = done.stdout.split("draft rules from its tools now with:")[1].strip().splitlines()[0]
        argv = shlex.split(hint)
        assert argv[:4] == ["synartesis", "init", "notes", "--"] and "remote-relay" in argv
        made = run(synartesis_argv(*argv[1:]), text=True, timeout=120)
        assert made.returncode == 0 and "from its 3 advertised tool(s)" in made.stdout, made.stdout + made.stderr
        policy = (home / ".synartesis" / "synartesis.yaml").read_text()
        assert '"notes.add_note"' in policy and '"notes.whoami"' in policy
        assert not [t for t in (json.loads(x)["token"] for x in issued.read_text().splitlines()) if t in policy]
    finally:
        server.stop()


def test_an_oauth_server_signed_in_before_install_is_drafted_fail_closed_from_its_tools(issued, tmp_path):
    """An unknown remote server: install reaches it through remote-relay with the stored sign-in
    and drafts every advertised tool as held (no shipped policy knows oauth-notes)."""
    from installkit import make_env, place
    from synartesis.services.install import InstallOptions, apply_install, plan_install

    server = start(issued)
    try:
        home = Path(os.environ["HOME"])
        place(home, "claude-code", json.dumps({"mcpServers": {"notes": {"type": "http", "url": server.url}}}))
        assert login(None).returncode == 0  # the entry is not wrapped yet: found by name all the same
        env = make_env(home)
        plan = plan_install(env, InstallOptions(client="claude-code", proxy_path=str(Path(sys.executable).parent /
                                                                                       "synartesis"),
                                                system_root=tmp_path / "s", include_oauth=True, start=True, timeout=60))
        assert not plan.start_errors, plan.start_errors
        (p,) = plan.policy_plans
        assert (p.source, p.policy_id, p.todo_count) == ("drafted", None, 3), p
        assert apply_install(env, plan).ok
        policy = (home / ".synartesis" / "synartesis.yaml").read_text()
        assert policy.count('gate: "always"') == 3 and '"notes.add_note"' in policy
    finally:
        server.stop()
