"""Keeping secrets where the user put them: the one rule set for what may be shown or recorded.

A server's command line and its config entry can carry credentials (``--token ghp_…``,
``-e API_KEY=…``, ``-H "Authorization: Bearer …"``, ``postgres://u:pw@h/db``, a bare
``sk-…``). Synartesis copies command lines into the policy, the journal's launch line, the
install record, diffs and warnings; every such copy goes through this module, which keeps the
shape and hides the values. The real values stay in the client's config, read at launch.

The rules (issue 9 item 3; the table in ``tests/test_redact.py`` pins each of them):

1. **References are never secrets.** A value made only of ``${VAR}`` / ``${env:VAR}``
   references (and an auth scheme word such as ``Bearer``) is kept: it is a name.
2. **Secret-named flags hide their value**: ``--token X``, ``--api-key=X``, ``--client-secret``,
   ``--password``, ``--pat``, ``--key``, ``-k``, ``--access``, ``--pass`` … — a flag is
   secret-named when one of its words (split on ``-``, ``_``, ``.`` and camelCase) is a secret
   word (:data:`SECRET_WORDS`, or a compound such as ``apikey``), or its last word is one that
   names a secret only at the end (``--access PW``; not ``--access-level``). Flags whose last word says the value is a *reference* to a
   secret (``--token-file``, ``--key-path``, ``--token-env``, ``--key-id``) and ``--no-…``
   switches keep their value.
3. **Secret-named assignments hide their value**: ``API_KEY=x`` wherever it appears as one
   argument (docker ``-e``/``--env``, ``env A=B cmd``), ``Password=x`` inside a connection
   string, ``"apiKey": "x"`` inside a JSON argument.
4. **Headers**: after ``-H``/``--header`` every value is hidden except well-known harmless
   headers (``Content-Type``, ``Accept`` …); anywhere else ``Authorization: …``-style values
   with a secret header name are hidden. An auth scheme word stays (``Bearer <secret>``).
5. **URLs**: a password in the userinfo (``://user:<secret>@host``), secret-named query
   parameters (``?api_key=<secret>``), any query parameter whose value is token-shaped
   (``?k=<hex>``: hosted servers use short names), and token-shaped path segments (Zapier-style
   ``/api/mcp/s/<key>/mcp``).
6. **Token-shaped values**, anywhere: known credential prefixes (``ghp_``, ``github_pat_``,
   ``sk-``, ``xoxb-``, ``AKIA``, JWTs, …) and high-entropy strings (:func:`looks_like_token`).
   Paths, package names, versions, UUIDs and ``sha256:`` digests are not tokens.

7. **Helper commands** (``--headers-helper CMD``, a ``headersHelper`` key: a command whose
   output is the secret): the program name is kept; its arguments go through these rules, and
   a JSON object among them is headers, so every value under a non-harmless name is hidden
   (``echo '{"X-H": "<secret>"}'``).

Everything else — paths, words, numbers, package names — is kept as it is.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

__all__ = [
    "SECRET_MARK",
    "DISPLAY_MARK",
    "SECRET_WORDS",
    "redact_argv",
    "redact_arg",
    "redact_string",
    "is_secret_name",
    "is_reference",
    "looks_like_token",
    "secret_parts",
    "scrub",
    "redact_text",
    "redact_member",
    "SECRET_CONTAINERS",
    "redact_command",
]

#: What the policy and the journal's launch line hold in place of a hidden value.
SECRET_MARK = "<secret: read from the client config at launch>"
#: What diffs and messages show in place of a hidden value.
DISPLAY_MARK = "***"

#: Words that make a flag, variable, header or key name secret.
SECRET_WORDS = frozenset({
    "token", "secret", "secrets", "password", "passwd", "passphrase", "pat", "key",
    "apikey", "auth", "authorization", "credential", "credentials", "creds", "bearer", "cookie",
    "cookies", "jwt", "signature", "sig", "dsn", "pw", "otp", "sas", "privatekey",
    "accesskey", "secretkey", "authtoken", "accesstoken", "refreshtoken", "clientsecret",
})
# Words that make a name secret only as its last word (``--access PW``, ``DB_PASS``), since
# ``--access-level`` / ``--pass-through`` name something else.
_SECRET_LAST_WORDS = frozenset({"access", "pass", "passcode", "pin"})
# A flag/name ending in one of these words names where a secret is, not the secret itself.
_REFERENCE_WORDS = frozenset({
    "file", "path", "dir", "directory", "env", "var", "variable", "name", "id", "type", "url", "uri",
    "endpoint", "header", "length", "size", "ttl", "expiry", "expires", "timeout", "count", "prefix",
    "format", "algorithm", "alg", "location", "store", "helper", "cmd", "command", "mode", "source",
    "scope", "scopes", "field", "kind", "provider", "method", "version", "host", "port", "user",
    "username", "login", "hint", "label", "required", "enabled", "disabled", "stdin",
})
# Short flags whose value is a secret by convention (curl/httpie/ssh-style ``-k KEY`` of MCP CLIs).
_SECRET_SHORT_FLAGS = frozenset({"-k"})
_HEADER_FLAGS = frozenset({"-H", "--header", "--headers", "--http-header", "--add-header", "--extra-header"})
_HARMLESS_HEADERS = frozenset({
    "content-type", "accept", "accept-encoding", "accept-language", "user-agent", "cache-control",
    "mcp-protocol-version", "x-request-id", "origin", "referer", "connection", "content-length",
    "x-forwarded-for", "x-forwarded-proto", "host", "pragma",
})
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey", "api-key", "key", "bot"})

_REF_RE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*")
_WORD_SPLIT = re.compile(r"[-_.\s]+|(?<=[a-z0-9])(?=[A-Z])")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*)=(.*)$", re.S)
_HEADER_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*)$", re.S)
_URL_USERINFO_RE = re.compile(r"(?P<pre>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@?#]*:)(?P<pw>[^/\s@?#]+)(?=@)")
_URL_RE = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s?#]*)(?P<path>/[^\s?#]*)")
_PARAM_RE = re.compile(r"(?P<pre>(?:^|[?&;#\s])(?P<name>[A-Za-z0-9_.\-]+)=)(?P<value>[^&;#\s]*)")
_JSON_PAIR_RE = re.compile(r'(?P<pre>"(?P<name>[^"\\\n]{1,64})"\s*:\s*")(?P<value>(?:[^"\\\n]|\\.)*)(?=")')
_SCHEME_RE = re.compile(r"(?i)^(?P<scheme>bearer|basic|token|digest|bot)\s+(?P<cred>\S.*)$", re.S)

# Known credential prefixes, each followed by enough token characters to not be a word.
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|"
    r"gl(?:dt|ft|rt|soat|ptt|cbt|imt|agent)-[A-Za-z0-9_-]{16,}|"
    r"xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}|"
    r"sk-(?:proj-|ant-(?:api|admin)\d*-|svcacct-|or-v1-)?[A-Za-z0-9_-]{16,}|"
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{16,}|"
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|ya29\.[0-9A-Za-z_-]{20,}|"
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|"
    r"npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}|hf_[A-Za-z0-9]{30,}|dop_v1_[a-f0-9]{40,}|"
    r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|"
    r"lin_(?:api|oauth)_[A-Za-z0-9]{20,}|(?:ntn|secret)_[A-Za-z0-9]{30,}|figd_[A-Za-z0-9_-]{20,}|"
    r"gl(?:c|sa)_[A-Za-z0-9_=+/-]{20,}|xai-[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,}|"
    r"pplx-[A-Za-z0-9]{20,}|tvly-[A-Za-z0-9-]{16,}|fc-[a-f0-9]{24,}|sntrys_[A-Za-z0-9_=+/-]{20,}|"
    r"dckr_pat_[A-Za-z0-9_-]{20,}|ATATT[A-Za-z0-9_=-]{20,}"
    r")")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_DIGEST_RE = re.compile(r"(?i)(?:sha1|sha256|sha384|sha512|md5)[:-][0-9a-f]{32,}")
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9+/=_\-.~]+$")
_HEX_RE = re.compile(r"^[0-9a-fA-F]+$")


def is_reference(value: str) -> bool:
    """True when ``value`` is only ``${VAR}``-style references (with at most a scheme word).

    ``"${GITHUB_TOKEN}"``, ``"Bearer ${TOKEN}"``, ``"${env:API_KEY}"`` → True; ``""`` → False.
    """
    if not isinstance(value, str) or "$" not in value:
        return False
    rest = _REF_RE.sub("", value).strip()
    return not rest or rest.lower().rstrip(":") in _SCHEMES


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(name.strip().lstrip("-")) if w]


def is_secret_name(name: str) -> bool:
    """True when a flag, variable, header or key name says its value is a secret.

    ``--api-key``, ``API_KEY``, ``clientSecret``, ``X-Auth-Token``, ``DB_PASSWORD``, ``pat`` →
    True; ``--token-file``, ``KEY_PATH``, ``--no-auth``, ``--keyring``, ``LOG_LEVEL`` → False.
    """
    if not isinstance(name, str) or not name.strip("- "):
        return False
    if name.startswith("--no-"):
        return False
    words = _words(name)
    if not words or words[-1] in _REFERENCE_WORDS:
        return False
    if any(w in SECRET_WORDS for w in words) or words[-1] in _SECRET_LAST_WORDS:
        return True
    joined = "".join(words)
    return any(joined.endswith(c) for c in ("apikey", "secretkey", "accesskey", "privatekey", "authtoken",
                                            "accesstoken", "refreshtoken", "clientsecret", "password",
                                            "passwd", "token", "secret"))


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for c in s:
        counts[c] = counts.get(c, 0) + 1
    n = len(s)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def looks_like_token(value: str) -> bool:
    """True for a credential-shaped string: a known prefix, or a long high-entropy token.

    High entropy means: at least 20 token characters (letters, digits, ``+/=_-.~``), no spaces,
    not a path, URL, dotted name, version, UUID or ``sha256:`` digest; and either at least 32
    hex digits (letters and digits), or both letter cases with Shannon entropy ≥ 3.5 bits per
    character whose character class (lower/upper/digit) changes as often as in a random token
    (CamelCase words change rarely), or 32+ lower-case letters and digits that mix as randomly.
    """
    if not isinstance(value, str) or len(value) < 8:
        return False
    if _PREFIXED.search(value):
        return True
    v = value.strip()
    if len(v) < 20 or len(v) > 4096 or not _TOKEN_CHARS.match(v):
        return False
    if _UUID_RE.match(v) or _DIGEST_RE.search(v):
        return False
    if v.startswith(("/", "./", "../", "~", "@", "-")) or v.count("/") >= 2 or v.count(".") >= 2:
        return False  # a path, a scoped package, a dotted name or version
    core = v.rstrip("=")
    if _HEX_RE.match(core):
        return len(core) >= 32 and bool(re.search(r"[0-9]", core)) and bool(re.search(r"[A-Fa-f]", core))
    letters = [c for c in core if c.isalpha()]
    if len(letters) < 6:
        return False
    upper, lower = any(c.isupper() for c in letters), any(c.islower() for c in letters)
    ent, mix = _entropy(core), _class_changes(core)
    if upper and lower:
        # random base62 changes character class about 60 % of the time; CamelCase words rarely do
        return ent >= 3.5 and (mix >= 0.45 or (mix >= 0.35 and len(core) >= 28 and ent >= 4.3))
    return len(core) >= 32 and ent >= 4.0 and mix >= 0.3 and bool(re.search(r"[0-9]", core))


def _class_changes(s: str) -> float:
    """Share of adjacent character pairs that change class (lower/upper/digit/other)."""
    def cls(ch: str) -> int:
        return 0 if ch.islower() else 1 if ch.isupper() else 2 if ch.isdigit() else 3
    if len(s) < 2:
        return 0.0
    return sum(1 for a, b in zip(s, s[1:]) if cls(a) != cls(b)) / (len(s) - 1)


def _hide(value: str, mark: str) -> str:
    """``value`` with its secret part replaced by ``mark`` (scheme words kept)."""
    m = _SCHEME_RE.match(value)
    if m and not is_reference(m.group("cred")):
        return f"{m.group('scheme')} {mark}"
    return mark


def redact_string(value: str, mark: str = SECRET_MARK) -> str:
    """A free-standing string (no flag context) with every secret part replaced by ``mark``.

    Applies rules 3–6 of the module docstring: a secret-named ``NAME=value``, a secret header
    line, URL passwords and secret query parameters, ``"apiKey": "…"`` pairs and token-shaped
    values. References are kept.
    """
    if not isinstance(value, str) or not value:
        return value
    if is_reference(value):
        return value
    m = _ASSIGN_RE.match(value)
    if m and is_secret_name(m.group(1)) and not "://" in m.group(1):
        inner = m.group(2)
        if not inner or is_reference(inner):
            return value
        return f"{m.group(1)}={_hide(inner, mark)}"
    m = _HEADER_RE.match(value)
    if m and "//" not in m.group(2)[:2] and is_secret_name(m.group(1)):
        inner = m.group(2)
        if not inner or is_reference(inner):
            return value
        return f"{value[:m.start(2)]}{_hide(inner, mark)}"
    m = _SCHEME_RE.match(value)
    if m and (looks_like_token(m.group("cred")) or m.group("scheme").lower() in ("bearer", "basic")) \
            and not is_reference(m.group("cred")):
        return f"{m.group('scheme')} {mark}"
    out = _URL_USERINFO_RE.sub(lambda x: x.group("pre") + (x.group("pw") if is_reference(x.group("pw")) else mark), value)

    def param(x: re.Match[str]) -> str:
        v = x.group("value")
        if v and (is_secret_name(x.group("name")) or looks_like_token(v)) and not is_reference(v):
            return x.group("pre") + mark
        return x.group(0)

    if "://" in out:
        out = _redact_url_paths(out, mark)
    if "=" in out:
        out = _PARAM_RE.sub(param, out)
    if '"' in out and ":" in out:
        out = _JSON_PAIR_RE.sub(lambda x: x.group("pre") + mark
                                if is_secret_name(x.group("name")) and x.group("value")
                                and not is_reference(x.group("value")) else x.group(0), out)
    if looks_like_token(out):
        return mark
    return _PREFIXED.sub(mark, out)


def _redact_url_paths(text: str, mark: str) -> str:
    """``text`` with every token-shaped path segment of its URLs replaced by ``mark``."""
    def url(x: re.Match[str]) -> str:
        segments = x.group("path").split("/")
        return x.group("head") + "/".join(mark if looks_like_token(seg) and not is_reference(seg) else seg
                                          for seg in segments)
    return _URL_RE.sub(url, text)


def redact_command(command: str, mark: str = SECRET_MARK) -> str:
    """A shell command whose output is a secret (rule 7), with its program name kept and the
    secrets among its arguments replaced by ``mark``; unchanged when nothing is hidden.

    ``echo '{"X-H":"TOKEN"}'`` → ``echo '{"X-H":"<mark>"}'``; ``vault read -field=token
    secret/x`` is kept. A command the shell grammar cannot split keeps only its first word.
    """
    import shlex

    if not isinstance(command, str) or not command.strip() or is_reference(command):
        return command
    try:
        words = shlex.split(command)
    except ValueError:
        first = command.split(None, 1)
        return command if len(first) < 2 else f"{first[0]} {mark}"
    if not words:
        return command
    shown, hidden = redact_argv(words[1:], mark)

    def header_value(x: re.Match[str]) -> str:
        name, value = x.group("name"), x.group("value")
        if value and name.lower() not in _HARMLESS_HEADERS and not is_reference(value):
            return x.group("pre") + mark
        return x.group(0)

    for i, arg in enumerate(shown):
        if '"' in arg and ":" in arg and "{" in arg:
            header_shown = _JSON_PAIR_RE.sub(header_value, arg)
            hidden = hidden or header_shown != arg
            shown[i] = header_shown
    return shlex.join([words[0], *shown]) if hidden else command


def _is_helper(flag: str) -> bool:
    """A flag whose value is a command printing a secret (``--headers-helper``)."""
    words = _words(flag)
    return flag.startswith("--") and len(words) >= 2 and words[-1] == "helper"


def redact_arg(flag: str | None, arg: str, mark: str = SECRET_MARK) -> str:
    """One argument, given the flag right before it (``None`` when it is not a flag's value)."""
    if not isinstance(arg, str):
        return arg
    if flag is not None and not (arg.startswith("-") and len(arg) > 1):
        if _names_variables(flag):  # --header-env NAME=VAR, --bearer-env VAR: names, not values
            return arg
        if _is_helper(flag):
            return redact_command(arg, mark)
        if flag in _HEADER_FLAGS:
            m = _HEADER_RE.match(arg)
            if m and m.group(1).lower() not in _HARMLESS_HEADERS and m.group(2) \
                    and not is_reference(m.group(2)):
                return f"{arg[:m.start(2)]}{_hide(m.group(2), mark)}"
            return redact_string(arg, mark)
        if _flag_is_secret(flag):
            return arg if (not arg or is_reference(arg) or _is_path(arg)) else _hide(arg, mark)
    if arg.startswith("-") and "=" in arg:
        name, _, value = arg.partition("=")
        if _is_helper(name):
            return f"{name}={redact_command(value, mark)}"
        if _flag_is_secret(name):
            return arg if (not value or is_reference(value)) else f"{name}={_hide(value, mark)}"
        if name in _HEADER_FLAGS:
            return f"{name}={redact_arg(name, value, mark)}"
        shown = redact_string(value, mark)
        return arg if shown == value else f"{name}={shown}"
    if arg.startswith("-"):
        return arg
    return redact_string(arg, mark)


_PATH_RE = re.compile(r"^(?:~[/\\]|\.\.?[/\\]|[A-Za-z]:[/\\]|/[^/\s]+/|/[^/\s]+\.[A-Za-z0-9]{1,8}$)")


def _is_path(value: str) -> bool:
    """A file path (a flag such as ``--credentials`` often takes one: the path is not secret)."""
    return bool(_PATH_RE.match(value))


def _flag_is_secret(flag: str) -> bool:
    if flag in _SECRET_SHORT_FLAGS:
        return True
    return flag.startswith("--") and is_secret_name(flag)


def _names_variables(flag: str) -> bool:
    """A flag like ``--header-env`` / ``--bearer-env``: its value names environment variables
    (``NAME=VAR``, ``VAR``) that hold the secret. Not docker's one-word ``--env A=secret``."""
    words = _words(flag)
    return flag.startswith("--") and len(words) >= 2 and words[-1] == "env"


def _takes_value(flag: str) -> bool:
    return (flag in _SECRET_SHORT_FLAGS or flag in _HEADER_FLAGS or _flag_is_secret(flag)
            or _names_variables(flag) or _is_helper(flag))


def redact_argv(argv: list[str], mark: str = SECRET_MARK) -> tuple[list[str], bool]:
    """``argv`` with every secret value replaced by ``mark``; and whether anything was.

    The shape is kept: flags, the names in ``NAME=value``, header names, URL hosts and auth
    scheme words stay; only values are replaced. See the module docstring for the rules.

    Args:
        argv: a command line (``[command, *args]`` or only the args); non-strings pass through.
        mark: the replacement (:data:`SECRET_MARK` for the policy and journal,
            :data:`DISPLAY_MARK` for screens).
    Returns:
        (the redacted list, True when at least one value was replaced).
    """
    out: list[str] = []
    hidden = False
    prev: str | None = None
    for arg in argv:
        flag = prev if prev is not None and _takes_value(prev) else None
        shown = redact_arg(flag, arg, mark)
        if shown != arg:
            hidden = True
        out.append(shown)
        prev = arg if isinstance(arg, str) and arg.startswith("-") and "=" not in arg else None
    return out, hidden


def secret_parts(argv: Iterable[str]) -> list[str]:
    """The raw secret values :func:`redact_argv` would hide in ``argv`` (to scrub messages).

    Longest first, so a message is scrubbed of a whole token before any part of it.
    """
    argv = [a for a in argv if isinstance(a, str)]
    shown, _ = redact_argv(argv, "\x00")
    parts: set[str] = set()
    for raw, s in zip(argv, shown):
        if s == raw:
            continue
        pattern = "(.*?)".join(re.escape(piece) for piece in s.split("\x00"))
        m = re.fullmatch(pattern, raw, re.S)
        if m is None:
            parts.add(raw)
            continue
        parts.update(g for g in m.groups() if g)
    return sorted(parts, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str], mark: str = DISPLAY_MARK) -> str:
    """``text`` with every occurrence of each value in ``secrets`` replaced by ``mark``.

    For messages that may quote a command line or a server's stderr (a start error). Values
    shorter than 3 characters are only replaced as whole words.
    """
    for s in sorted({s for s in secrets if s}, key=len, reverse=True):
        if len(s) >= 3:
            text = text.replace(s, mark)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])", mark, text)
    return text


def scrub_pieces(text: str, secrets: Iterable[str], mark: str = DISPLAY_MARK, piece: int = 6) -> str:
    """:func:`scrub`, and also every run of ``piece`` or more characters of ``text`` that is part
    of a secret of that length or more, as written or as a server may quote it (URL-encoded,
    JSON-escaped): for a failing server's stderr, which can quote a token it rejected cut at a
    line's end, wrapped over two lines or encoded (adversarial review, round 5). Hides too much
    rather than too little (a 6-character run shared with a token goes too).

    Args:
        text: the message; secrets: raw values (env values, secret arguments); piece: the
            shortest run hidden (characters).
    Returns:
        ``text`` with those runs replaced by ``mark`` (adjacent runs merged into one mark).
    """
    import json
    from urllib.parse import quote, quote_plus
    values = [v for v in secrets if isinstance(v, str) and v]
    text = scrub(text, values, mark)
    grams: set[str] = set()
    for v in values:
        if len(v) < piece:
            continue
        spellings = {v, json.dumps(v)[1:-1]}
        for enc in (lambda x: quote(x, safe="", errors="surrogateescape"),
                    lambda x: quote(x, errors="surrogateescape"), lambda x: quote_plus(x, errors="surrogateescape")):
            try:
                spellings.add(enc(v))
            except (UnicodeError, ValueError):  # a value that is not text a server could quote so
                pass
        for spelled in spellings:
            grams.update(spelled[i:i + piece] for i in range(len(spelled) - piece + 1))
    if not grams:
        return text
    hidden = [False] * len(text)
    for i in range(len(text) - piece + 1):
        if text[i:i + piece] in grams:
            for k in range(i, i + piece):
                hidden[k] = True
    out: list[str] = []
    for i, ch in enumerate(text):
        if not hidden[i]:
            out.append(ch)
        elif i == 0 or not hidden[i - 1]:
            out.append(mark)
    return "".join(out)


def redact_text(text: str, mark: str = DISPLAY_MARK) -> str:
    """A last line of defence for free text (a diff line, a comment): hide token-shaped values,
    URL passwords and ``"secretName": "value"`` pairs wherever they appear."""
    out = _URL_USERINFO_RE.sub(lambda x: x.group("pre") + (x.group("pw") if is_reference(x.group("pw")) else mark), text)
    out = _JSON_PAIR_RE.sub(lambda x: x.group("pre") + mark
                            if is_secret_name(x.group("name")) and x.group("value")
                            and not is_reference(x.group("value")) else x.group(0), out)
    if "://" in out:
        out = _redact_url_paths(out, mark)
    return _PREFIXED.sub(mark, out)


#: Objects whose every value is a secret unless it is a reference (env values, HTTP headers).
SECRET_CONTAINERS = frozenset({"env", "headers", "http_headers", "environment"})


def redact_member(container: str | None, key: str | None, value: str, mark: str = DISPLAY_MARK) -> str:
    """A string found in a config document at ``container.key`` (the object's own key and the
    member's), shown with secrets hidden: every value of an ``env``/``headers`` object, a value
    under a secret-named key, else what :func:`redact_string` hides. ``args`` lists go through
    :func:`redact_argv` instead."""
    if not isinstance(value, str) or not value or is_reference(value):
        return value
    if container in SECRET_CONTAINERS:
        return _hide(value, mark)
    if key is not None and _words(key)[-1:] == ["helper"]:  # headersHelper: a command (rule 7)
        return redact_command(value, mark)
    if key is not None and is_secret_name(key):
        return value if _is_path(value) else _hide(value, mark)
    return redact_string(value, mark)
