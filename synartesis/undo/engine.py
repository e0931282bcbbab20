"""The undo engine (reference-spec §5, DESIGN §6, with reference-spec §10's defects fixed).

Walks a run's or a session's actions newest first (a session's across all of its servers, in
journal-wide order) and, per action:
- skips readonly and never-applied actions (readonly whatever its status: defect 6);
- halts on ``unknown``/``pending`` (outcome unknown), on drift, on a failed re-read, and on an
  inverse whose outcome is unknown; a halt writes nothing more and leaves older actions alone;
- counts "already in the state the inverse would produce" as reverted;
- steps over a permanent action (no usable inverse): reported, left in place, run ``partial``;
- sends the stored inverse (a list runs in order as one step) with an idempotency key, then
  re-reads where a read exists: ``restored (verified)`` or ``sent (unverified)`` — never a
  claim that was not checked. A run whose undo sent any compensation it could not check ends
  ``compensated (unverified: N)``, not ``rolled_back``; a run in which nothing was reverted
  keeps its status, and an undo that reverted nothing says so (issue 10 items 2, 4).

Halts found from statuses alone are not written to the journal, so a repeated undo halts at
the same place with the same words. A halt on what a read showed (drift, an inverse that did not
restore, a read that failed) marks its action ``unrecoverable`` (``show`` says ``halted``, prune
keeps the run) but does not stick: the next undo reads the resource again and goes on if the
world is now as the run left it (a new user's round 31, #1: after the halt said "undo the other
run first" and they did, the same undo halted "here on an earlier attempt" without reading).
Every real attempt is recorded (who, when, each step) and chained in the event log of each run
it touched.

The walk needs servers only through a :class:`~synartesis.undo.servers.ServerPool`: the CLI's
starts them from the runs' launch lines; saga mode passes the proxy's own connection
(:func:`undo_target` with ``servers``).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from synartesis.canonical import canonical, same_state
from synartesis.errors import ConflictError, JournalError, LiveRunError, UsageError
from synartesis.journal import IN_EFFECT, ActionRow, Journal, RunRow, session_status, status_text
from synartesis.journal.rows import ACTS_ON_NOTHING, NOTHING_TO_RESTORE, acts_on_nothing
from synartesis.journal.blobs import DamagedPayload
from synartesis.journal.attempts import Attempt
from synartesis.policy.model import Policy
from synartesis.policy.refs import RefError, references, resolve_template
from synartesis.proxy.payload import error_text, is_error, payload
from synartesis.proxy.pipeline import resolve_call
from synartesis.proxy.spawn import MARK_VAR
from synartesis.undo.overlap import action_touches, shares, spelled_once, undo_touches
from synartesis.undo.servers import ReadOutcome, RequestFailed, ServerPool, SpawnedServers, Stop
from synartesis.undo.targets import Target, pick_session, resolve_target

__all__ = ["UndoOptions", "UndoReport", "Step", "undo_run", "undo_target", "IDEMPOTENCY_KEY", "NEVER_APPLIED",
           "prior_state", "resource_key", "OtherRuns", "replan_action", "saga_text", "take_steps", "finish", "later_writes"]

IDEMPOTENCY_KEY = "dev.synartesis/idempotency-key"
_STOPPED = "stopped here (cancelled): this action and the older ones were left as they are"
NEVER_APPLIED = {"failed": "never applied (failed)", "denied": "never applied (denied)",
                 "gated": "never applied (awaiting approval)", "approved": "never applied (approved, never retried)"}


@dataclass
class UndoOptions:
    """What to undo and how.

    Attributes:
        run: a run or session id (or prefix, or a ``SYNARTESIS_SESSION`` name); None = the
            newest session that has something to undo.
        to: lowest seq to undo (``--to``, a run only); None = all.
        only: undo this one seq of the run (``--only``); refused when a later action of the
            session touched the same resource, unless ``force``.
        dry_run: plan only: reads current state, sends nothing, writes nothing.
        replan: rebuild inverses and reads from ``policy`` using the captured state.
        force: allow a live run; with ``yes`` overwrite drifted resources, without it list
            every resource it would overwrite (with both values) and stop.
        by: who is undoing (recorded).
        own_run: the caller is the live run's own proxy (saga mode): its liveness is no reason
            to refuse, and the run's status is left ``active`` (it goes on); the steps are
            the same.
        skip_irreversible: leave irreversible calls in place even when the policy gives them
            an inverse (saga mode never rolls them back).
    """

    run: str | None = None
    to: int | None = None
    only: int | None = None
    dry_run: bool = False
    replan: bool = False
    force: bool = False
    yes: bool = False
    by: str = "unknown"
    own_run: bool = False
    skip_irreversible: bool = False
    policy: Policy | None = None
    read_timeout: float = 30.0
    call_timeout: float = 60.0
    max_snapshot_bytes: int = 64 * 1024 * 1024
    entry_env: Any = None  # reads a client entry's env (see launch.launch_specs)
    stop: Stop | None = None  # set from another thread: kill the servers, take no further step


@dataclass
class Step:
    """One action's outcome in an undo or redo.

    ``kind``: ``revert``, ``already-reverted``, ``skip``, ``permanent``, ``kept``, ``halt``,
    ``overwrite`` (``--force`` preview); for a redo ``redo`` and ``left``. ``outcome`` for a
    revert: ``restored (verified)``, ``sent (unverified)`` or ``would call`` (dry run).
    ``after``: what a read showed once the inverse was sent (kept for redo's drift check).
    ``check`` (a preview's ``revert``/``redo`` with a read; None otherwise): how the dry run
    checked for drift: ``now`` (read as it is now), ``simulated`` (against the state a planned
    step with the very same read leaves) or ``deferred`` (checked only during the real undo or
    redo: a planned step changes the resource first in a way the journal cannot predict).
    ``cause`` (a halt): ``launch`` when the server was not started (:mod:`synartesis.undo.launch`
    refused: the way on is the one the detail names, not the drift menu).
    """

    seq: int
    action: str
    tool: str
    kind: str
    reason: str
    detail: str | None = None
    calls: list | None = None
    outcome: str | None = None
    verified: bool | None = None
    replanned: bool = False
    expected: Any = None
    actual: Any = None
    run: str | None = None
    gseq: int | None = None
    after: Any = None
    check: str | None = None
    cause: str | None = None


@dataclass
class UndoReport:
    """What an undo (or redo, or saga rollback) did, per step, and how it ended.

    ``run``: the target's id (a run or a session). ``status``: ``rolled_back``,
    ``compensated`` (with ``unverified``), ``partial``, ``redone`` or ``nothing`` (nothing to
    do: ``message`` says why). ``runs``: each touched run's status afterwards. ``sent``: how
    many calls went to a server (so no report says "nothing was changed" after it sent any).
    """

    run: str
    dry_run: bool
    status: str
    steps: list[Step] = field(default_factory=list)
    halted: Step | None = None
    warnings: list[str] = field(default_factory=list)
    preview_force: bool = False
    undo_id: str | None = None
    kind: str = "undo"
    target: str = "run"
    target_name: str = ""
    runs: dict[str, str] = field(default_factory=dict)
    unverified: int = 0
    sent: int = 0
    picked: str | None = None
    skipped: list[str] = field(default_factory=list)
    message: str | None = None
    stays: str | None = None  # a halt that changes nothing: the status the halted run keeps (as shown)
    # the target's calls still held for a person ({action, seq, run, tool}): undo leaves them,
    # and one approved afterwards would let the agent's retry through
    waiting: list[dict] = field(default_factory=list)
    # runs whose proxy is still running (a forced undo of a live run): left active, so what the
    # agent sends next is journalled in a run that is still open; ``runs`` says what was undone
    open_runs: list[str] = field(default_factory=list)
    # steps (``seq`` or ``run:seq``) in ``unverified`` that an earlier undo (an ``--only``) sent
    # unverified, not this one (new user round 10, #5: the count did not say so)
    earlier_unverified: list[str] = field(default_factory=list)
    # a redo: how many calls the undo left in place whose effect its --force overwrite removed
    # and this redo did not bring back (their runs end partial, and the redo exits 1)
    removed_left: int = 0
    # a redo: the steps (``seq`` or ``run:seq``, with their tool) an earlier undo reverted that
    # stay undone after it (redo takes one undo at a time): named, with the command that redoes
    # them (new user round 15, #5)
    still_undone: list[str] = field(default_factory=list)
    earlier_runs_undone: bool = False  # a redo: another run of the target stays undone (still_undone names it)

    @property
    def changed(self) -> int:
        """How many actions this attempt put back (inverses sent, or found already reverted)."""
        if self.dry_run:
            return 0
        return sum(1 for s in self.steps if (s.kind in ("revert", "redo") and s.outcome != "would call")
                   or (s.kind == "already-reverted" and s.reason != "already rolled back"))

    @property
    def left_in_place(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "permanent"]

    @property
    def overwrites(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "overwrite"]

    @property
    def deferred_checks(self) -> list[Step]:
        """A preview's steps whose drift is checked only during the real undo or redo (so the
        status it shows holds only if none of them has drifted)."""
        return [s for s in self.steps if s.check == "deferred"]

    @property
    def shown_status(self) -> str:
        return status_text(self.status, self.unverified)

    @property
    def ok(self) -> bool:
        """Did it do every step it was asked to (the CLI's exit 0)? Not when it halted, found
        nothing to do, left an action in place, or (a ``--force`` preview) found something to
        overwrite. A run may still read ``partial`` afterwards (``--only``, ``--to``, or a
        redo of part of what is undone): what was asked was done (finding 3)."""
        return (self.status != "nothing" and not self.halted and not self.overwrites and not self.removed_left
                and not (self.kind != "redo" and self.left_in_place))

    @property
    def asked_for_part(self) -> bool:
        """Did it do all it was asked while the run stays ``partial`` (``--only``/``--to``)?"""
        return self.ok and self.status == "partial"

    def as_json(self) -> dict:
        return {"run": self.run, "kind": self.kind, "target": self.target, "targetName": self.target_name,
                "dryRun": self.dry_run, "status": self.status, "statusText": self.shown_status,
                "unverified": self.unverified, "deferredChecks": len(self.deferred_checks), "sent": self.sent, "runs": self.runs,
                "halted": _plain(self.halted) if self.halted else None,
                "steps": [_plain(s) for s in self.steps], "warnings": self.warnings,
                "forcePreview": self.preview_force, "undo": self.undo_id, "picked": self.picked,
                "skipped": self.skipped, "message": self.message, "stays": self.stays, "waiting": self.waiting,
                "openRuns": self.open_runs, "earlierUnverified": self.earlier_unverified,
                "stillUndone": self.still_undone}


_STEP_FIELDS = tuple(f.name for f in fields(Step))


def _plain(step: Step) -> dict:
    """A step as a dict, sharing its values (``asdict`` deep-copies every call's arguments,
    which for an undo of 200 writes cost more than the report is worth: it is serialised at
    once and never changed)."""
    return {name: getattr(step, name) for name in _STEP_FIELDS}


class _Loads:
    """The journal's stored JSON by ref, each loaded once per walk (the plan and the steps
    read the same inverses and reads). Values are shared: the engine never changes them."""

    def __init__(self, j: Journal) -> None:
        self.j = j
        self.memo: dict[str, Any] = {}

    def __call__(self, ref: str | None) -> Any:
        if ref is None:
            return None
        try:
            return self.memo[ref]
        except KeyError:
            value = self.memo[ref] = self.j.get_json(ref)
            return value


_READ_FAILED = "could not read current state to check for drift"


def later_than(b: ActionRow, a: ActionRow) -> bool:
    """Is ``b`` after ``a`` in the journal-wide order (``gseq``)? An order the journal cannot
    tell (a ``gseq`` edited by hand to NULL or text, which ``audit`` reports) counts as later:
    a halt can be forced, a pruned run cannot come back (stop 28's left-outs: text raised
    TypeError, NULL let prune delete a run it keeps on an intact journal)."""
    if type(b.gseq) is int and type(a.gseq) is int:
        return b.gseq > a.gseq
    return True


def order_known(*acts: ActionRow) -> bool:
    """Do all of ``acts`` have a journal-wide order (an integer ``gseq``)?"""
    return all(type(a.gseq) is int for a in acts)


def _gseq_key(a: ActionRow) -> float:
    return a.gseq if type(a.gseq) is int else float("inf")


def _after(b: ActionRow, a: ActionRow) -> bool:
    """Was ``b`` recorded after ``a``? Without an integer order on both (a gseq edited by hand
    into text, bytes or NULL) it may have been, so yes, as prune counts it (adversarial review 30)."""
    return b.gseq > a.gseq if type(a.gseq) is int and type(b.gseq) is int else True


def _order(a: ActionRow) -> tuple[int, int]:
    """An action's place in the journal (journal-wide order, then its seq)."""
    return (a.gseq or 0, a.seq)


def _same(a: Any, b: Any, read: Any = None) -> bool:
    """Are ``a`` and ``b`` the same state (equal canonical texts; for an ``unordered`` read
    ``read``, equal in any order: :func:`~synartesis.canonical.same_state`)? Compared value by
    value first, which is what a step's two checks (drift, restored) nearly always find; only
    when that says no are the canonical texts compared (canonical says NaN is NaN)."""
    return _equal(a, b) or same_state(a, b, read)


def _equal(a: Any, b: Any) -> bool:
    """``a == b`` where that implies equal canonical texts: types compared too (``1``, ``1.0``
    and ``True`` are three texts), floats by their text (``0.0`` is not ``-0.0``)."""
    t = type(a)
    if t is not type(b):
        return False
    if t is dict:
        return len(a) == len(b) and all(k in b and _equal(v, b[k]) for k, v in a.items())
    if t is list:
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if t is float:
        return repr(a) == repr(b)
    return a == b


def prior_state(a: ActionRow, snapshot: Any) -> dict | None:
    """The state the inverse should produce, when the pre-read tells it."""
    if a.prior == "captured":
        return {"present": True, "value": snapshot}
    if a.prior == "absent":
        return {"present": False}
    return None


def launch_cause(pool: ServerPool, run_id: str, server: str, detail: str) -> tuple[str | None, str]:
    """(cause, detail) of a halt on ``server``'s read: cause ``launch`` when the server was
    not started (``detail`` is then the reason it was refused); a server started with a
    variable from this shell that the run's client entry gave it appends that doubt, since the
    read may be of other data (a new user's round 7: a deleted ``MEMORY_FILE_PATH``)."""
    note = pool.launch_note(run_id, server)
    if note is None:
        return None, detail
    if note[0] == "refused":
        return "launch", note[1]
    return None, f"{detail}\n{note[1]}"


def resource_key(run: RunRow | None, read: dict | None) -> str | None:
    """What a read reads, as one string: the server as its run launched it plus the canonical
    call (issue 10 item 6). Two runs that started a server the same way share resources, under
    whatever name each entry gave it (adversarial review 18, F1: ``kv`` and ``kv2``, one command
    line and working folder); the server's name stands in only when its run recorded no launch
    line."""
    if read is None:
        return None
    launch = (run.servers.get(read.get("server")) if run is not None else None) or {}
    line = {k: launch.get(k) for k in ("command", "args", "cwd")}
    return canonical([None if launch.get("command") else read.get("server"), line, read.get("tool"),
                      spelled_once(read.get("args"))])


def replan_action(j: Journal, a: ActionRow, policy: Policy, result: Any = ...) -> tuple[list | None, dict | None, str | None]:
    """(inverse, verify read, error) rebuilt from the current policy and captured state
    (``result``: a new result to resolve ``$result`` against, for a redo)."""
    args = j.get_json(a.args_ref)
    rule = policy.rule_for(a.server, a.tool, args)
    scope: dict[str, Any] = {"args": args}
    raw = j.get_json(a.result_ref) if result is ... else result
    if raw is not None:
        scope["result"] = payload(raw)
    if a.prior == "captured":
        scope["snapshot"] = j.get_json(a.snapshot_ref)
    # nothing existed before the call (an approved creation), and the rule's inverse puts back
    # the state before it: no inverse, as the proxy recorded it (its note says so) and as a plain
    # undo leaves it in place (a new user's round 31, #2: "$snapshot.content refers to $snapshot",
    # and the older steps were never undone)
    absent = a.prior == "absent" and any(ns == "snapshot" for c in rule.inverse for _, ns in references(c.args))
    try:
        inverse = None if absent else [resolve_call(c, scope) for c in rule.inverse] or None
        read = rule.snapshot or rule.verify
        verify = None
        if read is not None:
            verify = resolve_call(read, scope)
            verify.pop("refuse_when", None)
    except RefError as exc:
        return None, None, f"the current policy's rule {rule.match} does not resolve for this action: {exc}"
    return inverse, verify, None


def _target(j: Journal, opts: UndoOptions) -> Target | UndoReport:
    if opts.run:
        t = resolve_target(j, opts.run)
    else:
        t, skipped, live = pick_session(j, allow_live=opts.force, replan=opts.replan)
        if t is None:
            if live:
                raise ConflictError(f"the newest session with something to undo is still active: {live[0].name}; "
                                    "its agent may still be writing, so nothing older is undone in its place. Stop "
                                    f"the agent first, or undo it anyway: `synartesis undo {live[0].id[:10]} --force` shows "
                                    "what it would do, and `--force --yes` does it")
            return UndoReport(run="", dry_run=opts.dry_run, status="nothing", skipped=skipped,
                              message="nothing can be undone: no session has anything left to undo")
    if (opts.to is not None or opts.only is not None) and t.kind != "run":
        with_actions = [r for r in t.runs if r.actions]
        if len(with_actions) == 1:  # a session of one run: its seqs are the run's
            picked = t.picked and f"the one run with actions of {t.name}, {t.picked}"
            return Target("run", with_actions[0].id, with_actions, t.session, picked, t.skipped)
        flag = "--to" if opts.to is not None else "--only"
        raise UsageError(f"{flag} counts the seqs of one run; name the run (`synartesis show {t.id[:10]}` lists them)")
    return t


def undo_run(j: Journal, opts: UndoOptions) -> UndoReport:
    """Undo what ``opts.run`` names (default: the newest session with something to undo).

    Raises:
        UsageError: no such run or session, bad ``--to``/``--only``.
        ConflictError: a live run (without ``force``), another undo of it running, a failed
            audit (without ``force``), or ``--only`` on a resource a later action touched.
    """
    t = _target(j, opts)
    if isinstance(t, UndoReport):
        return t
    return undo_target(j, t, opts)


def later_writes(j: Journal, target: Target, a: ActionRow) -> list[ActionRow]:
    """Later actions of ``a``'s session, still in effect, that touched what ``a`` touched: the
    same read when both have one, else a shared identifier (:mod:`synartesis.undo.overlap`);
    oldest first. (``undo --only`` refuses on them; ``show --live`` calls ``a`` superseded.)"""
    run = next((r for r in target.runs if r.id == a.run_id), None)
    if run is None:
        return []
    runs = {r.id: r for r in (j.session_runs(run.session_id) if run.session_id else [run])}
    later = [b for b in j.actions_of(runs) if _after(b, a) and b.id != a.id
             and b.cls != "readonly" and b.status in IN_EFFECT]
    same = same_resource(j, run, a)
    return [b for b in later if same(runs.get(b.run_id), b)]


def same_resource(j: Journal, run: RunRow, a: ActionRow) -> Callable[[RunRow | None, ActionRow], bool]:
    """A test of whether another action (with its run) touched what ``a`` (of ``run``) touched:
    the same read (:func:`resource_key`), or an identifier of what undoing ``a`` changes found
    in the other action's arguments, read or inverse (:mod:`synartesis.undo.overlap`). The
    second holds for two reads of one resource by different tools too (adversarial review 20,
    F1: a ``move_file`` onto the path, keyed by ``get_file_info``, and a ``write_file`` keyed by
    ``read_text_file``, were two resources)."""
    read = j.get_json(a.verify_ref)
    key = resource_key(run, read)
    mine = undo_touches(run, read, j.get_json(a.inverse_ref))

    def test(b_run: RunRow | None, b: ActionRow) -> bool:
        b_read = j.get_json(b.verify_ref)
        if key is not None and resource_key(b_run, b_read) == key:
            return True
        return shares(mine, action_touches(b_run, b.server, j.get_json(b.args_ref), b_read, j.get_json(b.inverse_ref)))
    return test


def reverted_note(j: Journal, runs: dict[str, RunRow], a: ActionRow, since: str, others_only: bool = False,
                  expected: Any = None, read: dict | None = None) -> str:
    """A detail line naming writes to ``a``'s resource that an undo reverted after ``since`` (an
    ISO time: when ``a`` was last applied, for an undo; when it was undone, for a redo), each as
    ``run:seq tool of session S``; ``""`` when there are none (a new user's round 19, #6 and
    round 22, #5: a drift left by another session's undo named nothing but the two states).
    ``runs``: the walk's runs by id (others are looked up); ``others_only``: name none of them
    (a redo: what the undo it takes back reverted there, it redoes itself). ``expected``: the
    state the halted step expected (``read``: its read, for an unordered answer); given, the line
    says what each such undo put back as its captured state tells: exactly that state (so the
    change came after it) or an older one over it (a new user's round 31, #9b: "put back an older
    state over what is expected here" of an undo that put back exactly the expected value)."""
    run = runs.get(a.run_id)
    if run is None:
        return ""
    try:
        found = [b for b in j.reverted_since(since) if b.id != a.id and not (others_only and b.run_id in runs)]
        if not found:
            return ""
        same = same_resource(j, run, a)
        named: list[tuple[str, bool | None]] = []  # (name, put back exactly ``expected``: None when not known)
        for b in found:
            b_run = runs.get(b.run_id)
            if b_run is None:
                try:
                    b_run = j.find_run(b.run_id)
                except UsageError:
                    b_run = None
            if same(b_run, b):
                name = f"{b.run_id[:8]}:{b.seq} {b.qualified}" + (f" of session {b_run.session_id[:10]}"
                                                                   if b_run is not None and b_run.session_id else "")
                back = None
                if expected is not None and b.prior in ("captured", "absent"):
                    put = prior_state(b, j.get_json(b.snapshot_ref) if b.prior == "captured" else None)
                    back = put is not None and _same(put, expected, read)
                named.append((name, back))
    except (JournalError, DamagedPayload):
        return ""
    named = named[-5:]
    if not named:
        return ""
    exact = [n for n, back in named if back]
    over = [(n, back) for n, back in named if not back]
    if not over:
        one = len(exact) == 1
        return (f"\n  reverted since by an undo: {', '.join(exact)}; {'that undo' if one else 'those undos'} put back "
                f"exactly the state expected here, so what is there now was written after {'it' if one else 'them'}")
    known = any(back is False for _, back in over) or expected is None
    line = (f"\n  reverted since by an undo: {', '.join(n for n, _ in over)}; that undo "
            + ("put back an older state over what is expected here" if known else
               "may have put back an older state over what is expected here (what it put back was not captured)"))
    if exact:
        line += f" ({', '.join(exact)}, reverted too, put back exactly the state expected here)"
    return line


class OtherRuns:
    """Writes of runs a walk does not undo (another session's, or another run of the same
    session) after the walk's first action, still in effect, on any server,
    keyed by resource once per walk (adversarial review 18, F5: 400 steps against 4,000 such
    writes took 17 s when each step compared with all of them). Used by undo and redo.

    Args:
        j: the journal.
        runs: the walk's runs by id (every other run counts, its own session's included).
        load: stored JSON by ref (:class:`_Loads`).
    """

    def __init__(self, j: Journal, runs: dict[str, RunRow], load: "_Loads | None" = None,
                 among: list[ActionRow] | None = None) -> None:
        self.j, self.runs, self.load = j, runs, load or _Loads(j)
        self._among = among  # the writes to look among (prune: those of the runs going); default every later one
        self._by_key: dict[str | None, list[tuple[ActionRow, RunRow | None]]] | None = None
        self._by_touch: dict[tuple[str, str], list[tuple[ActionRow, RunRow | None]]] = {}
        # prune only: writes whose stored call cannot be read (a damaged payload), matched to every write
        self._blind: list[tuple[ActionRow, RunRow | None]] = []

    def _index(self) -> dict[str | None, list[tuple[ActionRow, RunRow | None]]]:
        if self._by_key is None:
            j = self.j
            # every run this walk does not undo: a later run of the same session counts, since
            # undoing one run leaves that run's write in place (adversarial review 19, F4: undoing
            # run 1 wiped run 2's write-back of the same value)
            mine = set(self.runs)
            found: dict[str, RunRow | None] = {}
            by_key: dict[str | None, list[tuple[ActionRow, RunRow | None]]] = {}
            by_touch: dict[tuple[str, str], list[tuple[ActionRow, RunRow | None]]] = {}
            # every server: another name may launch the same server (resource_key)
            writes = self._among if self._among is not None else \
                j.writes_after(None, j.first_gseq(sorted(self.runs)), exclude_runs=sorted(mine))
            for b in writes:
                if acts_on_nothing(b):  # its own answer says it changed nothing (memory's create of what existed)
                    continue
                if b.run_id not in found:
                    try:
                        found[b.run_id] = j.find_run(b.run_id)
                    except UsageError:  # pruned meanwhile
                        found[b.run_id] = None
                b_run = found[b.run_id]
                try:
                    read = self.load(b.verify_ref)
                    inverse = self.load(b.inverse_ref)
                    args = None if read or inverse else self.load(b.args_ref)
                except DamagedPayload:
                    if self._among is None:  # an undo or redo: the journal is damaged (exit 2, audit)
                        raise
                    # prune: what it wrote cannot be told, so it may be anything's later write
                    self._blind.append((b, b_run))
                    continue
                by_key.setdefault(resource_key(b_run, read), []).append((b, b_run))
                # and by what it changed, each write once (adversarial review 20, F10: 200 steps
                # against 4,000 such writes compared each step with every one: 34 s): its read's or
                # inverse's identifiers, which name the resources it changed, not every value of
                # its arguments (review 21, F1: an observation "Python" halted the undo of the
                # entity Python); one with neither, by its arguments
                touched = (undo_touches(b_run, read, inverse) if read or inverse
                           else action_touches(b_run, b.server, args, None, None))
                for t in touched:
                    by_touch.setdefault(t, []).append((b, b_run))
            self._by_key, self._by_touch = by_key, by_touch
        return self._by_key

    def after(self, a: ActionRow) -> list[tuple[ActionRow, RunRow | None]]:
        """Writes of other sessions to ``a``'s resource (as :func:`same_resource` tells it) made
        after ``a``, still in effect, with their runs; oldest first.

        Raises:
            JournalError: the journal cannot be read.
        """
        run = self.runs.get(a.run_id)
        by_key = self._index()
        if run is None or not (by_key or self._blind):
            return []
        found: dict[str, tuple[ActionRow, RunRow | None]] = {b.id: (b, r) for b, r in self._blind}
        try:
            read = self.load(a.verify_ref)
            inverse = self.load(a.inverse_ref)
        except DamagedPayload:
            if self._among is None:
                raise
            read = inverse = None  # prune: a's undo stops at its damaged payload; the same read's writes still count
        key = resource_key(run, read)
        # what same_resource tells: the same read, or an identifier of a's resource in theirs
        for b, r in (by_key.get(key, []) if key is not None else []):
            found[b.id] = (b, r)
        for t in undo_touches(run, read, inverse):
            for b, r in self._by_touch.get(t, []):
                found[b.id] = (b, r)
        return sorted(((b, r) for b, r in found.values() if later_than(b, a)), key=lambda x: _gseq_key(x[0]))

    def who(self, found: list[tuple[ActionRow, RunRow | None]]) -> str:
        """``another session`` when one of :meth:`after`'s writes is another session's, else
        ``another run of this session``."""
        sessions = {r.session_id for r in self.runs.values()}
        if any(r is None or r.session_id is None or r.session_id not in sessions for _, r in found):
            return "another session"
        return "another run of this session"

    def env_doubt(self, a: ActionRow, found: list[tuple[ActionRow, RunRow | None]]) -> str:
        """A sentence for a halt on :meth:`after`'s writes when this run's server and theirs were
        given variables by their clients (names only are recorded): with other values they may
        reach other data, which the journal cannot tell (adversarial review 20, F9: two memory
        files chosen by MEMORY_FILE_PATH were taken for one, and the advice was to undo the
        other session); ``""`` when there are none."""
        run = self.runs.get(a.run_id)
        mine = set((run.servers.get(a.server) or {}).get("env") or []) if run is not None else set()
        theirs: set[str] = set()
        for b, r in found:
            theirs |= set(((r.servers.get(b.server) or {}).get("env") or []) if r is not None else [])
        both = sorted(mine & theirs)
        if not both:
            return ""
        return (f" Both servers were given {', '.join(both)} by their clients, and the journal keeps no values: if "
                "the values differ they reach different data, and this undo touches none of theirs (then "
                "`--force --yes` is safe).")

    def undo_first(self, found: list[tuple[ActionRow, RunRow | None]]) -> str:
        """The way on that keeps what :meth:`after`'s writes did: undo their session first, or,
        for another run of this session, that run (adversarial review 20, F11: "undo that
        session first" named the session being undone)."""
        b, r = found[-1]
        if self.who(found) == "another session" and r is not None and r.session_id:
            return f"Undo that session first (`synartesis undo {r.session_id}`)"
        return f"Undo that run first (`synartesis undo {b.run_id[:10]}`)"

    @staticmethod
    def names(found: list[tuple[ActionRow, RunRow | None]]) -> str:
        """:meth:`after`'s writes as a report names them: run:seq (as ``show`` lists them), tool,
        session, approver."""
        return ", ".join(f"{b.run_id[:8]}:{b.seq} {b.qualified}" + (f" of session {r.session_id[:10]}" if r is not None and r.session_id else "")
                         + (f" (approved by {b.decided_by})" if b.decided_by else "") for b, r in found)




def undo_target(j: Journal, target: Target, opts: UndoOptions, servers: ServerPool | None = None,
                      kind: str = "undo") -> UndoReport:
    """Undo ``target``'s actions newest first (see module docstring).

    ``servers``: connections the caller holds (saga mode); default: start what the runs
    touched and stop them afterwards. ``kind`` is recorded (``undo`` or ``saga``).

    Raises: as :func:`undo_run`.
    """
    if target.live_runs and not (opts.force or opts.own_run):
        run = target.live_runs[0]
        what = f"run {run.id[:8]} is" if target.kind == "run" else f"{target.name} has a run still active ({run.id[:8]}):"
        raise LiveRunError(f"{what} still active (an agent may still be writing through it); "
                           "stop the agent first (its run then ends with it), or add --force to see what the undo would do, "
                           "then --force --yes to do it", what, run.id)
    preview = opts.dry_run or (opts.force and not opts.yes)
    if not preview:
        if j.close_stale():  # a run whose proxy is gone ends now; its in-flight calls become unknown
            fresh = {r.id: r for r in (j.session_runs(target.id) if target.kind == "session" else [j.find_run(target.id)])}
            target.runs = [fresh.get(r.id, r) for r in target.runs]
    if not opts.force:  # a dry run too: it said "the real undo would stop here too" of a step the
        # real undo never reached, refusing for the audit first (adversarial review 19, F12)
        for r in target.runs:
            audit = j.audit(r.id)
            if not audit.ok:
                would = "the real undo would refuse: " if opts.dry_run else ""
                raise ConflictError(f"the journal of run {r.id[:8]} fails its audit, so its records cannot be "
                                    f"trusted to undo from ({would}" + "; ".join(audit.problems[:3])
                                    + "; see `synartesis audit`; --force undoes anyway)")
    if target.kind == "run":
        actions = sorted(j.actions(target.id), key=lambda a: -a.seq)
    else:
        actions = list(reversed(j.actions_of(target.run_ids)))
    report = UndoReport(run=target.id, dry_run=preview, status="partial", preview_force=opts.force and not opts.yes,
                        kind=kind, target=target.kind, target_name=target.name, picked=target.picked,
                        skipped=list(target.skipped),
                        waiting=[{"action": a.id, "seq": a.seq, "run": a.run_id, "tool": a.qualified}
                                 for a in actions if a.status == "gated"])
    in_scope, kept = _scope(j, target, actions, opts)
    runs = {r.id: r for r in target.runs}
    needed: set[tuple[str, str]] = set()
    load = _Loads(j)
    for a in in_scope:
        if a.cls == "readonly" or a.status in NEVER_APPLIED or a.status == "rolled_back":
            continue
        if a.status in ("pending", "unknown"):
            verify = load(a.verify_ref)
            run = runs.get(a.run_id)
            if not verify or a.prior not in ("captured", "absent") or (
                    a.status == "pending" and not (run is not None and run.stale)):
                if opts.force:  # stepped over (Walk.status_step): nothing of it is sent
                    continue
                break
            # settled by a read of its resource (Walk.one): its read's and its inverse's servers
            needed.add((a.run_id, verify["server"]))
            inv, _ = _unknown_plan(j, a, opts.policy, load(a.snapshot_ref) if a.prior == "captured" else None)
            needed.update((a.run_id, c["server"]) for c in inv or [])
            continue
        for call in (load(a.inverse_ref) or []):
            needed.add((a.run_id, call["server"]))
        verify = load(a.verify_ref)
        if verify:
            needed.add((a.run_id, verify["server"]))
        if opts.replan and opts.policy is not None:
            inv, ver, _ = replan_action(j, a, opts.policy)
            needed.update((a.run_id, c["server"]) for c in inv or [])
            if ver:
                needed.add((a.run_id, ver["server"]))

    pool = servers or SpawnedServers(runs, opts.policy, opts.entry_env, opts.stop)
    attempt = None
    touched = list(dict.fromkeys(a.run_id for a in in_scope))
    if not preview and touched:
        scope: dict[str, Any] = {target.kind: target.id}
        if opts.to is not None:
            scope["to"] = opts.to
        if opts.only is not None:
            scope["only"] = opts.only
        attempt = j.begin_attempt(touched, opts.by, kind, scope)
        if attempt is None:
            raise ConflictError(f"another undo of {target.name} is running; wait for it to finish")
        report.undo_id = attempt.id
    walk = _Walk(j, pool, opts, preview, runs, report, load)
    try:
        if needed:
            pool.start(needed)
        report.warnings.extend(pool.warnings)
        stopped = opts.stop is not None and opts.stop.is_set()  # take_steps says so, sending nothing
        down = [] if stopped else sorted((rid, srv) for rid, srv in needed if pool.request(rid, srv) is None)
        if down and in_scope and not opts.force:
            # a server an older step needs did not start: say so before anything is sent, not
            # after the newer steps were undone (adversarial review 19, F16: fsA's step was
            # reverted, then the undo halted on fsB's and printed the drift menu)
            first = in_scope[0]
            rid, srv = down[0]
            cause, why = launch_cause(pool, rid, srv, pool.why_not(rid, srv))
            step = Step(first.seq, first.id, first.qualified, "halt", f"server {srv}, which this undo needs, could "
                        "not be started, so nothing was sent", detail=why, cause=cause or "launch")
            step.run, step.gseq = first.run_id, first.gseq
            report.steps.append(step)
            report.halted = step
        else:
            take_steps(j, attempt, in_scope, walk.one, report, walk.deferred, opts.stop)
        for a in kept:
            report.steps.append(Step(a.seq, a.id, a.qualified, "kept", f"below --to {opts.to}, so it is left as it is",
                                     run=a.run_id, gseq=a.gseq))
        # saga mode rolls back a run that goes on: its status stays active (reference defect 5)
        _settle(j, report, actions, runs, preview or opts.own_run)
    finally:
        if servers is None:
            pool.close()
        if attempt is not None:
            finish(j, attempt, report)
    return report


def take_steps(j: Journal, attempt: Attempt | None, actions: list[ActionRow],
                     one: Callable[[ActionRow], Step], report: UndoReport,
                     deferred: dict[str, dict] | None = None, stop: Stop | None = None) -> None:
    """Take each action's step in order (``one``), record it in the attempt, stop at a halt.
    ``deferred``: action states ``one`` left to be written with the step (one transaction).

    A step's record (and the state it settles) is written with the next transaction — the
    next step's claim, or the attempt's end — not in one of its own: one commit per step. An
    undo killed in between leaves that action ``rolling_back`` (its inverse was sent), and
    the next undo re-reads it: found reverted, or a halt where no read can tell. A halt is
    written at once. When ``one`` is a :class:`_Walk`'s, it is told the next action (claimed,
    and its drift read sent, while this step's re-read is in flight: :meth:`_Walk.preclaim`),
    and a halt or stop releases what was taken that way. ``stop`` set: no further step is
    taken (a halt that is not written: the actions not reached are as they were)."""
    walk = getattr(one, "__self__", None)
    if not isinstance(walk, _Walk):
        walk = None
    for i, a in enumerate(actions):
        if stop is not None and stop.is_set():
            if walk is not None:
                walk.release()
            step = Step(a.seq, a.id, a.qualified, "halt", _STOPPED)
            step.run, step.gseq = a.run_id, a.gseq
            report.steps.append(step)
            report.halted = step
            break
        if walk is not None:
            walk.next = actions[i + 1] if i + 1 < len(actions) else None
        step = one(a)
        if walk is not None and walk.holds(a.id):
            walk.release()  # claimed or read ahead, yet its step ended before using it
        step.run, step.gseq = a.run_id, a.gseq
        report.steps.append(step)
        settle = deferred.pop(a.id, None) if deferred is not None else None
        if attempt is not None:
            record = {"action": a.id, "seq": a.seq, "kind": step.kind, "outcome": step.outcome, "reason": step.reason}
            if step.kind == "halt":
                j.attempt_step(attempt, a.run_id, record, settle)
            else:
                j.defer(functools.partial(j.attempt_step, attempt, a.run_id, record, settle))
        elif settle is not None:
            j.set_action_status(a.id, settle["status"], note=settle["note"], reverted=settle["reverted"])
        if step.kind == "halt":
            if walk is not None:
                walk.release()
            report.halted = step
            break


def finish(j: Journal, attempt: Attempt, report: UndoReport) -> None:
    """Close the attempt: each run's outcome (``halted`` where it stopped) and the report."""
    per_run = {rid: ("halted" if report.halted and report.halted.run == rid else report.runs.get(rid) or "nothing")
               for rid in attempt.rows}
    j.finish_attempt(attempt, per_run, report.as_json())


def _scope(j: Journal, target: Target, actions: list[ActionRow], opts: UndoOptions) -> tuple[list, list]:
    """(in scope newest first, kept below ``--to``); checks ``--to`` and ``--only``."""
    top = max((a.seq for a in actions), default=0)
    if opts.to is not None:
        if opts.to < 1:
            raise UsageError("--to needs a positive whole number")
        if opts.to > top:
            raise UsageError(f"--to {opts.to} is past the end of this run, which goes up to {top}")
        return [a for a in actions if a.seq >= opts.to], [a for a in actions if a.seq < opts.to]
    if opts.only is not None:
        one = next((a for a in actions if a.seq == opts.only), None)
        if one is None:
            raise UsageError(f"run {target.id[:8]} has no action {opts.only} (it goes up to {top})")
        later = later_writes(j, target, one)
        if later and not opts.force:
            b = later[-1]
            raise ConflictError(
                f"seq {one.seq} ({one.qualified}) cannot be undone alone: seq {b.seq} ({b.qualified}"
                + ("" if b.run_id == one.run_id else f", run {b.run_id[:8]}")
                + ") changed the same resource later, and putting back what seq "
                f"{one.seq} replaced would throw that away. Undo the later one first, or add --force to see "
                "both values (then --force --yes to overwrite)")
        return [one], []
    return actions, []


def _settle(j: Journal, report: UndoReport, actions: list[ActionRow], runs: dict[str, RunRow], preview: bool) -> None:
    """Each touched run's status from its steps, and the report's (see :class:`UndoReport`).

    A run is ``rolled_back`` when none of its non-readonly actions is still in effect and at
    least one was reverted; ``compensated`` when some of those were only sent; ``partial``
    when something was reverted and something is still in effect; unchanged when nothing of
    it was ever reverted. A preview computes what the real undo would write.
    """
    done: dict[str, str] = {}  # action id → how it is reverted after this walk
    for a in actions:
        if a.status == "rolled_back":
            done[a.id] = a.reverted or "verified"
    for s in report.steps:
        if s.kind == "revert" and s.outcome != "sent, not restored":
            done[s.action] = "unverified" if not s.verified else "verified"
        elif s.kind == "already-reverted":
            done.setdefault(s.action, "found")
        elif s.kind == "overwrite":  # a --force preview: as the forced inverse would be checked
            done[s.action] = "verified" if s.verified else "unverified"
    by_run: dict[str, list[ActionRow]] = {}
    for a in actions:
        if a.cls != "readonly":
            by_run.setdefault(a.run_id, []).append(a)
    touched = {s.run for s in report.steps}
    if not any(s.kind in ("revert", "overwrite") or (s.kind == "already-reverted" and s.reason != "already rolled back")
               for s in report.steps):
        touched = set()  # this attempt put nothing back (all undone before): it reports nothing, not rolled_back
    statuses: dict[str, str] = {}
    total_unverified = 0
    for rid, acts in by_run.items():
        reverted = [a for a in acts if a.id in done]
        if rid not in touched or not reverted:
            continue
        unverified = sum(1 for a in reverted if done[a.id] == "unverified")
        earlier = [a for a in reverted if done[a.id] == "unverified" and a.status == "rolled_back"]
        if any(a.status in IN_EFFECT and a.id not in done for a in acts):
            status = "partial"
        else:
            status = "compensated" if unverified else "rolled_back"
            total_unverified += unverified
            report.earlier_unverified += [f"{a.run_id[:8]}:{a.seq}" if report.target == "session" else str(a.seq)
                                          for a in earlier]
        statuses[rid] = status
        current = runs.get(rid)
        if current is not None and current.live:
            # a forced undo of a live run: its proxy goes on journalling into it, so it is not
            # ended here (an ended run would look closed to prune, end_run and every view)
            report.open_runs.append(rid)
        elif not preview and current is not None and (current.status, current.unverified) != (status, unverified if status == "compensated" else 0):
            j.set_run_status(rid, status, unverified)
    report.runs = statuses
    kept_status = None
    if not statuses and report.halted:
        kept = kept_status_of(report.target, runs, report.halted.run, None if preview else j)
        if kept is not None:
            report.stays = status_text(*kept)
            kept_status, report.unverified = kept
    if not statuses:
        # a halt that changed nothing reports the status the run keeps, as `list` shows it (a new
        # user's round 22, #3: --json said "partial" beside "stays": "complete")
        report.status = (kept_status or "partial") if report.halted else "nothing"
        if report.status == "nothing":
            report.message = f"nothing to undo in {report.target_name}: " + _why_nothing(report)
    elif report.halted or "partial" in statuses.values() or any(s.kind == "permanent" for s in report.steps):
        report.status = "partial"  # also when what was left in place is in a run it reverted nothing of
    elif "compensated" in statuses.values():
        report.status, report.unverified = "compensated", total_unverified
    else:
        report.status = "rolled_back"


def kept_status_of(target: str, runs: dict[str, RunRow], halted: str | None,
                   j: Journal | None = None) -> tuple[str, int] | None:
    """(status, unverified) that a halt which changed nothing leaves, as ``list`` shows it: the
    whole session's when ``target`` is ``session`` (a new user's round 30, U1: after an undo
    that reverted one run and halted on another, the next halt said the session "stays
    complete" while ``list`` said partial), else the halted run's (``runs``: the target's runs
    by id; None when the halted run is not among them).

    ``j``: read the runs again first (not for a preview). A halt on a call whose outcome is
    unknown changed its action (``rolling_back`` after an inverse, ``unknown`` after a redo),
    and with it what ``list`` shows; the rows read before the walk said the session "stays
    complete" (adversarial review 31, F2)."""
    if j is not None and runs:
        now = {r.id: r for r in j.list_runs() if r.id in runs}
        runs = {rid: now.get(rid, row) for rid, row in runs.items()}
    if target == "session" and runs:
        return session_status(list(runs.values()))
    run = runs.get(halted or "")
    return session_status([run]) if run is not None else None


def _why_nothing(report: UndoReport) -> str:
    """``2 readonly, 1 never applied (awaiting approval)``: what its actions are instead."""
    if not report.steps:
        return "it recorded no actions"
    counts: dict[str, int] = {}
    for s in report.steps:
        counts[s.reason] = counts.get(s.reason, 0) + 1
    return ", ".join(f"{n} {reason}" for reason, n in counts.items())


#: the longest a drift read sent ahead (:meth:`_Walk.preclaim`) may have been out when its step
#: uses it, in seconds; older, it is sent again. A drift read sent in turn is at most one round
#: trip old when the inverse goes out; one sent ahead is older by the step before's re-read, which
#: a slow server can make seconds (adversarial review 11: a person's edit in that time was
#: overwritten as "state matches"). 10 ms keeps the window that of a read in turn on a loaded
#: machine, and lets the read ahead pay where both servers answer in about a millisecond.
AHEAD_FRESH_S = 0.010


class _Walk:
    """One undo's walk: the journal, the servers, and what a preview simulates."""

    def __init__(self, j: Journal, pool: ServerPool, opts: UndoOptions, preview: bool, runs: dict[str, RunRow],
                 report: UndoReport, load: _Loads | None = None) -> None:
        self.j, self.pool, self.opts, self.preview, self.runs, self.report = j, pool, opts, preview, runs, report
        self.load = load or _Loads(j)
        # A preview sends nothing, so it simulates: after a planned revert whose inverse the
        # real undo verifies (a captured prior state), a read of its resource shows that state;
        # older actions with the very same read are checked against it, not the world.
        self.simulated: dict[str, tuple[dict | None, str, tuple[int, int]]] = {}  # key → (state, step, order)
        # every planned revert: what its undo touches (by identifier), its key, label and order
        self.footprints: list[tuple[set, str | None, str, tuple[int, int]]] = []
        self.deferred: dict[str, dict] = {}  # rolled_back, written with its step
        # The last read, kept until anything is sent: the verifying re-read after an inverse
        # is the next step's drift read when that step reads the same resource the same way.
        # Not kept per resource across a send to another one: two server names (two launch
        # lines, two keys) may serve one folder, and a re-read made before the other's inverse
        # would hide a person's edit that inverse put back (test_session_undo_two_names_one_folder).
        self.last_read: tuple[str, ReadOutcome] | None = None
        self.keys: dict[tuple[str, str, str | None], str | None] = {}  # (what, run, stored read's ref) → key
        self.next: ActionRow | None = None  # the action take_steps reaches after this one
        self.preclaimed: ActionRow | None = None  # claimed ahead by preclaim, nothing of it sent yet
        self.others = OtherRuns(j, runs, self.load)  # other sessions' later writes (foreign_after)
        self._undone: dict[str, list[ActionRow]] | None = None  # rolled-back writes by post-state (undone_under)
        self._replaced: dict[str, str] = {}  # action id -> the ref of the state it replaced
        self._redone_at: dict[str, str] = {}  # run id -> when a redo of it last started
        # (action, its drift read, when it was sent: time.monotonic()) sent by preclaim
        self.ahead: tuple[str, Callable[[], ReadOutcome], float] | None = None

    def _stored(self, a: ActionRow, read: dict | None) -> bool:
        """Is ``read`` the action's stored read as loaded (not a replanned one)?"""
        return read is not None and read is self.load.memo.get(a.verify_ref or "")

    def key(self, a: ActionRow, read: dict | None) -> str | None:
        """:func:`resource_key` of ``read`` for ``a``'s run; the stored read's once per action
        (a step asks three times: to simulate, to send its drift read and its re-read)."""
        if not self._stored(a, read):
            return resource_key(self.runs.get(a.run_id), read)
        memo = ("key", a.run_id, a.verify_ref)
        if memo not in self.keys:
            self.keys[memo] = resource_key(self.runs.get(a.run_id), read)
        return self.keys[memo]

    def read_key(self, a: ActionRow, read: dict) -> str:
        """What makes two reads the same read: the resource and how its answer is classified
        (once per action for the stored read, like :meth:`key`)."""
        memo = ("read", a.run_id, a.verify_ref)
        if self._stored(a, read) and memo in self.keys:
            return self.keys[memo] or ""
        key = canonical([self.key(a, read), read.get("absent_when"), read.get("refuse_when")])
        if self._stored(a, read):
            self.keys[memo] = key
        return key

    def label(self, a: ActionRow) -> str:
        """How a report names a step: its seq, or ``run:seq`` in a session."""
        return f"{a.run_id[:8]}:{a.seq}" if self.report.target == "session" else str(a.seq)

    def plan(self, a: ActionRow, key: str | None, before: dict | None, inverse: list, verify: dict | None) -> None:
        """A preview planned to revert ``a``: remember the state it leaves its resource in (its
        captured prior state, None when nothing was captured: the real undo does not check
        what a compensation leaves) and what its undo touches (the identifiers of its read,
        else of its inverse: :mod:`synartesis.undo.overlap`)."""
        if key is not None:
            self.simulated[key] = (before, self.label(a), _order(a))
        self.footprints.append((undo_touches(self.runs.get(a.run_id), verify, inverse), key, self.label(a), _order(a)))

    def planned_state(self, a: ActionRow, verify: dict, key: str | None) -> tuple[str, dict | None, str] | None:
        """In a preview, what the real undo will see when it reaches ``a``, when a newer step
        of this plan changes ``a``'s resource first: ``("simulated", state, label)`` when the
        last such step has the very same read and a captured prior state (the real undo
        re-reads after its inverse and halts unless the read shows exactly that state), else
        ``("deferred", None, label)``: the state it leaves is not known (a compensation, or a
        step that meets this read only by an identifier, such as memory's ``create_relations``
        or a ``move_file`` with no read), so the drift check waits for the real undo. None: no
        planned step touches it, so the world as it is now is what the real undo will read.

        The real undo runs newest first, so of the newer planned steps the oldest runs last
        and decides (a step after it with the same read overwrites what it did)."""
        mine = undo_touches(self.runs.get(a.run_id), verify, None)
        last: tuple[tuple[int, int], str, dict | None, str] | None = None  # (order, how, state, label)
        same = self.simulated.get(key) if key is not None else None
        if same is not None and same[2] > _order(a):
            last = (same[2], "simulated" if same[0] is not None else "deferred", same[0], same[1])
        for touch, their_key, label, order in self.footprints:
            if (their_key != key and order > _order(a) and (last is None or order < last[0])
                    and shares(touch, mine)):
                last = (order, "deferred", None, label)
        return None if last is None else last[1:]

    def begin_read(self, a: ActionRow, read: dict) -> Callable[[], ReadOutcome]:
        """Send ``read`` to ``a``'s server now and return what waits for its outcome; or reuse
        the last read's outcome when it was the same read of the same server (as launched)
        and nothing has been sent since."""
        key = self.read_key(a, read)
        if self.last_read is not None and self.last_read[0] == key:
            kept = self.last_read[1]
            return lambda: kept
        waiting = self.pool.begin_read(a.run_id, read, timeout=self.opts.read_timeout,
                                       max_bytes=self.opts.max_snapshot_bytes)

        def outcome() -> ReadOutcome:
            out = waiting()
            self.last_read = (key, out) if out.kind != "failed" else None
            return out
        return outcome

    def read(self, a: ActionRow, read: dict) -> ReadOutcome:
        """:meth:`begin_read`, waited for."""
        return self.begin_read(a, read)()

    def send(self, a: ActionRow, call: dict, meta: dict) -> Any:
        """Send one inverse call; forgets the last read (the resource may change now)."""
        self.last_read = None
        return self.pool.call(a.run_id, call["server"], call["tool"], call["args"],
                                    timeout=self.opts.call_timeout, meta=meta)

    def preclaim(self, a: ActionRow, read: dict) -> None:
        """Start the next action's step now, while ``a``'s verifying re-read ``read`` is at the
        server (``a``'s inverse was answered): claim it (``rolling_back``) and, when that
        re-read is not also its drift read (:meth:`begin_read`), send its drift read too. Its
        claim's commit (with ``a``'s predecessor's deferred record) and its read then overlap
        the server's work instead of waiting between two calls (issue 11 item 5). The drift
        read still comes after every inverse sent before it, and nothing is sent before the
        step uses it, so it reads what the step would have read; the step uses it only if it
        was sent at most :data:`AHEAD_FRESH_S` before (else it reads again), so a slow re-read
        here cannot widen the window in which a person's edit goes unseen. A claim says nothing was sent
        yet, as one taken during a drift read does: an undo killed before the next step leaves
        it ``rolling_back`` with its resource as the run left it, and the next undo's drift read
        finds it so and sends its inverse. A halt or a stop before the next step uses them gives
        the claim back and waits for the read (:meth:`release`)."""
        b = self.next
        if (b is None or self.preview or self.opts.replan or self.stopped() or b.status != "applied"
                or self.status_step(b) is not None or not b.inverse_ref or b.post_ref is None
                or acts_on_nothing(b)):  # nothing of it is sent or read (adversarial review 16, F2)
            return
        verify = self.load(b.verify_ref)
        if verify is None:
            return
        if self.read_key(b, verify) != self.read_key(a, read):
            self.ahead = (b.id, self.begin_read(b, verify), time.monotonic())
        if self.j.set_action_status(b.id, "rolling_back", expect=("applied",)):
            self.preclaimed = b
            for ref in (b.inverse_ref, b.post_ref, b.snapshot_ref if b.prior == "captured" else None):
                self.load(ref)  # its step loads them next: read now, while the server works

    def holds(self, action_id: str) -> bool:
        """Does :meth:`preclaim` still hold a claim or a read of this action's step?"""
        return ((self.preclaimed is not None and self.preclaimed.id == action_id)
                or (self.ahead is not None and self.ahead[0] == action_id))

    def release(self) -> None:
        """Give a claim :meth:`preclaim` took back (nothing of that action was sent), and wait
        for a drift read it sent (its answer is not left behind for a later request)."""
        b, self.preclaimed = self.preclaimed, None
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            ahead[1]()
        if b is not None:
            self.j.set_action_status(b.id, b.status, expect=("rolling_back",))

    def settled_by_read(self, a: ActionRow) -> bool:
        """Is ``a``'s outcome unknown, with a pre-read that can settle it (:meth:`one`)? A
        ``pending`` call of a run whose proxy is gone counts (a dry run does not close it)."""
        run = self.runs.get(a.run_id)
        return (bool(a.verify_ref) and a.prior in ("captured", "absent")
                and (a.status == "unknown" or (a.status == "pending" and run is not None and bool(run.stale))))

    def status_step(self, a: ActionRow) -> Step | None:
        """The step an action's status alone decides (no server contact), or None."""
        q, opts = a.qualified, self.opts
        if a.cls == "readonly":
            return Step(a.seq, a.id, q, "skip", "readonly")
        if a.status == "rolled_back":
            return Step(a.seq, a.id, q, "already-reverted", "already rolled back", verified=True)
        if a.status in NEVER_APPLIED:
            if a.status == "approved" and a.used_by:  # its retry is an action of its own (show names it)
                try:  # as show labels it, run:seq (a new user's round 19, #9: an id no command takes)
                    retry = self.j.get_action(a.used_by)
                    where = f"{retry.run_id[:8]}:{retry.seq}"
                except (JournalError, UsageError):
                    where = a.used_by[:8]
                return Step(a.seq, a.id, q, "skip", f"never applied here (approved; its retry is {where}, "
                            "recorded on its own)")
            return Step(a.seq, a.id, q, "skip", NEVER_APPLIED[a.status])
        if opts.skip_irreversible and a.cls == "irreversible":
            return Step(a.seq, a.id, q, "permanent", "irreversible: saga mode never rolls it back; left in place")
        if a.status in ("pending", "unknown"):
            running = self.server_still_running(a)
            if running is not None and opts.force:
                # never settled by a read while its server may still carry it out: stepped over,
                # as --force promises (adversarial review 19, F1: the read found it unchanged, the
                # step said rolled_back, and the write landed after)
                who = ("the server that received it still runs" if running[1] else
                       "a process the server that received it started still runs, outside its process group")
                return Step(a.seq, a.id, q, "permanent", f"outcome unknown, and {who} (pid {running[0]}); stepped "
                            "over because of --force (whatever it does is left in place)", detail=a.note)
            if running is not None:
                pid, group = running
                who = (f"the server that received this call is still running (pid {pid})" if group else
                       f"a process the server that received this call started is still running (pid {pid}, outside "
                       "the server's process group)")
                stop = (f"stop it and what it started (kill -- -{pid}, its process group)" if group else
                        f"stop it (kill {pid})")
                return Step(a.seq, a.id, q, "halt", f"{who} and may still carry it out", detail=(
                                f"{a.note or 'outcome unknown'}\nIts proxy is gone, so nothing will say when the server "
                                f"finishes. Wait for it to exit, or {stop}, then run undo again; `undo --force` steps "
                                "over this action (leaving whatever it did) and undoes the older ones."))
            if self.settled_by_read(a):  # --force steps over only what the read cannot settle
                return None  # settled by a read of the resource (Walk.one, _unknown_plan)
            if opts.force:
                # a person looked at it and chose to go on: whatever it did stays as it is
                return Step(a.seq, a.id, q, "permanent", "outcome unknown; stepped over because of --force "
                            "(whatever it did is left in place)", detail=a.note)
            return Step(a.seq, a.id, q, "halt", _unknown_why(a) + ", so whether it applied cannot be determined",
                        detail=(a.note or "") + "\nCheck the resource by hand; `undo --force` then steps over this "
                        "action (leaving whatever it did) and undoes the older ones.")
        return None

    def server_still_running(self, a: ActionRow) -> tuple[int, bool] | None:
        """(pid, True) when the server that received ``a`` or its process group still runs
        though its run's proxy is gone (the run's launch line records the server's pid and start
        token); (pid, False) when only a process it started outside its group does (found by the
        launch line's ``mark``: :func:`~synartesis.journal.liveness.marked_process`); else None.
        A read cannot settle such a call: the server may still be carrying it out (adversarial
        review 16, F1: a proxy killed mid-write, its server went on and applied the write after
        an undo had read the file unchanged and called the call reverted)."""
        run = self.runs.get(a.run_id)
        line = run.servers.get(a.server) if run is not None and isinstance(run.servers, dict) else None
        if run is None or run.live or not isinstance(line, dict) or not isinstance(line.get("pid"), int):
            return None
        from synartesis.journal.liveness import group_alive, marked_process
        token = line.get("started") if isinstance(line.get("started"), str) else None
        if group_alive(line["pid"], token, run.host):
            return line["pid"], True
        mark = line.get("mark")
        found = marked_process(MARK_VAR, mark, run.host) if isinstance(mark, str) and mark else None
        return (found, False) if found is not None else None

    def one(self, a: ActionRow) -> Step:
        decided = self.status_step(a)
        if decided is not None:
            return decided
        j, opts, preview, q = self.j, self.opts, self.preview, a.qualified
        inverse = self.load(a.inverse_ref)
        verify = self.load(a.verify_ref)
        post = self.load(a.post_ref)
        snapshot = self.load(a.snapshot_ref) if a.prior == "captured" else None
        replanned = False
        unknown = a.status in ("pending", "unknown")  # settled by a read (status_step let it through)
        if unknown:
            # what this walk (or plan) already reverted no longer stands over it, whatever its
            # row says yet (adversarial review 16, F5: a newer write just undone halted it)
            gone = {s.action for s in self.report.steps if s.kind in ("revert", "overwrite", "already-reverted")}
            newer = _newer_on_resource(j, a, verify, self.runs, gone)
            if newer is not None:
                return self._unknown_after(a, newer)
            inverse, post = _unknown_plan(j, a, opts.policy, snapshot)
            if post is None:
                return self._unknown_read(a, verify, prior_state(a, snapshot))
        elif opts.replan and opts.policy is not None:
            inv, ver, err = replan_action(j, a, opts.policy)
            if err:
                return Step(a.seq, a.id, q, "halt", "replan failed", detail=err, replanned=True)
            if inv is not None:
                inverse, replanned = inv, True
            if ver is not None:
                verify = ver

        if not inverse:
            if a.cls == "irreversible":
                reason = "cannot be undone" + (f", approved by {a.decided_by}" if a.decided_by else "") + "; left in place"
            else:
                if (a.note or "").startswith(NOTHING_TO_RESTORE):  # as bare undo's skip line says it
                    # held and approved, or sent unheld by a rule that says its tool never
                    # creates (on_absent: send) when it did (adversarial review 17, F7)
                    what = "an approved creation" if a.decided_by else "a creation"
                    reason = f"{what} (nothing existed before it to put back); left in place"
                else:
                    reason = "no usable inverse was recorded" + (f": {a.note}" if a.note else "") + "; left in place"
            return Step(a.seq, a.id, q, "permanent", reason)
        if not unknown and not replanned and acts_on_nothing(a):
            # the server says the call changed nothing: there is nothing to send or to check
            held = self.preclaimed is not None and self.preclaimed.id == a.id
            if held:  # claimed during the step before (preclaim skips such steps; an older claim)
                self.preclaimed = None
            if self.ahead is not None and self.ahead[0] == a.id:
                (_, waiting, _), self.ahead = self.ahead, None
                waiting()  # its answer is not left behind for the next request
            if not preview and not j.set_action_status(a.id, "rolled_back", note=ACTS_ON_NOTHING, reverted="found",
                                                       expect=("applied", "rolling_back") if held else ("applied",)):
                return Step(a.seq, a.id, q, "halt", "another undo is already working on this action")
            return Step(a.seq, a.id, q, "already-reverted", ACTS_ON_NOTHING, verified=True)

        verified = False
        before = prior_state(a, snapshot)
        obs: Any = None  # what the drift read found (none when the rule declares no read)
        step_expected = step_actual = None
        forced = claimed = False
        sim_key = self.key(a, verify)
        simulated_by: str | None = None  # the planned step whose outcome a preview checked against
        check: str | None = None  # how a preview checked for drift (Step.check)
        if verify is not None and post is not None:
            planned = self.planned_state(a, verify, sim_key) if preview else None
            check = "now" if preview else None
            if planned is not None and planned[0] == "deferred":
                return self._deferred(a, sim_key, before, inverse, verify, planned[2], replanned)
            if planned is not None:  # a newer planned step with the same read leaves a known state
                check, obs, simulated_by = "simulated", planned[1], planned[2]
            else:
                sent_at: float | None = None
                if self.ahead is not None and self.ahead[0] == a.id:
                    (_, waiting, sent_at), self.ahead = self.ahead, None  # sent during the step before (preclaim)
                else:
                    waiting = self.begin_read(a, verify)
                if self.preclaimed is not None and self.preclaimed.id == a.id:
                    self.preclaimed, claimed = None, True  # claimed during the step before (preclaim)
                elif not preview and a.status != "rolling_back" and not unknown:
                    # Claimed while the drift read is in flight: the commit overlaps the server's
                    # work. A claim that then finds drift (or the state already back) is settled
                    # from rolling_back as it would have been from applied; killed in between,
                    # the next undo re-reads it, as after any claim (see take_steps). An unknown
                    # outcome is claimed only once the read shows the call applied (below).
                    if not j.set_action_status(a.id, "rolling_back", expect=("applied", "unrecoverable")):
                        waiting()  # its answer is not left behind for the next request
                        return Step(a.seq, a.id, q, "halt", "another undo is already working on this action")
                    claimed = True
                current = waiting()
                if sent_at is not None and time.monotonic() - sent_at > AHEAD_FRESH_S:
                    # read ahead too long ago (the step before waited on a slow re-read): what
                    # it saw may be older than a person's edit, so the drift read is sent again
                    self.last_read = None
                    current = self.begin_read(a, verify)()
                obs = current.observation()
                if obs is None and self.stopped():
                    if claimed:  # nothing was sent: back to what it was, for the next undo
                        j.set_action_status(a.id, a.status, expect=("rolling_back",))
                    return Step(a.seq, a.id, q, "halt", _STOPPED)
                if obs is None:
                    if not preview:
                        j.set_action_status(a.id, "unrecoverable", note=f"{_READ_FAILED}: {current.reason}")
                    cause, why = launch_cause(self.pool, a.run_id, verify["server"], current.reason)
                    return Step(a.seq, a.id, q, "halt", "could not read current state to check for drift", detail=why,
                                cause=cause)
            if _same(obs, post, verify):
                verified = True
            elif before is not None and _same(obs, before, verify):
                if not preview and unknown:
                    j.set_action_status(a.id, "rolled_back", expect=("unknown",), reverted="found",
                                        note=f"{UNKNOWN_FOUND_BEFORE}: {a.note or 'outcome unknown'}")
                elif not preview:
                    j.set_action_status(a.id, "rolled_back", note="found already in the state the inverse would produce",
                                        reverted="found")
                return Step(a.seq, a.id, q, "already-reverted", UNKNOWN_FOUND_BEFORE if unknown else
                            "the resource is already in the state this inverse would produce", verified=True, check=check)
            else:
                detail = ((f"drift at sequence {a.seq}: the resource is not in the state this run left it in"
                           + (f" (checked against the state step {simulated_by} leaves)" if simulated_by else "") + ".\n"
                           f"  expected: {canonical(post)}\n  actual:   {canonical(obs)}") + self.left_note(a)
                          + self.elsewhere_note(a) + self.reverted_note(a, post, verify))
                if unknown:  # neither before nor after the call: nothing tells what happened; left as it is
                    if opts.force:
                        return Step(a.seq, a.id, q, "permanent", UNKNOWN_FORCED, detail=_unknown_detail(a, before, obs, post))
                    return Step(a.seq, a.id, q, "halt", UNKNOWN_NEITHER, detail=_unknown_detail(a, before, obs, post),
                                expected=post, actual=obs, check=check)
                if not opts.force:
                    if not preview:
                        j.set_action_status(a.id, "unrecoverable", note=detail)
                    return Step(a.seq, a.id, q, "halt", "drift detected", expected=post, actual=obs, check=check,
                                detail=launch_cause(self.pool, a.run_id, verify["server"], detail)[1])
                forced = True
                step_expected, step_actual = post, obs
                if preview:
                    self.plan(a, sim_key, before, inverse, verify)
                    # verified as the real undo's re-read would be: against the captured prior state
                    return Step(a.seq, a.id, q, "overwrite", "drifted; --force --yes would overwrite it", detail=detail,
                                calls=inverse, expected=post, actual=obs, replanned=replanned, check=check,
                                verified=before is not None)
        elif a.status == "rolling_back":
            return Step(a.seq, a.id, q, "halt", "an inverse was already sent before an interruption and no read can "
                        "tell whether it applied", detail=a.note)

        if not forced and not unknown:
            foreign = self.foreign_after(a)
            if foreign and opts.force and preview:
                # what --force --yes would remove: listed as an overwrite, as drift is (a new
                # user's round 17, #2: the preview said "nothing has drifted")
                self.plan(a, sim_key, before, inverse, verify)
                return Step(a.seq, a.id, q, "overwrite", f"written since by {self.others.who(foreign)} ({OtherRuns.names(foreign)}); "
                            "--force --yes would overwrite it, removing what those calls did",
                            detail="reverting this call also removes what the other session's calls did", calls=inverse, expected=post,
                            actual=obs, replanned=replanned, check=check, verified=before is not None)
            if foreign and not opts.force:
                # the state may match by coincidence (another session wrote it back to the same
                # value): reverting would undo that session's work unnamed (review 17, F4)
                if claimed and not preview:
                    j.set_action_status(a.id, a.status, expect=("rolling_back",))
                names = OtherRuns.names(foreign)
                return Step(a.seq, a.id, q, "halt", f"{self.others.who(foreign)} wrote this resource after it, and that write is "
                            "still in effect", check=check, detail=(
                                f"written after it by {self.others.who(foreign)}: {names}. Reverting this call would silently "
                                f"undo that too. {self.others.undo_first(foreign)}, or `--force` to see what this undo "
                                "would overwrite, then `--force --yes` to overwrite it." + self.others.env_doubt(a, foreign)))

        if not forced and before is not None and opts.force and preview:
            older = self.undone_under(a)
            if older is not None:  # what --force --yes would bring back, listed (review 22, F3)
                self.plan(a, sim_key, before, inverse, verify)
                return Step(a.seq, a.id, q, "overwrite", f"what this call replaced was left by {self.label(older)} "
                            f"{older.qualified}, which an undo has reverted since; --force --yes would put it back, "
                            "bringing that change back", calls=inverse, expected=post, actual=obs, replanned=replanned,
                            check=check, verified=before is not None)
        if not forced and before is not None and not opts.force:
            older = self.undone_under(a)
            if older is not None:
                # what this call replaced is what an older call left, and an undo has reverted
                # that call since: putting it back would bring that call's change back, and the
                # run would read rolled_back (adversarial review 19, F3: a call stepped over by
                # --force landed later, and the next undo restored the undone write)
                if claimed and not preview:
                    j.set_action_status(a.id, a.status, expect=("rolling_back",))
                return Step(a.seq, a.id, q, "halt", "what this call replaced was left by an older call that an undo "
                            "has reverted since", check=check, detail=(
                                f"{self.label(older)} {older.qualified} left the state this call replaced, and was "
                                "reverted while this call was in effect (stepped over by `--force`, or its run undone "
                                "on its own). Putting back what this call replaced would bring that change back. "
                                "Decide by hand; `--force --yes` puts it back all the same."))

        if verified and unknown:
            reason = ("outcome unknown, but the resource is as the call would have left it: it applied; "
                      + ("the inverse would be applied" if preview else "applying inverse"))
        elif verified and simulated_by:
            reason = f"checked against the state step {simulated_by} leaves (a dry run sends nothing); the inverse would be applied"
        elif verified:
            reason = "state matches; the inverse would be applied" if preview else "state matches; applying inverse"
        elif forced:
            reason = "drifted, overwriting as --force --yes asked"
        elif verify is None:
            reason = "no read declared, so drift could not be ruled out"
        else:
            reason = "the post-state was never captured, so drift could not be ruled out"
        if preview:
            self.plan(a, sim_key, before, inverse, verify)
            return Step(a.seq, a.id, q, "revert", reason, calls=inverse, outcome="would call",
                        verified=verified and before is not None, replanned=replanned, check=check)

        if a.status != "rolling_back" and not claimed:
            if not j.set_action_status(a.id, "rolling_back", expect=("unknown",) if unknown else ("applied", "unrecoverable")):
                return Step(a.seq, a.id, q, "halt", "another undo is already working on this action")
        for k, call in enumerate(inverse):
            key = f"{a.run_id}:{a.seq}" + (f":{k + 1}" if len(inverse) > 1 else "")
            try:
                result = self.send(a, call, {IDEMPOTENCY_KEY: key})
            except RequestFailed as exc:
                if exc.maybe_applied:
                    self.report.sent += 1
                    note = f"rollback halted at sequence {a.seq}: the inverse's outcome is unknown: {exc.message}"
                    j.set_action_status(a.id, "rolling_back", note=note)
                    return Step(a.seq, a.id, q, "halt", "the inverse's outcome is unknown", detail=note, calls=inverse)
                step = self._inverse_failed(a, k, f"the inverse was not sent: {exc.message}")
                step.cause = launch_cause(self.pool, a.run_id, call["server"], "")[0] if k == 0 else None
                return step
            self.report.sent += 1
            if is_error(result):
                return self._inverse_failed(a, k, f"the inverse was refused: {error_text(result)}")

        outcome, ok, after = "sent (unverified)", False, None
        if verify is not None:
            waiting = self.begin_read(a, verify)
            if before is not None:
                self.preclaim(a, verify)
            after = waiting().observation()
            if before is not None:
                if after is not None and _same(after, before, verify):
                    outcome, ok = "restored (verified)", True
                elif after is None and self.stopped():
                    note = (f"rollback stopped at sequence {a.seq}: the inverse was sent and the undo was stopped "
                            "before its re-read; the next undo reads it again")
                    j.set_action_status(a.id, "rolling_back", note=note)
                    return Step(a.seq, a.id, q, "halt", _STOPPED, detail=note, calls=inverse, outcome="sent, not read back")
                else:
                    note = (f"the inverse was sent, but a re-read does not show the captured state:\n"
                            f"  expected: {canonical(before)}\n  actual:   {canonical(after) if after else 'unreadable'}")
                    j.set_action_status(a.id, "unrecoverable", note=note)
                    return Step(a.seq, a.id, q, "halt", "the inverse did not restore the captured state", detail=note,
                                calls=inverse, outcome="sent, not restored", replanned=replanned)
        self.deferred[a.id] = {"status": "rolled_back", "reverted": "verified" if ok else "unverified",
                               "note": ("replanned; " if replanned else "") + outcome
                               + (" (overwrote a drifted resource, --force)" if forced else "")}
        return Step(a.seq, a.id, q, "revert", reason, calls=inverse, outcome=outcome, verified=ok,
                    replanned=replanned, expected=step_expected, actual=step_actual, after=after)

    def _deferred(self, a: ActionRow, key: str | None, before: dict | None, inverse: list, verify: dict,
                  by: str, replanned: bool) -> Step:
        """A preview's step whose resource the newer planned step ``by`` changes first into a
        state the journal cannot predict: planned (its inverse would be sent if the real undo
        finds no drift), with the drift check left to the real undo (``check: deferred``). It
        counts as verified when its inverse will be checked by a re-read (a captured prior)."""
        self.plan(a, key, before, inverse, verify)
        note = self.left_note(a)
        return Step(a.seq, a.id, a.qualified, "revert", f"checked only during the real undo: step {by} of this plan "
                    "changes what this step reads first, and a dry run cannot know the state it leaves there; "
                    "the inverse would be applied if the resource has not drifted", calls=inverse, outcome="would call",
                    verified=before is not None, replanned=replanned, check="deferred",
                    detail=note.strip() + ("; the real undo will find it drifted" if note else "") or None)

    def left_after(self, a: ActionRow) -> list[ActionRow]:
        """Newer actions of ``a``'s session, still in effect, that touched what ``a`` touched
        (:func:`later_writes`) and that this walk leaves as they are (not reverted, not planned):
        what makes ``a``'s resource differ from the state its run left, which is no one else's
        edit (new user round 8: an approved, irreversible ``add_observations`` on an entity a
        ``create_entities`` of the same session made)."""
        gone = {s.action for s in self.report.steps if s.kind in ("revert", "overwrite", "already-reverted")}
        runs = Target("run", a.run_id, list(self.runs.values()))
        return [b for b in later_writes(self.j, runs, a) if b.id not in gone]

    def left_note(self, a: ActionRow) -> str:
        """A detail line naming :meth:`left_after`'s actions, or ``""``."""
        left = self.left_after(a)
        if not left:
            return ""
        names = ", ".join(f"{self.label(b)} {b.qualified}" + (f" (approved by {b.decided_by})" if b.decided_by else "")
                          for b in left)
        did = "that call" if len(left) == 1 else "those calls"
        return (f"\n  changed after it by this session: {names}, which this undo leaves in place; overwriting it "
                f"(--force --yes) also removes what {did} did")

    def foreign_after(self, a: ActionRow) -> list[tuple[ActionRow, RunRow | None]]:
        """:meth:`OtherRuns.after` for this walk."""
        return self.others.after(a)

    def _applied_since(self, a: ActionRow) -> str:
        """When ``a`` was last applied: its record, or the newest redo of its run since (a
        redo re-sends it). Not its row's last change, which a halt on it also moves (a new
        user's round 20, #1: after a drift halt, `--replan` put back an undone change)."""
        if a.run_id not in self._redone_at:
            try:
                redos = [u.started_at for u in self.j.undos(a.run_id) if u.kind == "redo"]
            except JournalError:
                redos = []
            self._redone_at[a.run_id] = max(redos, default="")
        return max(a.created_at or "", self._redone_at[a.run_id])

    def undone_under(self, a: ActionRow) -> ActionRow | None:
        """An older write to ``a``'s resource, now rolled back, whose post-state is the state
        ``a`` replaced (and not the state before it, so it changed something): an undo reverted
        it while ``a`` was in effect. Reverting ``a`` would bring it back. One query per walk
        (the post-states the walk's captured states name)."""
        if a.prior != "captured" or not a.snapshot_ref:
            return None
        if self._undone is None:
            self._replaced = {x.id: ref for x in self.j.actions_of(self.runs)
                              if x.prior == "captured" and x.snapshot_ref and x.cls != "readonly"
                              for ref in [self.j.payload_ref(prior_state(x, self.load(x.snapshot_ref)))] if ref}
            self._undone = {}
            for b in self.j.reverted_leaving(self._replaced.values()):
                self._undone.setdefault(b.post_ref or "", []).append(b)
        replaced = self._replaced.get(a.id)
        # reverted while ``a`` was in effect as it is now (after ``a``'s row last changed: its
        # record, or a redo that applied it again): one reverted before left the state ``a``
        # replaced to someone else (adversarial review 21, F2: undo B, undo A, a person types A's
        # value again, redo B, undo B halted on A)
        since = self._applied_since(a)
        found = [b for b in self._undone.get(replaced or "", []) if (b.gseq or 0) < (a.gseq or 0) and b.id != a.id
                 and b.snapshot_ref != a.snapshot_ref and (b.updated_at or "") > since]
        if not found:
            return None
        run = self.runs.get(a.run_id)
        if run is None:
            return None
        same = same_resource(self.j, run, a)
        for b in reversed(found):  # the newest such call
            b_run = self.runs.get(b.run_id)
            if b_run is None:
                try:
                    b_run = self.j.find_run(b.run_id)
                except UsageError:
                    continue
            if same(b_run, b):
                return b
        return None

    def elsewhere_note(self, a: ActionRow) -> str:
        """A detail line naming what other runs wrote to ``a``'s resource after it
        (:meth:`foreign_after`) that :meth:`left_note` does not name already, or ``""``."""
        try:
            named = {b.id for b in self.left_after(a)}
            found = [(b, r) for b, r in self.foreign_after(a) if b.id not in named]
        except JournalError:
            return ""
        if not found:
            return ""
        names = OtherRuns.names(found)
        did = "that call" if len(found) == 1 else "those calls"
        return (f"\n  changed after it by {self.others.who(found)}: {names}; overwriting it (--force --yes) also removes "
                f"what {did} did")

    def reverted_note(self, a: ActionRow, expected: Any = None, read: dict | None = None) -> str:
        """:func:`reverted_note` since ``a`` was last applied (``expected``: the state its step expected)."""
        return reverted_note(self.j, self.runs, a, self._applied_since(a), expected=expected, read=read)

    def _unknown_read(self, a: ActionRow, verify: dict, before: dict | None) -> Step:
        """Settle an ``unknown`` action whose post-state cannot be computed (the policy declares
        none) by a read: found as it was before the call, nothing is left to undo (the call did
        not apply, or was put back); anything else halts, both states shown, for a person."""
        q, preview = a.qualified, self.preview
        planned = self.planned_state(a, verify, self.key(a, verify)) if preview else None
        if planned is not None and planned[0] == "deferred":
            return Step(a.seq, a.id, q, "halt", unknown_halt(a), check="deferred", detail=(
                f"the real undo reads the resource to settle it, and step {planned[2]} of this plan changes it "
                "first, so a dry run cannot tell what that read will show"))
        if planned is not None:
            obs, check = planned[1], "simulated"
        else:
            current, check = self.read(a, verify), "now" if preview else None
            obs = current.observation()
            if obs is None:
                if self.stopped():
                    return Step(a.seq, a.id, q, "halt", _STOPPED)
                if self.opts.force:
                    return Step(a.seq, a.id, q, "permanent", UNKNOWN_FORCED, detail=f"a read to settle it failed: {current.reason}")
                return Step(a.seq, a.id, q, "halt", unknown_halt(a), check=check,
                            detail=f"a read to settle it failed: {current.reason}\n{UNKNOWN_WAY}")
        if before is not None and _same(obs, before, verify):
            if not preview:
                self.j.set_action_status(a.id, "rolled_back", expect=("unknown",), reverted="found",
                                         note=f"{UNKNOWN_FOUND_BEFORE}: {a.note or 'outcome unknown'}")
            return Step(a.seq, a.id, q, "already-reverted", UNKNOWN_FOUND_BEFORE, verified=True, check=check)
        if self.opts.force:
            return Step(a.seq, a.id, q, "permanent", UNKNOWN_FORCED, detail=_unknown_detail(a, before, obs, None))
        return Step(a.seq, a.id, q, "halt", unknown_halt(a), detail=_unknown_detail(a, before, obs, None),
                    expected=before, actual=obs, check=check)

    def _unknown_after(self, a: ActionRow, newer: ActionRow) -> Step:
        """An unknown outcome whose resource a newer call still in effect changed since: the
        resource may hold what that call left, so no read can settle this one (new user round
        10: another session's redo left the very state this call would have, the read said
        "it applied", and the undo removed that session's write)."""
        why = (f"outcome unknown, and a newer call still in effect changed the same resource since "
               f"({newer.run_id[:8]}:{newer.seq} {newer.qualified}), so a read cannot tell whether this call applied")
        detail = (f"{a.note or 'outcome unknown'}\nUndo that newer call first (`synartesis undo {newer.run_id[:8]}`), "
                  f"or check the resource by hand; {UNKNOWN_WAY[len('Check the resource by hand; '):]}")
        if self.opts.force:
            return Step(a.seq, a.id, a.qualified, "permanent", UNKNOWN_FORCED, detail=detail)
        return Step(a.seq, a.id, a.qualified, "halt", why, detail=detail)

    def stopped(self) -> bool:
        """Was this undo stopped (its servers killed) from another thread?"""
        return self.opts.stop is not None and self.opts.stop.is_set()

    def _inverse_failed(self, a: ActionRow, k: int, why: str) -> Step:
        note = f"rollback halted at sequence {a.seq}: {why}"
        if k > 0:
            note += f" (after {k} of its calls were applied; the resource is between states)"
            self.j.set_action_status(a.id, "rolling_back", note=note)
        else:
            self.j.set_action_status(a.id, "applied", note=note)
        return Step(a.seq, a.id, a.qualified, "halt", "the inverse failed", detail=note)


_ERROR_UNKNOWN = "outcome unknown: the server reported an error"  # how mark_error_after_write's note begins


def _unknown_why(a: ActionRow) -> str:
    """Why ``a``'s outcome is unknown, as a halt's headline begins: no answer recorded, or an
    error answer no read could settle (new user round 10: the first text was given for both)."""
    if (a.note or "").startswith(_ERROR_UNKNOWN):
        return "outcome unknown: the server answered with an error, and an error is no proof that nothing happened"
    return "outcome unknown: the call was sent but no answer was recorded (the proxy or server stopped mid-call, or it timed out)"


def unknown_halt(a: ActionRow) -> str:
    """The headline of a halt on ``a``'s unknown outcome that a read did not settle."""
    return _unknown_why(a) + ", and a read of the resource does not settle whether it applied"
UNKNOWN_NEITHER = ("outcome unknown, and the resource is neither as it was before the call nor as the call "
                   "would have left it")
UNKNOWN_FOUND_BEFORE = "outcome unknown, but the resource is as it was before the call: nothing to undo"
UNKNOWN_FORCED = ("outcome unknown, and a read does not settle it; stepped over because of --force (whatever it "
                  "did is left in place)")
UNKNOWN_WAY = ("Check the resource by hand; `undo --force` then steps over this action (leaving whatever it did) "
               "and undoes the older ones.")


def _newer_on_resource(j: Journal, a: ActionRow, verify: dict | None, runs: dict[str, RunRow],
                       gone: set[str] | frozenset[str] = frozenset()) -> ActionRow | None:
    """The newest write of the whole journal (any run, any session), newer than ``a`` and still
    in effect, whose read reads what ``a``'s does (:func:`resource_key`); None if there is none.
    ``gone``: actions the caller's walk has reverted (or plans to), which no longer count.
    Asked only for an ``unknown`` outcome about to be settled by a read, so it may scan."""
    if verify is None:
        return None
    every = {r.id: r for r in j.list_runs()}
    key = resource_key(runs.get(a.run_id) or every.get(a.run_id), verify)
    if key is None:
        return None
    found = None
    for b in j.actions_of(every):
        if ((b.gseq or 0) > (a.gseq or 0) and b.id != a.id and b.id not in gone and b.cls != "readonly" and b.status in IN_EFFECT
                and b.verify_ref and (found is None or (b.gseq or 0) > (found.gseq or 0))
                and resource_key(every.get(b.run_id), j.get_json(b.verify_ref)) == key):
            found = b
    return found


def _unknown_plan(j: Journal, a: ActionRow, policy: Policy | None, snapshot: Any) -> tuple[list | None, dict | None]:
    """(inverse, post-state) of an ``unknown`` action, rebuilt from the rule that recorded it
    when that rule is still the policy's rule for the call and declares ``post_state``: what
    the resource holds if the call applied. (None, None) when either cannot be known (no
    policy, another rule now, no ``post_state``, or a template that needs the call's result,
    which an unknown outcome never recorded)."""
    if policy is None or a.rule is None:
        return None, None
    args = j.get_json(a.args_ref)
    rule = policy.rule_for(a.server, a.tool, args)
    declared = getattr(rule, "post_state", None)
    if not rule.matched or rule.match != a.rule or declared is None or not rule.inverse:
        return None, None
    scope: dict[str, Any] = {"args": args}
    if a.prior == "captured":
        scope["snapshot"] = snapshot
    try:
        inverse = [resolve_call(c, scope) for c in rule.inverse]
        post = {"present": True, "value": resolve_template(declared, scope)}
    except RefError:
        return None, None
    return inverse, post


def _unknown_detail(a: ActionRow, before: dict | None, now: dict, after: dict | None) -> str:
    lines = [a.note or "outcome unknown",
             f"  before the call:  {canonical(before) if before is not None else 'not captured'}"]
    if after is not None:
        lines.append(f"  if it applied:    {canonical(after)}")
    lines += [f"  now:              {canonical(now)}", UNKNOWN_WAY]
    return "\n".join(lines)


def saga_text(report: UndoReport, error: str) -> str:
    """What the agent is told when saga mode rolled its run back after a failed call
    (appended to the server's error result; issue 10 item 8). Snapshot-tested."""
    undone = [s for s in report.steps if s.kind in ("revert", "already-reverted") and s.reason != "already rolled back"]
    left = [s for s in report.steps if s.kind == "permanent"]
    where = report.target_name or "this connection"
    if not undone and not left and not report.halted:
        return (f"Synartesis saga mode: this call failed ({error}). There was nothing earlier in {where} to roll "
                "back. Tell the user what happened before you go on.")
    lines = [f"Synartesis saga mode: this call failed ({error}). Before answering, synartesis undid the earlier "
             f"changes made through this connection ({where}), newest first, with the same checks as `synartesis undo`."]
    shown = {"restored (verified)": "restored, verified", "sent (unverified)": "sent, not verified"}
    if undone:
        lines.append("Rolled back: " + "; ".join(f"#{s.seq} {s.tool} ({shown.get(s.outcome or '', 'already back')})"
                                                for s in undone) + ".")
    if left:
        lines.append("Left as they are (they cannot be undone): " + "; ".join(f"#{s.seq} {s.tool}" for s in left) + ".")
    if report.halted:
        h = report.halted
        lines.append(f"The rollback stopped at #{h.seq} {h.tool} ({h.reason}): that change and the ones before it are "
                     "still in place; a person must look (`synartesis undo` shows why).")
    lines.append("Nothing was sent again. Tell the user what happened before you go on.")
    return "\n".join(lines)
