"""status: per client × scope × server, is it covered, by which policy, and what drifted.

Drift (CLIENTS.md §5 "Drift detection", DESIGN §8): the client removed our entry or rewrote it
back to the original, the user edited it, the proxy path it runs no longer exists, a project
server is shadowed or uncovered, a server runs through synartesis without a policy.
Nothing here prints; the CLI renders :class:`StatusReport`.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from synartesis import fsops
from synartesis.clients.adapters import adapter_for, env_edit
from synartesis.clients.discover import discover
from synartesis.clients.entries import display_name, foreign_wrapper, is_ours, ours_server
from synartesis.clients.managed import load_managed
from synartesis.errors import SynartesisError
from synartesis.paths import POLICY_FILENAME, Env, synartesis_home
from synartesis.services.install import _claude_approval, _needs_shell, _policy_servers, select_clients, tidy_own_files
from synartesis.services.install_remote import decide_remote
from synartesis.services.install_state import load_state
from synartesis.services.remote import proxy_remote_args, sign_in_state

__all__ = ["StatusRow", "StatusReport", "collect_status"]


def _stale_bridge(client: str, value: Any, args: list[str]) -> str | None:
    """Why a wrapped remote entry's own ``url``/``headers`` (kept beside the bridge, where the
    user edits them) no longer match what its bridge runs with (the copies install put into
    ``args``/``env``), or None. Only JSON clients keep those keys live; Codex's are comments."""
    from synartesis.errors import UsageError
    from synartesis.remote.headers import remote_entry

    if client not in ("claude-code", "cursor") or not isinstance(value, dict) or not isinstance(value.get("url"), str):
        return None
    env = value.get("env") if isinstance(value.get("env"), dict) else {}
    try:
        kept = remote_entry(value, client)
    except UsageError:
        return None
    bridge = proxy_remote_args(args, env)
    if kept is None or bridge is None:
        return None
    url, spec, _ = bridge
    used = {n.lower(): v for n, v in spec.literal}
    used.update({n.lower(): env.get(var) for n, var in spec.from_env})
    written = {n.lower(): v for n, v in kept.headers.literal}
    edited = [what for what, same in (("url", kept.url == url), ("headers", written == used)) if not same]
    if not edited:
        return None
    return (f"its {' and '.join(edited)} changed after install, but the bridge still uses the "
            f"{' and '.join(edited)} install copied into its args/env, so the edit has no effect: make the "
            "same change there, or put the entry back in its remote form (remove command, args and the "
            "SYNARTESIS_* env members, set type back to http or sse) and run `synartesis install` again")


def _sign_in(env: Env, key: str, headers: Any) -> tuple[str, str | None]:
    """(sign-in state, drift or None) of a bridged remote server."""
    if headers.has_authorization:
        return "not needed", None
    try:
        state = sign_in_state(env, key)
    except SynartesisError as exc:
        return "damaged", exc.message
    if state.state == "signed in":
        return "signed in", None
    if state.state == "expired" and state.refreshable:
        return "expired (the proxy refreshes it)", None
    if state.state == "expired":
        return "expired", f"the sign-in expired: run `synartesis login {shlex.quote(key)}`"
    # a server without credentials in its entry may need no sign-in at all: not drift
    return f"not signed in (if the server asks for one: `synartesis login {shlex.quote(key)}`)", None


@dataclass(frozen=True)
class StatusRow:
    """One server entry.

    ``state``: ``wrapped`` | ``shadowed`` | ``not-wrapped`` | ``remote`` | ``other-wrapper`` |
    ``blocked`` | ``invalid`` | ``disabled`` | ``removed``. ``sign_in``: for a remote server that
    runs through synartesis, its OAuth sign-in (``signed in``, ``expired``, ``not signed in``,
    ``not needed`` when the entry gives its own credentials); None otherwise.
    """

    client: str
    client_name: str
    file: str
    scope: str
    name: str
    covered: bool
    state: str
    reason: str = ""
    project: str | None = None
    policy_key: str | None = None
    policy: dict[str, Any] | None = None
    drift: list[str] = field(default_factory=list)
    sign_in: str | None = None


@dataclass(frozen=True)
class StatusReport:
    """Everything status found."""

    rows: list[StatusRow]
    files: list[dict[str, Any]]
    warnings: list[str]
    policy_path: str
    policy_error: str | None = None  # the user policy does not load: every wrapped proxy refuses to start
    policy_exists: bool = True  # False: no user policy yet (install writes it)
    #: servers of the policy no client config launches (all clients only): ``[{"name", "policy"}]``,
    #: ``policy`` as a row's. Without them status said nothing of a policy's pins when no client
    #: was configured yet (new user round 14).
    unlaunched: list[dict[str, Any]] = field(default_factory=list)
    looked_in: list[str] = field(default_factory=list)  # user-level config paths looked in, found or not

    @property
    def ok(self) -> bool:
        """True when the policy loads, every server is covered, nothing drifted and every file
        was read."""
        return (self.policy_error is None and all(r.covered and not r.drift for r in self.rows)
                and all(f["status"] == "ok" for f in self.files))

    @property
    def install_would_add(self) -> bool:
        """True when `synartesis install` has something to cover (so, with no policy yet, it
        writes one): a wrapped entry, or one whose reason sends the user to install. With no
        client config, or none that lists a server, it writes nothing (new user round 31, #7)."""
        return any(r.state == "wrapped" or (not r.covered and "`synartesis install`" in r.reason)
                   for r in self.rows)

    @property
    def exit_code(self) -> int:
        """0 all covered; 2 the policy does not load or a client config is not valid (does not
        parse, wrong types); else 1."""
        if self.policy_error is not None or any(f["status"] != "ok" and f.get("code") == 2 for f in self.files):
            return 2
        return 0 if self.ok else 1

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape (keys pinned by tests)."""
        return {"ok": self.ok, "policy": self.policy_path, "policy_error": self.policy_error, "files": self.files,
                "servers": [asdict(r) for r in self.rows], "unlaunched": self.unlaunched, "warnings": self.warnings,
                "looked_in": self.looked_in}


def _env_not_given(spec: Any, entry: Any) -> list[str]:
    """Names the policy's server ``env`` takes from the client entry (``NAME: "${NAME}"``, as
    install writes it for the variables the entry set) that the entry's ``env`` no longer sets
    (new user round 16, #10: MEMORY_FILE_PATH removed from a wrapped memory entry; status said
    nothing, and undo refused to start the server). Names only, never values."""
    env = spec.get("env") if isinstance(spec, dict) else None
    if not isinstance(env, dict):
        return []
    given = entry.get("env") if isinstance(entry, dict) else None
    given = given if isinstance(given, dict) else {}
    return [name for name, value in env.items()
            if isinstance(name, str) and value == "${" + name + "}" and name not in given]


def _policy_info(key: str | None, declared: dict[str, Any], tools: list[Any],
                 meta: dict[str, Any]) -> dict[str, Any] | None:
    if key is None or key not in declared:
        return None
    spec = declared[key] if isinstance(declared[key], dict) else {}
    note = str(spec.get("note") or "")
    source = meta.get("source")
    if not source:
        source = "shipped" if "shipped" in note else "drafted" if note.startswith("written by synartesis") else "user"
    gated = 0
    creations: list[str] = []
    for rule in tools:
        if not isinstance(rule, dict) or not str(rule.get("match", "")).startswith(f"{key}."):
            continue
        # a rule whose inverse puts the snapshot back holds a call that creates what it writes
        # (the pre-read finds nothing to restore): say so, not just "1 rule held" (new user
        # round 13, #3: a new file's write_file was held, and status named only create_directory);
        # only a pre-read that can say "does not exist" (absent_when) makes one, and not a tool
        # that never creates (on_absent: send): memory's delete_entities was named (round 16, #6)
        if (rule.get("class") in ("reversible", "compensable") and isinstance(rule.get("snapshot"), dict)
                and rule["snapshot"].get("on_absent", "hold") == "hold" and rule["snapshot"].get("absent_when")
                and "$snapshot" in json.dumps(rule.get("inverse"), default=str)
                and str(rule.get("match"))[len(key) + 1:] not in creations):
            creations.append(str(rule.get("match"))[len(key) + 1:])
        # held rules: irreversible ones (held unless told otherwise) and any rule drafted with
        # gate: always, such as a server-declared compensation nobody has checked yet
        default = "always" if rule.get("class") == "irreversible" else "never"
        if rule.get("gate", default) == "always":
            gated += 1
    return {"source": source, "policy_id": meta.get("policy_id"), "provenance": spec.get("provenance"),
            "checked": meta.get("checked"), "todo": gated, "creations_held": creations,
            "pins": len(spec.get("pins") or {}) if isinstance(spec.get("pins"), dict) else 0}


def policy_summary(info: dict[str, Any]) -> str:
    """One line for a status row's policy (``info`` is :func:`_policy_info`'s dict), as
    ``policy shipped memory, <provenance> · 2 rules held for approval · 0 pins``; the CLI and
    the console print the same words."""
    pol = str(info.get("source", "?")) + (f" {info['policy_id']}" if info.get("policy_id") else "")
    if info.get("provenance"):
        pol += f", {info['provenance']}"
    held, pins = int(info.get("todo") or 0), int(info.get("pins") or 0)
    creations = [str(c) for c in info.get("creations_held") or []]
    made = f" (and {', '.join(creations)} when it would create what it writes)" if creations else ""
    return (f"policy {pol} · {held} rule{'s' if held != 1 else ''} held for approval{made}"
            f" · {pins} pin{'s' if pins != 1 else ''}")


def collect_status(env: Env, client: str | None = None, system_root: Path | None = None) -> StatusReport:
    """Look at every config of the chosen clients and compare with the install record.

    Raises:
        UsageError: unknown client.
        SynartesisError: the install record is damaged. (A policy that does not load is
            reported as ``policy_error``, not raised.)
    """
    import yaml

    clients = select_clients(client)
    state = load_state(env)
    policy_path = synartesis_home(env) / POLICY_FILENAME
    policy_error = None
    try:
        pbytes = fsops.read_bytes(policy_path)
    except SynartesisError as exc:  # a directory, or unreadable: a policy that does not load
        pbytes, policy_error = None, exc.message
    if pbytes is not None:
        # what every installed proxy loads (check says the same): valid YAML is not yet a
        # valid policy (an unknown key, a bad reference), and bytes are not yet UTF-8
        from synartesis.errors import PolicyError
        from synartesis.policy.loader import parse_policy
        from synartesis.policy.source import decode_policy
        try:
            parse_policy(decode_policy(pbytes, str(policy_path)), str(policy_path))
        except PolicyError as exc:
            policy_error = exc.message
        except RecursionError:
            policy_error = f"{policy_path}: the policy is nested too deeply to read"
    ptext = pbytes.decode("utf-8", "replace") if pbytes is not None and policy_error is None else None
    declared = _policy_servers(ptext, policy_path)
    try:
        pdata = yaml.safe_load(ptext) if ptext else None
    except yaml.YAMLError:
        pdata = None
    rules = pdata.get("tools", []) if isinstance(pdata, dict) and isinstance(pdata.get("tools"), list) else []
    found = discover(env, clients, state.projects())
    warnings = list(found.notes) + tidy_own_files(env, [f.target for f in found.files])
    rows: list[StatusRow] = []
    files: list[dict[str, Any]] = []
    seen_records: set[int] = set()

    def pinfo(key: str | None) -> dict[str, Any] | None:
        return _policy_info(key, declared, rules, state.policies.get(key or "", {}))

    user_views = [f for f in found.files if f.location.scope != "project" and f.view is not None]
    for f in found.files:
        desc = f.descriptor
        files.append({"client": desc.id, "file": str(f.location.path), "scope": f.location.scope,
                      "status": "ok" if f.view is not None else "error", "message": f.error or "",
                      "code": 0 if f.view is not None else (f.error_code or 1)})
        if f.view is None:
            continue
        adapter = adapter_for(desc)
        managed = load_managed(desc, env, system_root) if desc.managed else None
        shadow_cover = f.location.scope == "project" and getattr(f.location.spec, "cover", "") == "shadow"
        for entry in f.view.entries:
            rec = state.find(str(f.target), list(entry.locator))
            if rec is not None:
                seen_records.add(id(rec))

            def row(covered: bool, st: str, reason: str = "", key: str | None = None,
                    drift: list[str] | None = None, sign_in: str | None = None) -> None:
                rows.append(StatusRow(desc.id, desc.display_name, str(f.location.path), entry.scope,
                                      display_name(entry.name), covered, st, reason,
                                      display_name(entry.project) if entry.project else None, key, pinfo(key),
                                      drift or [], sign_in))

            if entry.kind == "remote":
                action, why = decide_remote(desc, entry, include_oauth=False,
                                            managed=load_managed(desc, env, system_root) if desc.managed else None)
                if rec is not None:
                    row(False, "remote", "the client rewrote our entry back to the original since install",
                        rec.get("policy_key"), ["reverted by the client; run `synartesis install` again"])
                else:
                    row(False, "invalid" if action == "invalid" else "remote",
                        why or "remote server, not bridged yet: run `synartesis install`")
                continue
            if entry.kind == "invalid":
                row(False, "invalid", entry.detail)
                continue
            if is_ours(entry.command, entry.args):
                key = ours_server(entry.args)
                drift: list[str] = []
                cmd = entry.command or ""
                runs = True
                if os.path.isabs(cmd) and not (Path(cmd).is_file() and os.access(cmd, os.X_OK)):
                    # install alone does not re-point an entry already wrapped (a new user's
                    # round 31, #5: the venv deleted; "run install again" changed nothing)
                    drift.append(f"the proxy {cmd} no longer exists (its venv moved or deleted?): the client cannot "
                                 "start this server; run `synartesis uninstall` (any synartesis: it puts the entries "
                                 "back from the install record), then `synartesis install` from the one you keep")
                    runs = False
                if rec is not None:
                    st = adapter.record_state(f.view, rec["record"])
                    env_parts = env_edit(rec["record"], entry.value) if st == "edited" else None
                    if env_parts:  # names only, never a value (a new user's round 31, #8)
                        then = ("uninstall puts the entry back and keeps this edit" if rec["record"].get("op") == "wrap"
                                else "uninstall will leave it: synartesis wrote this entry's env")
                        drift.append(f"env edited since install: {', '.join(env_parts)} (still runs through "
                                     f"synartesis; {then})")
                    elif st == "edited":
                        drift.append("edited since install (still runs through synartesis; uninstall will leave it)")
                else:
                    drift.append("wrapped, but not in the install record (uninstall will not restore it)")
                if policy_error is not None:
                    pass  # nothing is read from a policy that does not load (said once, below)
                elif pbytes is None:  # the proxy runs and holds every tool (fresh user round 31b: "no server … in" a missing file)
                    drift.append(f"there is no policy at {policy_path}: every call is held (fail-closed)")
                elif key not in declared:
                    drift.append(f"no server {key!r} in {policy_path}: every call is held (fail-closed)")
                else:
                    missing = _env_not_given(declared[key], entry.value)
                    if missing:
                        drift.append(f"the policy takes {', '.join(missing)} from this entry's env, which no longer "
                                     "sets it: the server now runs on other data, and undo will refuse to start it "
                                     "(set it again in the entry)")
                remote = proxy_remote_args(entry.args)
                stale = _stale_bridge(desc.id, entry.value, entry.args) if remote is not None else None
                if stale:
                    drift.append(stale)
                sign_in = None
                if remote is not None and key:
                    sign_in, why = _sign_in(env, key, remote[1])
                    if why:
                        drift.append(why)
                row(runs, "wrapped", "runs through synartesis" + (" (a remote server, bridged)" if remote else ""),
                    key, drift, sign_in)
                continue
            # a stdio entry that is not ours
            if shadow_cover:
                holder = None
                for u in user_views:
                    projects = u.view.value.get("projects") if u.view is not None else None
                    if u.descriptor.id == desc.id and isinstance(projects, dict) and entry.project in projects:
                        holder = u
                        break
                local = None
                if holder is not None and holder.view is not None:
                    proj = holder.view.value["projects"].get(entry.project)
                    servers = proj.get("mcpServers") if isinstance(proj, dict) else None
                    local = servers.get(entry.name) if isinstance(servers, dict) else None
                if isinstance(local, dict):
                    lcmd, largs = local.get("command"), local.get("args", [])
                    if isinstance(lcmd, str) and is_ours(lcmd, largs if isinstance(largs, list) else []):
                        where = holder.location.path if holder is not None else "the user file"
                        row(True, "shadowed", f"covered by its local-scope entry in {where}", ours_server(largs))
                    else:
                        row(True, "shadowed", "inactive: a local-scope entry of the same name wins (listed above)")
                    continue
                why = _claude_approval(holder.view.value if holder and holder.view else {}, entry.project or "", entry.name,
                                       Path(entry.project or "."))
                if why and why.startswith("disabled"):
                    row(True, "disabled", why)
                else:
                    row(False, "not-wrapped", why or "project server not covered yet: run `synartesis install`")
                continue
            other = foreign_wrapper(entry.command, entry.args)
            if rec is not None:
                st = adapter.record_state(f.view, rec["record"])
                if st == "original":
                    row(False, "not-wrapped", "the client rewrote our entry back to the original since install",
                        rec.get("policy_key"), ["reverted by the client; run `synartesis install` again"])
                else:
                    row(False, "not-wrapped", "edited since install and no longer wrapped; uninstall will leave it",
                        rec.get("policy_key"), ["edited by the user"])
                continue
            if other:
                row(False, "other-wrapper", f"wrapped by {other}")
            elif managed is not None and managed.blocks(entry.name, entry.argv):
                row(False, "blocked", managed.blocks(entry.name, entry.argv) or "")
            elif _needs_shell(entry.command or ""):
                row(False, "not-wrapped", "the command has spaces and is run through a shell; not wrapped")
            elif f.location.scope == "project":
                row(False, "not-wrapped", "project file meant to be shared: not edited "
                                          "(install --include-project-files)")
            else:
                row(False, "not-wrapped", "not wrapped yet: run `synartesis install`")
    # records whose entry is gone (the client dropped it, or the user deleted it)
    chosen = {d.id for d in clients}
    for rec in state.entries:
        if id(rec) in seen_records or rec.get("client") not in chosen:
            continue
        desc = next(d for d in clients if d.id == rec.get("client"))
        exists = Path(rec.get("file") or rec.get("target") or "").exists()
        what = "local-scope entry" if rec.get("record", {}).get("op") == "shadow" else "entry"
        reason = (f"the {what} synartesis wrote is gone (removed by the client or by you)" if exists
                  else "the config file is gone")
        rows.append(StatusRow(desc.id, desc.display_name, rec.get("file", ""), rec.get("scope", ""),
                              rec.get("name", ""), False, "removed", reason, rec.get("project"),
                              rec.get("policy_key"), pinfo(rec.get("policy_key")),
                              ["removed since install; `synartesis install` forgets it"]))
    # a removed entry joins its own file's rows (new user round 22, #11: listed after every other
    # client, under a second copy of its file's header); the sort is stable, first file first
    groups: dict[tuple[str, str], int] = {}
    rows.sort(key=lambda r: groups.setdefault((r.client, r.file), len(groups)))
    if policy_error is not None:  # every wrapped proxy refuses to start: nothing runs through synartesis
        # the policy's error is said once, above the rows (a new user's round 31, #6: every row
        # also claimed "no server … every call is held", as if the proxy ran)
        rows = [replace(r, covered=False, drift=[*r.drift, "its proxy refuses to start until the policy loads (see above)"])
                if r.covered else r for r in rows]
    launched = {r.policy_key for r in rows if r.policy_key}
    unlaunched = [] if client is not None else [
        {"name": key, "policy": pinfo(key)} for key in declared if key not in launched]
    return StatusReport(rows, files, warnings, str(policy_path), policy_error,
                        policy_exists=pbytes is not None or policy_error is not None, unlaunched=unlaunched,
                        looked_in=found.looked)
