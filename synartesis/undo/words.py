"""What an undo or redo report's unverified steps mean, in words every front end prints the
same way (the CLI's report and the console's; a new user's rounds 6 and 7)."""

from __future__ import annotations

from synartesis.undo.engine import Step, UndoReport

__all__ = ["nothing_result", "nothing_why", "unverified_lines", "unverified_why"]


def nothing_why(report: UndoReport) -> str:
    """Why an undo or redo has nothing to do (``status == "nothing"``), as the engine says it
    (``nothing to undo in SESSION: 2 readonly``): the CLI's and the console's one text."""
    return report.message or f"nothing to {report.kind}"


def nothing_result(report: UndoReport) -> str:
    """The outcome of an undo or redo with nothing to do: ``nothing undone (nothing was sent)``,
    the CLI's RESULT line and the console's notice alike (new user round 9: they differed)."""
    return f"nothing {'redone' if report.kind == 'redo' else 'undone'} (nothing was sent)"


def unverified_why(report: UndoReport, s: Step) -> str | None:
    """Why step ``s`` was sent but not checked by a read back, for its ``[unverified: …]`` tag:
    ``no read declared`` (its rule has none), ``nothing captured before the call to compare
    with`` (an undo read it back but had no prior state to compare it with), ``its read back
    did not answer`` (a redo); ``""`` when unverified for another reason; None when the step
    is not an unverified revert or redo (a round 7 finding: a bare "unverified" beside a read
    back that looked undone)."""
    if s.kind not in ("revert", "redo") or s.verified or s.outcome == "would call":
        return None
    if s.reason.startswith("no read declared"):
        return "no read declared"
    if s.outcome == "sent (unverified)":
        return "its read back did not answer" if report.kind == "redo" else "nothing captured before the call to compare with"
    return ""


def unverified_lines(report: UndoReport) -> list[str]:
    """Why the inverses (a redo: the calls sent again) that were only sent could not be checked,
    in words that fit them: an undo's compensation (nothing captured before its call to compare
    with), a rule that declares no read (``move_file`` moved back, memory's ``create_relations``),
    or a redo's read back that failed; finding 7, and a new user's for redo."""
    redo = report.kind == "redo"
    sent = [s for s in report.steps if s.kind in ("revert", "redo") and s.outcome == "sent (unverified)"]
    no_read = [s for s in sent if s.reason.startswith("no read declared")]
    other = [s for s in sent if s not in no_read]
    out = []
    for group, why in ((other, "its read back did not answer" if redo else "nothing was captured before the call to compare with"),
                       (no_read, "its rule declares no read of the resource")):
        if group:
            n = len(group)
            tools = ", ".join(dict.fromkeys(s.tool for s in group))
            what = (f"call{'s' if n != 1 else ''} ({tools}) {'were' if n != 1 else 'was'} sent again" if redo else
                    f"inverse{'s' if n != 1 else ''} ({tools}) {'were' if n != 1 else 'was'} sent")
            out.append(f"{n} {what} but could not be checked by reading the resource back ({why}), so marked "
                       "unverified: check by hand.")
    if report.earlier_unverified and not redo:  # counted in ``unverified``, tagged in no step above
        n, steps = len(report.earlier_unverified), ", ".join(report.earlier_unverified)
        out.append(f"{n} of the {report.unverified} unverified {'were' if n != 1 else 'was'} reverted by an earlier "
                   f"undo (step{'s' if n != 1 else ''} {steps}; `synartesis history` lists it), not by this one: its inverse was "
                   "sent without a read to check it, so check by hand.")
    return out
