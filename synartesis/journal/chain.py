"""The event chain and its audit.

Every change of an action, run or attempt appends an ``events`` row whose hash covers the
previous event of its run and its own canonical body; ``runs.head`` holds the newest hash
(action rows change status, so the chain lives beside them, not in them). The reads of one
batch share one ``reads.record`` event that lists each read's state (schema 5; a read's row
never changes afterwards). :meth:`audit` re-computes the chain and compares the rows with what
their last events recorded.
The chain is not keyed: it catches edits and deletions by anything that does not recompute it.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from synartesis.canonical import canonical, sha256_hex
from synartesis.journal.blobs import BlobsMixin
from synartesis.journal.rows import (ACTION_COLS, ActionRow, AuditResult, action_from_row, action_state, action_state_text,
                                     event_text, now_iso, packed_event)

__all__ = ["ChainMixin"]

# Keys that schema 2 added to an action's chained state; events written before it lack them.
_LATER_KEYS = frozenset({"gseq", "reverted", "note"})
# Run fields that schema 2 chains in ``run.begin`` (compared when the event has them).
_ORIGIN_KEYS = ("session", "pid", "started", "host")


# PostgreSQL (a data-modifying CTE): move a run's head from the one this connection wrote last
# and append the event, or do neither when another writer moved it.
_MOVE_AND_APPEND = ("WITH moved AS (UPDATE runs SET head = ? WHERE id = ? AND head = ? RETURNING id) "
                    "INSERT INTO events (run_id, action_id, undo_id, at, kind, data, prev, hash) "
                    "SELECT ?, ?, ?, ?, ?, ?, ?, ? FROM moved")


class ChainMixin(BlobsMixin):
    def _event(self, run_id: str, kind: str, data: dict, *, action_id: str | None = None,
               undo_id: str | None = None, text: str | None = None) -> None:
        """Append one event to ``run_id``'s chain (inside a transaction). ``text``: the
        canonical text of ``data`` when the caller built it already."""
        hashed, stored = chain_texts(data, text)
        self._append_event(run_id, kind, hashed, stored, action_id=action_id, undo_id=undo_id)

    def _append_event(self, run_id: str, kind: str, hashed: str, stored: str, *, action_id: str | None = None,
                      undo_id: str | None = None, prev: str | None = None, at: str | None = None) -> None:
        """Append an event whose data's texts are known (:func:`chain_texts`): ``hashed`` its
        canonical JSON, ``stored`` what is written. ``prev``: the run's head as just read in
        this transaction, when the caller has it; ``at``: its time (default now).

        Otherwise the head this connection wrote last is used; a conditional UPDATE notices
        when another writer moved it since, and only then is it read back.
        """
        at = at or now_iso()
        body = event_body(run_id, action_id, undo_id, at, kind, hashed)
        if self.db.name == "sqlite":
            # a batch of reads is packed fast (zlib level 1 and memLevel 4: 1.5–1.8 µs a read,
            # 10 % larger than level 9's 20–50 µs; memLevel 8 was 3 µs, its larger state copied
            # per event); every other event at level 3: a write's two events (mostly digests)
            # pack to 203 + 245 bytes against level 9's 198 + 244, in 94k instructions each
            # against 117k under callgrind (levels 4 to 9 search lazily, for nothing here)
            if kind == "reads.record":
                stored = packed_event(stored, 1, 4)
            else:
                stored = packed_event(stored, 3)  # PostgreSQL's data is text (TOAST compresses long rows)
        digest = ""
        if prev is not None:
            digest = sha256_hex((prev + "\n" + body).encode("utf-8", "surrogatepass"))
            self._q("UPDATE runs SET head = ? WHERE id = ?", (digest, run_id))
        else:
            # a head this transaction already moved is the one to chain from (not yet in _heads)
            prev = self._tx_heads.get(run_id) or self._heads.get(run_id)
            if prev is not None:
                digest = sha256_hex((prev + "\n" + body).encode("utf-8", "surrogatepass"))
                if self.db.name == "postgresql":
                    # one round trip: the head moves and the event is appended only if it was ours
                    if self._q(_MOVE_AND_APPEND, (digest, run_id, prev, run_id, action_id, undo_id, at, kind, stored,
                                                  prev, digest)).rowcount == 1:
                        self._tx_heads[run_id] = digest
                        return
                    prev = None
                elif self._q("UPDATE runs SET head = ? WHERE id = ? AND head = ?", (digest, run_id, prev)).rowcount != 1:
                    prev = None
            if prev is None:
                row = self._one("SELECT head FROM runs WHERE id = ?", (run_id,))
                prev = row[0] if row else ""
                digest = sha256_hex((prev + "\n" + body).encode("utf-8", "surrogatepass"))
                self._q("UPDATE runs SET head = ? WHERE id = ?", (digest, run_id))
        self._q("INSERT INTO events (run_id, action_id, undo_id, at, kind, data, prev, hash) VALUES (?,?,?,?,?,?,?,?)",
                (run_id, action_id, undo_id, at, kind, stored, prev, digest))
        self._tx_heads[run_id] = digest

    def _action_event(self, action_id: str, kind: str, step: dict | None = None, undo_id: str | None = None) -> None:
        row = self._one(f"SELECT {ACTION_COLS} FROM actions WHERE id = ?", (action_id,))
        if row is None:
            return
        self._state_event(action_from_row(row), kind, step, undo_id)

    def _state_event(self, a: ActionRow, kind: str, step: dict | None = None, undo_id: str | None = None) -> None:
        """Chain ``a``'s state as it is now (``kind``: ``action.<status>``); ``step``: the
        undo, redo or saga step that changed it, carried in the same event (one event per
        step, not two: see :meth:`AttemptsMixin.attempt_step`)."""
        data = action_state(a)
        step_text = None
        if step is not None:
            data["step"] = step
            step_text = canonical(step)
        self._event(a.run_id, kind, data, action_id=a.id, undo_id=undo_id, text=action_state_text(a, step_text))

    def audit(self, run_id: str) -> AuditResult:
        """Re-compute the run's hash chain and compare it with the rows.

        Finds: an edited or deleted event (a broken link or hash), a truncated chain (head
        mismatch), action rows whose status or payloads differ from their last recorded event,
        rows with no recorded history, altered payloads, and edited launch lines or origins.
        """
        problems: list[str] = []
        self._drop_payload_caches()
        with self._guard("audit"), self._snapshot():
            run = self._one("SELECT head, servers, session_id, pid, proxy_started, host, status, unverified, end_note "
                            "FROM runs WHERE id = ?", (run_id,))
            events = self._all("SELECT id, action_id, undo_id, at, kind, data, prev, hash FROM events "
                               "WHERE run_id = ? ORDER BY id", (run_id,))
            actions = {a.id: a for a in (action_from_row(r) for r in self._all(
                f"SELECT {ACTION_COLS} FROM {self._all_actions} WHERE run_id = ? ORDER BY seq", (run_id,)))}
            session_row = run is not None and run[2] is not None and self._one(
                "SELECT 1 FROM sessions WHERE id = ?", (run[2],)) is not None
            attempts = {r[0]: r for r in self._all("SELECT id, by, status, report_ref, kind, attempt, scope "
                                                    "FROM undos WHERE run_id = ?", (run_id,))}
        if run is None:
            return AuditResult(run_id, False, 0, [f"run {run_id} is not in the journal"])
        head, servers, session_id, pid, started, host, run_status, run_unverified, end_note = run
        if session_id is not None and not session_row:  # prune removes a session with its last run only
            problems.append(f"the run's session ({session_id}) is not in the journal: removed afterwards")
        prev = ""
        run_state: tuple | None = None  # the run's last run.end, run.close or run.status event
        closed_note: Any = None  # the note of its last run.end or run.close (what end_note holds)
        last_state: dict[str, Any] = {}
        read_at: dict[str, str] = {}  # read id -> the time of the reads.record event that chains it
        begin: dict | None = None
        gone_attempts: dict[str, tuple[int, str, str]] = {}  # undo id -> its first event, for a row that is gone
        attempt_events: dict[str, list] = {}  # undo id -> its begin and end events (checked after the chain)
        for eid, action_id, undo_id, at, kind, data, eprev, ehash in events:
            if undo_id is not None and undo_id not in attempts and undo_id not in gone_attempts:
                gone_attempts[undo_id] = (eid, kind, at)
            elif undo_id is not None and kind.endswith((".begin", ".end", ".abandoned")):
                attempt_events.setdefault(undo_id, []).append((eid, kind, at, data))
            if eprev != prev:
                problems.append(f"event {eid} ({kind} at {at}) does not follow the one before it: "
                                "an event was removed or reordered here")
            prev = ehash
            try:
                text: str | None = event_text(data)
            except (zlib.error, UnicodeDecodeError, TypeError):
                text = None
            parsed: Any = None
            # The stored text is the canonical text the writer hashed (event_body), so it is
            # hashed as it is, and parsed only if its value is needed (an action's last state,
            # the run's begin). Only when that hash does not match (a lone surrogate is stored
            # escaped, or the row was altered) is the canonical text recomputed from the value.
            if text is None or _chain_hash(eprev, event_body(run_id, action_id, undo_id, at, kind, text)) != ehash:
                parsed = _object(text)
                if parsed is None:  # every event's data is an object: retyped by hand
                    problems.append(f"event {eid} ({kind} at {at}) was altered after it was written (unreadable)")
                    continue
                if _chain_hash(eprev, canonical({"run": run_id, "action": action_id, "undo": undo_id, "at": at,
                                                 "kind": kind, "data": parsed})) != ehash:
                    problems.append(f"event {eid} ({kind} at {at}) was altered after it was written")
            if action_id and kind.startswith("action."):
                last_state[action_id] = (eid, kind, at, parsed if parsed is not None else text)
            elif kind == "reads.record":
                batch = parsed if parsed is not None else _object(text)
                if batch is None:
                    problems.append(f"event {eid} ({kind} at {at}) was altered after it was written (unreadable)")
                    continue
                for entry in _read_entries(batch):
                    if entry is None:
                        problems.append(f"event {eid} ({kind} at {at}) lists a read it does not describe: altered")
                    else:
                        last_state[entry[0]] = (eid, kind, at, entry[1])
                        read_at[entry[0]] = at  # a read's row takes its batch's time (record_reads)
            elif kind == "run.begin" and begin is None:
                begin = parsed if parsed is not None else _object(text)
            elif kind in _RUN_STATUS_KINDS:
                run_state = (eid, kind, at, parsed if parsed is not None else text)
                if kind != "run.status":
                    ended = parsed if parsed is not None else _object(text)
                    closed_note = ended.get("note") if isinstance(ended, dict) else None
        for aid, (eid, kind, at, state) in list(last_state.items()):
            if isinstance(state, str):  # hashed as it was written: parsed now, once per action
                state = _object(state)
                if state is None:
                    problems.append(f"event {eid} ({kind} at {at}) was altered after it was written (unreadable)")
                    del last_state[aid]
                    continue
            last_state[aid] = state
        if prev != (head or ""):
            problems.append("the newest events of this run are missing (the chain ends before the run's head)")
        problems += _attempt_problems(attempts, attempt_events, self._bad_payload)
        problems += _run_status_problems(run_state, run_status, run_unverified, end_note, closed_note)
        for undo_id, (eid, kind, at) in gone_attempts.items():  # prune removes attempts with their run only
            problems.append(f"an undo or redo attempt ({str(undo_id)[:8]}, event {eid}: {kind} at {at}) was recorded "
                            "but its row is gone: removed afterwards")
        if begin is not None:
            lines = _object(servers or "{}")
            if lines is None or canonical(lines) != canonical(begin.get("servers") or {}):
                problems.append("the run's recorded launch lines were edited after it started")
            now = {"session": session_id, "pid": pid, "started": started, "host": host}
            if any(k in begin and begin[k] != now[k] for k in _ORIGIN_KEYS):
                problems.append("the run's recorded origin (session, proxy process) was edited after it started")
        for a in actions.values():
            for ref in (a.args_ref, a.snapshot_ref, a.result_ref, a.inverse_ref, a.verify_ref, a.post_ref):
                bad = self._bad_payload(ref)
                if bad:
                    problems.append(f"action {a.seq} ({a.qualified}): {bad}")
                    break
        for aid, a in actions.items():
            if aid not in last_state:
                problems.append(f"action {a.seq} ({a.qualified}) has no recorded history: inserted outside synartesis")
            elif not _matches(last_state[aid], action_state(a)):
                problems.append(f"action {a.seq} ({a.qualified}) differs from what was recorded: edited afterwards")
            elif aid in read_at and a.created_at != read_at[aid]:
                # the state a batch chains has no time of its own: the event's (hashed) is the row's
                problems.append(f"action {a.seq} ({a.qualified}) has a time ({a.created_at}) other than the one "
                                f"recorded for it ({read_at[aid]}): edited afterwards")
        for aid, state in last_state.items():
            if aid not in actions:
                problems.append(f"action {state.get('seq')} ({state.get('server')}.{state.get('tool')}) was "
                                "recorded but its row is gone: removed afterwards")
        # A gap in seqs is not evidence: a read numbered by a proxy that was then killed before
        # its reader thread wrote it leaves one. Removed rows are caught by the chain instead.
        return AuditResult(run_id, not problems, len(events), problems)


    def audit_orphans(self) -> list[AuditResult]:
        """What is left of runs whose row is gone: their actions, events or undo attempts
        (``prune`` deletes a run with all of them, so rows without their run were removed by
        hand, hiding that run's calls from ``list``, ``show`` and ``undo``). One result per
        such run, never ``ok`` (adversarial review 30)."""
        counts: dict[str, dict[str, int]] = {}
        with self._guard("audit"), self._snapshot():
            for what, table in (("actions", self._all_actions), ("events", "events"), ("undo attempts", "undos")):
                for rid, n in self._all(f"SELECT run_id, count(*) FROM {table} "
                                        "WHERE run_id NOT IN (SELECT id FROM runs) GROUP BY run_id"):
                    counts.setdefault(rid, {})[what] = n
        out = []
        for rid in sorted(counts, key=str):
            left = ", ".join(f"{n} {what}" for what, n in counts[rid].items())
            out.append(AuditResult(str(rid), False, counts[rid].get("events", 0),
                                   [f"run {rid} is not in the journal, but {left} of it remain: its run row was "
                                    "removed afterwards"]))
        return out


_RUN_STATUS_KINDS = ("run.end", "run.close", "run.status")


def _run_status_problems(last: tuple | None, status: Any, unverified: Any, end_note: Any,
                         closed_note: Any = None) -> list[str]:
    """The run's status as its row says it against its last ``run.end``, ``run.close`` or
    ``run.status`` event (``active`` before any: adversarial review 31, F8, a run edited from
    complete to redone or rolled_back passed the audit while ``list`` showed it so): the status,
    the unverified count where the event sets it, and the note that closed it."""
    if last is None:
        if status != "active":
            return [f"the run's status ({status}) was edited afterwards: it never ended"]
        return []
    eid, kind, at, data = last
    recorded = _object(data) if isinstance(data, str) else data
    if not isinstance(recorded, dict):
        return []  # an unreadable event is reported by the chain check already
    expect_unverified = recorded.get("unverified", 0)
    if kind == "run.status" and recorded.get("status") != "compensated":
        expect_unverified = 0  # set_run_status keeps a count only for compensated
    ok = status == recorded.get("status") and (unverified or 0) == expect_unverified
    if ok:
        # the note of the event that ended the run, also once an undo's run.status came after
        # it (adversarial review 31b: a closing note edited after an undo passed)
        note = recorded.get("note") if kind != "run.status" else closed_note
        ok = end_note == note or (isinstance(note, str) and _kept(note) == end_note)
    if ok:
        return []
    return [f"the run's status ({_status_words(status, unverified)}) or closing note differs from what was recorded "
            f"(event {eid}: {kind} at {at}): edited afterwards"]


def _status_words(status: Any, unverified: Any) -> str:
    return f"{status}, {unverified} unverified" if unverified else str(status)


def _attempt_problems(rows: dict[str, tuple], events: dict[str, list], bad_payload: Any) -> list[str]:
    """Undo, redo and saga attempts whose row says something their chained events do not
    (adversarial review 31, F8: a halted undo's row edited to ``rolled_back``, its report or
    who ran it swapped, passed the audit; ``history`` and ``prune`` read those rows). Each row
    is compared with its ``KIND.begin`` event (kind, who, the attempt it belongs to, its scope:
    each when the event has it, as journals of schema 1 recorded only who) and its last
    ``KIND.end`` or ``KIND.abandoned`` (status and report); a row with neither is ``running``."""
    problems = []
    for uid, (_id, by, status, report_ref, kind, attempt, scope_text) in rows.items():
        begin, last = None, None
        for eid, ekind, at, data in events.get(uid, []):
            if ekind.endswith(".begin") and begin is None:
                begin = (eid, ekind, at, data)
            elif not ekind.endswith(".begin"):
                last = (eid, ekind, at, data)
        what = f"the {kind} attempt {str(uid)[:8]}"
        if begin is None:
            problems.append(f"{what} has no recorded start: inserted outside synartesis")
            continue
        recorded = _event_data(begin[3])
        try:
            scope = json.loads(scope_text) if scope_text else None
        except (TypeError, ValueError, RecursionError):
            scope = ...
        if (recorded is None or begin[1] != f"{kind}.begin"
                or any(k in recorded and recorded[k] != v for k, v in (("by", by), ("attempt", attempt)))
                # from schema 2 on, a begin event without a scope recorded none (schema 1 knew no
                # attempts, and migration 2 gave their rows a scope)
                or (("scope" in recorded or "attempt" in recorded) and recorded.get("scope") != scope)):
            problems.append(f"{what} (started {begin[2]}) differs from what was recorded when it started: "
                            "edited afterwards")
            continue
        if last is None:
            ok = status == "running"
        else:
            ended = _event_data(last[3])
            ok = ended is not None and (
                status == "abandoned" if last[1].endswith(".abandoned")
                else ended.get("status") == status and ("report" not in ended or ended["report"] == report_ref))
        if not ok:
            problems.append(f"{what} (started {begin[2]}) ended otherwise than recorded (its row says {status}): "
                            "edited afterwards")
        elif report_ref and bad_payload(report_ref):
            problems.append(f"{what} (started {begin[2]}): its report {bad_payload(report_ref)}")
    return problems


def _event_data(data: Any) -> dict | None:
    try:
        return _object(event_text(data))
    except (zlib.error, UnicodeDecodeError, TypeError):
        return None


def _object(text: str | None) -> dict | None:
    """An event's data as the object it must be; None when it is not one."""
    try:
        value = json.loads(text) if text is not None else None
    except (ValueError, TypeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _chain_hash(prev: str, body: str) -> str:
    return sha256_hex((prev + "\n" + body).encode("utf-8", "surrogatepass"))


_PLAIN = re.compile(r"[A-Za-z0-9_.:+-]*")


def _quoted(value: str | None) -> str:
    """``canonical(value)`` for an event's ids, kind and time (quoted directly when nothing in
    them needs escaping)."""
    if value is None:
        return "null"
    if _PLAIN.fullmatch(value):
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False)


def event_body(run_id: str, action_id: str | None, undo_id: str | None, at: str, kind: str, data_text: str) -> str:
    """``canonical({"run", "action", "undo", "at", "kind", "data"})`` built around the data's
    canonical text (computed once: it is also what is stored)."""
    return (f'{{"action":{_quoted(action_id)},"at":{_quoted(at)},"data":{data_text},"kind":{_quoted(kind)},'
            f'"run":{_quoted(run_id)},"undo":{_quoted(undo_id)}}}')


def chain_texts(data: Any, text: str | None = None) -> tuple[str, str]:
    """(what the chain hashes, what is stored) for an event's data: both its canonical JSON
    (``text`` when the caller built it), except that a lone surrogate is stored as its escape
    (SQLite text must be UTF-8) while the hash stays over the canonical text that
    :meth:`ChainMixin.audit` recomputes."""
    if text is None:
        text = canonical(data)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text, json.dumps(data, sort_keys=True, separators=(",", ":"))
    return text, text


def _read_entries(data: dict) -> list:
    """The ``(action id, state)`` pairs of a ``reads.record`` event's data (None for an entry
    of another shape: the event was altered, yet hashes right only if the chain was rebuilt)."""
    reads = data.get("reads")
    if not isinstance(reads, list):
        return [None]
    return [(e[0], e[1]) if isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and isinstance(e[1], dict)
            else None for e in reads]


def _matches(recorded: dict, current: dict[str, Any]) -> bool:
    """The row still says what its last event recorded (keys added later are compared only
    when the event has them; ``step`` is the undo step that event also carries, not a column)."""
    if set(current) - set(recorded) - _LATER_KEYS:
        return False
    return all(current.get(k) == v or (v.__class__ is str and _kept(v) == current.get(k))
               for k, v in recorded.items() if k != "step")


def _kept(note: Any) -> Any:
    """Text as the drivers keep what they cannot store as it is: a lone surrogate as its
    backslash escape (SQLite and PostgreSQL), a NUL as ``\\x00`` (PostgreSQL; SQLite keeps it).
    The chain holds the text as it was written: a note, and a server or tool name, a decider or
    a reason the same way (adversarial review 31, F5: a tool name holding a NUL, copied to
    PostgreSQL by `journal migrate`, or a lone surrogate, read as an edited row)."""
    if not isinstance(note, str):
        return note
    kept = note.encode("utf-8", "backslashreplace").decode("utf-8")
    return kept.replace("\x00", "\\x00") if "\x00" in kept else kept
