"""Who may talk to the window: only this machine (it refuses to bind anything but loopback), only
with this launch's token (traded once for an HttpOnly SameSite=Strict cookie), only under its
own Host name, never from another site's Origin; and the page loads nothing from the network."""

from __future__ import annotations

import re
import sys

import httpx
import pytest
from desktopkit import Desktop
from helpers import run

from synartesis.desktop.app import STATIC
from synartesis.desktop.guard import Guard, check_loopback


@pytest.fixture
def window(tmp_path):
    """A window with no policy (these tests never start a server)."""
    desk = Desktop(cwd=tmp_path)
    yield desk
    desk.stop()


def test_a_request_without_the_token_is_refused(window):
    for path in ("/", "/api/state", "/static/app.js", "/api/history", "/api/events"):
        r = httpx.get(window.base + path, timeout=10)
        assert r.status_code == 403 and "token" in r.text, path


def test_a_wrong_token_is_refused_and_sets_no_cookie(window):
    r = httpx.get(window.base + "/?token=" + "x" * len(window.token), timeout=10)
    assert r.status_code == 403 and "set-cookie" not in r.headers


def test_the_token_becomes_an_httponly_strict_cookie_and_leaves_the_address(window):
    r = httpx.get(window.url, timeout=10)
    assert r.status_code == 303 and r.headers["location"] == "/"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and "Path=/" in cookie
    page = httpx.get(window.base + "/", cookies=r.cookies, timeout=10)
    assert page.status_code == 200 and "<title>synartesis</title>" in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["cache-control"] == "no-store"


def test_a_foreign_origin_is_refused_even_with_the_cookie(window):
    for origin in ("http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1"):
        r = window.client.get("/api/state", headers={"origin": origin})
        assert r.status_code == 403 and "other sites" in r.text, origin
        r = window.client.post("/api/conversations", json={}, headers={"origin": origin})
        assert r.status_code == 403, origin
    assert window.client.get("/api/state", headers={"origin": window.base}).status_code == 200


def test_another_host_name_is_refused_so_dns_rebinding_cannot_reach_it(window):
    port = window.base.rsplit(":", 1)[1]
    r = window.client.get("/api/state", headers={"host": f"attacker.example:{port}"})
    assert r.status_code == 403 and "loopback" in r.text
    assert window.client.get("/api/state", headers={"host": f"localhost:{port}"}).status_code == 200


def test_a_change_must_be_json_so_a_plain_form_cannot_post(window):
    r = window.client.post("/api/conversations", content=b"a=1",
                           headers={"content-type": "application/x-www-form-urlencoded", "origin": window.base})
    assert r.status_code == 403


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.2", "example.com", ""])
def test_a_host_that_is_not_loopback_is_refused_before_binding(host, tmp_path):
    r = run([sys.executable, "-m", "synartesis", "desktop", "--no-browser", "--host", host], text=True, timeout=60,
            cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "loopback" in r.stderr and "Traceback" not in r.stderr and "http://" not in r.stdout


@pytest.mark.parametrize("host, bound", [("127.0.0.1", "127.0.0.1"), ("127.0.0.2", "127.0.0.2"), ("::1", "::1"),
                                         ("[::1]", "::1"), ("localhost", "127.0.0.1"), ("LOCALHOST", "127.0.0.1")])
def test_loopback_addresses_are_accepted(host, bound):
    assert check_loopback(host) == bound


def test_the_guard_accepts_only_its_own_host_and_origin():
    g = Guard("127.0.0.1", 8123, "t" * 43)
    assert g.host_ok("127.0.0.1:8123") and g.host_ok("localhost:8123")
    assert not g.host_ok("127.0.0.1:8124") and not g.host_ok(None) and not g.host_ok("127.0.0.1")
    assert g.origin_ok(None) and g.origin_ok("http://localhost:8123")
    assert not g.origin_ok("http://127.0.0.1:8123.evil.example") and not g.origin_ok("file://")
    assert g.refusal({"host": "127.0.0.1:8123"}, None, "t" * 43) is None
    assert g.refusal({"host": "127.0.0.1:8123"}, "t" * 42, None) is not None


def test_the_page_loads_nothing_from_the_network():
    for f in STATIC.iterdir():
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"""(src|href|url|@import|fetch|EventSource)\s*[=(]?\s*["']?(https?:)?//""", text), f.name
        assert "innerHTML" not in text and "eval(" not in text and "document.write" not in text, f.name


def test_hostile_requests_get_a_clear_error_and_no_traceback(window):
    h = {"origin": window.base, "content-type": "application/json"}
    assert window.client.post("/api/actions/abc/explode", content=b"{}", headers=h).status_code == 404
    assert window.client.post("/api/conversations/nope/messages", content=b'{"text":"x"}', headers=h).status_code == 404
    r = window.client.post("/api/conversations", content=b"{not json", headers=h)
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    r = window.client.post("/api/conversations", content=b"[1, 2]", headers=h)
    assert r.status_code == 400 and "object" in r.json()["error"]
    r = window.client.post("/api/actions/zz-not-an-id/approve", content=b"{}", headers=h)
    assert r.status_code in (400, 409) and "error" in r.json()
    r = window.client.post("/api/undo", content=b'{"since": {"run": "x", "seq": "1"}}', headers=h)
    assert r.status_code == 400
    r = window.client.put("/api/profiles/custom", content=b'{"baseUrl": "ftp://x"}', headers=h)
    assert r.status_code == 400 and "http" in r.json()["error"]
    assert window.proc.poll() is None


def test_a_port_in_use_is_a_clear_configuration_error(tmp_path):
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = run([sys.executable, "-m", "synartesis", "desktop", "--no-browser", "--port", str(port)], text=True,
                timeout=60, cwd=tmp_path)
    assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr
