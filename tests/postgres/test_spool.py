"""`journal_fallback: spool`: while the team journal cannot be reached, calls are journalled
into a local spool (marked as such) instead of held; the next proxy that reaches the journal
ships the ended runs, whose chain still audits and whose undo works."""

from __future__ import annotations

import pgkit
from helpers import FS_POLICY, cli, open_journal, proxy_argv


def test_spooled_runs_are_shipped_to_the_journal_once_it_is_back_and_undo_works(tmp_path, fs_server, pg_server,
                                                                              monkeypatch):
    monkeypatch.setenv("PGPASSWORD", pgkit.PASSWORD)
    name = f"later_{pgkit.free_port()}"
    url = pg_server.url(name)  # a database that does not exist yet: the journal cannot be reached
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(FS_POLICY.replace("version: 1\n", f"version: 1\njournal: {url}\njournal_fallback: spool\n"))
    argv = [a for a in proxy_argv("files", manifest, "x", [*fs_server, str(root)]) if a not in ("--journal", "x")]
    [(err, text)] = pgkit.agent_calls(argv, [("write_file", {"path": str(root / "a.txt"), "content": "spooled"})])
    assert not err, text
    assert (root / "a.txt").read_text() == "spooled"
    spools = list((tmp_path / "home" / ".synartesis" / "spool").glob("*.db"))
    assert len(spools) == 1 and spools[0].stat().st_mode & 0o777 == 0o600
    with open_journal(spools[0]) as s:
        [run] = s.list_runs()
        kinds = [k for (k,) in s.conn.execute("SELECT kind FROM events WHERE run_id = ? ORDER BY id", (run.id,))]
        assert kinds[:2] == ["run.begin", "run.spooled"]

    with pg_server.admin() as c:  # the journal is back
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        [(err, _)] = pgkit.agent_calls(argv, [("read_text_file", {"path": str(root / "a.txt")})])
        assert not err
        with open_journal(url) as j:
            runs = {r.id: r for r in j.list_runs()}
            assert run.id in runs and len(runs) == 2 and j.audit(run.id).ok
        with open_journal(spools[0]) as s:
            assert s.list_runs() == []  # shipped, and gone from the spool
        undone = cli("undo", run.id[:8], "--manifest", str(manifest))
        assert undone.returncode == 0, undone.stdout + undone.stderr
        assert (root / "a.txt").read_text() == "a0"
    finally:
        pg_server.drop_database(name)
