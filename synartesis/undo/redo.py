"""Redo (issue 10 item 5): re-apply what the last undo of a run or session reverted.

The last undo whose reverted actions are still reverted is redone, oldest action first: the
original call, as the journal recorded it, sent again. Before each call the resource is read
and compared with the state the undo left (the captured snapshot, or what the undo read after
its compensation): drift halts with both values and the three ways on, as undo does. After
it, the inverse is rebuilt from the new result (the current policy, like ``--replan``) and the
post-state read again, so ``undo`` after ``redo`` works again. Irreversible calls are never
re-sent: they are listed and left alone. A redo is recorded and chained like an undo
(``redo.begin`` / ``redo.step`` / ``redo.end``). Redo runs the calls with the same servers as
undo (:class:`~synartesis.undo.servers.SpawnedServers`).
"""

from __future__ import annotations

from typing import Any

from synartesis.canonical import canonical, same_state
from synartesis.errors import ConflictError
from synartesis.journal import ActionRow, Journal, RunRow, UndoRow, status_text
from synartesis.journal.attempts import REDO_SENT_NOTE
from synartesis.proxy.payload import error_text, is_error, payload
from synartesis.undo.engine import (IDEMPOTENCY_KEY, OtherRuns, Step, UndoOptions, UndoReport, finish, kept_status_of, later_writes, launch_cause,
                                    prior_state, replan_action, resource_key, reverted_note, take_steps)
from synartesis.undo.overlap import action_touches, shares, undo_touches
from synartesis.undo.servers import RequestFailed, ServerPool, SpawnedServers
from synartesis.undo.targets import Target, resolve_target

__all__ = ["redo", "redoable"]

_SENT = ("restored (verified)", "sent (unverified)")


def _attempts(j: Journal, run_ids: list[str] | None) -> list[tuple[list[UndoRow], set[str]]]:
    """Finished undo and saga attempts, newest first: (their rows, grouped; the actions of the
    abandoned attempts they took over). An undo or saga killed mid-way (its process gone, as
    a stale run is found: pid and start time) owns the reverts it claimed or made before it
    died: the next finished undo or saga on those runs finished that undo, and redo takes them
    over with it; with none after it, the abandoned one stands alone (adversarial review 11,
    F2: its newest write could not be redone). Only attempts on the same runs bound or take over
    an abandoned one (review 12: an undo of another run may start while it runs)."""
    rows = j.attempt_rows(run_ids)
    order: list[str] = []
    groups: dict[str, list[UndoRow]] = {}
    for u in rows:
        key = u.attempt or u.id
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(u)
    runs_of = {key: {u.run_id for u in g} for key, g in groups.items()}
    out: list[tuple[list[UndoRow], set[str]]] = []
    # abandoned attempts no later attempt on their runs has taken over yet: (runs, reverts, rows)
    waiting: list[tuple[set[str], set[str], list[UndoRow]]] = []
    for i, key in enumerate(order):
        g = groups[key]
        first = g[0]
        runs = runs_of[key]
        if first.kind not in ("undo", "saga") or first.status == "running":
            continue  # a redo between keeps them (what it redid is ``applied`` now, and left out)
        if first.status == "abandoned":
            after = next((groups[k][0] for k in order[i + 1:] if runs_of[k] & runs), None)
            waiting.append((runs, j.reverts_between(sorted(runs), first.started_at,
                                                    after.started_at if after is not None else None), g))
            continue
        taken: set[str] = set()
        for item in [w for w in waiting if w[0] & runs]:
            taken |= item[1]
            waiting.remove(item)
        if first.report_ref:
            out.append((g, taken))
    out.extend((g, owned) for _, owned, g in waiting if owned)
    return sorted(out, key=lambda group: group[0][0].started_at, reverse=True)


def redoable(j: Journal, run_ids: list[str] | None) -> tuple[list[UndoRow], dict, list[ActionRow]] | None:
    """The newest undo of these runs (None: all runs) whose reverted actions are still
    reverted: (its rows, its report, those actions oldest first); None when there is none.
    Actions a redo sent and died on (``pending``, or ``unknown`` once recorded) are among them:
    the redo halts there rather than say there is nothing to redo. So are the reverts of an
    abandoned undo it took over (:func:`_attempts`); one still ``rolling_back`` halts the redo."""
    for rows, owned in _attempts(j, run_ids):
        report = (j.get_json(rows[0].report_ref) if rows[0].report_ref else None) or {}
        sent = [s["action"] for s in report.get("steps", []) if s.get("kind") == "revert" and s.get("outcome") in _SENT]
        keep = set(run_ids) if run_ids is not None else None
        actions = []
        for aid in dict.fromkeys([*sent, *sorted(owned)]):
            try:
                a = j.get_action(aid)
            except Exception:  # pruned since
                continue
            ok = ("rolled_back", "pending", "unknown") + (("rolling_back",) if aid in owned else ())
            if a.status in ok and (keep is None or a.run_id in keep):
                actions.append(a)
        if actions:
            return rows, report, sorted(actions, key=lambda a: (a.gseq or 0, a.seq))
    return None


def _target_of(j: Journal, opts: UndoOptions) -> tuple[Target | None, Any]:
    if opts.run:
        t = resolve_target(j, opts.run)
        return t, redoable(j, t.run_ids)
    found = redoable(j, None)
    if found is None:
        return None, None
    scope = found[0][0].scope or {}
    ref = scope.get("session") or scope.get("run") or found[0][0].run_id
    t = resolve_target(j, ref)
    t.picked = f"the newest undo that is not redone yet ({found[0][0].started_at}, by {found[0][0].by})"
    return t, redoable(j, t.run_ids)


def redo(j: Journal, opts: UndoOptions, servers: ServerPool | None = None) -> UndoReport:
    """Redo what the last undo of ``opts.run`` reverted (default: the newest undo not redone).

    ``opts``: ``dry_run``, ``force``/``yes`` (past drift), ``by``, ``policy`` (to rebuild
    inverses from the new results), timeouts, ``entry_env``.

    Raises:
        UsageError: no such run or session.
        ConflictError: a live run (without ``force``), or another undo or redo of it running.
    """
    target, found = _target_of(j, opts)
    if target is None or found is None:
        name = target.name if target is not None else "this journal"
        return UndoReport(run=target.id if target else "", dry_run=opts.dry_run, status="nothing", kind="redo",
                          target=target.kind if target else "run", target_name=name,
                          message=f"nothing to redo in {name}: nothing an undo reverted there is still undone")
    rows, last, actions = found
    if target.live_runs and not opts.force:
        raise ConflictError(f"{target.name} is still active (an agent may still be writing through it); "
                            "stop the agent first, or add --force to see what a redo would do, then --force --yes to do it")
    preview = opts.dry_run or (opts.force and not opts.yes)
    report = UndoReport(run=target.id, dry_run=preview, status="partial", preview_force=opts.force and not opts.yes,
                        kind="redo", target=target.kind, target_name=target.name, picked=target.picked)
    left = [s for s in last.get("steps", []) if s.get("kind") == "permanent"]
    after = {s["action"]: s.get("after") for s in last.get("steps", []) if s.get("kind") == "revert"}
    settled = {s["action"] for s in last.get("steps", [])  # unknown outcomes the undo found applied by a read
               if s.get("kind") == "revert" and str(s.get("reason", "")).startswith("outcome unknown")}
    runs = {r.id: r for r in target.runs}
    pool = servers or SpawnedServers(runs, opts.policy, opts.entry_env, opts.stop)
    needed = {(a.run_id, a.server) for a in actions}
    needed |= {(a.run_id, v["server"]) for a in actions if (v := j.get_json(a.verify_ref))}
    attempt = None
    if not preview:
        attempt = j.begin_attempt([a.run_id for a in actions], opts.by, "redo", {target.kind: target.id})
        if attempt is None:
            raise ConflictError(f"another undo or redo of {target.name} is running; wait for it to finish")
        report.undo_id = attempt.id
    walk = _Redo(j, pool, opts, preview, report, after, attempt.id if attempt else "dry", runs)
    walk.settled = settled
    try:
        pool.start(needed)
        report.warnings.extend(pool.warnings)
        take_steps(j, attempt, actions, walk.one, report, stop=opts.stop)
        removed = _removed_by_overwrite(j, target, last) if left else {}
        lost: set[str] = set()  # runs with a left-in-place call whose effect stays removed
        for s in left:
            reason, detail = "the undo left it in place (it cannot be undone), so there is nothing to redo", None
            if s["action"] in removed:
                reason, detail, gone = _left_but_overwritten(j, report, removed[s["action"]])
                if gone:
                    lost.add(s.get("run") or target.id)
                    report.removed_left += 1
            report.steps.append(Step(s["seq"], s["action"], s["tool"], "left", reason, detail=detail,
                                     run=s.get("run"), gseq=s.get("gseq")))
        statuses: dict[str, str] = {}
        redone = {s.run for s in report.steps if s.kind in ("redo", "already-redone", "overwrite")}  # overwrite: a --force preview
        # what this redo sends again (a preview: would send) is not still undone after it
        sent_again = {s.action for s in report.steps if s.kind in ("redo", "already-redone", "overwrite")}
        for rid in sorted(redone):
            undone = [a for a in j.actions(rid) if a.status == "rolled_back" and a.cls != "readonly"
                      and not (preview and a.id in sent_again)]
            still = bool(undone)
            # a preview names them too, and ends as the real redo would (a new user's round 22, #1:
            # the dry run said "would end redone", the redo then ended partial)
            report.still_undone += [(f"{rid[:8]}:{a.seq}" if target.kind == "session" else str(a.seq))
                                    + f" {a.tool}" for a in undone]
            # partial too when the redo could not bring back what a left-in-place call did:
            # the run is not as the agent left it (it ended "redone" before, stop 20's leftover)
            statuses[rid] = "partial" if still or report.halted or rid in lost else "redone"
            if rid in runs and runs[rid].live:  # --force on a live run: left open, as undo leaves it
                report.open_runs.append(rid)
            elif not preview:
                j.set_run_status(rid, statuses[rid])
        # the target's other runs: one undone on its own before the undo this redo takes back
        # stays undone, and the target with it (a new user's round 22, #2: the session redo said
        # redone while `list` showed it partial)
        for rid in sorted(set(runs) - redone):
            undone = [a for a in j.actions(rid) if a.status == "rolled_back" and a.cls != "readonly"]
            report.still_undone += [(f"{rid[:8]}:{a.seq}" if target.kind == "session" else str(a.seq))
                                    + f" {a.tool}" for a in undone]
            if undone and statuses:
                report.earlier_runs_undone = True
        report.runs = statuses
        kept = (kept_status_of(target.kind, runs, report.halted.run, None if preview else j)
                if not statuses and report.halted else None)
        if kept is not None:
            # a halt before anything is redone leaves the status as it is: a preview says so too,
            # as undo's does (a new user's round 7: the dry run said it would end partial)
            report.stays = status_text(*kept)
        report.status = ("partial" if report.halted or "partial" in statuses.values() or report.earlier_runs_undone
                         else "redone" if statuses else "nothing")
        if kept is not None:
            report.status = kept[0]  # what it keeps, as undo's halt reports it
        # sent again and not verified (not read back, or read back with nothing of the first
        # call's to compare with): said in the RESULT line (``redone (unverified: N)``), as each
        # such step is tagged (new user round 10: a tagged step the RESULT line did not count);
        # a preview counts the calls whose rule declares no read (the real redo cannot read them back)
        report.unverified = sum(1 for s in report.steps if s.kind == "redo" and (
            not s.verified if not preview else s.reason.startswith("no read declared")))
        if kept is not None:
            report.unverified = kept[1]
    finally:
        if servers is None:
            pool.close()
        if attempt is not None:
            finish(j, attempt, report)
    return report


def _removed_by_overwrite(j: Journal, target: Target, last: dict) -> dict[str, dict]:
    """Actions the undo ``last`` left in place whose effect its ``--force --yes`` removed: an
    older step of the same session it overwrote touched what they touched (as the halt and the
    dry run warned). By left action id: that overwritten step (as the report holds it)."""
    out: dict[str, dict] = {}
    for s in last.get("steps", []):
        if s.get("kind") != "revert" or s.get("actual") is None or not str(s.get("reason", "")).startswith("drifted"):
            continue
        try:
            a = j.get_action(s["action"])
        except Exception:  # pruned since
            continue
        for b in later_writes(j, target, a):
            out.setdefault(b.id, s)
    return out


def _left_but_overwritten(j: Journal, report: UndoReport, over: dict) -> tuple[str, str, bool]:
    """(reason, detail, stays removed) of a left-in-place action whose effect the undo's
    overwrite of the older step ``over`` removed: whether this redo's re-sending of that step
    put the state the run left back (its read equals what the overwrite found) or not, and why.
    The flag is True when what the action did is known to stay removed (or, in a dry run, will)."""
    name = (f"{over['run'][:8]}:{over['seq']}" if report.target == "session" and over.get("run") else str(over["seq"]))
    reason = (f"the undo left it in place (it cannot be undone), but its --force --yes overwrite of step {name} "
              "removed what it did")
    redone = next((s for s in report.steps if s.action == over["action"] and s.kind in ("redo", "already-redone")), None)
    if redone is None:
        return reason, f"step {name} was not redone (see above), so what this call did stays removed", True
    never = "this call is never re-sent (redo repeats only what an undo reverted)"
    if redone.kind == "redo" and redone.outcome == "would call":
        try:  # a dry run: the state the first call of that step left is what the real redo checks for
            first = j.get_json(j.get_action(over["action"]).post_ref)
        except Exception:  # pruned since
            first = None
        if first is None:
            return reason, (f"the redo re-sends step {name} as the run first sent it; {never}, so unless that brings "
                            "back what it did, it stays removed"), False
        if canonical(first) == canonical(over["actual"]):
            return reason, (f"the redo re-sends step {name}, which left the resource as the overwrite found it, so "
                            "what this call did comes back too"), False
        return reason, (f"the redo re-sends step {name}, which puts back only what that call left; {never}, so what "
                        f"it did stays removed\n  the overwrite found: {canonical(over['actual'])}\n  step {name} left:"
                        f"{' ' * max(1, 10 - len(name))}{canonical(first)}"), True
    now = redone.after if redone.kind == "redo" else None
    if now is not None and canonical(now) == canonical(over["actual"]):
        return reason, (f"redoing step {name} put the resource back as the run left it (its read shows what the "
                        "overwrite found), so what this call did is back too"), False
    shown = f"\n  the overwrite found: {canonical(over['actual'])}" + (f"\n  now:                 {canonical(now)}"
                                                                       if now is not None else "")
    return reason, (f"redoing step {name} put back only what that call left; {never}, so what it did stays removed: "
                    "do it again by hand if it is still wanted" + shown), True


class _Redo:
    def __init__(self, j: Journal, pool: ServerPool, opts: UndoOptions, preview: bool, report: UndoReport,
                 after: dict[str, Any], attempt: str, runs: dict[str, RunRow]) -> None:
        self.j, self.pool, self.opts, self.preview, self.report, self.after = j, pool, opts, preview, report, after
        self.attempt, self.runs = attempt, runs
        self.settled: set[str] = set()  # actions whose unknown outcome the undo settled by a read
        self.failed = ""  # why the last read failed
        # planned redos, in the order the real redo sends them (oldest first): the state each
        # leaves its read (the post-state the first call left) and what each touches
        self.simulated: dict[str, tuple[Any, str, tuple[int, int]]] = {}  # key → (state, step, order)
        self.footprints: list[tuple[set, str | None, str, tuple[int, int]]] = []  # touch, key, step, order
        self.others = OtherRuns(j, runs)  # other sessions' later writes, which a redo would overwrite

    def label(self, a: ActionRow) -> str:
        return f"{a.run_id[:8]}:{a.seq}" if self.report.target == "session" else str(a.seq)

    def planned(self, a: ActionRow, verify: dict, key: str | None) -> tuple[str, Any, str] | None:
        """In a preview, what the real redo will see when it reaches ``a``, when a planned redo
        that runs before it (an older action: redo runs oldest first) changes ``a``'s resource:
        ``("simulated", state, label)`` when the last such redo has the very same read and the
        journal holds the state that call left, else ``("deferred", None, label)`` (a redo with
        no read or another read whose identifiers meet this read's, such as a ``move_file``
        onto this path or memory's ``create_entities`` re-sent before a ``delete_entities`` of
        one of them: the state it leaves here is not known). None: no planned redo touches it,
        so the world as it is now is what the real redo will read."""
        mine = undo_touches(self.runs.get(a.run_id), verify, None)
        here = (a.gseq or 0, a.seq)
        last: tuple[tuple[int, int], str, Any, str] | None = None  # (order, how, state, label)
        same = self.simulated.get(key) if key is not None else None
        if same is not None and same[2] < here:
            last = (same[2], "simulated" if same[0] is not None else "deferred", same[0], same[1])
        for touch, their_key, label, order in self.footprints:
            if their_key != key and order < here and (last is None or order > last[0]) and shares(touch, mine):
                last = (order, "deferred", None, label)
        return None if last is None else last[1:]

    def read(self, a: ActionRow, read: dict) -> dict | None:
        out = self.pool.read(a.run_id, read, timeout=self.opts.read_timeout, max_bytes=self.opts.max_snapshot_bytes)
        self.failed = out.reason if out.kind == "failed" else ""
        return out.observation()

    def one(self, a: ActionRow) -> Step:
        j, opts, q = self.j, self.opts, a.qualified
        if a.cls == "irreversible":
            return Step(a.seq, a.id, q, "left", "irreversible calls are never re-sent")
        if a.status == "rolling_back":  # an abandoned undo's claim no undo has settled yet
            return Step(a.seq, a.id, q, "halt", "an undo of it was interrupted while reverting this call (its "
                        "process is gone), so whether its inverse applied is not settled yet",
                        detail=(a.note or "") + "\nRun `synartesis undo` first: it reads the resource and finishes "
                        "that undo; `synartesis redo` then redoes all of it.")
        if a.status != "rolled_back":  # pending or unknown: an earlier redo sent it and died
            return Step(a.seq, a.id, q, "halt", "outcome unknown: an earlier redo sent this call and ended before "
                        "its answer was recorded, so whether it applied cannot be determined",
                        detail=(a.note or "") + "\nCheck the resource by hand; it is never sent again by redo, and "
                        "`undo --force` steps over it (leaving whatever it did).")
        args = j.get_json(a.args_ref)
        call = [{"server": a.server, "tool": a.tool, "args": args}]
        verify, post = j.get_json(a.verify_ref), j.get_json(a.post_ref)
        expected = prior_state(a, j.get_json(a.snapshot_ref) if a.prior == "captured" else None)
        if expected is None:
            expected = self.after.get(a.id)
        verified, forced = False, False
        step_expected = step_actual = None
        check: str | None = None  # how a preview checked for drift (Step.check)
        if verify is None:
            reason = "no read declared, so drift could not be ruled out"
        elif expected is None:
            reason = "the undo left no record of the state it produced, so drift could not be ruled out"
        else:
            key = resource_key(self.runs.get(a.run_id), verify)
            # a preview sends nothing: a resource an earlier planned redo rewrote with the very
            # same read is taken to be as that call left it, not as it is now (issue 10
            # follow-up, finding 1); one it changed any other way is checked by the real redo
            planned = self.planned(a, verify, key) if self.preview else None
            by = planned[2] if planned is not None else None
            check = "now" if self.preview else None
            if planned is not None and planned[0] == "deferred":
                self._plan(a, args, verify, post)
                return Step(a.seq, a.id, q, "redo", f"checked only during the real redo: step {by} of this plan "
                            "changes what this step reads first, and a dry run cannot know the state it leaves "
                            "there; the call would be sent again if the resource has not drifted",
                            calls=call, outcome="would call", verified=False, check="deferred")
            if planned is not None:
                now, check = planned[1], "simulated"
            else:
                now = self.read(a, verify)
            if now is None:
                failed = f"the read {verify['server']}.{verify['tool']} failed" + (f": {self.failed}" if self.failed else "")
                cause, why = launch_cause(self.pool, a.run_id, verify["server"], failed)
                return Step(a.seq, a.id, q, "halt", "could not read current state to check for drift",
                            detail=why, cause=cause)
            if same_state(now, expected, verify):
                verified, reason = True, ("state is as the undo left it; " if by is None else
                                          f"checked against the state step {by} leaves (a dry run sends nothing); ") + (
                    "the call would be sent again" if self.preview else "sending the call again")
            elif post is not None and same_state(now, post, verify) and (opts.force or not self.others.after(a)):
                # as this call left it, and no other run wrote it since: redone already (one
                # that wrote it back to this state falls through to the halt below: adversarial
                # review 20, F8, this said "redone" and the other run's undo then wiped it)
                if not self.preview:
                    j.set_action_status(a.id, "applied", note="found already as this call left it (redo)",
                                        expect=("rolled_back",), reverted=None)
                return Step(a.seq, a.id, q, "already-redone", "the resource is already as this call left it",
                            verified=True, check=check)
            elif post is not None and same_state(now, post, verify):
                pass  # another run's write-back: the check below halts on it
            else:
                detail = (f"drift at sequence {a.seq}: the resource is not in the state the undo left it in.\n"
                          f"  expected: {canonical(expected)}\n  actual:   {canonical(now)}"
                          + reverted_note(self.j, self.runs, a, a.updated_at or "", others_only=True, expected=expected,
                                          read=verify))
                if not opts.force:
                    return Step(a.seq, a.id, q, "halt", "drift detected", expected=expected, actual=now, check=check,
                                detail=launch_cause(self.pool, a.run_id, verify["server"], detail)[1])
                if self.preview:
                    return Step(a.seq, a.id, q, "overwrite", "drifted; --force --yes would send the call anyway",
                                detail=detail, calls=call, expected=expected, actual=now, check=check)
                forced, step_expected, step_actual = True, expected, now
                reason = "drifted, sending the call anyway as --force --yes asked"
        if verify is not None and not forced:
            # the state may match by coincidence (another session wrote the undo's state back):
            # re-sending would overwrite that session's write unnamed (adversarial review 18, F2)
            foreign = self.others.after(a)
            if foreign and not opts.force:
                return Step(a.seq, a.id, q, "halt", f"{self.others.who(foreign)} wrote this resource after it, and that write is "
                            "still in effect", check=check, detail=(
                                f"written after it by {self.others.who(foreign)}: {OtherRuns.names(foreign)}. Redoing this "
                                f"call would silently overwrite that. {self.others.undo_first(foreign)}, or `--force` "
                                "to see what this redo would overwrite, then `--force --yes` to overwrite it."))
            if foreign and self.preview:
                return Step(a.seq, a.id, q, "overwrite", f"written since by {self.others.who(foreign)} "
                            f"({OtherRuns.names(foreign)}); --force --yes would send the call anyway, "
                            "overwriting what those calls did", calls=call, check=check)
            if foreign:
                forced, reason = True, f"written since by {self.others.who(foreign)}, sending the call anyway as --force --yes asked"
        if self.preview:
            self._plan(a, args, verify, post)
            return Step(a.seq, a.id, q, "redo", reason, calls=call, outcome="would call", verified=verified,
                        check=check)
        if not j.set_action_status(a.id, "pending", note=REDO_SENT_NOTE + opts.by, expect=("rolled_back",)):
            return Step(a.seq, a.id, q, "halt", "another redo is already working on this action")
        key = f"{a.run_id}:{a.seq}:redo:{self.attempt[:8]}"
        try:
            result = self.pool.call(a.run_id, a.server, a.tool, args, timeout=opts.call_timeout,
                                          meta={IDEMPOTENCY_KEY: key})
        except RequestFailed as exc:
            if exc.maybe_applied:
                self.report.sent += 1
                note = f"redo halted at sequence {a.seq}: the call's outcome is unknown: {exc.message}"
                j.set_action_status(a.id, "unknown", note=note, expect=("pending",))
                return Step(a.seq, a.id, q, "halt", "the redo's outcome is unknown", detail=note, calls=call)
            j.set_action_status(a.id, "rolled_back", note=f"redo not sent: {exc.message}", expect=("pending",))
            return Step(a.seq, a.id, q, "halt", "the redo was not sent", detail=exc.message, calls=call,
                        cause=launch_cause(self.pool, a.run_id, a.server, "")[0])
        self.report.sent += 1
        if is_error(result):
            again = self.read(a, verify) if verify is not None else None
            if expected is not None and again is not None and same_state(again, expected, verify):
                j.set_action_status(a.id, "rolled_back", note=f"redo refused, nothing changed: {error_text(result)}",
                                    expect=("pending",))
                return Step(a.seq, a.id, q, "halt", "the server refused the redo (the resource is unchanged)",
                            detail=error_text(result), calls=call)
            note = f"redo halted at sequence {a.seq}: the server reported an error and the resource may have changed: {error_text(result)}"
            j.set_action_status(a.id, "unknown", note=note, expect=("pending",))
            return Step(a.seq, a.id, q, "halt", "the server refused the redo, and whether it changed anything is unknown",
                        detail=note, calls=call)
        inverse, new_verify, note = self._rebuild(a, result, verify)
        new_post = self.read(a, new_verify) if new_verify is not None else None
        if new_post is None:
            outcome = "sent (unverified)"
        elif post is None:
            # nothing to compare with: say what is known (adversarial review 10: a settled unknown
            # outcome has no read of what the first call left; undo inferred it from post_state)
            outcome = ("re-applied (read back; the first call's outcome was unknown until an undo settled it by a "
                       "read, so no read of what it left is on record to compare with)" if a.id in self.settled else
                       "re-applied (read back; no read of what the first call left is on record to compare with)")
        elif same_state(new_post, post, new_verify):
            outcome = "re-applied (verified)"
        else:
            outcome = "re-applied (the resource differs from what the first call left)"
        j.reapply(a.id, result=result, inverse=inverse, verify=new_verify, post=new_post,
                  note=f"redone by {opts.by}: {outcome}" + (f"; {note}" if note else "")
                  + (" (sent over a drifted resource, --force)" if forced else ""))
        return Step(a.seq, a.id, q, "redo", reason, calls=call, outcome=outcome, verified=outcome.endswith("(verified)"),
                    expected=step_expected, actual=step_actual, detail=note, after=new_post)

    def _plan(self, a: ActionRow, args: Any, verify: dict | None, post: Any) -> None:
        """A preview planned to re-send ``a``: its resource is then as the call left it, and
        what it touches (its arguments and read) may be another step's resource."""
        key, order = resource_key(self.runs.get(a.run_id), verify), (a.gseq or 0, a.seq)
        if key is not None:
            self.simulated[key] = (post, self.label(a), order)
        self.footprints.append((action_touches(self.runs.get(a.run_id), a.server, args, verify, None), key,
                                self.label(a), order))

    def _rebuild(self, a: ActionRow, result: Any, verify: dict | None) -> tuple[list | None, dict | None, str | None]:
        """(inverse, read, note) for the re-applied call: from the current policy and the new
        result; without a policy the stored ones, if the server answered as the first time."""
        j = self.j
        if self.opts.policy is not None:
            inverse, new_verify, err = replan_action(j, a, self.opts.policy, result=result)
            if err is None:
                return inverse, new_verify or verify, None
            return None, verify, f"the inverse could not be rebuilt, so this redo cannot be undone: {err}"
        if canonical(payload(result)) == canonical(payload(j.get_json(a.result_ref))):
            return j.get_json(a.inverse_ref), verify, None
        return None, verify, ("the server answered differently than the first time and there is no policy to rebuild "
                              "the inverse from, so this redo cannot be undone")
