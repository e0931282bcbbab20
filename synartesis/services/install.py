"""install / uninstall as plan → apply (DESIGN §8, issue 4). Nothing here prints or prompts.

install:
1. discover every config file of the chosen clients (:mod:`synartesis.clients.discover`);
2. decide per entry: wrap it (stdio), cover a Claude Code project server with a same-name
   local-scope entry, or report it (remote, already ours, another tool's wrapper, blocked by a
   managed policy, a shared project file, a shape we cannot wrap safely);
3. render each file's new bytes in memory and prove two things before offering to write it:
   the new document equals the old one with exactly our changes, and undoing our records on the
   new bytes gives back the old bytes exactly;
4. plan the user policy: every newly covered server gets the shipped policy or a fail-closed
   draft (servers started in parallel for ``tools/list`` unless ``start`` is False);
5. :func:`apply_install` writes the policy (ours), then each file: backup → record → checked
   atomic replace. A file the client changed meanwhile is refused (ConflictError), nothing lost.

uninstall restores, per recorded entry, the original entry if the current one is still what
we wrote, and reports the rest; ``--from-backup`` restores a whole file as an explicit recovery.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import yaml

from synartesis import fsops
from synartesis.canonical import canonical, sha256_hex
from synartesis.clients.adapters import (AddShadow, Change, env_edit, env_fields, value_at, JsonAdapter, WrapRemote, RemoveShadow, Unwrap, Wrap, EntryShapeError,
                                         adapter_for, expected_after, shown_text)
from synartesis.clients.descriptor import ClientDescriptor, get_descriptor, load_descriptors
from synartesis.clients.discover import FoundFile, discover, read_location
from synartesis.clients.locations import ConfigLocation
from synartesis.clients.entries import (ServerEntry, display_name, entry_env, entry_label, expand, foreign_wrapper,
                                        is_ours, ours_server, proxy_args, value_sha)
from synartesis.clients.managed import ManagedPolicy, load_managed
from synartesis.errors import ConflictError, PolicyError, SynartesisError, UsageError
from synartesis.paths import backups_dir, POLICY_FILENAME, Env, synartesis_home
from synartesis.redact import DISPLAY_MARK, redact_argv
from synartesis.services.install_remote import DESKTOP_CONNECTORS, decide_remote, remote_wrap
from synartesis.services.install_state import load_state, now, save_state, state_path

__all__ = [
    "InstallOptions",
    "EntryReport",
    "FilePlan",
    "InstallPlan",
    "FileOutcome",
    "InstallResult",
    "UninstallPlan",
    "UninstallResult",
    "RestoreResult",
    "Progress",
    "find_proxy_executable",
    "select_clients",
    "plan_install",
    "apply_install",
    "plan_uninstall",
    "apply_uninstall",
    "restore_from_backup",
    "policy_key_for",
    "tidy_own_files",
    "shown_config_text",
]


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class InstallOptions:
    """What to install.

    Attributes:
        client: limit to one client id (None = all).
        include_project_files: also edit shared project files (Cursor, Codex).
        start: start servers to read ``tools/list`` for the policy (``--no-start`` = False).
        timeout: seconds per server start.
        proxy_path: absolute path of the ``synartesis`` executable to write (None = find it).
        system_root: where absolute system paths (managed settings) are looked up (tests).
        concurrency: servers started at once.
        include_oauth: also wrap remote entries that sign in with OAuth through the client
            (the bridge then needs ``synartesis login KEY``).
    """

    client: str | None = None
    include_project_files: bool = False
    include_oauth: bool = False
    start: bool = True
    timeout: float = 20.0
    proxy_path: str | None = None
    system_root: Path | None = None
    concurrency: int = 8


@dataclass(frozen=True)
class EntryReport:
    """What install does (or status sees) for one server entry.

    ``action``: ``wrap`` | ``shadow`` | ``ours`` | ``remote`` | ``other-wrapper`` |
    ``uncovered`` | ``shadowed`` | ``blocked`` | ``invalid`` | ``skipped``.
    """

    client: str
    file: str
    scope: str
    name: str
    action: str
    reason: str = ""
    policy_key: str | None = None
    project: str | None = None


@dataclass
class FilePlan:
    """One file: what would change and why.

    ``status``: ``change`` (new bytes ready), ``unchanged``, ``error`` (not parsed / refused).
    ``exit_code`` of an ``error``: 2 when the file is not a valid config (it does not parse,
    or something other than an object is where servers belong), else 1.
    """

    client: str
    client_name: str
    path: Path
    target: Path
    scope: str
    status: str
    message: str = ""
    old: bytes | None = None
    new: bytes | None = None
    entries: list[EntryReport] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    exit_code: int = 0


@dataclass
class InstallPlan:
    """Everything install would do; nothing has been written."""

    proxy_path: str
    files: list[FilePlan]
    policy_path: Path
    policy_old: str | None
    policy_new: str | None
    policy_plans: list[Any]
    warnings: list[str]
    restart: list[str]
    start_errors: dict[str, str] = field(default_factory=dict)
    forget: list[dict[str, Any]] = field(default_factory=list)
    upgrades: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    looked_in: list[str] = field(default_factory=list)  # user-level config paths looked in, found or not

    @property
    def changes(self) -> bool:
        """True when applying would write anything (client files, the policy or the record)."""
        return (any(f.status == "change" for f in self.files) or self.policy_new is not None
                or bool(self.forget) or bool(self.upgrades))

    @property
    def entries(self) -> list[EntryReport]:
        """Every entry report, file by file."""
        return [e for f in self.files for e in f.entries]


@dataclass(frozen=True)
class FileOutcome:
    """What happened to one file: ``written`` | ``unchanged`` | ``conflict`` | ``error``."""

    path: str
    client: str
    status: str
    message: str = ""
    backup: str | None = None


@dataclass
class InstallResult:
    """What apply_install did."""

    files: list[FileOutcome]
    policy_written: bool
    policy_path: str
    restart: list[str]

    @property
    def ok(self) -> bool:
        """True when no file was refused or failed."""
        return all(f.status in ("written", "unchanged") for f in self.files)


class Progress:
    """Callbacks for server starts (the CLI draws a progress bar; default does nothing)."""

    def start(self, total: int) -> None:
        """``total`` servers are about to be started."""

    def advance(self, key: str, ok: bool) -> None:
        """One server finished (``ok`` False when it failed to start)."""


# --------------------------------------------------------------------------------------------
# Helpers


def find_proxy_executable(env: Env, given: str | None = None) -> str:
    """Absolute path of the installed ``synartesis`` executable to write into configs.

    Order: ``given``; ``shutil.which("synartesis")`` on ``env``'s PATH; ``sys.argv[0]`` when it
    is a ``synartesis`` executable; the console script beside ``sys.executable``. Symlinks are
    kept (a pipx link survives reinstalls).

    Raises:
        UsageError: none found, or ``given`` is not an absolute path to an executable file.
    """
    if given:
        p = Path(given)
        if not p.is_absolute():
            raise UsageError(f"--proxy-path must be absolute: {given}")
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise UsageError(f"--proxy-path {given} is not an executable file")
        return str(p)
    found = shutil.which("synartesis", path=env.get("PATH"))
    if found:
        return os.path.abspath(found)
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.stem == "synartesis" and argv0.is_file() and os.access(argv0, os.X_OK):
        return os.path.abspath(argv0)
    # the console script beside this interpreter (an unactivated venv)
    for d in (Path(sys.executable).parent, Path(sys.executable).parent / "Scripts"):
        for name in ("synartesis", "synartesis.exe"):
            cand = d / name
            if cand.is_file() and os.access(cand, os.X_OK):
                return os.path.abspath(cand)
    raise UsageError("cannot find the installed `synartesis` executable on PATH; install it "
                     "(e.g. `pipx install synartesis`) and run this again")


def select_clients(client: str | None) -> list[ClientDescriptor]:
    """Descriptors to work on (all, or the one named).

    Raises:
        UsageError: unknown client id.
    """
    if client:
        return [get_descriptor(client)]
    return list(load_descriptors())


_BAD_KEY = re.compile(r"[^\w-]+|__+")


def policy_key_for(name: str) -> str:
    """A policy key (and ``--server`` value) for a server name.

    The name itself when it is made of letters, digits, ``_`` and ``-``; otherwise each run of
    other characters becomes ``-`` (``my.server`` → ``my-server``). Besides ``.``, ``*`` and
    ``__`` (reserved by the policy's ``server.tool`` names) this removes ``$``, ``{``, ``}``,
    spaces and control characters: a name ``${HOME}`` would otherwise put ``--server ${HOME}``
    into the wrapped args, which Claude Code and Cursor expand (issue 9 item 4); it becomes
    ``HOME``. A name with nothing usable left is ``server``.
    """
    key = _BAD_KEY.sub("-", name.strip()).strip("-")
    return key or "server"


def _fp(command: str, args: Sequence[str]) -> str:
    """Fingerprint of a command line as the policy records it (secrets hidden), so the same
    entry fingerprints the same from the client file, the install record and the policy."""
    return _fp_of(str(command), tuple(str(a) for a in args))


@functools.lru_cache(maxsize=4096)
def _fp_of(command: str, args: tuple[str, ...]) -> str:
    shown, _ = redact_argv([command, *args])
    return sha256_hex(canonical(shown).encode("utf-8", "surrogatepass"))


def _path_id(path: Any) -> str:
    try:
        return os.path.realpath(os.path.expanduser(str(path)))
    except (OSError, ValueError):
        return str(path)


_path_ids: dict[str, str] = {}  # per plan: reset by _known_keys


def _origin_id(client: Any, file: Any, entry: Any, project: Any) -> tuple[str, str, str, str]:
    """Identity of a client entry: the same entry keeps its policy key on every install."""
    f = str(file)
    if f not in _path_ids:
        _path_ids[f] = _path_id(f)
    return (str(client), _path_ids[f], str(entry), str(project or ""))


def _known_keys(declared: Mapping[str, Any], state: Any) -> dict[tuple[str, str, str, str], str]:
    """Policy keys already given to client entries: from the policy's ``origin`` blocks and
    from the install record (issue 9 item 7: keys must not drift after uninstall or a killed
    install)."""
    _path_ids.clear()
    out: dict[tuple[str, str, str, str], str] = {}
    for key, spec in declared.items():
        oid = _policy_origin_id(spec) if isinstance(spec, dict) else None
        if oid is not None:
            out.setdefault(oid, str(key))
    for e in state.entries:
        if e.get("policy_key"):
            out.setdefault(_origin_id(e.get("client"), e.get("source") or e.get("file"), e.get("name"),
                                      e.get("project")), str(e["policy_key"]))
    return out


def _policy_origin_id(spec: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    origin = spec.get("origin")
    if isinstance(origin, dict) and origin.get("entry") is not None:
        return _origin_id(origin.get("client"), origin.get("file"), origin.get("entry"), origin.get("project"))
    return None


def _stale_shadow_origins(declared: Mapping[str, Any], files: Sequence[FoundFile]) -> dict[tuple[str, str, str, str], str]:
    """Keys whose policy ``origin`` names a Claude Code local-scope entry that is gone, while the
    project's ``.mcp.json`` holds an entry of that name: the origin an install before round 31
    wrote for a shadow (the policy regenerated while installed). The key stays with the project
    entry, which the shadow stood for, so the user's rules and pins keep applying."""
    present: set[tuple[str, str, str, str]] = set()
    projects: dict[tuple[str, str, str], tuple[str, str, str, str]] = {}
    for f in files:
        for entry in (f.view.entries if f.view else []):
            oid = _origin_id(f.descriptor.id, f.location.path, entry.name, entry.project)
            present.add(oid)
            if f.location.scope == "project" and f.location.project:
                projects.setdefault((f.descriptor.id, str(f.location.project), entry.name), oid)
    out: dict[tuple[str, str, str, str], str] = {}
    for key, spec in declared.items():
        origin = spec.get("origin") if isinstance(spec, dict) else None
        if not isinstance(origin, dict) or origin.get("scope") != "local" or not origin.get("project"):
            continue
        oid = _policy_origin_id(spec)
        if oid is None or oid in present:
            continue
        alias = projects.get((str(origin.get("client")), str(origin["project"]), str(origin.get("entry"))))
        if alias is not None:
            out.setdefault(alias, str(key))
    return out


def _shared_key_warnings(wrapped_as: Mapping[str, list[tuple[Any, str, str]]]) -> list[str]:
    """One warning per policy key that wraps entries starting different servers (an install made
    before keys told them apart, or a copy gone stale): undo cannot tell their runs apart."""
    out = []
    for key, seen in sorted(wrapped_as.items()):
        if len({ident for _, ident, _ in seen}) > 1:
            labels = [label for _, _, label in seen]
            names = ", ".join(labels[:-1]) + " and " + labels[-1]
            out.append(f"{names} are {'both' if len(labels) == 2 else 'all'} wrapped as `{key}` but start "
                       f"different servers (their env, working directory or command line differ), so undo "
                       f"cannot tell their runs apart and refuses them. Undo what you need from those runs "
                       f"first (setting the variables they disagree on, as the undo message says): "
                       f"`synartesis uninstall` ends that refusal, and `synartesis install` after it gives "
                       f"each its own key")
    return out


def _needs_shell(command: str) -> bool:
    """A command string with spaces that is not a path: the client runs it through a shell."""
    if not re.search(r"\s", command):
        return False
    return not (command.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", command))


#: What a client gives a server besides its command line. Two entries that differ in any of these
#: start servers that may open other data (Claude Code's and Codex's ``memory``, each with its own
#: ``MEMORY_FILE_PATH``), so they must not share a policy key: undo starts a key's server with the
#: env of the entry its ``origin`` names.
_IDENT_KEYS = ("env", "env_vars", "envFile", "cwd", "headers", "http_headers", "env_http_headers",
               "bearer_token_env_var", "url")


def _ident(entry: ServerEntry, command: str, args: Sequence[str], desc: ClientDescriptor, env: Env) -> str:
    """Which server an entry starts, for deciding whether two entries may share a policy key: the
    command line, ``env`` and ``cwd`` expanded the way ``desc``'s client expands them (Claude Code
    expands ``${MEMDIR}``, Codex does not, so the same text can open two files), and the other
    :data:`_IDENT_KEYS` as written. A digest kept in memory for one plan only, never stored (it is
    derived from secrets)."""
    style, home = desc.expansion, str(env.home)
    value = entry.value if isinstance(entry.value, dict) else {}
    # An empty table or list (``"env": {}``, ``env_vars = []``) adds nothing in any client: the
    # same server as none. An empty ``cwd`` is kept: Codex spawns in "" and fails, unlike none.
    extra: dict[str, Any] = {k: value[k] for k in _IDENT_KEYS if k in value and value[k] not in ({}, [])}
    if isinstance(value.get("env"), dict) and value["env"]:
        full = entry_env(value, style, env.environ, home)
        extra["env"] = {str(k): full.get(str(k), value["env"][k]) for k in value["env"]}
    if isinstance(value.get("cwd"), str):
        extra["cwd"] = expand(value["cwd"], style, env.environ, home)
    argv = [expand(str(a), style, env.environ, home) for a in [command, *args]]
    text = json.dumps({"argv": argv, **extra}, sort_keys=True, default=str)
    return sha256_hex(text.encode("utf-8", "surrogatepass"))


_Ident = tuple[str | None, str | None]  # (fingerprint of the redacted command line, _ident or None: unknown)


class _Keys:
    """Policy keys: one per distinct server; the first comer keeps the server's name.

    Two entries share a key only when they start the same server (:func:`_ident`); a key the
    policy's ``origin`` gives to an entry in the files stays with that entry, and another entry
    that held it before but starts a different server is given a key of its own (``rekeyed``).
    """

    def __init__(self) -> None:
        self.by_key: dict[str, _Ident] = {}
        self.owner: dict[str, tuple[tuple[str, str, str, str], str]] = {}  # key -> (origin id, ident)
        self.rekeyed: list[tuple[tuple[str, str, str, str], str, str]] = []  # (origin id, old key, new key)
        self.claimed: dict[str, str] = {}  # key -> ident of the entry given it in this plan

    def reserve(self, key: str, fp: str | None, ident: str | None = None) -> None:
        """Hold ``key`` for a server seen elsewhere (install record, policy, a wrapped entry); a
        known ``ident`` fills in an unknown one for the same command line."""
        have = self.by_key.get(key)
        if have is None:
            self.by_key[key] = (fp, ident)
        elif have[1] is None and ident is not None and have[0] == fp:
            self.by_key[key] = (fp, ident)

    def own(self, key: str, oid: tuple[str, str, str, str], fp: str, ident: str) -> None:
        """``key`` belongs to the entry ``oid`` (the policy's ``origin``), found in the files."""
        self.owner[key] = (oid, ident)
        self.by_key[key] = (fp, ident)

    def assign(self, name: str, fp: str, ident: str, oid: tuple[str, str, str, str], client: str, scope: str,
               known: str | None = None) -> str:
        """The key for an entry: ``known`` (the key this entry had before) unless another entry
        owns it and starts a different server; else the first free candidate or one already used
        for the same server."""
        if known:
            owner = self.owner.get(known)
            if owner is not None and owner[0] != oid:
                taken = owner[1] != ident
            else:
                taken = self.claimed.get(known, ident) != ident
            if not taken:
                self.by_key[known] = (fp, ident)
                self.claimed[known] = ident
                return known
        base = policy_key_for(name)
        n = 1
        while True:
            cand = (base, f"{base}-{client}", f"{base}-{client}-{scope}")[n - 1] if n <= 3 else f"{base}-{client}-{n - 2}"
            have = self.by_key.get(cand)
            if have is None or have == (fp, ident):
                self.by_key[cand] = (fp, ident)
                self.claimed[cand] = ident
                if known and cand != known:
                    self.rekeyed.append((oid, known, cand))
                return cand
            n += 1


def tidy_own_files(env: Env, targets: Iterable[Path] = ()) -> list[str]:
    """Clean up after an interrupted run and keep synartesis's own files private.

    - Removes our leftover ``*.synartesis-tmp`` files beside each of ``targets`` (resolved
      client config paths) and beside the install record and the user policy, when the
      process that wrote them is gone (:func:`synartesis.fsops.leftover_temps`). They are
      half-written copies; the real file was never replaced with one.
    - Tightens ``$SYNARTESIS_HOME`` and its ``backups`` folder to 0700, and the install
      record, the user policy and every backup to 0600, when they allow more (the journal's
      own modes are the journal's business). Neither changes any file's content, so ``--dry-run``
      and ``status`` do it too.

    Returns:
        One warning per file removed or tightened (the CLI prints them).
    """
    notes: list[str] = []
    home = synartesis_home(env)
    own = [state_path(env), home / POLICY_FILENAME]
    seen: set[Path] = set()
    for t in [*targets, *own]:
        t = fsops.resolve_target(Path(t))
        if t in seen:
            continue
        seen.add(t)
        for p in fsops.remove_leftovers(fsops.leftover_temps(t)):
            notes.append(f"removed {p}: a temporary file left by an interrupted synartesis run "
                         f"(the real file was not changed by it)")
    private: list[tuple[Path, int]] = [(home, 0o700), (backups_dir(env), 0o700), (own[0], 0o600), (own[1], 0o600)]
    bdir = backups_dir(env)
    try:
        private += [(bdir / n, 0o600) for n in sorted(os.listdir(bdir))]
    except OSError:
        pass
    for path, mode in private:
        was = fsops.tighten(path, mode)
        if was is not None:
            notes.append(f"{path} was {was:04o} (open to other users): set to {mode:04o}")
    return notes


def shown_config_text(client: str, data: bytes | None) -> str:
    """A client file's text as a diff may show it: every secret hidden (issue 9 item 3).

    Raises:
        UsageError: unknown client id.
    """
    return shown_text(get_descriptor(client), data, DISPLAY_MARK)


def _policy_servers(text: str | None, path: Path | None = None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        col = mark.column + 1 if mark is not None else None
        raise PolicyError(f"the user policy is not valid YAML ({getattr(exc, 'problem', None) or exc}); "
                          "fix it, then run this again", str(path) if path else None, line, col) from None
    except RecursionError:
        raise PolicyError("the user policy is nested too deeply to read; fix it, then run this again",
                          str(path) if path else None) from None
    servers = data.get("servers") if isinstance(data, dict) else None
    return servers if isinstance(servers, dict) else {}


# --------------------------------------------------------------------------------------------
# Planning


@dataclass
class _Cover:
    """A server that gets covered and may need a policy: how to start it and where it is."""

    key: str
    desc: ClientDescriptor
    entry: ServerEntry
    file: str
    command: str
    args: list[str]
    extra_env: tuple[tuple[str, str], ...] = ()  # a wrapped remote entry's env (references)
    origin: tuple[str, str] | None = None  # (file, scope) of the entry it stands for, when not ``entry``'s own


def _claude_approval(user_value: Any, project_key: str, name: str, root: Path) -> str | None:
    """None when Claude Code runs this project server; else why it does not."""
    proj = user_value.get("projects", {}).get(project_key) if isinstance(user_value, dict) else None
    enabled: set[str] = set()
    disabled: set[str] = set()
    enable_all = False
    sources: list[Any] = [proj] if isinstance(proj, dict) else []
    for rel in (".claude/settings.json", ".claude/settings.local.json"):
        p = root / rel
        try:
            sources.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
    for s in sources:
        if not isinstance(s, dict):
            continue
        enabled |= {x for x in s.get("enabledMcpjsonServers", []) or [] if isinstance(x, str)}
        disabled |= {x for x in s.get("disabledMcpjsonServers", []) or [] if isinstance(x, str)}
        enable_all = enable_all or s.get("enableAllProjectMcpServers") is True
    if name in disabled:
        return "disabled in Claude Code for this project; not covered (a local entry would enable it)"
    if enable_all or name in enabled:
        return None
    return ("not approved in Claude Code yet; approve it (it is then run from .mcp.json) and run "
            "`synartesis install` again — a local entry now would skip the approval")


def _wrapped_value(value: Mapping[str, Any], prefix: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    orig = [value["command"], *value.get("args", [])]
    for k, v in value.items():
        if k == "command":
            out["command"] = prefix[0]
            out["args"] = [*prefix[1:], *orig]
        elif k != "args":
            out[k] = v
    return out


def plan_install(env: Env, options: InstallOptions = InstallOptions(),
                 progress: Progress | None = None,
                 introspect: Callable[..., Any] | None = None) -> InstallPlan:
    """Plan an install: discover, decide, render and verify each file, plan the policy.

    Args:
        env: the environment paths resolve against.
        options: see :class:`InstallOptions`.
        progress: callbacks while servers are started.
        introspect: ``(command, args, env=, cwd=, timeout=, label=) -> Introspection``, blocking
            and safe on several threads at once; default :func:`synartesis.proxy.client.introspect`.
    Returns:
        An :class:`InstallPlan`; nothing is written.
    Raises:
        UsageError: unknown client, no synartesis executable.
        PolicyError: the existing user policy cannot be read or extended.
        SynartesisError: the install record is damaged.
    """
    clients = select_clients(options.client)
    proxy = find_proxy_executable(env, options.proxy_path)
    state = load_state(env)
    policy_path = synartesis_home(env) / POLICY_FILENAME
    policy_bytes = fsops.read_bytes(policy_path)
    policy_old = policy_bytes.decode("utf-8", "replace") if policy_bytes is not None else None
    declared = _policy_servers(policy_old, policy_path)
    found = discover(env, clients, state.projects())
    warnings = list(found.notes) + tidy_own_files(env, [f.target for f in found.files])

    keys = _Keys()
    known = _known_keys(declared, state)
    for e in state.entries:
        keys.reserve(e.get("policy_key", ""), e.get("fingerprint"))
    for k, spec in declared.items():
        if isinstance(spec, dict) and isinstance(spec.get("command"), str):
            keys.reserve(str(k), _fp(spec["command"], [str(a) for a in spec.get("args", []) or []]))
        else:
            keys.reserve(str(k), None)
    owners = {oid: str(k) for k, spec in declared.items() if isinstance(spec, dict)
              for oid in [_policy_origin_id(spec)] if oid is not None}
    wrapped_as: dict[str, list[tuple[tuple[str, str, str, str], str, str]]] = {}  # key -> (oid, ident, label)
    # who owns a key is read from every client's files, not only those installed now: `install
    # --client cursor` after an uninstall gave Cursor's `time` the key `time-cursor`, since the
    # policy's origin named Codex's entry, which was not read (a new user's round 18, #3)
    everyone = found if options.client is None else discover(env, select_clients(None), state.projects())
    for oid, key in _stale_shadow_origins(declared, everyone.files).items():
        known.setdefault(oid, key)
        owners.setdefault(oid, key)
    for f in everyone.files:
        for entry in (f.view.entries if f.view else []):
            oid = _origin_id(f.descriptor.id, f.location.path, entry.name, entry.project)
            shown = entry_label(f.descriptor.display_name, entry)
            if entry.kind == "stdio" and is_ours(entry.command, entry.args):
                k = ours_server(entry.args)
                inner = proxy_args(entry.args)
                if k:
                    ident = _ident(entry, *inner, f.descriptor, env) if inner else None
                    keys.reserve(k, _fp(*inner) if inner else None, ident)
                    if ident is not None:
                        wrapped_as.setdefault(k, []).append((oid, ident, shown))
                    if inner and owners.get(oid) == k:
                        keys.own(k, oid, _fp(*inner), ident)
            elif oid in owners and entry.kind in ("stdio", "remote"):
                cmd, args = ((entry.command or "", entry.args) if entry.kind == "stdio"
                             else ("remote", [str(entry.value.get("url") if isinstance(entry.value, dict) else "")]))
                keys.own(owners[oid], oid, _fp(cmd, args), _ident(entry, cmd, args, f.descriptor, env))
    warnings.extend(_shared_key_warnings(wrapped_as))

    plans: list[FilePlan] = []
    covers: list[_Cover] = []
    managed_cache: dict[str, ManagedPolicy] = {}

    def managed(desc: ClientDescriptor) -> ManagedPolicy:
        if desc.id not in managed_cache:
            managed_cache[desc.id] = load_managed(desc, env, options.system_root)
            mp = managed_cache[desc.id]
            if mp.exclusive_file is not None:
                warnings.append(f"{desc.display_name}: {mp.exclusive_file} exists, so Claude Code loads only "
                                "the servers it lists; user and project servers are not loaded")
            warnings.extend(f"{desc.display_name}: cannot read managed settings {e}" for e in mp.errors)
        return managed_cache[desc.id]

    by_path: dict[Path, FilePlan] = {}

    def file_plan(f: FoundFile) -> FilePlan:
        fp = by_path.get(f.target)
        if fp is None:
            fp = FilePlan(f.descriptor.id, f.descriptor.display_name, f.location.path, f.target,
                          f.location.scope, "unchanged", old=f.data)
            if f.error:
                fp.status, fp.message, fp.exit_code = "error", f.error, f.error_code or 1
            by_path[f.target] = fp
            plans.append(fp)
        return fp

    def report(fp: FilePlan, entry: ServerEntry, action: str, reason: str = "", key: str | None = None) -> None:
        fp.entries.append(EntryReport(fp.client, str(fp.path), entry.scope, display_name(entry.name), action,
                                      reason, key, display_name(entry.project) if entry.project else None))

    def _shadowed_source(f: FoundFile, entry: ServerEntry, inner: tuple[str, list[str]]) -> tuple[str, str] | None:
        """For a wrapped local-scope entry that shadows a Claude Code project entry, the project
        file it stands for: the policy's origin must name the entry that survives uninstall, or
        the next install gives that entry another key (a new user's round 31, #3: the policy
        regenerated while installed named the shadow in ~/.claude.json)."""
        if entry.scope != "local" or not entry.project:
            return None
        for rec in state.entries:
            if (rec.get("client") == f.descriptor.id and rec.get("source") and rec.get("name") == entry.name
                    and str(rec.get("project") or "") == entry.project
                    and _path_id(rec.get("target") or rec.get("file")) == _path_id(f.target)):
                return str(rec["source"]), "project"
        fp = _fp(*inner)  # no record (lost or never written): the project entry it copies, if any
        for pf in project_files:
            if (pf.descriptor.id == f.descriptor.id and pf.location.project == entry.project
                    and pf.view is not None):
                for pe in pf.view.entries:
                    if pe.name == entry.name and pe.kind == "stdio" and _fp(pe.command or "", pe.args) == fp:
                        return str(pf.location.path), "project"
        return None

    def decide_stdio(desc: ClientDescriptor, entry: ServerEntry) -> tuple[str, str]:
        """(action, reason) for a stdio entry before key assignment: wrap or why not."""
        if is_ours(entry.command, entry.args):
            return "ours", "already wrapped by synartesis"
        other = foreign_wrapper(entry.command, entry.args)
        if other:
            return "other-wrapper", f"already wrapped by {other}; not wrapped twice"
        if _needs_shell(entry.command or ""):
            return "skipped", ("the command has spaces and is run through a shell by the client; "
                               "wrapping it would change how it is split")
        if desc.managed:
            why = managed(desc).blocks(entry.name, entry.argv)
            if why:
                return "blocked", why
        return "wrap", ""

    logins: list[str] = []
    desktop_remote: list[str] = []
    dead: dict[str, list[str]] = {}  # a proxy path that no longer exists -> the entries that run it

    def cover_remote(f: FoundFile, fp: FilePlan, entry: ServerEntry, shadow: tuple[FoundFile, str] | None) -> None:
        """A remote entry: wrap it in place (or, for a Claude Code project file, cover it with a
        local-scope entry in ``shadow``'s user file), or report why not."""
        desc = f.descriptor
        if desc.id == "claude-desktop" and not desktop_remote:  # said once, only when the file has one
            desktop_remote.append(DESKTOP_CONNECTORS + "; only the servers in the file are covered")
        action, reason = decide_remote(desc, entry, include_oauth=options.include_oauth,
                                       managed=managed(desc) if desc.managed else None)
        if action != "wrap":
            report(fp, entry, "remote" if action in ("oauth", "uncovered") else action, reason)
            return
        url = entry.value.get("url") if isinstance(entry.value, dict) else ""
        oid = _origin_id(desc.id, f.location.path, entry.name, entry.project)
        k = keys.assign(entry.name, _fp("remote", [str(url)]), _ident(entry, "remote", [str(url)], desc, env), oid, desc.id,
                        "project" if shadow else entry.scope, known.get(oid))
        try:
            wrap = remote_wrap(desc, entry, k)
        except UsageError as exc:
            report(fp, entry, "invalid", f"its credentials cannot be read: {exc.message}")
            return
        change = WrapRemote(entry.locator, proxy, wrap.args, wrap.env, wrap.env_vars)
        pending = {"client": desc.id, "file": str(f.location.path), "target": str(f.target), "scope": entry.scope,
                   "name": entry.name, "project": entry.project, "policy_key": k, "remote": True,
                   "fingerprint": _fp("remote", [str(url)])}
        if shadow is None:
            fp.changes.append(change)
            fp.pending.append(pending)
            report(fp, entry, "wrap", "remote server: bridged", k)
        else:
            holder, pkey = shadow
            hp = file_plan(holder)
            hp.changes.append(AddShadow(("projects", pkey, "mcpServers"), entry.name,
                                        JsonAdapter.remote_value(entry.value, change)))
            hp.pending.append({**pending, "file": str(holder.location.path), "target": str(holder.target),
                               "scope": "local", "project": pkey, "source": str(f.location.path)})
            report(fp, entry, "shadow", f"covered by a local-scope entry in {holder.location.path}", k)
        if wrap.oauth:
            logins.append(f"synartesis login {shlex.quote(k)}")
        covers.append(_Cover(k, desc, entry, str(f.location.path), proxy, list(wrap.relay), wrap.env))

    user_files = [f for f in found.files if f.location.scope != "project"]
    project_files = [f for f in found.files if f.location.scope == "project"]

    # 1. entries in user files (and project files we may edit)
    editable = list(user_files)
    for f in project_files:
        if getattr(f.location.spec, "cover", "") == "edit-with-consent" and options.include_project_files:
            editable.append(f)
    for f in editable:
        fp = file_plan(f)
        if f.view is None:
            continue
        for entry in f.view.entries:
            if entry.kind == "remote":
                cover_remote(f, fp, entry, None)
                continue
            if entry.kind == "invalid":
                report(fp, entry, "invalid", entry.detail)
                continue
            action, reason = decide_stdio(f.descriptor, entry)
            if action == "ours":
                k = ours_server(entry.args)
                cmd = entry.command or ""
                if os.path.isabs(cmd) and not (Path(cmd).is_file() and os.access(cmd, os.X_OK)):
                    dead.setdefault(cmd, []).append(entry_label(f.descriptor.display_name, entry))
                report(fp, entry, "ours", reason, k)
                inner = proxy_args(entry.args)
                if k and k not in declared and inner:
                    covers.append(_Cover(k, f.descriptor, entry, str(f.location.path), inner[0], inner[1],
                                         origin=_shadowed_source(f, entry, inner)))
                continue
            if action != "wrap":
                report(fp, entry, action, reason)
                continue
            oid = _origin_id(f.descriptor.id, f.location.path, entry.name, entry.project)
            k = keys.assign(entry.name, _fp(entry.command or "", entry.args), _ident(entry, entry.command or "", entry.args, f.descriptor, env),
                            oid, f.descriptor.id, entry.scope, known.get(oid))
            prefix = (proxy, "proxy", "--server", k, "--")
            fp.changes.append(Wrap(entry.locator, prefix))
            fp.pending.append({"client": f.descriptor.id, "file": str(f.location.path), "target": str(f.target),
                               "scope": entry.scope, "name": entry.name, "project": entry.project,
                               "policy_key": k, "fingerprint": _fp(entry.command or "", entry.args)})
            report(fp, entry, "wrap", "", k)
            covers.append(_Cover(k, f.descriptor, entry, str(f.location.path), entry.command or "", entry.args))

    # 2. project files: Claude Code shadows, the others reported unless edited above
    for f in project_files:
        spec = f.location.spec
        if f in editable:
            continue
        fp = file_plan(f)
        if f.view is None:
            continue
        if getattr(spec, "cover", "") != "shadow":
            for entry in f.view.entries:
                if entry.kind == "stdio" and is_ours(entry.command, entry.args):
                    report(fp, entry, "ours", "already wrapped by synartesis", ours_server(entry.args))
                elif entry.kind == "remote":
                    report(fp, entry, "uncovered", "project file meant to be shared: not edited "
                                                   "(use --include-project-files)")
                else:
                    report(fp, entry, "uncovered", "project file meant to be shared: not edited "
                                                   "(use --include-project-files)")
            continue
        # Claude Code: cover with a local-scope entry in the user file that lists the project.
        holder = None
        for uf in user_files:
            if uf.descriptor.id == f.descriptor.id and uf.view is not None:
                projects = uf.view.value.get("projects")
                if isinstance(projects, dict) and f.location.project in projects:
                    holder = uf
                    break
        if holder is None:
            holder = next((uf for uf in user_files if uf.descriptor.id == f.descriptor.id and uf.view is not None), None)
        for entry in f.view.entries:
            if entry.kind == "invalid":
                report(fp, entry, "invalid", entry.detail)
                continue
            if holder is None or holder.view is None:
                report(fp, entry, "uncovered", "no Claude Code user config (~/.claude.json) to hold a "
                                               "local-scope entry; run Claude Code once, then install again")
                continue
            pkey = f.location.project or ""
            local = holder.view.value.get("projects", {}).get(pkey, {}) if isinstance(holder.view.value.get("projects"), dict) else {}
            local_servers = local.get("mcpServers") if isinstance(local, dict) else None
            if isinstance(local_servers, dict) and entry.name in local_servers:
                lv = local_servers[entry.name]
                lcmd = lv.get("command") if isinstance(lv, dict) else None
                largs = lv.get("args", []) if isinstance(lv, dict) else []
                if isinstance(lcmd, str) and is_ours(lcmd, largs if isinstance(largs, list) else []):
                    report(fp, entry, "shadowed", "covered by a wrapped local-scope entry of the same name",
                           ours_server(largs))
                else:
                    report(fp, entry, "shadowed", "a local-scope entry of the same name wins over it "
                                                  "(that entry is listed under the user file)")
                continue
            if entry.kind == "remote":
                why = _claude_approval(holder.view.value, pkey, entry.name, Path(pkey))
                if why:
                    report(fp, entry, "uncovered", why)
                else:
                    cover_remote(f, fp, entry, (holder, pkey))
                continue
            action, reason = decide_stdio(f.descriptor, entry)
            if action == "ours":
                report(fp, entry, "ours", reason, ours_server(entry.args))
                continue
            if action != "wrap":
                report(fp, entry, action, reason)
                continue
            why = _claude_approval(holder.view.value, pkey, entry.name, Path(pkey))
            if why:
                report(fp, entry, "uncovered", why)
                continue
            oid = _origin_id(f.descriptor.id, f.location.path, entry.name, entry.project)
            k = keys.assign(entry.name, _fp(entry.command or "", entry.args), _ident(entry, entry.command or "", entry.args, f.descriptor, env),
                            oid, f.descriptor.id, "project", known.get(oid))
            prefix = (proxy, "proxy", "--server", k, "--")
            hp = file_plan(holder)
            hp.changes.append(AddShadow(("projects", pkey, "mcpServers"), entry.name,
                                        _wrapped_value(entry.value, prefix)))
            hp.pending.append({"client": f.descriptor.id, "file": str(holder.location.path),
                               "target": str(holder.target), "scope": "local", "name": entry.name,
                               "project": pkey, "policy_key": k, "source": str(f.location.path),
                               "fingerprint": _fp(entry.command or "", entry.args)})
            report(fp, entry, "shadow", f"covered by a local-scope entry in {holder.location.path}", k)
            covers.append(_Cover(k, f.descriptor, entry, str(f.location.path), entry.command or "", entry.args))

    for cmd, labels in dead.items():
        n = len(labels)
        warnings.append(f"{n} entr{'ies' if n != 1 else 'y'} run{'' if n != 1 else 's'} {cmd}, which no longer exists "
                        f"(its venv moved or deleted?), so the client cannot start {'them' if n != 1 else 'it'}: "
                        "install does not rewrite an entry already wrapped; run `synartesis uninstall` (it puts the "
                        "entries back from the install record), then `synartesis install` from the synartesis you keep")
    for oid, old, new in keys.rekeyed:
        warnings.append(f"{get_descriptor(oid[0]).display_name}'s {display_name(oid[2])} is given the policy key `{new}`, not `{old}`: `{old}` "
                        f"belongs to another entry, which starts a different server (its env, working directory "
                        f"or command line differ), and one key must name one server for undo")

    # 3. render and verify each changed file
    restart: list[str] = []
    dropped: set[str] = set()

    def skip(pairs: Iterable[tuple[str, str]], reason: str) -> None:
        """Entries whose change cannot be made: reported as skipped, with the reason."""
        pairs = set(pairs)
        for other in plans:
            other.entries = [EntryReport(e.client, e.file, e.scope, e.name, "skipped", reason, None, e.project)
                             if e.action in ("wrap", "shadow") and (e.name, e.policy_key) in pairs else e
                             for e in other.entries]
        dropped.update(k for _n, k in pairs)

    for fp in plans:
        if fp.status == "error" or not fp.changes:
            continue
        f = next(x for x in found.files if x.target == fp.target)
        assert f.view is not None
        adapter = adapter_for(f.descriptor)
        pairs = [(display_name(p["name"]), p["policy_key"]) for p in fp.pending]
        try:
            rendered = _render_checked(adapter, f, fp.changes)
        except (EntryShapeError, SynartesisError, ValueError) as exc:
            # which changes fail on their own? the others still go in (issue 9 item 8)
            bad: dict[int, str] = {}
            if len(fp.changes) > 1:
                for n, ch in enumerate(fp.changes):
                    try:
                        _render_checked(adapter, f, [ch])
                    except (EntryShapeError, SynartesisError, ValueError) as one:
                        bad[n] = str(one)
            rendered = None
            if bad and len(bad) < len(fp.changes):
                keep = [n for n in range(len(fp.changes)) if n not in bad]
                try:
                    rendered = _render_checked(adapter, f, [fp.changes[n] for n in keep])
                except (EntryShapeError, SynartesisError, ValueError):
                    rendered = None
            if rendered is None:
                fp.status, fp.exit_code = "error", 1
                fp.message = f"{fp.path}: not edited: {exc}"
                skip(pairs, str(exc))
                fp.pending, fp.changes = [], []
                continue
            for n, why in bad.items():
                skip([pairs[n]], why)
            fp.changes = [fp.changes[n] for n in keep]
            fp.pending = [fp.pending[n] for n in keep]
        fp.new = rendered.data
        fp.status = "change"
        written_view = adapter.read(f.location, rendered.data)
        for p, r in zip(fp.pending, rendered.records):
            if r.get("op") in ("wrap", "shadow"):  # to tell an env edit apart (new user round 31, #8)
                r.update(env_fields(value_at(written_view.value, r.get("locator") or [])))
            p["record"] = r
        hint = f"{f.descriptor.display_name}: {f.descriptor.restart}"
        if f.descriptor.restart_required and hint not in restart:
            restart.append(hint)
    if dropped:  # a key still used by an entry that is wrapped keeps its policy
        used = {p["policy_key"] for fp in plans for p in fp.pending} | \
               {e.policy_key for e in (x for fp in plans for x in fp.entries) if e.action == "ours"}
        covers = [c for c in covers if c.key not in dropped or c.key in used]

    # records of entries that are gone (or were put back by the client): forget them
    forget: list[dict[str, Any]] = []
    upgrades: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for f in found.files:
        if f.view is None:
            continue
        adapter = adapter_for(f.descriptor)
        for rec in state.for_target(str(f.target)):
            if adapter.record_state(f.view, rec["record"]) in ("missing", "original"):
                forget.append(rec)
            else:
                better = adapter.upgrade_record(f.view, rec["record"])
                if better is not None:  # an older record still holding argument texts
                    upgrades.append((rec, better))

    # 4. the policy
    seen_keys: set[str] = set()
    todo = []
    for c in covers:
        if c.key in declared or c.key in seen_keys:
            continue
        seen_keys.add(c.key)
        todo.append(c)
    policy_plans, start_errors = _plan_policies(env, todo, options, progress, introspect)
    policy_new = None
    if policy_plans:
        from synartesis.services.policies import merge_policy_text

        policy_new = merge_policy_text(policy_old, policy_plans, str(policy_path))
        if policy_new == policy_old:
            policy_new = None
    home_given = env.get("SYNARTESIS_HOME")
    if home_given and Path(home_given).expanduser() != env.home / ".synartesis":
        # Claude Code, started from this shell, passes its environment on; Claude Desktop and
        # Cursor are started by the desktop, and Codex passes servers a fixed list of variables
        # (CLIENTS.md §3): their proxies would not see it. Say so only for those being wrapped.
        blind = sorted({fp.client_name for fp in plans if fp.client != "claude-code"
                        and any(e.action == "wrap" for e in fp.entries)})
        if blind:
            warnings.append(f"SYNARTESIS_HOME is set, but {', '.join(blind)} do not pass it to the servers they "
                            "start, so their proxies will use the policy and journal in ~/.synartesis. Unset it "
                            "before installing, or set it in each of those entries' env.")
    kept = {p["policy_key"] for fp in plans for p in fp.pending}
    warnings += desktop_remote
    return InstallPlan(proxy, plans, policy_path, policy_old, policy_new, policy_plans, warnings,
                       restart, start_errors, forget, upgrades,
                       [cmd for cmd in dict.fromkeys(logins) if cmd.rsplit(" ", 1)[-1] in kept], found.looked)


def _render_checked(adapter: Any, f: FoundFile, changes: list[Change]) -> Any:
    """Render ``changes`` into ``f`` and prove the result: the new document equals the old one
    with exactly these changes, and undoing the records gives back the old bytes.

    Raises:
        EntryShapeError: a change does not fit, or a proof fails.
        SynartesisError / ValueError: the result does not parse.
    """
    assert f.view is not None
    rendered = adapter.render(f.view, changes)
    new_view = adapter.read(f.location, rendered.data)
    # compared as canonical JSON: ``nan`` is not equal to itself (issue 9 item 8)
    if value_sha(new_view.value) != value_sha(expected_after(f.view.value, changes, f.descriptor.format)):
        raise EntryShapeError("the edited file does not hold exactly the intended change")
    undo: list[Change] = [RemoveShadow(r) if r["op"] == "shadow" else Unwrap(r) for r in reversed(rendered.records)]
    back = adapter.render(new_view, undo)
    if back.data != f.data:
        raise EntryShapeError("uninstall could not give back this file byte for byte")
    return rendered


def _plan_policies(env: Env, covers: list[_Cover], options: InstallOptions, progress: Progress | None,
                   introspect: Callable[..., Any] | None) -> tuple[list[Any], dict[str, str]]:
    if not covers:
        return [], {}
    from synartesis.services.policies import plan_server_policy

    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    if options.start:
        if introspect is None:
            from synartesis.proxy.client import introspect as _introspect

            introspect = _introspect
        results, errors = _start_all(env, covers, options, progress, introspect)
    plans = []
    for c in covers:
        info = results.get(c.key)
        value = c.entry.value if isinstance(c.entry.value, dict) else {}
        env_names = [k for k in (value.get("env") or {}) if isinstance(k, str)] if isinstance(value.get("env"), dict) else []
        cwd = value.get("cwd") if isinstance(value.get("cwd"), str) else None
        file, scope = c.origin or (c.file, c.entry.scope)
        origin = {"client": c.desc.id, "file": file, "scope": scope, "entry": c.entry.name}
        if c.entry.project:
            origin["project"] = c.entry.project
        plans.append(plan_server_policy(
            c.key, c.command, c.args,
            tools=info.tools if info is not None else None,
            server_info=info.server_info if info is not None else None,
            origin=origin, env_names=env_names, cwd=cwd))
    return plans, errors


def _start_all(env: Env, covers: list[_Cover], options: InstallOptions, progress: Progress | None,
               introspect: Callable[..., Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Introspect every covered server, ``options.concurrency`` at a time (one thread each;
    ``introspect`` stops its server before it returns)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    lock = threading.Lock()  # progress is advanced from the workers, one at a time
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    if progress:
        progress.start(len(covers))

    def one(c: _Cover) -> None:
        style = c.desc.expansion
        home = str(env.home)
        value = c.entry.value if isinstance(c.entry.value, dict) else {}
        child_env = entry_env(value, style, env.environ, home)
        child_env.update({k: expand(v, style, env.environ, home) for k, v in c.extra_env})
        command = expand(c.command, style, env.environ, home)
        args = [expand(a, style, env.environ, home) for a in c.args]
        cwd = value.get("cwd") if isinstance(value.get("cwd"), str) else None
        if cwd:
            cwd = expand(cwd, style, env.environ, home)
            if not Path(cwd).is_dir():
                cwd = None
        try:
            results[c.key] = introspect(command, args, env=child_env, cwd=cwd, timeout=options.timeout, label=c.key)
            ok = True
        except Exception as exc:  # a server that cannot start gets the catch-all draft
            msg = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            # the server's stderr can echo its arguments or env: never show their secrets; our
            # own words before it lose only the secret ones (a new user's round 18, #5: the
            # entry's PROFILE=work made "notes-work failed" read "notes-*** failed")
            from synartesis.services.policy_checks import scrub_start_error
            given = {k: v for k, v in child_env.items() if k in (value.get("env") or {}) and len(v) >= 4}
            errors[c.key] = scrub_start_error(msg, [command, *args], given)
            ok = False
        if progress:
            with lock:
                progress.advance(c.key, ok)

    with ThreadPoolExecutor(max_workers=max(1, options.concurrency), thread_name_prefix="synartesis-install") as pool:
        list(pool.map(one, covers))
    return results, errors


# --------------------------------------------------------------------------------------------
# Applying


def apply_install(env: Env, plan: InstallPlan, *,
                  before_compare: Callable[[Path], None] | None = None) -> InstallResult:
    """Write what ``plan`` planned: the user policy, then each changed file.

    Each file: backup (0600) → record (pending) → checked atomic replace → record (done). A
    file that changed since it was planned is refused and its pending records dropped.

    Args:
        before_compare: test hook run (with the path) just before each final re-read.
    Raises:
        SynartesisError: the policy or the install record could not be written (no client
            file is touched after such a failure).
    """
    state = load_state(env)
    policy_written = False
    if plan.policy_new is not None:
        fsops.ensure_private_dir(plan.policy_path.parent)
        # under the lock `pin --write` takes, compared again just before the replace: neither
        # a concurrent pin --write nor an editor's save is overwritten (adversarial review 16, F3)
        with fsops.folder_lock(plan.policy_path):
            current = fsops.read_bytes(plan.policy_path)
            now_text = current.decode("utf-8", "replace") if current is not None else None
            if now_text != plan.policy_old:
                raise ConflictError(f"{plan.policy_path} changed since install read it; nothing was written — run it again")
            if current is None:
                fsops.write_new(plan.policy_path, plan.policy_new.encode("utf-8"), 0o600)
            else:
                fsops.replace_checked(plan.policy_path, current, plan.policy_new.encode("utf-8"))
        policy_written = True
    for p in plan.policy_plans:
        state.policies[p.name] = {"source": p.source, "policy_id": p.policy_id, "provenance": p.provenance,
                                  "checked": p.checked, "todo_count": p.todo_count, "reason": p.reason}
    if plan.forget:
        gone = {(r.get("target"), tuple(r["record"].get("locator", []))) for r in plan.forget}
        state.entries = [e for e in state.entries
                         if (e.get("target"), tuple(e["record"].get("locator", []))) not in gone]
    for old, better in plan.upgrades:
        for e in state.entries:
            if e.get("target") == old.get("target") and e["record"].get("locator") == old["record"].get("locator"):
                e["record"] = better
    if plan.policy_plans or plan.forget or plan.upgrades:
        save_state(env, state)

    outcomes: list[FileOutcome] = []
    for fp in plan.files:
        if fp.status != "change" or fp.new is None or fp.old is None:
            outcomes.append(FileOutcome(str(fp.path), fp.client, "error" if fp.status == "error" else "unchanged",
                                        fp.message))
            continue
        try:
            bk = fsops.backup(env, fp.path, fp.old, fp.client)
        except SynartesisError as exc:
            outcomes.append(FileOutcome(str(fp.path), fp.client, "error", str(exc)))
            continue
        state.backups.append({"file": str(fp.path), "target": str(fp.target), "backup": str(bk),
                              "sha256": sha256_hex(fp.old), "at": now(), "client": fp.client})
        stamp = now()
        added = []
        fresh = {(p["target"], tuple(p["record"]["locator"])) for p in fp.pending}
        replaced = [e for e in state.entries
                    if (e.get("target"), tuple(e["record"].get("locator", []))) in fresh]
        state.entries = [e for e in state.entries if not any(e is r for r in replaced)]
        for p in fp.pending:
            rec = dict(p, installed_at=stamp, backup=str(bk), pending=True)
            state.entries.append(rec)
            added.append(rec)
        save_state(env, state)
        try:
            fsops.replace_checked(fp.path, fp.old, fp.new,
                                  before_compare=(lambda p=fp.path: before_compare(p)) if before_compare else None)
        except SynartesisError as exc:
            state.entries = [e for e in state.entries if not any(e is a for a in added)] + replaced
            save_state(env, state)
            status = "conflict" if isinstance(exc, ConflictError) else "error"
            outcomes.append(FileOutcome(str(fp.path), fp.client, status, str(exc), str(bk)))
            continue
        for rec in added:
            rec.pop("pending", None)
        save_state(env, state)
        outcomes.append(FileOutcome(str(fp.path), fp.client, "written", "", str(bk)))
    return InstallResult(outcomes, policy_written, str(plan.policy_path), plan.restart)


# --------------------------------------------------------------------------------------------
# Uninstall


@dataclass
class UninstallFilePlan:
    """One file uninstall would touch."""

    client: str
    path: Path
    target: Path
    status: str  # change | unchanged | error | gone
    message: str = ""
    old: bytes | None = None
    new: bytes | None = None
    restore: list[dict[str, Any]] = field(default_factory=list)  # state entries restored
    drop: list[dict[str, Any]] = field(default_factory=list)  # state entries forgotten
    entries: list[EntryReport] = field(default_factory=list)
    exit_code: int = 0
    strays: int = 0  # entries that run through synartesis with no record (renamed, copied, moved)


@dataclass
class UninstallPlan:
    """What uninstall would do."""

    files: list[UninstallFilePlan]
    purge: bool
    purge_paths: list[Path]
    restart: list[str]
    warnings: list[str] = field(default_factory=list)
    has_record: bool = False  #: ``installed.json`` exists (it may list no entry: all restored before)
    #: what the journal a purge deletes holds: ``{"runs", "actions", "held"}`` counts (held:
    #: calls waiting for approval); None when no journal is purged or it could not be read
    journal_holds: dict[str, int] | None = None
    #: with ``purge``: how many entries still run through synartesis, so nothing is purged
    purge_waits: int = 0

    @property
    def changes(self) -> bool:
        """True when applying would write or delete anything."""
        return any(f.status == "change" or f.drop for f in self.files) or bool(self.purge_paths)


@dataclass
class UninstallResult:
    """What uninstall did."""

    files: list[FileOutcome]
    purged: list[str]
    kept: list[str]
    restart: list[str]

    @property
    def ok(self) -> bool:
        """True when nothing was refused."""
        return all(f.status in ("written", "unchanged", "gone") for f in self.files)


#: why uninstall leaves an entry that runs through synartesis with no record of it
_UNRECORDED = ("runs through synartesis but is not in the install record (renamed, copied or moved since install, "
               "or installed from another SYNARTESIS_HOME?); left as it is: put it back where and as install left "
               "it and uninstall again (or uninstall from that home), or by hand make the command after `--` in "
               "its arguments its command again")


def plan_uninstall(env: Env, client: str | None = None, purge: bool = False) -> UninstallPlan:
    """Plan restoring every recorded entry that is still exactly ours.

    Per record: ``exact``/``equal`` → restored; ``edited`` → left alone (reported, forgotten);
    ``missing`` → not resurrected (forgotten); ``original`` → already back (forgotten). A file
    that does not parse is left alone and its records kept for a later run.

    Raises:
        UsageError: unknown client.
        SynartesisError: the install record is damaged.
    """
    if client:
        get_descriptor(client)
    state = load_state(env)
    entries = [e for e in state.entries if client is None or e.get("client") == client]
    by_target: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_target.setdefault(e.get("target", ""), []).append(e)
    files: list[UninstallFilePlan] = []
    restart: list[str] = []
    warnings = tidy_own_files(env, [Path(t) for t in by_target if t])
    for target, recs in by_target.items():
        desc = get_descriptor(recs[0]["client"])
        path = Path(recs[0].get("file") or target)
        fp = UninstallFilePlan(desc.id, path, Path(target), "unchanged")
        files.append(fp)
        spec = desc.files[0]
        loc = ConfigLocation(desc.id, recs[0].get("scope", "user"), path, spec)
        if not path.exists():
            fp.status, fp.message = "gone", f"{path} no longer exists; nothing to restore"
            fp.drop = list(recs)
            for r in recs:
                fp.entries.append(EntryReport(desc.id, str(path), r.get("scope", ""), r.get("name", ""),
                                              "gone", "the file is gone", r.get("policy_key"), r.get("project")))
            continue
        found = read_location(desc, loc)
        if found.view is None:
            fp.status, fp.message = "error", f"{found.error}; left alone (records kept)"
            fp.exit_code = found.error_code or 1
            continue
        fp.old = found.data
        adapter = adapter_for(desc)
        changes: list[Change] = []
        recorded = {(r.get("scope", ""), r.get("project"), r.get("name", "")) for r in recs}
        stray_keys = {ours_server(e.args) for e in found.view.entries
                      if e.kind == "stdio" and is_ours(e.command, e.args) and (e.scope, e.project, e.name) not in recorded}
        for r in reversed(recs):  # newest first: each change is the exact inverse of its install
            rec = r["record"]
            st = adapter.record_state(found.view, rec)
            name = r.get("name", "")
            current = value_at(found.view.value, rec.get("locator") or [])
            env_parts = env_edit(rec, current) if st == "edited" else None
            if env_parts and rec.get("op") == "wrap":
                # only its env changed, which synartesis never wrote in a wrapped entry: the
                # command goes back and the edit stays (a new user's round 31, #8)
                changes.append(Unwrap(rec))
                fp.restore.append(r)
                fp.entries.append(EntryReport(desc.id, str(path), r.get("scope", ""), name, "restore",
                                              f"the original entry put back, keeping your env edit since install "
                                              f"({', '.join(env_parts)})", r.get("policy_key"), r.get("project")))
            elif st in ("exact", "equal"):
                changes.append(RemoveShadow(rec) if rec.get("op") == "shadow" else Unwrap(rec))
                fp.restore.append(r)
                fp.entries.append(EntryReport(desc.id, str(path), r.get("scope", ""), name, "restore",
                                              "the local-scope entry synartesis added: removed" if rec.get("op") == "shadow"
                                              else "the original entry put back", r.get("policy_key"), r.get("project")))
            else:
                # the backup the install that wrapped this entry took (its record names it)
                first = r.get("backup") if isinstance(r.get("backup"), str) and Path(r["backup"]).is_file() else None
                backup = (f"`synartesis uninstall --from-backup {shlex.quote(first)}` (taken just before the "
                          "install that wrapped it; what changed in the file since is lost with it)" if first else
                          f"`synartesis uninstall --from-backup FILE` (backups are in {backups_dir(env)})")
                changed = ("changed since install (by you or the client)" if not env_parts else
                           f"its env changed since install ({', '.join(env_parts)}), and synartesis wrote this "
                           "local-scope entry whole, env included (copied from the project's .mcp.json), so "
                           "removing it would lose that edit")
                why = {"missing": "removed since install; not brought back",
                       "edited": f"{changed}; left as it is: edit it back by "
                                 f"hand (the next uninstall then restores it), or put the whole file back with {backup}",
                       "original": "already back to the original"}[st]
                moved = st == "missing" and r.get("policy_key") in stray_keys
                if moved:
                    # gone from its place while an unrecorded entry runs its key: renamed or moved;
                    # the record stays, so putting it back lets the next uninstall restore it
                    # (adversarial review 20, F12: it was dropped, and renaming back did not help)
                    why = ("not where install left it, while an entry runs through synartesis as its key "
                           f"`{r.get('policy_key')}` (renamed or moved?): put it back under its name and scope, and "
                           "the next uninstall restores it")
                if st != "edited" and not moved:
                    # an entry left alone keeps its record: once it is back to what synartesis
                    # wrote, the next uninstall restores it, and a purge waits for it (a new
                    # user's round 18, #1/#2: the record went, a second uninstall said "nothing
                    # to restore", and --purge deleted the policy that entry still ran through)
                    fp.drop.append(r)
                fp.entries.append(EntryReport(desc.id, str(path), r.get("scope", ""), name, st, why,
                                              r.get("policy_key"), r.get("project")))
        # an entry that runs through synartesis where no record of this file has it (the client
        # renamed, copied or moved a wrapped entry to another scope) is not restored: say so
        # (review 17, F5; review 18, F6: one moved to a project's scope kept its name)
        for e in found.view.entries:
            if e.kind == "stdio" and is_ours(e.command, e.args) and (e.scope, e.project, e.name) not in recorded:
                fp.strays += 1
                fp.entries.append(EntryReport(desc.id, str(path), e.scope, e.name, "edited",
                                              _UNRECORDED, ours_server(e.args), e.project))
        if changes:
            try:
                rendered = adapter.render(found.view, changes)
                adapter.read(loc, rendered.data)
            except (EntryShapeError, SynartesisError, ValueError) as exc:
                fp.status, fp.message = "error", f"{path}: not restored: {exc}"
                fp.restore = []
                continue
            fp.new = rendered.data
            fp.status = "change"
            if desc.restart_required:
                hint = f"{desc.display_name}: {desc.restart}"
                if hint not in restart:
                    restart.append(hint)
    # every client file no record names, read for entries that still run through synartesis
    # (adversarial review 20, F3, and a new user's round 19, #1: with the record empty, uninstall
    # said "nothing to restore", exit 0, and a purge deleted the policy and journal such an entry
    # still ran through): the selected clients' are reported (exit 1), every client's keep a
    # purge waiting
    planned = {str(f.path) for f in files}
    unrecorded = 0
    for f in discover(env, select_clients(None), state.projects()).files:
        if str(f.location.path) in planned or f.view is None:
            continue
        ours = [e for e in f.view.entries if e.kind == "stdio" and is_ours(e.command, e.args)]
        if not ours:
            continue
        unrecorded += len(ours)
        if client is not None and f.descriptor.id != client:
            continue
        planned.add(str(f.location.path))
        fp = UninstallFilePlan(f.descriptor.id, f.location.path, f.target, "unchanged", strays=len(ours))
        fp.entries = [EntryReport(f.descriptor.id, str(f.location.path), e.scope, e.name, "edited",
                                  _UNRECORDED, ours_server(e.args), e.project) for e in ours]
        files.append(fp)
        unrecorded -= len(ours)
    purge_paths: list[Path] = []
    holds: dict[str, int] | None = None
    if purge:
        home = synartesis_home(env)
        ending = {id(r) for f in files for r in (*f.restore, *f.drop)}
        staying = [e for e in state.entries if id(e) not in ending] + [None] * (sum(f.strays for f in files) + unrecorded)
        if staying:
            # entries still wrapped (another client's, or one not restored) run through the policy
            # and write the journal: deleting them would hold every call of those servers and lose
            # their undo history (adversarial review 10), so a purge waits until none is left
            warnings.append(f"--purge kept {home}'s policy, journal and install record: {len(staying)} "
                            f"entr{'ies' if len(staying) != 1 else 'y'} (not restored, renamed or moved, another "
                            "client's, or installed from another SYNARTESIS_HOME) still run through synartesis; put "
                            "them back or uninstall them, then purge")
        else:
            record = [state_path(env)] if state_path(env).exists() else []
            for p in (home / POLICY_FILENAME, home / "journal.db", home / "journal.db-wal", home / "journal.db-shm",
                      *_policy_caches(home), *record):
                if p.exists():
                    purge_paths.append(p)
            if home / "journal.db" in purge_paths:
                holds = _journal_holds(home / "journal.db")
    return UninstallPlan(files, purge, purge_paths, restart, warnings, state_path(env).exists(), holds,
                         purge_waits=len(staying) if purge else 0)


def _journal_holds(path: Path) -> dict[str, int] | None:
    """``{"runs", "actions", "held"}`` in the journal at ``path`` (what a purge takes with it, so
    a person knows before; new user round 9); None when it cannot be read (the plan lists the
    file all the same)."""
    from synartesis.journal import Journal  # only a purge opens the journal here
    try:
        j = Journal.open(path, reap=False)
        try:
            runs = j.list_runs()
        finally:
            j.close()
    except SynartesisError:
        return None
    return {"runs": len(runs), "actions": sum(r.actions for r in runs),
            "held": sum(r.counts.get("gated", 0) for r in runs)}


def _policy_caches(home: Path) -> list[Path]:
    """The compiled policy caches in ``home`` (:func:`synartesis.policy.cache.cache_path`: every
    server's command line is in them, so a purge deletes them with the policy)."""
    try:
        names = sorted(os.listdir(home))
    except OSError:
        return []
    return [home / n for n in names if re.fullmatch(r"policy-[0-9a-f]{16}\.json", n)]


def apply_uninstall(env: Env, plan: UninstallPlan, *,
                    before_compare: Callable[[Path], None] | None = None) -> UninstallResult:
    """Restore what ``plan`` planned; forget records of entries that are no longer ours.

    Raises:
        SynartesisError: the install record could not be written.
    """
    state = load_state(env)
    outcomes: list[FileOutcome] = []

    def forget(recs: Iterable[dict[str, Any]]) -> None:
        ids = {(r.get("target"), tuple(r["record"].get("locator", []))) for r in recs}
        state.entries = [e for e in state.entries
                         if (e.get("target"), tuple(e["record"].get("locator", []))) not in ids]

    for fp in plan.files:
        if fp.status == "change" and fp.old is not None and fp.new is not None:
            try:
                bk = fsops.backup(env, fp.path, fp.old, fp.client)
                state.backups.append({"file": str(fp.path), "target": str(fp.target), "backup": str(bk),
                                      "sha256": sha256_hex(fp.old), "at": now(), "client": fp.client})
                save_state(env, state)
                fsops.replace_checked(fp.path, fp.old, fp.new,
                                      before_compare=(lambda p=fp.path: before_compare(p)) if before_compare else None)
            except SynartesisError as exc:
                status = "conflict" if isinstance(exc, ConflictError) else "error"
                outcomes.append(FileOutcome(str(fp.path), fp.client, status, str(exc)))
                continue
            forget(fp.restore + fp.drop)
            save_state(env, state)
            outcomes.append(FileOutcome(str(fp.path), fp.client, "written", "", str(bk)))
        else:
            if fp.drop and fp.status in ("unchanged", "gone"):
                forget(fp.drop)
                save_state(env, state)
            outcomes.append(FileOutcome(str(fp.path), fp.client, fp.status if fp.status != "change" else "error",
                                        fp.message))
    purged: list[str] = []
    kept: list[str] = []
    if plan.purge:
        sp = state_path(env)
        for p in plan.purge_paths:
            if p == sp and state.entries:  # a file was refused: its records are needed for a later run
                continue
            if fsops.remove_owned(p):
                purged.append(str(p))
        if sp.exists():
            kept.append(str(sp))
        bdir = synartesis_home(env) / "backups"
        if bdir.exists():
            kept.append(str(bdir))
    return UninstallResult(outcomes, purged, kept, plan.restart)


@dataclass(frozen=True)
class RestoreResult:
    """What ``uninstall --from-backup`` did."""

    path: str
    backup: str
    previous_backup: str | None
    forgotten: int


def restore_from_backup(env: Env, backup_file: Path, *, dry_run: bool = False) -> RestoreResult:
    """Put a whole file back from one of our backups (explicit recovery, not the default).

    The file's current bytes are backed up first, so this too can be undone; records of
    entries in that file are forgotten (the backup predates them). ``dry_run``: every check,
    nothing written (``previous_backup`` None, ``forgotten`` the records that would go).

    Raises:
        UsageError: ``backup_file`` is not one of our backups (no record of its original path).
        SynartesisError: reading or writing failed.
    """
    given = Path(backup_file).expanduser()
    ours = backups_dir(env).resolve()
    try:
        backup_file = given.resolve()  # the sidecar read is the one beside the real backup, not beside a link
        inside = backup_file.is_relative_to(ours)
    except (OSError, RuntimeError):
        backup_file, inside = given, False
    if not inside and given.exists():
        # the backup's sidecar names where it goes back to: only trust sidecars we wrote
        raise UsageError(f"{given} is not in synartesis's backups folder ({ours}); "
                         "restore it by hand, or copy it there first")
    data = fsops.read_bytes(backup_file)
    if data is None:
        raise UsageError(f"no such backup: {backup_file}")
    state = load_state(env)
    meta = fsops.read_backup_meta(backup_file)
    original = meta.get("original") if meta else None
    if original is None:
        rec = next((b for b in state.backups if Path(b.get("backup", "")) == backup_file.resolve()
                    or b.get("backup") == str(backup_file)), None)
        original = rec.get("file") if rec else None
    if not original:
        raise UsageError(f"{backup_file} is not a synartesis backup (no record of which file it belongs to)")
    if not isinstance(original, str) or not os.path.isabs(original) or "\0" in original:
        raise UsageError(f"{backup_file}: its record names no absolute path to restore to; nothing was written")
    client = meta.get("client", "") if meta else ""
    if not isinstance(client, str):  # copied into installed.json, whose shape it would break
        raise UsageError(f"{backup_file}: its record's client is not text; nothing was written")
    if meta and meta.get("sha256") and meta["sha256"] != sha256_hex(data):
        raise SynartesisError(f"{backup_file} does not match its recorded checksum; not restored")
    path = Path(original)
    # the file the backup was taken of, as resolved then: a config replaced since by a link
    # to another file must not have that file overwritten (an adversarial review)
    taken = next((b.get("target") for b in state.backups if isinstance(b.get("backup"), str)
                  and Path(b["backup"]).expanduser().resolve() == backup_file), None) or (meta or {}).get("target")
    leads_to = str(fsops.resolve_target(path))
    if isinstance(taken, str) and taken and leads_to != taken:
        raise UsageError(f"{path} now leads to {leads_to}, not to {taken} the backup was taken of; "
                         "nothing was written (restore it by hand)")
    current = fsops.read_bytes(path)
    prev = None
    if dry_run:
        target = str(fsops.resolve_target(path))
        return RestoreResult(str(path), str(backup_file), None,
                             0 if current == data else sum(1 for e in state.entries if e.get("target") == target))
    if current is None:
        fsops.atomic_write(path, data, 0o600)
    else:
        if current == data:
            return RestoreResult(str(path), str(backup_file), None, 0)
        prev_path = fsops.backup(env, path, current, client)
        prev = str(prev_path)
        state.backups.append({"file": str(path), "target": str(fsops.resolve_target(path)), "backup": prev,
                              "sha256": sha256_hex(current), "at": now(), "client": client})
        fsops.replace_checked(path, current, data)
    target = str(fsops.resolve_target(path))
    before = len(state.entries)
    state.entries = [e for e in state.entries if e.get("target") != target]
    save_state(env, state)
    return RestoreResult(str(path), str(backup_file), prev, before - len(state.entries))
