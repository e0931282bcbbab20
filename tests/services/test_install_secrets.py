"""Secrets in a server's args stay in the client config (issue 9 item 3).

install (dry run or real), the policy, installed.json, diffs, warnings and start errors show the
shape of a command line with its secret values hidden; uninstall still puts every byte back, and
undo / check start the server with the real arguments read from the client entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import helpers
from installkit import fake_proxy, install, make_env, options, place, uninstall

from synartesis.redact import SECRET_MARK
from synartesis.services.install import plan_install
from synartesis.services.install_state import load_state, save_state
from synartesis.services.launch_env import ClientEntries, entry_launch
from synartesis.undo.launch import launch_specs

S1, S2 = "S1sekrit0001", "S2sekrit0002"
S3 = "S3hdrvalue03"
ARGS = ["-k", S1, "-e", f"API_KEY={S2}", "-H", f"X-Api-Key: {S3}", "ghcr.io/acme/mcp"]


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=120)


def hits(root: Path, *needles: str) -> list[str]:
    """Every file under ``root`` holding one of ``needles``."""
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            if any(n.encode() in data for n in needles):
                out.append(str(p.relative_to(root)))
    return out


def test_issue_repro_dry_run_leaves_the_secrets_only_in_the_client_config(fake_home, tmp_path):
    place(fake_home, "claude-code", json.dumps({"mcpServers": {"gh": {"command": "docker", "args": ["-k", "S1", "-e", "API_KEY=S2"]}}}))
    p = run(tmp_path, "install", "--dry-run", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout + p.stderr
    assert '"S1"' not in out and "API_KEY=S2" not in out
    assert '"-k", "***", "-e", "API_KEY=***"' in out
    assert hits(fake_home, '"S1"', "API_KEY=S2") == [".claude.json"]


def test_a_real_install_keeps_the_secrets_out_of_policy_record_and_output_and_uninstall_is_exact(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", json.dumps({"mcpServers": {"gh": {"command": "docker", "args": ARGS,
                                                                         "env": {"GITHUB_TOKEN": "ghp_" + "x1Y2" * 6}}}},
                                                 indent=2) + "\n")
    before = cfg.read_bytes()
    p = run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert S1 not in p.stdout + p.stderr and S2 not in p.stdout + p.stderr
    home = fake_home / ".synartesis"
    assert hits(home, S1, S2, S3) == [p for p in hits(home, S1, S2, S3) if p.startswith("backups/")]
    assert hits(home, S1, S2, S3), "the 0600 backup holds the original"
    record = (home / "installed.json").read_text()
    assert "docker" not in record and "API_KEY" not in record  # no argument text at all
    policy = (home / "synartesis.yaml").read_text()
    assert f'"-k", "{SECRET_MARK}"' in policy and f"API_KEY={SECRET_MARK}" in policy
    assert f"X-Api-Key: {SECRET_MARK}" in policy
    p = run(tmp_path, "uninstall", "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    assert cfg.read_bytes() == before


def test_a_start_error_that_echoes_the_arguments_is_scrubbed(fake_home, tmp_path):
    script = "import sys; sys.stderr.write('bad key: ' + ' '.join(sys.argv[1:]) + '\\n'); sys.exit(3)"
    place(fake_home, "cursor", json.dumps({"mcpServers": {"echo": {"command": sys.executable,
                                                                   "args": ["-c", script, "--api-key", S1]}}}))
    p = run(tmp_path, "install", "--dry-run", "--timeout", "20", "--proxy-path", fake_proxy(tmp_path))
    assert "echo did not start" in p.stdout, p.stdout + p.stderr
    assert S1 not in p.stdout + p.stderr


def test_a_start_error_keeps_the_servers_name_whole_and_hides_its_env_values_in_what_the_server_said(fake_home, tmp_path):
    # new user 18, #5: PROFILE=work made "notes-work failed during initialize" read "notes-*** failed"
    script = "import os, sys; sys.stderr.write('profile ' + os.environ['PROFILE'] + ' token ' + os.environ['TOKEN'] + '\\n'); sys.exit(3)"
    place(fake_home, "cursor", json.dumps({"mcpServers": {"notes-work": {
        "command": sys.executable, "args": ["-c", script], "env": {"PROFILE": "work", "TOKEN": S1}}}}))
    p = run(tmp_path, "install", "--dry-run", "--timeout", "20", "--proxy-path", fake_proxy(tmp_path))
    out = p.stdout + p.stderr
    assert "notes-work did not start (notes-work " in out, out
    assert S1 not in out and "profile work" not in out


def test_uninstall_still_works_from_a_record_written_before_templates_and_install_scrubs_it(fake_home, tmp_path):
    """Records written by earlier versions kept the original texts; they still restore, and the
    next install rewrites them without the texts."""
    cfg = place(fake_home, "cursor", '{\n  "mcpServers": {\n    "gh": {"command": "npx", "args": ["--token", "%s"]}\n  }\n}\n' % S1)
    before = cfg.read_bytes()
    env = make_env(fake_home)
    install(env, tmp_path)
    state = load_state(env)
    rec = state.entries[0]["record"]
    # what the previous version recorded: the texts themselves
    rec["orig_command"] = '"npx"'
    rec["orig_args"] = '["--token", "%s"]' % S1
    rec["reverse"] = [[a, b, '"npx"' if t == rec["orig_command"] or t == [4] else '["--token", "%s"]' % S1]
                      for a, b, t in rec["reverse"]]
    rec.pop("original_sha", None)
    save_state(env, state)
    assert S1 in (fake_home / ".synartesis" / "installed.json").read_text()
    plan = plan_install(env, options(tmp_path))
    assert plan.upgrades and plan.changes
    from synartesis.services.install import apply_install

    apply_install(env, plan)
    assert S1 not in (fake_home / ".synartesis" / "installed.json").read_text()
    uninstall(env)
    assert cfg.read_bytes() == before


def _wrapped_cursor(fake_home, tmp_path, args):
    place(fake_home, "cursor", json.dumps({"mcpServers": {"gh": {"command": "node", "args": args}}}, indent=2))
    env = make_env(fake_home)
    install(env, tmp_path)
    return env


def test_undo_completes_a_redacted_launch_line_from_the_client_entry(fake_home, tmp_path):
    from synartesis.policy import load_policy

    env = _wrapped_cursor(fake_home, tmp_path, ["server.js", "--token", S1])
    policy = load_policy(fake_home / ".synartesis" / "synartesis.yaml")
    recorded = {"gh": {"command": "node", "args": ["server.js", "--token", SECRET_MARK], "cwd": str(tmp_path)}}
    specs, problems = launch_specs({"gh"}, recorded, policy, {}, entry_env=ClientEntries(env))
    assert problems == []
    assert (specs["gh"].command, specs["gh"].args) == ("node", ["server.js", "--token", S1])
    # the policy's own (redacted) args are completed the same way when no line was recorded
    specs, problems = launch_specs({"gh"}, {}, policy, {}, entry_env=ClientEntries(env))
    assert specs["gh"].args == ["server.js", "--token", S1]


def test_undo_refuses_to_start_a_server_whose_client_entry_changed_shape(fake_home, tmp_path):
    from synartesis.policy import load_policy

    env = _wrapped_cursor(fake_home, tmp_path, ["server.js", "--token", S1])
    policy = load_policy(fake_home / ".synartesis" / "synartesis.yaml")
    recorded = {"gh": {"command": "node", "args": ["other.js", "--token", SECRET_MARK], "cwd": str(tmp_path)}}
    specs, problems = launch_specs({"gh"}, recorded, policy, {}, entry_env=ClientEntries(env))
    assert "gh" not in specs and "now starts" in problems[0] and S1 not in problems[0]
    specs, problems = launch_specs({"gh"}, recorded, policy, {}, entry_env=lambda origin: {})
    assert "gh" not in specs and "cannot be read" in problems[0]


def test_entry_launch_finds_the_entry_through_the_install_record_without_an_origin(fake_home, tmp_path):
    env = _wrapped_cursor(fake_home, tmp_path, ["server.js", "--token", S1])
    assert entry_launch(None, env, server="gh") == ("node", ["server.js", "--token", S1])
    assert entry_launch(None, env, server="nope") is None


def test_check_starts_a_server_with_hidden_args_from_its_client_entry(fake_home, tmp_path):
    """The server starts only with the real ``--api-key`` (it checks a hash of it), which the
    policy does not hold: check must take it from the client entry."""
    import hashlib

    script = Path(__file__).resolve().parent.parent / "fake_server.py"
    code = ("import hashlib, runpy, sys; "
            f"assert hashlib.sha256(sys.argv[2].encode()).hexdigest() == {hashlib.sha256(S1.encode()).hexdigest()!r}; "
            f"sys.argv = [{str(script)!r}, '--state', {str(tmp_path / 'kv.json')!r}]; "
            f"runpy.run_path({str(script)!r}, run_name='__main__')")
    place(fake_home, "cursor", json.dumps({"mcpServers": {"kv": {"command": sys.executable,
                                                                 "args": ["-c", code, "--api-key", S1]}}}))
    p = run(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    manifest = fake_home / ".synartesis" / "synartesis.yaml"
    policy = manifest.read_text()
    assert S1 not in policy and f'"--api-key", "{SECRET_MARK}"' in policy
    p = run(tmp_path, "check", "--manifest", str(manifest))
    out = p.stdout + p.stderr
    assert "5 tools advertised" in out, out
    assert S1 not in out
