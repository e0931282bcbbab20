"""Team roles in a PostgreSQL journal: a member cannot approve or undo another user's run,
neither through the CLI nor by SQL as that database role; an admin can, and the chain says who."""

from __future__ import annotations

import os

import pgkit
import psycopg
import pytest
from helpers import FS_POLICY, cli, open_journal, proxy_argv

POLICY = FS_POLICY + """  - match: "files.create_directory"
    class: irreversible
"""


def test_a_member_may_not_touch_another_users_run_and_an_admin_may(tmp_path, fs_server, pg_server, pg_journal_url):
    owner_url = pg_journal_url()
    db = owner_url.rsplit("/", 1)[1]
    ana, bo, carol = (f"{n}_{db}" for n in ("ana", "bo", "carol"))
    with pg_server.admin() as c:
        for role in (ana, bo, carol):
            c.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{pgkit.PASSWORD}'")
    url = {who: pg_server.url(db, user=who) for who in (ana, bo, carol)}
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(POLICY)
    try:
        open_journal_made = cli("team", "list", "--journal", owner_url)
        assert open_journal_made.returncode == 2 and "no journal" in open_journal_made.stderr
        from synartesis.journal import Journal
        Journal.open(owner_url, create=True).close()  # the admin makes the journal
        for who, role in ((ana, "member"), (bo, "member"), (carol, "admin")):
            added = cli("team", "add", who, "--role", role, "--journal", owner_url)
            assert added.returncode == 0, added.stderr
        # ana's agent, on ana's machine: a write, and a call held for approval
        env_ana = dict(os.environ, USER="ana", SYNARTESIS_HOST="ana-laptop")
        argv = proxy_argv("files", manifest, url[ana], [*fs_server, str(root)])
        results = pgkit.agent_calls(argv, [("write_file", {"path": str(root / "a.txt"), "content": "ana's"}),
                                           ("create_directory", {"path": str(root / "release")})], env=env_ana)
        assert [err for err, _ in results] == [False, True]
        with open_journal(owner_url) as j:
            [run] = j.list_runs()
            assert j.run_owners([run.id]) == {run.id: ana} and run.host == "ana-laptop"
            [held] = j.list_gated()

        # bo, a member, through the CLI: refused, nothing changes
        env_bo = dict(os.environ, USER="bo", SYNARTESIS_HOST="bo-desktop")
        approve = cli("approve", held.id[:8], "--journal", url[bo], "--no-read", env=env_bo)
        assert approve.returncode == 1 and "only runs of their own user" in approve.stderr + approve.stdout
        undo = cli("undo", run.id[:8], "--manifest", str(manifest), "--journal", url[bo], env=env_bo)
        assert undo.returncode == 1 and "only runs of their own user" in undo.stderr + undo.stdout
        assert (root / "a.txt").read_text() == "ana's"
        # bo's own SQL as that database role: row-level security and privileges stop it
        with psycopg.connect(url[bo], password=pgkit.PASSWORD, autocommit=True) as c:
            assert c.execute("UPDATE actions SET status = 'approved', decided_by = 'bo' WHERE id = %s",
                             (held.id,)).rowcount == 0
            assert c.execute("UPDATE runs SET owner = %s WHERE id = %s", (bo, run.id)).rowcount == 0
            assert c.execute("DELETE FROM events WHERE run_id = %s", (run.id,)).rowcount == 0
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("UPDATE team SET role = 'admin' WHERE name = %s", (bo,))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("DELETE FROM blobs")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # a forged undo row
                c.execute("INSERT INTO undos (id, run_id, by, started_at, status) VALUES ('x', %s, 'bo', 'now', "
                          "'running')", (run.id,))
        with open_journal(owner_url) as j:
            assert j.get_action(held.id).status == "gated" and j.audit(run.id).ok

        # carol, an admin, may: the approval and the undo name her, with her machine
        env_carol = dict(os.environ, USER="carol", SYNARTESIS_HOST="carol-mac")
        ok = cli("approve", held.id[:8], "--journal", url[carol], "--no-read", env=env_carol)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        undone = cli("undo", run.id[:8], "--manifest", str(manifest), "--journal", url[carol], env=env_carol)
        assert "restored (verified)" in undone.stdout, undone.stdout + undone.stderr
        assert (root / "a.txt").read_text() == "a0"
        with open_journal(owner_url) as j:
            assert j.get_action(held.id).decided_by == "carol@carol-mac"
            assert [u.by for u in j.undos(run.id)] == ["carol@carol-mac"]
            assert j.audit(run.id).ok
        team = cli("team", "list", "--journal", url[bo], env=env_bo)
        assert team.returncode == 0 and f"you: {bo}, member" in team.stdout
        assert cli("team", "add", bo, "--role", "admin", "--journal", url[bo]).returncode == 1  # not an admin
    finally:
        pg_server.drop_database(db)
        with pg_server.admin() as c:
            for role in (ana, bo, carol):
                c.execute(f"DROP ROLE IF EXISTS {role}")
