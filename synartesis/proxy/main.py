"""``synartesis proxy``: argument parsing and start-up (standard library only on a warm start).

Forms:
- ``synartesis proxy --server NAME [--manifest P] [--journal P] [options] -- CMD ARGS…``
  (what ``install`` writes into client configs): one server, the command after ``--``.
- ``synartesis proxy [--manifest P] [--journal P] [--server NAME]``: start the policy's
  server (``servers.NAME.command/args``); with two or more servers in the policy and no NAME,
  every one of them, with ``SERVER__tool`` names.
- ``synartesis proxy --server NAME --url URL [header flags]``: the stdio ↔ remote bridge
  (:mod:`synartesis.remote.bridge`): the same engine, the upstream a Streamable HTTP / SSE
  server. Like the installed form it uses only ``$SYNARTESIS_HOME``'s policy (or --manifest).

Start-up order, because every client launch pays it for every server: the server is spawned
first (its own start-up, hundreds of milliseconds for ``node``, overlaps ours); then the policy
is loaded through the compiled cache (no PyYAML on a warm start); the journal is opened at the
first ``tools/call``, not before; no asyncio, no event loop.

Exit codes: the child's exit code once running; 2 for usage and policy errors; 1 when the
server cannot be started.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported before the server is spawned
if TYPE_CHECKING:
    from typing import Any

__all__ = ["USAGE", "main", "parse_args", "parse_call_timeout"]

USAGE = """usage: synartesis proxy --server NAME [--manifest P] [--journal P] [options] -- COMMAND [ARGS...]
       synartesis proxy [--server NAME] [--manifest P] [--journal P] [options]

options:
  --server NAME              the policy's name for this server (also the name clients use)
  --manifest P               the policy file (default: $SYNARTESIS_HOME/synartesis.yaml; a project's own is not used)
  --journal P                the journal (default: journal.db beside the policy)
  --call-timeout S           seconds to wait for a forwarded call before answering that its outcome is
                             unknown (default: 600, or $SYNARTESIS_CALL_TIMEOUT; 0 or none: wait for ever)
  --read-timeout S           seconds to wait for a pre-read (default: 30)
  --max-snapshot-bytes N     refuse writes whose prior state is larger (default: 8388608, or $SYNARTESIS_MAX_SNAPSHOT_BYTES)
  --log-level L              debug, info, warn, error, silent (default: info)
  --saga                     saga mode for every server: a failed call first rolls back the run's
                             earlier changes (per server: servers.NAME.saga: true in the policy)

a remote server (a stdio <-> Streamable HTTP / SSE bridge) instead of a command:
  --url URL | --url-env VAR  the server's MCP endpoint (or the variable holding it)
  --header "NAME: VALUE"     a header (repeatable); --header-env NAME=VAR takes its value from $VAR
  --bearer-env VAR           Authorization: Bearer $VAR
  --headers-helper CMD       a command printing a JSON object of headers (run as Claude Code runs it)
  --transport T              auto (Streamable HTTP, falling back to SSE), http or sse
"""

_VALUE_FLAGS = {"--server", "--manifest", "--journal", "--call-timeout", "--read-timeout",
                "--max-snapshot-bytes", "--log-level",
                # the remote form (synartesis.remote.bridge); --header and --header-env repeat
                "--url", "--url-env", "--header", "--header-env", "--bearer-env", "--headers-helper", "--transport"}
_BOOL_FLAGS = {"--saga"}
_REPEATABLE = {"--header", "--header-env"}
_REMOTE_KEYS = ("url", "url-env", "header", "header-env", "bearer-env", "headers-helper", "transport")


def _fail(message: str, code: int, usage: bool = True) -> int:
    """Say ``message`` on stderr and return ``code``; a usage error (2) shows the usage too,
    unless ``usage`` is False (the command line is well formed but names nothing to run)."""
    sys.stderr.write(f"synartesis: {message}\n")
    if code == 2 and usage and not message.startswith("/"):
        sys.stderr.write("\n" + USAGE)
    return code


def parse_args(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split ``argv`` into flag values and the upstream command (after ``--``).

    Raises:
        ValueError: an unknown flag, a flag without a value, or a stray positional.
    """
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return opts, argv[i + 1:]
        if tok in ("-h", "--help"):
            opts["help"] = "1"
            i += 1
            continue
        if tok in _BOOL_FLAGS:
            opts[tok[2:]] = "1"
            i += 1
            continue
        name, eq, value = tok.partition("=")
        if name in _VALUE_FLAGS:
            if not eq:
                if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                    raise ValueError(f"{name} needs a value")
                value = argv[i + 1]
                i += 1
            if name in _REPEATABLE and name[2:] in opts:  # kept in order, one value per line
                opts[name[2:]] += "\n" + value
            else:
                opts[name[2:]] = value
            i += 1
            continue
        if tok.startswith("-"):
            raise ValueError(f"unknown flag {tok}; expected one of {', '.join(sorted(_VALUE_FLAGS | _BOOL_FLAGS))}")
        raise ValueError(f"unexpected argument {tok}; put the server's command after --")
    return opts, []


def parse_call_timeout(value: str | None, source: str = "--call-timeout") -> float | None:
    """``--call-timeout`` / ``SYNARTESIS_CALL_TIMEOUT``: seconds (default 600); ``0`` or ``none``
    waits for ever (None). ``source``: where ``value`` came from, as an error names it.

    Raises:
        ValueError: not a number, or negative (the message starts with ``source``).
    """
    from synartesis.proxy.engine import DEFAULT_CALL_TIMEOUT
    if value is None or not value.strip():
        return DEFAULT_CALL_TIMEOUT
    if value.strip().lower() in ("none", "never", "inf", "infinite"):
        return None
    seconds = _number(value, source, float)
    if seconds != seconds or seconds < 0:
        raise ValueError(f"{source}: the call timeout must be 0 or more seconds, not {value}")
    return None if seconds == 0 or seconds >= _LONGEST_WAIT else seconds


def _number(value: str, source: str, kind: type) -> Any:
    """``value`` as a ``kind`` (float: seconds, int: bytes), or a ValueError naming ``source``
    (the option or variable it came from) rather than Python's "could not convert string to
    float" (new user round 31, 9d)."""
    try:
        return kind(value)
    except ValueError:
        what = "a number of seconds" if kind is float else "a whole number of bytes"
        raise ValueError(f"{source}: {value!r} is not {what}") from None


# longer than any wait a person means, and well inside what a lock's timeout accepts: a thread
# wait of 1e10 s overflows time_t (an adversarial review: every read-back then failed)
_LONGEST_WAIT = 1e7


def _options(opts: dict[str, str]):
    from synartesis.proxy.engine import EngineOptions
    call_timeout = parse_call_timeout(opts.get("call-timeout", os.environ.get("SYNARTESIS_CALL_TIMEOUT")),
                                      "--call-timeout" if "call-timeout" in opts else "$SYNARTESIS_CALL_TIMEOUT")
    read_timeout = _number(opts.get("read-timeout", "30"), "--read-timeout", float)
    cap_source = "--max-snapshot-bytes" if opts.get("max-snapshot-bytes") else "$SYNARTESIS_MAX_SNAPSHOT_BYTES"
    cap = _number(opts.get("max-snapshot-bytes") or os.environ.get("SYNARTESIS_MAX_SNAPSHOT_BYTES") or str(8 * 1024 * 1024),
                  cap_source, int)
    if not read_timeout > 0 or cap <= 0:
        raise ValueError("the read timeout and the snapshot cap must be positive")
    read_timeout = min(read_timeout, _LONGEST_WAIT)  # `inf` or 1e10: as long as a wait can be
    return EngineOptions(call_timeout=call_timeout, read_timeout=read_timeout, max_snapshot_bytes=cap,
                         saga="saga" in opts)


def main(argv: list[str], saga_hook: Any = None, bridge: Any = None) -> int:
    """Run the proxy; return the process exit code.

    ``saga_hook``: what rolls a run back in saga mode (the entry point passes
    ``services.saga.rollback``; without one, saga mode is off). ``bridge``: a callable returning
    the remote bridge module (:mod:`synartesis.remote.bridge`: ``remote_spec``, ``open_remote``,
    ``relay_launch``), called only when a ``--url`` flag is given; the entry point passes it so
    the proxy never imports the remote package, which sits above it. Without one the remote form
    is a usage error (exit 2).
    """
    try:
        opts, command = parse_args(argv)
    except ValueError as exc:
        return _fail(str(exc), 2)
    if "help" in opts:
        sys.stdout.write(USAGE)
        return 0
    popen = None
    if command and opts.get("server") and "." not in opts["server"] and "__" not in opts["server"]:
        # Early spawn, before anything else is imported or read: the server's start-up overlaps
        # ours. It reads nothing until we relay the client's first frame; if the options or the
        # policy turn out bad it is stopped unheard.
        from synartesis.errors import UpstreamError
        from synartesis.proxy.spawn import spawn_server
        try:
            popen = spawn_server(command[0], command[1:])
        except UpstreamError as exc:  # a command that names nothing to run: exit 2
            return _fail(str(exc), exc.exit_code, usage=False)
    from synartesis import log as logmod
    try:
        if "log-level" in opts:
            logmod.set_level(opts["log-level"])
        options = _options(opts)
    except ValueError as exc:
        text = str(exc)  # one that names its option or variable needs no prefix
        code = _fail(text if text.startswith(("--", "$")) else f"bad option value: {text}", 2)
    else:
        code = _run(opts, command, popen, options, saga_hook, bridge)
    if popen is not None and popen.poll() is None:
        _stop(popen)
    return code


def _stop(popen) -> None:
    """Stop an early-spawned server that will never be relayed to (start-up failed)."""
    import signal
    import subprocess
    try:
        if os.name == "posix":
            os.killpg(popen.pid, signal.SIGTERM)
        else:  # pragma: no cover
            popen.kill()
        popen.wait(2)
    except (OSError, subprocess.TimeoutExpired):
        try:
            popen.kill()
        except OSError:
            pass


def _run(opts, command, popen, options, saga_hook=None, bridge=None) -> int:
    from synartesis import log as logmod
    from synartesis.errors import PolicyError
    from synartesis.paths import JOURNAL_ENV, Env, locate_journal, locate_policy
    from synartesis.policy.cache import cache_path, load_policy_cached

    env = Env.current()
    remote = _remote_spec(opts, bridge)
    if isinstance(remote, int):
        return remote
    if remote is not None and command:
        return _fail("give the server's command after -- or --url, not both", 2)
    if (command or remote is not None) and "manifest" not in opts:
        # The installed form is started by a client in whatever folder it likes (often a
        # project the agent works on): a synartesis.yaml found there must not replace the
        # user's policy, so only $SYNARTESIS_HOME (or --manifest) is used.
        from synartesis.paths import POLICY_FILENAME, synartesis_home
        policy_path = synartesis_home(env) / POLICY_FILENAME
    else:
        policy_path = locate_policy(env, opts.get("manifest"))
    journal_path = locate_journal(env, policy_path, opts.get("journal"))
    policy = None
    note = None
    if policy_path.exists() or "manifest" in opts:
        try:
            policy = load_policy_cached(policy_path, journal_path.parent)
        except PolicyError as exc:
            return _fail(f"{exc} (a malformed policy never runs; fix it, then restart the client)", 2)
    else:
        note = f"there is no policy at {policy_path}, so every tool is held"
    protected = [str(cache_path(policy_path, journal_path.parent))]
    if policy is not None and policy.journal and not opts.get("journal") and not env.get(JOURNAL_ENV):
        journal_path = locate_journal(env, policy_path, None, policy.journal)  # the policy's journal: key
    server = opts.get("server")
    if not command and remote is None:
        if policy is None:
            return _fail(f"no server command after -- and no policy at {policy_path}", 2)
        if server is None and len(policy.servers) >= 2:
            return _serve_policy(policy, policy_path, journal_path, options, protected, saga_hook)
        if server is None:
            server = next(iter(policy.servers))
        spec = policy.servers.get(server)
        if spec is None or not spec.command:
            return _fail(f"server {server} has no command in {policy_path}; give it after --", 2)
        command = [spec.command, *spec.args]
    if server is None:
        return _fail("--server NAME is required with a command after -- or --url", 2)
    if "." in server or "__" in server:
        return _fail(f'server name {server} may not contain "." or "__"', 2)
    if policy is not None and server not in policy.servers:
        note = (f"server {server} is not in the policy {policy_path}, so every tool is held; "
                + _unknown_server_hint(policy, server, command))
    logmod.log("info", "policy", path=str(policy_path), server=server,
               provenance=(policy.servers[server].provenance or "no claim") if policy and server in policy.servers else None,
               note=note)
    if note:
        logmod.log("warn", note)
    if popen is None and policy is not None and server in policy.servers and policy.servers[server].env:
        # the policy form starts the server itself: its env references are expanded now
        from synartesis.expand import expand_env
        os.environ.update({k: expand_env(v, os.environ) for k, v in policy.servers[server].env.items()
                           if k not in os.environ})

    from synartesis.errors import UpstreamError, UsageError
    from synartesis.proxy.downstream import StdioDownstream
    from synartesis.proxy.engine import Engine
    try:
        if remote is not None:  # the stdio <-> remote bridge: HTTP is imported only here
            mod = bridge()
            upstream = mod.open_remote(server, remote, os.environ)
            launch = mod.relay_launch(server, remote)
        else:
            from synartesis.proxy.stdio import StdioUpstream
            if popen is not None:
                upstream = StdioUpstream(popen, server)
            else:
                upstream = StdioUpstream.spawn(command[0], command[1:], capture_stderr=False, die_with_parent=False,
                                               label=server)
            # env_from_client: the run records which variables the client gave the server (names)
            launch = {"command": command[0], "args": command[1:], "cwd": os.getcwd(), "env_from_client": True}
    except UsageError as exc:
        return _fail(str(exc), 2)
    except UpstreamError as exc:
        return _fail(str(exc), exc.exit_code, usage=False)
    downstream = StdioDownstream()
    engine = Engine(server, upstream, downstream.send, policy=policy, journal_path=journal_path, options=options,
                    launch=launch, policy_note=note, protected=protected, saga_hook=saga_hook)
    _settle_gc()
    try:
        return engine.serve(downstream)
    except Exception as exc:  # noqa: BLE001 - the last boundary: a message, never a traceback
        return _fail(str(exc), 1)


def _unknown_server_hint(policy: Any, server: str, command: list[str]) -> str:
    """What to do about a ``--server`` name the policy does not declare (a new user's round 21:
    the hint always pointed at ``init``, when the policy's own entry for this very server had
    another name). In order: the policy's server that runs this command, a name close to the
    one given, else ``init`` (with the names the policy has)."""
    def same(spec: Any) -> bool:
        if not spec.command or not command:
            return False
        mine, theirs = [spec.command, *spec.args], list(command)
        return mine == theirs or ([os.path.basename(mine[0]), *mine[1:]] == [os.path.basename(theirs[0]), *theirs[1:]])
    names = list(policy.servers)
    runs = [n for n in names if same(policy.servers[n])]
    if runs:
        return (f"the policy's server {runs[0]} runs this same command: give `--server {runs[0]}` in the "
                f"client's entry (or rename servers.{runs[0]} in the policy to {server})")
    import difflib  # only on this mistake's path
    close = difflib.get_close_matches(server, names, n=1, cutoff=0.6)
    if close:
        return (f"did you mean `--server {close[0]}`? (the policy names {', '.join(names)}); or run "
                f"`synartesis init {server} -- …` to write rules for a new server")
    known = f" (the policy names {', '.join(names)})" if names else ""
    return f"run `synartesis init {server} -- …` to write a policy for it{known}"


def _settle_gc() -> None:
    """Start-up's objects (modules, the policy) live as long as the proxy: frozen, so no
    collection walks them again. And the youngest generation is collected after 10,000 net new
    containers, not 700: the reads queued for the journal thread's 50 ms window crossed 700 about
    once a batch, a collection every ~100 reads that cost a few µs a read (cpu.py, README
    Benchmarks). A proxy makes few cycles; a burst's records are freed by reference count."""
    import gc
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])


def _remote_spec(opts: dict[str, str], bridge: Any = None):
    """The ``--url`` form's spec; None for a command; an exit code for bad remote flags."""
    if not any(k in opts for k in _REMOTE_KEYS):
        return None
    if bridge is None:
        return _fail("the remote form (--url) runs through the synartesis command: synartesis proxy --url …", 2)
    from synartesis.errors import UsageError
    try:
        return bridge().remote_spec({k: opts[k].split("\n") for k in _REMOTE_KEYS if k in opts})
    except UsageError as exc:
        return _fail(str(exc), 2)


def _serve_policy(policy, policy_path, journal_path, options, protected, saga_hook=None) -> int:
    """The policy form with two or more servers (``SERVER__tool`` names)."""
    from synartesis.errors import UpstreamError
    from synartesis.expand import expand_env
    from synartesis.log import log
    from synartesis.proxy.downstream import StdioDownstream
    from synartesis.proxy.multi import MultiEngine, ServerLaunch

    launches = []
    for name, spec in policy.servers.items():
        if not spec.command:
            return _fail(f"server {name} has no command in {policy_path}; the policy form starts every server", 2)
        env = dict(os.environ)
        env.update({k: expand_env(v, os.environ) for k, v in spec.env.items()})
        launches.append(ServerLaunch(name, spec.command, list(spec.args), env, spec.cwd))
        log("info", "policy", path=str(policy_path), server=name, provenance=spec.provenance or "no claim")
    downstream = StdioDownstream()
    engine = MultiEngine(launches, downstream.send, policy=policy, journal_path=journal_path, options=options,
                         protected=protected, saga_hook=saga_hook)
    _settle_gc()
    try:
        return engine.serve(downstream)
    except UpstreamError as exc:
        return _fail(str(exc), exc.exit_code, usage=False)
    except Exception as exc:  # noqa: BLE001 - the last boundary: a message, never a traceback
        return _fail(str(exc), 1)
