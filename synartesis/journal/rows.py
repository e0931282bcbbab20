"""The journal's row types and status vocabularies (no SQL here).

Rows are immutable snapshots of what was read; every change goes through a :class:`Journal`
method. Column order of ``actions`` lives here once (:data:`ACTION_COLS`), shared by every
module that selects or inserts actions.
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any

__all__ = ["RUN_STATUSES", "ACTION_STATUSES", "ATTEMPT_STATUSES", "ATTEMPT_KINDS", "APPROVAL_TTL_S",
           "IN_EFFECT", "NOTHING_IN_EFFECT", "RunRow", "ActionRow", "UndoRow", "SessionRow", "AuditResult", "ACTION_COLS", "ALL_ACTIONS", "READ_COLS", "READ_STATUSES",
           "ACTS_ON_NOTHING", "ACTS_ON_NOTHING_SHOWN", "CREATED_NOTHING", "acts_on_nothing", "action_from_row", "action_values", "action_state", "action_state_text", "new_id", "new_ids", "now_iso", "session_status", "status_text",
           "event_text", "packed_event"]

RUN_STATUSES = ("active", "complete", "rolled_back", "partial", "compensated", "redone")
ACTION_STATUSES = ("pending", "unknown", "gated", "approved", "denied", "applied", "failed",
                   "rolling_back", "rolled_back", "unrecoverable")
ATTEMPT_KINDS = ("undo", "redo", "saga")
ATTEMPT_STATUSES = ("running", "rolled_back", "partial", "halted", "abandoned", "compensated",
                    "redone", "nothing")
# An action in one of these states may have changed the world and has not been put back.
IN_EFFECT = ("applied", "rolling_back", "unrecoverable", "unknown", "pending")
# Run statuses that claim nothing the run changed is still in effect.
NOTHING_IN_EFFECT = ("rolled_back", "compensated")
APPROVAL_TTL_S = 3600


_ID_POOL = bytearray()
_ID_LOCK = threading.Lock()


def new_id() -> str:
    """A random (version 4) UUID as text, like ``str(uuid.uuid4())``, from a pool of
    ``os.urandom`` bytes: one getrandom call per 256 ids, and no ``uuid`` import."""
    with _ID_LOCK:
        if len(_ID_POOL) < 16:
            _ID_POOL.extend(os.urandom(4096))
        b = _ID_POOL[-16:]
        del _ID_POOL[-16:]
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_ids(n: int) -> list[str]:
    """``n`` ids as :func:`new_id` makes them, from one ``os.urandom`` call (a batch of reads).
    Without a loop in Python: the version and variant bits set on all of them at once (as one
    integer), the hex text cut into groups of four by ``bytes.hex`` and put together by one
    ``%`` format (a loop of slices cost about 90 bytecodes an id)."""
    if n <= 0:
        return []
    size = 16 * n
    bits = int.from_bytes(os.urandom(size), "big") & int.from_bytes(_V4_KEEP * n, "big") | int.from_bytes(_V4_SET * n, "big")
    groups = bits.to_bytes(size, "big").hex("-", 2).split("-")  # 8 groups of 4 hex digits an id
    return (_UUID_TEXT * n % tuple(groups)).split(",")[:-1]


# an id's 16 bytes: byte 6's high nibble is the version (4), byte 8's two high bits the variant (10)
_V4_KEEP = bytes.fromhex("ffffffffffff0fff3fffffffffffffff")
_V4_SET = bytes.fromhex("00000000000040008000000000000000")
_UUID_TEXT = "%s%s-%s-%s-%s-%s%s%s,"  # each id ends with a comma: one split cuts them apart


def now_iso(offset_s: float = 0.0) -> str:
    """UTC now (plus ``offset_s`` seconds) as ISO-8601 with milliseconds, e.g.
    ``2026-12-01T07:55:00.123Z`` (sorts as text in time order). The milliseconds are
    truncated, as ``isoformat(timespec="milliseconds")`` does; the text up to the seconds is
    kept for the second it names (an undo step asks four times: a quarter of what building
    its datetime cost)."""
    ms = time.time_ns() // 1_000_000 + round(offset_s * 1000)
    sec, frac = divmod(ms, 1000)
    global _NOW_SEC
    cached = _NOW_SEC  # one read: another thread may replace it meanwhile
    if cached[0] != sec:
        cached = _NOW_SEC = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{cached[1]}.{frac:03d}Z"


_NOW_SEC: tuple[int, str] = (-1, "")  # now_iso's last second since the epoch and its ISO text


# how an action's note begins when its inverse needs the state before the call and none existed
# (an approved creation): nothing can ever put it back, so it stays in place (undo's pick skips
# a session of nothing else; Journal.undoable_counts)
NOTHING_TO_RESTORE = "no prior state existed, so there is nothing to restore"


# how an undo step reads when the call created nothing (below)
ACTS_ON_NOTHING = "nothing to undo: its answer names nothing it changed (the inverse would act on an empty list)"
# how `show` and the console name such an inverse in place of the call
ACTS_ON_NOTHING_SHOWN = "nothing to undo (its answer names nothing it changed)"
# the note the proxy begins an action's row with when its answer names nothing it created
CREATED_NOTHING = "its answer names nothing it created"


def acts_on_nothing(action: Any) -> bool:
    """Did a recorded call change nothing, by its own answer? The proxy says so in the row's
    note (:data:`CREATED_NOTHING`) when every argument of the inverse is an empty list projected
    from the call's result (``$result.entities[].name``): the memory server's
    ``create_entities`` of entities that all existed answers ``{"entities": []}``, and its
    inverse would be ``delete_entities {"entityNames": []}`` (new user round 15, #7). Such an
    inverse is not sent, the undo step counts as already reverted, and bare ``undo`` does not
    pick a session for it. Told at record time, from the policy's template: an empty list that
    is a whole value (``$result.previous``, ``$snapshot.tags``, a literal ``[]``) is a state to
    put back, not nothing (adversarial review 16, F3)."""
    return (getattr(action, "note", None) or "").startswith(CREATED_NOTHING)


def status_text(status: str, unverified: int = 0) -> str:
    """A run's or session's status as shown: ``compensated (unverified: N)`` carries its count
    (issue 10 item 4: "requested" is not "undone"), as does a redo's ``redone (unverified: N)``
    when calls were sent again but could not be read back."""
    if status == "compensated" or (status == "redone" and unverified):
        return f"{status} (unverified: {unverified})"
    return status


@dataclass(frozen=True)
class SessionRow:
    """An agent session: the runs of one client process (or of one ``SYNARTESIS_SESSION``).

    ``kind``: ``client`` (grouped by the client's pid and start time), ``explicit`` (the
    environment named it) or ``run`` (a run from before sessions were recorded: its own session).
    """

    id: str
    kind: str
    name: str | None
    client: str | None
    client_pid: int | None
    client_started: str | None
    host: str | None
    started_at: str
    last_at: str | None = None  # the newest run start or action in it (sessions sort by it)


@dataclass(frozen=True)
class RunRow:
    """A run: one proxy's connection (one MCP session through one proxy).

    ``stale``: the run is stored ``active`` but its proxy is gone (pid dead, or reused by a
    process with another start time); every CLI treats it as ended and closes it on its next
    write to the journal. ``unverified``: after an undo that ended ``compensated``, how many
    compensations were sent without a read to confirm them.
    """

    id: str
    label: str | None
    client: str | None
    started_at: str
    ended_at: str | None
    status: str
    pid: int | None
    servers: dict
    actions: int = 0
    counts: dict = field(default_factory=dict)
    session_id: str | None = None
    proxy_started: str | None = None
    host: str | None = None
    unverified: int = 0
    end_note: str | None = None
    stale: bool = False
    open_writes: int = 0  # non-readonly actions still in effect (not undone, not failed)

    @property
    def live(self) -> bool:
        """Its proxy is still running: an agent may still be writing through it."""
        return self.status == "active" and not self.stale

    @property
    def shown_status(self) -> str:
        """The status as every view shows it: a stale run reads as ended, and an ended run
        some of whose actions an undo reverted (or was reverting) when it was cut off reads
        ``partial``: the run is no longer as the agent left it (adversarial review 16, F12:
        ``list`` said ``complete`` after a killed undo had reverted 11 of 30 writes)."""
        status = "complete" if self.status == "active" and self.stale else self.status
        if status == "complete" and (self.counts.get("rolled_back") or self.counts.get("rolling_back")):
            return "partial"
        return status_text(status, self.unverified)

    @property
    def unknown(self) -> int:
        """Actions whose outcome is unknown; a ``pending`` one counts once the run has ended
        (nothing is still waiting for its answer)."""
        n = self.counts.get("unknown", 0)
        if not self.live:
            n += self.counts.get("pending", 0)
        return n


@dataclass(frozen=True)
class ActionRow:
    """One ``tools/call`` (or a held call) in a run. Payload refs are read with
    :meth:`Journal.get_json`.

    ``gseq`` is the journal-wide order (across runs and servers); ``seq`` the order inside the
    run. ``reverted`` says how a ``rolled_back`` action got there: ``verified`` (a re-read showed
    the captured state), ``unverified`` (a compensation sent with nothing to read) or ``found``
    (it was already back).
    """

    id: str
    run_id: str
    seq: int
    server: str
    tool: str
    cls: str
    rule: str | None
    call_key: str
    args_ref: str
    prior: str | None
    snapshot_ref: str | None
    result_ref: str | None
    inverse_ref: str | None
    verify_ref: str | None
    post_ref: str | None
    status: str
    note: str | None
    decided_by: str | None
    decided_at: str | None
    decision_note: str | None
    used_by: str | None
    idempotency_key: str
    created_at: str
    updated_at: str
    gseq: int | None = None
    reverted: str | None = None

    @property
    def label(self) -> str:
        """Status for display: a spent approval shows as ``used`` (reference defect 36)."""
        return "used" if self.status == "approved" and self.used_by else self.status

    @property
    def qualified(self) -> str:
        return f"{self.server}.{self.tool}"


ACTION_COLS = ("id, run_id, seq, server, tool, class, rule, call_key, args_ref, prior, snapshot_ref, "
               "result_ref, inverse_ref, verify_ref, post_ref, status, note, decided_by, decided_at, "
               "decision_note, used_by, idempotency_key, created_at, updated_at, gseq, reverted")
ACTION_COUNT = ACTION_COLS.count(",") + 1
# Every action, wherever it is stored (schema 6: plain reads in ``reads``, the rest in
# ``actions``): what readers select from. Changes go to ``actions`` (a read never changes).
ALL_ACTIONS = "all_actions"
# A plain read's row in ``reads`` (schema 6), in insert order.
READ_COLS = "gseq, run_id, seq, id, server, tool, rule, call_key, args_ref, result_ref, status, note, at"
READ_STATUSES = ("applied", "failed", "unknown")  # what a plain read can end as (the table's CHECK)


_ACTION_FIELDS = tuple(ActionRow.__dataclass_fields__)
_new_object = object.__new__


def action_from_row(row: tuple) -> ActionRow:
    """An ActionRow from a row selected with :data:`ACTION_COLS`: the same object
    ``ActionRow(*row)`` makes, its fields set at once (a frozen dataclass's ``__init__`` sets
    each of its 26 through ``object.__setattr__``: 3.5 µs a row against 1.2, on the record
    transaction's path and for every row an undo or audit reads)."""
    if len(row) != len(_ACTION_FIELDS):
        return ActionRow(*row)  # what the constructor says about a row of another shape
    a = _new_object(ActionRow)
    a.__dict__.update(zip(_ACTION_FIELDS, row))
    return a


def action_values(a: ActionRow) -> tuple:
    """An ActionRow as the tuple of its columns (the order of :data:`ACTION_COLS`)."""
    return (a.id, a.run_id, a.seq, a.server, a.tool, a.cls, a.rule, a.call_key, a.args_ref, a.prior,
            a.snapshot_ref, a.result_ref, a.inverse_ref, a.verify_ref, a.post_ref, a.status, a.note,
            a.decided_by, a.decided_at, a.decision_note, a.used_by, a.idempotency_key, a.created_at,
            a.updated_at, a.gseq, a.reverted)


def action_state(a: ActionRow) -> dict:
    """The part of an action row the event chain vouches for (compared by ``audit``).

    ``gseq`` and ``reverted`` arrived with schema 2, ``note`` later (a new user's round 30: an
    edited note, which ``show`` prints and a halt's expected/actual lines live in, passed the
    audit): events written before them lack them, and the audit compares only the keys an
    event recorded.
    """
    return {"seq": a.seq, "server": a.server, "tool": a.tool, "class": a.cls, "key": a.call_key,
            "args": a.args_ref, "status": a.status, "prior": a.prior, "snapshot": a.snapshot_ref,
            "result": a.result_ref, "inverse": a.inverse_ref, "verify": a.verify_ref, "post": a.post_ref,
            "by": a.decided_by, "used_by": a.used_by, "decision": a.decision_note, "gseq": a.gseq,
            "reverted": a.reverted, "note": a.note}


# action_state's keys in canonical (sorted) order, and the row field each comes from
_STATE_FIELDS = (("args", "args_ref"), ("by", "decided_by"), ("class", "cls"), ("decision", "decision_note"),
                 ("gseq", "gseq"), ("inverse", "inverse_ref"), ("key", "call_key"), ("note", "note"), ("post", "post_ref"),
                 ("prior", "prior"), ("result", "result_ref"), ("reverted", "reverted"), ("seq", "seq"),
                 ("server", "server"), ("snapshot", "snapshot_ref"), ("status", "status"), ("tool", "tool"),
                 ("used_by", "used_by"), ("verify", "verify_ref"))


def action_state_text(a: ActionRow, step: str | None = None) -> str | None:
    """``canonical(action_state(a))`` built directly (the general encoder sorts and walks a
    fresh dict for every status change: 1.3–1.7× this on a 3 KB state), with ``"step":``
    ``step`` (a canonical text) among the keys when given. None when a value is not a str, an
    int or None (then the caller takes the general path)."""
    parts = []
    for key, name in _STATE_FIELDS:
        if step is not None and key == "tool":
            parts.append(f'"step":{step}')
        v = getattr(a, name)
        if v is None:
            parts.append(f'"{key}":null')
        elif type(v) is str:
            parts.append(f'"{key}":{encode_basestring(v)}')
        elif type(v) is int:
            parts.append(f'"{key}":{v}')
        else:
            return None
    return "{" + ",".join(parts) + "}"


_UNDONE = ("rolled_back", "compensated")


def session_status(runs: list[RunRow]) -> tuple[str, int]:
    """(status, unverified compensations) of a session made of ``runs``, as every view shows it:
    ``active`` while any of its proxies runs; ``complete`` when no undo touched it;
    ``rolled_back`` / ``compensated`` (with N unverified) when every run with writes was
    undone; ``redone`` after a redo; ``partial`` for anything between (some runs undone and
    others not, or an undo that halted). One run's list gives that run's status as shown."""
    if any(r.live for r in runs):
        return "active", 0
    touched = [r for r in runs if r.status in (*_UNDONE, "partial", "redone")]
    if any(r.shown_status == "partial" for r in runs):  # an undo cut off part-way (RunRow.shown_status)
        return "partial", 0
    if not touched:
        return "complete", 0
    untouched_writes = any(r.status == "complete" and r.open_writes for r in runs)
    kinds = {r.status for r in touched}
    if "partial" in kinds or (untouched_writes and kinds & set(_UNDONE)) or ("redone" in kinds and kinds & set(_UNDONE)):
        return "partial", 0
    if kinds == {"redone"}:
        return "redone", 0
    unverified = sum(r.unverified for r in touched if r.status == "compensated")
    return ("compensated", unverified) if unverified else ("rolled_back", 0)


@dataclass(frozen=True)
class UndoRow:
    """One run's part of an undo, redo or saga attempt.

    An attempt over a session writes one row per run it covers, sharing ``attempt``; each
    row's steps are chained in its run's event log. ``scope`` is what was asked
    (``{"session": id}``, ``{"run": id}``, ``{"run": id, "only": seq}``, ``{"to": n}``).
    """

    id: str
    run_id: str
    by: str
    pid: int | None
    started_at: str
    ended_at: str | None
    status: str
    report_ref: str | None
    kind: str = "undo"
    attempt: str | None = None
    scope: dict | None = None


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :meth:`Journal.audit` for one run: ``ok`` and, if not, where it breaks."""

    run_id: str
    ok: bool
    events: int
    problems: list[str]


# An event's data on SQLite (schema 4): its canonical JSON as text, or, when that is smaller,
# zlib of it with this preset dictionary as a BLOB: common MCP tool and argument names, then an
# ``action.record`` and an ``action.applied`` state of a reversible write with every value left
# empty (the chained state's keys in canonical order, the refs' shapes), which is most of an
# event's text. A 1.3 KB ``action.applied`` state takes about 270 bytes: events were a third of
# an edit series' journal. The zlib header names the
# dictionary (its Adler-32), so a dictionary added later cannot be mistaken for this one; never
# change this text, add another. The chain hashes the text, so it is unaffected.
_EVENT_DICT = (
    'read_text_file write_file edit_file create_directory move_file list_directory search_files read_'
    'file create_entities add_observations git_commit git_add query execute "edits\\":[{\\"oldText\\":\\"'
    '\\",\\"newText\\":\\" "old_str\\":\\"\\",\\"new_str\\":\\"\\"} "ENOENT" "text/plain" "uri\\":\\"file://" "mim'
    'eType\\":\\"{"args":"={\\"path\\":\\"\\",\\"content\\":{\\"$synartesis.blob\\":\\"\\"}}","by":null,"class":"'
    'reversible","decision":null,"gseq":1,"inverse":null,"key":"","post":null,"prior":"captured","res'
    'ult":null,"reverted":null,"seq":1,"server":"","snapshot":"={\\"content\\":{\\"$synartesis.blob\\":\\"'
    '\\"}}","status":"pending","tool":"","used_by":null,"verify":"={\\"server\\":\\"\\",\\"tool\\":\\"\\",\\"ar'
    'gs\\":{\\"path\\":\\"\\"},\\"absent_when\\":[\\"ENOENT\\"]}"}{"args":"={\\"path\\":\\"\\",\\"content\\":{\\"$syn'
    'artesis.blob\\":\\"\\"}}","by":null,"class":"reversible","decision":null,"gseq":1,"inverse":"=[{\\"s'
    'erver\\":\\"\\",\\"tool\\":\\"\\",\\"args\\":{\\"path\\":\\"\\",\\"content\\":{\\"$synartesis.blob\\":\\"\\"}}}]","'
    'key":"","post":"={\\"present\\":true,\\"value\\":{\\"content\\":{\\"$synartesis.blob\\":\\"\\"}}}","prior"'
    ':"captured","result":"={\\"content\\":[{\\"type\\":\\"text\\",\\"text\\":\\"\\"}],\\"structuredContent\\":{\\'
    '"content\\":\\"\\"},\\"isError\\":false}","reverted":null,"seq":1,"server":"","snapshot":"={\\"content'
    '\\":{\\"$synartesis.blob\\":\\"\\"}}","status":"applied","tool":"","used_by":null,"verify":"={\\"serve'
    'r\\":\\"\\",\\"tool\\":\\"\\",\\"args\\":{\\"path\\":\\"\\"},\\"absent_when\\":[\\"ENOENT\\"]}"}'
).encode()
_EVENT_PACK_MIN = 160  # shorter texts are stored as they are (zlib's header would eat the gain)


_PACKERS: dict[tuple[int, int], Any] = {}


def _packer(level: int, mem_level: int) -> Any:
    """A compressor at ``level`` and ``mem_level`` primed with the dictionary, never fed: each
    event compresses with a copy of it (the same bytes as a fresh one; priming a fresh one cost
    about 9 µs of an event's 20–28). A 4 KiB window (the dictionary and a state fit in it); the
    stream reads back the same whatever the levels."""
    z = _PACKERS.get((level, mem_level))
    if z is None:
        z = _PACKERS[(level, mem_level)] = zlib.compressobj(level, zlib.DEFLATED, 12, mem_level, zdict=_EVENT_DICT)
    return z


def packed_event(text: str, level: int = 9, mem_level: int = 4) -> "str | bytes":
    """What a SQLite journal stores for an event whose data is ``text`` (valid UTF-8);
    ``level``: zlib's (1 fastest … 9 smallest; any level reads back alike); ``mem_level``:
    zlib's hash table size (1 … 9; any reads back alike). A small hash table by default: zlib's
    default state is about 270 KB, and each event copies the primed state, so memLevel 8 cost
    about twice memLevel 4 for a batch of reads too (3 against 1.5–1.8 µs a read in batches of
    30–250; 55k against 21k instructions a read under callgrind) for 1 % more bytes."""
    if len(text) < _EVENT_PACK_MIN:
        return text
    z = _packer(level, mem_level).copy()
    packed = z.compress(text.encode("utf-8")) + z.flush()
    return packed if len(packed) < len(text) else text


def event_text(data: "str | bytes") -> str:
    """An events row's data as the text it was written as (see :func:`packed_event`).

    Raises:
        zlib.error: a BLOB that is not a packed event (the row was altered).
    """
    if isinstance(data, str):
        return data
    z = zlib.decompressobj(zdict=_EVENT_DICT)
    return (z.decompress(bytes(data)) + z.flush()).decode("utf-8")
