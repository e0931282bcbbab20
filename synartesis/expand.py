"""``${VAR}`` expansion, the way MCP clients expand a server entry's ``env`` and ``args``.

Standard library only and without imports of its own: the proxy (the policy form expands
``servers.NAME.env`` before it starts a server) and undo (which starts servers from a client
entry) both use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["expand_env"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: str, environ: Mapping[str, str]) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}`` the way Claude Code and Cursor do; unset → ""."""
    return _VAR.sub(lambda m: environ.get(m.group(1)) or (m.group(2) or ""), value)
