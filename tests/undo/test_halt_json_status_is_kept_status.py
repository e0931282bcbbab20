"""A new user's round 22, #3: `undo --json` of a halt that sent nothing said `"status":
"partial"` beside `"stays": "complete"`, while the text said the run stays complete and `list`
showed it complete. The JSON status of such a halt is the status the run keeps."""

from __future__ import annotations

import json

from helpers import cli, files_run


def test_a_halt_that_sent_nothing_reports_the_status_the_run_keeps(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"b.txt": "line1\n"}, [
        ("edit_file", {"path": "{root}/b.txt", "edits": [{"oldText": "line1", "newText": "L1"}]})])
    (root / "b.txt").write_text("L1\nhuman\n")
    for extra in ([], ["--replan"], ["--dry-run"]):
        p = cli("undo", *extra, "--json", *flags)
        doc = json.loads(p.stdout)
        assert p.returncode == 1 and doc["halted"] and doc["sent"] == 0, (extra, doc)
        assert doc["status"] == "complete" and doc["statusText"] == doc["stays"] == "complete", (extra, doc)
    listed = json.loads(cli("list", "--json", *flags).stdout)
    assert "complete" in json.dumps(listed), listed
    assert (root / "b.txt").read_text() == "L1\nhuman\n"


def test_a_halt_after_an_undo_that_halted_part_way_says_the_session_stays_partial(tmp_path, fs_server):
    # a new user's round 30, U1: an undo reverted one run of the session and halted on the other
    # (`list`: partial); the next undo halted again and said "the session stays complete", the
    # halted run's own status, with "status": "complete" in --json
    import os

    from helpers import FS_POLICY, proxy_argv, run_async, sdk_session

    policy = FS_POLICY.replace("servers:\n  files: {}\n", "servers:\n  files: {}\n  scratch: {}\n")
    policy += FS_POLICY.split("tools:\n", 1)[1].replace("files.", "scratch.")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(policy)
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "f.txt").write_text("before\n")
    env = dict(os.environ)

    async def agent():
        async with sdk_session(proxy_argv("files", manifest, journal, [*fs_server, str(a)]), env=env) as one, \
                sdk_session(proxy_argv("scratch", manifest, journal, [*fs_server, str(b)]), env=env) as two:
            await one.call_tool("write_file", {"path": str(a / "f.txt"), "content": "agent\n"})
            await two.call_tool("write_file", {"path": str(b / "f.txt"), "content": "agent\n"})
    run_async(agent())
    flags = ("--manifest", str(manifest), "--journal", str(journal))
    [session] = json.loads(cli("list", "--json", *flags).stdout)
    assert len(session["runs"]) == 2, session
    (a / "f.txt").write_text("a person's edit\n")  # the older run's file drifts
    first = json.loads(cli("undo", "--json", *flags).stdout)
    assert first["halted"] and first["status"] == "partial", first
    assert (b / "f.txt").read_text() == "before\n"
    [session] = json.loads(cli("list", "--json", *flags).stdout)
    assert session["status"] == "partial", session
    p = cli("undo", *flags)
    assert p.returncode == 1 and "the session stays partial" in " ".join(p.stdout.split()), p.stdout
    doc = json.loads(cli("undo", "--json", *flags).stdout)
    assert doc["halted"] and doc["sent"] == 0 and doc["status"] == doc["stays"] == "partial", doc
    assert (a / "f.txt").read_text() == "a person's edit\n"
    history = " ".join(cli("history", *flags).stdout.split())
    assert "halted, nothing changed (the session stays partial)" in history, history


def _kv_session(tmp_path):
    from helpers import RawSession, kv_proxy

    manifest, journal, _state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k0", "value": "agent"}).get("isError")
    return ("--manifest", str(manifest), "--journal", str(journal))


def _listed(flags):
    [session] = json.loads(cli("list", "--json", *flags).stdout)
    return session["status"]


def test_an_undo_halted_on_an_inverse_of_unknown_outcome_reports_the_status_list_shows(tmp_path):
    # adversarial review 31, F2: the server died on the inverse (FAKE_CRASH_ON_CALL: its second
    # call, after the drift read); the action is rolling_back and `list` says partial, but the
    # report said "status": "complete" ("stays": "complete"), its RESULT line that the inverse
    # "did not take the resource back", and history "halted, nothing changed"
    import os

    flags = _kv_session(tmp_path)
    crash = dict(os.environ, FAKE_CRASH_ON_CALL="2")
    p = cli("undo", "--yes", "--json", *flags, env=crash)
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["halted"] and doc["sent"] == 1, doc
    assert _listed(flags) == "partial"
    assert doc["status"] == doc["stays"] == "partial", doc
    p = cli("undo", "--yes", *flags, env=crash)
    result = " ".join(p.stdout.split())
    assert p.returncode == 1 and "an inverse was sent and its outcome is unknown; the session is partial" in result, result
    history = " ".join(cli("history", *flags).stdout.split())
    assert "nothing changed" not in history and "halted after a call was sent (the session is partial)" in history, history


def test_a_redo_halted_on_a_call_of_unknown_outcome_reports_the_status_list_shows(tmp_path):
    import os

    flags = _kv_session(tmp_path)
    assert cli("undo", "--yes", *flags).returncode == 0
    p = cli("redo", "--yes", "--json", *flags, env=dict(os.environ, FAKE_CRASH_ON_CALL="2"))
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["halted"] and doc["sent"] == 1, doc
    assert _listed(flags) == "partial"
    assert doc["status"] == doc["stays"] == "partial", doc
