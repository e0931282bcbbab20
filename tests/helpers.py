"""Test helpers: run the real proxy as a subprocess, talk raw JSON-RPC or the mcp SDK client.

Every process a test starts goes through :func:`spawn` / :func:`run` (or, for the mcp SDK's
own stdio client, :func:`stdio_client` / :func:`sdk_session`): each is registered with the
running test's :class:`Procs`, and the autouse ``procs`` fixture (``tests/conftest.py``) reaps
whatever is left when the test ends, failing or not: its process group, then its descendants,
SIGTERM then SIGKILL, within a timeout. A process nobody registered that is still alive under
the test (a leak of the code under test) is killed too, and fails the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FAKE_SERVER = [sys.executable, str(REPO / "tests" / "fake_server.py")]

FAKE_POLICY = """version: 1
servers:
  kv: {}
tools:
  - match: "kv.get"
    class: readonly
  - match: "kv.put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}
  - match: "kv.slow_put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}
"""

# The kv server's put as a compensation with no read: nothing can check it (unverified), and
# an error after it cannot be settled (unknown).
FAKE_BLIND_POLICY = FAKE_POLICY.replace('''  - match: "kv.put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}''', '''  - match: "kv.put"
    class: compensable
    inverse: {tool: kv.put, args: {key: "$.key", value: "v0"}}''', 1)
assert FAKE_BLIND_POLICY != FAKE_POLICY

# The filesystem server's reversible writes (the shipped policy has more; tests keep theirs small).
FS_POLICY = """version: 1
servers:
  files: {}
tools:
  - match: "files.read_*"
    class: readonly
  - match: "files.list_*"
    class: readonly
  - match: "files.write_file"
    class: reversible
    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"], refuse_when: ["\\ufffd"]}
    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}
  - match: "files.edit_file"
    class: reversible
    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"], refuse_when: ["\\ufffd"]}
    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}
"""

# The same, plus move_file, moved back by its inverse (it has no read: its undo is unverified).
FS_MOVE_POLICY = FS_POLICY + """  - match: "files.move_file"
    class: reversible
    inverse: {tool: files.move_file, args: {source: "$.destination", destination: "$.source"}}
"""

# The same, with every write_file held for a person (`gate: always` on a reversible rule).
GATED_FS_POLICY = FS_POLICY.replace('  - match: "files.write_file"\n    class: reversible\n',
                                    '  - match: "files.write_file"\n    class: reversible\n    gate: always\n', 1)

# The memory server's compensable create (inverse from what the server says it created).
MEMORY_POLICY = """version: 1
servers:
  memory: {}
tools:
  - match: "memory.read_graph"
    class: readonly
  - match: "memory.create_entities"
    class: compensable
    inverse: {tool: memory.delete_entities, args: {entityNames: "$result.entities[].name"}}
"""


# -- processes ------------------------------------------------------------------------------

def _process_table() -> dict[int, tuple[int, str]]:
    """``{pid: (parent pid, state)}`` of every process we can see (Linux ``/proc``; else ``ps``)."""
    table: dict[int, tuple[int, str]] = {}
    if os.path.isdir("/proc/self"):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
            if len(fields) >= 2:
                table[int(name)] = (int(fields[1]), fields[0])
        return table
    out = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,stat="], capture_output=True, text=True, timeout=30)
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            table[int(parts[0])] = (int(parts[1]), parts[2][:1])
    return table


def _state(pid: int) -> str | None:
    """A process's state letter (``Z`` for a zombie), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[0]


def _children(pid: int) -> list[int] | None:
    """Direct children of ``pid`` from ``/proc/PID/task/*/children`` (None: not available)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            if tid == str(pid):
                return None
    return out


def descendants(root: int, table: dict[int, tuple[int, str]] | None = None) -> list[int]:
    """Every live (not zombie) process below ``root``, parents before children."""
    out: list[int] = []
    if table is None and _children(root) is not None:
        todo = list(_children(root) or [])
        while todo:
            pid = todo.pop(0)
            state = _state(pid)
            if state is None:
                continue
            if state != "Z":
                out.append(pid)
            todo.extend(_children(pid) or [])
        return out
    table = _process_table() if table is None else table
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    todo = list(kids.get(root, []))
    while todo:
        pid = todo.pop(0)
        if table.get(pid, (0, "Z"))[1] != "Z":
            out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip() or f"pid {pid}"
    except OSError:
        return f"pid {pid}"


def _signal(pid: int, sig: int, group: bool) -> None:
    """Signal ``pid`` (and its group when it leads one that is not ours); a gone process is fine."""
    try:
        if group and os.name == "posix":
            pgid = os.getpgid(pid)
            if pgid == pid and pgid != os.getpgrp():
                os.killpg(pgid, sig)
                return
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _alive(pid: int) -> bool:
    state = _state(pid) if os.path.isdir("/proc/self") else _process_table().get(pid, (0, None))[1]
    return state is not None and state != "Z"


# every pid the current test started (its processes are reaped before the tripwire looks):
# the tripwire counts a journal that appeared in the real home only when a run in it came
# from one of them (a person's own client using synartesis meanwhile is not the test)
TEST_PIDS: set[int] = set()


class Procs:
    """The processes one test started, reaped by :meth:`reap` when it ends.

    Thread-safe: tests start proxies from worker threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.popens: list[subprocess.Popen] = []
        self.pids: set[int] = set()

    def spawn(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """``subprocess.Popen(argv, **kwargs)`` in a new session (so its group can be killed),
        registered for reaping. ``stdin`` defaults to ``/dev/null``: a test never reads the
        terminal it was started from."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        if os.name == "posix":
            kwargs.setdefault("start_new_session", True)
        proc = subprocess.Popen(list(argv), **kwargs)
        with self._lock:
            self.popens.append(proc)
            self.pids.add(proc.pid)
            TEST_PIDS.add(proc.pid)
        return proc

    def adopt(self, pids: Sequence[int]) -> None:
        """Register processes someone else started (the mcp SDK's stdio client) for reaping."""
        with self._lock:
            self.pids.update(pids)
            TEST_PIDS.update(pids)

    def run(self, argv: Sequence[str], *, input: Any = None, capture_output: bool = True,
            text: bool | None = None, encoding: str | None = None, timeout: float = 120,
            env: dict | None = None, cwd: str | Path | None = None,
            check: bool = False) -> subprocess.CompletedProcess:
        """Like ``subprocess.run`` (same defaults: bytes unless ``text``), but the process is
        registered, stdin is ``/dev/null`` unless ``input`` is given, and on timeout its whole
        tree is killed before ``TimeoutExpired`` is raised (``subprocess.run`` kills only the
        child, then waits for pipes a grandchild may hold open for ever).

        Raises:
            subprocess.TimeoutExpired: after ``timeout`` seconds (the tree is dead by then).
            subprocess.CalledProcessError: with ``check`` and a non-zero exit.
        """
        pipe = subprocess.PIPE if capture_output else None
        proc = self.spawn(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                          stdout=pipe, stderr=pipe, text=bool(text), encoding=encoding, env=env, cwd=cwd)
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_tree(proc.pid)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                out = err = None
            raise subprocess.TimeoutExpired(list(argv), timeout, output=out, stderr=err) from None
        done = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
        if check:
            done.check_returncode()
        return done

    def kill_tree(self, pid: int, grace: float = 3.0) -> None:
        """SIGTERM ``pid``'s group and every descendant, then SIGKILL what is left after ``grace``."""
        tree = [pid, *descendants(pid)]
        for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
            for p in tree:
                _signal(p, sig, group=True)
            end = time.monotonic() + grace
            while time.monotonic() < end and any(_alive(p) for p in tree):
                time.sleep(0.02)
            if not any(_alive(p) for p in tree):
                break
        for proc in self.popens:
            if proc.pid == pid:
                _close_popen(proc)

    def reap(self, grace: float = 2.0, linger: float = 2.0) -> list[str]:
        """End every process this test left behind.

        Registered processes (and everything below them) are killed, group first. Any other
        live process under this one is given ``linger`` seconds to exit on its own, then
        killed; those are returned (``pid: command line``) so the fixture can fail the test.
        Zombies of ours that no ``Popen`` owns are collected.
        """
        me = os.getpid()
        with self._lock:
            pids = set(self.pids)
            popens = list(self.popens)
        owned: set[int] = set()
        for pid in pids:
            if _alive(pid):
                owned.add(pid)
                owned.update(descendants(pid))
        for pid in sorted(owned):
            if _alive(pid):
                self.kill_tree(pid, grace)
        for proc in popens:
            _close_popen(proc)
        leaked: list[str] = []
        end = time.monotonic() + linger
        for pid in list(SESSION_PIDS):  # a session fixture's server (PostgreSQL) outlives each test
            if _alive(pid):
                owned.add(pid)
                owned.update(descendants(pid))
        stray = [p for p in descendants(me) if p not in owned]
        while stray and time.monotonic() < end:
            time.sleep(0.05)
            stray = [p for p in descendants(me) if p not in owned]
        for pid in stray:
            leaked.append(f"{pid}: {_cmdline(pid)}")
            self.kill_tree(pid, grace)
        _collect_zombies(me, {p.pid for p in popens})
        return leaked


def _close_popen(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            try:
                f.close()
            except (OSError, ValueError):
                pass


def _collect_zombies(me: int, owned: set[int]) -> None:
    """Wait for our dead children that no Popen will wait for (orphans we adopted as the
    subreaper), so they do not pile up as zombies."""
    kids = _children(me)
    if kids is None:
        kids = [pid for pid, (ppid, _) in _process_table().items() if ppid == me]
    for pid in kids:
        if pid not in owned and _state(pid) == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


_current: Procs | None = None
# Processes a session-scoped fixture started and stops itself (the test PostgreSQL server).
SESSION_PIDS: set[int] = set()


def own_descendants() -> list[int]:
    """This test process's live descendants, less the session fixtures' servers and their
    children (PostgreSQL's postmaster and workers outlive every test by design)."""
    shared: set[int] = set()
    for pid in list(SESSION_PIDS):
        if _alive(pid):
            shared.add(pid)
            shared.update(descendants(pid))
    return [pid for pid in descendants(os.getpid()) if pid not in shared]


def current_procs() -> Procs:
    """The running test's registry (set by the ``procs`` fixture)."""
    if _current is None:
        raise RuntimeError("processes can only be started inside a test (the procs fixture is not active)")
    return _current


def spawn(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """:meth:`Procs.spawn` on the running test's registry."""
    return current_procs().spawn(argv, **kwargs)


def run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """:meth:`Procs.run` on the running test's registry."""
    return current_procs().run(argv, **kwargs)


def _live_children() -> set[int]:
    me = os.getpid()
    kids = _children(me)
    if kids is None:
        kids = [pid for pid, (ppid, _) in _process_table().items() if ppid == me]
    return {pid for pid in kids if _alive(pid)}


@asynccontextmanager
async def stdio_client(params: Any, errlog: Any = None):
    """The mcp SDK's ``stdio_client(params)``, with the server process it starts registered
    for reaping (the SDK starts it itself, so it is found as our new child). ``errlog``: a
    file the process's stderr goes to (default: ours)."""
    from mcp.client.stdio import stdio_client as sdk_stdio_client

    before = _live_children()
    async with sdk_stdio_client(params, errlog=errlog or sys.stderr) as streams:
        current_procs().adopt(sorted(_live_children() - before))
        yield streams


def synartesis_argv(*args: str) -> list[str]:
    """argv that runs this checkout's CLI."""
    return [sys.executable, "-m", "synartesis", *args]


def proxy_argv(server: str, manifest: Path, journal: Path, command: list[str], *extra: str) -> list[str]:
    return synartesis_argv("proxy", "--server", server, "--manifest", str(manifest), "--journal", str(journal),
                           *extra, "--", *command)


def kv_proxy(tmp_path: Path, seed: dict | None = None, policy: str = FAKE_POLICY) -> tuple[Path, Path, Path, list[str]]:
    """(policy, journal, the fake kv server's state file, proxy argv) in ``tmp_path``; the
    store starts as ``seed`` (default ``{"k0": "v0", "k1": "v1"}``)."""
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(policy)
    state.write_text(json.dumps({"k0": "v0", "k1": "v1"} if seed is None else seed, sort_keys=True, indent=1))
    return manifest, journal, state, proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])
def kv_logged(tmp_path: Path) -> tuple[Path, Path, Path, Path, dict, list[str]]:
    """(policy, journal, store, call log, env, proxy argv): a kv proxy whose fake server logs
    every call it receives to the call log (``FAKE_LOG``), the store starting as
    ``{"k": "old"}``."""
    manifest, journal, store, log = (tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json",
                                     tmp_path / "calls.jsonl")
    manifest.write_text(FAKE_POLICY)
    store.write_text(json.dumps({"k": "old"}))
    env = dict(os.environ, FAKE_LOG=str(log))
    return manifest, journal, store, log, env, proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(store)])


def start_slow_put(s: "RawSession", journal: Path, delay: float) -> None:
    """On a fresh kv session: write k0 = "agent" (applied), then send a slow write of k1 = "x"
    and return once its row is recorded (its answer is ``delay`` seconds away)."""
    s.handshake()
    s.call(1, "put", {"key": "k0", "value": "agent"})
    s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "slow_put", "arguments": {"key": "k1", "value": "x", "delay": delay}}})
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with open_journal(journal) as j:
            acts = [a for r in j.list_runs() for a in j.actions(r.id)]
        # the first write's "applied" is committed after its answer went out (design notes):
        # killed before that, it too would be unknown, which is not what the callers test
        if any(a.tool == "slow_put" for a in acts) and any(a.tool == "put" and a.status == "applied" for a in acts):
            return
        time.sleep(0.05)


def kill_mid_slow_put(tmp_path: Path, policy: str = FAKE_POLICY, delay: float = 1) -> tuple[Path, Path, Path]:
    """A kv run that wrote k0 = "agent" (applied), then sent a slow write of k1 = "x" and had its
    proxy SIGKILLed mid-call; waits until the orphaned server has finished that write on its own.
    Returns (policy, journal, the store's state file)."""
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=policy)
    with RawSession(argv) as s:
        start_slow_put(s, journal, delay)
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.wait(10)
    deadline = time.monotonic() + 15
    while json.loads(state.read_text()).get("k1") != "x" and time.monotonic() < deadline:
        time.sleep(0.05)
    return manifest, journal, state


def files_proxy(tmp_path: Path, fs_server: list[str], policy: str = "version: 1\nservers:\n  files: {}\ntools: []\n"
                ) -> tuple[Path, list[str]]:
    """A root folder for the filesystem server and the argv of a proxy in front of it
    (journal ``j.db`` in ``tmp_path``); ``policy`` defaults to one holding every call."""
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(policy)
    return root, proxy_argv("files", manifest, tmp_path / "j.db", [*fs_server, str(root)])


def files_run(tmp_path: Path, fs_server: list[str], files: dict[str, str], calls: list[tuple[str, dict]],
              policy: str = FS_MOVE_POLICY) -> tuple[Path, list[str]]:
    """One agent run against the real filesystem server: ``files`` ({name: text}) written under
    the root, then each of ``calls`` ([(tool, args)], ``{root}`` in an argument's text replaced
    by the root) sent through the proxy under ``policy``; each must succeed. Returns (the root,
    the ``--manifest``/``--journal`` flags for the CLI)."""
    root, argv = files_proxy(tmp_path, fs_server, policy)
    for name, text in files.items():
        (root / name).write_text(text)
    with RawSession(argv) as s:
        s.handshake()
        for n, (tool, args) in enumerate(calls, 1):
            args = {k: v.format(root=root) if isinstance(v, str) else v for k, v in args.items()}
            assert not s.call(n, tool, args).get("isError"), (tool, args)
    return root, ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]


# A memory run whose later call (approved, irreversible) changed what its create made: the
# undo leaves it in place, and overwriting the create's entity removes it too (new user round 8).
MEMORY_LEFT_POLICY = """version: 1
servers:
  memory: {}
tools:
  - match: "memory.read_graph"
    class: readonly
  - match: "memory.open_nodes"
    class: readonly
  - match: "memory.create_entities"
    class: compensable
    inverse: {tool: memory.delete_entities, args: {entityNames: "$result.entities[].name"}}
    verify: {tool: memory.open_nodes, args: {names: "$result.entities[].name"}}
  - match: "memory.add_observations"
    class: irreversible
    gate: never   # trusted here; the shipped policy holds it
"""
MEMORY_LEFT_CALLS = [("create_entities", {"entities": [{"name": "Alice", "entityType": "person", "observations": ["likes tea"]}]}),
                     ("add_observations", {"observations": [{"entityName": "Alice", "contents": ["plays chess"]}]})]


def memory_run(tmp_path: Path, memory_server: list[str], calls: list[tuple[str, dict]],
               policy: str | None = None) -> tuple[Path, dict[str, str], list[str]]:
    """One agent run against the real memory server, through the proxy under ``policy``
    (default: the shipped ``policies/memory.yaml``), its graph ``mem.jsonl`` in ``tmp_path``:
    each of ``calls`` ([(tool, args)]) must succeed. Returns (the graph file, the env that
    points the server at it, the ``--manifest``/``--journal`` flags for the CLI)."""
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "mem.jsonl"
    manifest.write_text(policy if policy is not None else (REPO / "policies" / "memory.yaml").read_text())
    env = {**os.environ, "MEMORY_FILE_PATH": str(mem)}
    with RawSession(proxy_argv("memory", manifest, journal, memory_server), env=env) as s:
        s.handshake()
        for n, (tool, args) in enumerate(calls, 1):
            assert not s.call(n, tool, args).get("isError"), (tool, args)
    return mem, env, ["--manifest", str(manifest), "--journal", str(journal)]


def cli(*args: str, env: dict | None = None, cwd: str | Path | None = None, timeout: float = 120,
        input: str | None = None) -> subprocess.CompletedProcess:
    """Run the CLI; return the completed process (text mode). Registered for reaping."""
    return run(synartesis_argv(*args), capture_output=True, text=True, env=env, cwd=cwd,
               timeout=timeout, input=input)


class RawSession:
    """A subprocess spoken to with newline-delimited JSON-RPC, reading replies by id."""

    def __init__(self, argv: list[str], env: dict | None = None, cwd: str | Path | None = None) -> None:
        self.proc = spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, cwd=cwd)
        self.lines: list[bytes] = []
        self._buf = b""

    def send(self, obj: Any) -> None:
        assert self.proc.stdin is not None
        data = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read_line(self, timeout: float = 30) -> bytes:
        """The next line of the process's stdout (without its newline), read from the descriptor
        into a buffer of this session's own: a buffered reader under select() would leave a
        second frame that came in the same read unseen until the timeout (review 12)."""
        assert self.proc.stdout is not None
        import select
        fd = self.proc.stdout.fileno()
        end = time.monotonic() + timeout
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line, self._buf = self._buf[:nl], self._buf[nl + 1:]
                self.lines.append(line)
                return line
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no line within timeout")
            r, _, _ = select.select([fd], [], [], left)
            if r:
                data = os.read(fd, 1 << 16)
                if not data:
                    raise EOFError("the process closed its stdout")
                self._buf += data

    def wait_for(self, mid: Any, timeout: float = 30) -> tuple[bytes, dict]:
        """Read lines until the response with ``id == mid``; returns (raw bytes, parsed)."""
        while True:
            line = self.read_line(timeout)
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("id") == mid and "method" not in msg:
                return line, msg

    def request(self, mid: Any, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            body["params"] = params
        self.send(body)
        return self.wait_for(mid, timeout)[1]

    def handshake(self, name: str = "test-client", capabilities: dict | None = None) -> dict:
        init = self.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": capabilities or {},
                                              "clientInfo": {"name": name, "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    def call(self, mid: Any, name: str, arguments: dict, timeout: float = 30) -> dict:
        return self.request(mid, "tools/call", {"name": name, "arguments": arguments}, timeout)["result"]

    def close(self, timeout: float = 15) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.stderr and not self.proc.stderr.closed and self.proc.poll() is not None:
                self._stderr = self.proc.stderr.read()
            for f in (self.proc.stdout, self.proc.stderr):
                if f:
                    f.close()

    _stderr: bytes = b""

    def stderr_text(self) -> str:
        """Everything the process wrote to stderr (after :meth:`close`)."""
        return self._stderr.decode("utf-8", "replace")

    def __enter__(self) -> "RawSession":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            try:
                self.close(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@asynccontextmanager
async def sdk_session(argv: list[str], env: dict | None = None, cwd: str | None = None):
    """The mcp SDK's own ClientSession over stdio, connected to ``argv``."""
    from mcp import ClientSession, StdioServerParameters

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(env or os.environ), cwd=cwd)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    """The text blocks of an SDK CallToolResult or a raw result dict."""
    content = result.get("content") if isinstance(result, dict) else result.content
    parts = []
    for block in content or []:
        parts.append(block.get("text", "") if isinstance(block, dict) else getattr(block, "text", ""))
    return " ".join(parts)


def assert_plan_agrees(plan: dict, text: str, done: dict) -> None:
    """A dry run (``plan``: its ``--json``; ``text``: its printed report) agrees with the real
    undo or redo that followed (``done``: its ``--json``): it halts where the real one halted,
    or it marks that step ``check: deferred`` (checked only during the real one) and its
    RESULT line promises no status. A plan that halts where the real one went through fails."""
    halt = done["halted"]
    if halt is None:
        assert plan["halted"] is None, (plan, done)
        return
    if plan["halted"] is not None:
        assert (plan["halted"]["run"], plan["halted"]["seq"]) == (halt["run"], halt["seq"]), (plan["halted"], halt)
        return
    step = next(s for s in plan["steps"] if (s["run"], s["seq"]) == (halt["run"], halt["seq"]))
    assert step["check"] == "deferred" and plan["deferredChecks"] >= 1, (step, plan)
    assert f"checked only during the real {plan['kind']}" in step["reason"], step
    # the RESULT line is conditional: what it ends as if no drift is found there, and what if it is
    assert f"if the real {plan['kind']} finds no drift" in text and "if it finds drift, it halts there" in text, text


def imported_modules(argv: list[str], frames: bytes) -> set[str]:
    """Top-level modules the command ``argv`` (a ``synartesis_argv``) imported before it exited,
    fed ``frames`` on stdin (``python -X importtime``)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv[1:]], input=frames, capture_output=True,
                          timeout=60)
    names = set()
    for line in done.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def open_journal(path: Path):
    from synartesis.journal import Journal
    return Journal.open(path)


@contextmanager
def journal_of_schema(monkeypatch: Any, path: Path, version: int):
    """A new journal at ``path`` made as schema ``version`` made it (its later migrations
    withheld while it is open); the caller closes it."""
    from synartesis.journal import Journal, schema

    with monkeypatch.context() as m:
        m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:version])
        m.setattr(schema, "SCHEMA_VERSION", version)
        yield Journal.open(path, create=True)


def sqlite_defensive(monkeypatch: Any) -> None:
    """Every sqlite3 connection opened from now on (until the test ends) is in SQLite's defensive
    mode (``SQLITE_DBCONFIG_DEFENSIVE``: among others, sqlite_master may not be written, even
    with writable_schema), as some SQLite builds have by default. Skips the test where this
    Python cannot set it (before 3.12 through ctypes: the connection object's first field is
    its ``sqlite3 *``)."""
    import ctypes
    import sqlite3

    import pytest

    def defend(conn: sqlite3.Connection) -> None:
        if hasattr(conn, "setconfig"):  # Python 3.12
            conn.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
            return
        import _sqlite3
        handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__)
        if ctypes.CDLL(_sqlite3.__file__).sqlite3_db_config(handle, ctypes.c_int(1010), ctypes.c_int(1),
                                                            ctypes.c_void_p(None)) != 0:
            raise OSError("sqlite3_db_config(SQLITE_DBCONFIG_DEFENSIVE) failed")

    real = sqlite3.connect
    try:
        probe = real(":memory:", isolation_level=None)
        defend(probe)
        probe.execute("CREATE TABLE t (x)")
        probe.execute("PRAGMA writable_schema = ON")
        probe.execute("UPDATE sqlite_master SET sql = sql")
    except sqlite3.DatabaseError:
        pass  # refused: defensive mode is on
    except (AttributeError, OSError, ValueError) as e:
        pytest.skip(f"cannot put SQLite in its defensive mode here: {e}")
    else:
        pytest.skip("SQLite's defensive mode did not refuse a write of sqlite_master here")

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real(*args, **kwargs)
        defend(conn)
        return conn
    monkeypatch.setattr(sqlite3, "connect", connect)


# -- the real-home tripwire ------------------------------------------------------------------

_JOURNAL_SIDECARS = ("journal.db-wal", "journal.db-shm", "journal.db-journal")


class HomeWatch:
    """Fingerprints of what synartesis itself would write under a home (issue 9 item 14).

    Watched, and nothing else, so other programs writing to the home while the suite runs
    (Claude Code rewriting ``~/.claude.json``, Codex's ``~/.codex/*.sqlite``, npm caches) are
    not mistaken for a test that escaped its temporary HOME:

    - synartesis's home (``$SYNARTESIS_HOME``, else ``~/.synartesis``): every file by size and
      mtime (the policy, ``installed.json``, ``backups/``), except the journal and caches,
      which a real client's proxies write while the suite runs: only their appearance counts
      (the journal's ``-wal``/``-shm`` files come and go with every connection: ignored);
    - every client config file install edits, at every candidate path of every client
      descriptor, resolved by synartesis's own location code for this home and environment:
      whether it exists and how many times it says ``synartesis`` (a wrapped entry names the
      synartesis executable; a rewrite by its client keeps the count);
    - ``*.synartesis-tmp`` files (our atomic writes) in the folders of those files.
    """

    def __init__(self, home: Path, environ: dict[str, str], platform: str = sys.platform) -> None:
        from synartesis.clients.descriptor import load_descriptors
        from synartesis.clients.locations import expand_template
        from synartesis.paths import Env, synartesis_home

        env = Env(home=Path(home), environ=dict(environ), platform=platform, cwd=Path(home))
        self.syn_home = synartesis_home(env)
        configs: set[Path] = set()
        for desc in load_descriptors():
            for spec in desc.files:
                for tpl in spec.templates(platform):
                    path = expand_template(tpl, env)
                    if path is not None and "*" not in str(path):
                        configs.add(path)
        self.configs = sorted(configs)
        self.folders = sorted({p.parent for p in self.configs})
        self._counts: dict[Path, tuple[tuple[int, int], int]] = {}

    def _count(self, path: Path) -> int | None:
        try:
            st = path.stat()
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        cached = self._counts.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            n = path.read_bytes().count(b"synartesis")
        except OSError:
            return None
        self._counts[path] = (key, n)
        return n

    def snapshot(self) -> dict[str, object]:
        """``{what: fingerprint}`` of everything watched (see the class docstring)."""
        seen: dict[str, object] = {}
        for path in self.configs:
            seen[f"{path} (mentions of synartesis)"] = self._count(path) or 0
        for folder in self.folders:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if name.endswith(".synartesis-tmp"):
                    seen[str(folder / name)] = "temporary file"
        if self.syn_home.is_dir():
            for dirpath, _, files in os.walk(self.syn_home):
                for name in files:
                    p = os.path.join(dirpath, name)
                    if name in _JOURNAL_SIDECARS:
                        continue  # come and go with every connection to the journal
                    if name == "journal.db" or "cache" in name:
                        seen[p] = "exists"
                        continue
                    try:
                        st = os.stat(p, follow_symlinks=False)
                    except OSError:
                        continue
                    seen[p] = (st.st_size, st.st_mtime_ns)
        return seen

    @staticmethod
    def changes(before: dict[str, object], after: dict[str, object], ours: set[int] | None = None) -> list[str]:
        """What differs between two snapshots, one line each (empty: nothing we would write).
        ``ours``: the pids the test started; a journal that appeared counts only when one of
        its runs was made by one of them or by this process, or when it cannot be read (a
        real client's first tool call made during the suite creates it too: new user 16, #4)."""
        out = []
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                if ours is not None and key.endswith("journal.db") and before.get(key) is None \
                        and not _journal_made_by(Path(key), ours | {os.getpid()}):
                    continue
                out.append(f"{key}: {before.get(key, 'absent')} -> {after.get(key, 'absent')}")
        return out


def _journal_made_by(path: Path, pids: set[int]) -> bool:
    """Whether a run of the journal at ``path`` came from one of ``pids`` (its proxy, or the
    client that launched it); True when that cannot be told (it is then counted)."""
    import sqlite3
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            runs = {r[0] for r in db.execute("SELECT pid FROM runs")}
            clients = {r[0] for r in db.execute("SELECT client_pid FROM sessions")}
        finally:
            db.close()
    except sqlite3.Error:
        return True
    return bool((runs | clients) & pids) or not (runs | clients)


def run_async(coro: Any, timeout: float = 300) -> Any:
    """``asyncio.run(coro)`` that cannot hang the test after ``coro`` is done.

    ``asyncio.run`` ends by joining the default executor's threads; a thread blocked in
    ``Popen.wait`` on a child the code under test leaked would block it for ever (issue 9
    item 13). Here that join is bounded: the leaked child is left to the ``procs`` fixture,
    which kills it and fails the test.

    Raises:
        asyncio.TimeoutError: ``coro`` took longer than ``timeout`` seconds.
    """
    import asyncio

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))
    finally:
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(asyncio.wait([loop.create_task(loop.shutdown_default_executor())], timeout=5))
        finally:
            asyncio.set_event_loop(None)
            loop.close()


# The toy CRM's long mixed run (tests/undo/test_crm_undo.py, tests/remote/test_bridge.py).
GREEK = "Σημειώσεις: «γραμμή ένα»\nline two\twith a tab, \"quotes\" and a \\ backslash"

# (tool, arguments); "$new[i]" stands for the id the i-th create_customer answered with.
CRM_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_customers", {}),
    ("update_customer", {"id": "c_001", "plan": "free"}),                       # 1
    ("update_customer", {"id": "c_001", "notes": GREEK}),                       # 2
    ("create_customer", {"name": "Katherine Johnson", "email": "kj@example.com",
                         "plan": "pro"}),                                        # 3
    ("update_customer", {"id": "c_002", "email": "grace@wrong.example"}),       # 4
    ("delete_customer", {"id": "c_003"}),                                       # 5
    ("update_customer", {"id": "$new[0]", "notes": "met at the conference"}),   # 6
    ("create_customer", {"name": "Edsger Dijkstra"}),                           # 7
    ("update_customer", {"id": "c_999", "notes": "no such customer"}),          # held: nothing to restore
    ("update_customer", {"id": "c_001", "plan": "platinum"}),                   # refused by the server
    ("update_customer", {"id": "c_002", "plan": "pro", "name": "G. Hopper"}),   # 8
    ("restore_customer", {"id": "c_003", "name": "Alan Turing", "email": "turing@example.com",
                          "plan": "enterprise", "notes": "restored by the agent"}),  # 9
    ("update_customer", {"id": "c_003", "plan": "free"}),                       # 10
    ("get_customer", {"id": "c_003"}),
    ("create_customer", {"name": "Barbara Liskov", "plan": "enterprise"}),      # 11
    ("update_customer", {"id": "$new[1]", "plan": "pro"}),                      # 12
    ("delete_customer", {"id": "$new[1]"}),                                     # 13
    ("update_customer", {"id": "$new[2]", "email": "bl@example.com"}),          # 14
    ("create_customer", {"name": "Frances Allen", "notes": "Ελληνικά"}),        # 15
    ("update_customer", {"id": "c_001", "name": "Augusta Ada King", "notes": ""}),  # 16
    ("update_customer", {"id": "$new[3]", "plan": "enterprise"}),               # 17
    ("update_customer", {"id": "c_002", "notes": "line\r\nbreaks"}),            # 18
    ("update_customer", {"id": "$new[0]", "plan": "free", "notes": ""}),        # 19
    ("update_customer", {"id": "c_001", "plan": "enterprise"}),                 # 20
]


async def crm_agent(argv: list[str], env: dict[str, str]) -> list[tuple[str, bool]]:
    """Make every call of :data:`CRM_CALLS` through ``argv`` (a proxy or bridge) with the SDK's
    stdio client; returns ``(tool, is_error)`` per call."""
    from mcp import ClientSession, StdioServerParameters
    seen: list[tuple[str, bool]] = []
    new_ids: list[str] = []
    async with stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=env)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for tool, args in CRM_CALLS:
                result = await session.call_tool(tool, resolve_call(args, new_ids))
                seen.append((tool, bool(result.is_error)))
                if tool == "create_customer" and not result.is_error:
                    new_ids.append(result.structured_content["id"])
    return seen


def resolve_call(args: dict[str, Any], new_ids: list[str]) -> dict[str, Any]:
    """``args`` with each ``"$new[i]"`` replaced by the id the i-th create_customer answered."""
    out = {}
    for key, value in args.items():
        if isinstance(value, str) and value.startswith("$new["):
            value = new_ids[int(value[5:-1])]
        out[key] = value
    return out


def two_sessions_writing(tmp_path: Path, fs_server: list[str], texts: tuple[str, str] = ("A", "B")):
    """r.txt ("base") written by session ``sa`` then by session ``sb`` (``texts``) through a
    files proxy under FS_POLICY. Returns (the file, the --manifest/--journal flags)."""
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    doc = root / "r.txt"
    doc.write_text("base")
    for name, text in zip(("sa", "sb"), texts):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            assert not s.call(1, "write_file", {"path": str(doc), "content": text}).get("isError")
    return doc, ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]


def fs_and_memory(tmp_path: Path, fs_server: list[str], memory_server: list[str], text: str = "before\n"):
    """A files proxy and a memory proxy over one policy (FS_POLICY and MEMORY_POLICY's rules)
    and one journal in ``tmp_path``; root/a.txt holds ``text``. Returns (root, manifest, journal,
    env with MEMORY_FILE_PATH, files argv, memory argv)."""
    policy = FS_POLICY.replace("servers:\n  files: {}\n", "servers:\n  files: {}\n  memory: {}\n") \
        + MEMORY_POLICY.split("tools:\n", 1)[1]
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text(text)
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(policy)
    env = dict(os.environ, MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl"))
    fs = proxy_argv("files", manifest, journal, [*fs_server, str(root)])
    memory = proxy_argv("memory", manifest, journal, memory_server)
    return root, manifest, journal, env, fs, memory


def held_kv_call(tmp_path: Path, tool: str = "delete") -> tuple[Path, list[str]]:
    """One call to ``tool`` through a kv proxy that holds it (no rule covers it). Returns the
    journal and the --journal/--manifest flags that name it."""
    manifest, journal, _state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, tool, {"key": "k0"}).get("isError")  # held
    return journal, ["--journal", str(journal), "--manifest", str(manifest)]
