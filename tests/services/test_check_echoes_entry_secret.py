"""Adversarial review, round 4 — `check` now starts a server with its client entry's env (a829a4a) and prints the server's
stderr tail unscrubbed when it fails: a server that says which token it rejected puts the
entry's secret on the terminal. Expected: the entry's env values are
scrubbed from what check prints (as install's diff hides them)."""
import json
import sys

from helpers import cli

SECRET = "sk-live-4f9a1c7e2b"
SERVER = "import os,sys; sys.stderr.write('auth failed for token ' + os.environ.get('API_TOKEN','(none)') + chr(10)); sys.exit(3)"


def test_check_does_not_print_the_client_entrys_secret(fake_home, tmp_path):
    cursor = fake_home / ".cursor"
    cursor.mkdir()
    (cursor / "mcp.json").write_text(json.dumps({"mcpServers": {"svc": {
        "command": sys.executable, "args": ["-c", SERVER], "env": {"API_TOKEN": SECRET}}}}))
    out = cli("install", "--client", "cursor", "--no-start", "--yes", cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    assert SECRET not in policy
    c = cli("check", cwd=tmp_path, timeout=120)
    assert "auth failed" in c.stdout + c.stderr, c.stdout + c.stderr  # the server did start with the entry's env
    assert SECRET not in c.stdout + c.stderr, c.stdout + c.stderr


def test_check_hides_it_too_when_this_shell_has_the_same_value(fake_home, tmp_path):
    """Adversarial review, round 6 (untested there): the entry's value was left unscrubbed when
    the shell running `check` had the same variable with the same value."""
    import os
    cursor = fake_home / ".cursor"
    cursor.mkdir()
    (cursor / "mcp.json").write_text(json.dumps({"mcpServers": {"svc": {
        "command": sys.executable, "args": ["-c", SERVER], "env": {"API_TOKEN": SECRET}}}}))
    assert cli("install", "--client", "cursor", "--no-start", "--yes", cwd=tmp_path, timeout=120).returncode == 0
    c = cli("check", cwd=tmp_path, timeout=120, env=dict(os.environ, API_TOKEN=SECRET))
    assert "auth failed" in c.stdout + c.stderr, c.stdout + c.stderr
    assert SECRET not in c.stdout + c.stderr, c.stdout + c.stderr
