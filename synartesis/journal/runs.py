"""Runs and agent sessions: who launched each run, its lifecycle, and closing dead ones.

A *run* is one proxy's connection. A *session* is the runs of one agent: every run a client
process launched (grouped by that process's pid and start token on this host), or every run
whose environment names the same ``SYNARTESIS_SESSION`` (a host that starts many proxies from
one process, like the desktop window, sets one per conversation). A run with no parent to
group by is a session of its own.

A run is *stale* when it is stored ``active`` but its proxy is gone (see
:mod:`synartesis.journal.liveness`). Reads report it as ended; the first write of a CLI
connection closes it, and its ``pending`` actions become ``unknown`` (issue 9 item 2).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from synartesis.canonical import canonical, sha256_hex
from synartesis.errors import UsageError
from synartesis.journal.actions import ActionsMixin
from synartesis.journal.liveness import client_process, host_name, process_state, start_token
from synartesis.journal.rows import CREATED_NOTHING, IN_EFFECT, NOTHING_IN_EFFECT, NOTHING_TO_RESTORE, RUN_STATUSES, RunRow, SessionRow, new_id, now_iso

# {session: when its newest plain read was written}: each batch of reads is chained by one
# ``reads.record`` event carrying the reads' own time, so a run's newest read is its newest such
# event, found through events_by_run without reading its reads (schema 6)
_LAST_READ = "(SELECT e.at FROM events e WHERE e.run_id = r.id AND e.kind = 'reads.record' ORDER BY e.id DESC LIMIT 1)"
_LAST_READ_BY_SESSION = f"SELECT r.session_id, max({_LAST_READ}) FROM runs r GROUP BY r.session_id"

__all__ = ["RunsMixin", "RunOrigin", "SESSION_ENV", "session_key"]

SESSION_ENV = "SYNARTESIS_SESSION"
_RUN_COLS = ("id, label, client, started_at, ended_at, status, pid, servers, session_id, proxy_started, host, "
             "unverified, end_note")
_SESSION_COLS = "id, kind, name, client, client_pid, client_started, host, started_at"
_PENDING_NOTE = "outcome unknown: the run ended before an answer was recorded"


@dataclass(frozen=True)
class RunOrigin:
    """Where a run comes from: the proxy process, the agent's process, an explicit session.

    ``session`` is the ``SYNARTESIS_SESSION`` value (None when unset); ``client_*`` the process
    that launched the proxy (see :func:`liveness.client_process`); ``pid``/``started`` the
    proxy itself.
    """

    pid: int
    started: str | None
    host: str
    client_pid: int | None
    client_started: str | None
    client_program: str | None = None
    session: str | None = None

    @classmethod
    def here(cls, environ: Mapping[str, str] | None = None) -> "RunOrigin":
        """The origin of a run made by this process (reads ``/proc`` on Linux: microseconds)."""
        env = os.environ if environ is None else environ
        client = client_process()
        named = (env.get(SESSION_ENV) or "").strip() or None
        return cls(os.getpid(), start_token(os.getpid()), host_name(), client.pid, client.started, client.name, named)


def session_key(origin: RunOrigin, run_id: str) -> tuple[str, str]:
    """(session id, kind) for a run: the same agent always gets the same id, so proxies that
    start together agree without asking each other."""
    if origin.session:
        return "s-" + sha256_hex(("explicit\0" + origin.session).encode("utf-8", "surrogatepass"))[:16], "explicit"
    if origin.client_pid:
        basis = f"client\0{origin.host}\0{origin.client_pid}\0{origin.client_started or ''}"
        return "s-" + sha256_hex(basis.encode("utf-8", "surrogatepass"))[:16], "client"
    return "s-" + run_id.replace("-", "")[:16], "run"


def _launch_lines(text: str | None) -> dict:
    """A run's stored launch lines (``runs.servers``); ``{}`` when the text is not a JSON
    object (edited by hand: ``audit`` then reports the launch lines changed, where every
    listing stopped with an internal error: adversarial review 19, F10)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class RunsMixin(ActionsMixin):
    def begin_run(self, label: str | None, servers: dict, client: str | None = None, *,
                  origin: RunOrigin | None = None) -> str:
        """Open a run (status ``active``) in its agent's session; return its id.

        Args:
            label: what lists show as the agent (the client name from ``initialize``).
            servers: {name: launch line} recorded for undo.
            client: the client name (default: ``label``).
            origin: where the run comes from (default: this process, :meth:`RunOrigin.here`).
        """
        run_id = new_id()
        origin = origin or RunOrigin.here()
        client = client or label
        sid, kind = session_key(origin, run_id)
        now = now_iso()
        with self._guard("begin run"), self._tx():
            self._q(f"INSERT INTO sessions ({_SESSION_COLS}) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                    (sid, kind, origin.session, client, origin.client_pid, origin.client_started, origin.host, now))
            if client:
                self._q("UPDATE sessions SET client = ? WHERE id = ? AND client IS NULL", (client, sid))
            self._q("INSERT INTO runs (id, label, client, started_at, status, pid, servers, session_id, proxy_started, host) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (run_id, label, client, now, "active", origin.pid, canonical(servers), sid, origin.started, origin.host))
            self._event(run_id, "run.begin", {"label": label, "servers": servers, "session": sid, "pid": origin.pid,
                                              "started": origin.started, "host": origin.host,
                                              "client": {"name": client, "pid": origin.client_pid,
                                                         "started": origin.client_started,
                                                         "program": origin.client_program}})
        return run_id

    def set_run_label(self, run_id: str, label: str) -> None:
        """Name the agent of a run that began before ``initialize`` told it (once)."""
        with self._guard("label run"), self._tx():
            self._q("UPDATE runs SET label = ? WHERE id = ? AND label IS NULL", (label, run_id))
            self._q("UPDATE runs SET client = ? WHERE id = ? AND client IS NULL", (label, run_id))
            self._q("UPDATE sessions SET client = ? WHERE id = (SELECT session_id FROM runs WHERE id = ?) "
                    "AND client IS NULL", (label, run_id))

    def end_run(self, run_id: str) -> bool:
        """``active`` → ``complete`` (the proxy's own close). Never overwrites an undo's status
        (reference defect 5); anything still ``pending`` becomes ``unknown``."""
        with self._guard("end run"), self._tx():
            return self._close(run_id, now_iso(), "run.end", None)

    def close_run(self, run_id: str, note: str | None = None) -> bool:
        """Close a run a killed proxy left ``active``; False if it was no longer active.
        Its ``pending`` actions become ``unknown``; it ends when its last action did."""
        with self._guard("close run"), self._tx():
            return self._close(run_id, None, "run.close", note)

    def _close(self, run_id: str, ended_at: str | None, kind: str, note: str | None) -> bool:
        if ended_at is None:
            last = self._one("SELECT max(updated_at) FROM actions WHERE run_id = ?", (run_id,))
            read = self._last_read_at([run_id]).get(run_id) if self._has_reads else None
            ended_at = max((x for x in (last[0] if last else None, read) if x), default=None) or now_iso()
        status, unverified = self._ended_status(run_id)
        cur = self._q("UPDATE runs SET status = ?, unverified = ?, ended_at = ?, end_note = ? WHERE id = ? AND status = 'active'",
                      (status, unverified, ended_at, note, run_id))
        if not cur.rowcount:
            return False
        data: dict[str, Any] = {"status": status}
        if unverified:
            data["unverified"] = unverified
        if note:
            data["note"] = note
        self._event(run_id, kind, data)
        for (aid,) in self._all("SELECT id FROM actions WHERE run_id = ? AND status = 'pending'", (run_id,)):
            self._set(aid, "unknown", note=_PENDING_NOTE, expect=("pending",))
        return True

    def _ended_status(self, run_id: str) -> tuple[str, int]:
        """The status a run ends with: ``complete``, or what a forced undo of it while it was
        live left (that undo does not end a live run, whose proxy goes on journalling):
        ``rolled_back`` / ``compensated`` with how many were only sent when nothing it changed
        is still in effect, ``partial`` when something is (a call made after the undo too).
        Saga mode's own rollback of a run that goes on leaves it ``complete`` (reference defect 5)."""
        if not self._one("SELECT 1 FROM undos WHERE run_id = ? AND kind != 'saga' LIMIT 1", (run_id,)):
            return "complete", 0
        undone = unverified = in_effect = 0
        for status, reverted, n in self._all(
                "SELECT status, reverted, count(*) FROM actions WHERE run_id = ? AND class != 'readonly' "
                "GROUP BY status, reverted", (run_id,)):
            if status == "rolled_back":
                undone += n
                unverified += n if reverted == "unverified" else 0
            elif status in IN_EFFECT:
                in_effect += n
        if not undone:
            return "complete", 0
        if in_effect:
            return "partial", 0
        return ("compensated", unverified) if unverified else ("rolled_back", 0)

    def _reap_stale(self) -> int:
        """Close every active run whose proxy is gone (inside a transaction); return how many."""
        closed = 0
        for rid, pid, started, host in self._all("SELECT id, pid, proxy_started, host FROM runs WHERE status = 'active'"):
            if process_state(pid, started, host) == "gone":
                why = f"closed by synartesis: its proxy (pid {pid}) is gone"
                closed += self._close(rid, None, "run.close", why)
        return closed

    def close_stale(self) -> int:
        """Close every run whose proxy is gone now; return how many were closed."""
        self._reap_on_write = False
        with self._guard("close stale runs"), self._tx():
            return self._reap_stale()

    def set_run_status(self, run_id: str, status: str, unverified: int = 0) -> None:
        """Write an undo's or redo's outcome to the run (``rolled_back``, ``compensated`` with
        how many compensations were only sent, ``partial``, ``redone``)."""
        if status not in RUN_STATUSES:
            raise ValueError(f"not a run status: {status}")
        with self._guard("set run status"), self._tx():
            self._q("UPDATE runs SET status = ?, unverified = ?, ended_at = COALESCE(ended_at, ?) WHERE id = ?",
                    (status, unverified if status == "compensated" else 0, now_iso(), run_id))
            self._event(run_id, "run.status", {"status": status, "unverified": unverified} if unverified
                        else {"status": status})

    # -- reading ---------------------------------------------------------------------------
    def _run_rows(self, where: str = "", params: tuple = ()) -> list[RunRow]:
        rows = self._all(f"SELECT {_RUN_COLS} FROM runs {where} ORDER BY started_at DESC, {self.db.row_order} DESC",
                         params)
        if not rows:
            return []
        counts: dict[str, dict[str, int]] = {}
        open_writes: dict[str, int] = {}
        ids = [r[0] for r in rows]
        for chunk in range(0, len(ids), 500):
            part = ids[chunk:chunk + 500]
            for rid, status, reads, n in self._all(
                    f"SELECT run_id, status, class = 'readonly', count(*) FROM {self._all_actions} "
                    f"WHERE run_id IN ({','.join('?' * len(part))}) GROUP BY run_id, status, class = 'readonly'",
                    tuple(part)):
                c = counts.setdefault(rid, {})
                c[status] = c.get(status, 0) + n
                if not reads and status in IN_EFFECT:
                    open_writes[rid] = open_writes.get(rid, 0) + n
        out = []
        for r in rows:
            c = counts.get(r[0], {})
            stale = r[5] == "active" and process_state(r[6], r[9], r[10]) == "gone"
            status = r[5]
            if status in NOTHING_IN_EFFECT and open_writes.get(r[0]):
                status = "partial"  # a redo died mid-way (its sweep writes this too): something is in effect
            out.append(RunRow(r[0], r[1], r[2], r[3], r[4], status, r[6], _launch_lines(r[7]), sum(c.values()), c,
                              session_id=r[8], proxy_started=r[9], host=r[10], unverified=r[11] or 0,
                              end_note=r[12], stale=stale, open_writes=open_writes.get(r[0], 0)))
        return out

    def list_runs(self) -> list[RunRow]:
        """Every run, newest first."""
        with self._guard("list runs"):
            return self._run_rows()

    def session_runs(self, session_id: str) -> list[RunRow]:
        """The runs of one session, newest first."""
        with self._guard("list runs"):
            return self._run_rows("WHERE session_id = ?", (session_id,))

    def find_run(self, ref: str | None = None, *, status: Iterable[str] | None = None,
                 newest_not_active: bool = False) -> RunRow:
        """A run by id or unambiguous prefix; without ``ref`` the newest (optionally filtered;
        ``newest_not_active`` skips live runs, counting a stale run as ended).

        Raises:
            UsageError: nothing matches, or a prefix is ambiguous.
        """
        runs = self.list_runs()
        if status is not None:
            wanted = set(status)
            runs = [r for r in runs if r.status in wanted]
        if ref is not None:
            if ref.lower().startswith("s-"):  # a session where only a run is taken (new user round 30, U4)
                raise UsageError(f"{ref!r} is a session id, and this command takes a run id (like 1e1983ae): "
                                 "`synartesis list --runs` lists each session's runs")
            if not ref or not all(c in "0123456789abcdef-" for c in ref.lower()):
                raise UsageError(f"{ref!r} is not a run id (ids look like 1e1983ae; sessions like s-1e1983ae)")
            hits = [r for r in runs if r.id == ref] or [r for r in runs if r.id.startswith(ref.lower())]
            if not hits:
                raise UsageError(f"no run matches {ref}")
            if len(hits) > 1:
                raise UsageError(f"{ref} matches {len(hits)} runs; give more of the id: "
                                 + ", ".join(r.id[:12] for r in hits[:5]))
            return hits[0]
        if newest_not_active:
            runs = [r for r in runs if not r.live]
        if not runs:
            raise UsageError("there is no run to act on")
        return runs[0]

    def list_sessions(self) -> list[SessionRow]:
        """Every session, the one with the newest activity first."""
        cols = ", ".join("s." + c.strip() for c in _SESSION_COLS.split(","))
        with self._guard("list sessions"):
            rows = self._all(f"SELECT {cols}, max(r.started_at), max(a.created_at) FROM sessions s "
                             "JOIN runs r ON r.session_id = s.id LEFT JOIN actions a ON a.run_id = r.id GROUP BY s.id")
            reads = dict(self._all(_LAST_READ_BY_SESSION)) if self._has_reads else {}
        out = [SessionRow(*r[:8], last_at=max(x for x in (*r[8:], reads.get(r[0])) if x)) for r in rows]
        return sorted(out, key=lambda s: (s.last_at or "", s.id), reverse=True)

    def find_session(self, ref: str) -> SessionRow:
        """A session by id (``s-…``) or unambiguous prefix, or by its ``SYNARTESIS_SESSION`` name.

        A whole id names its session. Otherwise a name and an id prefix that point at different
        sessions are ambiguous (a session may be named like the short id ``list`` shows of
        another one), never settled by one winning.

        Raises:
            UsageError: nothing matches, or a prefix or name is ambiguous.
        """
        with self._guard("find session"):
            rows = self._all(f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ? OR name = ? OR id LIKE ?",
                             (ref, ref, ref.lower() + "%" if ref.lower().startswith("s-") else "\0"))
        whole = [r for r in rows if r[0] == ref]
        named = [r for r in rows if r[2] == ref]
        prefixed = [r for r in rows if r not in named]
        if not whole and named and prefixed:
            raise UsageError(f"{ref} is ambiguous: it is the {SESSION_ENV} name of session {named[0][0]} and the "
                             f"start of the id of {', '.join(r[0] for r in prefixed[:5])}; give the whole id")
        rows = whole or named or rows
        if not rows:
            raise UsageError(f"no session matches {ref}")
        if len(rows) > 1:
            raise UsageError(f"{ref} matches {len(rows)} sessions; give more of the id: "
                             + ", ".join(r[0][:10] for r in rows[:5]))
        return self._with_last_at(rows[0])

    def get_session(self, session_id: str) -> SessionRow:
        with self._guard("read session"):
            row = self._one(f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ?", (session_id,))
        return self._with_last_at(self._require(row, f"session {session_id}"))

    def _with_last_at(self, row: Any) -> SessionRow:
        """A session row with ``last_at`` filled in, as :meth:`list_sessions` gives it."""
        with self._guard("read session"):
            last = self._one("SELECT max(r.started_at), max(a.created_at) FROM runs r "
                             "LEFT JOIN actions a ON a.run_id = r.id WHERE r.session_id = ?", (row[0],))
            read = self._one(_LAST_READ_BY_SESSION.replace("GROUP BY", "WHERE r.session_id = ? GROUP BY"),
                             (row[0],)) if self._has_reads else None
        return SessionRow(*row, last_at=max((x for x in (*(last or ()), read and read[1]) if x), default=None))

    def _last_read_at(self, run_ids: list[str]) -> dict[str, str]:
        """{run id: when its newest plain read (schema 6's ``reads``) was written} for those with any."""
        marks = ",".join("?" * len(run_ids))
        return {rid: at for rid, at in self._all(f"SELECT r.id, {_LAST_READ} FROM runs r WHERE r.id IN ({marks})",
                                                  tuple(run_ids)) if at}

    def undoable_counts(self, replan: bool = False) -> dict[str, tuple[int, int]]:
        """{session id: (how many of its actions undo would act on, how many of its runs hold
        them)} for sessions with any (the runs, so that the pick does not count a run with
        nothing left to undo: new user round 22, #7). An action counts when it is not
        readonly, and applied or being reverted with an inverse (or meant to have one: a
        reversible or compensable call whose inverse did not resolve, which undo names so that
        ``--replan`` can build it), or of unknown outcome, or halted on (undo stops there and
        says why: something to do too). A call whose inverse needs the state before it and none
        existed (its note begins :data:`NOTHING_TO_RESTORE`: an approved creation) stays in
        place and does not count unless ``replan`` (the current policy may build an inverse),
        so a bare ``undo`` steps back past a session of nothing else (a new user's finding); a
        creation whose inverse did not resolve still counts (undo names it for ``--replan``)."""
        meant = " OR a.class != 'irreversible'" if replan else \
            " OR (a.class != 'irreversible' AND (a.note IS NULL OR substr(a.note, 1, ?) != ?))"
        # a call whose own answer names nothing it created (rows.acts_on_nothing) is never sent
        # an inverse: nothing to undo, with or without --replan (adversarial review 16, F4)
        params = (len(CREATED_NOTHING), CREATED_NOTHING) + (() if replan else (len(NOTHING_TO_RESTORE), NOTHING_TO_RESTORE))
        with self._guard("count undoable actions"):
            rows = self._all(
                "SELECT r.session_id, count(*) FROM actions a JOIN runs r ON r.id = a.run_id "
                "WHERE a.class != 'readonly' AND ((a.status IN ('applied', 'rolling_back') "
                "AND (a.note IS NULL OR substr(a.note, 1, ?) != ?) "
                f"AND (a.inverse_ref IS NOT NULL{meant})) "
                "OR a.status IN ('unknown', 'pending', 'unrecoverable')) GROUP BY r.session_id, r.id", params)
        counts: dict[str, tuple[int, int]] = {}
        for sid, n in rows:
            if sid:
                acts, runs = counts.get(sid, (0, 0))
                counts[sid] = (acts + n, runs + 1)
        return counts

    # -- pruning ---------------------------------------------------------------------------
    def prunable(self, run: RunRow) -> str | None:
        """Why ``run`` must be kept (None when it may be pruned)."""
        if run.live:
            return "it is still active"
        if run.counts.get("gated"):
            with self._guard("list held calls"):
                held = [r[0][:8] for r in self._all("SELECT id FROM actions WHERE run_id = ? AND status = 'gated' "
                                                    "ORDER BY seq", (run.id,))]
            them = "it" if len(held) == 1 else "each"
            return (f"it holds a call waiting for approval ({', '.join(held)}); approve or deny {them} first "
                    f"(synartesis deny {held[0]})")
        if run.counts.get("unrecoverable") or run.counts.get("rolling_back"):
            return "its undo halted; a person must look at it first"
        with self._guard("read undos"):
            last = self._one("SELECT status, kind FROM undos WHERE run_id = ? ORDER BY started_at DESC, "
                             f"{self.db.row_order} DESC LIMIT 1",
                             (run.id,))
        if last is not None and last[0] == "halted":
            # a halt that marks no action (another run's later write, a server still running)
            # keeps the run too (adversarial review 19, F8: prune deleted it)
            what = "redo" if last[1] == "redo" else "undo"
            # `history` shows the halted attempt with its reason (`show` lists the actions only), and
            # ids are 8 characters as everywhere else (a new user's round 22, #4: "d5bdd9b1-1")
            return (f"its last {what} halted; a person must look at it first (`synartesis history {run.id[:8]}` "
                    f"says why; `synartesis {what} {run.id[:8]}` again once that is dealt with frees it)")
        return None

    def prune(self, run_ids: list[str]) -> int:
        """Delete whole runs (actions, attempts, events), sessions left empty and unreferenced
        payloads; then compact. Returns the number of runs deleted. Callers check
        :meth:`prunable` first."""
        with self._guard("prune"):
            with self._tx():
                for rid in run_ids:
                    self._q("DELETE FROM events WHERE run_id = ?", (rid,))
                    self._q("DELETE FROM actions WHERE run_id = ?", (rid,))
                    if self._has_reads:
                        self._q("DELETE FROM reads WHERE run_id = ?", (rid,))
                    self._q("DELETE FROM undos WHERE run_id = ?", (rid,))
                    self._q("DELETE FROM runs WHERE id = ?", (rid,))
                self._q("DELETE FROM sessions WHERE id NOT IN (SELECT session_id FROM runs WHERE session_id IS NOT NULL)")
                if self._may_collect():  # a team member's prune leaves shared payloads to an admin
                    self._collect_garbage()
            self.db.compact()
        return len(run_ids)
