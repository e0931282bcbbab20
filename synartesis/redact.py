"""Keeping secrets where the user put them: what a command line may show or record.

A server's command line can carry a token (``--token ghp_…``, ``--api-key=…``, a URL with a
password or an ``api_key=`` query). Synartesis records command lines in the policy and prints
them in warnings; those copies keep the shape and hide the values. The real values stay in the
client's config (read at launch) and in the journal (which holds data and is private).
"""

from __future__ import annotations

import re

__all__ = ["redact_argv", "SECRET_MARK"]

SECRET_MARK = "<secret: read from the client config at launch>"
_SECRET_FLAG = re.compile(r"^--?[\w.-]*(token|secret|password|passwd|pwd|api[-_]?key|apikey|auth|credential|"
                          r"private[-_]?key|access[-_]?key)[\w.-]*$", re.I)
_TOKENISH = re.compile(r"(ghp_|gho_|ghs_|github_pat_|glpat-|xox[abpr]-|sk-[A-Za-z0-9]|AKIA[0-9A-Z]{12}|"
                       r"Bearer\s|eyJ[A-Za-z0-9_-]{10,}\.)")
_URL_SECRET = re.compile(r"://[^/\s:@]+:[^/\s@]+@|[?&](api[-_]?key|apikey|token|access_token|secret|password|key)=",
                         re.I)


def _secret(value: str) -> bool:
    if "${" in value:  # a reference, not a value
        return False
    return bool(_TOKENISH.search(value) or _URL_SECRET.search(value))


def redact_argv(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` with secret-looking values replaced by :data:`SECRET_MARK`; and whether any was.

    Hidden: the value after a secret-named flag (``--token X``), the value of
    ``--token=X``, and any argument that looks like a token or a URL carrying credentials.
    """
    out: list[str] = []
    hidden = False
    after_flag = False
    for arg in argv:
        if after_flag and "${" not in arg:
            out.append(SECRET_MARK)
            hidden, after_flag = True, False
            continue
        after_flag = False
        name, eq, value = arg.partition("=")
        if name.startswith("-") and _SECRET_FLAG.match(name):
            if eq:
                if "${" in value:
                    out.append(arg)
                else:
                    out.append(f"{name}={SECRET_MARK}")
                    hidden = True
                continue
            after_flag = True
            out.append(arg)
            continue
        if _secret(arg):
            out.append(SECRET_MARK)
            hidden = True
            continue
        out.append(arg)
    return out, hidden
