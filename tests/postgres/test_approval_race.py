"""Two proxies (two machines' agents) race for one approval in a PostgreSQL journal: exactly
one call goes through."""

from __future__ import annotations

import asyncio
import os

import pgkit
from helpers import FS_POLICY, cli, open_journal, proxy_argv, sdk_session

POLICY = FS_POLICY + """  - match: "files.create_directory"
    class: irreversible
"""


def test_two_proxies_racing_for_one_approval_let_exactly_one_call_through(tmp_path, fs_server, pg_journal_url):
    root = tmp_path / "root"
    root.mkdir()
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(POLICY)
    url = pg_journal_url()
    argv = proxy_argv("files", manifest, url, [*fs_server, str(root)])
    call = ("create_directory", {"path": str(root / "release")})
    [(held, _)] = pgkit.agent_calls(argv, [call])
    assert held and not (root / "release").exists()
    assert cli("approve", "--all", "--by", "ana@laptop", "--journal", url, "--no-read").returncode == 0

    async def race():
        envs = [dict(os.environ, SYNARTESIS_HOST=f"machine-{n}") for n in (1, 2)]
        async with sdk_session(argv, env=envs[0]) as a, sdk_session(argv, env=envs[1]) as b:
            return await asyncio.gather(a.call_tool(*call), b.call_tool(*call))

    results = asyncio.run(race())
    assert sorted(r.is_error for r in results) == [False, True]  # one through, one held again
    assert (root / "release").is_dir()
    with open_journal(url) as j:
        rows = [a for r in j.list_runs() for a in j.actions(r.id) if a.tool == "create_directory"]
        carried = [a for a in rows if a.decided_by == "ana@laptop" and a.status == "applied"]
        spent = [a for a in rows if a.used_by]
        assert len(carried) == 1 and len(spent) == 1 and spent[0].used_by == carried[0].id
        assert [a.status for a in rows].count("gated") == 1  # the loser's call waits for a new decision
        assert all(j.audit(r.id).ok for r in j.list_runs())
