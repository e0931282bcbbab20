"""The install / uninstall commands as a user runs them (real subprocesses, temporary HOME)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import helpers
import pytest
from installkit import DESKTOP, fake_proxy, place

CODEX = '# codex\n[mcp_servers.git]\ncommand = "uvx"\nargs = ["mcp-server-git", "--token", "ghp_abcdefghijklmnop"]\n'


def run(tmp_path: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=tmp_path, timeout=120, input=input)


def test_without_a_terminal_and_without_yes_it_refuses(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    p = run(tmp_path, "install", "--no-start", "--proxy-path", fake_proxy(tmp_path), input="y\n")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "refusing to change client configs without confirmation" in p.stderr
    assert cfg.read_text() == DESKTOP
    assert not (fake_home / ".synartesis" / "backups").exists()


def _with_stdout_to_a_file(tmp_path: Path, args: list[str], answer: bytes) -> tuple[int, str, str]:
    """Run synartesis with stdin and stderr on a pty and stdout to a file (`… > out.txt`); type
    ``answer`` once the question shows on the pty. Returns (exit code, the pty's text, the file's)."""
    import pty

    master, slave = pty.openpty()
    out_path = tmp_path / "out.txt"
    with open(out_path, "wb") as out_file:
        proc = subprocess.Popen([sys.executable, "-m", "synartesis", *args], stdin=slave, stdout=out_file,
                                stderr=slave, cwd=tmp_path, env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    seen, answered = b"", False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
            if not answered and (b"Write these changes?" in seen or b"Restore these entries?" in seen):
                os.write(master, answer)
                answered = True
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)
    return code, seen.decode("utf-8", "replace"), out_path.read_text()


@pytest.mark.skipif(sys.platform.startswith("win"), reason="pty")
def test_with_stdout_in_a_file_it_shows_the_plan_and_asks_on_the_terminal(fake_home, tmp_path):
    """A new user's round 8: `synartesis install > out.txt` at a terminal refused with "no
    terminal to ask on". The plan and the question go to the terminal (stderr), the file keeps
    the plan and the outcome."""
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    code, screen, saved = _with_stdout_to_a_file(tmp_path, ["install", "--no-start", "--proxy-path",
                                                            fake_proxy(tmp_path)], b"y")
    assert code == 0, screen + saved
    assert "Write these changes?" in screen and str(cfg) in screen
    assert str(cfg) in saved and "Write these changes?" not in saved
    assert "proxy" in cfg.read_text()


@pytest.mark.skipif(sys.platform.startswith("win"), reason="pty")
def test_with_stdout_in_a_file_a_no_on_the_terminal_writes_nothing(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    code, screen, saved = _with_stdout_to_a_file(tmp_path, ["install", "--no-start", "--proxy-path",
                                                            fake_proxy(tmp_path)], b"n")
    assert code == 1, screen + saved
    assert "Nothing was written." in saved and cfg.read_text() == DESKTOP


def test_the_refusal_without_a_terminal_says_which_stream_is_not_one(fake_home, tmp_path):
    place(fake_home, "claude-desktop", DESKTOP)
    p = run(tmp_path, "install", "--no-start", "--proxy-path", fake_proxy(tmp_path), input="y\n")
    assert p.returncode == 2 and "stdin is not a terminal" in p.stderr and "pass --yes" in p.stderr


def test_dry_run_shows_a_redacted_diff_and_writes_nothing(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP.replace('"-y",', '"-y", "--api-key", "sk-live-1234567890abc",'))
    codex = place(fake_home, "codex", CODEX)
    before = cfg.read_bytes()
    p = run(tmp_path, "install", "--dry-run", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0, p.stderr
    assert f"--- {cfg} (now)" in p.stdout and f"+++ {codex} (after)" in p.stdout
    assert '+      "command": "' + fake_proxy(tmp_path) + '",' in p.stdout
    assert "sk-live-1234567890abc" not in p.stdout and "ghp_abcdefghijklmnop" not in p.stdout
    assert "sk-secret-value" not in p.stdout
    assert "dry run: nothing was written" in p.stdout
    assert "Claude Desktop: quit Claude Desktop" in p.stdout and "Codex: restart Codex" in p.stdout
    assert cfg.read_bytes() == before and codex.read_text() == CODEX
    assert not (fake_home / ".synartesis").exists()


def test_json_dry_run_has_a_stable_shape(fake_home, tmp_path):
    place(fake_home, "claude-desktop", DESKTOP)
    p = run(tmp_path, "install", "--dry-run", "--json", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert set(doc) == {"proxy", "files", "policy", "start_errors", "forgotten", "warnings", "restart", "logins", "looked_in",
                        "dry_run", "result", "diffs"}
    (f,) = doc["files"]
    assert f["status"] == "change" and {e["name"]: e["action"] for e in f["entries"]} == {"files": "wrap",
                                                                                          "remote": "remote"}
    assert doc["policy"]["servers"][0]["source"] == "shipped"


def test_unknown_client_is_a_usage_error(fake_home, tmp_path):
    p = run(tmp_path, "install", "--client", "vim", "--dry-run")
    assert p.returncode == 2 and "unknown client 'vim'" in p.stderr


def test_install_yes_then_uninstall_yes_round_trip_with_messages(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    codex = place(fake_home, "codex", CODEX)
    p = run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"✓ {cfg}: written (backup " in p.stdout
    assert "restart needed — Claude Desktop" in p.stdout and "restart needed — Codex" in p.stdout
    assert "ghp_abcdefghijklmnop" not in p.stdout
    p = run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0 and "Nothing to change" in p.stdout
    wrapped = [line for line in p.stdout.splitlines() if "already wrapped" in line]
    # said once a line (a new user's round 30, U9: "already wrapped — already wrapped by synartesis")
    assert wrapped and all(line.count("already wrapped") == 1 for line in wrapped), p.stdout
    p = run(tmp_path, "uninstall", "--dry-run")
    assert p.returncode == 0 and "dry run: nothing was written" in p.stdout and "proxy" in cfg.read_text()
    p = run(tmp_path, "uninstall", "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    assert cfg.read_text() == DESKTOP and codex.read_text() == CODEX
    # the README's exit codes: every server uncovered again, so `status` answers 1 (round 7)
    assert run(tmp_path, "status").returncode == 1


def test_uninstall_from_backup_restores_a_whole_file(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    (backup,) = (fake_home / ".synartesis" / "backups").glob("*.bak")
    wrapped = cfg.read_bytes()
    p = run(tmp_path, "uninstall", "--from-backup", str(backup), "--dry-run")
    assert p.returncode == 0 and f"would put {cfg} back from {backup}" in p.stdout, p.stdout + p.stderr
    assert cfg.read_bytes() == wrapped
    # a dry run refuses what the real run refuses (a new user's finding: it checked nothing)
    for bad, why in ((tmp_path / "nope.bak", "no such backup"), (cfg, "not in synartesis's backups folder")):
        for extra in ("--dry-run", "--yes", None):
            p = run(tmp_path, "uninstall", "--from-backup", str(bad), *([extra] if extra else []))
            assert p.returncode == 2 and why in p.stderr, (extra, p.stdout, p.stderr)
    p = run(tmp_path, "uninstall", "--from-backup", str(backup), "--yes")
    assert p.returncode == 0, p.stderr
    assert cfg.read_text() == DESKTOP
    p = run(tmp_path, "uninstall", "--from-backup", str(tmp_path / "nope.bak"), "--yes")
    assert p.returncode == 2 and "no such backup" in p.stderr


@pytest.mark.skipif(sys.platform.startswith("win"), reason="pty")
def test_confirmation_is_asked_on_a_terminal(fake_home, tmp_path):
    import pty

    cfg = place(fake_home, "claude-desktop", DESKTOP)
    pid, fd = pty.fork()
    if pid == 0:  # child
        os.chdir(tmp_path)
        os.execv(sys.executable, [sys.executable, "-m", "synartesis", "install", "--no-start",
                                  "--proxy-path", fake_proxy(tmp_path)])
    out = b""
    deadline = time.monotonic() + 60
    answered = False
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not answered and b"Write these changes?" in out:
            os.write(fd, b"y")
            answered = True
    _, status = os.waitpid(pid, 0)
    assert answered, out.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, out.decode("utf-8", "replace")
    assert "proxy" in cfg.read_text()


def test_uninstall_exits_1_when_an_entry_changed_since_install_stays_wrapped(fake_home, tmp_path):
    """Adversarial review 16, F9: the client added a key to a wrapped entry; uninstall left that
    entry wrapped, as the README says, but said so only in the middle of its output and exited 0."""
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    assert run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path)).returncode == 0
    doc = json.loads(cfg.read_text())
    name = sorted(doc["mcpServers"])[0]
    doc["mcpServers"][name]["type"] = "stdio"  # a client's own rewrite of the entry
    cfg.write_text(json.dumps(doc, indent=2))
    dry = run(tmp_path, "uninstall", "--dry-run")
    assert dry.returncode == 1, dry.stdout + dry.stderr  # as the real one (new user 19, #7)
    p = run(tmp_path, "uninstall", "--yes")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "still runs through synartesis and was left as it is" in p.stdout and name in p.stdout.splitlines()[-1], p.stdout
    # the backup to put back is named, not a folder to search (new user 18, #8)
    assert "--from-backup " + str(fake_home / ".synartesis" / "backups") in " ".join(p.stdout.split()), p.stdout

    # new user 18, #1/#2: the entry left alone kept its record, so a purge waits for it (it
    # deleted the policy the entry still ran through) and, once the edit is undone, the next
    # uninstall restores it (it said "nothing to restore" and exited 0)
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    assert policy.exists()
    purge = run(tmp_path, "uninstall", "--purge", "--yes")
    assert purge.returncode == 1 and policy.exists(), purge.stdout + purge.stderr
    assert "--purge kept" in purge.stdout + purge.stderr
    del doc["mcpServers"][name]["type"]
    cfg.write_text(json.dumps(doc, indent=2))
    again = run(tmp_path, "uninstall", "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(cfg.read_text()) == json.loads(DESKTOP)


def test_uninstall_exits_1_when_the_client_renamed_a_wrapped_entry(fake_home, tmp_path):
    """Adversarial review 17, F5: the client renamed a wrapped entry; uninstall said "removed
    since install; not brought back" and exited 0, while the renamed entry still ran through
    synartesis."""
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    assert run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path)).returncode == 0
    doc = json.loads(cfg.read_text())
    name = sorted(doc["mcpServers"])[0]
    doc["mcpServers"][name + "-renamed"] = doc["mcpServers"].pop(name)
    cfg.write_text(json.dumps(doc, indent=2))
    p = run(tmp_path, "uninstall", "--yes")
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{name}-renamed" in p.stdout.splitlines()[-1] and "not in the install record" in p.stdout, p.stdout
    # a purge waits for it and exits 1 (adversarial review 20, F3: it deleted the policy and the
    # journal the entry still ran through, exit 0)
    purge = run(tmp_path, "uninstall", "--purge", "--yes")
    assert purge.returncode == 1 and (fake_home / ".synartesis" / "synartesis.yaml").exists(), purge.stdout
    assert "--purge kept" in purge.stdout + purge.stderr
    # its record stays: renamed back, the next uninstall restores it (adversarial review 20, F12)
    doc = json.loads(cfg.read_text())
    doc["mcpServers"][name] = doc["mcpServers"].pop(name + "-renamed")
    cfg.write_text(json.dumps(doc, indent=2))
    again = run(tmp_path, "uninstall", "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(cfg.read_text()) == json.loads(DESKTOP)


def test_uninstall_exits_1_when_a_wrapped_entry_was_moved_to_another_scope(fake_home, tmp_path):
    """Adversarial review 18, F6: a wrapped user-scope entry of Claude Code was moved into a
    project's scope; uninstall said "removed since install; not brought back" and exited 0,
    while the moved entry still ran through synartesis (its name is the record's, so it was not
    taken for a renamed one)."""
    project = str(tmp_path / "proj")
    cfg = place(fake_home, "claude-code", json.dumps(
        {"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}},
         "projects": {project: {"mcpServers": {}}}}, indent=2))
    assert run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path)).returncode == 0
    doc = json.loads(cfg.read_text())
    doc["projects"][project]["mcpServers"]["files"] = doc["mcpServers"].pop("files")
    cfg.write_text(json.dumps(doc, indent=2))
    p = run(tmp_path, "uninstall", "--yes")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "files" in p.stdout.splitlines()[-1] and "not in the install record" in p.stdout, p.stdout


def test_uninstall_names_wrapped_entries_with_no_record_at_all(fake_home, tmp_path):
    """New user 19, #1: with the install record empty (it had dropped a moved entry), uninstall
    said "No wrapped entry to put back … Nothing to restore." and exited 0 while the entry still
    ran through synartesis, and a purge deleted the policy and the journal."""
    place(fake_home, "claude-desktop", DESKTOP)
    assert run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path)).returncode == 0
    (fake_home / ".synartesis" / "installed.json").unlink()
    p = run(tmp_path, "uninstall", "--yes")
    assert p.returncode == 1 and "not in the install record" in p.stdout, p.stdout + p.stderr
    purge = run(tmp_path, "uninstall", "--purge", "--yes")
    assert purge.returncode == 1 and (fake_home / ".synartesis" / "synartesis.yaml").exists(), purge.stdout + purge.stderr
