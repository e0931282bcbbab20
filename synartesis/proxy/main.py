"""``synartesis proxy``: argument parsing and start-up (standard library + PyYAML only).

Forms:
- ``synartesis proxy --server NAME [--manifest P] [--journal P] [options] -- CMD ARGS…``
  (what ``install`` writes into client configs): one server, the command after ``--``.
- ``synartesis proxy [--manifest P] [--journal P] [--server NAME]``: start the policy's
  server (``servers.NAME.command/args``); with one server in the policy NAME may be omitted.

Exit codes: the child's exit code once running; 2 for usage and policy errors; 1 when the
journal or the server cannot be started.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main", "USAGE"]

USAGE = """usage: synartesis proxy --server NAME [--manifest P] [--journal P] [options] -- COMMAND [ARGS...]
       synartesis proxy [--server NAME] [--manifest P] [--journal P] [options]

options:
  --server NAME              the policy's name for this server (also the name clients use)
  --manifest P               the policy file (default: ./synartesis.yaml upward, else $SYNARTESIS_HOME/synartesis.yaml)
  --journal P                the journal (default: journal.db beside the policy)
  --call-timeout S           seconds to wait for a forwarded call before recording it unknown (default: wait)
  --read-timeout S           seconds to wait for a pre-read (default: 30)
  --max-snapshot-bytes N     refuse writes whose prior state is larger (default: 8388608, or $SYNARTESIS_MAX_SNAPSHOT_BYTES)
  --log-level L              debug, info, warn, error, silent (default: info)
"""

_VALUE_FLAGS = {"--server", "--manifest", "--journal", "--call-timeout", "--read-timeout",
                "--max-snapshot-bytes", "--log-level"}


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"synartesis: {message}\n")
    if code == 2 and not message.startswith("/"):
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
        name, eq, value = tok.partition("=")
        if name in _VALUE_FLAGS:
            if not eq:
                if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                    raise ValueError(f"{name} needs a value")
                value = argv[i + 1]
                i += 1
            opts[name[2:]] = value
            i += 1
            continue
        if tok.startswith("-"):
            raise ValueError(f"unknown flag {tok}; expected one of {', '.join(sorted(_VALUE_FLAGS))}")
        raise ValueError(f"unexpected argument {tok}; put the server's command after --")
    return opts, []


def _serve_policy(policy, policy_path, opts, call_timeout, read_timeout, cap) -> int:
    """The policy form with two or more servers (``SERVER__tool`` names)."""
    import asyncio

    from synartesis.errors import JournalError
    from synartesis.journal import Journal
    from synartesis.log import log
    from synartesis.paths import Env, locate_journal
    from synartesis.proxy.multi import MultiProxy, ServerLaunch
    from synartesis.proxy.relay import ProxyOptions
    from synartesis.undo.launch import expand_env

    launches = []
    for name, spec in policy.servers.items():
        if not spec.command:
            return _fail(f"server {name} has no command in {policy_path}; the policy form starts every server", 2)
        env = dict(os.environ)
        env.update({k: expand_env(v, os.environ) for k, v in spec.env.items()})
        launches.append(ServerLaunch(name, spec.command, list(spec.args), env, spec.cwd))
        log("info", "policy", path=str(policy_path), server=name, provenance=spec.provenance or "no claim")
    try:
        journal = Journal.open(locate_journal(Env.current(), policy_path, opts.get("journal")), create=True)
    except JournalError as exc:
        return _fail(str(exc), 1)
    proxy = MultiProxy(launches, policy, journal,
                       ProxyOptions(call_timeout=call_timeout, read_timeout=read_timeout, max_snapshot_bytes=cap))
    try:
        return asyncio.run(proxy.run())
    except Exception as exc:
        return _fail(str(exc), 1)
    finally:
        journal.close()


def main(argv: list[str]) -> int:
    """Run the proxy; return the process exit code."""
    try:
        opts, command = parse_args(argv)
    except ValueError as exc:
        return _fail(str(exc), 2)
    if "help" in opts:
        sys.stdout.write(USAGE)
        return 0
    from synartesis import log as logmod
    try:
        if "log-level" in opts:
            logmod.set_level(opts["log-level"])
        call_timeout = float(opts["call-timeout"]) if "call-timeout" in opts else None
        read_timeout = float(opts.get("read-timeout", "30"))
        cap = int(opts.get("max-snapshot-bytes") or os.environ.get("SYNARTESIS_MAX_SNAPSHOT_BYTES") or 8 * 1024 * 1024)
        if (call_timeout is not None and call_timeout <= 0) or read_timeout <= 0 or cap <= 0:
            raise ValueError("timeouts and the snapshot cap must be positive")
    except ValueError as exc:
        return _fail(f"bad option value: {exc}", 2)

    popen = None
    if command and opts.get("server") and "." not in opts["server"] and "__" not in opts["server"]:
        # Early spawn: start the server now, so its start-up overlaps ours (loading the policy,
        # opening the journal, importing asyncio). It reads nothing until we relay the
        # client's first frame; if the policy turns out malformed it is stopped unheard.
        from synartesis.errors import UpstreamError
        from synartesis.proxy.spawn import popen_server
        try:
            popen = popen_server(command[0], command[1:], capture_stderr=False)
        except UpstreamError as exc:
            return _fail(str(exc), 1)
    code = _run(opts, command, popen, call_timeout, read_timeout, cap)
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


def _run(opts, command, popen, call_timeout, read_timeout, cap) -> int:
    import asyncio

    from synartesis import log as logmod
    from synartesis.errors import JournalError, PolicyError
    from synartesis.journal import Journal
    from synartesis.paths import Env, locate_journal, locate_policy
    from synartesis.policy import load_policy

    env = Env.current()
    if command and "manifest" not in opts:
        # The installed form is started by a client in whatever folder it likes (often a
        # project the agent works on): a synartesis.yaml found there must not replace the
        # user's policy, so only $SYNARTESIS_HOME (or --manifest) is used.
        from synartesis.paths import POLICY_FILENAME, synartesis_home
        policy_path = synartesis_home(env) / POLICY_FILENAME
    else:
        policy_path = locate_policy(env, opts.get("manifest"))
    policy = None
    note = None
    if policy_path.exists() or "manifest" in opts:
        try:
            policy = load_policy(policy_path)
        except PolicyError as exc:
            return _fail(f"{exc} (a malformed policy never runs; fix it, then restart the client)", 2)
    else:
        note = f"there is no policy at {policy_path}, so every tool is held"
    server = opts.get("server")
    if not command:
        if policy is None:
            return _fail(f"no server command after -- and no policy at {policy_path}", 2)
        if server is None and len(policy.servers) >= 2:
            return _serve_policy(policy, policy_path, opts, call_timeout, read_timeout, cap)
        if server is None:
            server = next(iter(policy.servers))
        spec = policy.servers.get(server)
        if spec is None or not spec.command:
            return _fail(f"server {server} has no command in {policy_path}; give it after --", 2)
        command = [spec.command, *spec.args]
    if server is None:
        return _fail("--server NAME is required with a command after --", 2)
    if "." in server or "__" in server:
        return _fail(f'server name {server} may not contain "." or "__"', 2)
    if policy is not None and server not in policy.servers:
        note = (f"server {server} is not in the policy {policy_path}, so every tool is held; "
                f"run `synartesis init {server} -- …` to write a policy for it")
    logmod.log("info", "policy", path=str(policy_path), server=server,
               provenance=(policy.servers[server].provenance or "no claim") if policy and server in policy.servers else None,
               note=note)
    if note:
        logmod.log("warn", note)
    journal_path = locate_journal(env, policy_path, opts.get("journal"))
    try:
        journal = Journal.open(journal_path, create=True)
    except JournalError as exc:
        return _fail(str(exc), 1)

    from synartesis.proxy.relay import Proxy, ProxyOptions
    if popen is None and policy is not None and server in policy.servers and policy.servers[server].env:
        # the policy form starts the server itself: its env references are expanded now
        from synartesis.undo.launch import expand_env
        os.environ.update({k: expand_env(v, os.environ) for k, v in policy.servers[server].env.items()
                           if k not in os.environ})
    proxy = Proxy(server, command[0], command[1:], policy, journal,
                  ProxyOptions(call_timeout=call_timeout, read_timeout=read_timeout, max_snapshot_bytes=cap),
                  policy_note=note, popen=popen)
    try:
        return asyncio.run(proxy.run())
    except Exception as exc:  # UpstreamError from spawn, etc.
        return _fail(str(exc), 1)
    finally:
        journal.close()
