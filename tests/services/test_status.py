"""status: coverage per client × scope × server, policy, and drift."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import helpers
from installkit import fake_proxy, install, make_env, place

from synartesis.services.status import collect_status

CURSOR = '{\n  "mcpServers": {\n    "mem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},\n    "odd": {"command": "my-server"}\n  }\n}\n'


def rows(env, tmp_path):
    report = collect_status(env, system_root=tmp_path / "system")
    return report, {r.name: r for r in report.rows}


def test_everything_covered_is_ok_and_shows_policy_source_and_provenance(fake_home, tmp_path):
    place(fake_home, "cursor", CURSOR)
    env = make_env(fake_home)
    report, _ = rows(env, tmp_path)
    assert not report.ok
    install(env, tmp_path)
    report, by = rows(env, tmp_path)
    assert report.ok, report.rows
    assert by["mem"].state == "wrapped" and by["mem"].covered
    assert by["mem"].policy["source"] == "shipped" and by["mem"].policy["policy_id"] == "memory"
    assert by["mem"].policy["provenance"] in ("live", "documented")
    # a delete never creates: its rule is not named as one that holds a creation (round 16, #6)
    assert by["mem"].policy["creations_held"] == [], by["mem"].policy
    assert by["odd"].policy["source"] == "drafted" and by["odd"].policy["todo"] == 1
    assert by["odd"].policy["pins"] == 0


def test_user_edit_client_revert_and_removal_are_reported_as_drift(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", CURSOR.replace('"odd"', '"gone": {"command": "g"},\n    "odd"'))
    env = make_env(fake_home)
    install(env, tmp_path)
    data = json.loads(cfg.read_text())
    data["mcpServers"]["mem"]["args"].append("--extra")                       # the user edits ours
    data["mcpServers"]["odd"] = {"command": "my-server"}                       # the client reverts it
    del data["mcpServers"]["gone"]                                             # the client drops it
    cfg.write_text(json.dumps(data, indent=2))
    report, by = rows(env, tmp_path)
    assert not report.ok
    assert by["mem"].covered and any("edited since install" in d for d in by["mem"].drift)
    # covered but drifted: its line is not a plain tick (new user 19, #8)
    p = helpers.run([sys.executable, "-m", "synartesis", "status"], capture_output=True, text=True,
                    env=dict(os.environ), cwd=tmp_path, timeout=60)
    assert any(line.strip().startswith("! mem ") for line in p.stdout.splitlines()), p.stdout
    assert not by["odd"].covered and "rewrote our entry back" in by["odd"].reason
    assert by["gone"].state == "removed" and not by["gone"].covered


def test_missing_proxy_path_means_not_covered(fake_home, tmp_path):
    place(fake_home, "cursor", CURSOR)
    env = make_env(fake_home)
    install(env, tmp_path)
    Path(fake_proxy(tmp_path)).unlink()
    report, by = rows(env, tmp_path)
    assert not by["mem"].covered and "no longer exists" in by["mem"].drift[0]


def test_missing_policy_server_is_drift(fake_home, tmp_path):
    place(fake_home, "cursor", CURSOR)
    env = make_env(fake_home)
    install(env, tmp_path)
    # a policy that loads but lacks the server (one without any server does not load: round 31, #6)
    (fake_home / ".synartesis" / "synartesis.yaml").write_text("version: 1\nservers:\n  other: {command: x}\n")
    report, by = rows(env, tmp_path)
    assert report.policy_error is None
    assert any("every call is held" in d for d in by["mem"].drift)


def test_a_missing_policy_file_is_said_as_missing(fake_home, tmp_path):
    # fresh user round 31b, #2: with the policy moved away, each row said "no server 'mem' in
    # …/synartesis.yaml" of a file that does not exist (the proxy runs and holds every tool)
    place(fake_home, "cursor", CURSOR)
    env = make_env(fake_home)
    install(env, tmp_path)
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    policy.unlink()
    report, by = rows(env, tmp_path)
    assert not report.policy_exists
    assert f"there is no policy at {policy}: every call is held (fail-closed)" in by["mem"].drift, by["mem"].drift
    assert not any("no server" in d for d in by["mem"].drift), by["mem"].drift


def test_project_servers_shadowed_or_uncovered(fake_home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text('{"mcpServers": {"db": {"command": "uvx", "args": ["x"]}, '
                                    '"new": {"command": "uvx", "args": ["y"]}}}')
    place(fake_home, "claude-code", json.dumps({"projects": {str(proj): {"enabledMcpjsonServers": ["db"]}}}))
    env = make_env(fake_home)
    install(env, tmp_path, client="claude-code")
    report, _ = rows(env, tmp_path)
    proj_rows = {r.name: r for r in report.rows if r.scope == "project"}
    assert proj_rows["db"].state == "shadowed" and proj_rows["db"].covered
    assert proj_rows["new"].state == "not-wrapped" and "not approved" in proj_rows["new"].reason
    local = [r for r in report.rows if r.scope == "local"]
    assert [(r.name, r.state) for r in local] == [("db", "wrapped")]


def test_status_cli_json_keys_and_exit_codes(fake_home, tmp_path):
    place(fake_home, "cursor", CURSOR)
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "synartesis", "status", "--json"]
    p = helpers.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert set(doc) == {"ok", "policy", "policy_error", "files", "servers", "unlaunched", "warnings", "looked_in"}
    assert set(doc["servers"][0]) == {"client", "client_name", "file", "scope", "name", "covered", "state", "reason",
                                      "project", "policy_key", "policy", "drift", "sign_in"}
    install(make_env(fake_home), tmp_path)
    p = helpers.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stdout
    p = helpers.run(cmd[:-1], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 0 and "2 of 2 server entries covered" in p.stdout


def test_a_drafted_rule_held_by_gate_always_counts_as_a_todo_whatever_its_class():
    """A server-declared compensation is drafted compensable but held (gate: always) until a
    person checks it: status counts it with the irreversible ones."""
    from synartesis.services.status import _policy_info

    tools = [{"match": "notes.create_note", "class": "compensable", "gate": "always"},
             {"match": "notes.delete_note", "class": "irreversible"},
             {"match": "notes.read_note", "class": "readonly"},
             {"match": "notes.rename", "class": "reversible"},
             {"match": "other.x", "class": "irreversible"}]
    info = _policy_info("notes", {"notes": {}}, tools, {})
    assert info["todo"] == 2


def test_a_policy_that_is_yaml_but_does_not_load_is_not_reported_covered(fake_home, tmp_path):
    # found by a new user: `clas:` for `class:` made every proxy refuse to start while status
    # said "2 of 2 covered" and exited 0
    place(fake_home, "cursor", CURSOR)
    env = dict(os.environ)
    install(make_env(fake_home), tmp_path)
    policy = Path(env.get("SYNARTESIS_HOME") or fake_home / ".synartesis") / "synartesis.yaml"
    text = policy.read_text()
    assert "    class: " in text
    policy.write_text(text.replace("    class: ", "    clas: ", 1))
    p = helpers.run([sys.executable, "-m", "synartesis", "status"], capture_output=True, text=True, env=env,
                    cwd=tmp_path, timeout=60)
    assert p.returncode == 2, p.stdout
    assert "unknown key 'clas'" in p.stdout and "synartesis.yaml:" in p.stdout
    assert "0 of 2 server entries covered (the policy does not load)" in p.stdout
    assert "✓" not in p.stdout  # no entry looks covered (a new user saw a ✓ on every one)
    p = helpers.run([sys.executable, "-m", "synartesis", "status", "--json"], capture_output=True, text=True,
                    env=env, cwd=tmp_path, timeout=60)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["ok"] is False and "clas" in doc["policy_error"]


def test_a_wrapped_cursor_project_file_is_checked_from_any_folder(fake_home, tmp_path):
    # found by a new user: run from another folder, status said the entry was "removed" and
    # install would forget it, though the project file still held the wrapped entry
    proj = tmp_path / "proj"
    (proj / ".cursor").mkdir(parents=True)
    (proj / ".cursor" / "mcp.json").write_text('{"mcpServers": {"pf": {"command": "uvx", "args": ["x"]}}}')
    place(fake_home, "cursor", '{"mcpServers": {}}')
    install(make_env(fake_home, cwd=proj), tmp_path, client="cursor", include_project_files=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (proj, elsewhere):
        report = collect_status(make_env(fake_home, cwd=cwd), system_root=tmp_path / "system")
        [row] = [r for r in report.rows if r.name == "pf"]
        assert row.state == "wrapped" and row.covered and not row.drift, (cwd, row)


def test_the_policy_s_servers_no_client_launches_are_listed_with_their_pins(fake_home, tmp_path):
    """status said only "No MCP servers found" for a policy whose pins `pin --write` had just
    written, when no client config existed yet (new user round 14)."""
    home = fake_home / ".synartesis"
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "synartesis.yaml").write_text(
        'version: 1\nservers:\n  files:\n    command: node\n    args: ["x"]\n'
        '    pins: {write_file: "sha256:' + "0" * 64 + '"}\n  mem: {}\ntools: []\n')
    report, _ = rows(make_env(fake_home), tmp_path)
    assert [(u["name"], u["policy"]["pins"]) for u in report.unlaunched] == [("files", 1), ("mem", 0)]
    p = helpers.run([sys.executable, "-m", "synartesis", "status"], capture_output=True, text=True,
                    env=dict(os.environ), cwd=tmp_path, timeout=60)
    assert "In the policy, launched through synartesis by no client config:" in p.stdout and "files · policy user" in p.stdout, p.stdout
    assert "1 pin" in p.stdout, p.stdout
    # a server a client launches is not listed (install adds this one as files-cursor)
    place(fake_home, "cursor", '{"mcpServers": {"files": {"command": "node", "args": ["x"]}}}\n')
    install(make_env(fake_home), tmp_path)
    report, by = rows(make_env(fake_home), tmp_path)
    assert by["files"].policy_key == "files-cursor" and by["files"].covered, by
    assert [u["name"] for u in report.unlaunched] == ["files", "mem"], report.unlaunched


def test_status_says_which_rules_hold_a_call_that_creates_what_it_writes(fake_home, tmp_path):
    """The shipped filesystem policy holds a write_file of a new file (no delete tool to undo
    it); status said only "1 rule held for approval" (create_directory) (new user round 13, #3)."""
    from synartesis.services.status import policy_summary

    place(fake_home, "cursor", '{"mcpServers": {"files": {"command": "npx", "args": '
                               '["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]}}}\n')
    env = make_env(fake_home)
    install(env, tmp_path)
    _, by = rows(env, tmp_path)
    info = by["files"].policy
    assert info["source"] == "shipped" and info["creations_held"] == ["write_file"], info
    assert "held for approval (and write_file when it would create what it writes)" in policy_summary(info)
    # edit_file never creates (on_absent: send): an edit of a missing file is not held (round 15, #3)


def test_an_env_variable_the_policy_takes_from_the_entry_removed_is_drift(fake_home, tmp_path):
    """A new user's finding (round 16, #10): MEMORY_FILE_PATH removed from a wrapped memory
    entry left status at "wrapped", no drift, while undo then refused to start that server."""
    cfg = place(fake_home, "cursor", '{"mcpServers": {"mem": {"command": "npx", "args": '
                                     '["-y", "@modelcontextprotocol/server-memory"], '
                                     '"env": {"MEMORY_FILE_PATH": "/srv/graph.jsonl"}}}}\n')
    env = make_env(fake_home)
    install(env, tmp_path)
    _, by = rows(env, tmp_path)
    assert by["mem"].drift == [], by["mem"].drift
    data = json.loads(cfg.read_text())
    del data["mcpServers"]["mem"]["env"]["MEMORY_FILE_PATH"]
    cfg.write_text(json.dumps(data, indent=2))
    report, by = rows(env, tmp_path)
    assert not report.ok
    assert any("MEMORY_FILE_PATH" in d and "no longer sets it" in d for d in by["mem"].drift), by["mem"].drift
    assert "/srv/graph.jsonl" not in " ".join(by["mem"].drift)


def test_an_entry_removed_since_install_is_listed_under_its_own_file_once(fake_home, tmp_path):
    """A new user's finding (round 22, #11): an entry removed since install came after every
    other client's rows, under a second copy of its file's header. Rows keep their file's group."""
    cfg = place(fake_home, "claude-desktop", '{"mcpServers": {"desk": {"command": "desk-server"}, "gone": {"command": "g"}}}\n')
    place(fake_home, "cursor", CURSOR)
    env = make_env(fake_home)
    install(env, tmp_path)
    data = json.loads(cfg.read_text())
    del data["mcpServers"]["gone"]
    cfg.write_text(json.dumps(data, indent=2))
    report, by = rows(env, tmp_path)
    assert by["gone"].state == "removed"
    files = [r.file for r in report.rows]
    assert files == sorted(files, key=files.index), files  # each file's rows together
    p = helpers.run([sys.executable, "-m", "synartesis", "status"], capture_output=True, text=True,
                    env=dict(os.environ), cwd=tmp_path, timeout=60)
    heads = [line for line in p.stdout.splitlines() if not line.startswith(" ") and " — " in line]
    assert len(heads) == len(set(heads)) == 2, p.stdout
