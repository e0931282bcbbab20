"""A session whose two servers (two names, two launch lines) serve the same folder: a step's
drift read must be a read made after every inverse this undo sent before it, whatever server it
went to, not a re-read kept from an earlier step on the same resource key.

History: ``fa`` writes A over O; a person writes P; ``fb`` (the same file, through the other
name) writes A over P; ``fa`` writes A2 over A. Undoing the session, newest first: fa's A2 → A
(re-read A), fb's A → P (re-read P), then fa's first write finds P where it left A: drift, and
the person's P stays. A re-read kept per resource key (fa's "A", made before fb's inverse) would
match fa's post-state and overwrite P with O (the reason undo reuses a read only when nothing at
all was sent since: :meth:`synartesis.undo.engine._Walk.begin_read`).

Real proxies, real filesystem server."""

from __future__ import annotations

import os

from helpers import RawSession, cli, open_journal, own_descendants, proxy_argv

_RULES = """
  - match: "{s}.read_*"
    class: readonly
  - match: "{s}.write_file"
    class: reversible
    snapshot: {{tool: {s}.read_text_file, args: {{path: "$.path"}}, absent_when: ["ENOENT"]}}
    inverse: {{tool: {s}.write_file, args: {{path: "$.path", content: "$snapshot.content"}}}}
"""
POLICY = "version: 1\nservers:\n  fa: {}\n  fb: {}\ntools:" + _RULES.format(s="fa") + _RULES.format(s="fb")


def test_a_persons_edit_between_two_names_writes_to_one_file_halts_the_session_undo(tmp_path, fs_server):
    root = tmp_path / "shared"
    root.mkdir()
    doc = root / "doc.txt"
    doc.write_text("O")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(POLICY)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    env = dict(os.environ, SYNARTESIS_SESSION="shared-folder")
    # fb is launched another way (the folder with a trailing slash): another launch line, so
    # another resource key for the very same file
    with RawSession(proxy_argv("fa", manifest, journal, [*fs_server, str(root)]), env=env) as fa, \
            RawSession(proxy_argv("fb", manifest, journal, [*fs_server, str(root) + "/"]), env=env) as fb:
        fa.handshake()
        fb.handshake()
        assert not fa.call(1, "write_file", {"path": str(doc), "content": "A"}).get("isError")
        doc.write_text("P")  # a person's edit
        assert not fb.call(1, "write_file", {"path": str(doc), "content": "A"}).get("isError")
        assert not fa.call(2, "write_file", {"path": str(doc), "content": "A2"}).get("isError")
    with open_journal(journal) as j:
        [session] = {r.session_id for r in j.list_runs()}

    done = cli("undo", session, *flags)
    assert done.returncode == 1 and "drift" in done.stdout, done.stdout + done.stderr
    assert doc.read_text() == "P"  # the person's edit is kept
    with open_journal(journal) as j:
        statuses = sorted((a.gseq, a.server, a.status) for r in j.list_runs() for a in j.actions(r.id)
                          if a.cls != "readonly")
    assert [(s, st) for _, s, st in statuses] == [("fa", "unrecoverable"), ("fb", "rolled_back"), ("fa", "rolled_back")]
    assert own_descendants() == []
