"""The ``tools/call`` pipeline (DESIGN §3; reference-spec §4.5 with its defects fixed).

1. Resolve the rule for ``server.tool`` (fail closed: no rule → irreversible, gated).
2. Pins: a server whose tool shapes moved refuses every call.
3. Gate: a recent denial of this exact call is told to the agent (who, why); an unused
   approval is spent; otherwise the call is held (reusing a waiting twin) and refused at once.
4. Record the action (next seq of the run).
5. Snapshot: the pre-read; ``absent_when`` tells absence from failure; any other failure, a
   payload over the size cap or a lossy read (``refuse_when``) refuses the write.
   Absence where the inverse needs the snapshot holds the call for approval.
6. Forward the original bytes; a JSON-RPC error or ``isError`` → ``failed``.
7. Resolve the inverse to literals; take the post-read (snapshot or ``verify``) → ``applied``.
8. Timeout, disconnect or cancellation after the request was written → ``unknown``.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from synartesis.canonical import canonical
from synartesis.errors import JournalError
from synartesis.log import log
from synartesis.policy.model import CallTemplate, Rule
from synartesis.policy.refs import RefError, resolve_template
from synartesis.policy.sqlgate import should_gate
from synartesis.proxy.payload import cli_command, error_text, is_error, payload
from synartesis.proxy.upstream import RequestFailed

if TYPE_CHECKING:
    from synartesis.proxy.relay import Proxy

__all__ = ["CallContext", "handle_call", "ReadOutcome", "run_read", "GATE_PREFIX"]

GATE_PREFIX = "Synartesis is holding this call for approval"
IRREVERSIBLE = "this action cannot be undone"


@dataclass
class CallContext:
    """One client ``tools/call`` request as it moves through the pipeline."""

    line: bytes
    msg: dict
    id_key: str
    forwarded: bool = False
    cancelled: bool = False
    response: asyncio.Future | None = None
    action_id: str | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class ReadOutcome:
    """A pre-read, post-read or drift read: ``present`` (with payload), ``absent`` or ``failed``."""

    kind: str
    payload: Any = None
    reason: str = ""

    def observation(self) -> dict | None:
        """``{"present": true, "value": …}`` / ``{"present": false}``; None when failed."""
        if self.kind == "present":
            return {"present": True, "value": self.payload}
        if self.kind == "absent":
            return {"present": False}
        return None


async def run_read(request: Any, read: dict, *, timeout: float | None, max_bytes: int,
                   meta: dict | None = None) -> ReadOutcome:
    """Run a resolved read ``{"server","tool","args","absent_when"?,"refuse_when"?}``.

    ``request`` is an awaitable factory ``(method, params, timeout, meta) -> result``
    (a :class:`Child`'s ``request``). Used by the proxy and by undo, so both classify a read
    the same way. Payloads larger than ``max_bytes`` (UTF-8 of compact JSON) fail: a write
    whose prior state cannot be kept is refused rather than risked (FINDINGS §5).
    """
    try:
        result = await request("tools/call", {"name": read["tool"], "arguments": read.get("args", {})},
                               timeout=timeout, meta=meta)
    except RequestFailed as exc:
        return ReadOutcome("failed", reason=f"the read {read['server']}.{read['tool']} failed: {exc.message}")
    if is_error(result):
        text = error_text(result)
        phrases = read.get("absent_when") or []
        blob = json.dumps(result, ensure_ascii=False).lower()
        if not phrases or any(p.lower() in blob for p in phrases):
            return ReadOutcome("absent", reason=text)
        return ReadOutcome("failed", reason=f"the read {read['server']}.{read['tool']} reported an error: {text}")
    value = payload(result)
    text = canonical(value)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return ReadOutcome("failed", reason=(
            f"the prior state is {size:,} bytes, over the {max_bytes:,}-byte snapshot cap; a write "
            "that cannot be snapshotted is refused rather than risked (raise --max-snapshot-bytes "
            "or SYNARTESIS_MAX_SNAPSHOT_BYTES to allow it)"))
    for phrase in read.get("refuse_when") or []:
        if phrase and phrase in text:
            return ReadOutcome("failed", reason=(
                f"the read {read['server']}.{read['tool']} cannot represent this resource exactly "
                f"(it contains {phrase!r}, e.g. a binary file read as text), so restoring it would "
                "corrupt it; the write is refused"))
    return ReadOutcome("present", payload=value)


def resolve_call(template: CallTemplate, scope: dict) -> dict:
    """A template resolved to a literal call ``{"server","tool","args"[,"absent_when","refuse_when"]}``.

    Raises:
        RefError: a reference that does not resolve.
    """
    out = {"server": template.server, "tool": template.tool, "args": resolve_template(template.args, scope)}
    if template.absent_when:
        out["absent_when"] = list(template.absent_when)
    if template.refuse_when:
        out["refuse_when"] = list(template.refuse_when)
    return out


def _inverse_problem(rule: Rule, args: Any, snapshot: Any) -> str | None:
    """Why the rule's inverse cannot be built from the arguments and pre-read (None if it can,
    as far as can be told before the call: ``$result`` references are checked after it)."""
    from synartesis.policy.refs import references
    scope: dict[str, Any] = {"args": args}
    if rule.snapshot is not None:
        scope["snapshot"] = snapshot
    for call in rule.inverse:
        for ref, ns in references(call.args):
            if ns == "result":
                continue
            try:
                resolve_template(ref, scope)
            except RefError as exc:
                return f"its inverse ({call.server}.{call.tool}) cannot be built, so it could not be undone: {exc}"
    return None


def _uses_snapshot(rule: Rule) -> bool:
    from synartesis.policy.refs import references
    return any(ns == "snapshot" for call in rule.inverse for _, ns in references(call.args))


READ_RESULT_WHOLE = 1024


def cap_result(result: Any) -> Any:
    """A read's result as journalled: whole up to 1 KiB, else its size, SHA-256 and a preview.

    Undo never needs what a read returned, reads can be tens of megabytes (PROXY.md §2.8), and
    journalling them whole costs every read a compression and a payload write; writes keep
    their whole result because ``--replan`` resolves ``$result`` from it.
    """
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= READ_RESULT_WHOLE:
        return result
    import hashlib
    data = text.encode("utf-8", "surrogatepass")
    return {"synartesisDigest": True, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "preview": text[:512]}


def touches_own_files(args: Any, protected: list[str]) -> str | None:
    """Why a call must be held because it names synartesis's own policy, journal or home.

    An agent that could rewrite the policy through a guarded tool could lift every gate for
    its next session. Every string argument that looks like a path is resolved (``~``, links,
    relative to our working directory) and compared; a bare ``synartesis.yaml`` or
    ``journal.db`` file name counts too, since the server may resolve it somewhere we cannot see.
    """
    if not protected:
        return None
    names = {os.path.basename(p) for p in protected if not p.endswith(os.sep)}
    stack = [args]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and value and len(value) < 4096 and "\n" not in value:
            if os.path.basename(value.rstrip("/")) in names:
                return f"it names {value}, one of synartesis's own files (its policy or journal)"
            if os.sep in value or value.startswith("~"):
                try:
                    real = os.path.realpath(os.path.expanduser(value))
                except (OSError, ValueError):
                    continue
                for p in protected:
                    base = p.rstrip(os.sep)
                    if real == base or real.startswith(base + os.sep):
                        return f"it names {value}, inside synartesis's own files ({p})"
    return None


def tool_result(text: str, modern: bool) -> dict:
    """A CallToolResult with ``isError: true`` that the model can read and relay."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if modern:
        result["resultType"] = "complete"
    return result


async def handle_call(proxy: "Proxy", ctx: CallContext) -> None:
    """Run one ``tools/call`` through the pipeline; always answers the client exactly once."""
    params = ctx.msg.get("params") if isinstance(ctx.msg.get("params"), dict) else {}
    exposed = params.get("name")
    args = params.get("arguments")
    args = {} if args is None else args
    if not isinstance(exposed, str):
        await proxy.forward_to_child(ctx)  # malformed: let the server answer as it would
        return
    server, tool = proxy.route(exposed)
    rule = proxy.policy_rule(server, tool, args)
    qualified = f"{server}.{tool}"
    j = proxy.journal
    run_id = proxy.ensure_run()

    try:
        # 2. pins
        pin_problem = await proxy.pin_problem(server)
        if pin_problem:
            action = j.record_action(run_id, server, tool, rule.cls, rule.match if rule.matched else None, args,
                                     status="pending")
            j.mark_failed(action.id, pin_problem)
            await proxy.reply_error_result(ctx, pin_problem)
            return

        # 3. gate
        wants_gate = rule.gate == "always" or (rule.gate == "on_write" and should_gate(args, rule.sql_arg))
        own = touches_own_files(args, proxy.protected_paths()) if rule.cls != "readonly" else None
        action = None
        if wants_gate or own:
            why = own or (IRREVERSIBLE if rule.matched else rule.note or IRREVERSIBLE)
            action = await _pass_gate(proxy, ctx, server, tool, rule, args, run_id, why)
            wants_gate = True
            if action is None:
                return
        # fast path: a read with nothing to capture is forwarded first and journalled while the
        # server works, so journalling adds nothing to its latency
        if action is None and rule.cls == "readonly" and rule.snapshot is None and rule.verify is None:
            fut = await proxy.forward_to_child(ctx)
            read = {"run": run_id, "server": server, "tool": tool, "rule": rule.match if rule.matched else None,
                    "args": args, "seq": proxy.next_seq()}
            if fut is None:
                proxy.record_read({**read, "status": "failed", "note": f"{server} is not running, so the call was never sent"})
                await proxy.reply_protocol_error(ctx, -32000, f"synartesis: {server} is not running")
                return
            proxy.track(asyncio.ensure_future(_settle_read(proxy, fut, read)))
            return
        approved = wants_gate
        rule_name = rule.match if rule.matched else None
        # 5. snapshot (taken before the row is written, so both land in one transaction; a
        # write is recorded, with the state it will replace, before it is sent)
        snapshot_out: ReadOutcome | None = None
        read: dict | None = None
        if rule.snapshot is not None:
            try:
                read = resolve_call(rule.snapshot, {"args": args})
            except RefError as exc:
                read, snapshot_out = None, ReadOutcome("failed", reason=f"its pre-read could not be built from the arguments: {exc}")
            else:
                snapshot_out = await proxy.read(read)
            if snapshot_out.kind == "failed":
                if action is None:
                    action = j.record_action(run_id, server, tool, rule.cls, rule_name, args)
                ctx.action_id = action.id
                return await _refuse_failed(proxy, ctx, action.id, qualified, snapshot_out.reason)
            prior = "captured" if snapshot_out.kind == "present" else "absent"
            verify = {k: v for k, v in read.items() if k != "refuse_when"}
            if prior == "absent" and _uses_snapshot(rule) and not approved:
                # nothing to restore: held like an irreversible call (the waiting row is reused)
                reason = ("nothing was captured to restore, so this cannot be undone — the read said: "
                          f"{snapshot_out.reason}")
                action = await _pass_gate(proxy, ctx, server, tool, rule, args, run_id, reason)
                if action is None:
                    return
                approved = True
            if action is None:
                action = j.record_action(run_id, server, tool, rule.cls, rule_name, args, prior=prior,
                                         snapshot=snapshot_out.payload, verify=verify)
            else:
                j.set_prior(action.id, prior, snapshot_out.payload if prior == "captured" else None, verify)
        elif action is None:
            action = j.record_action(run_id, server, tool, rule.cls, rule_name, args)
        ctx.action_id = action.id
        # the inverse must be buildable before the call is sent (its $result part is checked
        # after); an inverse that can never resolve would turn a reversible write into a
        # permanent one, so the call is held instead
        if rule.inverse and not approved and not (snapshot_out is not None and snapshot_out.kind == "absent"):
            broken = _inverse_problem(rule, args, snapshot_out.payload if snapshot_out is not None else None)
            if broken:
                j.mark_failed(action.id, f"held: {broken}")
                if await _pass_gate(proxy, ctx, server, tool, rule, args, run_id, broken) is None:
                    return
        # 6. forward
        if ctx.cancelled:
            j.mark_failed(action.id, "the client cancelled the call before it was sent")
            return
        fut = await proxy.forward_to_child(ctx)
        if fut is None:  # could not be written: certainly not applied
            j.mark_failed(action.id, f"{server} is not running, so the call was never sent")
            await proxy.reply_protocol_error(ctx, -32000, f"synartesis: {server} is not running")
            return
        if rule.cls == "readonly" and rule.snapshot is None and rule.verify is None:
            proxy.track(asyncio.ensure_future(_settle(proxy, ctx, fut, action.id, rule, args, None, None)))
            return
        await _settle(proxy, ctx, fut, action.id, rule, args, snapshot_out, read)
    except JournalError as exc:
        log("error", "journal failed; the call was not sent", error=str(exc), tool=qualified)
        if not ctx.forwarded:
            await proxy.reply_protocol_error(ctx, -32001, f"synartesis could not journal this call, so it was not sent: {exc}")


async def _pass_gate(proxy: "Proxy", ctx: CallContext, server: str, tool: str, rule: Rule, args: Any,
                     run_id: str, why: str):
    j = proxy.journal
    carried = j.take_approval(run_id, server, tool, rule.cls, rule.match if rule.matched else None, args)
    if carried is not None:
        log("info", "proceeding on an approval", action=carried.id, by=carried.decided_by, tool=f"{server}.{tool}")
        return carried
    denial = j.find_denial(server, tool, args)
    if denial is not None:
        await proxy.reply_error_result(ctx, _denied_text(denial))
        return None
    held, reused = j.hold(run_id, server, tool, rule.cls, rule.match if rule.matched else None, args, why)
    log("warn", "awaiting approval", action=held.id, tool=f"{server}.{tool}", reused=reused,
        approve=_approve_cmd(proxy, held.id))
    await proxy.reply_error_result(ctx, _held_text(proxy, held.id, held.note or why))
    return None


def _approve_cmd(proxy: "Proxy", action_id: str) -> str:
    import shlex
    return f"{cli_command()} approve {action_id[:8]} --journal {shlex.quote(str(proxy.journal.path))}"


def _held_text(proxy: "Proxy", action_id: str, why: str) -> str:
    return (f"{GATE_PREFIX}, because {why}. It was not sent. Action {action_id[:8]} is waiting for a "
            f"person to approve it. Ask them to run:\n  {_approve_cmd(proxy, action_id)}\n"
            "then make this exact call again (same tool, same arguments). "
            "Do not try to reach the same result with a different tool.")


def _denied_text(denial: Any) -> str:
    reason = denial.decision_note or "no reason given"
    return (f"Synartesis refused this call: {denial.decided_by} denied it (action {denial.id[:8]}) at "
            f"{denial.decided_at}: {reason}. It was not sent. Do not retry it; tell the user and ask "
            "what they want instead.")


async def _refuse_failed(proxy: "Proxy", ctx: CallContext, action_id: str, qualified: str, reason: str) -> None:
    proxy.journal.mark_failed(action_id, f"write blocked: {reason}")
    log("error", "write blocked: snapshot failed", action=action_id, tool=qualified, reason=reason)
    await proxy.reply_error_result(ctx, f"Synartesis blocked {qualified} and did not send it: {reason}.")


async def _settle_read(proxy: "Proxy", fut: asyncio.Future, read: dict) -> None:
    """Wait for a plain read's answer and hand its record to the proxy's reader thread."""
    try:
        msg = await proxy.await_response(fut)
    except RequestFailed as exc:
        proxy.record_read({**read, "status": "unknown", "note": f"outcome unknown: {exc.message}"})
        return
    if msg is None:
        proxy.record_read({**read, "status": "unknown", "note": "the client cancelled the call after it was sent"})
        return
    if "error" in msg:
        err = msg.get("error") or {}
        proxy.record_read({**read, "status": "failed", "note": "the server answered with an error: "
                           f"{err.get('message') if isinstance(err, dict) else err}"})
        return
    result = msg.get("result")
    if is_error(result):
        proxy.record_read({**read, "status": "failed", "note": f"the server refused the call: {error_text(result)}",
                           "result": cap_result(result)})
        return
    proxy.record_read({**read, "status": "applied", "result": cap_result(result)})


async def _settle(proxy: "Proxy", ctx: CallContext, fut: asyncio.Future, action_id: str, rule: Rule,
                  args: Any, snapshot_out: ReadOutcome | None, read: dict | None) -> None:
    """Wait for the forwarded call's answer and journal its outcome."""
    j = proxy.journal
    try:
        outcome = await proxy.await_response(fut)
    except RequestFailed as exc:
        j.mark_unknown(action_id, f"outcome unknown: {exc.message}")
        log("warn", "outcome unknown", action=action_id, reason=exc.message)
        return
    if outcome is None:  # cancelled by the client after it was sent
        j.mark_unknown(action_id, "outcome unknown: the client cancelled the call after it was sent")
        return
    msg = outcome
    try:
        if "error" in msg:
            err = msg.get("error") or {}
            j.mark_failed(action_id, f"the server answered with an error: {err.get('message') if isinstance(err, dict) else err}")
            return
        result = msg.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            # 2026-07-28 multi-round-trip: the server needs input first; nothing was applied.
            j.mark_failed(action_id, "the server asked for input first (input_required); the client's retry "
                          "is recorded as its own action", result)
            return
        if is_error(result):
            j.mark_failed(action_id, f"the server refused the call: {error_text(result)}", result)
            return
        notes: list[str] = []
        inverse: list | None = None
        scope: dict[str, Any] = {"args": args, "result": payload(result)}
        if snapshot_out is not None and snapshot_out.kind == "present":
            scope["snapshot"] = snapshot_out.payload
        if rule.inverse:
            if snapshot_out is not None and snapshot_out.kind == "absent" and _uses_snapshot(rule):
                notes.append(f"no prior state existed, so there is nothing to restore: {snapshot_out.reason}")
            else:
                try:
                    inverse = [resolve_call(c, scope) for c in rule.inverse]
                except RefError as exc:
                    notes.append(f"inverse could not be resolved: {exc}")
        verify_read: dict | None = None
        post: dict | None = None
        if read is not None:
            verify_read = {k: v for k, v in read.items() if k != "refuse_when"}
        elif rule.verify is not None:
            try:
                verify_read = resolve_call(rule.verify, scope)
            except RefError as exc:
                notes.append(f"verify read could not be resolved: {exc}")
        if verify_read is not None and rule.cls != "readonly":
            observed = await proxy.read(verify_read)
            post = observed.observation()
            if post is None:
                notes.append(f"post-state could not be captured: {observed.reason}")
        j.mark_applied(action_id, result=result if rule.cls != "readonly" else cap_result(result),
                       inverse=inverse, verify=verify_read, post=post, note="; ".join(notes) or None)
        if notes:
            log("warn", "applied with reservations", action=action_id, notes=notes)
    except JournalError as exc:
        log("error", "journal failed after the call was applied", action=action_id, error=str(exc))
