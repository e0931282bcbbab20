"""The proxy is transparent: the same scripted session, sent directly to the real filesystem
server and through the proxy, gives byte-identical lines for everything not intercepted."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import RawSession, files_proxy, proxy_argv


def _script(root: Path) -> list:
    """(message, wait_for_id) pairs; the roots/list answer is produced on demand."""
    return [
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, 1),
        ({"jsonrpc": "2.0", "id": 2, "method": "no/such_method", "params": {}}, 2),
        ({"jsonrpc": "2.0", "id": "s-3", "method": "tools/call",
          "params": {"name": "read_text_file", "arguments": {"path": str(root / "a.txt")}}}, "s-3"),
        ({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
          "params": {"name": "read_text_file", "arguments": {"path": str(root / "missing.txt")}}}, 4),
        ({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
          "params": {"name": "list_directory", "arguments": {"path": str(root)}, "_meta": {"progressToken": 7}}}, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": "prompts/list"}, 6),
        ([{"jsonrpc": "2.0", "id": 7, "method": "ping"}], None),  # a batch without tools/call
        ({"jsonrpc": "2.0", "id": 8, "method": "ping"}, 8),
        ({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
          "params": {"name": "read_text_file", "arguments": {"path": str(root / "a.txt")}}}, None),
        ({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "test"}}, None),
        ({"jsonrpc": "2.0", "id": 10, "method": "ping"}, 10),
        ({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
          "params": {"name": "read_text_file", "arguments": {"path": str(root / "a.txt"), "head": 1, "tail": 1}}}, 11),
    ]


def _session(argv: list[str], root: Path) -> tuple[dict, list[bytes]]:
    """Run the script; return the initialize result and every other line received, in order."""
    with RawSession(argv) as s:
        s.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": {"name": "transparency", "version": "1"}}})
        _, init = s.wait_for(0)
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        received: list[bytes] = []
        # the server asks the client for its roots (a server→client request)
        line = s.read_line()
        received.append(line)
        req = json.loads(line)
        assert req["method"] == "roots/list"
        s.send({"jsonrpc": "2.0", "id": req["id"], "result": {"roots": [{"uri": root.as_uri(), "name": "root"}]}})
        for msg, wait in _script(root):
            s.send(msg)
            if wait is None:
                continue
            while True:
                line = s.read_line()
                received.append(line)
                parsed = json.loads(line)
                if isinstance(parsed, dict) and parsed.get("id") == wait and "method" not in parsed:
                    break
        assert s.close() == 0
    return init, received


def test_proxied_session_is_byte_identical_to_direct(tmp_path, fs_server):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes("line one\r\nζωή — ünïcode\n".encode())
    direct_init, direct = _session([*fs_server, str(root)], root)

    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text("version: 1\nservers:\n  files: {}\ntools:\n"
                        "  - match: \"files.*\"\n    class: readonly\n")
    proxied_init, proxied = _session(
        proxy_argv("files", manifest, tmp_path / "journal.db", [*fs_server, str(root)]), root)

    # initialize: identical apart from the instructions the proxy adds
    theirs = direct_init["result"].pop("instructions", None)
    ours = proxied_init["result"].pop("instructions")
    assert proxied_init == direct_init
    assert ours.startswith("These tools are guarded by Synartesis")
    if theirs:
        assert ours.endswith(theirs)
    # the server may or may not answer call 9 after its cancellation (a race in the server, the
    # same with or without the proxy), so that one answer is left out of the comparison
    direct, proxied = ([line for line in lines if json.loads(line).get("id") != 9] for lines in (direct, proxied))
    assert len(proxied) == len(direct) >= 10
    for d, p in zip(direct, proxied):
        assert p == d


def test_tools_call_in_a_batch_is_refused_not_forwarded(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server)
    with RawSession(argv) as s:
        s.handshake()
        s.send([{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "write_file", "arguments": {"path": str(root / "x"), "content": "x"}}}])
        reply = json.loads(s.read_line())
        assert isinstance(reply, list) and reply[0]["id"] == 1 and "batch" in reply[0]["error"]["message"]
        s.close()
    assert not (root / "x").exists()


def test_escaped_method_name_is_still_intercepted(tmp_path, fs_server):
    """`"tools\\/call"` is valid JSON for tools/call: routing parses, never substring-matches."""
    root, argv = files_proxy(tmp_path, fs_server)
    with RawSession(argv) as s:
        s.handshake()
        s.send(b'{"jsonrpc":"2.0","id":1,"method":"tools\\/call","params":{"name":"write_file","arguments":{"path":"'
               + str(root / "x").encode() + b'","content":"x"}}}')
        _, reply = s.wait_for(1)
        assert reply["result"]["isError"] is True
        assert "holding this call" in reply["result"]["content"][0]["text"]
        s.close()
    assert not (root / "x").exists()


def test_huge_line_passes_through_unchanged(tmp_path, fs_server):
    root = tmp_path / "root"
    root.mkdir()
    big = ("0123456789abcdef" * 4096 + "\n") * 64  # ~4 MiB file, an ~8 MiB response line
    (root / "big.txt").write_text(big)
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text("version: 1\nservers:\n  files: {}\ntools:\n  - match: \"files.read_*\"\n    class: readonly\n")
    with RawSession(proxy_argv("files", manifest, tmp_path / "j.db", [*fs_server, str(root)])) as s:
        s.handshake()
        result = s.call(1, "read_text_file", {"path": str(root / "big.txt")}, timeout=60)
        assert result["structuredContent"]["content"] == big
        s.close()
