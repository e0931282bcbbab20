"""Our own files stay private and our temporary files do not linger (issue 9 items 11, 12)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
from installkit import cli, fake_proxy, install, make_env, place

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")

CFG = json.dumps({"mcpServers": {"a": {"command": "npx", "args": ["-y", "a"]}}})


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def umask000(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI run by a user whose umask is 000."""
    return helpers.run(["/bin/sh", "-c", 'umask 000 && exec "$@"', "sh", sys.executable, "-m", "synartesis", *args],
                          capture_output=True, text=True, env=dict(os.environ), cwd=tmp_path, timeout=120)


def test_install_at_umask_000_creates_every_folder_0700_and_every_file_0600(fake_home, tmp_path):
    os.environ["SYNARTESIS_HOME"] = str(fake_home / "deep" / "er" / ".synartesis")
    place(fake_home, "cursor", CFG)
    p = umask000(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    home = fake_home / "deep" / "er" / ".synartesis"
    for d in (fake_home / "deep", fake_home / "deep" / "er", home, home / "backups"):
        assert mode(d) == 0o700, d
    for f in [home / "installed.json", home / "synartesis.yaml", *(home / "backups").iterdir()]:
        assert mode(f) == 0o600, f


def test_init_with_a_manifest_in_new_folders_creates_them_0700(fake_home, tmp_path):
    manifest = tmp_path / "new" / "folder" / "synartesis.yaml"
    server = Path(__file__).resolve().parent.parent / "fake_server.py"
    p = umask000(tmp_path, "init", "kv", "--manifest", str(manifest), "--", sys.executable, str(server),
                 "--state", str(tmp_path / "kv.json"))
    assert manifest.exists(), p.stdout + p.stderr
    assert mode(tmp_path / "new") == 0o700 and mode(tmp_path / "new" / "folder") == 0o700
    assert mode(manifest) == 0o600


def test_looser_modes_on_our_files_are_reported_and_fixed(fake_home, tmp_path):
    place(fake_home, "cursor", CFG)
    env = make_env(fake_home)
    install(env, tmp_path)
    home = fake_home / ".synartesis"
    backup = next((home / "backups").glob("*.bak"))
    for p, m in ((home, 0o755), (home / "backups", 0o777), (home / "installed.json", 0o644),
                 (home / "synartesis.yaml", 0o666), (backup, 0o644)):
        p.chmod(m)
    r = cli(tmp_path, "status")
    assert r.returncode == 0, r.stdout + r.stderr
    for p, was in ((home / "installed.json", "0644"), (backup, "0644"), (home, "0755")):
        assert f"{p} was {was}" in r.stdout
    assert mode(home) == 0o700 and mode(home / "backups") == 0o700
    assert mode(home / "installed.json") == 0o600 and mode(home / "synartesis.yaml") == 0o600 and mode(backup) == 0o600
    assert "was 0" not in cli(tmp_path, "status").stdout  # said once, then it is fixed


def test_a_leftover_beside_our_own_record_is_removed_and_said(fake_home, tmp_path):
    place(fake_home, "cursor", CFG)
    env = make_env(fake_home)
    install(env, tmp_path)
    home = fake_home / ".synartesis"
    dead = helpers.spawn([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    stale = home / f".installed.json.{dead.pid}.zz99yy88.synartesis-tmp"
    stale.write_text("{half")
    r = cli(tmp_path, "uninstall", "--dry-run")
    assert not stale.exists() and f"removed {stale}" in r.stdout, r.stdout


def test_a_custom_synartesis_home_warns_only_for_clients_that_do_not_pass_it_on(fake_home, tmp_path, monkeypatch):
    from installkit import options

    from synartesis.services.install import plan_install

    monkeypatch.setenv("SYNARTESIS_HOME", str(fake_home / "elsewhere"))
    place(fake_home, "claude-code", CFG)
    only_code = plan_install(make_env(fake_home), options(tmp_path))
    assert not [w for w in only_code.warnings if "SYNARTESIS_HOME" in w]  # Claude Code passes its env on

    place(fake_home, "cursor", CFG)
    place(fake_home, "codex", '[mcp_servers.b]\ncommand = "npx"\nargs = ["-y", "b"]\n')
    both = plan_install(make_env(fake_home), options(tmp_path))
    [warning] = [w for w in both.warnings if "SYNARTESIS_HOME" in w]
    assert "Codex, Cursor do not pass it" in warning and "Claude Code" not in warning
