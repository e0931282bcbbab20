"""The undo engine (reference-spec §5, DESIGN §6, with reference-spec §10's defects fixed).

Walks a run's actions newest first (LIFO by seq) and, per action:
- skips readonly and never-applied actions (readonly whatever its status: defect 6);
- halts on ``unknown``/``pending`` (outcome unknown), on drift, on a failed re-read, and on an
  inverse whose outcome is unknown; a halt writes nothing more and leaves older actions alone;
- counts "already in the state the inverse would produce" as reverted;
- steps over a permanent action (no usable inverse): reported, left in place, run ``partial``;
- sends the stored inverse (a list runs in order as one step) with an idempotency key, then
  re-reads where a read exists: ``restored (verified)`` or ``sent (unverified)`` — never a
  claim that was not checked.

Halts found from statuses alone are not written to the journal, so a repeated undo halts at
the same place with the same words. Every real attempt is recorded (who, when, each step).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from synartesis.canonical import canonical
from synartesis.errors import ConflictError, UpstreamError, UsageError
from synartesis.journal import ActionRow, Journal, RunRow
from synartesis.policy.model import Policy
from synartesis.policy.refs import RefError
from synartesis.proxy.payload import error_text, is_error, payload
from synartesis.proxy.pipeline import ReadOutcome, resolve_call, run_read
from synartesis.proxy.upstream import RequestFailed, Upstream
from synartesis.undo.launch import launch_specs

__all__ = ["UndoOptions", "UndoReport", "Step", "undo_run", "live_check", "LiveReport", "LiveItem",
           "IDEMPOTENCY_KEY"]

IDEMPOTENCY_KEY = "dev.synartesis/idempotency-key"
NEVER_APPLIED = {"failed": "never applied (failed)", "denied": "never applied (denied)",
                 "gated": "never applied (awaiting approval)", "approved": "never applied (approved, never retried)"}


@dataclass
class UndoOptions:
    """What to undo and how.

    Attributes:
        run: run id or prefix; None = the newest run that is not active.
        to: lowest seq to undo (``--to``); None = all.
        dry_run: plan only: reads current state, sends nothing, writes nothing.
        replan: rebuild inverses and reads from ``policy`` using the captured state.
        force: allow an active run; with ``yes`` overwrite drifted resources, without it
            list every resource it would overwrite (with both values) and stop.
        by: who is undoing (recorded).
    """

    run: str | None = None
    to: int | None = None
    dry_run: bool = False
    replan: bool = False
    force: bool = False
    yes: bool = False
    by: str = "unknown"
    policy: Policy | None = None
    read_timeout: float = 30.0
    call_timeout: float = 60.0
    max_snapshot_bytes: int = 64 * 1024 * 1024
    entry_env: Any = None  # reads a client entry's env (see launch.launch_specs)


@dataclass
class Step:
    """One action's outcome in an undo.

    ``kind``: ``revert``, ``already-reverted``, ``skip``, ``permanent``, ``kept``, ``halt``,
    ``overwrite`` (``--force`` preview). ``outcome`` for a revert: ``restored (verified)``,
    ``sent (unverified)`` or ``would call`` (dry run).
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


@dataclass
class UndoReport:
    run: str
    dry_run: bool
    status: str
    steps: list[Step] = field(default_factory=list)
    halted: Step | None = None
    warnings: list[str] = field(default_factory=list)
    preview_force: bool = False
    undo_id: str | None = None

    @property
    def changed(self) -> int:
        """How many actions this attempt put back (inverses sent, or found already reverted)."""
        if self.dry_run:
            return 0
        return sum(1 for s in self.steps if (s.kind == "revert" and s.outcome != "would call")
                   or (s.kind == "already-reverted" and s.reason != "already rolled back"))

    @property
    def left_in_place(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "permanent"]

    @property
    def overwrites(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "overwrite"]

    def as_json(self) -> dict:
        return {"run": self.run, "dryRun": self.dry_run, "status": self.status,
                "halted": asdict(self.halted) if self.halted else None,
                "steps": [asdict(s) for s in self.steps], "warnings": self.warnings,
                "forcePreview": self.preview_force, "undo": self.undo_id}


class _Servers:
    """The servers an undo talks to, started on first use from the run's launch lines."""

    def __init__(self, run: RunRow, policy: Policy | None, entry_env: Any = None) -> None:
        self.run = run
        self.policy = policy
        self.entry_env = entry_env
        self.ups: dict[str, Upstream] = {}
        self._started: list[Upstream] = []  # every server started, initialized or not
        self.errors: dict[str, str] = {}
        self.warnings: list[str] = []

    async def start(self, names: set[str]) -> None:
        specs, problems = launch_specs(names, self.run.servers, self.policy, entry_env=self.entry_env)
        for p in problems:
            self.errors[p.split(":", 1)[0]] = p
        for spec in specs.values():
            self.warnings.extend(spec.warnings)

        async def one(spec) -> None:
            ctx = Upstream.spawn(spec.command, spec.args, env=spec.env, cwd=spec.cwd, label=spec.server)
            up = await ctx.__aenter__()
            self._started.append(up)  # closed by close() even if initialize is cancelled (esc in the console)
            try:
                await up.initialize()
            except UpstreamError as exc:
                self._started.remove(up)
                await up.close()
                self.errors[spec.server] = str(exc)
                return
            self.ups[spec.server] = up

        results = await asyncio.gather(*(one(s) for s in specs.values()), return_exceptions=True)
        for spec, res in zip(specs.values(), results):
            if isinstance(res, BaseException):
                self.errors[spec.server] = str(res)

    def get(self, name: str) -> Upstream | None:
        return self.ups.get(name)

    async def close(self) -> None:
        try:
            await asyncio.gather(*(u.close() for u in self._started), return_exceptions=True)
        except BaseException:  # cancelled again while closing (the console's esc): stop them now
            for u in self._started:
                u.child.kill()
            raise


def _observation(out: ReadOutcome) -> dict | None:
    return out.observation()


def _same(a: Any, b: Any) -> bool:
    return canonical(a) == canonical(b)


async def _read(servers: _Servers, read: dict, opts: UndoOptions) -> ReadOutcome:
    up = servers.get(read["server"])
    if up is None:
        why = servers.errors.get(read["server"], f"server {read['server']} is not running")
        return ReadOutcome("failed", reason=why)
    return await run_read(up.child.request, read, timeout=opts.read_timeout, max_bytes=opts.max_snapshot_bytes)


def _prior_state(a: ActionRow, snapshot: Any) -> dict | None:
    """The state the inverse should produce, when the pre-read tells it."""
    if a.prior == "captured":
        return {"present": True, "value": snapshot}
    if a.prior == "absent":
        return {"present": False}
    return None


def _replan(j: Journal, a: ActionRow, policy: Policy) -> tuple[list | None, dict | None, str | None]:
    """(inverse, verify read, error) rebuilt from the current policy and captured state."""
    args = j.get_json(a.args_ref)
    rule = policy.rule_for(a.server, a.tool, args)
    scope: dict[str, Any] = {"args": args}
    if a.result_ref:
        scope["result"] = payload(j.get_json(a.result_ref))
    if a.prior == "captured":
        scope["snapshot"] = j.get_json(a.snapshot_ref)
    try:
        inverse = [resolve_call(c, scope) for c in rule.inverse] or None
        read = rule.snapshot or rule.verify
        verify = None
        if read is not None:
            verify = resolve_call(read, scope)
            verify.pop("refuse_when", None)
    except RefError as exc:
        return None, None, f"the current policy's rule {rule.match} does not resolve for this action: {exc}"
    return inverse, verify, None


def _pick_run(j: Journal, opts: UndoOptions) -> RunRow:
    if opts.run:
        return j.find_run(opts.run)
    try:
        return j.find_run(None, newest_not_active=True)
    except UsageError:
        runs = j.list_runs()
        if runs:
            raise UsageError("every run is still active; name one and add --force to undo a live run") from None
        raise


async def undo_run(j: Journal, opts: UndoOptions) -> UndoReport:
    """Undo a run (see module docstring).

    Raises:
        UsageError: no such run, bad ``--to``.
        ConflictError: the run is active (without ``force``), or another undo of it is running.
    """
    run = _pick_run(j, opts)
    if run.status == "active" and not opts.force:
        raise ConflictError(f"run {run.id[:8]} is still active (an agent may still be writing through it); "
                            "stop the agent first, close it with `synartesis close`, or add --force")
    if not opts.dry_run and not opts.force:
        audit = j.audit(run.id)
        if not audit.ok:
            raise ConflictError(f"the journal of run {run.id[:8]} fails its audit, so its records cannot be "
                                "trusted to undo from: " + "; ".join(audit.problems[:3])
                                + " (see `synartesis audit`; --force undoes anyway)")
    actions = j.actions(run.id)
    top = max((a.seq for a in actions), default=0)
    if opts.to is not None:
        if opts.to < 1:
            raise UsageError("--to needs a positive whole number")
        if opts.to > top:
            raise UsageError(f"--to {opts.to} is past the end of this run, which goes up to {top}")
    preview = opts.dry_run or (opts.force and not opts.yes)
    report = UndoReport(run=run.id, dry_run=preview, status="partial", preview_force=opts.force and not opts.yes)
    in_scope = sorted((a for a in actions if opts.to is None or a.seq >= opts.to), key=lambda a: -a.seq)
    kept = sorted((a for a in actions if opts.to is not None and a.seq < opts.to), key=lambda a: -a.seq)

    # Which servers will be needed (only up to the first halt that needs no server).
    needed: set[str] = set()
    for a in in_scope:
        if a.cls == "readonly" or a.status in NEVER_APPLIED or a.status == "rolled_back":
            continue
        if a.status in ("pending", "unknown") and not opts.force:
            break
        if a.status == "unrecoverable" and a.inverse_ref and not (opts.replan or opts.force):
            break
        for call in (j.get_json(a.inverse_ref) or []):
            needed.add(call["server"])
        verify = j.get_json(a.verify_ref)
        if verify:
            needed.add(verify["server"])
        if opts.replan and opts.policy is not None:
            inv, ver, _ = _replan(j, a, opts.policy)
            needed.update(c["server"] for c in inv or [])
            if ver:
                needed.add(ver["server"])

    servers = _Servers(run, opts.policy, opts.entry_env)
    undo_id = None
    if not preview:
        undo_id = j.begin_undo(run.id, opts.by)
        if undo_id is None:
            raise ConflictError(f"another undo of run {run.id[:8]} is running; wait for it to finish")
        report.undo_id = undo_id
    try:
        if needed:
            await servers.start(needed)
        report.warnings.extend(servers.warnings)
        # A preview sends nothing, so it simulates: after a planned revert, the resource is in
        # the state before that action (its snapshot, or the post-state of the run's previous
        # write to the same resource); older actions are checked against that, not the world.
        simulated: dict[str, dict | None] = {}
        history = _read_history(j, actions) if preview else {}
        for a in in_scope:
            step = await _one(j, servers, a, opts, preview, simulated, history)
            report.steps.append(step)
            if undo_id:
                j.undo_step(undo_id, run.id, {"action": a.id, "seq": a.seq, "kind": step.kind,
                                              "outcome": step.outcome, "reason": step.reason})
            if step.kind == "halt":
                report.halted = step
                break
        for a in kept:
            report.steps.append(Step(a.seq, a.id, a.qualified, "kept", f"below --to {opts.to}, so it is left as it is"))
        clean = report.halted is None and not report.left_in_place and opts.to is None
        report.status = "rolled_back" if clean else "partial"
        if not preview and (report.changed or clean):
            # a halt before anything was put back leaves the run's status as it was
            j.set_run_status(run.id, report.status)
    finally:
        await servers.close()
        if undo_id:
            j.finish_undo(undo_id, run.id, "halted" if report.halted else report.status, report.as_json())
    return report


def _read_history(j: Journal, actions: list[ActionRow]) -> dict[str, dict | None]:
    """For each applied write: the state its resource was in just before it, as far as the run
    knows (the post-state of the run's previous write to the same read), keyed by action id."""
    last: dict[str, dict] = {}
    before: dict[str, dict | None] = {}
    for a in sorted(actions, key=lambda a: a.seq):
        if a.cls == "readonly" or a.status not in ("applied", "rolling_back", "unrecoverable", "rolled_back"):
            continue
        verify = j.get_json(a.verify_ref)
        if verify is None:
            continue
        key = canonical(verify)
        before[a.id] = last.get(key)
        post = j.get_json(a.post_ref)
        if post is not None:
            last[key] = post
    return before


async def _one(j: Journal, servers: _Servers, a: ActionRow, opts: UndoOptions, preview: bool,
               simulated: dict[str, dict | None], history: dict[str, dict | None] | None = None) -> Step:
    q = a.qualified
    if a.cls == "readonly":
        return Step(a.seq, a.id, q, "skip", "readonly")
    if a.status == "rolled_back":
        return Step(a.seq, a.id, q, "already-reverted", "already rolled back", verified=True)
    if a.status in NEVER_APPLIED:
        return Step(a.seq, a.id, q, "skip", NEVER_APPLIED[a.status])
    if a.status in ("pending", "unknown"):
        if opts.force:
            # a person looked at it and chose to go on: whatever it did stays as it is
            return Step(a.seq, a.id, q, "permanent", "outcome unknown; stepped over because of --force "
                        "(whatever it did is left in place)", detail=a.note)
        return Step(a.seq, a.id, q, "halt", "outcome unknown: the call was sent but no answer was recorded "
                    "(the proxy or server stopped mid-call, or it timed out), so whether it applied cannot be determined",
                    detail=(a.note or "") + "\nCheck the resource by hand; `undo --force` then steps over this "
                    "action (leaving whatever it did) and undoes the older ones.")
    if a.status == "unrecoverable" and a.inverse_ref and not (opts.replan or opts.force):
        return Step(a.seq, a.id, q, "halt", "halted here on an earlier attempt",
                    detail="what it saw when it halted, which may no longer hold:\n" + (a.note or "")
                    + "\nResolve the conflict, then run undo --replan to check it against the world as it is now.")

    inverse = j.get_json(a.inverse_ref)
    verify = j.get_json(a.verify_ref)
    post = j.get_json(a.post_ref)
    snapshot = j.get_json(a.snapshot_ref) if a.prior == "captured" else None
    replanned = False
    if opts.replan and opts.policy is not None:
        inv, ver, err = _replan(j, a, opts.policy)
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
            reason = "no usable inverse was recorded" + (f": {a.note}" if a.note else "") + "; left in place"
        return Step(a.seq, a.id, q, "permanent", reason)

    verified = False
    prior_state = _prior_state(a, snapshot)
    expected_post = post
    step_expected = step_actual = None
    forced = False
    sim_key = canonical(verify) if verify is not None else None
    if verify is not None and expected_post is not None:
        if preview and sim_key in simulated:
            sim = simulated[sim_key]
            if sim is None:
                return Step(a.seq, a.id, q, "revert", "a newer compensation on the same resource runs first, so "
                            "drift can be checked only during the real undo", calls=inverse, outcome="would call",
                            verified=False, replanned=replanned)
            current = ReadOutcome("present" if sim["present"] else "absent", payload=sim.get("value"))
        else:
            current = await _read(servers, verify, opts)
        obs = _observation(current)
        if obs is None:
            if not preview:
                j.set_action_status(a.id, "unrecoverable", note=f"could not read current state to check for drift: {current.reason}")
            return Step(a.seq, a.id, q, "halt", "could not read current state to check for drift", detail=current.reason)
        if _same(obs, expected_post):
            verified = True
        elif prior_state is not None and _same(obs, prior_state):
            if not preview:
                j.set_action_status(a.id, "rolled_back", note="found already in the state the inverse would produce")
            return Step(a.seq, a.id, q, "already-reverted", "the resource is already in the state this inverse would produce",
                        verified=True)
        else:
            detail = (f"drift at sequence {a.seq}: the resource is not in the state this run left it in.\n"
                      f"  expected: {canonical(expected_post)}\n  actual:   {canonical(obs)}")
            if not opts.force:
                if not preview:
                    j.set_action_status(a.id, "unrecoverable", note=detail)
                return Step(a.seq, a.id, q, "halt", "drift detected", detail=detail, expected=expected_post, actual=obs)
            forced = True
            step_expected, step_actual = expected_post, obs
            if preview:
                if sim_key is not None:
                    simulated[sim_key] = prior_state if prior_state is not None else (history or {}).get(a.id)
                return Step(a.seq, a.id, q, "overwrite", "drifted; --force --yes would overwrite it", detail=detail,
                            calls=inverse, expected=expected_post, actual=obs, replanned=replanned)
    elif a.status == "rolling_back":
        return Step(a.seq, a.id, q, "halt", "an inverse was already sent before an interruption and no read can "
                    "tell whether it applied", detail=a.note)

    if verified:
        reason = "state matches; the inverse would be applied" if preview else "state matches; applying inverse"
    elif forced:
        reason = "drifted, overwriting as --force --yes asked"
    elif verify is None:
        reason = "no read declared, so drift could not be ruled out"
    else:
        reason = "the post-state was never captured, so drift could not be ruled out"
    if preview:
        if sim_key is not None:
            simulated[sim_key] = prior_state if prior_state is not None else (history or {}).get(a.id)
        return Step(a.seq, a.id, q, "revert", reason, calls=inverse, outcome="would call", verified=verified,
                    replanned=replanned)

    if a.status != "rolling_back":
        if not j.set_action_status(a.id, "rolling_back", expect=("applied", "unrecoverable")):
            return Step(a.seq, a.id, q, "halt", "another undo is already working on this action")
    for k, call in enumerate(inverse):
        up = servers.get(call["server"])
        key = f"{a.run_id}:{a.seq}" + (f":{k + 1}" if len(inverse) > 1 else "")
        if up is None:
            why = servers.errors.get(call["server"], f"server {call['server']} is not running")
            return _inverse_failed(j, a, q, k, f"the inverse was not sent: {why}", sent_any=k > 0)
        try:
            result = await up.child.request("tools/call", {"name": call["tool"], "arguments": call["args"]},
                                            timeout=opts.call_timeout, meta={IDEMPOTENCY_KEY: key})
        except RequestFailed as exc:
            if exc.maybe_applied:
                note = f"rollback halted at sequence {a.seq}: the inverse's outcome is unknown: {exc.message}"
                j.set_action_status(a.id, "rolling_back", note=note)
                return Step(a.seq, a.id, q, "halt", "the inverse's outcome is unknown", detail=note, calls=inverse)
            return _inverse_failed(j, a, q, k, f"the inverse was not applied: {exc.message}", sent_any=k > 0)
        if is_error(result):
            return _inverse_failed(j, a, q, k, f"the inverse was refused: {error_text(result)}", sent_any=k > 0)

    outcome, ok = "sent (unverified)", None
    if verify is not None and prior_state is not None:
        after = _observation(await _read(servers, verify, opts))
        if after is not None and _same(after, prior_state):
            outcome, ok = "restored (verified)", True
        else:
            note = (f"the inverse was sent, but a re-read does not show the captured state:\n"
                    f"  expected: {canonical(prior_state)}\n  actual:   {canonical(after) if after else 'unreadable'}")
            j.set_action_status(a.id, "unrecoverable", note=note)
            return Step(a.seq, a.id, q, "halt", "the inverse did not restore the captured state", detail=note,
                        calls=inverse, outcome="sent, not restored", replanned=replanned)
    j.set_action_status(a.id, "rolled_back", note=("replanned; " if replanned else "") + outcome
                        + (" (overwrote a drifted resource, --force)" if forced else ""))
    return Step(a.seq, a.id, q, "revert", reason, calls=inverse, outcome=outcome, verified=ok,
                replanned=replanned, expected=step_expected, actual=step_actual)


def _inverse_failed(j: Journal, a: ActionRow, q: str, k: int, why: str, *, sent_any: bool) -> Step:
    note = f"rollback halted at sequence {a.seq}: {why}"
    if sent_any:
        note += f" (after {k} of its calls were applied; the resource is between states)"
        j.set_action_status(a.id, "rolling_back", note=note)
    else:
        j.set_action_status(a.id, "applied", note=note)
    return Step(a.seq, a.id, q, "halt", "the inverse failed", detail=note)


# -- show --live -----------------------------------------------------------------------

@dataclass
class LiveItem:
    seq: int
    action: str
    tool: str
    state: str  # matches | drifted | reverted | superseded | unreadable | unchecked
    detail: str = ""
    expected: Any = None
    actual: Any = None


@dataclass
class LiveReport:
    run: str
    items: list[LiveItem]
    warnings: list[str]

    def as_json(self) -> dict:
        return {"run": self.run, "items": [asdict(i) for i in self.items], "warnings": self.warnings}


async def live_check(j: Journal, run_ref: str | None, policy: Policy | None, read_timeout: float = 30.0,
                     entry_env: Any = None) -> LiveReport:
    """Read every resource the run wrote, as it is now; say for each write whether it still
    matches what the run left. Sends no inverse, writes nothing, never stops early."""
    run = j.find_run(run_ref)
    writes = [a for a in j.actions(run.id) if a.cls != "readonly" and a.status in ("applied", "rolling_back",
                                                                                   "rolled_back", "unrecoverable")]
    needed = set()
    for a in writes:
        v = j.get_json(a.verify_ref)
        if v:
            needed.add(v["server"])
    servers = _Servers(run, policy, entry_env)
    opts = UndoOptions(read_timeout=read_timeout)
    items: list[LiveItem] = []
    latest: dict[str, int] = {}
    for a in writes:
        v = j.get_json(a.verify_ref)
        if v is not None:
            latest[canonical(v)] = max(latest.get(canonical(v), 0), a.seq)
    try:
        if needed:
            await servers.start(needed)
        for a in writes:
            verify, post = j.get_json(a.verify_ref), j.get_json(a.post_ref)
            if verify is not None and latest.get(canonical(verify), a.seq) != a.seq:
                items.append(LiveItem(a.seq, a.id, a.qualified, "superseded",
                                      f"written again later in this run (seq {latest[canonical(verify)]})"))
                continue
            if verify is None or post is None:
                items.append(LiveItem(a.seq, a.id, a.qualified, "unchecked",
                                      "no read was recorded for this write, so it cannot be checked"))
                continue
            obs = _observation(await _read(servers, verify, opts))
            if obs is None:
                items.append(LiveItem(a.seq, a.id, a.qualified, "unreadable", "the read failed"))
                continue
            prior = _prior_state(a, j.get_json(a.snapshot_ref) if a.prior == "captured" else None)
            if _same(obs, post) and a.status != "rolled_back":
                items.append(LiveItem(a.seq, a.id, a.qualified, "matches", "still as this run left it"))
            elif prior is not None and _same(obs, prior):
                items.append(LiveItem(a.seq, a.id, a.qualified, "reverted", "back in the state before this write"))
            else:
                items.append(LiveItem(a.seq, a.id, a.qualified, "drifted", "changed since this run wrote it",
                                      expected=post, actual=obs))
    finally:
        await servers.close()
    return LiveReport(run.id, items, servers.warnings)


del os
