"""`history` (issue 10 item 7): approvals and denials sit beside undos and redos, each with
who (the OS user, or `--by`), when, the reason of a denial and the original call; `audit`
still proves the chain. Real filesystem server, real proxy, real CLI."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, cli, open_journal, proxy_argv, run_async, sdk_session


def test_history_lists_approvals_and_denials_with_who_why_and_the_held_call(tmp_path, fs_server):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("before\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(FS_POLICY)
    argv = proxy_argv("files", manifest, journal, [*fs_server, str(root)])
    env = dict(os.environ, USER="os-user")  # the default actor

    def run_cli(*args):
        return cli(*args, "--manifest", str(manifest), "--journal", str(journal), env=env)

    async def agent():
        async with sdk_session(argv) as s:
            assert not (await s.call_tool("write_file", {"path": str(root / "a.txt"), "content": "agent"})).is_error
            for name in ("new.txt", "other.txt"):  # nothing to restore: both held
                assert (await s.call_tool("write_file", {"path": str(root / name), "content": "x"})).is_error
    run_async(agent())
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        first, second = [a for a in j.actions(run.id) if a.status == "gated"]
    assert run_cli("approve", first.id[:8], "--no-read", "--by", "ana").returncode == 0
    assert run_cli("deny", second.id[:8], "--reason", "not in this folder").returncode == 0
    assert run_cli("undo").returncode == 0

    entries = json.loads(run_cli("history", run.id[:8], "--json").stdout)
    assert [(e["kind"], e["by"]) for e in entries] == [("approved", "ana"), ("denied", "os-user"), ("undo", "os-user")]
    approved, denied, undo = entries
    assert approved["call"]["args"] == {"path": str(root / "new.txt"), "content": "x"} and approved["reason"] is None
    assert denied["call"]["args"]["path"] == str(root / "other.txt") and denied["reason"] == "not in this folder"
    assert approved["at"] <= denied["at"] <= undo["at"]
    assert [s["call"]["args"]["path"] for s in undo["steps"] if s["kind"] == "revert"] == [str(root / "a.txt")]
    text = run_cli("history").stdout
    assert "approved by ana" in text and "denied by os-user" in text and "reason: not in this folder" in text
    assert "undo of session" in text and "by os-user" in text
    mine = json.loads(run_cli("history", "--by", "ana", "--json").stdout)
    assert [(e["kind"], e["by"]) for e in mine] == [("approved", "ana")]
    none = run_cli("history", run.id[:8], "--by", "nobody")
    assert none.returncode == 0 and "nothing was undone, redone, approved or denied in" in none.stdout
    assert none.stdout.split(" (journal: ")[0].endswith("by nobody"), none.stdout
    assert run_cli("audit").returncode == 0
    nothing = run_cli("history", "no-such-run")
    assert nothing.returncode == 2 and "Traceback" not in nothing.stderr
