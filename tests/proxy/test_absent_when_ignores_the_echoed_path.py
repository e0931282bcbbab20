"""A read's ``absent_when`` phrase is matched against the server's error, not against the echo of
the path the read asked for (adversarial review 16, F2): a file named ``ENOENT-notes.txt`` that
the server could not read for another reason counted as absent, so its write went through with
no snapshot, and its undo would have deleted it."""

from __future__ import annotations

from helpers import FS_POLICY, RawSession, files_proxy, open_journal
from synartesis.proxy.pipeline import classify_read

READ = {"server": "files", "tool": "read_text_file", "absent_when": ["ENOENT"]}


def _error(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def test_a_permission_error_on_a_file_whose_name_holds_the_phrase_is_a_failed_read():
    read = {**READ, "args": {"path": "/data/ENOENT-notes.txt"}}
    out = classify_read(read, _error("Error: EACCES: permission denied, open '/data/ENOENT-notes.txt'"), 1 << 20)
    assert out.kind == "failed" and "EACCES" in out.reason


def test_the_server_s_own_phrase_still_means_absent_whatever_the_path_holds():
    read = {**READ, "args": {"path": "/data/ENOENT-notes.txt"}}
    said = "Error: ENOENT: no such file or directory, open '/data/ENOENT-notes.txt'"
    assert classify_read(read, _error(said), 1 << 20).kind == "absent"
    # the server resolved the path its own way (a symlinked folder): its last part is left out
    said = "Error: EACCES: permission denied, open '/private/data/ENOENT-notes.txt'"
    assert classify_read(read, _error(said), 1 << 20).kind == "failed"
    # a path without the phrase is left alone; the code in structuredContent still counts
    plain = {**READ, "args": {"path": "/tmp/e"}}
    coded = {**_error("no such file"), "structuredContent": {"code": "ENOENT"}}
    assert classify_read(plain, coded, 1 << 20).kind == "absent"
    assert classify_read(plain, _error("Error: ENOENT: no such file, open '/tmp/e'"), 1 << 20).kind == "absent"


def test_a_write_outside_the_server_s_folders_to_such_a_name_is_refused_not_forwarded(tmp_path, fs_server):
    """The real filesystem server echoes the path in its refusal ("Access denied - path outside
    allowed directories: …/ENOENT-notes.txt"); that was read as "not there yet"."""
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "ENOENT-notes.txt"
    with RawSession(argv) as s:
        s.handshake()
        answer = s.call(1, "write_file", {"path": str(target), "content": "new"})
    assert answer.get("isError"), answer
    text = answer["content"][0]["text"]
    assert text.startswith("Synartesis blocked files.write_file and did not send it") and "Access denied" in text, text
    assert not target.exists()
    with open_journal(tmp_path / "j.db") as j:
        statuses = [a.status for r in j.list_runs() for a in j.actions(r.id)]
    assert statuses == ["failed"], statuses  # not sent: nothing to undo
