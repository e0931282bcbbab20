"""Actions: recording each ``tools/call`` and every change of its status.

Numbering: ``seq`` orders a run (the proxy numbers its own calls, see :meth:`own_run`);
``gseq`` orders the whole journal, allocated in the transaction that records the action, so
the actions of one session interleave across servers in the order they were recorded (a write
is recorded, with the state it replaces, before it is sent). Reads journalled in the
background get theirs when they are written, up to 50 ms later.

Every status change is conditional where a race is possible (``expect``) and appends an
``action.<status>`` event carrying the row's chained state.
"""

from __future__ import annotations

from hashlib import sha256 as _sha256
from json.encoder import encode_basestring
from typing import Any, Callable, Iterable

from synartesis.canonical import call_key, canonical, compact
from synartesis.errors import UsageError
from synartesis.journal.blobs import ACTION_BLOB_MIN
from synartesis.journal.chain import ChainMixin, chain_texts
from synartesis.journal.rows import (ACTION_COLS, ACTION_COUNT, IN_EFFECT, READ_COLS, READ_STATUSES, ActionRow,
                                     action_from_row, action_state, new_id, new_ids, now_iso)

__all__ = ["ActionsMixin", "ERROR_AFTER_WRITE", "PreparedAction"]

# How a tool error after a write is settled by re-reading the resource (issue 10 item 4).
ERROR_AFTER_WRITE = {"unchanged": "failed", "changed": "applied", "unreadable": "unknown", "present": "unknown"}

_INSERT_ACTION = f"INSERT INTO actions ({ACTION_COLS}) VALUES ({','.join('?' * ACTION_COUNT)})"
# an action whose outcome, note and decision are still to come (every write the proxy records): the
# columns left out are NULL, as _INSERT_ACTION would store them
_INSERT_PENDING = ("INSERT INTO actions (id, run_id, seq, server, tool, class, rule, call_key, args_ref, prior, "
                   "snapshot_ref, verify_ref, status, idempotency_key, created_at, updated_at, gseq) "
                   "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
_INSERT_READ = f"INSERT INTO reads ({READ_COLS}) VALUES ({','.join('?' * (READ_COLS.count(',') + 1))})"
# A batch of reads that share their run, server, tool, rule and status and have no note (a burst
# of answered reads) is inserted with those bound once a statement (SqliteBackend.insert_shared)
# and the note left out (NULL, as binding None stores it, without the driver's adapter lookup
# for None, which raises and clears an AttributeError: about 3k instructions a row, callgrind)
_SHARED_COLS = ("run_id", "server", "tool", "rule", "status", "at")
_OWN_COLS = ("gseq", "seq", "id", "call_key", "args_ref", "result_ref")


def _as_action(aid: str, run_id: str, seq: int, server: str, tool: str, rule: str | None, key: str, args_ref: str,
               result_ref: str | None, status: str, note: str | None, ts: str, gseq: int) -> tuple:
    """A plain read's columns as an ``actions`` row (the order of ACTION_COLS)."""
    return (aid, run_id, seq, server, tool, "readonly", rule, key, args_ref, None, None, result_ref, None, None, None,
            status, note, None, None, None, None, f"{run_id}:{seq}", ts, ts, gseq, None)


class PreparedAction:
    """A write's row as far as it is known before its pre-read is answered (see
    :meth:`ActionsMixin.prepare_action`): ``blobs`` are its payloads' blobs still to store."""

    __slots__ = ("id", "run_id", "server", "tool", "cls", "rule", "key", "args_ref", "verify_ref", "blobs")

    def __init__(self, aid: str, run_id: str, server: str, tool: str, cls: str, rule: str | None, key: str,
                 args_ref: str, verify_ref: str | None, blobs: list) -> None:
        self.id, self.run_id, self.server, self.tool, self.cls, self.rule = aid, run_id, server, tool, cls, rule
        self.key, self.args_ref, self.verify_ref, self.blobs = key, args_ref, verify_ref, blobs


class ActionsMixin(ChainMixin):
    def own_run(self, run_id: str, next_seq: Callable[[], int]) -> None:
        """Let the process that owns ``run_id`` (its proxy) number its actions itself.

        The proxy numbers a call when it handles it, so a read journalled later by the reader
        thread keeps its place in the run's order; only that proxy inserts into its run.
        """
        self._seq_sources[run_id] = next_seq

    def _next_gseq(self) -> int:
        """The next journal-wide action number (inside the transaction that uses it)."""
        if self.db.returning:
            row = self._one("UPDATE counters SET value = value + 1 WHERE name = 'gseq' RETURNING value")
        else:
            self._q("UPDATE counters SET value = value + 1 WHERE name = 'gseq'")
            row = self._one("SELECT value FROM counters WHERE name = 'gseq'")
        return int(self._require(row, "the action counter")[0])

    def _max_seq(self, run_id: str) -> int:
        """The run's highest seq so far (0 for none), from each table's (run_id, seq) index: a
        MAX through the all_actions view would read every row of the run."""
        top = self._one("SELECT COALESCE(MAX(seq), 0) FROM actions WHERE run_id = ?", (run_id,))[0]
        if self._has_reads:
            top = max(top, self._one("SELECT COALESCE(MAX(seq), 0) FROM reads WHERE run_id = ?", (run_id,))[0])
        return int(top)

    def _insert_action(self, run_id: str, server: str, tool: str, cls: str, rule: str | None,
                       args: Any, status: str, note: str | None, decided_by: str | None = None,
                       decided_at: str | None = None, *, prior: str | None = None, snapshot: Any = None,
                       verify: Any = None, result: Any = None, fetch: bool = True,
                       seq: int | None = None) -> ActionRow | None:
        row = self._insert_row(new_id(), run_id, server, tool, cls, rule, call_key(server, tool, args),
                               self.put_json(args, ACTION_BLOB_MIN), status, note, decided_by, decided_at, prior,
                               self.put_json(snapshot, ACTION_BLOB_MIN) if prior == "captured" else None,
                               self._put_payload(result), self._put_payload(verify), seq)
        return row if fetch else None

    def _insert_row(self, aid: str, run_id: str, server: str, tool: str, cls: str, rule: str | None, key: str,
                    args_ref: str, status: str, note: str | None, decided_by: str | None, decided_at: str | None,
                    prior: str | None, snapshot_ref: str | None, result_ref: str | None, verify_ref: str | None,
                    seq: int | None = None) -> ActionRow:
        """Insert an action whose payloads are stored, numbered now (inside the transaction),
        and chain its ``action.record`` event."""
        if seq is None:
            source = self._seq_sources.get(run_id)
            seq = source() if source is not None else self._max_seq(run_id) + 1
        ts = now_iso()
        gseq = self._next_gseq()
        ikey = f"{run_id}:{seq}"
        if result_ref is None and note is None and decided_by is None and decided_at is None:
            # a write as the lane records it: the columns it leaves empty are not bound (a None
            # parameter costs the driver an adaptation attempt each: about 0.3 µs)
            self._q(_INSERT_PENDING, (aid, run_id, seq, server, tool, cls, rule, key, args_ref, prior, snapshot_ref,
                                      verify_ref, status, ikey, ts, ts, gseq))
        else:
            self._q(_INSERT_ACTION, (aid, run_id, seq, server, tool, cls, rule, key, args_ref, prior, snapshot_ref,
                                     result_ref, None, verify_ref, None, status, note, decided_by, decided_at, None,
                                     None, ikey, ts, ts, gseq, None))
        row = action_from_row((aid, run_id, seq, server, tool, cls, rule, key, args_ref, prior, snapshot_ref, result_ref,
                               None, verify_ref, None, status, note, decided_by, decided_at, None, None, ikey, ts, ts,
                               gseq, None))
        self._state_event(row, "action.record")
        return row

    def record_action(self, run_id: str, server: str, tool: str, cls: str, rule: str | None,
                      args: Any, status: str = "pending", note: str | None = None, *,
                      prior: str | None = None, snapshot: Any = None, verify: Any = None,
                      carry: bool = True) -> ActionRow:
        """Insert an action with the next seq of its run and the next journal-wide number.

        ``prior``/``snapshot``/``verify``: the pre-read, stored in the same transaction, so a
        write's row and the state it will replace are committed together before it is sent.
        ``carry=False`` leaves this connection's deferred changes (an earlier write's
        ``applied``) for a later transaction: the proxy commits them while this call is at the
        server, so they are not on the path to sending it.
        """
        with self._guard("record action"), self._tx(carry):
            return self._insert_action(run_id, server, tool, cls, rule, args, status, note,
                                       prior=prior, snapshot=snapshot, verify=verify)

    def prepare_action(self, run_id: str, server: str, tool: str, cls: str, rule: str | None, args: Any, *,
                       verify: Any = None) -> "PreparedAction":
        """What :meth:`record_prepared` stores for a write that does not depend on its
        pre-read's answer: its id, call key and encoded arguments and drift read (their blobs
        hashed and compressed). No SQL and no lock: the proxy's lane computes it while the
        pre-read is at the server (issue 11 item 4)."""
        args_ref, blobs = self._encode_json(args, ACTION_BLOB_MIN)
        verify_ref, more = (None, []) if verify is None else self._encode_json(verify, ACTION_BLOB_MIN)
        return PreparedAction(new_id(), run_id, server, tool, cls, rule, call_key(server, tool, args), args_ref,
                              verify_ref, self._packed_parts(blobs + more))

    def store_prepared(self, prep: "PreparedAction") -> None:
        """Commit ``prep``'s payloads (and this connection's deferred changes, an earlier
        write's ``applied``) in a transaction of their own, before its row: the proxy's lane runs
        it while the write's pre-read is at the server, so the record transaction that must
        commit before the call is sent holds the row, the state it replaces and their event,
        not the payload's pages too (issue 11 item 4). Payloads are content-addressed and need
        no row: one the write never records is what ``prune`` collects, and one another
        connection pruned meanwhile is stored again by :meth:`record_prepared`, which still
        lists it (``_forget_pruned_blobs``). Nothing to store and nothing deferred: no
        transaction."""
        if not self._deferred and all(b[0] in self._known_blobs for b in prep.blobs):
            self._stored_ahead = bool(prep.blobs) or self._stored_ahead
            return
        with self._guard("store payloads"), self._tx():
            self._store_parts(prep.blobs)
        # known or stored now, pointed at by no row until record_prepared's commits: the
        # transactions up to it look for a prune in between, PostgreSQL too (adversarial review 30)
        self._stored_ahead = bool(prep.blobs) or self._stored_ahead

    def record_prepared(self, prep: "PreparedAction", *, prior: str | None = None, snapshot: Any = None,
                        carry: bool = True) -> ActionRow:
        """:meth:`record_action` of a ``pending`` write from :meth:`prepare_action`, with its
        pre-read (``prior`` ``captured`` with ``snapshot``, or ``absent``): the snapshot is
        encoded before the write lock is taken; one transaction stores the blobs, the row and
        its event (and, with ``carry``, this connection's deferred changes first)."""
        blobs = prep.blobs
        snapshot_ref = None
        if prior == "captured":
            snapshot_ref, more = self._encode_json(snapshot, ACTION_BLOB_MIN)
            blobs = blobs + self._packed_parts(more)
        with self._guard("record action"), self._tx(carry):
            self._store_parts(blobs)
            row = self._insert_row(prep.id, prep.run_id, prep.server, prep.tool, prep.cls, prep.rule, prep.key,
                                   prep.args_ref, "pending", None, None, None, prior, snapshot_ref, None,
                                   prep.verify_ref)
        self._stored_ahead = False  # committed: the row points at them now
        return row

    def record_reads(self, items: list[dict]) -> None:
        """Record finished reads in one transaction: each ``{run, server, tool, rule, args,
        status, note, result, seq}`` (``result`` already capped). Used by the proxy's journal
        thread: the rows are inserted with one ``executemany`` (multi-row INSERTs), the journal-wide numbers are
        taken as one block, and each run gets one chained ``reads.record`` event for all of its
        reads in the batch (schema 5), whose data holds every read's chained state
        (``[[action id, state], …]``): its hash covers every read row, and :meth:`audit` compares
        each row with its entry. Each state's canonical text is built once, from a template.
        Journals written before schema 5 hold an ``action.record`` event per read; both audit."""
        if not items:
            return
        with self._guard("record reads"), self._tx():
            rows: list[tuple] = []
            states: dict[str, list[tuple[str, str]]] = {}  # run -> [(hashed entry, stored entry)]
            heads: dict[str, str] = {}
            ts = now_iso()
            if self.db.returning:
                top = self._one("UPDATE counters SET value = value + ? WHERE name = 'gseq' RETURNING value", (len(items),))
            else:
                self._q("UPDATE counters SET value = value + ? WHERE name = 'gseq'", (len(items),))
                top = self._one("SELECT value FROM counters WHERE name = 'gseq'")
            gseq = int(self._require(top, "the action counter")[0])
            gseq -= len(items)
            quoted: dict[tuple[str, str], tuple[str, str, str, str, str]] = {}
            numbered: dict[str, int] = {}
            ids = new_ids(len(items))
            plain = True  # every text is ASCII: nothing for the backend to check or escape
            notes: dict[int, str] | None = None  # row index -> note, for the rows that have one
            shares: list[tuple] = []
            canon = canonical
            for n, it in enumerate(items):
                run_id = it["run"]
                entries = states.get(run_id)
                if entries is None:
                    found = self._one("SELECT head FROM runs WHERE id = ?", (run_id,))
                    if found is None:
                        continue  # the run is gone (pruned): nothing to attach the read to
                    heads[run_id] = found[0]
                    entries = states[run_id] = [[], None]  # the entries hashed; those stored, when they differ
                seq = it.get("seq")
                if seq is None:  # not numbered by the run's proxy: after the run's last, in this batch too
                    source = self._seq_sources.get(run_id)
                    if source is not None:
                        seq = source()
                    else:
                        seq = numbered.get(run_id) or self._max_seq(run_id)
                        seq = numbered[run_id] = seq + 1
                gseq += 1
                server, tool, status = it["server"], it["tool"], it["status"]
                args, result, rule, note = it["args"], it.get("result"), it.get("rule"), it.get("note")
                names = quoted.get((server, tool))  # a tuple of two interned names hashes without a new string
                if names is None:
                    qs, qt = canon(server), canon(tool)
                    # the call key's prefix, the canonical names, and the state's text around its status
                    names = quoted[(server, tool)] = (f"[{qs},{qt},", qs, qt, f',"server":{qs},"snapshot":null,"status":',
                                                      f',"tool":{qt},"used_by":null,"verify":null}}]')
                # the call key and the arguments' ref, serialised once when they are small (no
                # string in them can be a blob, so the ref is their canonical text inline)
                text = None
                if args.__class__ is dict and len(args) == 1:
                    ((name, value),) = args.items()
                    if name.__class__ is str and value.__class__ is str:
                        # one string member (a path, a URL: most reads): its canonical text,
                        # which is its compact text too, quoted as the encoder quotes it, without
                        # the encoder's item list and sort (about 2k instructions a read) and
                        # without counting its colons below (about 1k)
                        text = f"{{{_q(name)}:{_q(value)}}}"
                        args_ref = "=" + text
                if text is None:
                    text = canon(args)
                    args_ref = None
                if len(text) < 1024 and text.isascii() and "$synartesis." not in text:
                    # the ref keeps the keys in the call's order (``show`` prints them as the agent
                    # sent them; put_json's inline form): with at most one ":" there is one key at
                    # most, so the canonical text is that form already and is not serialised twice
                    if args_ref is None:
                        args_ref = "=" + (text if text.count(":") < 2 else compact(args))
                    key = _sha256(f"{names[0]}{text}]".encode("utf-8", "surrogatepass")).hexdigest()  # as call_key
                else:
                    key, args_ref = call_key(server, tool, args), self._put_json(args)
                if result is None:
                    result_ref, qr = None, "null"
                else:
                    refs = _digest_refs(result)
                    if refs is None:
                        result_ref = self._put_json(result)
                        qr = _q(result_ref)
                    else:
                        result_ref, qr = refs
                aid = ids[n]
                if status not in READ_STATUSES or not self._has_reads:  # another status: never from the proxy
                    self._q(f"INSERT INTO actions ({ACTION_COLS}) VALUES ({','.join('?' * ACTION_COUNT)})",
                            _as_action(aid, run_id, seq, server, tool, rule, key, args_ref, result_ref, status,
                                       note, ts, gseq))
                else:
                    rows.append((gseq, seq, aid, key, args_ref, result_ref))  # the row's own values, and
                    shares.append((run_id, server, tool, rule, status))  # those a batch usually shares
                    if note is not None:  # a read that failed or got no answer: the batch binds notes
                        if notes is None:
                            notes = {}
                        notes[len(rows) - 1] = note
                # the chained entry ``[id, canonical(action_state(row))]`` built from its template;
                # text that is not ASCII takes the general path (a lone surrogate is stored escaped)
                qs = _QUOTED_STATUS.get(status) or _q(status)
                qn = "null" if note is None else _q(note)
                if seq.__class__ is int:  # _READ_STATE as an f-string: about half the time of the % format
                    entry = (f'["{aid}",{{"args":{_q(args_ref)},"by":null,"class":"readonly","decision":null,'
                             f'"gseq":{gseq},"inverse":null,"key":"{key}","note":{qn},"post":null,"prior":null,'
                             f'"result":{qr},"reverted":null,"seq":{seq}{names[3]}{qs}{names[4]}')
                else:
                    entry = f'["{aid}",{_READ_STATE % (_q(args_ref), gseq, key, qn, qr, seq, names[1], qs, names[2])}]'
                if entry.isascii():
                    entries[0].append(entry)
                    if entries[1] is not None:
                        entries[1].append(entry)
                    if plain and not ((rule is None or rule.isascii()) and (note is None or note.isascii())):
                        plain = False
                else:
                    row = action_from_row(_as_action(aid, run_id, seq, server, tool, rule, key, args_ref, result_ref,
                                                     status, note, ts, gseq))
                    hashed, stored = chain_texts(action_state(row))
                    if entries[1] is None:
                        entries[1] = list(entries[0])
                    entries[0].append(f'["{aid}",{hashed}]')
                    entries[1].append(f'["{aid}",{stored}]')
                    plain = False
            if rows:
                if notes is None and self.db.name == "sqlite" and len(set(shares)) == 1:
                    # one run, server, tool, rule and status (a burst of reads): bound once a statement
                    self.db.insert_shared("reads", _SHARED_COLS, (*shares[0], ts), _OWN_COLS, rows, checked=plain)
                else:  # READ_COLS' order
                    full = [(g, r, q, a, s, t, u, k, ar, rr, st, notes and notes.get(n), ts)
                            for n, ((g, q, a, k, ar, rr), (r, s, t, u, st)) in enumerate(zip(rows, shares))]
                    self.db.executemany(_INSERT_READ, full, checked=plain)
            for run_id, (hashed_entries, stored_entries) in states.items():
                if hashed_entries:
                    hashed = '{"reads":[' + ",".join(hashed_entries) + "]}"
                    stored = hashed if stored_entries is None else '{"reads":[' + ",".join(stored_entries) + "]}"
                    self._append_event(run_id, "reads.record", hashed, stored, prev=heads[run_id],
                                       at=ts)  # the reads' own time: a run's newest read is found by it

    def _set(self, action_id: str, status: str, *, note: Any = ..., expect: Iterable[str] | None = None,
             step: dict | None = None, undo_id: str | None = None, **cols: Any) -> bool:
        """Change an action's status (and ``cols``) if it is in ``expect``, and chain its new
        state; ``step`` (with its attempt's ``undo_id``) is carried in that event. False if lost."""
        sets, params = ["status = ?", "updated_at = ?"], [status, now_iso()]
        if note is not ...:
            sets.append("note = ?")
            params.append(note)
        for col, value in cols.items():
            sets.append(f"{col} = ?")
            params.append(value)
        where = "id = ?"
        params.append(action_id)
        if expect is not None:
            exp = list(expect)
            where += f" AND status IN ({','.join('?' * len(exp))})"
            params.extend(exp)
        sql = f"UPDATE actions SET {', '.join(sets)} WHERE {where}"
        if self.db.returning:
            row = self._one(sql + f" RETURNING {ACTION_COLS}", params)
            if row is not None:
                self._state_event(action_from_row(row), f"action.{status}", step, undo_id)
            return row is not None
        cur = self._q(sql, params)
        if cur.rowcount:
            self._action_event(action_id, f"action.{status}", step, undo_id)
        return cur.rowcount == 1

    def set_prior(self, action_id: str, prior: str, snapshot: Any = None, verify: Any = None) -> None:
        """Store the pre-read: ``prior`` is ``captured`` (with ``snapshot`` payload) or ``absent``.
        Committed before the call is forwarded (PROXY.md §2.8)."""
        with self._guard("store snapshot"), self._tx():
            snap = self.put_json(snapshot, ACTION_BLOB_MIN) if prior == "captured" else None
            self._q("UPDATE actions SET prior = ?, snapshot_ref = ?, verify_ref = ?, updated_at = ? WHERE id = ?",
                    (prior, snap, self._put_payload(verify), now_iso(), action_id))
            self._action_event(action_id, "action.snapshot")

    def mark_applied(self, action_id: str, *, result: Any, inverse: list | None, verify: Any,
                     post: Any, note: str | None) -> None:
        """The call succeeded: store result, resolved inverse, drift read and post-state."""
        with self._guard("mark applied"), self._tx():
            self._set(action_id, "applied", note=note, expect=("pending", "unknown"),
                      result_ref=self.put_json(result, ACTION_BLOB_MIN), inverse_ref=self._put_payload(inverse) if inverse else None,
                      verify_ref=self._put_payload(verify), post_ref=self._put_payload(post))

    def defer_applied(self, action_id: str, *, result: Any, inverse: list | None, verify: Any,
                      post: Any, note: str | None) -> None:
        """:meth:`mark_applied`, written at the start of this connection's next transaction
        (or by :meth:`flush`) instead of in one of its own: the proxy's lane commits a write's
        outcome while the next call is at the server, off the path to sending it (issue 11
        item 4; :meth:`prepare_deferred` waits for its post-read before that call is sent).
        Until then the action is ``pending``; a proxy killed in between leaves it so, and it
        becomes ``unknown`` (undo halts there) when the run is closed or found stale.

        ``verify``: ``...`` keeps the read recorded with the pre-read (it is the same call: not
        stored twice). ``post`` may be a callable returning ``(post, problem)``: the post-read still in flight,
        waited for before that transaction takes the write lock; ``problem`` (or None) is added
        to the note.
        """
        def prepare() -> Callable[[], None]:
            state, why = post, None
            if callable(post):
                try:
                    state, why = post()
                except Exception as exc:  # noqa: BLE001 - the outcome is journalled whatever the read did
                    state, why = None, f"post-state could not be captured: {exc!r}"
            text = "; ".join(x for x in (why, note) if x) or None
            # encoded here, outside the write lock (the lane prepares while a pre-read is out)
            blobs: list = []
            cols: dict[str, Any] = {}
            for col, value in (("result_ref", result), ("inverse_ref", inverse or None), ("post_ref", state),
                               ("verify_ref", verify)):
                if value is ...:  # the pre-read's call, recorded with the row: kept
                    continue
                ref = None
                if value is not None or col == "result_ref":  # a result of None is stored as null, as ever
                    ref, more = self._encode_json(value, ACTION_BLOB_MIN)
                    blobs.extend(more)
                cols[col] = ref
            self._packed_parts(blobs)

            def change() -> None:
                self._store_parts(blobs)
                self._set(action_id, "applied", note=text, expect=("pending", "unknown"), **cols)
            return change
        self._deferred.append(prepare)

    def mark_failed(self, action_id: str, note: str, result: Any = None) -> None:
        """The call certainly did not happen (refused before it was sent, a JSON-RPC error,
        ``isError`` from a read, or a write whose re-read shows nothing changed)."""
        with self._guard("mark failed"), self._tx():
            self._set(action_id, "failed", note=note, expect=("pending", "unknown", "gated"),
                      result_ref=self._put_payload(result))

    def mark_unknown(self, action_id: str, note: str) -> None:
        """Sent, but no answer (timeout, disconnect, cancellation): undo halts here."""
        with self._guard("mark unknown"), self._tx():
            self._set(action_id, "unknown", note=note, expect=("pending",))

    def mark_error_after_write(self, action_id: str, *, result: Any, reread: str | None, error: str,
                               inverse: list | None = None, verify: Any = None, post: Any = None) -> str:
        """Settle a write the server answered with ``isError: true`` (issue 10 item 4).

        An error is no proof that nothing happened, so the proxy reads the resource again:
        ``reread`` is ``unchanged`` (same as the snapshot) → ``failed``; ``changed`` →
        ``applied``, the error kept in the note, with the inverse, read and post-state so undo
        can put it back; ``unreadable`` or None (no read to settle it) → ``unknown``, where
        undo halts; ``present`` (a rule's settle read found the resource, which may have been
        there before the call) → ``unknown``. Returns the status written.
        """
        status = ERROR_AFTER_WRITE.get(reread or "unreadable", "unknown")
        with self._guard("settle an error after a write"), self._tx():
            if status == "failed":
                self._set(action_id, "failed", note=f"the server refused the call and the resource is unchanged: {error}",
                          expect=("pending",), result_ref=self._put_payload(result))
            elif status == "applied":
                self._set(action_id, "applied", note=f"the server reported an error, but the resource changed: {error}",
                          expect=("pending",), result_ref=self._put_payload(result),
                          inverse_ref=self._put_payload(inverse) if inverse else None,
                          verify_ref=self._put_payload(verify), post_ref=self._put_payload(post))
            else:
                why = ("no read could tell whether it applied" if reread is None
                       else "its settle read found the resource, which this call may have made" if reread == "present"
                       else "the resource could not be read again to tell whether it applied")
                self._set(action_id, "unknown", note=f"outcome unknown: the server reported an error and {why}: {error}",
                          expect=("pending",), result_ref=self._put_payload(result))
        return status

    # -- undo and redo -----------------------------------------------------------------------
    def set_action_status(self, action_id: str, status: str, note: Any = ...,
                          expect: Iterable[str] | None = None, reverted: Any = ...) -> bool:
        """Conditional status change used by undo and redo (claims, outcomes). False if lost.
        ``reverted``: how a ``rolled_back`` action got there (verified | unverified | found)."""
        cols = {} if reverted is ... else {"reverted": reverted}
        with self._guard("update action"), self._tx():
            return self._set(action_id, status, note=note, expect=expect, **cols)

    def reapply(self, action_id: str, *, result: Any, inverse: list | None, verify: Any, post: Any,
                note: str) -> bool:
        """A redo re-sent this call and it succeeded: ``pending`` → ``applied`` with the new
        result, inverse, read and post-state (a later undo reverts it again)."""
        with self._guard("record a redo"), self._tx():
            return self._set(action_id, "applied", note=note, expect=("pending",), reverted=None,
                             result_ref=self.put_json(result, ACTION_BLOB_MIN), inverse_ref=self._put_payload(inverse) if inverse else None,
                             verify_ref=self._put_payload(verify), post_ref=self._put_payload(post))

    # -- reading ---------------------------------------------------------------------------
    def _get_action(self, action_id: str) -> ActionRow:
        row = self._one(f"SELECT {ACTION_COLS} FROM actions WHERE id = ?", (action_id,))
        if row is None:  # a plain read (schema 6): its id is not indexed, so looked for only now
            row = self._one(f"SELECT {ACTION_COLS} FROM {self._all_actions} WHERE id = ? AND class = 'readonly'", (action_id,))
        return action_from_row(self._require(row, f"action {action_id}"))

    def get_action(self, action_id: str) -> ActionRow:
        with self._guard("read action"):
            return self._get_action(action_id)

    def find_action(self, ref: str) -> ActionRow:
        """An action by id or unambiguous prefix.

        Raises:
            UsageError: nothing matches, or the prefix is ambiguous.
        """
        if not ref or not all(c in "0123456789abcdef-" for c in ref.lower()):
            raise UsageError(f"{ref!r} is not an action id (ids look like 1e1983ae)")
        with self._guard("find action"):
            rows = self._all(f"SELECT {ACTION_COLS} FROM {self._all_actions} WHERE id = ? OR id LIKE ?", (ref, ref.lower() + "%"))
        exact = [r for r in rows if r[0] == ref]
        rows = exact or rows
        if not rows:
            raise UsageError(f"no action matches {ref}")
        if len(rows) > 1:
            raise UsageError(f"{ref} matches {len(rows)} actions; give more of the id")
        return action_from_row(rows[0])

    def actions(self, run_id: str) -> list[ActionRow]:
        """A run's actions by seq."""
        with self._guard("read actions"):
            rows = self._all(f"SELECT {ACTION_COLS} FROM {self._all_actions} WHERE run_id = ? ORDER BY seq", (run_id,))
        return [action_from_row(r) for r in rows]

    def actions_of(self, run_ids: Iterable[str]) -> list[ActionRow]:
        """The actions of several runs (a session) in the order they happened.

        Journal-wide order, kept consistent with each run's own: a read is numbered when it
        is journalled (up to 50 ms after a later write of its run), so each action is placed
        by the smallest journal-wide number of itself and what follows it in its run. Writes
        keep their own numbers; a read lands just before the next write of its run.
        """
        ids = list(run_ids)
        rows: list[ActionRow] = []
        with self._guard("read actions"):
            for k in range(0, len(ids), 500):
                part = ids[k:k + 500]
                rows.extend(action_from_row(r) for r in self._all(
                    f"SELECT {ACTION_COLS} FROM {self._all_actions} WHERE run_id IN ({','.join('?' * len(part))})", tuple(part)))
        by_run: dict[str, list[ActionRow]] = {}
        for a in rows:
            by_run.setdefault(a.run_id, []).append(a)
        keyed: list[tuple[float, str, float, ActionRow]] = []
        for rid, acts in by_run.items():
            low = None
            for a in sorted(acts, key=lambda a: _number(a.seq), reverse=True):
                g = _number(a.gseq)
                low = g if low is None else min(low, g)
                keyed.append((low, rid, _number(a.seq), a))
        return [k[3] for k in sorted(keyed, key=lambda k: k[:3])]

    def first_gseq(self, run_ids: Iterable[str]) -> int:
        """The smallest journal-wide number among the writes of ``run_ids`` (0 for none)."""
        ids = list(run_ids)
        if not ids:
            return 0
        with self._guard("read actions"):
            row = self._one(f"SELECT MIN(gseq) FROM actions WHERE run_id IN ({','.join('?' * len(ids))})", tuple(ids))
        return int(row[0]) if row and row[0] is not None else 0

    def writes_after(self, server: str | None, gseq: int, exclude_runs: Iterable[str] = ()) -> list[ActionRow]:
        """Writes (not readonly) on ``server`` (None: on any server) recorded after journal-wide
        number ``gseq``, still in effect (:data:`IN_EFFECT`), in runs other than
        ``exclude_runs``; oldest first. Used by undo and redo to find what other sessions did
        to a resource since."""
        skip = list(exclude_runs)
        states = list(IN_EFFECT)
        where = ("server = ? AND " if server is not None else "") + "gseq > ? AND class != 'readonly' "
        with self._guard("read actions"):
            rows = self._all(f"SELECT {ACTION_COLS} FROM actions WHERE {where}"
                             f"AND status IN ({','.join('?' * len(states))})"
                             + (f" AND run_id NOT IN ({','.join('?' * len(skip))})" if skip else "") + " ORDER BY gseq",
                             (*([server] if server is not None else []), gseq, *states, *skip))
        return [action_from_row(r) for r in rows]

    def reverted_leaving(self, refs: Iterable[str]) -> list[ActionRow]:
        """Rolled-back writes whose recorded post-state is one of the payloads ``refs`` (refs
        are content-addressed: the same state, the same ref); oldest first. Used by undo to
        find an older call an undo reverted while a newer one that replaced its state was in
        effect (:meth:`synartesis.undo.engine._Walk.undone_under`)."""
        want = sorted(set(refs))
        rows: list = []
        with self._guard("read actions"):
            for k in range(0, len(want), 500):
                part = want[k:k + 500]
                rows += self._all(f"SELECT {ACTION_COLS} FROM actions WHERE status = 'rolled_back' AND class != 'readonly' "
                                  f"AND post_ref IN ({','.join('?' * len(part))})", tuple(part))
        return sorted((action_from_row(r) for r in rows), key=lambda a: a.gseq or 0)

    def reverted_since(self, since: str) -> list[ActionRow]:
        """Rolled-back writes whose row last changed after ``since`` (an ISO time as the journal
        writes them): what undos reverted since then; oldest first. Read only when a drift
        halt is explained (no index: a scan of ``actions``)."""
        with self._guard("read actions"):
            rows = self._all(f"SELECT {ACTION_COLS} FROM actions WHERE status = 'rolled_back' AND class != 'readonly' "
                             "AND updated_at > ?", (since,))
        return sorted((action_from_row(r) for r in rows), key=lambda a: (a.updated_at or "", a.gseq if type(a.gseq) is int else 0))

    def recent_actions(self, limit: int = 12) -> list[ActionRow]:
        """The newest actions across runs, oldest first."""
        with self._guard("read actions"):
            rows = self._all(f"SELECT {ACTION_COLS} FROM {self._all_actions} ORDER BY gseq DESC, created_at DESC LIMIT ?", (limit,))
        return [action_from_row(r) for r in reversed(rows)]

    def data_version(self) -> int:
        """Changes whenever another connection commits (cheap polling for live views)."""
        return self.db.data_version()


# canonical(action_state(row)) of a read as recorded: the keys sorted, nothing but these nine
# set (args ref, gseq, call key, note, result ref, seq, server, status, tool); tests/journal checks it
# against the general path.
_READ_STATE = ('{"args":%s,"by":null,"class":"readonly","decision":null,"gseq":%d,"inverse":null,"key":"%s",'
               '"note":%s,"post":null,"prior":null,"result":%s,"reverted":null,"seq":%d,"server":%s,"snapshot":null,'
               '"status":%s,"tool":%s,"used_by":null,"verify":null}')
_q = encode_basestring  # canonical() of a str
_QUOTED_STATUS = {status: _q(status) for status in READ_STATUSES}
_DIGEST = '{"synartesisDigest":true,"bytes":%d,"sha256":%s,"preview":%s}'
_DIGEST_KEYS = ["synartesisDigest", "bytes", "sha256", "preview"]


def _digest_refs(result: Any) -> tuple[str, str] | None:
    """An inline ref for a read's digested result (``{synartesisDigest, bytes, sha256,
    preview}``), built without walking it, that :meth:`get_json` and ``audit`` read as they read
    :meth:`put_json`'s, and its canonical text (``_q(ref)``); None for anything else (then
    put_json decides)."""
    if type(result) is not dict or len(result) != 4 or list(result) != _DIGEST_KEYS:
        return None  # not the keys, in the order read_record and LazyFrame.result_digest build them
    size, digest, preview = result["bytes"], result["sha256"], result["preview"]
    if result["synartesisDigest"] is not True or type(size) is not int or type(digest) is not str \
            or type(preview) is not str:
        return None
    if digest.isalnum() and digest.isascii():
        # a hex digest (read_record's): nothing in it to escape, so only the preview is quoted,
        # and quoted again for the ref's own quoting below (_q costs about 30 instructions a
        # character, each replace about 300 an occurrence: the digest and our own keys are
        # written out already quoted instead of passed through them)
        qp = _q(preview)
        text = f'{{"synartesisDigest":true,"bytes":{size},"sha256":"{digest}","preview":{qp}}}'  # _DIGEST
        # the parts around the preview are ours (no "$", nothing past ASCII), so the checks
        # below look at the preview alone (_q neither adds nor removes either)
        if len(text) > 2048 or not preview.isascii() or "$synartesis." in preview:
            return None
        qq = qp.replace("\\", "\\\\").replace('"', '\\"')
        return "=" + text, f'"={{\\"synartesisDigest\\":true,\\"bytes\\":{size},\\"sha256\\":\\"{digest}\\",\\"preview\\":{qq}}}"'
    # json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    text = f'{{"synartesisDigest":true,"bytes":{size},"sha256":{_q(digest)},"preview":{_q(preview)}}}'  # _DIGEST
    if len(text) > 2048 or not text.isascii() or "$synartesis." in text:
        return None  # long, not ASCII, or a server's look-alike holding our markers: put_json decides
    # inline, as put_json stores a small value (read back by get_json alike); quoted as _q
    # quotes it: ASCII holding no control character (those are escaped in the two strings, and
    # the rest is ours), in which _q escapes nothing but the quotes and backslashes
    return "=" + text, '"=' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number(value: Any) -> float:
    """A ``seq`` or ``gseq`` as a number to order by: one that is not a number (NULL, or text
    or bytes typed in by hand, which SQLite's INTEGER columns keep as they are) orders as 0,
    so a hand-edited journal still lists (``audit`` says what was edited; adversarial review 30)."""
    return value if type(value) in (int, float) else 0
