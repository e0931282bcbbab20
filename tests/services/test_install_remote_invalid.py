"""install leaves a remote entry that could only fail at launch as it is, and says why
(adversarial review #19): before, it was wrapped and status showed it covered."""

from __future__ import annotations

import json

from installkit import install, make_env, place
from synartesis.services.status import collect_status


def test_entries_that_can_only_fail_at_launch_are_left_unwrapped_with_the_reason(fake_home, tmp_path):
    text = json.dumps({"mcpServers": {
        "ftp": {"type": "ftp", "url": "ftp://x"},
        "scheme": {"type": "http", "url": "file:///etc/passwd"},
        "crlf": {"type": "http", "url": "https://h.example/mcp", "headers": {"X-A": "a\r\nX-Injected: b"}},
        "url_crlf": {"type": "http", "url": "https://h.example/m\r\nX-Injected: b"},
        "url_tab": {"url": "https://h.example/\tmcp"},
        "url_number": {"type": "http", "url": 8080},
        "fine": {"type": "http", "url": "https://ok.example/mcp", "headers": {"Authorization": "Bearer ${K}"}},
    }}, indent=2)
    cfg = place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="claude-code", include_oauth=True)
    assert result.ok
    acts = {e.name: e for e in plan.entries}
    assert acts["fine"].action == "wrap"
    assert acts["ftp"].action == "invalid" and '"type" is' in acts["ftp"].reason, acts["ftp"]
    assert acts["scheme"].action == "invalid" and "http:// or https://" in acts["scheme"].reason
    assert acts["crlf"].action == "invalid" and "line break" in acts["crlf"].reason
    for name in ("url_crlf", "url_tab"):
        assert acts[name].action == "invalid" and "url contains a line break" in acts[name].reason, acts[name]
    assert acts["url_number"].action == "invalid" and "url is not a string" in acts["url_number"].reason
    servers = json.loads(cfg.read_text())["mcpServers"]
    for name in ("ftp", "scheme", "crlf", "url_crlf", "url_tab", "url_number"):
        assert servers[name] == json.loads(text)["mcpServers"][name]
    rows = {r.name: r for r in collect_status(env).rows}
    for name in ("ftp", "scheme", "crlf", "url_crlf", "url_tab", "url_number"):
        assert not rows[name].covered and rows[name].state == "invalid" and rows[name].reason, rows[name]
    assert rows["fine"].covered
