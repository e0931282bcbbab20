"""A new user's round 31, #8: an entry whose only edit since install is its ``env`` (a key
synartesis never wrote): status said only "edited since install", and uninstall left it wrapped
(exit 1) without naming what changed. Now status names the env names that changed (never a
value), uninstall puts the entry back keeping the user's env edit where synartesis never wrote
env (a wrapped entry), names the key where it did (a Claude Code local shadow, copied whole
from .mcp.json), and `uninstall --dry-run` exits as the real uninstall does."""

from __future__ import annotations

import json
from pathlib import Path

from installkit import cli, fake_proxy, place

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "configs"


def _install(tmp_path: Path) -> None:
    res = cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr


def _drop(text: str, line: str) -> str:
    assert text.count(line) == 1, line
    return text.replace(line, "", 1)


def _uninstall_both_ways(tmp_path: Path) -> tuple[object, object]:
    dry = cli(tmp_path, "uninstall", "--dry-run")
    real = cli(tmp_path, "uninstall", "--yes")
    assert dry.returncode == real.returncode, (dry.stdout, real.stdout)
    return dry, real


def test_claude_desktop_entry_with_only_its_env_edited_is_restored_keeping_the_edit(fake_home, tmp_path):
    fixture = FIXTURES / "claude-desktop" / "tkersey-env-apikey-no-eol.json"
    original = fixture.read_text(encoding="utf-8")
    cfg = place(fake_home, "claude-desktop", fixture.read_bytes())
    _install(tmp_path)
    secret = json.loads(original)["mcpServers"]["openmemory"]["env"]["OPENMEMORY_API_KEY"]
    line = f'        "OPENMEMORY_API_KEY": "{secret}",\n'
    cfg.write_text(_drop(cfg.read_text(encoding="utf-8"), line), encoding="utf-8")
    st = cli(tmp_path, "status")
    assert "env edited since install: OPENMEMORY_API_KEY removed" in st.stdout, st.stdout
    assert secret not in st.stdout + st.stderr
    dry, real = _uninstall_both_ways(tmp_path)
    assert real.returncode == 0, real.stdout + real.stderr
    assert "OPENMEMORY_API_KEY removed" in dry.stdout and secret not in dry.stdout + real.stdout, dry.stdout
    assert cfg.read_bytes() == _drop(original, line).encode("utf-8")


def test_codex_entry_with_only_its_env_table_edited_is_restored_keeping_the_edit(fake_home, tmp_path):
    fixture = FIXTURES / "codex" / "aiplanet-tools-subtables-profiles.toml"
    original = fixture.read_text(encoding="utf-8")
    cfg = place(fake_home, "codex", fixture.read_bytes())
    _install(tmp_path)
    line = 'GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_PERSONAL_ACCESS_TOKEN}"\n'
    cfg.write_text(_drop(cfg.read_text(encoding="utf-8"), line), encoding="utf-8")
    st = cli(tmp_path, "status")
    assert "env edited since install: GITHUB_PERSONAL_ACCESS_TOKEN removed" in st.stdout, st.stdout
    dry, real = _uninstall_both_ways(tmp_path)
    assert real.returncode == 0, real.stdout + real.stderr
    assert cfg.read_bytes() == _drop(original, line).encode("utf-8")


def test_an_edited_env_value_is_said_without_the_value(fake_home, tmp_path):
    fixture = FIXTURES / "claude-desktop" / "tkersey-env-apikey-no-eol.json"
    original = fixture.read_text(encoding="utf-8")
    cfg = place(fake_home, "claude-desktop", fixture.read_bytes())
    _install(tmp_path)
    cfg.write_text(cfg.read_text(encoding="utf-8").replace('"CLIENT_NAME": "claude"', '"CLIENT_NAME": "s3cr3t-v4lue"'),
                   encoding="utf-8")
    st = cli(tmp_path, "status")
    # which value changed is not recorded (a digest of a short secret could be guessed back)
    assert "env edited since install: a value changed (one of OPENMEMORY_API_KEY, CLIENT_NAME)" in st.stdout, st.stdout
    assert "s3cr3t-v4lue" not in st.stdout and "claude\"" not in st.stdout
    _uninstall_both_ways(tmp_path)
    assert cfg.read_bytes() == original.replace('"CLIENT_NAME": "claude"', '"CLIENT_NAME": "s3cr3t-v4lue"').encode()


def test_a_claude_code_shadow_whose_env_was_edited_is_left_and_the_key_is_named(fake_home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    mcp = FIXTURES / "claude-code" / "athena-venv-description-keys.mcp.json"
    (proj / ".mcp.json").write_bytes(mcp.read_bytes())
    names = list(json.loads(mcp.read_bytes())["mcpServers"])
    home = (FIXTURES / "claude-code" / "callumhoward-home-claude-json-full.json").read_text(encoding="utf-8")
    home = home.replace('"projects": {}', '"projects": {' + json.dumps(str(proj)) + ': '
                        + json.dumps({"enabledMcpjsonServers": names}) + '}', 1)
    cfg = place(fake_home, "claude-code", home)
    _install(tmp_path)
    wrapped = json.loads(cfg.read_text())
    first = next(n for n in names if "RAG_CONFIG" in (wrapped["projects"][str(proj)]["mcpServers"][n].get("env") or {}))
    del wrapped["projects"][str(proj)]["mcpServers"][first]["env"]["RAG_CONFIG"]
    cfg.write_text(json.dumps(wrapped, indent=2))
    st = cli(tmp_path, "status")
    assert "env edited since install: RAG_CONFIG removed" in st.stdout, st.stdout
    dry, real = _uninstall_both_ways(tmp_path)
    assert real.returncode == 1
    for out in (dry.stdout, real.stdout):
        [said] = [x for x in out.splitlines() if x.strip().startswith(f"{first} (local):")]
        assert "its env changed since install (RAG_CONFIG removed)" in said and "/Users/alex" not in said, said
    now = json.loads(cfg.read_text())
    assert first in now["projects"][str(proj)]["mcpServers"]  # left as it is
    assert "RAG_CONFIG" not in now["projects"][str(proj)]["mcpServers"][first]["env"]


def test_an_empty_env_added_or_emptied_is_said_in_words(fake_home, tmp_path):
    # an entry written without env, given "env": {} since: status said "a value changed (one
    # of )" (adversarial review 31b)
    original = json.dumps({"mcpServers": {"mem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}},
                          indent=2)
    cfg = place(fake_home, "claude-desktop", original)
    _install(tmp_path)
    wrapped = json.loads(cfg.read_text())
    wrapped["mcpServers"]["mem"]["env"] = {}
    cfg.write_text(json.dumps(wrapped, indent=2))
    st = cli(tmp_path, "status")
    assert "env edited since install: an empty env added" in st.stdout and "one of )" not in st.stdout, st.stdout
    real = cli(tmp_path, "uninstall", "--yes")
    assert real.returncode == 0, real.stdout + real.stderr
    assert json.loads(cfg.read_text()) == {"mcpServers": {"mem": {"command": "npx", "args": [
        "-y", "@modelcontextprotocol/server-memory"], "env": {}}}}


def test_an_env_that_never_was_a_table_is_not_said_to_be_no_longer_one(fake_home, tmp_path):
    """Adversarial review 31c: an entry written with no env, or an env that is not a table, whose
    env was then set to (or left) something other than a table was said 'env is no longer a
    table of names', which it never was."""
    original = '[mcp_servers.a]\ncommand = "npx"\nargs = ["x"]\n\n[mcp_servers.b]\ncommand = "npx"\nargs = ["y"]\nenv = "A"\n'
    cfg = place(fake_home, "codex", original.encode())
    _install(tmp_path)
    text = cfg.read_text(encoding="utf-8")
    text = text.replace('args = ["proxy", "--server", "a", "--", "npx", "x"]\n',
                        'args = ["proxy", "--server", "a", "--", "npx", "x"]\nenv = "Q"\n', 1).replace('env = "A"', 'env = "B"')
    cfg.write_text(text, encoding="utf-8")
    st = cli(tmp_path, "status")
    assert "no longer a table" not in st.stdout, st.stdout
    assert st.stdout.count("env edited since install: env set to something other than a table of names") == 2, st.stdout
    real = cli(tmp_path, "uninstall", "--yes")
    assert real.returncode == 0, real.stdout + real.stderr
    assert cfg.read_text(encoding="utf-8") == original.replace('args = ["x"]\n', 'args = ["x"]\nenv = "Q"\n').replace('env = "A"', 'env = "B"')
