"""A stdio MCP server as an :class:`~synartesis.proxy.transport.Upstream`: a child process on
pipes, spoken to with plain threads and blocking I/O.

Contract (PROXY.md §2.6, DESIGN §3):
- The child gets the caller's *whole* environment (``os.environ`` unless ``env`` is given) and
  cwd, in its own process group (``start_new_session``) so ``npx``/``uvx`` launchers and the
  real server die together.
- One reader thread per pipe: the child's stdout is cut into frames (no length limit) and each
  is parsed once for routing (:func:`~synartesis.proxy.framing.parse_lenient`). Answers to our
  own requests (ids ``syn-<nonce>-<n>``) complete the waiting request and are never passed on;
  every other frame goes to ``on_message`` as its original bytes.
- Writes to the child's stdin are serialized by one lock and block while the child is not
  reading (the back-pressure a client connected directly would feel).
- Shutdown (:meth:`StdioUpstream.close`): close stdin → wait ``grace`` → SIGTERM the group →
  wait ``grace`` → SIGKILL (spec 2025-11-25 lifecycle, "stdio").

Standard library only: this is on the proxy's start-up path.
"""

from __future__ import annotations

import _thread
import collections
import os
import signal
import threading
from collections.abc import Callable, Mapping
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

from synartesis.proxy.framing import (LazyFrame, dump, parse_lenient, parse_lenient_small, read_frames, response_id,
                                      unreadable, write_frame)
from synartesis.proxy.spawn import popen_server
from synartesis.proxy.transport import CloseHandler, MessageHandler, RequestFailed, RequestIds, request_body

__all__ = ["PendingRequest", "StdioUpstream"]

_STDERR_TAIL = 20
#: a stderr line that names the error (Node's "Error: …", "TypeError: …", Python's last line);
#: compiled where a failure is described (``re`` stays off the start-up path)
_ERROR_LINE = r"^\s*(?:Uncaught )?[A-Za-z_.]*(?:Error|Exception)\b.*:"
_READ_CHUNK = 1 << 16


# what joins our message to the server's own stderr lines (services scrub only what follows it)
SERVER_SAID = " — the server said: "


class PendingRequest:
    """One of our own requests in flight: completed by the reader thread with the answer (a
    dict) or a :class:`RequestFailed`. ``callback`` (optional) is then called on that thread."""

    __slots__ = ("_done", "callback", "method", "outcome")

    def __init__(self, method: str, callback: Callable[[Any], None] | None = None) -> None:
        self.method = method
        self.outcome: Any = None
        self.callback = callback
        self._done = _thread.allocate_lock()
        self._done.acquire()

    def complete(self, outcome: Any) -> None:
        """Record the answer (or failure) and wake the waiter; only the first call counts."""
        if self.outcome is not None:
            return
        self.outcome = outcome
        self._done.release()
        if self.callback is not None:
            self.callback(outcome)

    def wait(self, timeout: float | None) -> Any:
        """The answer message, or None when ``timeout`` seconds passed first."""
        if self._done.acquire(True, -1 if timeout is None else max(0.0, timeout)):
            self._done.release()
            return self.outcome
        return None


class StdioUpstream:
    """A running MCP server process and its JSON-RPC plumbing (see the module docstring).

    Implements :class:`synartesis.proxy.transport.Upstream`. ``popen`` is a
    :class:`subprocess.Popen` or a :class:`synartesis.proxy.spawn.SpawnedServer`.
    """

    def __init__(self, popen: Any, label: str) -> None:
        assert popen.stdin is not None and popen.stdout is not None
        self.popen = popen
        self.label = label
        self.ids = RequestIds()
        self.exit_code: int | None = None
        self.closed = threading.Event()  # set once no more frames can come
        self._eof = False  # closed.is_set(), read without a call on every frame sent
        self._stdin_fd: int | None = popen.stdin.fileno()
        self._wlock = threading.Lock()
        self._pending: dict[str, PendingRequest] = {}
        self._stderr_tail: collections.deque = collections.deque(maxlen=_STDERR_TAIL)
        self._on_message: MessageHandler | None = None
        self._on_close: CloseHandler | None = None
        self._reader: threading.Thread | None = None

    @classmethod
    def spawn(cls, command: str, args: list[str], *, env: Mapping[str, str] | None = None,
              cwd: str | None = None, capture_stderr: bool = True, die_with_parent: bool | None = None,
              label: str | None = None) -> StdioUpstream:
        """Start ``command args`` (not yet reading: call :meth:`start`).

        Args:
            env: the child's whole environment; None = this process's ``os.environ``.
            cwd: working directory; None = ours.
            capture_stderr: True (CLI) drains stderr and keeps its last lines for messages;
                False (proxy) lets the child inherit our stderr.
            die_with_parent: the child is killed when we die (Linux); default: as
                ``capture_stderr`` (a CLI's servers die with it, see :func:`popen_server`).
        Raises:
            UpstreamError: the executable could not be started.
        """
        popen = popen_server(command, args, env=env, cwd=cwd, capture_stderr=capture_stderr,
                             die_with_parent=capture_stderr if die_with_parent is None else die_with_parent)
        return cls(popen, label or os.path.basename(command))

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def mark(self) -> str | None:
        """The server's :data:`synartesis.proxy.spawn.MARK_VAR` value (None: not started by us)."""
        return getattr(self.popen, "mark", None)

    # -- reading -----------------------------------------------------------------------
    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Start the reader thread(s); see :meth:`synartesis.proxy.transport.Upstream.start`."""
        self._on_message, self._on_close = on_message, on_close
        assert self.popen.stdout is not None
        self._reader = threading.Thread(target=self._read_stdout, args=(self.popen.stdout.fileno(),),
                                        name=f"synartesis-{self.label}-out", daemon=True)
        self._reader.start()
        if self.popen.stderr is not None:
            threading.Thread(target=self._read_stderr, args=(self.popen.stderr.fileno(),),
                             name=f"synartesis-{self.label}-err", daemon=True).start()

    def _read_stdout(self, fd: int) -> None:
        try:
            read_frames(fd, self._dispatch, _READ_CHUNK)
        finally:
            self._fail_pending("closed", f"{self.label} closed its output")
            self._eof = True
            self.closed.set()
            if self._on_close is not None:
                self._on_close()

    def _read_stderr(self, fd: int) -> None:
        read_frames(fd, self._stderr_line, _READ_CHUNK)

    def _stderr_line(self, line: Any) -> None:
        text = bytes(line).decode("utf-8", "replace").strip()
        if text:
            self._stderr_tail.append(text[:500])

    def _dispatch(self, line: Any) -> None:
        msg = parse_lenient(line)
        mid = response_id(msg)
        if mid.__class__ is str and self.ids.owns(mid):
            if isinstance(msg, LazyFrame):
                if not msg.sure():  # its ends may not tell the whole truth: route it parsed
                    self._dispatch_parsed(line, parse_lenient_small(line) or unreadable(line))
                    return
                parsed = msg.parse()
                msg = parsed if parsed is not None else msg  # one json.loads will not read: result_of says so
            waiting = self._pending.pop(mid, None)
            if waiting is not None:
                waiting.complete(msg)
            return  # an answer to a request we gave up on is not the client's either
        if self._on_message is not None:
            self._on_message(line, msg)

    def _dispatch_parsed(self, line: Any, msg: Any) -> None:
        """:meth:`_dispatch` of a frame already parsed in full."""
        mid = response_id(msg)
        if mid.__class__ is str and self.ids.owns(mid):
            waiting = self._pending.pop(mid, None)
            if waiting is not None:
                waiting.complete(msg)
            return
        if self._on_message is not None:
            self._on_message(line, msg)

    def _fail_pending(self, kind: str, message: str) -> None:
        while self._pending:
            try:
                _, waiting = self._pending.popitem()
            except KeyError:
                break
            waiting.complete(RequestFailed(message, kind))

    # -- writing -----------------------------------------------------------------------
    def send(self, line: Any) -> None:
        """Forward one frame (``line`` without newline), in order with every other writer.

        Raises:
            RequestFailed(kind="unsent"): the child's stdin is closed.
        """
        with self._wlock:
            fd = self._stdin_fd
            if fd is None or self._eof:
                raise RequestFailed(f"{self.label} is not running", "unsent")
            try:
                write_frame(fd, line)
            except OSError as exc:  # BrokenPipe: the child went away
                raise RequestFailed(f"{self.label} is not running: {exc.strerror or exc}", "unsent") from None

    def submit(self, method: str, params: dict | None = None, *, meta: dict | None = None,
               callback: Callable[[Any], None] | None = None) -> PendingRequest:
        """Send our own request without waiting; the :class:`PendingRequest` completes with the
        answer. ``callback`` runs on the reader thread (the async façade uses it).

        Raises:
            RequestFailed(kind="unsent"): it could not be written.
        """
        mid = self.ids.next()
        body = request_body(mid, method, params, meta)
        waiting = PendingRequest(method, callback)
        self._pending[mid] = waiting
        try:
            self.send(dump(body))
        except RequestFailed:
            self._pending.pop(mid, None)
            raise
        return waiting

    def request(self, method: str, params: dict | None = None, *, timeout: float | None,
                meta: dict | None = None) -> dict:
        """Send our own request and wait for its result; see
        :meth:`synartesis.proxy.transport.Upstream.request`."""
        waiting = self.submit(method, params, meta=meta)
        outcome = waiting.wait(timeout)
        if outcome is None:
            self.forget(waiting)
            assert timeout is not None
            raise RequestFailed(f"{self.label} did not answer {method} within {timeout:g} s", "timeout")
        return self.result_of(method, outcome)

    def forget(self, waiting: PendingRequest) -> None:
        """Stop waiting for ``waiting`` (its answer, if it ever comes, is dropped)."""
        for mid, w in list(self._pending.items()):
            if w is waiting:
                self._pending.pop(mid, None)

    def result_of(self, method: str, outcome: Any) -> dict:
        """The ``result`` of an answer; RequestFailed for a failure or a JSON-RPC error."""
        if isinstance(outcome, RequestFailed):
            raise outcome
        if isinstance(outcome, LazyFrame):  # framing.unreadable: valid JSON Python's reader refuses
            raise RequestFailed(f"{self.label} answered {method} with JSON that synartesis cannot read (a number of "
                                "over 4,300 digits, or nesting too deep for Python's JSON reader)", "error",
                                {"message": "an answer synartesis cannot read"})
        if not isinstance(outcome, dict):
            raise RequestFailed(f"{self.label} answered {method} with something that is not JSON-RPC", "error",
                                {"message": "not a JSON-RPC answer"})
        if "error" in outcome:
            err = outcome.get("error") or {}
            msg = err.get("message", "error") if isinstance(err, dict) else str(err)
            raise RequestFailed(f"{self.label} answered {method} with an error: {msg}", "error",
                                err if isinstance(err, dict) else {"message": str(err)})
        result = outcome.get("result")
        return result if isinstance(result, dict) else {"value": result}

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification of our own (no id, no answer).

        Raises:
            RequestFailed(kind="unsent").
        """
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        self.send(dump(body))

    # -- messages for people -------------------------------------------------------------
    def stderr_tail(self, n: int = 4) -> list[str]:
        """The last ``n`` non-blank lines the child wrote to stderr (captured mode only)."""
        return list(self._stderr_tail)[-n:]

    def describe_failure(self, what: str) -> str:
        """``what`` plus the server's last stderr lines, for error messages; a line naming an
        error further up (``Error: Cannot find module …``, a Python ``…Error:``) comes first, as
        a Node or Python stack trace ends in lines that say nothing (a new user's round 19, #5:
        ``code: 'MODULE_NOT_FOUND'`` and the Node version were all that was shown)."""
        import re
        tail = self.stderr_tail()
        cause = next((line for line in reversed(self._stderr_tail) if re.search(_ERROR_LINE, line) and line not in tail),
                     None)
        if cause is not None:
            tail = [cause, *tail]
        return f"{what}{SERVER_SAID}{'; '.join(tail)}" if tail else what

    # -- shutdown ----------------------------------------------------------------------
    def close_stdin(self, wait: float = 0.5) -> bool:
        """Close the child's stdin (the polite way to ask a stdio server to exit).

        Waits up to ``wait`` seconds for a write in progress (a child that does not read keeps
        one blocked); returns False when it could not close it yet.
        """
        if not self._wlock.acquire(True, wait):
            return False
        try:
            if self._stdin_fd is not None:
                self._stdin_fd = None
                try:
                    assert self.popen.stdin is not None
                    self.popen.stdin.close()
                except OSError:
                    pass
        finally:
            self._wlock.release()
        return True

    def _signal_group(self, sig: int) -> None:
        try:
            if os.name == "posix":
                os.killpg(self.popen.pid, sig)
            else:  # pragma: no cover - Windows
                self.popen.kill()
        except OSError:  # gone already, or not ours
            pass

    def kill(self) -> None:
        """SIGKILL the child's process group now (no grace): for cleanup that cannot wait."""
        self._signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))

    def close(self, grace: float = 2.0) -> int:
        """Shut the child down in order; its exit code (negative: killed by that signal)."""
        if self.exit_code is not None:
            return self.exit_code
        import subprocess  # not before shutdown: it is not on the start-up path
        stdin_closed = self.close_stdin()
        for sig in (None, signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
            if sig is not None:
                self._signal_group(sig)
            try:
                self.exit_code = self.popen.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        if not stdin_closed:
            self.close_stdin(grace)
        if os.name == "posix" and self.exit_code is not None:
            # the launcher (npx, uvx) may have exited while the real server lingers
            self._signal_group(signal.SIGTERM)
        self.closed.wait(1.0)  # let the rest of its output arrive
        self._fail_pending("closed", f"{self.label} was shut down")
        return self.exit_code if self.exit_code is not None else -9
