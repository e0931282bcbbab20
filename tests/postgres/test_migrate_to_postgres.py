"""`journal migrate --to postgresql://…`: a real SQLite journal (gates, undos, payload blobs)
copied into a real PostgreSQL server, `audit` passing on both, and undo of a migrated run."""

from __future__ import annotations

import json

import pgkit
from helpers import FS_POLICY, cli, open_journal, proxy_argv


def test_a_migrated_journal_audits_on_both_sides_and_its_runs_can_be_undone(tmp_path, fs_server, pg_journal_url):
    root = tmp_path / "root"
    root.mkdir()
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(FS_POLICY)
    argv = proxy_argv("files", manifest, journal, [*fs_server, str(root)])
    big = "a line of the agent's long document, stored as a blob of its own\n" * 300
    (root / "a.txt").write_text("a0")
    (root / "b.txt").write_text("b0")
    # run 1: two writes, undone (an undo attempt with steps in the chain)
    pgkit.agent_calls(argv, [("write_file", {"path": str(root / "a.txt"), "content": big}),
                             ("write_file", {"path": str(root / "a.txt"), "content": big + "more\n"})])
    undone = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    # run 2: a held call (a new file cannot be deleted by this server), approved, then made
    [(held, text)] = pgkit.agent_calls(argv, [("write_file", {"path": str(root / "new.txt"), "content": "n"})])
    assert held and "approve" in text
    approved = cli("approve", "--all", "--by", "ana", "--journal", str(journal), "--no-read")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    # run 3: the approved call goes through, and a write that stays in effect
    done = pgkit.agent_calls(argv, [("write_file", {"path": str(root / "new.txt"), "content": "n"}),
                                    ("write_file", {"path": str(root / "b.txt"), "content": big})])
    assert [err for err, _ in done] == [False, False]
    with open_journal(journal) as j:
        runs = j.list_runs()
        blobs = j.conn.execute("SELECT count(*) FROM blobs").fetchone()[0]
    assert len(runs) == 3 and blobs >= 1

    url = pg_journal_url()
    moved = cli("journal", "migrate", "--to", url, "--journal", str(journal), "--json")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    report = json.loads(moved.stdout)
    assert report["ok"] and len(report["runs"]) == 3 and all(r["source_ok"] and r["target_ok"] for r in report["runs"])
    assert report["rows"]["blobs"] == blobs and report["rows"]["undos"] >= 1
    assert pgkit.PASSWORD not in moved.stdout + moved.stderr
    assert cli("audit", "--journal", url).returncode == 0
    assert cli("audit", "--journal", str(journal)).returncode == 0

    with open_journal(url) as pg:
        assert [r.id for r in pg.list_runs()] == [r.id for r in runs]
        assert {r.id: r.status for r in pg.list_runs()} == {r.id: r.status for r in runs}
        assert any(u.status == "rolled_back" for r in runs for u in pg.undos(r.id))
        decided = [row.decided_by for _, kind, row in pg.decisions() if kind == "approved"]
        assert decided == ["ana"]
    # the newest run (still in effect) is undone from the PostgreSQL journal; the approved
    # create has no inverse and is left in place (the run ends partial)
    newest = runs[0].id
    back = cli("undo", newest, "--manifest", str(manifest), "--journal", url)
    assert "restored (verified)" in back.stdout and "partial" in back.stdout, back.stdout + back.stderr
    assert (root / "b.txt").read_text() == "b0" and (root / "new.txt").read_text() == "n"
    assert cli("audit", "--journal", url).returncode == 0
    # a second migration into the same database is refused: its runs are there already
    again = cli("journal", "migrate", "--to", url, "--journal", str(journal))
    assert again.returncode == 2 and "already holds runs" in again.stderr


def test_migrate_and_team_refuse_what_they_cannot_do_with_the_journal_named(tmp_path):
    from synartesis.journal import Journal
    journal = tmp_path / "journal.db"
    Journal.open(journal, create=True).close()
    same = cli("journal", "migrate", "--to", str(journal), "--journal", str(journal))
    assert same.returncode == 2 and "being migrated" in same.stderr
    port = pgkit.free_port()
    down = cli("journal", "migrate", "--to", f"postgresql://ana:pw-literal@127.0.0.1:{port}/team", "--journal", str(journal))
    assert down.returncode == 1 and f"postgresql://ana@127.0.0.1:{port}/team" in down.stderr
    assert "pw-literal" not in down.stdout + down.stderr
    team = cli("team", "list", "--journal", str(journal))
    assert team.returncode == 2 and "PostgreSQL" in team.stderr and "OS user owns everything" in team.stderr
    assert cli("journal", "migrate", "--journal", str(journal)).returncode == 2  # --to is required
