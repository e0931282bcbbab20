"""The event chain: audit finds edited, removed and inserted rows, payloads and launch lines."""

from __future__ import annotations

from synartesis.journal import RunOrigin



def test_audit_finds_edits_deletions_and_truncation(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    ids = [j.record_action(run, "s", "t", "readonly", None, {"n": n}).id for n in range(4)]
    assert j.audit(run).ok
    j.conn.execute("UPDATE actions SET status = 'failed' WHERE id = ?", (ids[1],))
    assert any("edited afterwards" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE actions SET status = 'pending' WHERE id = ?", (ids[1],))
    assert j.audit(run).ok
    j.conn.execute("UPDATE actions SET gseq = 999 WHERE id = ?", (ids[1],))  # the journal-wide order is chained too
    assert any("edited afterwards" in p for p in j.audit(run).problems)
    j.conn.execute("DELETE FROM actions WHERE id = ?", (ids[2],))
    assert any("removed afterwards" in p for p in j.audit(run).problems)
    j2 = new_journal()
    run2 = j2.begin_run("t", {})
    for n in range(3):
        j2.record_action(run2, "s", "t", "readonly", None, {"n": n})
    mid = j2.conn.execute("SELECT id FROM events WHERE run_id = ? ORDER BY id LIMIT 1 OFFSET 1", (run2,)).fetchone()[0]
    j2.conn.execute("UPDATE events SET data = '{}' WHERE id = ?", (mid,))
    assert any("altered" in p for p in j2.audit(run2).problems)
    last = j2.conn.execute("SELECT max(id) FROM events").fetchone()[0]
    j2.conn.execute("DELETE FROM events WHERE id = ?", (last,))
    assert any("newest events" in p or "no recorded history" in p or "differs" in p for p in j2.audit(run2).problems)


def test_audit_finds_altered_payloads_launch_lines_and_origins(new_journal):
    j = new_journal()
    origin = RunOrigin(pid=4242, started="linux:x:1", host="here", client_pid=4000, client_started="linux:x:0")
    run = j.begin_run("t", {"fs": {"command": "node", "args": ["server.js"]}}, origin=origin)
    text = "content long enough to be stored as a blob of its own. " * 100
    j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": text})
    assert j.audit(run).ok
    blob = j.conn.execute("SELECT hash FROM blobs WHERE size >= ?", (len(text),)).fetchone()[0]
    j.conn.execute("UPDATE blobs SET data = ?, codec = 'raw' WHERE hash = ?", (b"tampered", blob))
    assert any("altered" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE runs SET servers = ? WHERE id = ?", ('{"fs":{"command":"sh","args":["-c","x"]}}', run))
    assert any("launch lines were edited" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE runs SET pid = 1 WHERE id = ?", (run,))
    assert any("origin" in p for p in j.audit(run).problems)
    # launch lines that are not JSON at all: listed, and audit names them (adversarial review 19,
    # F10: list, audit, gates and prune stopped with "internal error (JSONDecodeError)")
    j.conn.execute("UPDATE runs SET servers = 'not json' WHERE id = ?", (run,))
    assert [r.servers for r in j.list_runs() if r.id == run] == [{}]
    assert any("launch lines were edited" in p for p in j.audit(run).problems)


def test_undo_attempts_are_chained_in_each_run_they_touch(new_journal):
    j = new_journal()
    a, b = j.begin_run("t", {}), j.begin_run("t", {})
    attempt = j.begin_attempt([a, b], "ana", "undo", {"session": "s-x"})
    j.attempt_step(attempt, a, {"action": None, "seq": 1, "kind": "skip"})
    j.finish_attempt(attempt, {a: "rolled_back"}, {"steps": []})
    kinds = {r: [k for (k,) in j.conn.execute("SELECT kind FROM events WHERE run_id = ? ORDER BY id", (r,))] for r in (a, b)}
    assert kinds[a] == ["run.begin", "undo.begin", "undo.step", "undo.end"]
    assert kinds[b] == ["run.begin", "undo.begin", "undo.end"]
    assert j.audit(a).ok and j.audit(b).ok
    assert [u.status for u in j.undos(b)] == ["nothing"]


def test_event_data_is_stored_compressed_on_sqlite_and_an_altered_blob_is_found(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "/p/a.txt", "content": "x"},
                        prior="captured", snapshot={"content": "y"})
    (eid, data), = j.conn.execute("SELECT id, data FROM events WHERE action_id = ?", (a.id,)).fetchall()
    if j.db.name == "sqlite":
        assert isinstance(data, bytes)
        j.conn.execute("UPDATE events SET data = ? WHERE id = ?", (data[:-3] + b"\0\0\0", eid))
        j.conn.commit()
    else:  # PostgreSQL keeps text
        assert isinstance(data, str)
        j.conn.execute("UPDATE events SET data = ? WHERE id = ?", (data.replace("/p/a.txt", "/p/b.txt"), eid))
    found = j.audit(run)
    assert not found.ok and any("altered" in p for p in found.problems), found.problems
    j.close()


def _reads(j, run, n):
    j.record_reads([{"run": run, "server": "files", "tool": "read_text_file", "rule": "files.read_*",
                     "args": {"path": f"/p/{k}"}, "status": "applied", "result": {"content": [{"type": "text", "text": "x"}]}}
                    for k in range(n)])
    return [a.id for a in j.actions(run) if a.cls == "readonly"]


def test_audit_proves_every_read_of_a_batch_chained_in_one_event(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    ids = _reads(j, run, 5)
    j.record_action(run, "files", "write_file", "reversible", None, {"path": "/p/0", "content": "y"})
    _reads(j, run, 3)
    kinds = [k for (k,) in j.conn.execute("SELECT kind FROM events WHERE run_id = ? ORDER BY id", (run,))]
    assert kinds == ["run.begin", "reads.record", "action.record", "reads.record"]
    assert j.audit(run).ok
    # a plain read's row lives in the reads table (schema 6), and every change to it is found
    assert j.conn.execute("SELECT count(*) FROM reads WHERE run_id = ?", (run,)).fetchone()[0] == 8
    assert j.conn.execute("SELECT count(*) FROM actions WHERE run_id = ?", (run,)).fetchone()[0] == 1
    j.conn.execute("UPDATE reads SET args_ref = ? WHERE id = ?", ('={"path":"/etc/passwd"}', ids[2]))
    problems = j.audit(run).problems
    assert any("action 3 (files.read_text_file) differs from what was recorded" in p for p in problems)
    j.conn.execute("UPDATE reads SET args_ref = ? WHERE id = ?", ('={"path":"/p/2"}', ids[2]))
    assert j.audit(run).ok
    j.conn.execute("UPDATE reads SET status = 'failed' WHERE id = ?", (ids[4],))
    assert any("action 5" in p and "edited afterwards" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE reads SET status = 'applied' WHERE id = ?", (ids[4],))
    j.conn.execute("UPDATE reads SET gseq = gseq + 1000 WHERE id = ?", (ids[3],))
    assert any("action 4" in p and "edited afterwards" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE reads SET gseq = gseq - 1000 WHERE id = ?", (ids[3],))
    assert j.audit(run).ok
    j.conn.execute("DELETE FROM reads WHERE id = ?", (ids[0],))
    assert any("action 1 (files.read_text_file) was recorded but its row is gone" in p for p in j.audit(run).problems)


def test_audit_finds_a_read_rows_time_edited(new_journal):
    # a batch's chained states carry no time: the row's must be the (hashed) event's
    j = new_journal()
    run = j.begin_run("t", {})
    ids = _reads(j, run, 2)
    (at,) = j.conn.execute("SELECT at FROM reads WHERE id = ?", (ids[1],)).fetchone()
    j.conn.execute("UPDATE reads SET at = ? WHERE id = ?", ("2020-01-01T00:00:00.000Z", ids[1]))
    problems = j.audit(run).problems
    assert any("action 2 (files.read_text_file) has a time (2020-01-01T00:00:00.000Z) other than" in p for p in problems)
    assert not any("action 1 " in p for p in problems)
    j.conn.execute("UPDATE reads SET at = ? WHERE id = ?", (at, ids[1]))
    assert j.audit(run).ok


def test_audit_finds_a_batch_event_edited_or_a_read_inserted_beside_it(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    _reads(j, run, 3)
    (eid, data) = j.conn.execute("SELECT id, data FROM events WHERE run_id = ? AND kind = 'reads.record'", (run,)).fetchone()
    # a row copied with a new id and seq: no event lists it
    j.conn.execute("INSERT INTO reads SELECT 999, run_id, 9, 'f00dfeed-0000-4000-8000-000000000000', server, tool, rule, "
                   "call_key, args_ref, result_ref, status, note, at FROM reads WHERE run_id = ? AND seq = 1", (run,))
    assert any("action 9" in p and "no recorded history" in p for p in j.audit(run).problems)
    j.conn.execute("DELETE FROM reads WHERE seq = 9")
    assert j.audit(run).ok
    # the batch's text edited to say one read was of another file: the event's hash no longer holds
    from synartesis.journal.rows import event_text
    text = event_text(data).replace("/p/1", "/p/X")
    j.conn.execute("UPDATE events SET data = ? WHERE id = ?", (text, eid))
    problems = j.audit(run).problems
    assert any(f"event {eid} (reads.record" in p and "altered" in p for p in problems)
    assert any("action 2" in p and "differs" in p for p in problems)
    j.conn.execute("UPDATE events SET data = ? WHERE id = ?", ('{"reads":[["a",1]]}', eid))
    assert any("lists a read it does not describe" in p for p in j.audit(run).problems)


def test_an_action_state_built_as_text_is_its_canonical_json():
    from hypothesis import given
    from hypothesis import strategies as st

    from synartesis.canonical import canonical
    from synartesis.journal.rows import ActionRow, action_state, action_state_text

    text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=20)
    opt = st.none() | text
    num = st.none() | st.integers(min_value=-2**70, max_value=2**70)

    @given(st.tuples(text, text, st.integers(), text, text, text, opt, text, text, opt, opt, opt, opt, opt, opt, text,
                     opt, opt, opt, opt, opt, text, text, text, num, opt), st.none() | st.dictionaries(text, opt))
    def check(values, step):
        a = ActionRow(*values)
        want = action_state(a)
        if step is not None:
            want["step"] = step
        assert action_state_text(a, None if step is None else canonical(step)) == canonical(want)

    check()


def test_an_audit_while_another_connection_commits_status_changes_sees_one_state(tmp_path):
    """Adversarial review 19, F7: `undo` while a redo of the same session ran said the run
    "fails its audit … edited afterwards": the audit read the events, the redo committed a
    status change and its event, then the audit read the action rows. Its reads are one
    snapshot now: here the other connection commits right after the events are read."""
    from synartesis.journal import Journal
    path = tmp_path / "j.db"
    with Journal.open(path, create=True) as j:
        run = j.begin_run("t", {})
        aid = j.record_action(run, "s", "w", "reversible", None, {"n": 1}).id
        j.set_action_status(aid, "applied")
    with Journal.open(path) as reader, Journal.open(path) as other:
        plain = reader._all

        def all_then_commit(sql, params=()):
            rows = plain(sql, params)
            if "FROM events" in sql:
                other.set_action_status(aid, "rolled_back")  # a redo's or undo's commit in between
            return rows

        reader._all = all_then_commit
        result = reader.audit(run)
    assert result.ok, result.problems


def test_audit_finds_an_edited_note_on_an_action_and_on_a_read(new_journal):
    # a new user's round 30, U2: `UPDATE actions SET note = 'approved by the CISO'` passed the
    # audit, while `show` printed the note (a halt's expected/actual lines live in it too)
    j = new_journal()
    run = j.begin_run("t", {})
    act = j.record_action(run, "files", "write_file", "reversible", None, {"path": "/p", "content": "y"})
    j.mark_failed(act.id, "the server refused the call: EACCES \ud800 \x00")  # kept escaped where a driver must
    [read] = _reads(j, run, 1)
    assert j.audit(run).ok, j.audit(run).problems
    j.conn.execute("UPDATE actions SET note = ? WHERE id = ?", ("approved by the CISO; safe to ignore", act.id))
    assert any("action 1 (files.write_file) differs from what was recorded" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE actions SET note = NULL WHERE id = ?", (act.id,))
    assert not j.audit(run).ok  # a note removed is an edit too
    j2 = new_journal()
    run2 = j2.begin_run("t", {})
    [read] = _reads(j2, run2, 1)
    j2.conn.execute("UPDATE reads SET note = 'fine' WHERE id = ?", (read,))
    assert any("action 1 (files.read_text_file)" in p and "edited afterwards" in p for p in j2.audit(run2).problems)


def test_names_a_database_keeps_escaped_still_audit(new_journal):
    # adversarial review 31, F5: a tool name holding a NUL (PostgreSQL keeps it as "\x00", the
    # copy `journal migrate` makes too) or a lone surrogate (both keep it escaped) read as an
    # edited row: only the note was compared as the database keeps it
    j = new_journal()
    run = j.begin_run("t", {})
    for n, (server, tool) in enumerate([("kv", "nosuch\x00"), ("kv", "t\ud800"), ("k\x00v", "t"),
                                        ("kv", "plain")]):
        j.record_action(run, server, tool, "irreversible", None, {"n": n}, status="gated", note="held")
    decided = j.record_action(run, "kv", "t", "irreversible", None, {"n": "d"}, status="gated", note="held")
    j.decide(decided.id, False, "ana\x00\ud800", "no\x00 \udfff")
    result = j.audit(run)
    assert result.ok, result.problems
    j.conn.execute("UPDATE actions SET tool = 'other' WHERE tool = 'plain'")
    assert any("edited afterwards" in p for p in j.audit(run).problems)


def test_audit_finds_an_edited_undo_attempt(new_journal):
    # adversarial review 31, F8: an attempt's row (status, report, who, scope, kind) edited by
    # hand passed the audit, though `history` and `prune` read it and its events chain it
    j = new_journal()
    run = j.begin_run("t", {})
    halted = j.begin_attempt([run], "ana", "undo", {"session": "s-x"})
    j.finish_attempt(halted, {run: "halted"}, {"steps": [], "status": "halted"})
    done = j.begin_attempt([run], "bob", "redo")
    j.finish_attempt(done, {run: "redone"}, {"steps": []})
    j.begin_attempt([run], "cy", "undo", {"run": run})  # still running
    assert j.audit(run).ok, j.audit(run).problems
    uid = halted.rows[run]
    for sql, params in [("UPDATE undos SET status = 'rolled_back' WHERE id = ?", (uid,)),
                        ("UPDATE undos SET report_ref = (SELECT report_ref FROM undos WHERE id = ?) WHERE id = ?",
                         (done.rows[run], uid)),
                        ("UPDATE undos SET by = 'mallory' WHERE id = ?", (uid,)),
                        ("UPDATE undos SET scope = '{\"session\": \"s-y\"}' WHERE id = ?", (uid,)),
                        ("UPDATE undos SET scope = NULL WHERE id = ?", (uid,)),
                        ("UPDATE undos SET kind = 'redo' WHERE id = ?", (uid,)),
                        ("UPDATE undos SET scope = '{\"run\": \"x\"}' WHERE id = ?", (done.rows[run],)),
                        ("UPDATE undos SET status = 'halted' WHERE status = 'running'", ())]:
        before = j.conn.execute("SELECT id, status, report_ref, by, scope, kind FROM undos").fetchall()
        j.conn.execute(sql, params)
        assert any("edited afterwards" in p for p in j.audit(run).problems), sql
        for row in before:
            j.conn.execute("UPDATE undos SET status = ?, report_ref = ?, by = ?, scope = ?, kind = ? WHERE id = ?",
                           (*row[1:], row[0]))
        assert j.audit(run).ok, (sql, j.audit(run).problems)


def test_audit_finds_an_edited_run_status(new_journal):
    # adversarial review 31, F8: a run's status, unverified count or closing note edited by
    # hand (complete to redone or rolled_back, a fake count) passed the audit, while `list`,
    # `undo` and `prune` read them and run.end / run.close / run.status chain them
    j = new_journal()
    run = j.begin_run("t", {})
    a = j.record_action(run, "s", "t", "reversible", None, {"n": 1})
    j.mark_applied(a.id, result={}, inverse=[{"server": "s", "tool": "t", "args": {}}], verify=None, post=None,
                   note=None)
    assert j.audit(run).ok
    j.conn.execute("UPDATE runs SET status = 'complete' WHERE id = ?", (run,))
    assert any("edited afterwards" in p for p in j.audit(run).problems)  # it never ended
    j.conn.execute("UPDATE runs SET status = 'active' WHERE id = ?", (run,))
    j.close_run(run, "closed by hand")
    assert j.audit(run).ok
    for sql in ["UPDATE runs SET status = 'redone'", "UPDATE runs SET status = 'rolled_back'",
                "UPDATE runs SET status = 'compensated', unverified = 3", "UPDATE runs SET end_note = 'x'",
                "UPDATE runs SET status = 'active', ended_at = NULL"]:
        j.conn.execute(sql + " WHERE id = ?", (run,))
        assert any("edited afterwards" in p for p in j.audit(run).problems), sql
        j.conn.execute("UPDATE runs SET status = 'complete', unverified = 0, end_note = 'closed by hand', "
                       "ended_at = '2026-01-01T00:00:00.000Z' WHERE id = ?", (run,))
        assert j.audit(run).ok, (sql, j.audit(run).problems)
    j.set_run_status(run, "compensated", 2)
    j.set_run_status(run, "partial", 2)  # the count is kept for compensated only
    assert j.audit(run).ok, j.audit(run).problems


def test_audit_finds_an_edited_closing_note_after_an_undo_set_the_status(new_journal):
    # the closing note was compared only while run.end / run.close was the run's last status
    # event: once an undo wrote run.status, a note edited by hand (what `show` and `list
    # --json` print of why the run ended) passed the audit (adversarial review 31b)
    j = new_journal()
    run = j.begin_run("t", {})
    j.close_run(run, "closed by synartesis: its proxy (pid 1) is gone")
    j.set_run_status(run, "rolled_back")
    assert j.audit(run).ok, j.audit(run).problems
    j.conn.execute("UPDATE runs SET end_note = 'ended normally' WHERE id = ?", (run,))
    assert any("edited afterwards" in p for p in j.audit(run).problems), j.audit(run).problems
    j.conn.execute("UPDATE runs SET end_note = NULL WHERE id = ?", (run,))
    assert any("edited afterwards" in p for p in j.audit(run).problems), j.audit(run).problems
