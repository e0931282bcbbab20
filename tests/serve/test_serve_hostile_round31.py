"""`synartesis serve --max-sessions` attacked (adversarial review 31).

- F1: a DELETE freed its session's slot before its server process had stopped: closing drains
  the calls in flight (up to ``--drain`` seconds), so with a slow call in flight the next
  ``initialize`` started another server while the ended one still ran (``--max-sessions 1``,
  two server processes; DELETE and initialize again in a loop, as many as the drains allow).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path

from helpers import descendants, open_journal
from test_serve_sessions import _INIT, _init, _post, _serve_kv


def _kv_servers(serve_pid: int) -> list[int]:
    """The fake kv server processes under ``serve_pid``."""
    out = []
    for pid in descendants(serve_pid):
        try:
            if b"fake_server" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


def _sent(journal: Path) -> bool:
    """Whether the slow call's row is recorded (it is sent right after)."""
    if not journal.exists():
        return False
    with open_journal(journal) as j:
        return any(a.tool == "slow_put" for r in j.list_runs() for a in j.actions(r.id))


def _initialize(port: int, token: str) -> tuple[int, str | None, str | None]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/servers/kv/mcp", json.dumps(_INIT), {
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    r = c.getresponse()
    r.read()
    return r.status, r.getheader("mcp-session-id"), r.getheader("retry-after")


def test_a_session_still_closing_keeps_its_slot_until_its_server_has_stopped(tmp_path):
    proc, port, token = _serve_kv(tmp_path, "--max-sessions", "1")
    try:
        sid = _init(port, token)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "slow_put", "arguments": {"key": "k0", "value": "A", "delay": 4}}}
        answered: dict = {}
        slow = threading.Thread(target=lambda: answered.update(call=_post(port, token, call, sid, timeout=60)))
        slow.start()
        ended: dict = {}

        def delete() -> None:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("DELETE", "/servers/kv/mcp", headers={"Authorization": f"Bearer {token}", "Mcp-Session-Id": sid})
            ended["status"] = c.getresponse().status
        deadline = time.monotonic() + 20
        while not _sent(tmp_path / "j.db") and time.monotonic() < deadline:
            time.sleep(0.02)  # until the call is at the server: the DELETE then drains it
        closing = threading.Thread(target=delete)
        closing.start()
        # the session is gone from the table at once (its POSTs get 404) while its server drains
        # (a notification: answered 202 at once while the session is open; a request would wait
        # for the server, busy with the slow call)
        while _post(port, token, {"jsonrpc": "2.0", "method": "notifications/adv31"}, sid)[0] != 404 \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _kv_servers(proc.pid), "the ended session's server is still draining its call"
        status, new_sid, retry = _initialize(port, token)
        assert status == 503 and retry and new_sid is None, (status, len(_kv_servers(proc.pid)))
        closing.join(60)
        slow.join(60)
        assert ended["status"] == 200 and answered["call"][0] == 200
        assert _init(port, token)  # the slot is back once the server has stopped
    finally:
        proc.terminate()
        proc.wait(30)
