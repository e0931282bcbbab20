"""A new user's round 30, U4: `audit s-1eb7636c` and `prune s-…` answered "'s-…' is not a run id
(ids look like 1e1983ae; sessions like s-1e1983ae)": the input had exactly the session shape the
hint showed. A command that takes runs says that it was given a session id, and where the runs
are listed. Real filesystem server, real proxy."""

from __future__ import annotations

import json

from helpers import FS_POLICY, cli, files_run


def test_audit_and_prune_given_a_session_id_say_they_take_runs(tmp_path, fs_server):
    _root, flags = files_run(tmp_path, fs_server, {"a.txt": "one\n"},
                             [("write_file", {"path": "{root}/a.txt", "content": "two\n"})], policy=FS_POLICY)
    [session] = json.loads(cli("list", "--json", *flags).stdout)
    sid = session["session"]
    for args in (("audit", sid[:10]), ("prune", sid, "--yes")):
        p = cli(*args, *flags)
        assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
        assert "is a session id" in p.stderr and "synartesis list --runs" in p.stderr, p.stderr
    assert cli("audit", *flags).returncode == 0  # nothing was pruned
