"""`journal:` in the policy sends the proxy and every command to a PostgreSQL journal; a URL
with a literal password in a policy is refused with where it is, never echoed."""

from __future__ import annotations

import pgkit
from helpers import FS_POLICY, cli, open_journal, proxy_argv


def test_the_policys_journal_key_is_where_the_proxy_and_the_cli_go(tmp_path, fs_server, pg_journal_url):
    url = pg_journal_url()
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(FS_POLICY.replace("version: 1\n", f"version: 1\njournal: {url}\n"))
    argv = proxy_argv("files", manifest, "", [*fs_server, str(root)])
    argv = [a for i, a in enumerate(argv) if not (a == "--journal" or (i and argv[i - 1] == "--journal"))]
    [(err, _)] = pgkit.agent_calls(argv, [("write_file", {"path": str(root / "a.txt"), "content": "b"})])
    assert not err
    assert not (tmp_path / "journal.db").exists()  # nothing beside the policy
    with open_journal(url) as j:
        assert len(j.list_runs()) == 1
    listed = cli("list", "--runs", "--json", "--manifest", str(manifest))
    assert listed.returncode == 0 and '"actions": 1' in listed.stdout.replace('":1', '": 1')
    undone = cli("undo", "--manifest", str(manifest))
    assert undone.returncode == 0 and (root / "a.txt").read_text() == "a0"


def test_a_password_written_into_the_policys_journal_url_is_refused_with_its_place(tmp_path):
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(FS_POLICY.replace("version: 1\n", "version: 1\njournal: postgresql://ana:hunter2@db/team\n"))
    out = cli("check", "--manifest", str(manifest))
    assert out.returncode == 2 and "synartesis.yaml:2" in out.stderr and "PGPASSWORD" in out.stderr
    assert "hunter2" not in out.stdout + out.stderr
