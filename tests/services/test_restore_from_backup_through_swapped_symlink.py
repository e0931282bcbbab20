"""Adversarial review, round 4 — `uninstall --from-backup` writes a file synartesis never wrapped when the wrapped file has
since become a symlink to it (a project's .cursor/mcp.json in a repository that changed, or any
swap). The dry run names only the wrapped path; the install record even holds the resolved
target the backup was taken from, but restore never compares it. Expected: refuse (or at least
name the real file) when the path now resolves to another file than the one backed up."""

from helpers import cli


def test_restore_refuses_when_the_wrapped_file_now_points_at_another_file(fake_home, tmp_path):
    cursor = fake_home / ".cursor"
    cursor.mkdir()
    cfg = cursor / "mcp.json"
    cfg.write_text('{"mcpServers": {"t": {"command": "uvx", "args": ["mcp-server-time"]}}}')
    out = cli("install", "--client", "cursor", "--no-start", "--yes", cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    (bak,) = [p for p in (fake_home / ".synartesis" / "backups").iterdir() if p.name.endswith(".bak")]
    victim = fake_home / "notes.txt"  # never wrapped by synartesis
    victim.write_text("a person's notes\n")
    cfg.unlink()
    cfg.symlink_to(victim)

    dry = cli("uninstall", "--from-backup", str(bak), "--dry-run", cwd=tmp_path)
    real = cli("uninstall", "--from-backup", str(bak), "--yes", cwd=tmp_path)
    assert victim.read_text() == "a person's notes\n", (dry.stdout, real.stdout)
