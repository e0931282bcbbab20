"""Shipped policies: recognition, adoption or drafting, and merging into the user's policy.

The three entry points the install and init commands use (INTERFACES.md):

- :func:`recognise` — which shipped policy fits a server entry, from the table in
  ``policies/known.yaml`` (data, not code) and, when the server was started, its
  ``serverInfo.name``.
- :func:`plan_server_policy` — what to write for one server: the shipped policy, re-keyed to the
  client's name, if every tool it names is advertised; otherwise a fail-closed draft from
  ``tools/list`` (``readOnlyHint`` → readonly, noted as the server's own claim; everything else
  irreversible and held, with a TODO and the tool's description as comments).
- :func:`merge_policy_text` — the new text of the user's policy with those servers added,
  keeping the user's comments and rules (ruamel.yaml round trip), validated with
  :func:`synartesis.policy.parse_policy` before it is returned.

Rules come from issue 5, DESIGN §4 and §8, reference-spec §7.2/§7.4 and its gaps 28, 29, 34.
Shipped files are read only through ``importlib.resources.files("synartesis.policies")``.
"""

from __future__ import annotations

import copy
import io
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping

import yaml

from synartesis.errors import PolicyError
from synartesis.services.declared import read_declaration

__all__ = [
    "ServerPolicyPlan",
    "ShippedPolicy",
    "set_pins_text",
    "KnownEntry",
    "SYNARTESIS_NOTE_PREFIX",
    "shipped_ids",
    "load_shipped",
    "load_known",
    "recognise_url",
    "recognise",
    "recognise_command",
    "recognise_server_info",
    "named_tools",
    "draft_rules",
    "plan_server_policy",
    "merge_policy_text",
    "declared_servers",
    "describe_tool",
]

POLICIES_PACKAGE = "synartesis.policies"
KNOWN_FILE = "known.yaml"
#: A server block whose ``note`` starts with this was written by synartesis (init/install),
#: so a later init/install may replace it. Blocks without it belong to the user.
SYNARTESIS_NOTE_PREFIX = "written by synartesis"
_DESCRIPTION_WIDTH = 96


# --------------------------------------------------------------------------------------------
# The plan

@dataclass(frozen=True)
class ServerPolicyPlan:
    """What to write into the user's policy for one server (INTERFACES.md).

    Attributes:
        name: the policy key, equal to the name passed to ``proxy --server``.
        source: ``"shipped"`` or ``"drafted"``.
        policy_id: the shipped policy id (``"filesystem"``, ``"memory"``, …) when one was
            recognised (also set for a draft written because the shipped one did not fit).
        provenance: ``"live"`` / ``"documented"`` for an adopted shipped policy, None (no
            claim) for a draft.
        checked: True when the server was started and every tool the shipped policy names was
            found in its ``tools/list``.
        todo_count: drafted rules still to review (gated irreversible drafts).
        reason: one line for the user: why shipped / why drafted / "not checked …".
        server: the ``servers.NAME`` mapping (command, args, cwd?, env names?, provenance?,
            origin?, note). Never an env value: env entries are ``"${NAME}"`` references.
        rules: tool rules keyed to NAME (``match: "NAME.tool"``), plain dicts.
        comments: comment lines for the top of this server's block (provenance, limits, TODOs).
        rule_comments: one list of comment lines per rule (same order as ``rules``).
        uncovered: advertised tools the adopted shipped policy does not mention (drafted).
        declared: what the server declared about its tools and what the draft made of it,
            one line each (a compensation drafted as compensable, or refused and why).
    """

    name: str
    source: str
    policy_id: str | None
    provenance: str | None
    checked: bool
    todo_count: int
    reason: str
    server: dict
    rules: list[dict]
    comments: list[str]
    rule_comments: list[list[str]] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Shipped policies

@dataclass(frozen=True)
class ShippedPolicy:
    """One ``policies/ID.yaml`` file, parsed.

    Attributes:
        id: the file name without ``.yaml``.
        key: its placeholder server key (the first key under ``servers:``; equals ``id``).
        text: the file's text.
        server: the placeholder ``servers.KEY`` mapping.
        rules: the ``tools`` list (plain dicts, still keyed to ``key``).
        rule_comments: the comment lines written just before each rule in the file.
        header: the file's leading comment lines (without ``# ``).
        provenance: ``servers.KEY.provenance`` (``live``/``documented``/None).
    """

    id: str
    key: str
    text: str
    server: dict
    rules: list[dict]
    rule_comments: list[list[str]]
    header: list[str]
    provenance: str | None


def _policies_dir():
    return resources.files(POLICIES_PACKAGE)


def shipped_ids() -> list[str]:
    """Ids of every shipped policy (``policies/*.yaml`` except ``known.yaml``), sorted."""
    out = []
    for entry in _policies_dir().iterdir():
        name = entry.name
        if name.endswith(".yaml") and name != KNOWN_FILE:
            out.append(name[: -len(".yaml")])
    return sorted(out)


@lru_cache(maxsize=None)
def load_shipped(policy_id: str) -> ShippedPolicy:
    """Read and parse ``policies/<policy_id>.yaml``.

    Raises:
        PolicyError: no such shipped policy, or the file does not parse (a packaging bug).
    """
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", policy_id or "") or policy_id == "known":
        raise PolicyError(f"there is no shipped policy called {policy_id!r}")
    entry = _policies_dir() / f"{policy_id}.yaml"
    try:
        text = entry.read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        raise PolicyError(f"there is no shipped policy called {policy_id!r}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"shipped policy {policy_id}.yaml does not parse: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("servers"), dict) or not data["servers"]:
        raise PolicyError(f"shipped policy {policy_id}.yaml has no servers block")
    key = next(iter(data["servers"]))
    server = dict(data["servers"][key] or {})
    rules = [dict(r) for r in (data.get("tools") or [])]
    header, rule_comments = _shipped_comments(text, len(rules))
    return ShippedPolicy(id=policy_id, key=key, text=text, server=server, rules=rules,
                         rule_comments=rule_comments, header=header,
                         provenance=server.get("provenance"))


def _shipped_comments(text: str, n_rules: int) -> tuple[list[str], list[list[str]]]:
    """The leading header comment and the comments just before each rule.

    Shipped files are written in one layout (each rule starts with ``  - `` under a top-level
    ``tools:``), so this is a plain line scan; a count mismatch gives no rule comments.
    """
    lines = text.splitlines()
    header: list[str] = []
    for line in lines:
        if line.startswith("#"):
            header.append(line[1:].removeprefix(" ").rstrip())
        elif line.strip():
            break
        else:
            header.append("")
    while header and not header[-1]:
        header.pop()
    rule_comments: list[list[str]] = []
    in_tools = False
    pending: list[str] = []
    for line in lines:
        if not in_tools:
            in_tools = line.rstrip() == "tools:"
            continue
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped[1:].removeprefix(" ").rstrip())
        elif line.startswith("  - ") or line.startswith("- "):
            rule_comments.append(pending)
            pending = []
        elif not stripped:
            pending = []
    if len(rule_comments) != n_rules:
        rule_comments = [[] for _ in range(n_rules)]
    return header, rule_comments


# --------------------------------------------------------------------------------------------
# Recognition (policies/known.yaml)

@dataclass(frozen=True)
class KnownEntry:
    """One ``policies.ID`` entry of ``known.yaml`` (all values lower-cased)."""

    id: str
    packages: tuple[str, ...] = ()
    executables: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    server_info: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()


_KNOWN_KEYS = {"packages", "executables", "modules", "images", "paths", "server_info", "urls"}


@lru_cache(maxsize=1)
def load_known() -> tuple[KnownEntry, ...]:
    """The recognition table, in file order.

    Raises:
        PolicyError: ``known.yaml`` is missing or malformed (a packaging bug).
    """
    try:
        text = (_policies_dir() / KNOWN_FILE).read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as exc:
        raise PolicyError(f"the recognition table {KNOWN_FILE} cannot be read: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("policies"), dict):
        raise PolicyError(f"the recognition table {KNOWN_FILE} has no policies: mapping")
    out = []
    for pid, spec in data["policies"].items():
        spec = spec or {}
        unknown = set(spec) - _KNOWN_KEYS
        if unknown:
            raise PolicyError(f"{KNOWN_FILE}: policies.{pid} has unknown keys {sorted(unknown)}")
        out.append(KnownEntry(id=str(pid), **{k: tuple(str(v).lower() for v in spec.get(k) or ())
                                              for k in _KNOWN_KEYS}))
    return tuple(out)


_SCRIPT_EXT = re.compile(r"\.(?:js|mjs|cjs|ts|py|pyw|exe|cmd|bat|ps1|sh)$", re.I)
_PYPI_SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:(?:==|>=|<=|~=|!=|<|>|===).*)?$")


def _strip_version(token: str) -> str:
    """Drop npm ``@version``, PyPI ``==version``/extras and docker ``:tag``/``@digest``."""
    t = token.strip().strip("'\"")
    if "@sha256:" in t:
        t = t.split("@sha256:", 1)[0]
    # npm: "@scope/name@1.2.3", "name@latest"
    at = t.rfind("@")
    if at > 0 and "/" not in t[at:] and "\\" not in t[at:]:
        t = t[:at]
    m = _PYPI_SPEC.match(t)
    if m and m.group(1) != t:
        t = m.group(1)
    # docker "image:tag" (not a Windows drive, not a URL scheme)
    if "\\" not in t and ":" in t and not re.match(r"^[A-Za-z]:", t) and "://" not in t:
        head, _, tail = t.rpartition(":")
        if head and "/" not in tail:
            t = head
    return t


def _image_forms(token: str) -> str:
    t = _strip_version(token).lower()
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if t.startswith(prefix):
            t = t[len(prefix):]
    if t.startswith("library/"):
        t = t[len("library/"):]
    return t


def _segments(token: str) -> list[str]:
    return [s for s in re.split(r"[\\/]+", token.lower()) if s]


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    if not needle or len(needle) > len(haystack):
        return False
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


def _token_matches(token: str, entry: KnownEntry) -> bool:
    raw = token.strip().strip("'\"")
    if not raw or raw.startswith("-"):
        return False
    plain = _strip_version(raw).lower()
    if plain in entry.packages or plain in entry.executables or plain in entry.modules:
        return True
    if _image_forms(raw) in entry.images:
        return True
    if "/" in raw or "\\" in raw:
        segs = _segments(raw)
        if segs:
            base = _SCRIPT_EXT.sub("", segs[-1])
            if base in entry.executables:
                return True
        stripped = segs[:-1] + [_SCRIPT_EXT.sub("", segs[-1])] if segs else segs
        needles = [*entry.packages, *entry.paths, *(m.replace(".", "/") for m in entry.modules)]
        for needle in needles:
            n = _segments(needle)
            if _contains_run(segs, n) or _contains_run(stripped, n):
                return True
    return False


def _argv_tokens(command: str, args: Iterable[str]) -> list[str]:
    tokens: list[str] = []
    for t in [command, *args]:
        if not isinstance(t, str):
            continue
        if t.startswith("-") and "=" in t:  # --from=mcp-server-git
            tokens.append(t.split("=", 1)[1])
        else:
            tokens.append(t)
    return tokens


def recognise_command(command: str, args: list[str]) -> str | None:
    """The shipped policy id for a command line, or None.

    The first token (in argv order) that matches any entry of ``known.yaml`` decides; matching
    is exact after normalisation (see the comment at the top of ``known.yaml``), never a
    substring search (reference-spec §10 gap 34).
    """
    known = load_known()
    for token in _argv_tokens(command or "", args or []):
        if token.startswith(("http://", "https://")):  # a remote server's URL (remote-relay --url …)
            by_url = recognise_url(token)
            if by_url:
                return by_url
            continue
        for entry in known:
            if _token_matches(token, entry):
                return entry.id
    return None


def _url_matches(host: str, path: str, pattern: str) -> bool:
    p_host, _, p_path = pattern.partition("/")
    if p_host.startswith("*."):
        if not host.endswith(p_host[1:]) or host == p_host[2:]:
            return False
    elif host != p_host:
        return False
    want = "/" + p_path.strip("/") if p_path.strip("/") else ""
    return not want or path == want or path.startswith(want + "/")


def recognise_url(url: str | None) -> str | None:
    """The shipped policy id whose ``urls`` (in ``known.yaml``) match a remote entry's URL.

    The host must match exactly (``*.example.com``: any subdomain), the pattern's path must be
    a prefix of the URL's at a ``/`` boundary; scheme, port, query, credentials and a trailing
    slash do not matter. A URL that still holds an unexpanded reference matches nothing.
    """
    if not url or not isinstance(url, str) or "${" in url:
        return None
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return None
    if not host:
        return None
    path = "/" + parts.path.strip("/") if parts.path.strip("/") else ""
    for entry in load_known():
        if any(_url_matches(host, path.lower(), pattern) for pattern in entry.urls):
            return entry.id
    return None


def recognise_server_info(name: str | None) -> str | None:
    """The shipped policy id whose ``server_info`` list holds ``name`` (case-insensitive)."""
    if not name or not isinstance(name, str):
        return None
    low = name.strip().lower()
    for entry in load_known():
        if low in entry.server_info:
            return entry.id
    return None


def recognise(command: str, args: list[str], server_info_name: str | None = None) -> str | None:
    """Shipped policy id for a server entry, from the table in ``policies/known.yaml``.

    Args:
        command, args: the entry's command line as the client starts it.
        server_info_name: ``serverInfo.name`` from the handshake, when the server was started.
    Returns:
        The id (``"filesystem"``, ``"git"``, …) or None. When the command line names one
        policy and ``serverInfo.name`` is known to belong to another, None (a wrapper or fork
        we cannot vouch for). A ``serverInfo.name`` alone recognises an entry whose command
        line says nothing (a wrapper script).
    """
    by_cmd = recognise_command(command, args)
    by_info = recognise_server_info(server_info_name)
    if by_cmd and by_info and by_cmd != by_info:
        return None
    return by_cmd or by_info


# --------------------------------------------------------------------------------------------
# Rules: naming, re-keying, drafting

def _call_templates(rule: dict) -> list[dict]:
    out = []
    for key in ("snapshot", "verify"):
        if isinstance(rule.get(key), dict):
            out.append(rule[key])
    inv = rule.get("inverse")
    if isinstance(inv, dict):
        out.append(inv)
    elif isinstance(inv, list):
        out.extend(c for c in inv if isinstance(c, dict))
    return out


def named_tools(rules: list[dict], key: str) -> dict[str, list[str]]:
    """Tools of server ``key`` a policy names: exact ``match`` names and every snapshot,
    inverse and verify tool. Returns ``{tool: [where, …]}`` (``where`` like
    ``"match"`` or ``"write_file's inverse"``). Glob matches name no tool."""
    out: dict[str, list[str]] = {}
    for rule in rules:
        match = str(rule.get("match", ""))
        server, _, tool = match.partition(".")
        label = tool or match
        if server == key and tool and "*" not in tool:
            out.setdefault(tool, []).append("match")
        for part in ("snapshot", "verify", "inverse"):
            calls = rule.get(part)
            calls = calls if isinstance(calls, list) else [calls] if isinstance(calls, dict) else []
            for call in calls:
                s, _, t = str(call.get("tool", "")).partition(".")
                if s == key and t:
                    out.setdefault(t, []).append(f"{label}'s {part}")
    return out


def _rekey(value: Any, old: str, new: str) -> Any:
    """Deep copy of a rule with ``old.`` replaced by ``new.`` in ``match`` and call ``tool``."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("match", "tool") and isinstance(v, str) and v.startswith(old + "."):
                out[k] = new + v[len(old):]
            else:
                out[k] = _rekey(v, old, new)
        return out
    if isinstance(value, list):
        return [_rekey(v, old, new) for v in value]
    return copy.deepcopy(value)


def describe_tool(tool: dict, width: int = _DESCRIPTION_WIDTH) -> str:
    """A tool's description on one line (whitespace collapsed, truncated to ``width``)."""
    desc = tool.get("description") or tool.get("title") or ""
    desc = " ".join(str(desc).split())
    if len(desc) > width:
        desc = desc[: width - 1].rstrip() + "…"
    return desc


def _glob_safe(name: str) -> bool:
    return bool(name) and "*" not in name


def draft_rules(name: str, tools: list[dict], *, advertised: Iterable[str] | None = None,
                notes: list[str] | None = None) -> tuple[list[dict], list[list[str]], int]:
    """A fail-closed rule per tool (issue 5 item 4; reference-spec §7.2 init), using what the
    server declares (issue 10 item 9, :mod:`synartesis.services.declared`).

    ``annotations.readOnlyHint is True`` (or ``_meta`` reversibility ``readonly``) →
    ``readonly`` with a note that this is the server's own claim; a compensation declared in
    ``_meta["dev.chronomcp/compensate"]`` with static paths → ``compensable`` with its inverse,
    still held (``gate: always``) with a TODO until the person has checked it; everything else
    (a refused compensation, contradicting claims, no claim) → ``irreversible`` (held) with a
    TODO. Each rule's comments carry the tool's description and what the server declared.

    Args:
        advertised: every tool name the server lists (default: the names in ``tools``); a
            declared compensation must name one of them.
        notes: when given, one line per declared compensation (drafted or refused, and why)
            is appended, for init's and install's output.
    Returns:
        (rules, rule_comments, todo_count)
    """
    names = set(advertised) if advertised is not None else {
        t.get("name") for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
    rules: list[dict] = []
    comments: list[list[str]] = []
    todo = 0
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        tname = tool.get("name")
        if not isinstance(tname, str) or not _glob_safe(tname):
            continue
        desc = describe_tool(tool)
        ann = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
        lines = [f"{tname}: {desc}" if desc else f"{tname}: (no description)"]
        declared = read_declaration(name, tool, names)
        lines += declared.lines
        if notes is not None:
            notes.extend(declared.notes)
        if declared.cls == "compensable":
            todo += 1
            rules.append({"match": f"{name}.{tname}", "class": "compensable", "gate": "always",
                          "inverse": declared.inverse,
                          "note": "compensation declared by the server (dev.chronomcp/compensate), not checked"})
        elif declared.cls == "readonly" or (declared.cls is None and ann.get("readOnlyHint") is True):
            if declared.cls is None:
                lines.append("readonly because the server says so (readOnlyHint); verify it before relying on it.")
            rules.append({"match": f"{name}.{tname}", "class": "readonly",
                          "note": "readonly from the server's own claim" if declared.cls else
                          "readonly from the server's own readOnlyHint claim"})
        else:
            todo += 1
            lines += ["TODO: held for approval until you decide. If it changes nothing, make it",
                      "readonly; if a tool of this server can put things back, write a snapshot",
                      "and an inverse (reversible/compensable); else leave it irreversible."]
            rules.append({"match": f"{name}.{tname}", "class": "irreversible", "gate": "always"})
        comments.append(lines)
    return rules, comments, todo


def _server_block(command: str, args: list[str], *, cwd: str | None, provenance: str | None,
                  origin: dict | None, env: dict | None, note: str) -> dict:
    from synartesis.redact import redact_argv
    shown, hidden = redact_argv([str(a) for a in args])
    block: dict[str, Any] = {"command": command, "args": shown}
    if hidden and origin:
        note = (note + "; " if note else "") + "secret arguments are not copied here: the client entry's are used"
    if cwd:
        block["cwd"] = cwd
    if env:
        block["env"] = dict(env)
    if provenance:
        block["provenance"] = provenance
    if origin:
        block["origin"] = {k: v for k, v in origin.items()
                           if isinstance(v, (str, int, float, bool)) or v is None}
    block["note"] = note
    return block


def plan_server_policy(name: str, command: str, args: list[str], *, tools: list[dict] | None,
                       server_info: dict | None, origin: dict | None,
                       env_names: Iterable[str] | None = None,
                       cwd: str | None = None) -> ServerPolicyPlan:
    """Decide what to write for one server: the shipped policy or a fail-closed draft.

    Args:
        name: the client's name for the server (the policy key).
        command, args: how the client starts it (recorded as the server's command line).
        tools: its ``tools/list`` (all pages); None when it was not started (``--no-start``
            or it failed to start).
        server_info: ``serverInfo`` from the handshake, or None.
        origin: where the entry lives (``{client, file, scope, entry}``), written as
            ``servers.NAME.origin``; plain values only.
        env_names: names of the env variables the client entry sets. A shipped policy that
            declares one of them (memory's ``MEMORY_FILE_PATH``) gets ``NAME: "${NAME}"``;
            values are never seen or written.
        cwd: the entry's working directory, if it has one.
    Returns:
        A :class:`ServerPolicyPlan`. A shipped policy is adopted only when every tool it
        names is advertised (issue 5 item 3); advertised tools it does not mention are
        appended as drafted rules. With ``tools`` None, a recognised server gets the shipped
        policy marked "not checked against this install", an unknown one a single
        ``NAME.*`` rule that holds everything.
    Raises:
        PolicyError: ``name`` is not usable as a policy key.
    """
    if not isinstance(name, str) or not name.strip() or "." in name or "__" in name or "*" in name:
        raise PolicyError(f'server name {name!r} cannot be a policy key: it may not be empty or '
                          f'contain ".", "__" or "*"')
    args = [str(a) for a in (args or [])]
    info_name = server_info.get("name") if isinstance(server_info, dict) else None
    info_name = info_name if isinstance(info_name, str) else None
    pid = recognise(command, args, info_name)
    shipped: ShippedPolicy | None = None
    if pid is not None:
        try:
            shipped = load_shipped(pid)
        except PolicyError:
            shipped = None
    env_names = set(env_names or ())
    version = server_info.get("version") if isinstance(server_info, dict) else None
    who = f"{info_name} {version or ''}".strip() if info_name else command

    if shipped is not None:
        needed = named_tools(shipped.rules, shipped.key)
        rules = [_rekey(r, shipped.key, name) for r in shipped.rules]
        env = {k: "${" + k + "}" for k in (shipped.server.get("env") or {}) if k in env_names}
        header = [f"{name}: the shipped {pid} policy (provenance: {shipped.provenance or 'no claim'})."]
        header += [f"  {line}" for line in shipped.header if line.strip()]
        if tools is None:
            reason = (f"shipped {pid} policy ({shipped.provenance or 'no claim'}), not checked "
                      f"against this install: its tool list was not read (--no-start, or it did not start or answer)")
            header.insert(1, "NOT CHECKED against this install (its tool list was not read); "
                             "run `synartesis check` to check it.")
            block = _server_block(command, args, cwd=cwd, provenance=shipped.provenance,
                                  origin=origin, env=env,
                                  note=f"{SYNARTESIS_NOTE_PREFIX}: shipped {pid} policy, not checked against this install")
            return ServerPolicyPlan(name=name, source="shipped", policy_id=pid,
                                    provenance=shipped.provenance, checked=False, todo_count=0,
                                    reason=reason, server=block, rules=rules, comments=header,
                                    rule_comments=[list(c) for c in shipped.rule_comments])
        advertised = {t.get("name") for t in tools if isinstance(t, dict)}
        missing = sorted(t for t in needed if t not in advertised)
        if not missing:
            covered_rx = [re.compile("[^.]*".join(re.escape(p) for p in str(r["match"]).split("*")))
                          for r in rules]
            extra = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)
                     and not any(rx.fullmatch(f"{name}.{t['name']}") for rx in covered_rx)]
            declared: list[str] = []
            d_rules, d_comments, todo = draft_rules(name, extra, notes=declared,
                                                    advertised=[t["name"] for t in tools if isinstance(t, dict)
                                                                and isinstance(t.get("name"), str)])
            if d_comments:
                d_comments[0] = [f"Not mentioned by the shipped {pid} policy, so drafted here:"] + d_comments[0]
            reason = (f"shipped {pid} policy ({shipped.provenance or 'no claim'}): every tool it names "
                      f"is advertised by {who}")
            if extra:
                reason += f"; {len(extra)} more advertised tool(s) drafted"
            header.insert(1, f"Checked against this install ({who}): all {len(needed)} tools it names are advertised.")
            block = _server_block(command, args, cwd=cwd, provenance=shipped.provenance,
                                  origin=origin, env=env,
                                  note=f"{SYNARTESIS_NOTE_PREFIX}: shipped {pid} policy")
            return ServerPolicyPlan(name=name, source="shipped", policy_id=pid,
                                    provenance=shipped.provenance, checked=True, todo_count=todo,
                                    reason=reason, server=block, rules=rules + d_rules,
                                    comments=header,
                                    rule_comments=[list(c) for c in shipped.rule_comments] + d_comments,
                                    uncovered=[t["name"] for t in extra], declared=declared)
        # recognised, but the shipped policy names tools this server does not have
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        why = (f"recognised as {pid}, but {who} does not advertise {shown}, so the shipped policy "
               f"was not used; drafted a fail-closed policy")
        return _drafted(name, command, args, tools, cwd=cwd, origin=origin, pid=pid, reason=why)

    if tools is None:
        block = _server_block(command, args, cwd=cwd, provenance=None, origin=origin, env=None,
                              note=f"{SYNARTESIS_NOTE_PREFIX}: placeholder, server not started")
        reason = ("unknown server, not started: every tool is held until you run "
                  f"`synartesis init {name} -- …` or write rules")
        comments = [f"{name}: no policy yet. The server was not started, so its tools are unknown;",
                    "the rule below holds every call. TODO: start it once with `synartesis check`",
                    "and write real rules (or re-run install without --no-start)."]
        return ServerPolicyPlan(name=name, source="drafted", policy_id=None, provenance=None,
                                checked=False, todo_count=1, reason=reason, server=block,
                                rules=[{"match": f"{name}.*", "class": "irreversible", "gate": "always"}],
                                comments=comments,
                                rule_comments=[["TODO: catch-all: everything this server does is held."]])
    why = (f"no shipped policy for {who}; drafted a fail-closed policy from its "
           f"{len(tools)} advertised tool(s)")
    return _drafted(name, command, args, tools, cwd=cwd, origin=origin, pid=None, reason=why)


def _drafted(name: str, command: str, args: list[str], tools: list[dict], *, cwd: str | None,
             origin: dict | None, pid: str | None, reason: str) -> ServerPolicyPlan:
    declared: list[str] = []
    rules, rule_comments, todo = draft_rules(name, tools, notes=declared)
    drafted = sum(1 for r in rules if r.get("class") == "compensable")
    if declared:
        reason += (f"; {drafted} compensation(s) declared by the server drafted (not checked, held)"
                   if drafted else "") + (f"; {len(declared) - drafted} declaration(s) refused"
                                          if len(declared) > drafted else "")
    comments = [f"{name}: drafted by synartesis from the server's tools/list (no claim: provenance unset).",
                f"  {reason}.",
                "  Tools marked readonly say so themselves (readOnlyHint); compensations the server",
                "  declares are drafted but not checked; everything is held for approval until",
                f"  reviewed. {todo} TODO(s) below: review them, then run `synartesis check`."]
    block = _server_block(command, args, cwd=cwd, provenance=None, origin=origin, env=None,
                          note=f"{SYNARTESIS_NOTE_PREFIX}: drafted from tools/list")
    return ServerPolicyPlan(name=name, source="drafted", policy_id=pid, provenance=None,
                            checked=False, todo_count=todo, reason=reason, server=block,
                            rules=rules, comments=comments, rule_comments=rule_comments,
                            declared=declared)


# --------------------------------------------------------------------------------------------
# Merging into the user's policy (ruamel.yaml round trip: comments and layout kept)

def _ruamel():
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    return y


def _load_rt(y: Any, src: str, filename: str) -> Any:
    """``src`` loaded by the round-trip loader ``y``.

    Raises:
        PolicyError: not valid YAML (with line and column when the parser names them).
    """
    from ruamel.yaml.error import YAMLError as RYAMLError

    try:
        return y.load(src)
    except RYAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            raise PolicyError(f"the policy is not valid YAML: {getattr(exc, 'problem', exc)}",
                              filename, mark.line + 1, mark.column + 1) from None
        raise PolicyError(f"the policy is not valid YAML: {exc}", filename) from None


def _to_node(value: Any, *, flow: bool = False, key: str | None = None):
    """Plain value → ruamel nodes (small maps/lists in flow style, references quoted)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = _to_node(v, flow=flow or k in ("args", "when", "env", "origin", "pins")
                            and _small(v), key=k)
        if flow:
            m.fa.set_flow_style()
        return m
    if isinstance(value, list):
        s = CommentedSeq([_to_node(v, flow=True if not isinstance(v, (dict, list)) else flow)
                          for v in value])
        if flow or all(not isinstance(v, (dict, list)) for v in value):
            s.fa.set_flow_style()
        return s
    if isinstance(value, str):
        if key in ("class", "gate", "provenance", "sql_arg") and re.fullmatch(r"[a-z_]+", value):
            return value
        return DoubleQuotedScalarString(value)
    return value


def _small(v: Any) -> bool:
    if isinstance(v, dict):
        return len(v) <= 4 and all(not isinstance(x, (dict, list)) or (isinstance(x, list) and len(x) <= 4)
                                   for x in v.values())
    if isinstance(v, list):
        return all(not isinstance(x, (dict, list)) for x in v)
    return True


_COMMENT_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def _comment_line(line: str) -> str:
    """One comment line as it may be written: a line break or control character (a tool name
    or description from a server can hold any) would end the comment and let the rest be read
    as policy, or make the file unreadable; each becomes a space."""
    return _COMMENT_UNSAFE.sub(" ", str(line))


def _comment_text(lines: list[str]) -> str:
    return "\n".join(_comment_line(x) for x in lines) if lines else ""


def _rule_identity(rule: Any) -> tuple[str, str]:
    from synartesis.canonical import canonical

    match = str(rule.get("match", "")) if hasattr(rule, "get") else ""
    when = rule.get("when") if hasattr(rule, "get") else None
    return match, canonical(_plain(when)) if when is not None else ""


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def _is_draft_shape(rule: Any) -> bool:
    """A rule that only holds a tool (what a draft writes): safe to upgrade to a shipped rule."""
    keys = set(rule.keys()) if hasattr(rule, "keys") else set()
    return keys <= {"match", "class", "gate", "note"} and rule.get("class") == "irreversible" \
        and rule.get("gate", "always") == "always"


def _ours(block: Any) -> bool:
    if not hasattr(block, "get"):
        return False
    note = block.get("note")
    return isinstance(note, str) and note.startswith(SYNARTESIS_NOTE_PREFIX)


def declared_servers(text: str | None) -> dict[str, bool]:
    """Servers declared in a policy text: ``{name: written_by_synartesis}``.

    Raises:
        PolicyError: the text is not YAML (with line:col).
    """
    if not text or not text.strip():
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"the policy is not valid YAML: {exc}") from None
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}
    return {str(k): _ours(v) for k, v in servers.items()}


def merge_policy_text(existing: str | None, plans: list[ServerPolicyPlan],
                      filename: str = "synartesis.yaml") -> str:
    """New text of the user policy: these servers added, the user's comments and rules kept.

    For each plan: a server NAME not in the file is added (block and rules, with the plan's
    comments). A NAME whose block synartesis wrote (its ``note`` starts with
    ``written by synartesis``) is replaced: the block is rewritten, rules the plan brings are
    added, a rule with the same ``match``/``when`` is replaced only if it is a bare held
    draft, and every other existing rule — the user's own — is kept untouched.

    Args:
        existing: the current file's text, or None / empty for a new file.
        plans: from :func:`plan_server_policy`.
        filename: used in error locations.
    Returns:
        The new text, already validated with :func:`synartesis.policy.parse_policy`.
    Raises:
        PolicyError: the existing text is not a policy we can extend (not YAML, not a mapping,
            ``servers``/``tools`` of the wrong type), a NAME is declared by the user (not by
            synartesis), or the result does not validate (FILE:LINE:COL).
    """
    new_file = not existing or not existing.strip()
    if new_file:
        # A new file has no comments to keep: render it directly (a round-trip dump of a
        # hundred servers costs about a second, the whole budget of `install`).
        text = _render_new(plans)
        _validate(text, filename)
        return text
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    y = _ruamel()
    prefix = ""
    if new_file:
        doc = CommentedMap()
        doc["version"] = 1
        doc["servers"] = CommentedMap()
        doc["tools"] = CommentedSeq()
        doc.yaml_set_start_comment(
            "synartesis policy: what each MCP tool call is, and how to undo it.\n"
            "Written by synartesis; edit freely (comments and your rules are kept when it adds\n"
            "servers). Reference: the policy language in the synartesis README; check it with\n"
            "`synartesis check`. A tool no rule matches is irreversible and held for approval.")
        y.indent(mapping=2, sequence=4, offset=2)
        map_indent, dash_offset = 2, 2
    else:
        bom = existing.startswith("\ufeff")
        src = existing[1:] if bom else existing
        doc = _load_rt(y, src, filename)
        if doc is None:  # only comments (or nothing): keep them verbatim above a new body
            doc = CommentedMap()
            doc["version"] = 1
            doc["servers"] = CommentedMap()
            doc["tools"] = CommentedSeq()
            prefix = src if src.endswith("\n") else src + "\n"
        if not isinstance(doc, CommentedMap):
            raise PolicyError("the policy is not a mapping (version, servers, tools), so it "
                              "cannot be extended automatically", filename, 1, 1)
        map_indent, dash_offset = _guess_layout(src)
        y.indent(mapping=map_indent, sequence=dash_offset + 2, offset=dash_offset)
        if "version" not in doc:
            doc.insert(0, "version", 1)
        if doc.get("servers") is None:
            doc["servers"] = CommentedMap()
        if doc.get("tools") is None:
            doc["tools"] = CommentedSeq()
        if not isinstance(doc["servers"], CommentedMap):
            raise PolicyError("servers is not a mapping, so the policy cannot be extended", filename)
        if not isinstance(doc["tools"], CommentedSeq):
            raise PolicyError("tools is not a list, so the policy cannot be extended", filename)
        doc["servers"].fa.set_block_style()
        doc["tools"].fa.set_block_style()

    servers: CommentedMap = doc["servers"]
    tools: CommentedSeq = doc["tools"]
    indent_servers = map_indent if not new_file else 2
    existing_ids = {_rule_identity(r): i for i, r in enumerate(tools) if hasattr(r, "get")}
    for plan in plans:
        if plan.name in servers and not _ours(servers[plan.name]):
            raise PolicyError(f"{plan.name} is already declared in {filename} by you (its note does "
                              f"not say it was written by synartesis); remove it or choose another name")
        replacing = plan.name in servers
        old_block = servers.get(plan.name) if replacing else None
        block = _to_node(plan.server)
        if replacing and hasattr(old_block, "get") and old_block.get("pins"):
            block["pins"] = old_block["pins"]  # pins are the user's review; keep them
        if replacing:
            servers[plan.name] = block
        else:
            servers[_yaml_key(plan.name)] = block
            if plan.comments:
                servers.yaml_set_comment_before_after_key(plan.name, before=_comment_text(plan.comments),
                                                          indent=indent_servers)
        first_new = True
        for j, rule in enumerate(plan.rules):
            ident = _rule_identity(rule)
            comments = plan.rule_comments[j] if j < len(plan.rule_comments) else []
            if ident in existing_ids:
                idx = existing_ids[ident]
                current = tools[idx]
                if _plain(current) == _plain(rule):
                    continue
                if plan.source == "shipped" and _is_draft_shape(current) and not _is_draft_shape(rule):
                    tools[idx] = _to_node(rule)
                continue  # the user's rule wins
            tools.append(_to_node(rule))
            existing_ids[ident] = len(tools) - 1
            lines = list(comments)
            if first_new:
                lines = [f"--- {plan.name}: {'shipped ' + plan.policy_id + ' policy' if plan.source == 'shipped' else 'drafted'}"
                         f" (added by synartesis) ---"] + lines
                first_new = False
            if lines:
                tools.yaml_set_comment_before_after_key(len(tools) - 1, before=_comment_text(lines),
                                                        indent=indent_servers)
    buf = io.StringIO()
    y.dump(doc, buf)
    text = prefix + _fffd_escaped(buf.getvalue())
    if not new_file and existing.startswith("\ufeff"):
        text = "\ufeff" + text
    if not new_file and "\r\n" in existing:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    _validate(text, filename)
    return text


NEW_FILE_HEADER = (
    "synartesis policy: what each MCP tool call is, and how to undo it.\n"
    "Written by synartesis; edit freely (comments and your rules are kept when it adds\n"
    "servers). Reference: the policy language in the synartesis README; check it with\n"
    "`synartesis check`. A tool no rule matches is irreversible and held for approval.")


#: Plain scalars YAML 1.1 reads as something other than a string (PyYAML resolves these).
_YAML_SPECIAL = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"})


def _plain_key(name: str) -> bool:
    """True when ``name`` can be written as a plain YAML key and reads back as the same string.

    ``true``, ``NULL``, ``on``, ``0x10``, ``1_000``, ``2024-01-01`` and ``.inf`` cannot (YAML reads
    a boolean, null, a number or a date: issue 9 item 4); they are written double-quoted.
    """
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name)) and name.lower() not in _YAML_SPECIAL


def _yaml_key(name: str):
    """A server key for the ruamel round trip: double-quoted unless :func:`_plain_key`."""
    if _plain_key(name):
        return name
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    return DoubleQuotedScalarString(name)


# Characters YAML may not hold literally (outside its printable set) or that read badly:
# C1 controls (U+0085 NEL reads as a line break), DEL, U+FEFF, U+FFFE/U+FFFF, line/paragraph separators and U+FFFD.
_YAML_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffd\ufffe\uffff]")


def _yaml_value(value: Any) -> str:
    """A value as YAML flow text (JSON is valid YAML; JSON's ``\\uXXXX`` escapes are YAML's too).

    Characters YAML cannot print (a DEL or C1 control in a server's argument made the whole
    install fail validation) and U+FFFD are written as escapes.
    """
    return _YAML_UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def _fffd_escaped(text: str) -> str:
    """ruamel's dump with U+FFFD (``refuse_when`` of binary reads) back as the escape the
    policies write, ``"\\ufffd"``: ruamel prints the character itself, which means the same
    inside a double-quoted scalar but reads worse."""
    return text.replace('"\ufffd"', '"\\ufffd"')


def _original_lines_kept(src: str, dumped: str) -> str:
    """``dumped`` (ruamel's dump of the edited ``src``) with every changed stretch of lines put
    back as it was in ``src`` wherever that does not change what the text means: the round trip
    re-indents block lists to one layout and prints escapes (``"\\ufffd"``) as characters,
    which changed lines the edit never meant to touch (adversarial review 15, F7; new user round
    14). Each stretch of :class:`difflib.SequenceMatcher`'s line diff is put back in turn and
    kept back only when the whole text still loads (PyYAML) to the same data as ``dumped``.
    """
    import difflib

    import yaml

    try:
        target = yaml.safe_load(dumped)
    except yaml.YAMLError:
        return dumped
    old, new = src.splitlines(keepends=True), dumped.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    use_new = [tag != "equal" for tag, *_ in ops]

    def text() -> str:
        return "".join("".join(new[j1:j2]) if use_new[k] else "".join(old[i1:i2])
                       for k, (_tag, i1, i2, j1, j2) in enumerate(ops))

    for k, (tag, *_rest) in enumerate(ops):
        if tag == "equal":
            continue
        use_new[k] = False
        try:
            same = yaml.safe_load(text()) == target
        except (yaml.YAMLError, RecursionError):
            same = False
        use_new[k] = not same
    return text()


def set_pins_text(existing: str, pins: Mapping[str, Mapping[str, str]], filename: str = "synartesis.yaml") -> str:
    """New text of a policy with ``servers.NAME.pins`` replaced by ``pins[NAME]`` (tool →
    ``sha256:…``, keys sorted) for each NAME given; every other byte's meaning, the comments and
    the layout kept (ruamel.yaml round trip). The result is validated as a policy.

    Raises:
        PolicyError: the text is not YAML or not a policy, a NAME is not a server of it, or
            the result does not validate (with file:line:col).
    """
    from ruamel.yaml.comments import CommentedMap

    y = _ruamel()
    bom = existing.startswith("\ufeff")
    src = existing[1:] if bom else existing
    crlf = "\r\n" in src  # written back with the line ends it came with
    src = src.replace("\r\n", "\n") if crlf else src
    doc = _load_rt(y, src, filename)
    servers = doc.get("servers") if isinstance(doc, CommentedMap) else None
    if not isinstance(servers, CommentedMap):
        raise PolicyError("the policy has no servers mapping to write pins into", filename, 1, 1)
    map_indent, dash_offset = _guess_layout(src)
    y.indent(mapping=map_indent, sequence=dash_offset + 2, offset=dash_offset)
    for name, tools in pins.items():
        if name not in servers:
            raise PolicyError(f"servers.{name} is not in the policy", filename)
        spec = servers[name]
        if not isinstance(spec, CommentedMap):  # `files:` with nothing after it
            spec = servers[name] = CommentedMap()
        block = CommentedMap()
        for tool in sorted(tools):
            block[tool] = tools[tool]
        spec.fa.set_block_style()
        servers.fa.set_block_style()
        spec["pins"] = block
    out = io.StringIO()
    y.dump(doc, out)
    text = _original_lines_kept(src, out.getvalue())
    text = ("\ufeff" if bom else "") + (text.replace("\n", "\r\n") if crlf else text)
    _validate(text, filename)
    return text


def _render_new(plans: list[ServerPolicyPlan]) -> str:
    """The text of a new policy file holding ``plans`` (block style, one key per line)."""
    out = [f"# {line}".rstrip() for line in NEW_FILE_HEADER.splitlines()]
    out += ["version: 1", "servers:"]
    for plan in plans:
        out += [f"  # {_comment_line(line)}".rstrip() for line in plan.comments]
        name = plan.name if _plain_key(plan.name) else _yaml_value(plan.name)
        out.append(f"  {name}:")
        for key, value in plan.server.items():
            out.append(f"    {key}: {_yaml_value(value)}")
    out.append("tools:")
    seen: set[tuple[str, str]] = set()
    for plan in plans:
        first = True
        for j, rule in enumerate(plan.rules):
            ident = _rule_identity(rule)
            if ident in seen:
                continue
            seen.add(ident)
            lines = list(plan.rule_comments[j]) if j < len(plan.rule_comments) else []
            if first:
                kind = f"shipped {plan.policy_id} policy" if plan.source == "shipped" else "drafted"
                lines = [f"--- {plan.name}: {kind} (added by synartesis) ---"] + lines
                first = False
            out += [f"  # {_comment_line(line)}".rstrip() for line in lines]
            for n, (key, value) in enumerate(rule.items()):
                out.append(f"  {'-' if n == 0 else ' '} {key}: {_yaml_value(value)}")
    return "\n".join(out) + "\n"


def _guess_layout(text: str) -> tuple[int, int]:
    """(mapping indent, dash offset) of an existing policy, from its ``servers:`` and
    ``tools:`` blocks; (2, 2) when it cannot tell."""
    map_indent, dash_offset = 2, 2
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip() == "servers:":
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.lstrip().startswith("#"):
                    n = len(nxt) - len(nxt.lstrip(" "))
                    if 1 <= n <= 8:
                        map_indent = n
                    break
        if line.rstrip() == "tools:":
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.lstrip().startswith("#"):
                    if nxt.lstrip().startswith("- "):
                        dash_offset = len(nxt) - len(nxt.lstrip(" "))
                    break
    return map_indent, min(dash_offset, 8)


def _validate(text: str, filename: str) -> None:
    from synartesis.policy import parse_policy

    parse_policy(text.lstrip("\ufeff"), filename)
