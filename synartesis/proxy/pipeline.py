"""The ``tools/call`` pipeline (DESIGN §3; reference-spec §4.5 with its defects fixed).

Synchronous code run on the engine's ordered lane (or, for a plain read with nothing ahead of
it, on the client reader): it blocks on the server through its :class:`CallHost` and knows
nothing of the transport, the threads or the client connection.

1. Resolve the rule for ``server.tool`` (fail closed: no rule → irreversible, gated).
2. Pins: a server whose tool shapes moved refuses every call.
3. Gate: a recent denial of this exact call is told to the agent (who, why); an unused
   approval is spent; otherwise the call is held (reusing a waiting twin) and refused at once.
4. Record the action (next seq of the run) with the pre-read, in one transaction.
5. Snapshot: the pre-read; ``absent_when`` tells absence from failure; any other failure, a
   payload over the size cap or a lossy read (``refuse_when``) refuses the write.
   Absence where the inverse needs the snapshot holds the call for approval.
6. Forward the original bytes; a JSON-RPC error or ``isError`` → ``failed``.
7. Resolve the inverse to literals; take the post-read (snapshot or ``verify``), or the
   policy's declared ``post_state``, and mark it ``applied``: committed while the next call
   is at the server, or when the post-read's answer finds the lane idle (never on the path to
   sending a call; the next call waits only for the post-read's answer). A post-read is sent
   before the client is answered, and the answer is kept back until the read is answered:
   nothing done after the agent sees the answer can be recorded as the state the write left.
8. Timeout, disconnect or cancellation after the request was written → ``unknown``.

A plain read (readonly, nothing to capture) is forwarded at once and journalled by the engine's
journal thread when its answer has been forwarded: nothing but forwarding is on its path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from synartesis.canonical import MAX_DEPTH, canonical, compact, same_state, too_deep
from synartesis.errors import JournalError
from synartesis.journal.rows import CREATED_NOTHING, NOTHING_TO_RESTORE
from synartesis.log import log
from synartesis.policy.model import CallTemplate, Rule
from synartesis.policy.refs import RefError, parse_ref, references, resolve_template
from synartesis.policy.sqlgate import should_gate
from synartesis.proxy.call import (
    SURROGATE_REFUSAL,
    CallContext,
    is_plain_read,
    lone_surrogate,
    tool_result,
)
from synartesis.proxy.framing import (
    NOT_RESPONSE,
    PREVIEW,
    LazyFrame,
    id_key,
    reread,
    response_id,
)
from synartesis.proxy.payload import cli_command, error_text, is_error, payload
from synartesis.proxy.transport import RequestFailed, is_unknown_answer

__all__ = ["DECLARED_NOTE", "GATE_PREFIX", "CallContext", "CallHost", "ReadOutcome", "classify_read", "handle_call",
           "is_plain_read", "read_record", "resolve_call", "run_read_sync", "start_read", "tool_result"]

GATE_PREFIX = "Synartesis is holding this call for approval"
IRREVERSIBLE = "this action cannot be undone"
READ_RESULT_WHOLE = 1024
# a read settled by a frame whose ends name its id, but whose parse says it is not that
# answer (a request carrying a result, or a later id): forwarded as it was, its outcome unknown
UNSURE_ANSWER = ("outcome unknown: the server sent a frame that ends like the answer to this call but is not "
                 "(it names a method, or a later id); it was forwarded as it was")
# What the agent is told when the journal cannot take a call (the error names the journal,
# never a password): the call is held, not sent (issue 14 item 4).
JOURNAL_DOWN = ("Synartesis is holding this call and did not send it: it could not be journalled ({error}). "
                "Nothing was changed. Every call is held while the journal cannot be reached; make this exact "
                "call again once it is back.")
#: the note on an action whose post-state came from the policy's ``post_state``, not a read
DECLARED_NOTE = "post-state declared by the policy (post_state), not read back"


class ReadOutcome:
    """A pre-read, post-read or drift read: ``present`` (with payload), ``absent`` or ``failed``."""

    __slots__ = ("kind", "payload", "reason")

    def __init__(self, kind: str, payload: Any = None, reason: str = "") -> None:
        self.kind = kind
        self.payload = payload
        self.reason = reason

    def observation(self) -> dict | None:
        """``{"present": true, "value": …}`` / ``{"present": false}``; None when failed."""
        if self.kind == "present":
            return {"present": True, "value": self.payload}
        if self.kind == "absent":
            return {"present": False}
        return None

    def __repr__(self) -> str:
        return f"ReadOutcome({self.kind!r}, reason={self.reason!r})"


class CallHost(Protocol):
    """What the pipeline needs from the engine that runs it (no transport, no threads)."""

    journal: Any  # synartesis.journal.Journal, opened on first use
    call_timeout: float | None

    def route(self, exposed: str) -> tuple[str, str]: ...
    def policy_rule(self, server: str, tool: str, args: Any) -> Rule: ...
    def ensure_run(self) -> str: ...
    def next_seq(self) -> int: ...
    def pin_problem(self, server: str) -> str | None: ...
    def protected_paths(self) -> list[str]: ...
    def reply_error_result(self, ctx: CallContext, text: str) -> None: ...
    def reply_protocol_error(self, ctx: CallContext, code: int, message: str) -> None: ...
    def forward(self, ctx: CallContext, *, wait: bool) -> bool: ...
    def forward_read(self, ctx: CallContext, run_id: str, server: str, tool: str, rule: str | None,
                     args: Any) -> None: ...
    def await_answer(self, ctx: CallContext) -> Any: ...
    def report_timeout(self, ctx: CallContext) -> None: ...
    def read(self, read: dict) -> ReadOutcome: ...
    def read_soon(self, read: dict) -> "Callable[[], ReadOutcome]": ...
    def read_later(self, read: dict, then: "Callable[[], None] | None" = None) -> "Callable[[], ReadOutcome]": ...
    def release_kept(self, ctx: CallContext) -> None: ...
    def record_read(self, item: dict) -> None: ...
    def saga_enabled(self, server: str) -> bool: ...
    def rollback(self, server: str, error: str) -> str: ...
    def send_answer(self, ctx: CallContext, body: dict) -> None: ...


# -- reads: one classification for the proxy and for undo ---------------------------------
def _absent_words(read: dict | None, said: str, state: str = "does not exist yet") -> str:
    """A pre-read's "absent" in words (new user round 9: a new file's hold showed the raw
    ``ENOENT`` error): ``the file does not exist yet`` for a file read; otherwise the server's
    own words are kept, since they may be the only ones that name what is missing."""
    tool = read.get("tool") if isinstance(read, dict) else None
    if isinstance(tool, str) and "file" in tool.lower():
        return f"the file {state}"
    return f"what it changes {state} (the read said: {said})"


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, walked without recursion."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _error_words(result: Any, read: dict, phrases: list[str]) -> str:
    """A read's error result as the lower-case text ``phrases`` (its ``absent_when``) are
    matched against: the whole result (a server may put its code, ``ENOENT``, in
    ``structuredContent``) without the echoes of the read's own arguments that hold a phrase.

    A server echoes the path it was asked for ("EACCES: permission denied, open
    '/data/ENOENT-notes.txt'"): matched as it was, a file whose name holds a phrase counted
    as absent whatever the error said, and its write went through with nothing to restore
    (adversarial review 16, F2). An argument string that holds a phrase is taken out where it
    occurs; one that does not occur (the server resolved the path its own way) has its last
    path part taken out instead. A phrase that was only in the echo no longer matches: the
    read counts as failed and the write is refused, the safe side.
    """
    blob = json.dumps(result, ensure_ascii=False)
    low = [p.lower() for p in phrases if p]
    for a in sorted({a for a in _strings(read.get("args")) if a}, key=len, reverse=True):
        if not any(p in a.lower() for p in low):
            continue
        echo = json.dumps(a, ensure_ascii=False)[1:-1]
        if echo not in blob:
            echo = json.dumps(a.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1], ensure_ascii=False)[1:-1]
        if echo and any(p in echo.lower() for p in low):
            blob = blob.replace(echo, " ")
    return blob.lower()


def classify_read(read: dict, result: Any, max_bytes: int) -> ReadOutcome:
    """What a read's ``result`` (or the :class:`RequestFailed` it raised) says about the
    resource. Payloads larger than ``max_bytes`` (UTF-8 of canonical JSON) fail: a write
    whose prior state cannot be kept is refused rather than risked (FINDINGS §5)."""
    if isinstance(result, RequestFailed):
        return ReadOutcome("failed", reason=f"the read {read['server']}.{read['tool']} failed: {result.message}")
    if is_error(result):
        text = error_text(result)
        phrases = read.get("absent_when") or []
        if not phrases or any(p.lower() in _error_words(result, read, phrases) for p in phrases):
            return ReadOutcome("absent", reason=text)
        return ReadOutcome("failed", reason=f"the read {read['server']}.{read['tool']} reported an error: {text}")
    value = payload(result)
    try:
        text = canonical(value)
    except RecursionError:  # deeper than the stdlib's encoder goes: measured below, iteratively
        text = None
    deep = too_deep(value, text)
    if deep or text is None:
        return ReadOutcome("failed", reason=(
            f"the read {read['server']}.{read['tool']} returned a value nested {deep or 'over 900'} levels deep, deeper "
            f"than the {MAX_DEPTH} levels synartesis journals, so it cannot be kept to restore; a write "
            "whose prior state cannot be kept is refused rather than risked"))
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


def _read_params(read: dict) -> dict:
    return {"name": read["tool"], "arguments": read.get("args", {})}


def start_read(upstream: Any, read: dict, *, timeout: float | None, max_bytes: int,
               meta: dict | None = None, on_answer: Callable[[], None] | None = None) -> Callable[[], ReadOutcome]:
    """Send a resolved read now and return what waits for its outcome: ``upstream.submit``
    where the upstream has it (the stdio one), else the read is run at once.

    ``on_answer`` (optional, no arguments) is called once the answer (or the failure) is in,
    on the upstream's reader thread, or at once when the read ran or failed here: the lane
    uses it to commit a write's outcome when it is idle without blocking on the read."""
    submit = getattr(upstream, "submit", None)
    if submit is None:
        done = run_read_sync(upstream.request, read, timeout=timeout, max_bytes=max_bytes, meta=meta)
        if on_answer is not None:
            on_answer()
        return lambda: done
    try:
        if on_answer is None:
            waiting = submit("tools/call", _read_params(read), meta=meta)
        else:
            waiting = submit("tools/call", _read_params(read), meta=meta, callback=lambda _outcome: on_answer())
    except RequestFailed as exc:
        failed = classify_read(read, exc, max_bytes)
        if on_answer is not None:
            on_answer()
        return lambda: failed

    def outcome() -> ReadOutcome:
        answer = waiting.wait(timeout)
        if answer is None:
            upstream.forget(waiting)  # its callback will never run now: the failure is in
            if on_answer is not None:
                on_answer()
            result: Any = RequestFailed(f"no answer within {timeout:g} s", "timeout")
        else:
            try:
                result = upstream.result_of("tools/call", answer)
            except RequestFailed as exc:
                result = exc
        return classify_read(read, result, max_bytes)
    return outcome


def run_read_sync(request: Any, read: dict, *, timeout: float | None, max_bytes: int,
                  meta: dict | None = None) -> ReadOutcome:
    """Run a resolved read ``{"server","tool","args","absent_when"?,"refuse_when"?}`` with a
    blocking ``request(method, params, timeout=, meta=) -> result`` (an Upstream's)."""
    try:
        result = request("tools/call", _read_params(read), timeout=timeout, meta=meta)
    except RequestFailed as exc:
        result = exc
    return classify_read(read, result, max_bytes)


def resolve_call(template: CallTemplate, scope: dict) -> dict:
    """A template resolved to a literal call ``{"server","tool","args"[,"absent_when","refuse_when","unordered"]}``.

    Raises:
        RefError: a reference that does not resolve.
    """
    out = {"server": template.server, "tool": template.tool, "args": resolve_template(template.args, scope)}
    if template.absent_when:
        out["absent_when"] = list(template.absent_when)
    if template.refuse_when:
        out["refuse_when"] = list(template.refuse_when)
    if template.unordered:
        out["unordered"] = True
    return out


def _inverse_problem(rule: Rule, args: Any, snapshot: Any) -> str | None:
    """Why the rule's inverse cannot be built from the arguments and pre-read (None if it can,
    as far as can be told before the call: ``$result`` references are checked after it)."""
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


def _created_nothing(rule: Rule, inverse: list) -> bool:
    """Does the call's own answer say it created nothing: every argument of every inverse call
    an empty list, each projected from the result (``$result.entities[].name``)? Only such a
    list is the answer naming nothing; an empty list that is a whole value (``$result.previous``,
    ``$snapshot.tags``, a literal ``[]``) is a state to put back (see
    :func:`synartesis.journal.rows.acts_on_nothing`)."""
    if len(inverse) != len(rule.inverse):
        return False
    for call, template in zip(inverse, rule.inverse):
        args = call.get("args")
        if not isinstance(args, dict) or not args or any(v != [] for v in args.values()):
            return False
        for value in template.args.values() if isinstance(template.args, dict) else [None]:
            ref = parse_ref(value) if isinstance(value, str) else None
            if ref is None or ref[0] != "result" or None not in ref[1]:
                return False
    return True


def _uses_snapshot(rule: Rule) -> bool:
    return any(ns == "snapshot" for call in rule.inverse for _, ns in references(call.args))


def cap_result(result: Any) -> Any:
    """A read's result as journalled: whole up to 1 KiB, else its size, SHA-256 and a preview.

    Undo never needs what a read returned, reads can be tens of megabytes (PROXY.md §2.8), and
    journalling them whole costs every read a compression and a payload write; writes keep
    their whole result because ``--replan`` resolves ``$result`` from it.
    """
    text = compact(result)
    if len(text) <= READ_RESULT_WHOLE and not too_deep(result, text):
        return result
    import hashlib
    data = text.encode("utf-8", "surrogatepass")
    return {"synartesisDigest": True, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "preview": text[:PREVIEW]}


def read_record(item: dict) -> dict:
    """A plain read's journal record completed from its answer (on the journal thread).

    ``item`` holds ``run, server, tool, rule, args, seq`` and either ``status``/``note`` (it
    never got an answer) or ``answer`` (the server's response: a dict or a
    :class:`~synartesis.proxy.framing.LazyFrame`, whose result over 1 KiB is digested from its
    bytes without being parsed).
    """
    if "answer" not in item:
        return item
    msg = item.pop("answer")  # the item is this read's alone (the engine settled it): completed in place
    if isinstance(msg, LazyFrame):
        if not msg.sure():  # routed by its two ends; the parse the relay thread skipped is done here
            parsed = reread(msg.line)  # over 1 MiB: its real envelope, the result not built
            mid = response_id(parsed)
            if mid is NOT_RESPONSE or id_key(mid) != id_key(msg.member("id")):
                item["status"], item["note"] = "unknown", UNSURE_ANSWER
                return item
            item["answer"] = parsed
            return read_record(item)
        if msg.has_error():
            item["status"] = "failed"
            item["note"] = f"the server answered with an error: {_error_message(msg.member('error'))}"
            return item
        if msg.result_size() <= READ_RESULT_WHOLE and (result := msg.result()) is not None:
            item["answer"] = {"result": result}
            return read_record(item)
        # over 1 KiB, or a result json.loads will not read (an int of over 4,300 digits, which
        # the client's JavaScript reads): digested from its bytes (adversarial review 14)
        digest = msg.result_digest() or {}
        if digest.pop("isError", False):
            item["status"] = "failed"
            item["note"] = f"the server refused the call: {digest.get('preview', '')[:500]}"
        else:
            item["status"] = "applied"
        item["result"] = digest
        return item
    if not isinstance(msg, dict):
        item["status"], item["note"] = "unknown", "the server's answer was not JSON-RPC"
        return item
    if "error" in msg:
        item["status"] = "unknown" if is_unknown_answer(msg) else "failed"  # unknown: a remote answer was lost
        item["note"] = f"the server answered with an error: {_error_message(msg.get('error'))}"
        return item
    result = msg.get("result")
    if is_error(result):
        item["status"], item["note"] = "failed", f"the server refused the call: {error_text(result)}"
    else:
        item["status"] = "applied"
    item["result"] = cap_result(result)
    return item


def _error_message(err: Any) -> Any:
    return err.get("message") if isinstance(err, dict) else err


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


def handle_call(host: CallHost, ctx: CallContext) -> None:
    """Run one ``tools/call`` through the pipeline; the client gets exactly one answer (from
    the server, forwarded by the engine, or from us)."""
    params = ctx.msg.get("params")
    exposed = params.get("name") if isinstance(params, dict) else None
    if not isinstance(exposed, str):
        # issue 9: "params": null (or no tool name) used to be forwarded, and servers that
        # drop invalid requests never answered; a call we cannot classify is not sent
        host.reply_protocol_error(ctx, -32602, "Invalid params: tools/call needs params with a tool name "
                                  "(a string) and arguments (an object)")
        return
    args = params.get("arguments")
    args = {} if args is None else args
    deep = too_deep(args, ctx.line)
    if deep:  # the journal could not keep them (and canonical JSON could not compare them)
        log("warn", "refused a tools/call nested too deep", tool=repr(exposed), depth=deep)
        host.reply_error_result(ctx, f"Synartesis refused this call: its arguments are nested {deep} levels "
                                f"deep, deeper than the {MAX_DEPTH} levels synartesis journals. It was not "
                                "sent. Send the same data less deeply nested.")
        return
    if lone_surrogate(ctx.line, params):
        log("warn", "refused a tools/call holding a lone surrogate", tool=repr(exposed))
        host.reply_error_result(ctx, SURROGATE_REFUSAL)
        return
    try:
        server, tool = host.route(exposed)
    except LookupError as exc:
        host.reply_protocol_error(ctx, -32602, str(exc))
        return
    rule = host.policy_rule(server, tool, args)
    qualified = f"{server}.{tool}"
    try:
        run_id = host.ensure_run()
        j = host.journal
    except JournalError as exc:
        # Fail closed (issue 14 item 4): no journal, no call; never a silent local fallback.
        log("error", "journal failed; the call was not sent", error=str(exc), tool=qualified)
        host.reply_error_result(ctx, JOURNAL_DOWN.format(error=exc))
        return
    try:
        _pipeline(host, ctx, j, run_id, server, tool, qualified, rule, args)
    except JournalError as exc:
        log("error", "journal failed; the call was not sent" if not ctx.forwarded
            else "journal failed after the call was sent", error=str(exc), tool=qualified)
        if not ctx.forwarded:
            host.reply_error_result(ctx, JOURNAL_DOWN.format(error=exc))
    finally:
        if not ctx.kept_by_read:
            host.release_kept(ctx)
        if ctx.held is not None:  # saga mode kept an answer back and could not amend it: it still goes out
            ctx.held = None
            answer = ctx.answer.parse() if isinstance(ctx.answer, LazyFrame) else ctx.answer
            host.send_answer(ctx, answer)


def _pipeline(host: CallHost, ctx: CallContext, j: Any, run_id: str, server: str, tool: str,
              qualified: str, rule: Rule, args: Any) -> None:
    rule_name = rule.match if rule.matched else None
    # 2. pins
    pin_problem = host.pin_problem(server)
    if pin_problem:
        action = j.record_action(run_id, server, tool, rule.cls, rule_name, args, status="failed", note=pin_problem)
        host.reply_error_result(ctx, pin_problem)
        return

    # 3. gate
    wants_gate = rule.gate == "always" or (rule.gate == "on_write" and should_gate(args, rule.sql_arg))
    own = touches_own_files(args, host.protected_paths()) if rule.cls != "readonly" else None
    action = None
    if wants_gate or own:
        why = own or _gate_reason(rule, wants_gate)
        action = _pass_gate(host, ctx, server, tool, rule, args, run_id, why)
        wants_gate = True
        if action is None:
            return
    # a plain read is forwarded first and journalled once its answer has gone to the client;
    # so is a call the on_write gate let through as a read (a SELECT under sqlite's read_query,
    # irreversible for anything else): it is journalled readonly, as what it was, not as a
    # call that "cannot be undone"
    passed_as_read = (rule.gate == "on_write" and not wants_gate and not rule.inverse)
    if action is None and (rule.cls == "readonly" or passed_as_read) and rule.snapshot is None and rule.verify is None:
        host.forward_read(ctx, run_id, server, tool, rule_name, args)
        return
    approved = wants_gate
    # 5. snapshot (taken before the row is written, so both land in one transaction: a write
    # is recorded, with the state it will replace, before it is sent)
    snapshot_out: ReadOutcome | None = None
    read: dict | None = None
    prep = None
    if rule.snapshot is not None:
        try:
            read = resolve_call(rule.snapshot, {"args": args})
        except RefError as exc:
            read, snapshot_out = None, ReadOutcome("failed", reason=f"its pre-read could not be built from the arguments: {exc}")
        else:
            answer = host.read_soon(read)
            # while the read is at the server (the lane is idle then; no write lock is taken):
            # what the row needs that the answer cannot change, and the earlier write's outcome
            # encoded, so it commits while this call is at the server with only its SQL left
            if action is None:
                prep = j.prepare_action(run_id, server, tool, rule.cls, rule_name, args,
                                        verify={k: v for k, v in read.items() if k != "refuse_when"})
            j.prepare_deferred()
            if prep is not None:
                _store_ahead(j, prep)
            snapshot_out = answer()
        if snapshot_out.kind == "failed":
            reason = snapshot_out.reason
            note = f"write blocked: {reason}"
            if action is None:
                action = j.record_action(run_id, server, tool, rule.cls, rule_name, args, status="failed", note=note)
            else:
                j.mark_failed(action.id, note)
            ctx.action_id = action.id
            log("error", "write blocked: snapshot failed", action=action.id, tool=qualified, reason=reason)
            host.reply_error_result(ctx, f"Synartesis blocked {qualified} and did not send it: {reason}.")
            return
        prior = "captured" if snapshot_out.kind == "present" else "absent"
        verify = {k: v for k, v in read.items() if k != "refuse_when"} if read is not None else None
        if prior == "absent" and _uses_snapshot(rule) and not approved and rule.snapshot.on_absent == "hold":
            # nothing to restore: held like an irreversible call (the waiting row is reused)
            reason = (f"{_absent_words(read, snapshot_out.reason)}, so there is nothing to restore and this call "
                      "cannot be undone")
            action = _pass_gate(host, ctx, server, tool, rule, args, run_id, reason)
            if action is None:
                return
            approved = True
        if not approved and prior == "captured":
            go, carried = _hold_unbuildable(host, ctx, server, tool, rule, args, run_id, snapshot_out.payload)
            if not go:
                return
            if carried is not None:
                action, approved = carried, True
        if action is None and prep is not None:
            action = j.record_prepared(prep, prior=prior, snapshot=snapshot_out.payload, carry=False)
        elif action is None:
            action = j.record_action(run_id, server, tool, rule.cls, rule_name, args, prior=prior,
                                     snapshot=snapshot_out.payload, verify=verify, carry=False)
        else:
            j.set_prior(action.id, prior, snapshot_out.payload if prior == "captured" else None, verify)
    else:
        if not approved:
            go, carried = _hold_unbuildable(host, ctx, server, tool, rule, args, run_id, None)
            if not go:
                return
            if carried is not None:
                action, approved = carried, True
        if action is None:
            action = j.record_action(run_id, server, tool, rule.cls, rule_name, args, carry=False)
    ctx.action_id = action.id
    # 6. forward (in saga mode an error answer is kept back until the run is rolled back);
    # earlier writes' post-reads are answered first, so each read the state its write left
    j.prepare_deferred()
    ctx.hold_error = rule.cls != "readonly" and host.saga_enabled(server)
    # a write read back after its answer keeps that answer until the read-back is answered
    ctx.keep_answer = (rule.cls != "readonly" and (read is not None or rule.verify is not None)
                       and getattr(rule, "post_state", None) is None)
    if not host.forward(ctx, wait=True):  # not written: certainly not applied
        if ctx.cancelled:  # the client withdrew it while it waited its turn: no answer is due
            j.mark_failed(action.id, "the client cancelled the call before it was sent")
            return
        j.mark_failed(action.id, f"{server} is not running, so the call was never sent")
        host.reply_protocol_error(ctx, -32000, f"synartesis: {server} is not running")
        return
    _flush_earlier(j)
    if snapshot_out is not None and snapshot_out.kind == "present" and not approved:
        _settle_held_twins(j, action)
    _settle(host, ctx, action.id, rule, args, snapshot_out, read)


def _settle_held_twins(j: Any, action: Any) -> None:
    """A write that passed because what it writes now exists may have an identical call held
    earlier as a creation: that hold no longer means anything (settled while this call is at
    the server; see :meth:`Journal.settle_held_twins`)."""
    try:
        for aid in j.settle_held_twins(action):
            log("info", "settled a held call: the same call went through without approval",
                action=aid, sent_as=action.id)
    except JournalError as exc:
        log("error", "could not settle an earlier held call", error=str(exc))


def _store_ahead(j: Any, prep: Any) -> None:
    """While the pre-read is at the server: commit the write's payloads and the earlier
    writes' deferred outcomes (:meth:`Journal.store_prepared`), so its record transaction holds
    only what must commit before the call is sent. A journal that fails here fails as
    :func:`_flush_earlier` does (those outcomes stay ``pending``); the record transaction
    stores the payloads itself, or fails and the call is not sent."""
    try:
        j.store_prepared(prep)
    except JournalError as exc:
        log("error", "could not journal an earlier write's outcome ahead of this write's record", error=str(exc))


def _flush_earlier(j: Any) -> None:
    """Commit earlier writes' deferred outcomes while this call is at the server (the lane
    would only wait for its answer, which the engine forwards to the client without the lane).
    A journal that fails here leaves those actions ``pending`` (``unknown`` once the run
    closes); this call is still settled."""
    if j.deferred:
        try:
            j.flush()
        except JournalError as exc:
            log("error", "could not journal a write's outcome", error=str(exc))


LOST_CODE = -32003  # as the remote transports and serve answer a call whose answer is lost


def _lost_answer(ctx: CallContext, why: str) -> dict:
    """The answer to a call that was sent and whose answer can never come (the server exited,
    or the proxy is shutting down): a JSON-RPC error ``-32003`` with
    ``error.data.synartesis.outcome`` ``"unknown"``, the frame a remote transport makes up for
    a lost answer, so every transport says it the same way."""
    params = ctx.msg.get("params") if isinstance(ctx.msg.get("params"), dict) else {}
    message = (f"synartesis: no answer to {params.get('name')}: {why}; whether the call was carried out is "
               "unknown, and undo stops there until a person has checked (see `synartesis show`)")
    return {"jsonrpc": "2.0", "id": ctx.msg.get("id"),
            "error": {"code": LOST_CODE, "message": message, "data": {"synartesis": {"outcome": "unknown"}}}}


def _gate_reason(rule: Rule, wants_gate: bool) -> str:
    """Why a call is held, as the agent reads it: a reversible or compensable rule held by
    ``gate: always`` is held because the policy asks for a person, not because it cannot be
    undone (telling the agent so would send it looking for another tool)."""
    if not rule.matched:
        return rule.note or IRREVERSIBLE
    if rule.hold_reason:
        return rule.hold_reason
    if wants_gate and rule.gate == "always" and rule.cls in ("reversible", "compensable"):
        undo = "undo it" if rule.cls == "reversible" else "compensate for it"
        return (f"the policy asks a person to approve every call of this tool (rule {rule.match}: "
                f"{rule.cls}, gate: always); synartesis can {undo} once it is done")
    if wants_gate and rule.gate == "on_write":
        what = f"its {rule.sql_arg} is not a plain read (only a read-only statement passes unasked)" if rule.sql_arg \
            else "its arguments are not plain reads (only read-only statements pass unasked)"
        return f"{what}, and as a write {IRREVERSIBLE}"
    return IRREVERSIBLE


def _hold_unbuildable(host: CallHost, ctx: CallContext, server: str, tool: str, rule: Rule, args: Any,
                      run_id: str, snapshot: Any) -> tuple[bool, Any]:
    """Hold a call whose inverse cannot be built from its arguments and pre-read (``snapshot``:
    its payload, None without one): the inverse must be buildable before the call is sent (its
    ``$result`` part is checked after), and one that can never resolve would turn a reversible
    write into a permanent one. Checked before the call has a row, so the held call is one
    ``gated`` row, and its approved retry is journalled on the approved row (adversarial
    review 30: a ``failed`` row came first, and the retry's outcome went to a new ``failed``
    row while the approved one ended ``unknown``).

    Returns (whether the call may go on, the approved row it goes on as): (True, None) when
    the inverse can be built, (True, row) on an approval, (False, None) when it was held or
    refused (the client has its answer)."""
    if not rule.inverse:
        return True, None
    broken = _inverse_problem(rule, args, snapshot)
    if not broken:
        return True, None
    carried = _pass_gate(host, ctx, server, tool, rule, args, run_id, broken)
    return carried is not None, carried


def _pass_gate(host: CallHost, ctx: CallContext, server: str, tool: str, rule: Rule, args: Any,
               run_id: str, why: str) -> Any:
    """Let the call through on an approval, refuse it on a denial, or hold it. Returns the
    approved row the call goes on as, or None when it was refused or held (the client has its
    answer). A refused retry gets its own ``denied`` row, so ``show`` and ``list`` count it;
    its note names the decision."""
    j = host.journal
    if ctx.cancelled and not ctx.forwarded:
        # withdrawn while its pre-read was at the server: not held (no person should decide on
        # a call nobody waits for), no approval spent, no answer (adversarial review 31, F4)
        j.record_action(run_id, server, tool, rule.cls, rule.match if rule.matched else None, args,
                        status="failed", note="the client cancelled the call before it was sent")
        return None
    carried = j.take_approval(run_id, server, tool, rule.cls, rule.match if rule.matched else None, args)
    if carried is not None:
        log("info", "proceeding on an approval", action=carried.id, by=carried.decided_by, tool=f"{server}.{tool}")
        return carried
    denial = j.find_denial(server, tool, args)
    if denial is not None:
        note = (f"refused, not sent: {denial.decided_by} denied this call (action {denial.id[:8]}) at "
                f"{denial.decided_at}: {denial.decision_note or 'no reason given'}")
        j.record_action(run_id, server, tool, rule.cls, rule.match if rule.matched else None, args,
                        status="denied", note=note)
        host.reply_error_result(ctx, _denied_text(denial))
        return None
    held, reused = j.hold(run_id, server, tool, rule.cls, rule.match if rule.matched else None, args, why)
    log("warn", "awaiting approval", action=held.id, tool=f"{server}.{tool}", reused=reused,
        approve=_approve_cmd(host, held.id))
    host.reply_error_result(ctx, _held_text(host, held.id, held.note or why))
    return None


def _approve_cmd(host: CallHost, action_id: str) -> str:
    import shlex
    return f"{cli_command()} approve {action_id[:8]} --journal {shlex.quote(str(host.journal.path))}"


def _held_text(host: CallHost, action_id: str, why: str) -> str:
    return (f"{GATE_PREFIX}, because {why}. It was not sent. Action {action_id[:8]} is waiting for a "
            f"person to approve it. Ask them to run:\n  {_approve_cmd(host, action_id)}\n"
            "then make this exact call again (same tool, same arguments). "
            "Do not try to reach the same result with a different tool.")


def _denied_text(denial: Any) -> str:
    reason = denial.decision_note or "no reason given"
    return (f"Synartesis refused this call: {denial.decided_by} denied it (action {denial.id[:8]}) at "
            f"{denial.decided_at}: {reason}. It was not sent. Do not retry it; tell the user and ask "
            "what they want instead.")


def _settle(host: CallHost, ctx: CallContext, action_id: str, rule: Rule, args: Any,
            snapshot_out: ReadOutcome | None, read: dict | None) -> None:
    """Wait for the forwarded call's answer and journal its outcome."""
    j = host.journal
    try:
        msg = host.await_answer(ctx)
    except RequestFailed as exc:
        try:
            j.mark_unknown(action_id, f"outcome unknown: {exc.message}")
            log("warn", "outcome unknown", action=action_id, reason=exc.message)
        finally:
            if exc.kind == "timeout":
                host.report_timeout(ctx)  # journalled first: what the agent is told is on record
            elif exc.kind == "closed":  # the server died, or we were told to stop: still an answer
                host.send_answer(ctx, _lost_answer(ctx, exc.message))
        return
    if msg is None:  # cancelled by the client after it was sent
        j.mark_unknown(action_id, "outcome unknown: the client cancelled the call after it was sent")
        return
    raw = msg.line if isinstance(msg, LazyFrame) else None
    if isinstance(msg, LazyFrame):
        msg = msg.readable()  # an answer json.loads will not read: its result digested
    if not isinstance(msg, dict):
        j.mark_unknown(action_id, "outcome unknown: the server's answer was not JSON-RPC")
        return
    if "error" in msg:
        if is_unknown_answer(msg):  # a remote transport lost the answer after the call was sent
            j.mark_unknown(action_id, f"outcome unknown: {_error_message(msg.get('error') or {})}")
            return
        error = _error_message(msg.get("error") or {})
        j.mark_failed(action_id, f"the server answered with an error: {error}")
        _answer_held(host, ctx, msg, server_of(ctx, host), str(error))
        return
    result = msg.get("result")
    if isinstance(result, dict) and result.get("resultType") == "input_required":
        # 2026-07-28 multi-round-trip: the server needs input first; nothing was applied.
        j.mark_failed(action_id, "the server asked for input first (input_required); the client's retry "
                      "is recorded as its own action", result)
        return
    if is_error(result):
        _error_after_write(host, action_id, rule, args, result, snapshot_out, read)
        _answer_held(host, ctx, msg, server_of(ctx, host), error_text(result, 200))
        return
    notes: list[str] = []
    inverse: list | None = None
    scope: dict[str, Any] = {"args": args, "result": payload(result)}
    if snapshot_out is not None and snapshot_out.kind == "present":
        scope["snapshot"] = snapshot_out.payload
    if rule.inverse:
        if snapshot_out is not None and snapshot_out.kind == "absent" and _uses_snapshot(rule):
            notes.append(f"{NOTHING_TO_RESTORE}: {_absent_words(read, snapshot_out.reason, 'did not exist before the call')}")
        else:
            try:
                inverse = [resolve_call(c, scope) for c in rule.inverse]
            except RefError as exc:
                notes.append(f"inverse could not be resolved: {exc}")
    created_nothing = inverse is not None and _created_nothing(rule, inverse)
    verify_read: dict | None = None
    post: dict | None = None
    kept_read: Callable[[], ReadOutcome] | None = None
    if read is not None:
        verify_read = {k: v for k, v in read.items() if k != "refuse_when"}
    elif rule.verify is not None:
        try:
            verify_read = resolve_call(rule.verify, scope)
        except RefError as exc:
            notes.append(f"verify read could not be resolved: {exc}")
    declared = getattr(rule, "post_state", None)
    info: list[str] = []
    if verify_read is not None and rule.cls != "readonly":
        if declared is not None:
            # the policy says what the read would return now (e.g. write_file's content): no
            # round trip; undo's drift check reads the resource anyway before it reverts
            try:
                post = {"present": True, "value": resolve_template(declared, scope)}
                info.append(DECLARED_NOTE)
            except RefError as exc:
                notes.append(f"the declared post_state could not be resolved, so it was read back: {exc}")
        if post is None:
            # sent now; its answer releases the kept-back answer (and the lane waits for it
            # below). Its outcome is committed while the next call is at the server, or when
            # its answer finds the lane idle (Engine._lane_loop)
            pending = host.read_later(verify_read, then=lambda: host.release_kept(ctx))
            if ctx.keep_answer:
                ctx.kept_by_read, kept_read = True, pending

            def post_state() -> tuple[dict | None, str | None]:
                observed = pending()
                state = observed.observation()
                if state is None:
                    log("warn", "applied with reservations", action=action_id, notes=[observed.reason])
                    return None, f"post-state could not be captured: {observed.reason}"
                return state, None
            post = post_state
    deep = too_deep(result, raw)
    if deep:  # the client has the answer; the journal keeps a note of it instead
        notes.append(f"its result is nested {deep} levels deep, deeper than the {MAX_DEPTH} levels synartesis "
                     "journals, so it was not kept")
        result = {"synartesisNotKept": True, "depth": deep}
    # a pre-read's call was recorded with the row (as its drift read): kept, not stored again
    j.defer_applied(action_id, result=result if rule.cls != "readonly" else cap_result(result),
                    inverse=inverse, verify=... if read is not None else verify_read, post=post,
                    note="; ".join(([f"{CREATED_NOTHING} (undo has nothing to send)"] if created_nothing else [])
                                   + notes + info) or None)
    if notes:
        log("warn", "applied with reservations", action=action_id, notes=notes)
    if kept_read is not None:
        # the client has no answer until the read-back is in: wait for it here (up to the read
        # timeout, after which the answer goes out and the post-state is "could not be
        # captured"), since a client waiting for this answer sends nothing that would
        kept_read()


def server_of(ctx: CallContext, host: CallHost) -> str:
    """The server a call went to."""
    return host.route(ctx.msg["params"]["name"])[0]


def _error_after_write(host: CallHost, action_id: str, rule: Rule, args: Any, result: Any,
                       snapshot_out: ReadOutcome | None, read: dict | None) -> None:
    """Journal a call the server answered with ``isError: true`` (issue 10 item 4).

    An error is no proof that nothing happened. A readonly call failed. A write is read again
    with its rule's pre-read (compared with the snapshot) or, with none, its ``verify`` read
    (the resource the call makes: absent means nothing was made): unchanged → ``failed``,
    changed → ``applied`` with the error kept and an inverse (so undo can put it back),
    unreadable → ``unknown``. A rule with neither may declare a ``settle`` read, made only
    here: absent → ``failed``; present → ``unknown`` (it may have been there before: nothing
    was read before the call). With no read to settle it, an error on a write is ``unknown``.
    """
    j = host.journal
    error = error_text(result)
    if rule.cls == "readonly":
        j.mark_failed(action_id, f"the server refused the call: {error}", result)
        return
    scope: dict[str, Any] = {"args": args, "result": payload(result)}
    if snapshot_out is not None and snapshot_out.kind == "present":
        scope["snapshot"] = snapshot_out.payload
    verify_read: dict | None = None
    before: dict | None = None
    if read is not None and snapshot_out is not None:
        verify_read = {k: v for k, v in read.items() if k != "refuse_when"}
        before = snapshot_out.observation()
    elif rule.verify is not None:
        try:
            verify_read = resolve_call(rule.verify, scope)
        except RefError:
            verify_read = None  # e.g. it reads the id the call would have returned
        before = {"present": False}  # what the call makes did not exist before it
    elif rule.settle is not None:
        try:
            settle = resolve_call(rule.settle, scope)
        except RefError:
            settle = None
        if settle is not None:
            now = host.read(settle).observation()
            status = j.mark_error_after_write(action_id, result=result, error=error, reread=(
                "unreadable" if now is None else "unchanged" if not now.get("present") else "present"))
            log("warn" if status != "failed" else "info", "the server reported an error", action=action_id,
                status=status, error=error)
            return
    reread: str | None = None
    now: dict | None = None
    if verify_read is not None:
        now = host.read(verify_read).observation()
        reread = "unreadable" if now is None else ("unchanged" if same_state(now, before, verify_read) else "changed")
    inverse = None
    if reread == "changed" and rule.inverse and not (snapshot_out is not None and snapshot_out.kind == "absent"
                                                     and _uses_snapshot(rule)):
        try:
            inverse = [resolve_call(c, scope) for c in rule.inverse]
        except RefError:
            inverse = None  # left in place by undo, with the note saying why
    status = j.mark_error_after_write(action_id, result=result, reread=reread, error=error, inverse=inverse,
                                      verify=verify_read, post=now)
    log("warn" if status != "failed" else "info", "the server reported an error", action=action_id,
        status=status, error=error)


def _answer_held(host: CallHost, ctx: CallContext, msg: dict, server: str, error: str) -> None:
    """Saga mode: the error answer was kept back; roll the run back, then answer with what was
    rolled back and what was left (issue 10 item 8). Always answers, even if the rollback fails."""
    if ctx.held is None:
        return
    try:
        told = host.rollback(server, error)
    except Exception as exc:  # noqa: BLE001 - the agent still gets its answer
        log("error", "saga rollback failed", error=f"{type(exc).__name__}: {exc}")
        told = (f"Synartesis saga mode: this call failed ({error}), and rolling back the earlier changes failed too: "
                f"{exc}. Nothing more was done; a person must look (`synartesis undo` shows the run).")
    body = dict(msg)
    if "error" in body and isinstance(body["error"], dict):
        err = dict(body["error"])
        err["message"] = f"{err.get('message', '')}\n\n{told}"
        body["error"] = err
    else:
        result = dict(body.get("result") or {})
        result["content"] = [*(result.get("content") or []), {"type": "text", "text": told}]
        body["result"] = result
    ctx.held = None
    host.send_answer(ctx, body)
