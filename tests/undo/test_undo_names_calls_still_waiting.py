"""A new user's finding (round 6): `undo` of a session that also held a call still waiting for
approval said nothing about it, and approving it afterwards would let the agent's retry make
the change after all. Undo now names such calls and the `synartesis deny` that refuses each.
Real filesystem server, real proxy."""

from __future__ import annotations

import json
import re

from helpers import FS_POLICY, RawSession, cli, files_proxy


def test_undo_names_the_calls_still_waiting_for_approval_and_how_to_deny_them(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    (root / "a.txt").write_text("before\n")
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    with RawSession(argv) as s:
        s.handshake()
        assert not s.call(1, "write_file", {"path": str(root / "a.txt"), "content": "agent\n"}).get("isError")
        assert s.call(2, "write_file", {"path": str(root / "new.txt"), "content": "x\n"}).get("isError")  # held
    plan = json.loads(cli("undo", "--dry-run", "--json", *flags).stdout)
    [waiting] = plan["waiting"]
    assert waiting["tool"] == "files.write_file" and waiting["seq"] == 2, waiting
    done = cli("undo", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    assert ("1 call of this session is still waiting for approval: undo leaves it held, and approved later the "
            "agent's retry would go through. To refuse: synartesis deny " + waiting["action"][:8]) in text, text
    assert (root / "a.txt").read_text() == "before\n" and not (root / "new.txt").exists()
    # the run alone, with nothing left to undo, says it too; the command it shows works
    run = waiting["run"][:8]
    again = cli("undo", run, *flags)
    assert again.returncode == 1 and "nothing undone" in again.stdout, again.stdout
    [deny] = re.findall(r"synartesis deny \w+", again.stdout)
    assert cli(*deny.split()[1:], *flags).returncode == 0
    assert json.loads(cli("undo", run, "--dry-run", "--json", *flags).stdout)["waiting"] == []
