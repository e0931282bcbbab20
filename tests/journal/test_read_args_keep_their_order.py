"""A reviewer's finding: `show` printed a readonly call's arguments with their keys sorted
(`{"head":2,"path":…}` for a call made as `{"path":…,"head":2}`), while a write's came out as
the agent sent them. Batched reads stored their canonical text as the ref; they now keep the
call's order, and the approval key (call_key) is still the canonical one. Real filesystem
server, real proxy; the journal on each backend for the batch itself."""

from __future__ import annotations

import json

from helpers import FS_POLICY, cli, files_run

from synartesis.canonical import call_key


def test_a_read_is_shown_with_its_arguments_in_the_order_the_call_had(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "one\ntwo\nthree\n"},
                            [("read_text_file", {"path": "{root}/a.txt", "head": 2})], policy=FS_POLICY)
    shown = json.loads(cli("show", "--json", *flags).stdout)
    read = next(a for a in shown["actions"] if a["tool"].endswith("read_text_file"))
    assert list(read["args"]) == ["path", "head"], read["args"]
    text = cli("show", *flags).stdout
    assert f'{{"path":"{root}/a.txt","head":2}}' in "".join(text.split()), text


def test_batched_reads_keep_key_order_and_the_canonical_call_key(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    args = [{"path": "/x", "head": 2}, {"z": {"b": 1, "a": 2}, "y": "http://h"}, {"path": "/a:b"}, None]
    j.record_reads([{"run": run, "server": "files", "tool": "read_text_file", "args": a, "status": "applied",
                     "result": {"content": []}} for a in args])
    rows = j.actions(run)
    for a, given in zip(rows, args):
        stored = j.get_json(a.args_ref)
        assert json.dumps(stored) == json.dumps(given)  # key order included
        assert a.call_key == call_key("files", "read_text_file", given)
    assert j.audit(run).ok
