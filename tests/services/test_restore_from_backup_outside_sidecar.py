"""Adversarial review, round 4 — `uninstall --from-backup LINK` where LINK lives outside the backups folder and points at a
real backup inside it: the path check resolves the link (inside: accepted), but the sidecar is
read beside LINK (`LINK.meta.json`, outside the folder), so a sidecar synartesis never wrote
decides which file is overwritten. Expected: refused like any backup outside the folder, or the
sidecar read beside the resolved backup; the file the foreign sidecar names is left alone."""
import json

from helpers import cli


def test_a_link_to_a_backup_does_not_bring_its_own_sidecar(fake_home, tmp_path):
    cursor = fake_home / ".cursor"
    cursor.mkdir()
    (cursor / "mcp.json").write_text('{"mcpServers": {"t": {"command": "uvx", "args": ["mcp-server-time"]}}}')
    assert cli("install", "--client", "cursor", "--no-start", "--yes", cwd=tmp_path, timeout=120).returncode == 0
    (bak,) = [p for p in (fake_home / ".synartesis" / "backups").iterdir() if p.name.endswith(".bak")]
    victim = fake_home / "notes.txt"  # never wrapped by synartesis
    victim.write_text("a person's notes\n")
    link = tmp_path / "download.bak"
    link.symlink_to(bak)
    (tmp_path / "download.bak.meta.json").write_text(json.dumps({"original": str(victim)}))

    dry = cli("uninstall", "--from-backup", str(link), "--dry-run", cwd=tmp_path)
    real = cli("uninstall", "--from-backup", str(link), "--yes", cwd=tmp_path)
    assert victim.read_text() == "a person's notes\n", (dry.stdout, real.stdout + real.stderr)
