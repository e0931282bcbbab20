"""`check`, `pin` and `init`: a policy held against the servers it describes.

- :func:`check_policy` (issue 5 item 5; reference-spec §7.2 ``check`` and gap 32): load the
  policy (errors carry FILE:LINE:COL), start each server, and report tools named by rules that
  the server does not advertise, advertised tools no rule covers (gated at run time), rules
  whose ``match`` matches nothing, broken pins, and each server's provenance.
- :func:`pin_policy` (issue 5 item 6): start the servers and compute the ``pins:`` block;
  nothing is written.
- :func:`init_server` (issue 5 item 4; reference-spec §7.2 ``init``): start one server, adopt
  the shipped policy or draft a fail-closed one, and merge it into the located policy file
  without losing the user's comments or rules.

Every function returns a result dataclass; only ``synartesis.cli.policy_cmds`` prints.
Servers are started with :func:`synartesis.proxy.client.introspect` (blocking; ``check``
starts its servers at once, one thread each).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from synartesis.errors import PolicyError, SynartesisError, UpstreamError, UsageError
from synartesis.paths import Env, locate_policy
from synartesis.pins import fingerprint, pin_problems
from synartesis.services.policies import (
    ServerPolicyPlan,
    declared_servers,
    load_shipped,
    merge_policy_text,
    plan_server_policy,
    recognise,
    set_pins_text,
)

__all__ = [
    "ServerCheck",
    "CheckResult",
    "ServerPins",
    "PinResult",
    "InitResult",
    "server_environment",
    "check_policy",
    "pin_policy",
    "write_pins",
    "pins_block",
    "init_server",
    "PROVENANCE_TEXT",
]

#: How each provenance state is shown (DESIGN §4: all three, never inferred from silence).
PROVENANCE_TEXT = {
    "live": "live (checked against the real server)",
    "documented": "documented (from the server's documentation; not run against it)",
    None: "no claim (a policy you wrote or a draft: nobody has checked it)",
}

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def server_environment(name: str, spec_env: Mapping[str, str] | None,
                       environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The whole environment a server is started with: ``environ`` plus the policy's ``env``
    with ``${VAR}`` / ``${VAR:-default}`` expanded from ``environ`` exactly as undo does
    (:func:`synartesis.undo.launch.expand_env`: unset → empty).

    Returns:
        (environment, notes) where notes name each referenced variable that is not set
        (names only, never values).
    """
    from synartesis.undo.launch import expand_env

    full = dict(environ)
    notes: list[str] = []
    for key, value in (spec_env or {}).items():
        for var in _VAR.findall(str(value)):
            if not environ.get(var):
                notes.append(f"servers.{name}.env.{key}: ${{{var}}} is not set here, so it was "
                             f"started with {key} empty (undo would do the same)")
        full[str(key)] = expand_env(str(value), environ)
    return full, notes


def _load(policy_path: Path):
    from synartesis.policy import load_policy

    if not policy_path.exists():
        raise UsageError(f"there is no policy at {policy_path}; write one, or create it with "
                         f"`synartesis init NAME -- COMMAND ARGS…` or `synartesis install`")
    return load_policy(policy_path)


def _each(fn, items: list) -> list:
    """``[fn(x) for x in items]``, each on its own thread (servers start at once), in order."""
    if len(items) < 2:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(16, len(items)), thread_name_prefix="synartesis-check") as pool:
        return list(pool.map(fn, items))


def _select(policy, server: str | Sequence[str] | None) -> list:
    """The policy's servers named by ``--server`` (one name, or several: each once, in the
    order given), or all of them. Raises UsageError for a name the policy does not declare."""
    if server is None or (not isinstance(server, str) and not server):
        return list(policy.servers.values())
    names = [server] if isinstance(server, str) else list(dict.fromkeys(server))
    for name in names:
        if name not in policy.servers:
            raise UsageError(f"{name} is not a server in {policy.path}; it declares "
                             f"{', '.join(sorted(policy.servers)) or 'none'}")
    return [policy.servers[name] for name in names]


def _introspect_spec(spec, environ: Mapping[str, str], timeout: float, policy=None):
    """(Introspection, notes) for one policy server, started the way undo starts it
    (:func:`synartesis.undo.launch.launch_specs`: this environment, the env of the client entry
    it was installed from when that can be read, then the policy's ``env``)."""
    from synartesis.proxy.client import introspect

    if not spec.command:
        raise UpstreamError(f"{spec.name} has no command in the policy, so it cannot be started here")
    env, notes = server_environment(spec.name, spec.env, environ)
    cwd = spec.cwd
    if policy is not None:
        try:
            from synartesis.services.launch_env import entry_env
            from synartesis.undo.launch import launch_specs

            launch, problems = launch_specs({spec.name}, {}, policy, environ, entry_env=entry_env)
            if spec.name in launch:
                env = launch[spec.name].env
                cwd = launch[spec.name].cwd
            elif problems:  # e.g. two client entries start it with other env: not one server to check
                raise UpstreamError("; ".join(problems))
        except ImportError:  # pragma: no cover - undo not installed
            pass
    # the client entry's env can give what this shell does not (as undo takes it): a variable set
    # that way was not started empty, so its note would be wrong (a new user's finding)
    notes = [n for n in notes if not env.get(n.split(":", 1)[0].rsplit(".", 1)[-1])]
    command, args = spec.command, list(spec.args)
    from synartesis.redact import SECRET_MARK
    from synartesis.services.launch_env import entry_launch
    hidden = any(SECRET_MARK in a for a in [command, *args])
    if spec.origin or hidden:
        launch = entry_launch(spec.origin, server=spec.name)
        if launch is not None:  # the client's own command line (secrets are not kept in the policy)
            command, args = launch
        elif hidden:
            raise UpstreamError(f"{spec.name}: the policy keeps its secret arguments hidden and the client "
                                "entry it was installed from cannot be read, so it cannot be started")
    try:
        info = introspect(command, args, env=env, cwd=cwd, timeout=timeout, label=spec.name)
    except UpstreamError as exc:
        # what the entry or the policy set; a secret-named one even when this shell has the same
        # value (the entry gave it too, and the server may echo it)
        from synartesis.redact import is_secret_name
        given = {k: v for k, v in env.items() if (environ.get(k) != v or is_secret_name(k)) and len(v) >= 4}
        raise UpstreamError(scrub_start_error(exc.message, [command, *args], given)) from None
    return info, notes


def scrub_start_error(message: str, argv: list[str], given: Mapping[str, str]) -> str:
    """A failing server's start error as ``check`` shows it: the server's stderr (after
    :data:`~synartesis.proxy.stdio.SERVER_SAID`) can echo its arguments or the env the client
    entry gave it (a token it rejected), so it is scrubbed of every value ``given`` as written,
    and of the secret ones (secret arguments; env values with a secret name or a token's shape)
    in any spelling a server may quote (cut, wrapped, encoded: :func:`redact.scrub_pieces`).
    Our own wording before it is scrubbed of the secret ones only (a value such as
    ``MODE=server`` must not hide "the server said"). Rule: adversarial reviews, rounds 4–6.

    Args:
        message: the UpstreamError's text; argv: the command line it started; given: the env
            values the entry or the policy set (name → value).
    Returns:
        the message to show.
    """
    from synartesis.proxy.stdio import SERVER_SAID
    from synartesis.redact import is_secret_name, looks_like_token, scrub, scrub_pieces, secret_parts
    secret = secret_parts(argv) + [v for k, v in given.items() if is_secret_name(k) or looks_like_token(v)]
    head, said, tail = message.partition(SERVER_SAID)
    head = scrub(head, secret)
    if said:
        tail = scrub_pieces(scrub(tail, given.values()), secret)
    return head + said + tail


# --------------------------------------------------------------------------------------------
# check

@dataclass(frozen=True)
class ServerCheck:
    """What ``check`` found for one server.

    Attributes:
        name, provenance: from the policy (provenance None = no claim).
        started: the server answered ``initialize`` and ``tools/list``.
        error: why it could not be started (when ``started`` is False).
        server_info: its ``serverInfo``.
        tools: advertised tool names.
        class_counts: ``{class: number of rules}`` for rules of this server.
        missing: "RULE: its snapshot|inverse|verify calls S.T, which S does not advertise".
        unmatched: rules (``match`` text) whose pattern matches no advertised tool.
        uncovered: advertised tools no rule covers (held at run time).
        pin_problems: lines from :func:`synartesis.pins.pin_problems` (empty = fine/unpinned).
        pinned: number of pinned tools.
        recognised: the shipped policy id the server is recognised as, if any.
        notes: things worth saying that are not problems (an unset ``${VAR}``).
    """

    name: str
    provenance: str | None
    started: bool
    error: str | None = None
    server_info: dict = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
    class_counts: dict = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    pin_problems: list[str] = field(default_factory=list)
    pinned: int = 0
    recognised: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def problems(self) -> int:
        """Problems that make ``check`` exit 1 (uncovered tools are held, so not counted)."""
        return (0 if self.started else 1) + len(self.missing) + len(self.unmatched) + len(self.pin_problems)


@dataclass(frozen=True)
class CheckResult:
    """``check``'s report: the policy file and one :class:`ServerCheck` per server."""

    policy_path: str
    servers: list[ServerCheck]
    rule_count: int  # the rules of the servers checked (all of them without ``--server``)
    guarded: int  # of those, the ones that hold calls for approval

    @property
    def problems(self) -> int:
        return sum(s.problems for s in self.servers)

    @property
    def ok(self) -> bool:
        return self.problems == 0


def _covers(match: str, qualified: str) -> bool:
    rx = re.compile("[^.]*".join(re.escape(p) for p in match.split("*")))
    return bool(rx.fullmatch(qualified))


def analyse_server(policy, spec, tools: list[dict], server_info: dict | None = None) -> ServerCheck:
    """Hold one server's advertised ``tools`` against ``policy`` (no I/O; used by check).

    Returns:
        A :class:`ServerCheck` with ``started=True``.
    """
    name = spec.name
    advertised = [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    adv = set(advertised)
    rules = [r for r in policy.rules if _covers(r.match.split(".", 1)[0], name)]
    counts: dict[str, int] = {}
    for r in rules:
        counts[r.cls] = counts.get(r.cls, 0) + 1
    missing: list[str] = []
    for r in policy.rules:  # a template on this server may belong to a rule of another one
        calls = [("snapshot", r.snapshot), ("verify", r.verify), ("settle", r.settle)] + [("inverse", c) for c in r.inverse]
        for part, call in calls:
            if call is not None and call.server == name and call.tool not in adv:
                missing.append(f"{r.match}: its {part} calls {name}.{call.tool}, which {name} does not advertise")
    unmatched = []
    for r in rules:
        if not any(_covers(r.match, f"{name}.{t}") for t in advertised):
            # a rule whose server part is a glob may be meant for another server
            if "*" not in r.match.split(".", 1)[0]:
                unmatched.append(r.match + (f" (when {r.when})" if r.when else ""))
    uncovered = [t for t in advertised if not any(_covers(r.match, f"{name}.{t}") for r in rules)]
    catalog = {t["name"]: t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
    pin_lines = pin_problems(name, spec.pins, catalog, policy) if spec.pins else []
    info_name = (server_info or {}).get("name")
    return ServerCheck(name=name, provenance=spec.provenance, started=True,
                       server_info=dict(server_info or {}), tools=advertised, class_counts=counts,
                       missing=missing, unmatched=unmatched, uncovered=uncovered,
                       pin_problems=pin_lines, pinned=len(spec.pins or {}),
                       recognised=recognise(spec.command or "", list(spec.args), info_name))


def check_policy(manifest: str | None = None, server: str | Sequence[str] | None = None, *, env: Env | None = None,
                 timeout: float = 30.0) -> CheckResult:
    """Load the policy and hold every (or one) server's ``tools/list`` against it.

    Args:
        manifest: ``--manifest``; None = located (DESIGN §4).
        server: ``--server``: only this one (or these: the option may be repeated).
        env: where paths and ``${VAR}``s are resolved (default: the real environment).
    Returns:
        :class:`CheckResult`; ``ok`` is False when there are problems (exit 1).
    Raises:
        PolicyError: the policy does not load (FILE:LINE:COL, exit 2).
        UsageError: no policy file, or no such server (exit 2).
    """
    env = env or Env.current()
    path = locate_policy(env, manifest)
    policy = _load(path)
    specs = _select(policy, server)

    def one(spec) -> ServerCheck:
        try:
            info, notes = _introspect_spec(spec, env.environ, timeout, policy)
        except (UpstreamError, PolicyError) as exc:
            rules = [r for r in policy.rules if _covers(r.match.split(".", 1)[0], spec.name)]
            counts: dict[str, int] = {}
            for r in rules:
                counts[r.cls] = counts.get(r.cls, 0) + 1
            return ServerCheck(name=spec.name, provenance=spec.provenance, started=False,
                               error=exc.message, class_counts=counts, pinned=len(spec.pins or {}))
        result = analyse_server(policy, spec, info.tools, info.server_info)
        return dataclasses.replace(result, notes=notes) if notes else result

    results = _each(one, specs)
    # with --server, the totals count the rules of the servers checked, not the whole policy
    names = [spec.name for spec in specs]
    rules = [r for r in policy.rules if not server or any(_covers(r.match.split(".", 1)[0], n) for n in names)]
    guarded = sum(1 for r in rules if r.gate != "never")
    return CheckResult(policy_path=str(path), servers=results, rule_count=len(rules), guarded=guarded)


# --------------------------------------------------------------------------------------------
# pin

@dataclass(frozen=True)
class ServerPins:
    """Fingerprints for one server: ``pins`` (tool → pin) and what differs from the policy."""

    name: str
    pins: dict[str, str]
    current: dict[str, str]
    changed: list[str]


@dataclass(frozen=True)
class PinResult:
    """``pin``'s output: the ``pins:`` blocks to paste (nothing is written)."""

    policy_path: str
    servers: list[ServerPins]

    @property
    def text(self) -> str:
        return "\n".join(pins_block(s.name, s.pins) for s in self.servers)


def pins_block(name: str, pins: Mapping[str, str]) -> str:
    """The YAML to paste under ``servers:`` for one server, keys sorted::

        # servers.files — paste under servers.files in the policy:
        pins:
          read_text_file: "sha256:…"
    """
    lines = [f"# servers.{name}: paste this under servers.{name} (replacing any pins: there)",
             "pins:"]
    for tool in sorted(pins):
        key = tool if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", tool) else '"' + tool.replace('"', '\\"') + '"'
        lines.append(f'  {key}: "{pins[tool]}"')
    return "\n".join(lines) + "\n"


def pin_policy(manifest: str | None = None, server: str | Sequence[str] | None = None, *, env: Env | None = None,
               timeout: float = 30.0) -> PinResult:
    """Start the server(s) and fingerprint every advertised tool (never writes).

    Returns:
        :class:`PinResult` (``text`` is the block(s) to paste).
    Raises:
        PolicyError / UsageError: as :func:`check_policy`.
        UpstreamError: a server could not be started (exit 1).
    """
    env = env or Env.current()
    path = locate_policy(env, manifest)
    policy = _load(path)
    specs = _select(policy, server)

    def one(spec) -> ServerPins:
        info, _notes = _introspect_spec(spec, env.environ, timeout, policy)
        pins = {t["name"]: fingerprint(t) for t in info.tools
                if isinstance(t, dict) and isinstance(t.get("name"), str)}
        old = dict(spec.pins or {})
        changed = sorted(t for t in set(pins) | set(old) if old and pins.get(t) != old.get(t))
        return ServerPins(name=spec.name, pins=pins, current=old, changed=changed)

    return PinResult(policy_path=str(path), servers=[one(s) for s in specs])


def write_pins(result: PinResult) -> None:
    """Write ``result``'s pins into its policy file (``servers.NAME.pins`` of each server it
    fingerprinted replaced; comments and layout kept: :func:`set_pins_text`), atomically.

    Raises:
        PolicyError: the file changed into something that is not a policy meanwhile, or the
            result would not validate (the file is then left as it was).
    """
    from synartesis import fsops
    from synartesis.errors import ConflictError
    from synartesis.policy.source import decode_policy, read_policy_bytes

    path = Path(result.policy_path)
    pins = {s.name: s.pins for s in result.servers}
    # two `pin --write` at once: each edits the file as the other left it (one lost the other's
    # pins: adversarial review 15, F5); an editor's save between the read and the replace is
    # not overwritten: the file is compared just before it is replaced and, changed, edited
    # again as it now is (review 16, F1)
    with fsops.folder_lock(path):
        for _ in range(20):
            raw = read_policy_bytes(path)
            text = decode_policy(raw, path.name)
            if raw.startswith(b"\xef\xbb\xbf"):  # kept (decode_policy drops it)
                text = "\ufeff" + text
            new = set_pins_text(text, pins, str(path)).encode("utf-8")
            try:
                fsops.replace_checked(path, raw, new)
                return
            except ConflictError:
                continue
    raise PolicyError(f"{path} kept changing while the pins were written; run pin --write again", str(path))


# --------------------------------------------------------------------------------------------
# init

@dataclass(frozen=True)
class InitResult:
    """What ``init`` did: the file, whether it was created, and the plan it wrote."""

    policy_path: str
    created: bool
    plan: ServerPolicyPlan
    tool_count: int
    server_info: dict


def _atomic_write(path: Path, text: str) -> None:
    from synartesis import fsops  # the one write path (a file we own: temp file + atomic replace)

    fsops.atomic_write(path, text.encode("utf-8"))


def init_server(name: str, command: str, args: list[str], *, manifest: str | None = None,
                env: Env | None = None, timeout: float = 30.0) -> InitResult:
    """``synartesis init NAME -- COMMAND ARGS…``.

    Starts the server (with this process's environment), adopts the shipped policy when it is
    recognised and every tool it names is advertised, else drafts a fail-closed one, and merges
    it into the located policy file (created if missing), keeping the user's comments and rules.

    Raises:
        UsageError: bad NAME, no command, or NAME already declared by the user (exit 2).
        UpstreamError: the server could not be started or listed its tools (exit 1).
        SynartesisError: the server advertises no tools (exit 1).
        PolicyError: the existing policy cannot be extended (FILE:LINE:COL, exit 2).
    """
    from synartesis.proxy.client import introspect

    if not name or "." in name or "__" in name or "*" in name or not name.strip():
        raise UsageError(f'server name {name!r} may not be empty or contain ".", "__" or "*"; '
                         f"as: synartesis init crm -- npx -y some-mcp-server")
    if not command:
        raise UsageError("init needs a server name and a command, as: init crm -- npx -y some-mcp-server")
    env = env or Env.current()
    path = locate_policy(env, manifest)
    existing = path.read_text(encoding="utf-8") if path.exists() else None
    declared = declared_servers(existing)
    if name in declared and not declared[name]:
        raise UsageError(f"{name} is already declared in {path} (by you, not by synartesis); "
                         f"remove it first or choose another name")
    try:
        info = introspect(command, list(args), env=dict(env.environ), cwd=str(env.cwd), timeout=timeout, label=name)
    except UpstreamError:
        raise
    if not info.tools:
        raise SynartesisError(f"{name} advertises no tools, so there is no policy to write")
    env_names = _shipped_env_names(command, args, info.server_info, env.environ)
    plan = plan_server_policy(name, command, list(args), tools=info.tools,
                              server_info=info.server_info, origin=None, env_names=env_names)
    text = merge_policy_text(existing, [plan], filename=str(path))
    _atomic_write(path, text)
    return InitResult(policy_path=str(path), created=existing is None, plan=plan,
                      tool_count=len(info.tools), server_info=dict(info.server_info))


def _shipped_env_names(command: str, args: list[str], server_info: dict | None,
                       environ: Mapping[str, str]) -> list[str]:
    """Env names a recognised shipped policy declares that are set here (init runs the server
    with this environment, so the policy must name them for undo to start the same one)."""
    pid = recognise(command, list(args), (server_info or {}).get("name"))
    if pid is None:
        return []
    try:
        shipped = load_shipped(pid)
    except PolicyError:
        return []
    return [k for k in (shipped.server.get("env") or {}) if environ.get(k)]


def describe_provenance(value: Any) -> str:
    """The user-facing text for a provenance value (all three states shown)."""
    return PROVENANCE_TEXT.get(value, f"unknown ({value})")
