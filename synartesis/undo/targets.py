"""What an undo or redo acts on: a run, or an agent session (all of its runs).

``undo SESSION`` and bare ``undo`` speak sessions; ``undo RUN`` one run. Bare ``undo`` picks the
newest session that has something to undo (issue 10 item 2): sessions with nothing left are
skipped and named; when that newest session's agent is still running, nothing older is taken in
its place (the caller refuses, naming it: stop the agent, or name it and add ``--force``); and
when nothing is left anywhere the caller is told so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synartesis.errors import UsageError
from synartesis.journal import ActionRow, Journal, RunRow, SessionRow
from synartesis.journal.rows import NOTHING_TO_RESTORE

__all__ = ["Target", "resolve_target", "newest_target", "pick_session", "undoable", "describe_session", "nothing_left"]


@dataclass
class Target:
    """A run or a session, with its runs (newest first)."""

    kind: str  # "run" | "session"
    id: str
    runs: list[RunRow]
    session: SessionRow | None = None
    picked: str | None = None            # why bare undo/redo chose it
    skipped: list[str] = field(default_factory=list)

    @property
    def run_ids(self) -> list[str]:
        return [r.id for r in self.runs]

    @property
    def name(self) -> str:
        """How reports name it: ``run 1e1983ae`` / ``session s-4f2a91c0 (claude-code)``."""
        if self.kind == "run":
            return f"run {self.id[:8]}"
        return describe_session(self.session, self.runs) if self.session else f"session {self.id}"

    @property
    def live_runs(self) -> list[RunRow]:
        return [r for r in self.runs if r.live]


def undoable(a: ActionRow, replan: bool = False) -> bool:
    """Would undo act on this action (revert it, or halt on it)? (Mirrors
    :meth:`Journal.undoable_counts`.)"""
    if a.cls == "readonly":
        return False
    if a.status in ("applied", "rolling_back"):
        return a.inverse_ref is not None or (a.cls != "irreversible" and (
            replan or not (a.note or "").startswith(NOTHING_TO_RESTORE)))
    return a.status in ("unknown", "pending", "unrecoverable")


def describe_session(s: SessionRow, runs: list[RunRow]) -> str:
    """``session s-4f2a91c0 (claude-code, 2 runs: files, memory)``."""
    servers = sorted({name for r in runs for name in r.servers})
    who = s.name or s.client or "an agent"
    extra = f", {len(runs)} run{'s' if len(runs) != 1 else ''}" + (f": {', '.join(servers)}" if servers else "")
    return f"session {s.id[:10]} ({who}{extra})"


def _session_target(j: Journal, s: SessionRow) -> Target:
    return Target("session", s.id, j.session_runs(s.id), s)


def resolve_target(j: Journal, ref: str) -> Target:
    """The run or session ``ref`` names: a session id (``s-…``, or a prefix of one), a
    ``SYNARTESIS_SESSION`` name, or a run id or prefix.

    A whole id names its run or session; a run id prefix that is also a session's name is
    ambiguous, as in :meth:`Journal.find_session`.

    Raises:
        UsageError: nothing matches, or a prefix or name is ambiguous.
    """
    if ref.lower().startswith("s-"):
        return _session_target(j, j.find_session(ref))
    try:
        run = j.find_run(ref)
    except UsageError as run_error:
        try:
            return _session_target(j, j.find_session(ref))
        except UsageError:
            raise UsageError(f"no run or session matches {ref}" if "no run matches" in run_error.message
                             else run_error.message) from None
    if run.id != ref.lower():
        try:
            named = j.find_session(ref)
        except UsageError:
            named = None
        if named is not None:
            raise UsageError(f"{ref} is ambiguous: it is the start of run {run.id} and the name of session "
                             f"{named.id}; give the whole id")
    return Target("run", run.id, [run])


def newest_target(j: Journal) -> Target:
    """The session with the newest activity (what ``show`` opens without an argument).

    Raises:
        UsageError: there is no run at all.
    """
    sessions = j.list_sessions()
    if not sessions:
        raise UsageError("there is no run to act on")
    return _session_target(j, sessions[0])


def pick_session(j: Journal, *, allow_live: bool = False,
                 replan: bool = False) -> tuple[Target | None, list[str], list[Target]]:
    """The newest session with something to undo, for bare ``undo``.

    Returns (target or None, what was skipped and why, the live session that stopped the pick).
    When the newest session with something to undo has a live run, the pick stops there with no
    target unless ``allow_live`` (``--force``): undoing an older session in its place would undo
    what the person did not mean (a long-lived client such as Claude Code keeps its session
    live all day) and could overwrite what the running agent is writing. ``replan``: calls with
    nothing captured to restore count (``--replan`` may build an inverse); otherwise they stay
    in place and do not count, so a session of nothing else is skipped.
    """
    work = j.undoable_counts(replan)
    skipped: list[str] = []
    nothing: list[SessionRow] = []
    live: list[Target] = []
    for s in j.list_sessions():
        if not work.get(s.id):
            nothing.append(s)
            continue
        t = _session_target(j, s)
        if t.live_runs and not allow_live:
            live.append(t)
            return None, skipped, live
        n, k = work[s.id]
        t.picked = (f"the newest session with something to undo: {n} action{'s' if n != 1 else ''} "
                    f"across {k} run{'s' if k != 1 else ''}")
        if nothing:
            skipped[:0] = _nothing_lines(j, nothing, "newer ")
        t.skipped = skipped
        return t, skipped, live
    if nothing:
        skipped[:0] = _nothing_lines(j, nothing, "")
    return None, skipped, live


_SHOWN = 5  # skipped sessions named one by one, with why; the rest are counted


def _nothing_lines(j: Journal, sessions: list[SessionRow], newer: str) -> list[str]:
    """``skipped 2 newer sessions with nothing left to undo:`` then one line per session (the
    newest three) saying why: a new user saw them named and could not tell why each was passed."""
    n = len(sessions)
    lines = [f"skipped {n} {newer}session{'s' if n != 1 else ''} with nothing left to undo:"]
    for s in sessions[:_SHOWN]:
        who = f" ({s.name or s.client})" if s.name or s.client else ""
        runs = j.session_runs(s.id)
        lines.append(f"  {s.id[:10]}{who}: {nothing_left(j.actions_of([r.id for r in runs]))}")
    if n > _SHOWN:
        lines.append(f"  and {n - _SHOWN} more")
    return lines


def nothing_left(actions: list[ActionRow]) -> str:
    """Why a session with nothing left to undo (:meth:`Journal.undoable_counts`) has none, in
    words: ``only reads``, ``already undone``, ``its only calls stay in place: an approved
    creation (nothing existed before it to put back)``, ``its only call was never applied
    (waiting for approval)``, or those parts joined when they mix (reads are then not named)."""
    undone = stay_new = stay_irr = 0
    never: dict[str, int] = {}
    for a in actions:
        if a.cls == "readonly":
            continue
        if a.status == "rolled_back":
            undone += 1
        elif a.status in _NEVER:
            why = "approved, its retry recorded on its own" if a.status == "approved" and a.used_by else _NEVER[a.status]
            never[why] = never.get(why, 0) + 1
        elif (a.note or "").startswith(NOTHING_TO_RESTORE):
            stay_new += 1
        else:  # applied, irreversible, no inverse
            stay_irr += 1
    if not (undone or stay_new or stay_irr or never):
        return "only reads" if actions else "it recorded no calls"
    calls = undone + stay_new + stay_irr + sum(never.values())
    one = calls == 1
    stays = [part for part in (
        _count(stay_new, "an approved creation (nothing existed before it to put back)",
               "approved creations (nothing existed before them to put back)"),
        _count(stay_irr, "an irreversible call", "irreversible calls")) if part]
    parts = []
    if undone:
        parts.append("already undone" if undone == calls else _count(undone, "a call already undone", "calls already undone"))
    if stays:
        what = ", ".join(stays)
        parts.append(f"its only {'call stays' if one else 'calls stay'} in place: {what}"
                     if stay_new + stay_irr == calls else f"left in place: {what}")
    if never:
        what = ", ".join(f"{n} {why}" for why, n in never.items())
        parts.append(f"its only {'call was' if one else 'calls were'} never applied ({what})"
                     if sum(never.values()) == calls else f"never applied: {what}")
    waiting = [a.id[:8] for a in actions if a.status == "gated"]
    if waiting:  # approved later, the agent's retry would make the change after all
        shown = ", ".join(f"`synartesis deny {i}`" for i in waiting[:3]) + (" …" if len(waiting) > 3 else "")
        parts.append(f"refuse what waits with {shown}")
    return "; ".join(parts)


# what an action that was never applied is, as a skipped session's line says it
_NEVER = {"gated": "waiting for approval", "denied": "denied", "failed": "failed", "approved": "approved, never retried"}


def _count(n: int, one: str, many: str) -> str:
    return "" if not n else one if n == 1 else f"{n} {many}"
