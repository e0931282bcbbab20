"""The relay engine: one MCP client, one MCP server, plain threads and blocking I/O.

Contract (DESIGN §3 and §10, PROXY.md §2):
- Every frame is parsed to route it; every message that is not intercepted is forwarded as its
  original bytes in both directions (notifications, progress, cancellation, resources,
  prompts, pings, unknown methods, batches without ``tools/call``, server→client requests).
- Intercepted: ``tools/call`` (the pipeline, in one ordered lane so a later write never
  overtakes an earlier one); ``initialize`` results get the Synartesis instructions added;
  ``tools/list`` results are read (never altered) to learn tool shapes for pins.
- Threads: the downstream's reader calls :meth:`Engine.on_client_line`; the upstream's reader
  calls :meth:`Engine.on_server_message`; the lane thread runs the pipeline for every
  ``tools/call`` that must wait its turn or capture state; the journal thread writes read
  records in batches and runs the call timer. A plain read with nothing queued ahead of it is
  forwarded from the client reader itself, and its answer goes to the client from the server
  reader: nothing but forwarding sits on a read's path.
- The engine knows its server only as an :class:`~synartesis.proxy.transport.Upstream` and its
  client only as ``send_to_client(bytes)``.
- A forwarded call not answered within the call timeout (default 10 minutes) is answered with
  an error telling the agent the outcome is unknown, journalled ``unknown``, and cancelled at
  the server; a late answer is dropped.
- Shutdown (:meth:`Engine.serve`): client EOF → finish queued calls (bounded) → close the
  server (stdin, 2 s, SIGTERM, 2 s, SIGKILL) → calls still in flight become ``unknown`` →
  journal what is queued → close the run. The server exiting first ends the session with its
  exit code.
"""

from __future__ import annotations

import _thread
import itertools
import os
import signal
import threading
import time
from _queue import Empty as _Empty, SimpleQueue  # queue's, without importing queue and heapq
from collections.abc import Callable
from pathlib import Path

from synartesis.errors import JournalError
from synartesis.log import log
from synartesis.policy.model import Policy, Rule
from synartesis.proxy.call import CallContext, error_answer, is_plain_read, lone_surrogate, tool_result
from synartesis.proxy.framing import (INVALID, NOT_RESPONSE, LazyFrame, batch_items, dump, id_key, parse, refusal,
                                      reread, response_id)
from synartesis.proxy.transport import RequestFailed, Upstream

TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

    from synartesis.proxy.pipeline import ReadOutcome
    from synartesis.proxy.recorder import JournalThread

__all__ = ["DEFAULT_CALL_TIMEOUT", "INSTRUCTIONS", "Engine", "EngineOptions", "SagaHook", "batch_refusal", "id_key", "server_process"]

#: ``hook(*, journal, run_id, server, request, policy, options, error) -> str``: rolls the run
#: back (saga mode) and returns what the agent is told (``synartesis.services.saga.rollback``).
SagaHook = Callable[..., str]

INSTRUCTIONS = (
    "These tools are guarded by Synartesis, which records every change so it can be undone later.\n\n"
    "Some actions cannot be undone. Those are held until a person approves them: the call returns "
    "an error beginning \"Synartesis is holding this call for approval\" and nothing is done. When "
    "that happens:\n"
    "  1. Tell the user plainly that the call is held and what it would do.\n"
    "  2. Give them the exact `synartesis approve …` command from the error.\n"
    "  3. Once they say they approved it, make the same call again with the same arguments. It will go through.\n"
    "If the error says the call was denied, do not retry it; ask the user what they want instead.\n"
    "Do not work around a held call by using a different tool to achieve the same thing."
)
MODERN_KEY = "io.modelcontextprotocol/protocolVersion"
CANCELLED = "cancelled "  # prefixes a pending request's method once the client cancelled it
DEFAULT_CALL_TIMEOUT = 600.0


#: a numeric tools/call id must be below this in magnitude (2**53: above it a JavaScript
#: server's double cannot hold the id exactly, and it drops the request)
_SAFE_ID = 2 ** 53


def server_process(upstream: Any) -> dict:
    """``{"pid", "started"[, "mark"]}`` of a server on pipes (its pid, start token,
    :func:`synartesis.journal.liveness.start_token`, and the value of
    :data:`synartesis.proxy.spawn.MARK_VAR` in its environment), recorded in the run's launch line: an
    undo must not settle a call of unknown outcome by a read while the server that received it
    still runs, since it may still carry it out (its proxy killed, it went on: adversarial
    review 16, F1). ``{}`` for an upstream with no process of ours (a remote server)."""
    pid = getattr(upstream, "pid", None)
    if not isinstance(pid, int) or isinstance(pid, bool):
        return {}
    from synartesis.journal.liveness import start_token
    line = {"pid": pid, "started": start_token(pid)}
    mark = getattr(upstream, "mark", None)
    if isinstance(mark, str):
        line["mark"] = mark  # what it and all it starts find in their environment (spawn.MARK_VAR)
    return line


def batch_refusal(batch: list, why: str | None = None) -> list | dict | None:
    """The answer to a client's JSON-RPC batch that is not forwarded, or None to forward it.

    Forwarded only when every element is an object and none is a ``tools/call`` (which cannot
    be journalled in order inside a batch). Refused: each request gets ``-32600`` under its id
    (a string or a number; null for any other), each element that is not an object ``-32600``
    with id null, and an empty batch a single ``-32600`` object with id null, not an array
    (JSON-RPC 2.0 §6: "the response from the Server MUST be a single Response object"; new
    user round 31, 10g). A nested
    array was forwarded raw, a ``tools/call`` inside it unjournalled, and nothing answered
    (adversarial review 17, F6). ``why``: the message (default: send tools/call on its own).
    """
    calls = any(isinstance(m, dict) and m.get("method") == "tools/call" for m in batch)
    odd = [m for m in batch if not isinstance(m, dict)]
    if batch and not calls and not odd and why is None:
        return None
    text = why or ("synartesis: send tools/call on its own, not inside a batch, so it can be journalled" if calls
                   else "Invalid Request: a batch element must be a request object")
    if not batch:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request: an empty batch"}}
    out = []
    for m in batch:
        if isinstance(m, dict):
            if "id" in m and "method" in m:
                mid = m["id"] if m["id"].__class__ in (int, str, float) else None
                out.append({"jsonrpc": "2.0", "id": mid, "error": {"code": -32600, "message": text}})
        else:
            out.append({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Invalid Request: a batch element must be a request object; "
                                           "nothing of this batch was sent"}})
    return out


class EngineOptions:
    """Tunables. Seconds for times (``call_timeout`` None = wait for ever), bytes for the cap.

    Attributes:
        call_timeout: how long a forwarded ``tools/call`` may go unanswered (issue 9: 10 min).
        read_timeout: how long one of our own reads (pre-read, post-read, catalog) may take.
        max_snapshot_bytes: writes whose prior state is larger are refused.
        saga: roll a run back when one of its calls fails (``proxy --saga``; per server:
            ``servers.NAME.saga``).
        grace: each step of the server's shutdown (stdin closed, SIGTERM, SIGKILL).
        eof_drain: after client EOF, how long queued calls may take to finish.
    """

    def __init__(self, call_timeout: float | None = DEFAULT_CALL_TIMEOUT, read_timeout: float = 30.0,
                 max_snapshot_bytes: int = 8 * 1024 * 1024, grace: float = 2.0, eof_drain: float = 60.0,
                 saga: bool = False) -> None:
        self.saga = saga  # --saga: every server in saga mode (else servers.NAME.saga)
        self.call_timeout = call_timeout
        self.read_timeout = read_timeout
        self.max_snapshot_bytes = max_snapshot_bytes
        self.grace = grace
        self.eof_drain = eof_drain


class Engine:
    """One server behind one client (the installed form, ``proxy --server NAME -- CMD …``).

    Args:
        server: the policy's name for the server.
        upstream: the server connection (not yet started).
        send_to_client: writes one frame to the client (thread-safe).
        policy: the loaded policy, or None (then every call is held, ``policy_note`` says why).
        journal_path: the journal; opened, and created, at the first ``tools/call``.
        launch: ``{command, args, cwd}`` recorded with the run (arguments redacted).
        protected: extra files no guarded call may write without approval (the policy cache).
        saga_hook: what rolls a run back in saga mode (given by the process's entry point,
            so the proxy imports nothing of the undo engine: ``services.saga.rollback``).
        origin: the run's :class:`~synartesis.journal.runs.RunOrigin` (default: this process's;
            ``serve`` gives each MCP session its own agent session).
    """

    def __init__(self, server: str, upstream: Upstream, send_to_client: Callable[[Any], None], *,
                 policy: Policy | None, journal_path: Path, options: EngineOptions,
                 launch: dict | None = None, policy_note: str | None = None,
                 protected: list[str] | None = None, saga_hook: SagaHook | None = None,
                 origin: Any = None) -> None:
        self.server = server
        self.origin = origin
        self.saga_hook = saga_hook
        self.upstream = upstream
        self.send_to_client = send_to_client
        self.policy = policy
        self.policy_note = policy_note
        from synartesis.paths import journal_location
        self.journal_path = journal_location(journal_path)  # a file, or a postgresql:// URL
        self.options = options
        self.call_timeout = options.call_timeout
        self.launch = launch or {}
        self.run_id: str | None = None
        self.client_name: str | None = None
        self.modern_meta: dict | None = None
        self._journal: Any = None
        self._spooled_for: Any = None  # the team journal this proxy spools for, if it does
        self._extra_protected = list(protected or [])
        self._protected: list[str] | None = None
        self._lock = threading.Lock()
        self._init_ids: set[str] = set()
        self._list_ids: set[str] = set()
        self._inflight: dict[str, CallContext] = {}
        self._queued: dict[str, CallContext] = {}
        self._expired: set[str] = set()
        # the client's other requests sent on and not answered yet (id key -> method, or
        # ``CANCELLED + method`` once the client cancelled it): a tools/call under one of these
        # keys would take its answer
        self._requests: dict[str, str] = {}
        self._lane: SimpleQueue = SimpleQueue()
        self._lane_count = 0
        self._lane_cond = threading.Condition(threading.Lock())
        self._lane_thread: threading.Thread | None = None
        self._catalog: dict[str, dict] | None = None
        self._catalog_partial: dict[str, dict] = {}
        self._pins_logged = False
        self._rules: dict[tuple[str, str], Rule] = {}
        self._plain_tools: dict[str, tuple | bool] = {}  # tool name -> what _plain_read decided
        self._seq = itertools.count(1)
        self._recorder: JournalThread | None = None
        self._stop = threading.Event()
        self._client_eof = threading.Event()
        self._server_gone = threading.Event()

    # -- what the pipeline needs (CallHost) ---------------------------------------------------
    @property
    def journal(self) -> Any:
        """The journal connection of the lane (opened, and created, on first use).

        Raises:
            JournalError: it cannot be opened or created.
        """
        j = self._journal
        if j is None:
            from synartesis.journal import Journal
            try:
                j = Journal.open(self.journal_path, create=True)
            except JournalError as exc:
                j = self._spool(exc)
            else:
                self._ship_spool(j)
            self._journal = j
        return j

    def _spool(self, exc: JournalError) -> Any:
        """A team journal that cannot be reached: with ``journal_fallback: spool`` the local
        spool (``synartesis.journal.spool``), else the error (every call is held)."""
        from synartesis.errors import JournalConfigError
        from synartesis.paths import is_journal_url
        if (self.policy is None or self.policy.journal_fallback != "spool" or not is_journal_url(self.journal_path)
                or isinstance(exc, JournalConfigError)):
            raise exc
        from synartesis.journal.spool import open_spool
        j = open_spool(self.journal_path)
        log("warn", "the journal cannot be reached; spooling to a local file (journal_fallback: spool)",
            journal=str(self.journal_path), spool=str(j.path), error=str(exc))
        self._spooled_for = self.journal_path
        self.journal_path = j.path  # the journal thread writes there too
        if self._recorder is not None:
            self._recorder.path = j.path
        return j

    def _ship_spool(self, j: Any) -> None:
        """Ship what earlier proxies spooled for this journal (runs that have ended)."""
        from synartesis.paths import is_journal_url
        if self.policy is None or self.policy.journal_fallback != "spool" or not is_journal_url(self.journal_path):
            return
        from synartesis.journal.spool import ship_spool
        try:
            shipped = ship_spool(self.journal_path, j)
        except JournalError as exc:
            log("warn", "could not ship the spooled runs yet", error=str(exc))
            return
        if shipped:
            log("info", "shipped spooled runs to the journal", runs=shipped, journal=str(self.journal_path))

    def protected_paths(self) -> list[str]:
        """synartesis's own files, which no guarded call may write without approval."""
        if self._protected is None:
            from synartesis.paths import Env, is_journal_url, synartesis_home
            jp = str(self.journal_path)
            files = [] if is_journal_url(jp) else [jp, jp + "-wal", jp + "-shm"]
            paths = [*files, *self._extra_protected,
                     os.path.realpath(synartesis_home(Env.current())) + os.sep]
            if self.policy is not None:
                paths.append(os.path.realpath(self.policy.path))
            self._protected = [os.path.realpath(p) + (os.sep if p.endswith(os.sep) else "") for p in paths]
        return self._protected

    def next_seq(self) -> int:
        """The next seq of this proxy's run (the proxy is the only writer of its run)."""
        return next(self._seq)  # itertools.count: one C call, atomic under the GIL

    def record_read(self, item: dict) -> None:
        """Journal a finished (or never answered) read on the journal thread."""
        (self._recorder or self._journal_thread()).add(item)

    def _journal_thread(self) -> JournalThread:
        if self._recorder is None:
            with self._lock:
                if self._recorder is None:
                    tick_every = None
                    if self.call_timeout:
                        tick_every = max(0.05, min(1.0, self.call_timeout / 4))
                    from synartesis.proxy.pipeline import read_record
                    from synartesis.proxy.recorder import JournalThread
                    self._recorder = JournalThread(self.journal_path, prepare=read_record, tick=self.expire,
                                                   tick_every=tick_every)
        return self._recorder

    def route(self, exposed: str) -> tuple[str, str]:
        """(server, upstream tool name); ``SERVER__x`` with our own name unwraps to ``x``."""
        prefix = self.server + "__"
        if exposed.startswith(prefix) and len(exposed) > len(prefix):
            return self.server, exposed[len(prefix):]
        return self.server, exposed

    def policy_rule(self, server: str, tool: str, args: Any) -> Rule:
        """The rule for ``server.tool``; cached when no ``when`` condition could change it."""
        cached = self._rules.get((server, tool))
        if cached is not None:
            return cached
        if self.policy is None:
            return Rule(match=f"{server}.{tool}", cls="irreversible", gate="always", matched=False,
                        note=self.policy_note or "there is no policy, so every tool is held")
        rule = self.policy.rule_for(server, tool, args)
        if not rule.matched and self.policy_note and server not in self.policy.servers:
            # a server the policy does not name: the held call says what to do (proxy.main's hint)
            rule = Rule(match=rule.match, cls=rule.cls, gate=rule.gate, matched=False, note=self.policy_note)
        elif not rule.matched and self._catalog is not None and tool not in self._catalog:
            # a tool the server's tools/list does not name: said so, not only "no rule matches"
            # (new user round 31, 9e); not cached, as the list may name it later
            return Rule(match=rule.match, cls=rule.cls, gate=rule.gate, matched=False,
                        note=f"the server does not list a tool {tool} (its tools/list does not name it), and "
                             "no rule matches it, so it is treated as irreversible")
        from synartesis.policy.model import pattern_regex
        qualified = f"{server}.{tool}"
        if not any(r.when and pattern_regex(r.match).fullmatch(qualified) for r in self.policy.rules):
            self._rules[(server, tool)] = rule
        return rule

    def ensure_run(self) -> str:
        """The run of this session, created at its first ``tools/call`` (issue 10: a health check
        or a ``tools/list`` probe leaves no run)."""
        if self.run_id is None:
            j = self.journal
            self.run_id = j.begin_run(self.client_name, self.launch_lines(), origin=self.origin)
            j.own_run(self.run_id, self.next_seq)
            if self._spooled_for is not None:
                from synartesis.journal.spool import mark_spooled
                mark_spooled(j, self.run_id, self._spooled_for)
            log("info", "run started", run=self.run_id, servers=list(self.launch_lines()), client=self.client_name)
            self._journal_thread()  # it opens its own connection now (recorder.JournalThread._run)
        return self.run_id

    def launch_lines(self) -> dict:
        """{server: {command, args, cwd[, env]}}: recorded with the run so undo starts the same
        thing. Secret-looking arguments are redacted the way the policy is (issue 9 item 3);
        ``env`` names (never values) the variables the client gave the server
        (:func:`synartesis.journal.liveness.env_given_by_client`)."""
        from synartesis.redact import redact_argv
        command = self.launch.get("command") or ""
        argv = redact_argv([command, *self.launch.get("args", [])])[0]
        line = {"command": argv[0] if command else command, "args": argv[1:], "cwd": self.launch.get("cwd") or os.getcwd()}
        if self.launch.pop("env_from_client", False):  # asked at the first run, not at start-up
            from synartesis.journal.liveness import env_given_by_client
            self.launch["env"] = env_given_by_client() or []
        if self.launch.get("env"):
            line["env"] = list(self.launch["env"])  # names of variables the client gave the server, never values
        line.update(server_process(self.upstream))
        return {self.server: line}

    def reply_error_result(self, ctx: CallContext, text: str) -> None:
        """Answer a call with a ``CallToolResult`` carrying ``isError: true``."""
        body = {"jsonrpc": "2.0", "id": ctx.msg.get("id"), "result": tool_result(text, _is_modern(ctx.msg))}
        if self._withdrawn(ctx):
            return
        self.send_to_client(dump(body))

    def reply_protocol_error(self, ctx: CallContext, code: int, message: str) -> None:
        """Answer a call with a JSON-RPC error."""
        if self._withdrawn(ctx):
            return
        self.send_to_client(dump({"jsonrpc": "2.0", "id": ctx.msg.get("id"), "error": {"code": code, "message": message}}))

    def _withdrawn(self, ctx: CallContext) -> bool:
        """:meth:`_unqueue`, and whether the client cancelled the call before it was sent (while
        its pre-read was at the server): it gets no answer then. Its id was freed by the cancel,
        so the client may have sent a new request with it, which would take this answer for its
        own (adversarial review 31, F4: a held call's answer went out under an id reused after
        its cancel, followed by the new request's own answer)."""
        with self._lock:
            if self._queued.get(ctx.id_key) is ctx:
                del self._queued[ctx.id_key]
            return ctx.cancelled and not ctx.forwarded

    def _unqueue(self, ctx: CallContext) -> None:
        """A queued call that is answered without being sent (held, refused) frees its id
        before the client has the answer: the client may send its next call with that id."""
        if self._queued.get(ctx.id_key) is ctx:
            with self._lock:
                if self._queued.get(ctx.id_key) is ctx:
                    del self._queued[ctx.id_key]

    def upstream_line(self, ctx: CallContext) -> Any:
        """The frame to send for a call: its original bytes unless the name was unwrapped."""
        params = ctx.msg.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if isinstance(name, str):
            _, tool = self.route(name)
            if tool != name:
                return dump({**ctx.msg, "params": {**params, "name": tool}})
        return ctx.line

    def upstream_for(self, ctx: CallContext) -> Upstream:
        """The connection a call goes to."""
        return self.upstream

    def forward(self, ctx: CallContext, *, wait: bool) -> bool:
        """Send the client's call to the server. ``wait``: the lane will :meth:`await_answer`;
        otherwise (a plain read) the answer is journalled when it has been forwarded.

        Returns False when it could not be written (certainly not applied), or the client
        cancelled it first (then ``ctx.cancelled`` is set).
        """
        line = self.upstream_line(ctx)
        if wait:
            ctx.waiter = _thread.allocate_lock()
            ctx.waiter.acquire()
        elif self.call_timeout and self._recorder is None:
            self._journal_thread()  # its timer watches this read's deadline
        return self._send(ctx, line)

    def _send(self, ctx: CallContext, line: Any) -> bool:
        """:meth:`forward` once the frame is known: in flight, then written (nothing after the
        write but returning, so this thread is back in its read when the answer comes)."""
        if self.call_timeout:
            ctx.deadline = time.monotonic() + self.call_timeout
        with self._lock:  # a cancel either finds it queued (never sent) or in flight
            if ctx.cancelled:
                return False
            ctx.forwarded = True
            self._inflight[ctx.id_key] = ctx
            if self._queued:
                self._queued.pop(ctx.id_key, None)
        try:
            self.upstream_for(ctx).send(line)
        except RequestFailed:
            self._inflight.pop(ctx.id_key, None)
            ctx.forwarded = False
            return False
        return True

    def forward_read(self, ctx: CallContext, run_id: str, server: str, tool: str, rule: str | None,
                     args: Any, line: Any = None) -> None:
        """Forward a plain read; it is journalled (numbered now) when its answer has gone to the
        client, or as ``unknown`` if none comes. ``line``: the frame to send when the caller
        knows it (the client's own bytes); else :meth:`upstream_line` says."""
        ctx.read = {"run": run_id, "server": server, "tool": tool, "rule": rule, "args": args, "seq": next(self._seq)}
        if line is None:
            sent = self.forward(ctx, wait=False)
        else:
            if self.call_timeout and self._recorder is None:
                self._journal_thread()  # its timer watches this read's deadline
            sent = self._send(ctx, line)
        if not sent:
            if ctx.cancelled:
                self.record_read({**ctx.read, "status": "failed", "note": "the client cancelled the call before it was sent"})
                return
            self.record_read({**ctx.read, "status": "failed", "note": f"{server} is not running, so the call was never sent"})
            self.reply_protocol_error(ctx, -32000, f"synartesis: {server} is not running")

    def await_answer(self, ctx: CallContext) -> Any:
        """The answer to a forwarded call (None when the client cancelled it).

        Raises:
            RequestFailed: ``timeout`` (the call timeout passed; the client was told) or
                ``closed`` (the server went away).
        """
        timeout = None if ctx.deadline is None else ctx.deadline - time.monotonic()
        got = ctx.waiter.acquire(True, -1 if timeout is None else max(0.0, timeout))
        if not got:
            if self._claim(ctx):  # the pipeline journals it, then calls report_timeout
                raise RequestFailed(f"no answer within {self.call_timeout:g} s (--call-timeout)", "timeout")
            ctx.waiter.acquire()  # it settled just now
        if ctx.failure is not None:
            raise ctx.failure
        return ctx.answer

    def read(self, read: dict) -> ReadOutcome:
        """Run one of our reads (pre-read, post-read) on the server."""
        from synartesis.proxy.pipeline import ReadOutcome, run_read_sync
        if read["server"] != self.server:
            return ReadOutcome("failed", reason=f"server {read['server']} is not connected to this proxy")
        return run_read_sync(self.upstream.request, read, timeout=self.options.read_timeout,
                             max_bytes=self.options.max_snapshot_bytes, meta=self.modern_meta)

    def read_later(self, read: dict, then: Callable[[], None] | None = None) -> Callable[[], ReadOutcome]:
        """Send one of our reads now (a write's post-read); the returned callable waits for
        its outcome (see :func:`synartesis.proxy.pipeline.start_read`). ``then()`` runs (on the
        reader thread) as soon as its answer or failure is in: the write's kept-back answer goes
        to the client then (:meth:`release_kept`).

        The lane owes the write's deferred ``applied`` a commit until then: it stays busy for
        :meth:`drain` and the idle check, and the read's answer wakes it (``_FLUSH``) instead
        of the lane blocking on the read, so a call that comes first is taken at once (its
        pre-read overlapping this read) and the outcome is committed while it is at the server.
        """
        with self._lane_cond:
            self._lane_count += 1
        owed = _Owed(self._lane)

        def answered() -> None:
            try:
                if then is not None:
                    then()
            finally:
                owed.release()
        pending = self._start_read(read, answered)
        got: list[ReadOutcome] = []

        def outcome() -> ReadOutcome:  # waited for once (the lane, or the commit it owes): kept
            if not got:
                try:
                    got.append(pending())
                finally:
                    owed.release()  # waited for (or timed out) before its answer woke the lane
            return got[0]
        return outcome

    def read_soon(self, read: dict) -> Callable[[], ReadOutcome]:
        """Send one of our reads now (a write's pre-read) and return what waits for its
        outcome, so the lane can prepare the write's record while the read is at the server."""
        return self._start_read(read, _nothing)

    def _start_read(self, read: dict, on_answer: Callable[[], None]) -> Callable[[], ReadOutcome]:
        """Send ``read`` now; ``on_answer()`` once its answer (or failure) is in."""
        pipeline = _PIPELINE or _pipeline_module()
        if read["server"] != self.server:
            failed = pipeline.ReadOutcome("failed", reason=f"server {read['server']} is not connected to this proxy")
            on_answer()
            return lambda: failed
        return pipeline.start_read(self.upstream, read, timeout=self.options.read_timeout,
                                   max_bytes=self.options.max_snapshot_bytes, meta=self.modern_meta, on_answer=on_answer)

    def request_for(self, server: str) -> Callable[..., Any]:
        """The blocking ``request(method, params, *, timeout, meta)`` of ``server``'s connection."""
        return self.upstream.request

    def saga_enabled(self, server: str) -> bool:
        """Is ``server`` in saga mode (``--saga`` or ``servers.NAME.saga``), with a hook to run it?"""
        if self.saga_hook is None:
            return False
        spec = self.policy.servers.get(server) if self.policy is not None else None
        return self.options.saga or bool(spec is not None and spec.saga)

    def rollback(self, server: str, error: str) -> str:
        """Saga mode: undo this run's actions over our own connection, newest first, with the
        undo engine's checks; returns what the agent is told (``services.saga``)."""
        assert self.saga_hook is not None and self.run_id is not None
        self._flush_applied()  # the undo engine reads what the run did
        return self.saga_hook(journal=self.journal, run_id=self.run_id, server=server,
                              request=self.request_for(server), policy=self.policy, options=self.options,
                              error=error)

    def release_kept(self, ctx: CallContext) -> None:
        """Send the server's answer kept back for ``ctx`` (its original bytes), once: from the
        read-back's answer or, on every other path, when the pipeline is done with the call."""
        with self._lock:
            line, ctx.kept = ctx.kept, None
        if line is not None:
            self.send_to_client(line)

    def send_answer(self, ctx: CallContext, body: dict) -> None:
        """Answer a call with ``body`` (a whole JSON-RPC response: a held one, amended)."""
        self._unqueue(ctx)
        self.send_to_client(dump(body))

    def pin_problem(self, server: str) -> str | None:
        """Why calls of ``server`` are refused because of pins (None when fine or unpinned)."""
        spec = self.policy.servers.get(server) if self.policy else None
        if spec is None or not spec.pins:
            return None
        catalog = self.catalog(server)
        from synartesis.pins import check_pins  # stdlib only
        from synartesis.proxy.payload import cli_command
        try:
            shapes = self.journal.shapes(spec.pins.values())
        except JournalError:
            shapes = {}
        problem = check_pins(server, spec.pins, catalog or {}, self.policy, cli=cli_command(), shapes=shapes)
        if problem and not self._pins_logged:
            self._pins_logged = True
            log("error", "tool shapes changed since they were pinned; every call is refused", server=server,
                detail=problem)
        return problem

    def catalog(self, server: str) -> dict[str, dict] | None:
        """The server's tools by name (fetched with our own ``tools/list`` if the client's
        answers have not shown them all)."""
        if self._catalog is None:
            tools: dict[str, dict] = {}
            cursor = None
            try:
                for _ in range(1000):
                    page = self.upstream.request("tools/list", {"cursor": cursor} if cursor else {},
                                                 timeout=self.options.read_timeout, meta=self.modern_meta)
                    for t in page.get("tools", []):
                        if isinstance(t, dict) and isinstance(t.get("name"), str):
                            tools[t["name"]] = t
                    cursor = page.get("nextCursor")
                    if not cursor:
                        break
            except RequestFailed as exc:
                log("warn", "could not read tools/list for pins", error=exc.message)
                return None
            self._catalog = tools
            self._remember(server, tools)
        return self._catalog

    def _remember(self, server: str, catalog: dict[str, dict]) -> None:
        """Keep each tool shape by fingerprint (on the journal thread), so a later pin
        mismatch can say what changed."""
        from synartesis.pins import fingerprint
        shapes = {fingerprint(t): t for t in catalog.values()}

        def job(journal: Any) -> None:
            try:
                journal.remember_shapes(server, shapes)
            except JournalError as exc:
                log("warn", "could not record tool shapes", error=str(exc))
        if self.journal_path.exists():
            self._journal_thread().submit(job)

    # -- client → server ----------------------------------------------------------------
    def on_client_line(self, line: Any) -> None:
        """Route one client frame (called by the downstream's reader, in order)."""
        if not line or line.isspace():
            return
        msg = parse(line)
        if msg is INVALID:
            # Never forward what we cannot read: a server decoding it leniently (bad UTF-8
            # replaced, deep nesting) could run a tools/call that bypassed the gate and journal.
            log("warn", "refused an unparseable line from the client", bytes=len(line))
            self.send_to_client(dump(refusal(line)))
            return
        if isinstance(msg, list):
            self._client_batch(line, msg)
            return
        if not isinstance(msg, dict):
            self._forward_raw(line)
            return
        method = msg.get("method")
        if isinstance(method, str) and "id" in msg:
            params = msg.get("params")
            if isinstance(params, dict) and "_meta" in params:
                self._note_modern(params["_meta"])
            if method == "tools/call":
                self._client_call(CallContext(line, msg, id_key(msg["id"])))
                return
            key = id_key(msg["id"])
            if self._call_waits(key):
                self._refuse_taken_id(msg, self._id_taken(key))
                return
            self._requests[key] = method  # before it is sent: its answer may come at once
            if method == "initialize":
                self._init_ids.add(key)
                info = params.get("clientInfo") if isinstance(params, dict) else None
                if isinstance(info, dict) and isinstance(info.get("name"), str):
                    self.client_name = info["name"]
            elif method == "tools/list":
                self._list_ids.add(key)
        elif method == "tools/call":
            # a tools/call without an id cannot be answered or journalled; servers must ignore
            # it, and one that did not would run it unguarded: it is not forwarded
            log("warn", "dropped a tools/call notification (no id)")
            return
        elif method == "notifications/initialized":
            self._forward_raw(line)
            spec = self.policy.servers.get(self.server) if self.policy else None
            if spec is not None and spec.pins:
                self._enqueue(lambda: self.pin_problem(self.server))  # say at start when shapes moved
            return
        elif method == "notifications/cancelled":
            if self._client_cancel(msg):
                return
        self._forward_raw(line)

    def _id_taken(self, key: str) -> str | None:
        """Why a client request with the id ``key`` (:func:`id_key`) cannot be taken now: what
        still waits for an answer with that id; None when nothing does.

        Answers are matched to calls by ``id_key``, as a JavaScript server reads the id (``1``
        and ``1.0`` are one id, ``2**53 + 1`` is ``2**53``), so two requests pending under one
        key could not be told apart: one call's answer would be journalled as the other's and
        one row lost. JSON-RPC requires ids unique among pending requests (MCP: never reused in
        a session). Checked in the order that needs no lock: a queued call enters
        ``_inflight`` before it leaves ``_queued``. A request the client cancelled after it was
        sent keeps its key until it is answered (the server may still answer it).
        """
        ctx = self._queued.get(key) or self._inflight.get(key)
        if ctx is not None:
            if ctx.cancelled:  # freeing the id would let the late answer be taken for the new call's
                return ("a tools/call the client cancelled after it was sent; the server may still answer it, "
                        "and that answer would be taken for this request's")
            return "a tools/call still waiting for its answer"
        if key in self._expired:
            return "a tools/call that timed out and that the server has not answered yet"
        method = self._requests.get(key)
        if method is not None:
            if method.startswith(CANCELLED):
                return (f"a {method[len(CANCELLED):]} request the client cancelled; the server may still answer it, "
                        "and that answer would be taken for this request's")
            return f"a {method} request still waiting for its answer"
        return None

    def _call_waits(self, key: str) -> bool:
        """Whether a ``tools/call`` with the id ``key`` still waits for an answer from the
        server (queued, in flight, or timed out and not answered yet): a request under that
        key would take its answer (see :meth:`_id_taken`)."""
        return key in self._queued or key in self._inflight or key in self._expired

    def _refuse_taken_id(self, msg: dict, why: str | None) -> None:
        """Answer a request whose id is taken with a JSON-RPC error; nothing is sent on."""
        log("warn", "refused a request whose id is already in use", id=msg.get("id"), method=msg.get("method"))
        self.send_to_client(dump({"jsonrpc": "2.0", "id": msg.get("id"), "error": {"code": -32600, "message": (
            f"synartesis: the id {dump(msg.get('id')).decode()} is already used by {why}; JSON-RPC ids must be "
            "unique among pending requests (a server may read 1 and 1.0, or integers past 2**53, as one id), "
            "so this request was not sent. Send it again with an id of its own.")}}))

    def _client_call(self, ctx: CallContext) -> None:
        key = ctx.id_key
        msg = ctx.msg
        mid = msg["id"]
        if msg.get("jsonrpc") != "2.0" or mid.__class__ not in (int, str, float) or (
                mid.__class__ is not str and not -_SAFE_ID < mid < _SAFE_ID):
            # not a JSON-RPC 2.0 request a server answers (a JavaScript server drops it, and
            # one whose numeric id a double cannot hold exactly): the client is told at once;
            # journalled and sent, it waited out its call timeout as unknown and held the lane
            # that long (adversarial review 16, F7; review 19, F9: an id of 2**53 + 1)
            mid = mid if mid.__class__ in (int, str, float) else None
            self.send_to_client(dump({"jsonrpc": "2.0", "id": mid, "error": {"code": -32600, "message": (
                "Invalid Request: synartesis sends a tools/call on only with \"jsonrpc\": \"2.0\" and an id that is "
                "a string or a number a double holds exactly (|id| < 2**53); it was not sent to the server")}}))
            return
        if key in self._queued or key in self._inflight or key in self._expired or key in self._requests:
            self._refuse_taken_id(ctx.msg, self._id_taken(key))
            return
        # read without the lock: only this thread (the client's reader) takes the count from 0
        # to 1, so a 0 seen here means nothing is queued ahead (a stale 1 only queues the call)
        if self._lane_count == 0:
            plain = self._plain_read(ctx)
            if plain is not None:
                # nothing ahead of it, nothing to capture: forwarded from here, no lane hop and
                # no pipeline (the policy said all there is to say: a readonly rule, no pins)
                try:
                    server, tool, rule, verbatim, args = plain
                    self.forward_read(ctx, self.run_id or self.ensure_run(), server, tool, rule, args,
                                      ctx.line if verbatim else None)
                except JournalError as exc:
                    log("error", "journal failed; the call was not sent", error=str(exc))
                    from synartesis.proxy.pipeline import JOURNAL_DOWN
                    self.reply_error_result(ctx, JOURNAL_DOWN.format(error=exc))
                except Exception as exc:  # noqa: BLE001 - one call must never kill the relay
                    self._internal_error(ctx, exc)
                return
        self._queued[ctx.id_key] = ctx
        self._enqueue(ctx)

    def _client_cancel(self, msg: dict) -> bool:
        """Handle ``notifications/cancelled``; True when it must not be forwarded (it cancels
        a call that was never sent: the call and the cancel are both dropped)."""
        params = msg.get("params")
        rid = params.get("requestId") if isinstance(params, dict) else None
        if rid is None:
            return False
        key = id_key(rid)
        method = self._requests.get(key)
        if method is not None and not method.startswith(CANCELLED):
            self._requests[key] = CANCELLED + method  # its id stays taken: the answer may still come
        with self._lock:
            queued = self._queued.get(key)
            if queued is not None and not queued.forwarded:
                queued.cancelled = True  # the server never saw it: the call and the cancel end here
                del self._queued[key]  # and its id is free (the lane skips it, _send refuses it)
                return True
        ctx = self._inflight.get(key)
        if ctx is not None:
            ctx.cancelled = True
            self._settle(ctx, None, None, note="outcome unknown: the client cancelled the call after it was sent")
        return False

    def _note_modern(self, meta: Any) -> None:
        if isinstance(meta, dict) and MODERN_KEY in meta:
            self.modern_meta = {k: v for k, v in meta.items()
                                if k.startswith("io.modelcontextprotocol/") and not k.endswith("/logLevel")}
            info = meta.get("io.modelcontextprotocol/clientInfo")
            if isinstance(info, dict) and isinstance(info.get("name"), str) and not self.client_name:
                self.client_name = info["name"]

    def _client_batch(self, line: Any, batch: list) -> None:
        errors = batch_refusal(batch)
        if errors is None:
            self._forward_raw(line)
        elif errors:
            self.send_to_client(dump(errors))

    def _forward_raw(self, line: Any) -> None:
        try:
            self.upstream.send(line)
        except RequestFailed:
            pass

    def _plain_read(self, ctx: CallContext) -> tuple | None:
        """``(server, tool, rule name, verbatim, args)`` of a call whose rule is readonly with
        nothing to read before or after it, on an unpinned server, with valid text; else None
        (the pipeline decides). ``verbatim``: the client's bytes are what the server gets (no
        name to unwrap). What a tool name decides is kept per name when its rule cannot depend
        on the arguments (no ``when``): the policy does not change while we run."""
        params = ctx.msg.get("params")
        if params.__class__ is not dict:
            return None
        name = params.get("name")
        known = self._plain_tools.get(name) if name.__class__ is str else None
        args = params.get("arguments")
        if args is None:
            args = {}
        if known is None:
            if not isinstance(name, str):
                return None
            known = self._plain_tool(name, args)
            if known is None:
                return None
        # find, not ``in``: bytes.__contains__ first tries its argument as an integer and
        # raises (and clears) a TypeError for every call
        if known is False or (ctx.line.find(b"\\u") >= 0 and lone_surrogate(ctx.line, params)):
            return None
        return (*known, args)

    def _plain_tool(self, name: str, args: Any) -> tuple | bool | None:
        """``(server, tool, rule name, verbatim)`` when ``name`` is a plain read, False when it
        is not; kept for the next call when the answer holds for any arguments (returned as
        None when it was not kept and is no plain read)."""
        try:
            server, tool = self.route(name)
        except LookupError:
            return None
        spec = self.policy.servers.get(server) if self.policy else None
        if spec is None or spec.pins:
            return None
        rule = self.policy_rule(server, tool, args)
        verbatim = tool == name and type(self).upstream_line is Engine.upstream_line
        known = (server, tool, rule.match if rule.matched else None, verbatim) if is_plain_read(rule) else False
        if (server, tool) in self._rules:  # no `when` could change the rule: it holds for every call
            self._plain_tools[name] = known
        return known or None

    # -- server → client ----------------------------------------------------------------
    def on_server_message(self, line: Any, msg: Any) -> None:
        """Route one server frame (called by the upstream's reader, in order)."""
        mid = response_id(msg)
        if mid is not NOT_RESPONSE:
            key = id_key(mid)
            ctx = self._inflight.get(key)
            if (ctx is None or ctx.read is None) and msg.__class__ is LazyFrame and not msg.sure():
                # not a plain read's answer (whose record the journal thread checks): route
                # it by the parsed frame when its two ends may not tell the whole truth
                self.on_server_message(line, reread(line))
                return
            ctx = self._inflight.pop(key, None)  # None if the call timer took it meanwhile
            if ctx is not None:
                if ctx.read is not None:
                    # a plain read: its record goes to the journal thread (which reads the
                    # answer's members and digest) before the answer goes out, so writing to
                    # the client is the last thing this thread does before it reads again
                    # and the client's next call finds the GIL free
                    self._settle(ctx, msg, None)
                    self.send_to_client(line)
                    return
                self._answer_or_keep(ctx, line, msg)
                self._settle(ctx, msg, None)
                return
            if key in self._expired:
                self._expired.discard(key)
                log("warn", "dropped an answer that came after the call timed out", id=mid)
                return
            self._requests.pop(key, None)
            if key in self._init_ids:
                self._init_ids.discard(key)
                self.send_to_client(self._with_instructions(line, msg))
                return
            if key in self._list_ids:
                self._list_ids.discard(key)
                self.send_to_client(line)
                self._observe_tools(msg.parse() if isinstance(msg, LazyFrame) else msg)
                return
        elif msg.__class__ is list or getattr(msg, "is_batch", False):
            self._server_batch(msg)
        self.send_to_client(line)

    def _server_batch(self, msg: Any) -> None:
        """A JSON-RPC batch from the server (MCP has had none since 2025-06-18; an older server
        may still send one), which the caller passes on as it is: an answer in it to a call in
        flight settles that call with that answer, so its row holds what the server said (it was
        recorded at EOF as "the server exited before answering": new user round 9). Nothing of
        it is sent here: the client gets the batch, so a write's answer is not kept back."""
        items = msg.parse() if msg.__class__ is LazyFrame else msg
        if items is None and msg.__class__ is LazyFrame:  # an element json.loads refuses
            items = batch_items(msg.line, strict=False)  # (adversarial review 15, F3)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, LazyFrame):
                mid = item.response_id()
                if mid is NOT_RESPONSE:
                    continue
            elif not isinstance(item, dict) or "method" in item or "id" not in item:
                continue
            else:
                mid = item["id"]
            key = id_key(mid)
            ctx = self._inflight.pop(key, None)
            if ctx is not None:
                self._settle(ctx, item, None)
                continue
            self._expired.discard(key)
            self._requests.pop(key, None)
            self._init_ids.discard(key)
            self._list_ids.discard(key)

    def _answer_or_keep(self, ctx: CallContext, line: Any, msg: Any) -> None:
        """Forward the server's answer to a call, or keep it back for the pipeline: in saga mode
        an error answer (``held``), and a write's answer until its read-back is answered
        (``kept``) unless the call already settled (the client cancelled it: nobody waits)."""
        if ctx.hold_error and error_answer(msg):
            ctx.held = line  # answered by the lane once the run is rolled back
            return
        if ctx.keep_answer:
            with self._lock:
                if not ctx.settled:
                    ctx.kept = line  # sent by release_kept
                    return
        self.send_to_client(line)

    def on_server_close(self) -> None:
        """The server can send nothing more: calls in flight become ``unknown``."""
        self._server_gone.set()
        for ctx in list(self._inflight.values()):
            self._inflight.pop(ctx.id_key, None)
            self._settle(ctx, None, RequestFailed("the server exited before answering", "closed"))
        self._stop.set()

    def _with_instructions(self, line: Any, msg: Any) -> Any:
        if isinstance(msg, LazyFrame):
            msg = msg.parse()
        result = msg.get("result") if isinstance(msg, dict) else None
        if not isinstance(result, dict):
            return line
        theirs = result.get("instructions")
        result = {**result, "instructions": INSTRUCTIONS + (f"\n\n{theirs}" if isinstance(theirs, str) and theirs else "")}
        return dump({**msg, "result": result})

    def _observe_tools(self, msg: Any) -> None:
        result = msg.get("result") if isinstance(msg, dict) else None
        if not isinstance(result, dict):
            return
        for t in result.get("tools") or []:
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                self._catalog_partial[t["name"]] = t
        if not result.get("nextCursor"):
            self._catalog, self._catalog_partial = self._catalog_partial, {}
            self._remember(self.server, self._catalog)

    # -- settling calls -----------------------------------------------------------------
    def _claim(self, ctx: CallContext) -> bool:
        """Take a call over for its timeout (False when it settled first)."""
        with self._lock:
            if ctx.settled:
                return False
            ctx.settled = ctx.timed_out = True
            if self._inflight.pop(ctx.id_key, None) is not None:
                self._expired.add(ctx.id_key)
        return True

    def _settle(self, ctx: CallContext, answer: Any, failure: RequestFailed | None, note: str | None = None) -> None:
        """A forwarded call's outcome: its answer (None when cancelled) or a failure. The first
        outcome counts; the lane is woken, or a plain read is handed to the journal thread."""
        with self._lock:
            if ctx.settled:
                return
            ctx.settled = True
            ctx.answer, ctx.failure = answer, failure
        if ctx.waiter is not None:
            ctx.waiter.release()
        elif ctx.read is not None:
            if failure is not None:
                self.record_read({**ctx.read, "status": "unknown", "note": f"outcome unknown: {failure.message}"})
            elif answer is None:
                self.record_read({**ctx.read, "status": "unknown", "note": note or "outcome unknown"})
            else:
                ctx.read["answer"] = answer  # settled once: the record is this call's alone now
                self.record_read(ctx.read)

    def report_timeout(self, ctx: CallContext) -> None:
        """Tell the agent a call timed out (outcome unknown) and ask the server to stop it."""
        params = ctx.msg.get("params") if isinstance(ctx.msg.get("params"), dict) else {}
        name = params.get("name")
        log("warn", "call timed out; outcome unknown", tool=name, seconds=self.call_timeout)
        self.reply_error_result(ctx, (
            f"Synartesis stopped waiting for {name} after {self.call_timeout:g} s (the call timeout). "
            "The server may have done it, may still do it, or may not: the outcome is unknown and is "
            "recorded so, and undo stops there until a person has checked. Tell the user before retrying."))
        try:
            self.upstream_for(ctx).send(dump({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
                "requestId": ctx.msg.get("id"), "reason": "synartesis: call timeout"}}))
        except RequestFailed:
            pass

    def expire(self, now: float) -> None:
        """The call timer (run by the journal thread): plain reads past their deadline."""
        for ctx in list(self._inflight.values()):
            if ctx.read is not None and ctx.deadline is not None and now >= ctx.deadline and self._claim(ctx):
                self.record_read({**ctx.read, "status": "unknown",
                                  "note": f"outcome unknown: no answer within {self.call_timeout:g} s (--call-timeout)"})
                self.report_timeout(ctx)

    # -- the lane -----------------------------------------------------------------------
    def _enqueue(self, item: Any) -> None:
        with self._lane_cond:
            self._lane_count += 1
        self._lane.put(item)

    def _lane_loop(self) -> None:
        lane = self._lane
        while True:
            j = self._journal
            if j is not None and j.deferred:
                # a write's outcome waits to be committed: when nothing comes for a moment. A
                # call that comes first is recorded without it, and it is committed while that
                # call is at the server (pipeline._flush_earlier): a client that sends its next
                # call as soon as it has the answer never waits for this commit
                try:
                    item = lane.get(True, _IDLE_FLUSH_S)
                except _Empty:
                    self._flush_applied()
                    continue
            else:
                item = lane.get()
            if item is None:
                self._flush_applied()
                return
            if item is _FLUSH:  # a write's post-read is in (see read_later): the wait above commits it
                with self._lane_cond:
                    self._lane_count -= 1
                    if self._lane_count == 0:
                        self._lane_cond.notify_all()
                continue
            try:
                if isinstance(item, CallContext):
                    if not item.cancelled:
                        _handle_call(self, item)
                else:
                    item()
            except Exception as exc:  # noqa: BLE001 - one call must never kill the relay
                self._internal_error(item if isinstance(item, CallContext) else None, exc)
            finally:
                if isinstance(item, CallContext):
                    self._unqueue(item)  # never sent and never answered: its id is free again
                with self._lane_cond:
                    self._lane_count -= 1
                    if self._lane_count == 0:
                        self._lane_cond.notify_all()

    def _flush_applied(self) -> None:
        """Commit a write's deferred ``applied`` (the pipeline leaves it for the next call's
        record transaction, so a burst of writes pays one commit each, not two)."""
        j = self._journal
        if j is not None and j.deferred:
            try:
                j.flush()
            except JournalError as exc:  # the action stays pending: unknown once the run closes
                log("error", "could not journal a write's outcome", error=str(exc))

    def _internal_error(self, ctx: CallContext | None, exc: Exception) -> None:
        log("error", "internal error in tools/call", error=repr(exc))
        if ctx is not None and not ctx.forwarded:
            self.reply_protocol_error(ctx, -32603, f"synartesis internal error: {exc}")

    def drain(self, timeout: float) -> None:
        """Wait until every queued call has finished (or ``timeout`` seconds, or the server is
        gone): what ``serve`` does when a session ends, as the stdio form does at client EOF."""
        self._drain(timeout, _Flag())

    def _drain(self, timeout: float, signalled: _Flag) -> None:
        """Wait until every queued call has finished (or ``timeout``, the server is gone, or a
        signal asks us to stop)."""
        end = time.monotonic() + timeout
        with self._lane_cond:
            while self._lane_count and not self._server_gone.is_set() and not signalled.is_set():
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._lane_cond.wait(min(left, 0.1))

    # -- the session ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the server reader and the lane thread (the downstream is started by serve)."""
        self.upstream.start(self.on_server_message, self.on_server_close)
        self._start_lane()

    def on_client_eof(self) -> None:
        """The client closed our input."""
        self._client_eof.set()
        self._stop.set()

    def serve(self, downstream: Any) -> int:
        """Relay between ``downstream`` (``start(on_line, on_eof)``, ``close()``) and the upstream
        until one side goes away or a signal asks us to stop; the process exit code."""
        signalled = _stop_on_signals()
        self.start()
        downstream.start(self.on_client_line, self.on_client_eof)
        while not self._stop.is_set() and not signalled.is_set():
            self._stop.wait(0.25)  # a signal handler may not take the Event's lock: it sets a flag
        if self._client_eof.is_set() and not self._server_gone.is_set() and not signalled.is_set():
            # answer everything already received before closing the server (bounded: an answer
            # the server never sends must not keep the proxy alive for ever)
            self._drain(self.options.eof_drain, signalled)
        code = self.shutdown()
        downstream.close()
        return code if code >= 0 else 128 - code

    def shutdown(self) -> int:
        """Close the server, settle what was in flight, flush the journal, close the run;
        returns the server's exit code (negative: killed by that signal)."""
        code = self.upstream.close(self.options.grace)
        self.on_server_close()
        self._finish()
        return code

    def _start_lane(self) -> None:
        self._lane_thread = threading.Thread(target=self._lane_loop, name="synartesis-lane", daemon=True)
        self._lane_thread.start()

    def _finish(self) -> None:
        """After the servers are closed: stop the lane, flush the journal thread, close the run."""
        self._lane.put(None)
        if self._lane_thread is not None:
            self._lane_thread.join(5.0)
        if self._recorder is not None:
            self._recorder.close()
        self._close_run()

    def _close_run(self) -> None:
        if self.run_id is None:
            log("info", "session ended without tool calls", server=self.server, client=self.client_name)
        else:
            try:
                self.journal.end_run(self.run_id)
            except JournalError as exc:
                log("error", "could not close the run", error=str(exc))
        if self._journal is not None:
            self._journal.close()


def _nothing() -> None:
    return None


#: put on the lane when a write's post-read is answered: commit its outcome if the lane is idle
_FLUSH = object()
#: how long the lane waits for a next call before it commits a write's outcome on its own (s):
#: longer than a client takes to send its next call once it has an answer, short enough that
#: an idle proxy's journal says ``applied`` at once
_IDLE_FLUSH_S = 0.005


class _Owed:
    """A commit the lane owes a write (counted in ``_lane_count`` by :meth:`Engine.read_later`):
    released once, by the post-read's answer or by whoever waited for it first."""

    __slots__ = ("_lane", "_lock")

    def __init__(self, lane: SimpleQueue) -> None:
        self._lane: SimpleQueue | None = lane
        self._lock = _thread.allocate_lock()

    def release(self) -> None:
        with self._lock:
            lane, self._lane = self._lane, None
        if lane is not None:
            lane.put(_FLUSH)


_PIPELINE: Any = None


def _pipeline_module() -> Any:
    """synartesis.proxy.pipeline, imported at the first tools/call (it and the policy
    references, the SQL gate and canonical JSON are not needed to relay a handshake) and kept:
    an import statement in a function costs about 1 µs a call even when the module is loaded."""
    global _PIPELINE
    if _PIPELINE is None:
        import synartesis.proxy.pipeline as pipeline
        _PIPELINE = pipeline
    return _PIPELINE


def _handle_call(host: Engine, ctx: CallContext) -> None:
    """The pipeline (see :func:`_pipeline_module`)."""
    (_PIPELINE or _pipeline_module()).handle_call(host, ctx)


def _is_modern(msg: Any) -> bool:
    params = msg.get("params") if isinstance(msg, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and MODERN_KEY in meta


class _Flag:
    """Set by a signal handler. Lock-free on purpose: a handler runs in the main thread between
    two bytecodes, possibly while that thread holds an Event's lock, which ``Event.set`` would
    then wait for for ever."""

    def __init__(self) -> None:
        self.up = False

    def is_set(self) -> bool:
        return self.up


def _stop_on_signals() -> _Flag:
    """SIGTERM, SIGINT and SIGHUP end the session in order (from the main thread only)."""
    signalled = _Flag()

    def handler(signum: int, frame: Any) -> None:
        signalled.up = True

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGINT", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is not None:
                try:
                    signal.signal(sig, handler)
                except (OSError, ValueError):
                    pass
    return signalled
