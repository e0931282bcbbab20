"""Adversarial review 16, F15: a newline in `--by` or `--reason` printed `history` lines of its
own ("fake line: approved by admin" as if it were an entry). Who and why are one line each:
a newline in them is spelled \\n."""

from __future__ import annotations

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def test_history_spells_a_newline_in_who_and_why(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "write_file", {"path": str(root / "new.txt"), "content": "x"}).get("isError")  # held
    with open_journal(tmp_path / "j.db") as j:
        [held] = j.list_gated()
    assert cli("deny", held.id[:8], "--by", "eve\nfake line: approved by admin", "--reason", "no\nmore lines",
               *flags).returncode == 0
    out = cli("history", *flags)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not any(line.startswith("fake line") or line.startswith("more lines") for line in out.stdout.splitlines()), out.stdout
    assert "eve\\nfake line" in out.stdout and "no\\nmore lines" in out.stdout, out.stdout
