"""`synartesis pin --write` puts the pins into the policy (new user round 13, #4: `pin` printed
blocks to paste and wrote nothing, so `status` went on saying 0 pins). Real filesystem server;
the policy's comments, layout and other servers are kept, and `check` then holds."""

from __future__ import annotations

import json

import yaml

from helpers import cli


def _policy(tmp_path, fs_server, pins: str = "") -> tuple:
    root = tmp_path / "root"
    root.mkdir()
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(
        "# my policy: keep this comment\n"
        "version: 1\n"
        "servers:\n"
        "  files:\n"
        f"    command: {json.dumps(fs_server[0])}  # node\n"
        f"    args: {json.dumps(fs_server[1:] + [str(root)])}\n"
        f"{pins}"
        "  other: {}\n"
        "tools:\n"
        "  # reads are reads\n"
        "  - match: \"files.*\"\n"
        "    class: readonly\n")
    return policy, root


def test_pin_write_puts_the_pins_into_the_policy_keeping_its_comments(tmp_path, fs_server):
    policy, _ = _policy(tmp_path, fs_server)
    printed = yaml.safe_load(cli("pin", "--server", "files", "--manifest", str(policy)).stdout)["pins"]
    res = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"pinned {len(printed)} tool(s) of files in {policy}" in res.stdout, res.stdout
    text = policy.read_text()
    for kept in ("# my policy: keep this comment", "  # node", "  # reads are reads", "  other: {}"):
        assert kept in text, text
    doc = yaml.safe_load(text)
    assert doc["servers"]["files"]["pins"] == printed and "pins" not in (doc["servers"]["other"] or {})
    ok = cli("check", "--server", "files", "--manifest", str(policy))
    assert ok.returncode == 0 and f"pins: {len(printed)} pinned, all hold" in ok.stdout, ok.stdout + ok.stderr
    again = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert again.returncode == 0 and policy.read_text() == text  # the same pins: the same bytes


def test_pin_write_replaces_stale_pins(tmp_path, fs_server):
    policy, _ = _policy(tmp_path, fs_server, pins='    pins: {write_file: "sha256:' + "0" * 64 + '"}\n')
    res = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "write_file" in res.stderr and "differ from the pins" in res.stderr, res.stderr  # said, then replaced
    pins = yaml.safe_load(policy.read_text())["servers"]["files"]["pins"]
    assert pins["write_file"] != "sha256:" + "0" * 64 and "read_text_file" in pins
    assert cli("check", "--server", "files", "--manifest", str(policy)).returncode == 0


def test_pin_write_keeps_a_bom_and_crlf_line_ends(tmp_path, fs_server):
    policy, _ = _policy(tmp_path, fs_server)
    policy.write_bytes(b"\xef\xbb\xbf" + policy.read_bytes().replace(b"\n", b"\r\n"))
    res = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert res.returncode == 0, res.stdout + res.stderr
    raw = policy.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"pins:" in raw, raw[:80]  # the BOM was dropped (review 15, F6)
    assert raw.count(b"\n") == raw.count(b"\r\n"), raw  # every line CRLF (it was 1 of 25)
    assert cli("check", "--server", "files", "--manifest", str(policy)).returncode == 0


def test_two_pin_writes_at_once_both_land(tmp_path, fs_server):
    """Review 15, F5: both runs read the file, then each replaced it: one's pins were lost."""
    import subprocess

    from helpers import synartesis_argv
    policy, root = _policy(tmp_path, fs_server)
    text = policy.read_text().replace("  other: {}\n", "  second:\n" + "".join(
        line.replace("    ", "    ", 1) + "\n" for line in policy.read_text().split("\n")[4:6]))
    policy.write_text(text)
    for _ in range(3):
        procs = [subprocess.Popen(synartesis_argv("pin", "--write", "--server", name, "--manifest", str(policy)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name in ("files", "second")]
        try:
            codes = [p.wait(120) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(10)
        assert codes == [0, 0]
        servers = yaml.safe_load(policy.read_text())["servers"]
        assert servers["files"].get("pins") and servers["second"].get("pins"), servers
        policy.write_text(text)


def test_an_editor_s_save_between_pin_write_s_read_and_its_replace_is_kept(tmp_path, fs_server, monkeypatch):
    """pin --write read the policy, then replaced it whole: a save in between was lost. It is
    compared just before the replace and, changed, edited again as it now is (adversarial
    review 16, F1). In process: the hook plays the editor at the last moment."""
    from synartesis import fsops
    from synartesis.services.policy_checks import write_pins

    policy, _ = _policy(tmp_path, fs_server)
    printed = yaml.safe_load(cli("pin", "--server", "files", "--manifest", str(policy)).stdout)["pins"]
    real = fsops.replace_checked
    saves = []

    def editor_saves_once(path, expected, new, **kw):
        def save():
            if not saves:
                saves.append(1)
                policy.write_text(policy.read_text().replace("  other: {}\n", "  other: {}  # saved meanwhile\n"))
        return real(path, expected, new, before_compare=save)

    monkeypatch.setattr(fsops, "replace_checked", editor_saves_once)
    from types import SimpleNamespace

    write_pins(SimpleNamespace(policy_path=str(policy), servers=[SimpleNamespace(name="files", pins=printed)]))
    text = policy.read_text()
    assert saves and "  other: {}  # saved meanwhile" in text, text
    assert yaml.safe_load(text)["servers"]["files"]["pins"] == printed


def test_pin_write_keeps_the_ufffd_escape_the_user_wrote(tmp_path, fs_server):
    """ruamel prints U+FFFD itself: `refuse_when: ["\\ufffd"]`, a line pin --write never meant
    to touch, changed bytes (new user round 14)."""
    policy, _ = _policy(tmp_path, fs_server)
    policy.write_text(policy.read_text() + '  - match: "files.write_file"\n    class: reversible\n'
                      '    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, refuse_when: ["\\ufffd"]}\n'
                      '    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}\n')
    res = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert res.returncode == 0, res.stdout + res.stderr
    text = policy.read_text()
    assert 'refuse_when: ["\\ufffd"]' in text and "\ufffd" not in text, text


def test_pin_write_changes_no_line_but_the_pins(tmp_path, fs_server):
    """The round trip re-indented block lists to one layout (adversarial review 15, F7) and
    printed escapes as characters: lines pin --write never meant to touch changed. Every line
    of the file is still there, in order; the pins are only added."""
    import difflib

    root = tmp_path / "root"
    root.mkdir()
    policy = tmp_path / "synartesis.yaml"
    original = (
        "version: 1\n"
        "servers:\n"
        "  files:\n"
        f"    command: {json.dumps(fs_server[0])}\n"
        f"    args: {json.dumps(fs_server[1:] + [str(root)])}\n"
        "  other: {}\n"
        "tools:\n"
        "- match: \"files.read_*\"\n"
        "  class: readonly\n"
        "- match: \"files.write_file\"\n"
        "  class:   reversible   # odd spacing, kept\n"
        "  snapshot: {tool: files.read_text_file, args: {path: \"$.path\"}, refuse_when: [\"\\ufffd\", \"\\u00e9t\\u00e9\"]}\n"
        "  inverse:\n"
        "      - {tool: files.write_file, args: {path: \"$.path\", content: \"$snapshot.content\"}}\n")
    policy.write_text(original)
    res = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert res.returncode == 0, res.stdout + res.stderr
    after = policy.read_text()
    ops = difflib.SequenceMatcher(a=original.splitlines(), b=after.splitlines(), autojunk=False).get_opcodes()
    assert {tag for tag, *_ in ops} <= {"equal", "insert"}, after
    added = [line for tag, _, _, j1, j2 in ops if tag == "insert" for line in after.splitlines()[j1:j2]]
    assert added[0].strip() == "pins:" and all(line.startswith("      ") for line in added[1:]), added
    assert yaml.safe_load(after)["servers"]["files"]["pins"]
    assert cli("check", "--server", "files", "--manifest", str(policy)).returncode == 0
